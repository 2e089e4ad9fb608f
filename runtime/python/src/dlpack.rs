//! DLPack on the GPU: reading a CUDA tensor a producer (torch, CuPy)
//! hands over as a `dltensor` capsule, and exporting tcc's device outputs
//! ([`CudaArray`]) as capsules a consumer takes without a copy.
//!
//! The structs are DLPack's C ABI (dlpack.h, the unversioned
//! `DLManagedTensor` every producer and consumer supports). A consumed
//! input capsule is not renamed: tcc reads the tensor during the call
//! while holding the capsule, and the producer's capsule destructor calls
//! its deleter when the capsule goes. An exported capsule owns a
//! reference to the output's device allocation: the allocation lives
//! until the consumer calls the deleter (or, unconsumed, until the capsule
//! is collected), whatever happens to the `CudaArray`.

use std::ffi::{CStr, c_void};
use std::sync::Arc;

use pyo3::exceptions::{PyBufferError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyTuple};
use tcc_runtime::{CudaInput, CudaTensor, DType, TensorDesc};

/// `kDLCPU`.
pub const DEVICE_CPU: i32 = 1;
/// `kDLCUDA`.
pub const DEVICE_CUDA: i32 = 2;

/// Whether DLPack device type `kind` is host memory numpy reads
/// (`kDLCPU`, `kDLCUDAHost` pinned memory, `kDLROCMHost`).
pub fn is_host(kind: i32) -> bool {
    matches!(kind, DEVICE_CPU | 3 | 11)
}
/// DLPack's name for each device type, for messages.
pub fn device_name(kind: i32) -> String {
    match kind {
        1 => "CPU".into(),
        2 => "CUDA".into(),
        3 => "CUDA host (pinned)".into(),
        4 => "OpenCL".into(),
        7 => "Vulkan".into(),
        8 => "Metal".into(),
        10 => "ROCm".into(),
        13 => "CUDA managed".into(),
        other => format!("type {other}"),
    }
}

const CAPSULE: &CStr = c"dltensor";

#[repr(C)]
#[derive(Clone, Copy)]
struct DlDevice {
    device_type: i32,
    device_id: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct DlDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

#[repr(C)]
struct DlTensor {
    data: *mut c_void,
    device: DlDevice,
    ndim: i32,
    dtype: DlDataType,
    shape: *mut i64,
    strides: *mut i64,
    byte_offset: u64,
}

#[repr(C)]
struct DlManagedTensor {
    dl_tensor: DlTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DlManagedTensor)>,
}

/// DLPack's (code, bits) of a tcc dtype (`kDLInt` 0, `kDLUInt` 1,
/// `kDLFloat` 2, `kDLBfloat` 4, `kDLBool` 6, and DLPack 1.1's float8
/// codes 10-13). `None` for float4e2m1: DLPack packs it two to a byte,
/// tcc stores one per byte.
fn dl_dtype(dtype: DType) -> Option<(u8, u8)> {
    Some(match dtype {
        DType::F32 => (2, 32),
        DType::F16 => (2, 16),
        DType::F64 => (2, 64),
        DType::BF16 => (4, 16),
        DType::I8 => (0, 8),
        DType::I16 => (0, 16),
        DType::I32 => (0, 32),
        DType::I64 => (0, 64),
        DType::U8 => (1, 8),
        DType::U16 => (1, 16),
        DType::U32 => (1, 32),
        DType::U64 => (1, 64),
        DType::Bool => (6, 8),
        DType::F8E4M3FN => (10, 8),
        DType::F8E4M3FNUZ => (11, 8),
        DType::F8E5M2 => (12, 8),
        DType::F8E5M2FNUZ => (13, 8),
        DType::F4E2M1 => return None,
    })
}

/// The error for a dtype DLPack cannot describe as tcc stores it.
fn no_dl_dtype(dtype: DType) -> String {
    format!("{dtype:?} tensors do not cross DLPack: DLPack packs them two to a byte, tcc stores one per byte")
}

/// `float32`, `int64`, `bool`, ... for a DLPack dtype.
fn dl_dtype_name(t: DlDataType) -> String {
    let kind = match t.code {
        0 => "int",
        1 => "uint",
        2 => "float",
        4 => "bfloat",
        5 => "complex",
        6 => "bool",
        10 if t.bits == 8 => return "float8_e4m3fn".into(),
        11 if t.bits == 8 => return "float8_e4m3fnuz".into(),
        12 if t.bits == 8 => return "float8_e5m2".into(),
        13 if t.bits == 8 => return "float8_e5m2fnuz".into(),
        _ => return format!("DLPack dtype code {} of {} bits", t.code, t.bits),
    };
    let base = if t.code == 6 {
        "bool".to_string()
    } else {
        format!("{kind}{}", t.bits)
    };
    if t.lanes == 1 {
        base
    } else {
        format!("{base}x{}", t.lanes)
    }
}

/// A CUDA tensor read from a producer's capsule, checked against the
/// input it is for; the capsule stays alive as long as this does.
pub struct Imported<'py> {
    pub input: CudaInput,
    _capsule: Bound<'py, PyAny>,
}

/// Asks `array` for its capsule, ordered on the legacy default stream
/// (`stream=1`, which the session's blocking stream follows); producers
/// that take no `stream` are asked without one.
fn capsule_of<'py>(array: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let py = array.py();
    let kwargs = pyo3::types::PyDict::new(py);
    kwargs.set_item("stream", 1)?;
    match array.call_method("__dlpack__", (), Some(&kwargs)) {
        Err(e) if e.is_instance_of::<pyo3::exceptions::PyTypeError>(py) => {
            array.call_method0("__dlpack__")
        }
        other => other,
    }
}

/// Reads input `label`'s CUDA tensor from `array` (whose
/// `__dlpack_device__` said CUDA), checking the device ordinal, dtype,
/// shape and that it is dense row-major (`ValueError` naming the input
/// otherwise).
pub fn import<'py>(
    array: &Bound<'py, PyAny>,
    label: &str,
    desc: &TensorDesc,
    ordinal: usize,
) -> PyResult<Imported<'py>> {
    let capsule = capsule_of(array)?;
    // SAFETY: checks the object's type and name; sets no error.
    let valid = unsafe { ffi::PyCapsule_IsValid(capsule.as_ptr(), CAPSULE.as_ptr()) } == 1;
    if !valid {
        return Err(PyValueError::new_err(format!(
            "{label}: __dlpack__() did not return a `dltensor` capsule (got {}); pass a fresh tensor",
            capsule.get_type().name()?
        )));
    }
    // SAFETY: a valid capsule of that name holds a DLManagedTensor that
    // lives as long as the capsule (held by the result).
    let t = unsafe {
        let managed =
            ffi::PyCapsule_GetPointer(capsule.as_ptr(), CAPSULE.as_ptr()) as *const DlManagedTensor;
        if managed.is_null() {
            return Err(PyErr::fetch(array.py()));
        }
        &(*managed).dl_tensor
    };
    let want = desc.type_string();
    if t.device.device_type != DEVICE_CUDA || t.device.device_id as usize != ordinal {
        return Err(PyValueError::new_err(format!(
            "{label}: the tensor is on {} device {}, the model on CUDA device {ordinal}",
            device_name(t.device.device_type),
            t.device.device_id
        )));
    }
    let shape: Vec<i64> = if t.ndim <= 0 {
        Vec::new()
    } else {
        // SAFETY: `shape` holds `ndim` entries.
        unsafe { std::slice::from_raw_parts(t.shape, t.ndim as usize) }.to_vec()
    };
    let (code, bits) =
        dl_dtype(desc.dtype).ok_or_else(|| PyValueError::new_err(format!("{label}: {}", no_dl_dtype(desc.dtype))))?;
    if t.dtype.code != code || t.dtype.bits != bits || t.dtype.lanes != 1 {
        return Err(PyValueError::new_err(format!(
            "{label}: expected {want} ({}), got {} with shape {shape:?}: convert it on the device first (e.g. .to(torch.{}) or .astype(cupy.{}))",
            dl_dtype_name(DlDataType {
                code,
                bits,
                lanes: 1
            }),
            dl_dtype_name(t.dtype),
            dl_dtype_name(DlDataType {
                code,
                bits,
                lanes: 1
            }),
            dl_dtype_name(DlDataType {
                code,
                bits,
                lanes: 1
            }),
        )));
    }
    let dims: Vec<usize> = shape.iter().map(|&d| d.max(0) as usize).collect();
    if shape.iter().any(|&d| d < 0) || dims != desc.shape {
        return Err(PyValueError::new_err(format!(
            "{label}: expected shape {:?} ({want}), got {shape:?}",
            desc.shape
        )));
    }
    if !t.strides.is_null() && t.ndim > 0 {
        // SAFETY: `strides` holds `ndim` entries when not NULL.
        let strides = unsafe { std::slice::from_raw_parts(t.strides, t.ndim as usize) };
        let mut dense = 1i64;
        for (axis, (&d, &s)) in shape.iter().zip(strides).enumerate().rev() {
            if d > 1 && s != dense {
                return Err(PyValueError::new_err(format!(
                    "{label}: the tensor is not contiguous (strides {strides:?} in elements for shape {shape:?}, axis {axis}); pass .contiguous() (torch) or cupy.ascontiguousarray(...)"
                )));
            }
            dense *= d.max(1);
        }
    }
    let ptr = (t.data as u64).wrapping_add(t.byte_offset);
    Ok(Imported {
        input: CudaInput {
            ptr,
            dtype: desc.dtype,
            shape: dims,
        },
        _capsule: capsule,
    })
}

/// A call's output in CUDA device memory: a DLPack producer
/// (`torch.from_dlpack(y)`, `cupy.from_dlpack(y)` take it without a copy);
/// `numpy()` copies it to the host.
#[pyclass(frozen, module = "tcc")]
pub struct CudaArray {
    tensor: Arc<CudaTensor>,
}

impl CudaArray {
    pub fn new(tensor: CudaTensor) -> Self {
        CudaArray {
            tensor: Arc::new(tensor),
        }
    }
}

/// What an exported capsule's `manager_ctx` points at: the DLPack tensor
/// itself (first, so the two pointers agree), its shape, and a reference
/// to the allocation.
#[repr(C)]
struct Export {
    managed: DlManagedTensor,
    shape: Vec<i64>,
    _tensor: Arc<CudaTensor>,
}

/// The deleter of an exported tensor: drops its [`Export`] (the last
/// reference frees the device allocation).
unsafe extern "C" fn delete_export(managed: *mut DlManagedTensor) {
    if !managed.is_null() {
        // SAFETY: `manager_ctx` is the Box made in `__dlpack__`, freed
        // once (the deleter runs once, by contract).
        drop(unsafe { Box::from_raw((*managed).manager_ctx as *mut Export) });
    }
}

/// The capsule's destructor: an unconsumed capsule (still named
/// `dltensor`) deletes its tensor; a consumed one (`used_dltensor`) is
/// the consumer's to delete.
unsafe extern "C" fn capsule_destructor(capsule: *mut ffi::PyObject) {
    // SAFETY: `capsule` is the capsule being destroyed; neither call
    // raises.
    unsafe {
        if ffi::PyCapsule_IsValid(capsule, CAPSULE.as_ptr()) == 1 {
            let managed =
                ffi::PyCapsule_GetPointer(capsule, CAPSULE.as_ptr()) as *mut DlManagedTensor;
            if let Some(deleter) = (*managed).deleter {
                deleter(managed);
            }
        }
    }
}

#[pymethods]
impl CudaArray {
    /// The output's shape.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.tensor.shape())
    }

    /// The numpy dtype string ("<f4").
    #[getter]
    fn dtype(&self) -> &'static str {
        tcc_runtime::npy::descr(self.tensor.dtype())
    }

    /// The CUDA device ordinal.
    #[getter]
    fn device(&self) -> usize {
        self.tensor.device_ordinal()
    }

    #[getter]
    fn nbytes(&self) -> usize {
        self.tensor.byte_size()
    }

    /// The device address (`CUdeviceptr`).
    #[getter]
    fn data_ptr(&self) -> u64 {
        self.tensor.ptr()
    }

    /// `(kDLCUDA, ordinal)`.
    fn __dlpack_device__(&self) -> (i32, usize) {
        (DEVICE_CUDA, self.tensor.device_ordinal())
    }

    /// A `dltensor` capsule of the output, without a copy. The data is
    /// complete before the call that made it returned, so `stream` needs
    /// no wait; `dl_device` must be this device; `copy=True` is refused
    /// (BufferError).
    #[pyo3(signature = (*, stream=None, max_version=None, dl_device=None, copy=None))]
    fn __dlpack__<'py>(
        &self,
        py: Python<'py>,
        stream: Option<Bound<'py, PyAny>>,
        max_version: Option<Bound<'py, PyAny>>,
        dl_device: Option<(i32, i64)>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let _ = (stream, max_version);
        let ordinal = self.tensor.device_ordinal();
        if let Some((kind, id)) = dl_device
            && (kind != DEVICE_CUDA || id != ordinal as i64)
        {
            return Err(PyBufferError::new_err(format!(
                "tcc.CudaArray is on CUDA device {ordinal}; it cannot be exported to {} device {id} (copy it with .numpy() or with the consumer)",
                device_name(kind)
            )));
        }
        if copy == Some(true) {
            return Err(PyBufferError::new_err(
                "tcc.CudaArray exports its memory without a copy only (copy=True)",
            ));
        }
        let t = &self.tensor;
        let (code, bits) =
            dl_dtype(t.dtype()).ok_or_else(|| PyBufferError::new_err(no_dl_dtype(t.dtype())))?;
        // The consumer's kernels may still read the memory when it deletes
        // the tensor: free it then (`cuMemFree` waits for the device)
        // rather than keep it for tcc's next tensor of its size.
        t.free_on_drop();
        let mut export = Box::new(Export {
            managed: DlManagedTensor {
                dl_tensor: DlTensor {
                    data: t.ptr() as *mut c_void,
                    device: DlDevice {
                        device_type: DEVICE_CUDA,
                        device_id: ordinal as i32,
                    },
                    ndim: t.shape().len() as i32,
                    dtype: DlDataType {
                        code,
                        bits,
                        lanes: 1,
                    },
                    shape: std::ptr::null_mut(),
                    // NULL: dense row-major.
                    strides: std::ptr::null_mut(),
                    byte_offset: 0,
                },
                manager_ctx: std::ptr::null_mut(),
                deleter: Some(delete_export),
            },
            shape: t.shape().iter().map(|&d| d as i64).collect(),
            _tensor: t.clone(),
        });
        export.managed.dl_tensor.shape = export.shape.as_mut_ptr();
        let raw = Box::into_raw(export);
        // SAFETY: `raw` is a live Box; its first field is the managed
        // tensor.
        unsafe { (*raw).managed.manager_ctx = raw as *mut c_void };
        // SAFETY: the capsule takes the managed tensor; its destructor
        // (or the consumer) calls the deleter once.
        let capsule = unsafe {
            ffi::PyCapsule_New(
                raw as *mut c_void,
                CAPSULE.as_ptr(),
                Some(capsule_destructor),
            )
        };
        if capsule.is_null() {
            // SAFETY: the capsule was not made: the Box is still ours.
            unsafe { delete_export(raw as *mut DlManagedTensor) };
            return Err(PyErr::fetch(py));
        }
        // SAFETY: a new reference.
        Ok(unsafe { Bound::from_owned_ptr(py, capsule) })
    }

    /// A copy on the host, as a numpy array.
    fn numpy<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let tensor = self.tensor.clone();
        let host = py.detach(move || tensor.to_host()).map_err(crate::error)?;
        let numpy = PyModule::import(py, "numpy")?;
        numpy
            .getattr("frombuffer")?
            .call1((
                PyByteArray::new(py, &host.bytes),
                crate::numpy_dtype(py, host.dtype)?,
            ))?
            .call_method1("reshape", (PyTuple::new(py, &host.shape)?,))
    }

    /// `np.asarray(y)`: the host copy of `numpy()`.
    #[pyo3(signature = (dtype=None, copy=None))]
    fn __array__<'py>(
        &self,
        py: Python<'py>,
        dtype: Option<Bound<'py, PyAny>>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if copy == Some(false) {
            return Err(PyValueError::new_err(
                "tcc.CudaArray is in GPU memory: a numpy array of it is a copy (copy=False refused)",
            ));
        }
        let array = self.numpy(py)?;
        match dtype {
            Some(d) => array.call_method1("astype", (d,)),
            None => Ok(array),
        }
    }

    fn __repr__(&self) -> String {
        format!(
            "CudaArray({} on CUDA device {})",
            self.tensor.type_string(),
            self.tensor.device_ordinal()
        )
    }
}
