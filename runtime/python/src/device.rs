//! Arrays that stay in a model's device memory between calls (ONNX
//! Runtime's OrtValue with IOBinding): `Model.upload(array)` copies a
//! numpy array to the device once, `Model.run_device(...)` runs a
//! function on [`DeviceArray`]s (numpy inputs are uploaded first) and
//! returns its outputs as `DeviceArray`s, to be the next call's inputs
//! without a host round trip; `DeviceArray.numpy()` copies one back.
//! `Model.run` takes them too and returns numpy arrays.
//!
//! A `DeviceArray` belongs to the model that made it: another model's
//! calls refuse it (`ValueError`), even on the same device. It keeps its
//! device memory alive, not the model: after `Model.close()` it still
//! reads back. OpenCL and CUDA models; a Vulkan model's calls copy
//! through host-visible buffers and keep nothing on the device, so it
//! refuses. On CUDA, `CudaArray` (DLPack) remains the type that crosses
//! to torch and CuPy.

use std::sync::{Arc, PoisonError, Weak};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyTuple};
use tcc_runtime::{CudaInput, CudaTensor, DType, DeviceTensor, FunctionInfo, HostTensor};

use crate::{Engine, Loaded, error, from_numpy_dtype, input_label, numpy_dtype};

/// A tensor in device memory of either backend.
enum Held {
    OpenCl(DeviceTensor),
    Cuda(CudaTensor),
}

impl Held {
    fn dtype(&self) -> DType {
        match self {
            Held::OpenCl(t) => t.dtype(),
            Held::Cuda(t) => t.dtype(),
        }
    }

    fn shape(&self) -> &[usize] {
        match self {
            Held::OpenCl(t) => t.shape(),
            Held::Cuda(t) => t.shape(),
        }
    }

    fn byte_size(&self) -> usize {
        match self {
            Held::OpenCl(t) => t.byte_size(),
            Held::Cuda(t) => t.byte_size(),
        }
    }

    fn to_host(&self) -> tcc_runtime::Result<HostTensor> {
        match self {
            Held::OpenCl(t) => t.to_host(),
            Held::Cuda(t) => t.to_host(),
        }
    }
}

/// An array in a model's device memory (see the module documentation):
/// `shape`, `dtype` (the numpy dtype string, "<f4"), `nbytes`, `device`;
/// `numpy()` (or `np.asarray`) copies it to the host.
#[pyclass(frozen, module = "tcc")]
pub struct DeviceArray {
    held: Arc<Held>,
    /// The model whose calls take it (the `Weak` keeps the address from
    /// being reused by a later model).
    owner: Weak<Loaded>,
    device: String,
}

impl DeviceArray {
    fn new(held: Held, owner: &Arc<Loaded>, device: &str) -> Self {
        DeviceArray {
            held: Arc::new(held),
            owner: Arc::downgrade(owner),
            device: device.to_string(),
        }
    }
}

#[pymethods]
impl DeviceArray {
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.held.shape())
    }

    /// The numpy dtype string ("<f4").
    #[getter]
    fn dtype(&self) -> &'static str {
        tcc_runtime::npy::descr(self.held.dtype())
    }

    #[getter]
    fn nbytes(&self) -> usize {
        self.held.byte_size()
    }

    /// The device it is on (the model's).
    #[getter]
    fn device(&self) -> String {
        self.device.clone()
    }

    /// A copy on the host, as a numpy array.
    fn numpy<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let held = self.held.clone();
        let host = py.detach(move || held.to_host()).map_err(error)?;
        to_numpy(py, &host)
    }

    /// `np.asarray(d)`: the host copy of `numpy()`.
    #[pyo3(signature = (dtype=None, copy=None))]
    fn __array__<'py>(
        &self,
        py: Python<'py>,
        dtype: Option<Bound<'py, PyAny>>,
        copy: Option<bool>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if copy == Some(false) {
            return Err(PyValueError::new_err(
                "tcc.DeviceArray is in device memory: a numpy array of it is a copy (copy=False refused)",
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
            "DeviceArray({} on {})",
            tcc_runtime::tensor::type_string(self.held.shape(), self.held.dtype()),
            self.device
        )
    }
}

fn to_numpy<'py>(py: Python<'py>, host: &HostTensor) -> PyResult<Bound<'py, PyAny>> {
    PyModule::import(py, "numpy")?
        .getattr("frombuffer")?
        .call1((
            PyByteArray::new(py, &host.bytes),
            numpy_dtype(py, host.dtype)?,
        ))?
        .call_method1("reshape", (PyTuple::new(py, &host.shape)?,))
}

/// Whether `array` is a [`DeviceArray`].
pub(crate) fn is_device_array(array: &Bound<'_, PyAny>) -> bool {
    array.is_instance_of::<DeviceArray>()
}

/// A ValueError unless `loaded`'s backend keeps arrays on its device.
fn check_backend(loaded: &Loaded) -> PyResult<()> {
    match &loaded.engine {
        Engine::OpenCl { .. } | Engine::Cuda { .. } => Ok(()),
        Engine::Core { backend, .. } => Err(PyValueError::new_err(format!(
            "device arrays are OpenCL's and CUDA's: a {} model's calls copy through host-visible buffers and keep nothing in device memory (use run)",
            backend.title()
        ))),
    }
}

/// A numpy array (or a host array numpy takes: `__array__`, a CPU DLPack
/// tensor) as a host tensor of its own dtype and shape, C order.
fn host_tensor(py: Python<'_>, array: &Bound<'_, PyAny>, label: &str) -> PyResult<HostTensor> {
    let numpy = PyModule::import(py, "numpy")?;
    let is_numpy = array.is_instance(&numpy.getattr("ndarray")?)?;
    let array = if is_numpy || array.hasattr("__array__")? {
        array.clone()
    } else if array.hasattr("__dlpack__")? {
        // A host tensor numpy takes without a copy; not a GPU one.
        if array.hasattr("__dlpack_device__")? {
            let (kind, _): (i32, i64) = array.call_method0("__dlpack_device__")?.extract()?;
            if !crate::dlpack::is_host(kind) {
                return Err(PyValueError::new_err(format!(
                    "{label} is a tensor on a {} device: device arrays are made from host arrays (or are this model's DeviceArrays)",
                    crate::dlpack::device_name(kind)
                )));
            }
        }
        numpy.getattr("from_dlpack")?.call1((array,))?
    } else {
        return Err(PyValueError::new_err(format!(
            "{label}: expected a numpy array or a tcc.DeviceArray, got {}",
            array.get_type().name()?
        )));
    };
    let array = numpy.getattr("ascontiguousarray")?.call1((array,))?;
    let dtype_text: String = array.getattr("dtype")?.getattr("str")?.extract()?;
    let Some(dtype) = from_numpy_dtype(&dtype_text) else {
        let name: String = array.getattr("dtype")?.getattr("name")?.extract()?;
        return Err(PyValueError::new_err(format!(
            "{label}: tcc has no dtype for numpy {name}"
        )));
    };
    let shape: Vec<usize> = array.getattr("shape")?.extract()?;
    let bytes = array
        .call_method0("tobytes")?
        .cast::<PyBytes>()?
        .as_bytes()
        .to_vec();
    HostTensor::new(dtype, shape, bytes).map_err(error)
}

/// Copies `host` into `loaded`'s device memory.
fn upload_held(py: Python<'_>, loaded: &Loaded, host: HostTensor) -> PyResult<Held> {
    py.detach(|| match &loaded.engine {
        Engine::OpenCl { session, .. } => session
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .upload(&host)
            .map(Held::OpenCl),
        Engine::Cuda { runtime, .. } => CudaTensor::upload(runtime, &host).map(Held::Cuda),
        Engine::Core { .. } => Err(tcc_runtime::Error::Unsupported(
            "device arrays on this backend".into(),
        )),
    })
    .map_err(error)
}

/// `Model.upload`: `array` in the model's device memory.
pub(crate) fn upload(
    py: Python<'_>,
    loaded: &Arc<Loaded>,
    device: &str,
    array: &Bound<'_, PyAny>,
) -> PyResult<DeviceArray> {
    check_backend(loaded)?;
    if is_device_array(array) {
        return Err(PyValueError::new_err(
            "the array is a tcc.DeviceArray already (.numpy() copies it to the host)",
        ));
    }
    let host = host_tensor(py, array, "the array")?;
    Ok(DeviceArray::new(
        upload_held(py, loaded, host)?,
        loaded,
        device,
    ))
}

/// `Model.run_device`: `info`'s function on `arrays` (in its input order:
/// this model's `DeviceArray`s, or host arrays uploaded first); the
/// outputs as `DeviceArray`s of the call's shapes.
pub(crate) fn run(
    py: Python<'_>,
    loaded: &Arc<Loaded>,
    device: &str,
    info: &FunctionInfo,
    arrays: &[Bound<'_, PyAny>],
) -> PyResult<Vec<DeviceArray>> {
    check_backend(loaded)?;
    let mut inputs: Vec<Arc<Held>> = Vec::with_capacity(arrays.len());
    for (i, (array, desc)) in arrays.iter().zip(&info.inputs).enumerate() {
        let label = input_label(i, desc, &info.name);
        if let Ok(d) = array.cast::<DeviceArray>() {
            let d = d.get();
            if !Weak::ptr_eq(&d.owner, &Arc::downgrade(loaded)) {
                return Err(PyValueError::new_err(format!(
                    "{label} is a DeviceArray of another model (each model's device arrays are its own): copy it with .numpy(), or upload it to this model"
                )));
            }
            inputs.push(d.held.clone());
        } else {
            let host = host_tensor(py, array, &label)?;
            inputs.push(Arc::new(upload_held(py, loaded, host)?));
        }
    }
    let name = info.name.clone();
    let wrong = || tcc_runtime::Error::Unsupported("a device array of another backend".into());
    let outputs: Vec<Held> = py
        .detach(|| match &loaded.engine {
            Engine::OpenCl { session, .. } => {
                let refs = inputs
                    .iter()
                    .map(|h| match &**h {
                        Held::OpenCl(t) => Ok(t),
                        Held::Cuda(_) => Err(wrong()),
                    })
                    .collect::<tcc_runtime::Result<Vec<&DeviceTensor>>>()?;
                let outputs = session
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .run_device(&name, &refs)?;
                Ok(outputs.into_iter().map(Held::OpenCl).collect())
            }
            Engine::Cuda { session, .. } => {
                let io = inputs
                    .iter()
                    .map(|h| match &**h {
                        Held::Cuda(t) => Ok(t.as_input()),
                        Held::OpenCl(_) => Err(wrong()),
                    })
                    .collect::<tcc_runtime::Result<Vec<CudaInput>>>()?;
                let mut session = session.lock().unwrap_or_else(PoisonError::into_inner);
                // SAFETY: every input is a live allocation of this model's
                // device (uploaded to it, or an output of its calls), held
                // by `inputs` until the call returns; the work that wrote
                // it was waited for (uploads are synchronous copies,
                // `run_device` waits for its stream).
                let outputs = unsafe { session.run_device(&name, &io) }?;
                Ok(outputs.into_iter().map(Held::Cuda).collect())
            }
            Engine::Core { .. } => Err(wrong()),
        })
        .map_err(error)?;
    Ok(outputs
        .into_iter()
        .map(|h| DeviceArray::new(h, loaded, device))
        .collect())
}

/// The outputs of [`run`] copied to the host, as numpy arrays (`Model.run`
/// on device arrays).
pub(crate) fn to_host<'py>(
    py: Python<'py>,
    outputs: Vec<DeviceArray>,
) -> PyResult<Vec<Bound<'py, PyAny>>> {
    outputs.iter().map(|d| d.numpy(py)).collect()
}
