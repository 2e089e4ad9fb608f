//! `tcc` for Python (pyo3, abi3): compile a model with the `tcc` compiler,
//! load an artifact from a file or from bytes, list devices and functions,
//! and run functions on numpy arrays.
//!
//! ```python
//! import numpy as np, tcc
//! model = tcc.compile("mlp.mlir", target="generic")   # runs `tcc compile` ($TCC, else on PATH)
//! print(model.functions)                               # [Function(@mlp(1x4x16xf32) -> (1x4x10xf32))]
//! (y,) = model.run(np.full((1, 4, 16), 0.25, np.float32))
//! ```
//!
//! The module links only the runtime (no LLVM): `tcc.compile` runs the
//! compiler binary and loads the artifact it writes from memory. Errors are
//! Python exceptions with the runtime's message: `ValueError` for wrong
//! inputs (count, dtype, shape, a closed model), `RuntimeError` for
//! everything else (a truncated artifact, no device, a failed build). A
//! model may be used from several threads; its calls run one at a time,
//! with the GIL released.
//!
//! `tcc.load(path, backend="cuda")` runs a PTX artifact through the
//! runtime's CUDA-driver backend; such a model takes CUDA tensors (torch,
//! CuPy: any DLPack producer on kDLCUDA) without a copy and returns its
//! outputs as [`dlpack::CudaArray`]s, DLPack producers on the GPU.
//!
//! Arrays can stay on the device between calls (onnxruntime's IOBinding):
//! `model.upload(x)` gives a [`device::DeviceArray`], and
//! `model.run_device(...)` takes and returns them (see `device`).

mod device;
mod dlpack;
mod placed;

use std::sync::{Arc, Mutex, PoisonError};

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyDict, PyList, PyString, PyTuple};
use tcc_runtime::hal::Device as _;
use tcc_runtime::{
    Backend, Calls as _, CudaInput, CudaRuntime, CudaSession, CudaTensor, DType, DeviceSelector, HostTensor,
    Model as RtModel, Runtime, Session, TensorDesc,
};

fn runtime_error(e: impl std::fmt::Display) -> PyErr {
    PyRuntimeError::new_err(e.to_string())
}

pub(crate) fn error(e: tcc_runtime::Error) -> PyErr {
    match e {
        tcc_runtime::Error::InvalidInput(_) | tcc_runtime::Error::NoSuchFunction { .. } => {
            PyValueError::new_err(e.to_string())
        }
        other => runtime_error(other),
    }
}

/// The tcc dtype of a numpy `dtype.str` (native order spelled `=` on a
/// little-endian host too); `ml_dtypes.bfloat16` arrays say `<V2`.
pub(crate) fn from_numpy_dtype(text: &str) -> Option<DType> {
    let little = match text.strip_prefix('=') {
        Some(rest) => format!("<{rest}"),
        None => text.to_string(),
    };
    tcc_runtime::npy::dtype_of_descr(&little)
}

/// The numpy dtype an output of `dtype` is returned as: its descr, and for
/// bf16 `ml_dtypes.bfloat16` where that package is installed (raw `<V2`
/// bytes otherwise).
pub(crate) fn numpy_dtype<'py>(py: Python<'py>, dtype: DType) -> PyResult<Bound<'py, PyAny>> {
    if dtype == DType::BF16
        && let Ok(module) = py.import("ml_dtypes")
    {
        return module.getattr("bfloat16");
    }
    Ok(PyString::new(py, tcc_runtime::npy::descr(dtype)).into_any())
}

/// One input or output: name, numpy dtype string and shape.
#[pyclass(frozen, get_all, module = "tcc")]
#[derive(Clone)]
struct Tensor {
    name: String,
    dtype: String,
    shape: Vec<usize>,
}

#[pymethods]
impl Tensor {
    fn __repr__(&self) -> String {
        let dims: String = self.shape.iter().map(|d| format!("{d}x")).collect();
        format!(
            "Tensor({}{}{})",
            if self.name.is_empty() {
                String::new()
            } else {
                format!("{}: ", self.name)
            },
            dims,
            self.dtype
        )
    }
}

fn tensor(t: &TensorDesc) -> Tensor {
    Tensor {
        name: t.name.clone(),
        dtype: tcc_runtime::npy::descr(t.dtype).to_string(),
        shape: t.shape.clone(),
    }
}

/// A function of a model: its name, inputs and outputs.
#[pyclass(frozen, get_all, module = "tcc")]
#[derive(Clone)]
struct Function {
    name: String,
    inputs: Vec<Tensor>,
    outputs: Vec<Tensor>,
    signature: String,
}

#[pymethods]
impl Function {
    fn __repr__(&self) -> String {
        format!("Function({})", self.signature)
    }
}

/// The session of a loaded model on either backend.
enum Engine {
    OpenCl {
        runtime: Runtime,
        session: Mutex<Session>,
    },
    Cuda {
        runtime: CudaRuntime,
        session: Mutex<CudaSession>,
    },
    /// Any other driver, through the runtime core (`hal`): Vulkan.
    Core {
        backend: Backend,
        session: Mutex<tcc_runtime::hal::AnySession>,
    },
}

struct Loaded {
    model: RtModel,
    engine: Engine,
    /// Whether a call has run (after the first, deferred program cache
    /// entries are written: the runtime lives as long as the process).
    called: std::sync::atomic::AtomicBool,
}

/// A model closed or dropped writes the program cache entries still
/// deferred (on PoCL until the first call): each holds its key's lock,
/// which another process loading the same artifact waits for (up to
/// `TCC_CACHE_LOCK_TIMEOUT`), and the runtime itself lives as long as the
/// process. A model loaded only to read its functions would otherwise keep
/// every other process (the replicas of `tcc.serve`) waiting.
impl Drop for Loaded {
    fn drop(&mut self) {
        if let Engine::OpenCl { runtime, .. } = &self.engine {
            runtime.wait_for_cache_writes();
        }
    }
}

/// A model loaded on a device. `run` calls a function on numpy arrays.
#[pyclass(module = "tcc")]
struct Model {
    loaded: Mutex<Option<Arc<Loaded>>>,
    device: String,
}

/// One runtime per device for the whole process: separate runtimes of one
/// device would each build the program, and on PoCL the first holds the
/// program's cache lock until its deferred cache entry is written, which a
/// second one would wait for.
pub(crate) fn runtime_for(device: Option<&str>) -> PyResult<Runtime> {
    static RUNTIMES: std::sync::OnceLock<Mutex<std::collections::HashMap<usize, Runtime>>> =
        std::sync::OnceLock::new();
    let selected = DeviceSelector::from_flag_or_env(device)
        .select(&tcc_runtime::list_devices().map_err(error)?)
        .map_err(error)?;
    let mut runtimes = RUNTIMES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    if let Some(runtime) = runtimes.get(&selected.index) {
        return Ok(runtime.clone());
    }
    let runtime = Runtime::new(DeviceSelector::Index(selected.index)).map_err(error)?;
    runtimes.insert(selected.index, runtime.clone());
    Ok(runtime)
}

/// The CUDA device ordinal of a `device` option on the CUDA backend:
/// `None` (device 0), `"1"` or `"cuda:1"`.
fn cuda_ordinal(device: Option<&str>) -> PyResult<usize> {
    let Some(text) = device else { return Ok(0) };
    let digits = text.strip_prefix("cuda:").unwrap_or(text).trim();
    digits.parse().map_err(|_| {
        PyValueError::new_err(format!(
            "device `{text}`: the CUDA backend takes a CUDA device ordinal (\"0\", \"cuda:1\")"
        ))
    })
}

/// One CUDA runtime per device ordinal for the whole process.
fn cuda_runtime_for(ordinal: usize) -> PyResult<CudaRuntime> {
    static RUNTIMES: std::sync::OnceLock<Mutex<std::collections::HashMap<usize, CudaRuntime>>> =
        std::sync::OnceLock::new();
    let mut runtimes = RUNTIMES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    if let Some(runtime) = runtimes.get(&ordinal) {
        return Ok(runtime.clone());
    }
    let runtime = CudaRuntime::new(ordinal, false).map_err(error)?;
    runtimes.insert(ordinal, runtime.clone());
    Ok(runtime)
}

impl Model {
    /// Opens `model` on `backend` (`opencl` or `cuda`; default:
    /// `TCC_BACKEND`, else what the artifact asks for).
    fn open(model: RtModel, device: Option<&str>, backend: Option<&str>) -> PyResult<Self> {
        let backend = match backend {
            Some(name) => name.parse::<Backend>().map_err(error)?,
            None => match Backend::from_env().map_err(error)? {
                Some(b) => b,
                None => Backend::preferred_for(&model).map_err(error)?,
            },
        };
        let (device, engine) = match backend {
            Backend::OpenCl => {
                let runtime = runtime_for(device)?;
                let session = runtime.session(&model).map_err(error)?;
                (
                    runtime.device().name.clone(),
                    Engine::OpenCl {
                        runtime,
                        session: Mutex::new(session),
                    },
                )
            }
            Backend::Vulkan => {
                let index = match device {
                    None => 0,
                    Some(text) => {
                        let digits = text.strip_prefix("vulkan:").unwrap_or(text).trim();
                        digits.parse().map_err(|_| {
                            PyValueError::new_err(format!(
                                "device `{text}`: the Vulkan backend takes a Vulkan device index (\"0\", \"vulkan:1\")"
                            ))
                        })?
                    }
                };
                let devices =
                    tcc_runtime::hal::open_devices(
                        backend,
                        &tcc_runtime::DeviceList::All,
                        &[index],
                        false,
                    )
                        .map_err(error)?;
                let device = &devices[0];
                let session = device.open(&model).map_err(error)?;
                (
                    device.summary(),
                    Engine::Core {
                        backend,
                        session: Mutex::new(session),
                    },
                )
            }
            Backend::Cuda => {
                let runtime = cuda_runtime_for(cuda_ordinal(device)?)?;
                let session = runtime.session(&model).map_err(error)?;
                (
                    runtime.device().name.clone(),
                    Engine::Cuda {
                        runtime,
                        session: Mutex::new(session),
                    },
                )
            }
        };
        Ok(Model {
            device,
            loaded: Mutex::new(Some(Arc::new(Loaded {
                model,
                engine,
                called: std::sync::atomic::AtomicBool::new(false),
            }))),
        })
    }

    fn get(&self) -> PyResult<Arc<Loaded>> {
        self.loaded
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .ok_or_else(|| PyValueError::new_err("the model is closed"))
    }
}

#[pymethods]
impl Model {
    /// The model's functions.
    #[getter]
    fn functions(&self) -> PyResult<Vec<Function>> {
        let loaded = self.get()?;
        Ok(loaded
            .model
            .functions()
            .iter()
            .map(|f| Function {
                name: f.name.clone(),
                inputs: f.inputs.iter().map(tensor).collect(),
                outputs: f.outputs.iter().map(tensor).collect(),
                signature: f.signature(),
            })
            .collect())
    }

    /// The device the model runs on.
    #[getter]
    fn device(&self) -> String {
        self.device.clone()
    }

    /// The backend that runs it: "opencl", "cuda" or "vulkan".
    #[getter]
    fn backend(&self) -> PyResult<&'static str> {
        Ok(match self.get()?.engine {
            Engine::OpenCl { .. } => "opencl",
            Engine::Cuda { .. } => "cuda",
            Engine::Core { backend, .. } => backend.name(),
        })
    }

    /// The compiler that made it ("tcc 0.1.0").
    #[getter]
    fn producer(&self) -> PyResult<String> {
        Ok(self.get()?.model.producer().to_string())
    }

    /// Runs `function` (default: the only one) on numpy arrays: one per
    /// input in order (`m.run(x, y)`), or by name as a dict (`m.run({"x":
    /// x})`) or as keyword arguments (`m.run(x=x)`). Returns the outputs as
    /// a list of numpy arrays; on the CUDA backend, when an input is a CUDA
    /// tensor (DLPack), as `CudaArray`s on the GPU. Inputs may be
    /// `DeviceArray`s of this model (`upload`, `run_device`). A missing, extra or unknown input, a wrong
    /// dtype or shape raise `ValueError` naming the input, what it expects
    /// and what it got.
    #[pyo3(signature = (*arrays, function=None, **named))]
    fn run<'py>(
        &self,
        py: Python<'py>,
        arrays: &Bound<'py, PyTuple>,
        function: Option<String>,
        named: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let (_, results) = self.call(py, arrays, function, named)?;
        PyList::new(py, results)
    }

    /// Copies a numpy array (any dtype and shape) into the model's device
    /// memory, as a `DeviceArray` for `run_device` (and `run`).
    fn upload(&self, py: Python<'_>, array: &Bound<'_, PyAny>) -> PyResult<device::DeviceArray> {
        device::upload(py, &self.get()?, &self.device, array)
    }

    /// As `run`, with the outputs left in device memory: a list of
    /// `DeviceArray`s, of this call's shapes, to be the inputs of later
    /// calls without a copy to or from the host. Inputs are this model's
    /// `DeviceArray`s (another model's raise ValueError) or numpy arrays,
    /// uploaded first. OpenCL and CUDA models (a Vulkan one raises
    /// ValueError).
    #[pyo3(signature = (*arrays, function=None, **named))]
    fn run_device(
        &self,
        py: Python<'_>,
        arrays: &Bound<'_, PyTuple>,
        function: Option<String>,
        named: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Vec<device::DeviceArray>> {
        let loaded = self.get()?;
        let name = tcc_runtime::cli::resolve_function(&loaded.model, function.as_deref())
            .map_err(error)?;
        let info = loaded.model.function(&name).map_err(error)?.clone();
        let arrays = Self::ordered_inputs(&info, arrays, named)?;
        device::run(py, &loaded, &self.device, &info, &arrays)
    }

    /// As `run`, returning a dict of the outputs by name (`output0`,
    /// `output1`, ... for unnamed ones).
    #[pyo3(signature = (*arrays, function=None, **named))]
    fn run_dict<'py>(
        &self,
        py: Python<'py>,
        arrays: &Bound<'py, PyTuple>,
        function: Option<String>,
        named: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let (info, results) = self.call(py, arrays, function, named)?;
        let out = PyDict::new(py);
        for (i, (desc, array)) in info.outputs.iter().zip(results).enumerate() {
            let key = if desc.name.is_empty() {
                format!("output{i}")
            } else {
                desc.name.clone()
            };
            out.set_item(key, array)?;
        }
        Ok(out)
    }

    /// Releases the device session; later calls raise ValueError.
    fn close(&self) {
        self.loaded
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
    }

    fn __repr__(&self) -> String {
        match self.get() {
            Ok(l) => format!("Model({} on {})", l.model.path().display(), self.device),
            Err(_) => "Model(closed)".into(),
        }
    }
}

/// `input 'x' of @f` or `input 0 of @f` for an unnamed one.
fn input_label(index: usize, desc: &TensorDesc, function: &str) -> String {
    if desc.name.is_empty() {
        format!("input {index} of @{function}")
    } else {
        format!("input '{}' of @{function}", desc.name)
    }
}

impl Model {
    /// The arrays of a call in the function's input order: positional, a
    /// dict as the only positional argument, or keyword arguments.
    fn ordered_inputs<'py>(
        info: &tcc_runtime::FunctionInfo,
        arrays: &Bound<'py, PyTuple>,
        named: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Vec<Bound<'py, PyAny>>> {
        let name = &info.name;
        let expected = || {
            info.inputs
                .iter()
                .map(|t| {
                    if t.name.is_empty() {
                        t.type_string()
                    } else {
                        format!("{}: {}", t.name, t.type_string())
                    }
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        let dict = match (arrays.len(), named) {
            (1, None) => arrays.get_item(0)?.cast_into::<PyDict>().ok(),
            _ => None,
        };
        let by_name = match (dict, named) {
            (Some(d), None) => Some(d),
            (None, Some(n)) if arrays.is_empty() => Some(n.clone()),
            (None, Some(_)) => {
                return Err(PyValueError::new_err(format!(
                    "@{name}: give the inputs by position or by name, not both"
                )));
            }
            _ => None,
        };
        let Some(by_name) = by_name else {
            if arrays.len() != info.inputs.len() {
                return Err(PyValueError::new_err(format!(
                    "@{name} takes {} input(s) ({}), got {}",
                    info.inputs.len(),
                    expected(),
                    arrays.len()
                )));
            }
            return Ok(arrays.iter().collect());
        };
        let mut given: Vec<String> = Vec::new();
        for key in by_name.keys() {
            let key: String = key
                .extract()
                .map_err(|_| PyValueError::new_err(format!("@{name}: input names are strings")))?;
            if !info.inputs.iter().any(|t| t.name == key) {
                return Err(PyValueError::new_err(format!(
                    "@{name} has no input named '{key}' (its inputs: {})",
                    expected()
                )));
            }
            given.push(key);
        }
        let mut ordered = Vec::new();
        for (i, desc) in info.inputs.iter().enumerate() {
            match by_name.get_item(&desc.name)? {
                Some(array) if !desc.name.is_empty() => ordered.push(array),
                _ => {
                    return Err(PyValueError::new_err(format!(
                        "{} is missing: expected {} (got {})",
                        input_label(i, desc, name),
                        desc.type_string(),
                        if given.is_empty() {
                            "no inputs".to_string()
                        } else {
                            given.join(", ")
                        }
                    )));
                }
            }
        }
        Ok(ordered)
    }

    /// Checks and converts the inputs, runs the call without the GIL, and
    /// returns the outputs as numpy arrays.
    fn call<'py>(
        &self,
        py: Python<'py>,
        arrays: &Bound<'py, PyTuple>,
        function: Option<String>,
        named: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<(tcc_runtime::FunctionInfo, Vec<Bound<'py, PyAny>>)> {
        let loaded = self.get()?;
        let name = tcc_runtime::cli::resolve_function(&loaded.model, function.as_deref())
            .map_err(error)?;
        let info = loaded.model.function(&name).map_err(error)?.clone();
        let arrays = Self::ordered_inputs(&info, arrays, named)?;
        // Device arrays: the call on the device, its outputs copied back.
        if arrays.iter().any(device::is_device_array) {
            let outputs = device::run(py, &loaded, &self.device, &info, &arrays)?;
            return Ok((info, device::to_host(py, outputs)?));
        }
        let numpy = PyModule::import(py, "numpy")?;
        let cuda_ordinal = match &loaded.engine {
            Engine::Cuda { runtime, .. } => Some(runtime.device().ordinal),
            Engine::OpenCl { .. } | Engine::Core { .. } => None,
        };
        let mut inputs = Vec::with_capacity(arrays.len());
        let mut on_device = Vec::new();
        for (i, (array, desc)) in arrays.iter().zip(&info.inputs).enumerate() {
            let label = input_label(i, desc, &name);
            let is_numpy = array.is_instance(&numpy.getattr("ndarray")?)?;
            // A DLPack producer on the GPU: read in place on the CUDA
            // backend.
            if !is_numpy && array.hasattr("__dlpack_device__")? {
                let (kind, id): (i32, i64) = array
                    .call_method0("__dlpack_device__")?
                    .extract()
                    .map_err(|_| {
                        PyValueError::new_err(format!(
                            "{label}: __dlpack_device__() did not return (device type, id)"
                        ))
                    })?;
                if !dlpack::is_host(kind) {
                    let Some(ordinal) = cuda_ordinal.filter(|_| kind == dlpack::DEVICE_CUDA) else {
                        return Err(PyValueError::new_err(if kind == dlpack::DEVICE_CUDA {
                            format!(
                                "{label} is a tensor on CUDA device {id}, and this model runs on OpenCL ({}): load it with backend=\"cuda\" (a PTX artifact) to take GPU tensors without a copy, or pass a host array",
                                self.device
                            )
                        } else {
                            format!(
                                "{label} is a tensor on a {} device: tcc takes host arrays, and CUDA tensors on the CUDA backend",
                                dlpack::device_name(kind)
                            )
                        }));
                    };
                    on_device.push((i, dlpack::import(array, &label, desc, ordinal)?));
                    continue;
                }
            }
            // Anything with __array__ or __dlpack__ on the host (a CPU
            // torch tensor) becomes a numpy array first.
            let array = if is_numpy {
                array.clone()
            } else if array.hasattr("__dlpack__")? {
                numpy.getattr("from_dlpack")?.call1((array,))?
            } else {
                return Err(PyValueError::new_err(format!(
                    "{label}: expected a numpy array ({}), got {}",
                    desc.type_string(),
                    array.get_type().name()?
                )));
            };
            let dtype_text: String = array.getattr("dtype")?.getattr("str")?.extract()?;
            let shape: Vec<usize> = array.getattr("shape")?.extract()?;
            let want = tcc_runtime::npy::descr(desc.dtype);
            let dtype = from_numpy_dtype(&dtype_text).filter(|d| *d == desc.dtype);
            let Some(dtype) = dtype else {
                let numpy_name: String = array.getattr("dtype")?.getattr("name")?.extract()?;
                let want_name: String = numpy
                    .getattr("dtype")?
                    .call1((want,))?
                    .getattr("name")?
                    .extract()?;
                return Err(PyValueError::new_err(format!(
                    "{label}: expected {} (numpy {want_name}), got {numpy_name} with shape {:?}: convert it with .astype(np.{want_name})",
                    desc.type_string(),
                    shape
                )));
            };
            // A symbolic dimension (`--dim`): any extent in its range,
            // which the session checks with the other inputs.
            let fits = if desc.dims.is_empty() {
                shape == desc.shape
            } else {
                shape.len() == desc.shape.len()
            };
            if !fits {
                return Err(PyValueError::new_err(format!(
                    "{label}: expected shape {:?} ({}), got {:?}",
                    desc.shape,
                    desc.type_string(),
                    shape
                )));
            }
            let contiguous = numpy.getattr("ascontiguousarray")?.call1((array,))?;
            let bytes: Vec<u8> = contiguous
                .call_method0("tobytes")?
                .cast::<PyBytes>()?
                .as_bytes()
                .to_vec();
            inputs.push((i, HostTensor::new(dtype, shape, bytes).map_err(error)?));
        }
        if !on_device.is_empty() {
            let out = Self::call_on_device(py, &loaded, &name, inputs, &on_device)?;
            return Ok((info, out));
        }
        let inputs: Vec<HostTensor> = inputs.into_iter().map(|(_, t)| t).collect();
        info.check_inputs(&inputs, &[]).map_err(error)?;
        // The call itself without the GIL: other Python threads run.
        let results = py.detach(|| match &loaded.engine {
            Engine::OpenCl { runtime, session } => {
                let mut session = session.lock().unwrap_or_else(PoisonError::into_inner);
                let results = session.run(&name, &inputs);
                if results.is_ok()
                    && !loaded
                        .called
                        .swap(true, std::sync::atomic::Ordering::SeqCst)
                {
                    runtime.wait_for_cache_writes();
                }
                results
            }
            Engine::Cuda { session, .. } => session
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .run(&name, &inputs),
            Engine::Core { session, .. } => session
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .run_with_sources(&name, &inputs, &[]),
        });
        let results = results.map_err(error)?;
        let mut out = Vec::with_capacity(results.len());
        for t in results {
            let buffer = PyByteArray::new(py, &t.bytes);
            let array = numpy
                .getattr("frombuffer")?
                .call1((buffer, numpy_dtype(py, t.dtype)?))?
                .call_method1("reshape", (PyTuple::new(py, &t.shape)?,))?;
            out.push(array);
        }
        Ok((info, out))
    }

    /// A call on the CUDA backend with at least one input on the device:
    /// host inputs are uploaded, device inputs read in place, and the
    /// outputs stay on the device as `CudaArray`s.
    fn call_on_device<'py>(
        py: Python<'py>,
        loaded: &Loaded,
        name: &str,
        host: Vec<(usize, HostTensor)>,
        on_device: &[(usize, dlpack::Imported<'py>)],
    ) -> PyResult<Vec<Bound<'py, PyAny>>> {
        let Engine::Cuda { runtime, session } = &loaded.engine else {
            return Err(PyValueError::new_err("device inputs need the CUDA backend"));
        };
        let count = host.len() + on_device.len();
        let mut ordered: Vec<Option<CudaInput>> = vec![None; count];
        for (i, imported) in on_device {
            ordered[*i] = Some(imported.input.clone());
        }
        let results = py.detach(move || {
            let uploaded = host
                .iter()
                .map(|(i, t)| CudaTensor::upload(runtime, t).map(|d| (*i, d)))
                .collect::<tcc_runtime::Result<Vec<_>>>()?;
            for (i, d) in &uploaded {
                ordered[*i] = Some(d.as_input());
            }
            let ordered: Vec<CudaInput> = ordered.into_iter().flatten().collect();
            let mut session = session.lock().unwrap_or_else(PoisonError::into_inner);
            // SAFETY: each input is live device memory of this device for
            // the whole call: `uploaded` is held here, and each imported
            // tensor's capsule by `on_device` (the caller's); the producers
            // ordered their work on the legacy default stream
            // (`__dlpack__(stream=1)`), which the session's stream follows.
            unsafe { session.run_device(name, &ordered) }
        });
        let results = results.map_err(error)?;
        results
            .into_iter()
            .map(|t| Ok(Bound::new(py, dlpack::CudaArray::new(t))?.into_any()))
            .collect()
    }
}

/// Loads a compiled model (`model.so`) onto a device. `backend`:
/// "opencl" or "cuda" (default: TCC_BACKEND, else "cuda" for artifacts
/// whose kernels need it, else "opencl"). On OpenCL, `device` selects as
/// TCC_DEVICE does (default: the first GPU, else the first CPU device);
/// on CUDA it is the device ordinal ("0", "cuda:1"; default 0).
#[pyfunction]
#[pyo3(signature = (path, device=None, backend=None))]
fn load(path: &str, device: Option<&str>, backend: Option<&str>) -> PyResult<Model> {
    Model::open(RtModel::load(path).map_err(error)?, device, backend)
}

/// Loads a compiled model from its bytes (no file is written); `device`
/// and `backend` as for `load`.
#[pyfunction]
#[pyo3(signature = (data, device=None, label="model in memory", backend=None))]
fn load_bytes(
    data: &[u8],
    device: Option<&str>,
    label: &str,
    backend: Option<&str>,
) -> PyResult<Model> {
    Model::open(
        RtModel::load_bytes(data, label).map_err(error)?,
        device,
        backend,
    )
}

/// Compiles `path` (MLIR or ONNX) with the tcc compiler (`$TCC`, else
/// `tcc` on PATH) and loads the result. Every `tcc compile` option has a
/// keyword: `target` (generic, nvidia, pocl-cpu, host, auto),
/// `input_shapes` (`{"data": (8, 3, 224, 224)}`), `precision` (fp32,
/// tf32, fp16, bf16; unset: fp32, or a half ONNX graph's own type),
/// `storage` (fp32, fp16, bf16), `tuning` (a `tcc tune` record),
/// `ptx` (bool), `gpu_arch` ("sm_90"), `backend` (opencl, cuda: also the
/// backend the model is loaded on),
/// `max_fused_ops`, `quantize` ("int8") with `profile` (a `tcc profile`
/// file), `calibration` (max, percentile, ...) and `calibration_inputs` (a
/// directory), and `args` (a list) for any other flag.
#[pyfunction]
#[pyo3(signature = (
    path, target="generic", device=None, tcc=None, *, input_shapes=None, precision=None,
    storage=None, tuning=None, ptx=None, gpu_arch=None, backend=None, max_fused_ops=None,
    quantize=None, profile=None, calibration=None, calibration_inputs=None, args=None
))]
#[allow(clippy::too_many_arguments)]
fn compile(
    py: Python<'_>,
    path: &str,
    target: &str,
    device: Option<&str>,
    tcc: Option<String>,
    input_shapes: Option<std::collections::BTreeMap<String, Vec<usize>>>,
    precision: Option<String>,
    storage: Option<String>,
    tuning: Option<String>,
    ptx: Option<bool>,
    gpu_arch: Option<String>,
    backend: Option<String>,
    max_fused_ops: Option<i64>,
    quantize: Option<String>,
    profile: Option<String>,
    calibration: Option<String>,
    calibration_inputs: Option<String>,
    args: Option<Vec<String>>,
) -> PyResult<Model> {
    // `backend` is a compile flag and the backend the model is loaded on.
    let run_backend = backend.clone();
    let tcc = tcc
        .or_else(|| std::env::var("TCC").ok())
        .unwrap_or_else(|| "tcc".into());
    let directory = tempfile::tempdir().map_err(runtime_error)?;
    let so = directory.path().join("model.so");
    let mut flags = vec![format!("--target={target}")];
    for (name, dims) in input_shapes.unwrap_or_default() {
        let dims: Vec<String> = dims.iter().map(|d| d.to_string()).collect();
        flags.push(format!("--input-shape={name}={}", dims.join("x")));
    }
    let named = [
        ("precision", precision),
        ("storage", storage),
        ("tuning", tuning),
        (
            "ptx",
            ptx.map(|on| if on { "on" } else { "off" }.to_string()),
        ),
        ("gpu-arch", gpu_arch),
        ("backend", backend),
        ("max-fused-ops", max_fused_ops.map(|n| n.to_string())),
        ("quantize", quantize),
        ("profile", profile),
        ("calibration", calibration),
        ("calibration-inputs", calibration_inputs),
    ];
    for (flag, value) in named {
        if let Some(value) = value {
            flags.push(format!("--{flag}={value}"));
        }
    }
    flags.extend(args.unwrap_or_default());
    let output = py
        .detach(|| {
            std::process::Command::new(&tcc)
                .args(["compile", path, "-o"])
                .arg(&so)
                .args(&flags)
                .output()
        })
        .map_err(|e| {
            runtime_error(format!(
                "cannot run the compiler `{tcc}` ({e}): set TCC=/path/to/tcc or put tcc on PATH"
            ))
        })?;
    if !output.status.success() {
        return Err(runtime_error(format!(
            "tcc compile {path} {} failed:\n{}",
            flags.join(" "),
            String::from_utf8_lossy(&output.stderr).trim_end()
        )));
    }
    let bytes = std::fs::read(&so).map_err(runtime_error)?;
    Model::open(
        RtModel::load_bytes(&bytes, path).map_err(error)?,
        device,
        run_backend.as_deref(),
    )
}

/// The OpenCL devices: a list of dicts (index, name, platform, kind).
#[pyfunction]
fn devices(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    tcc_runtime::list_devices()
        .map_err(error)?
        .into_iter()
        .map(|d| {
            let dict = PyDict::new(py);
            dict.set_item("index", d.index)?;
            dict.set_item("name", &d.name)?;
            dict.set_item("platform", &d.platform_name)?;
            dict.set_item("kind", d.kind.to_string())?;
            Ok(dict)
        })
        .collect()
}

/// The native part of the `tcc` package (python/tcc/__init__.py re-exports
/// it as `tcc`).
#[pymodule]
fn _tcc(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", tcc_runtime::version_string())?;
    m.add_class::<Model>()?;
    m.add_class::<Function>()?;
    m.add_class::<Tensor>()?;
    m.add_class::<dlpack::CudaArray>()?;
    m.add_class::<device::DeviceArray>()?;
    m.add_function(wrap_pyfunction!(compile, m)?)?;
    m.add_function(wrap_pyfunction!(load, m)?)?;
    m.add_function(wrap_pyfunction!(load_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(devices, m)?)?;
    m.add_class::<placed::PlacedModel>()?;
    m.add_function(wrap_pyfunction!(placed::load_placed, m)?)?;
    Ok(())
}
