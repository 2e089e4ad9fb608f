//! `tcc.load_placed`: one model's functions placed on several devices
//! (the runtime core's `hal::Placement`), for a model too large for one
//! device or a pipeline. `PlacedModel.run_pipeline(["a", "b"], x)` runs
//! the functions in order, the values between them kept in device memory
//! and copied device to device where two functions run on different
//! devices (CUDA: peer to peer; OpenCL: through the host).

use std::sync::{Mutex, PoisonError};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyDict, PyList, PyTuple};
use tcc_runtime::hal::{AnyDevice, Device as _, Placement};
use tcc_runtime::{Backend, HostTensor, Model as RtModel};

use crate::{error, from_numpy_dtype, numpy_dtype};

/// A model whose functions run on several devices (see the module
/// documentation).
#[pyclass(module = "tcc")]
pub(crate) struct PlacedModel {
    placement: Mutex<Placement<AnyDevice>>,
    model: RtModel,
    devices: Vec<String>,
}

/// The devices of `names` on `backend`: OpenCL selectors (an index or a
/// name, as TCC_DEVICE), or CUDA / Vulkan device ordinals ("1",
/// "cuda:1", "vulkan:1").
fn open_devices(backend: Backend, names: &[String]) -> PyResult<Vec<AnyDevice>> {
    if backend == Backend::OpenCl {
        return names
            .iter()
            .map(|n| crate::runtime_for(Some(n)).map(AnyDevice::OpenCl))
            .collect();
    }
    let prefix = format!("{}:", backend.name());
    let ordinals = names
        .iter()
        .map(|n| {
            n.strip_prefix(&prefix).unwrap_or(n).trim().parse::<usize>().map_err(|_| {
                PyValueError::new_err(format!(
                    "device `{n}`: the {} backend takes device ordinals (\"0\", \"{prefix}1\")",
                    backend.title()
                ))
            })
        })
        .collect::<PyResult<Vec<_>>>()?;
    tcc_runtime::hal::open_devices(backend, &tcc_runtime::DeviceList::All, &ordinals, false)
        .map_err(error)
}

/// The arrays as host tensors of `function`'s inputs, checked.
fn host_inputs<'py>(
    py: Python<'py>,
    info: &tcc_runtime::FunctionInfo,
    arrays: &Bound<'py, PyTuple>,
) -> PyResult<Vec<HostTensor>> {
    if arrays.len() != info.inputs.len() {
        return Err(PyValueError::new_err(format!(
            "@{} takes {} input(s), got {}",
            info.name,
            info.inputs.len(),
            arrays.len()
        )));
    }
    let numpy = PyModule::import(py, "numpy")?;
    let mut out = Vec::with_capacity(arrays.len());
    for (i, (array, desc)) in arrays.iter().zip(&info.inputs).enumerate() {
        let array = numpy.getattr("ascontiguousarray")?.call1((array,))?;
        let dtype_text: String = array.getattr("dtype")?.getattr("str")?.extract()?;
        let shape: Vec<usize> = array.getattr("shape")?.extract()?;
        let dtype = from_numpy_dtype(&dtype_text).filter(|d| *d == desc.dtype);
        let Some(dtype) = dtype.filter(|_| shape == desc.shape) else {
            return Err(PyValueError::new_err(format!(
                "input {i} of @{}: expected {}, got {dtype_text} with shape {shape:?}",
                info.name,
                desc.type_string()
            )));
        };
        let bytes: Vec<u8> = array
            .call_method0("tobytes")?
            .cast::<PyBytes>()?
            .as_bytes()
            .to_vec();
        out.push(HostTensor::new(dtype, shape, bytes).map_err(error)?);
    }
    Ok(out)
}

fn to_numpy<'py>(py: Python<'py>, results: Vec<HostTensor>) -> PyResult<Bound<'py, PyList>> {
    let numpy = PyModule::import(py, "numpy")?;
    let mut out = Vec::with_capacity(results.len());
    for t in results {
        let buffer = PyByteArray::new(py, &t.bytes);
        out.push(
            numpy
                .getattr("frombuffer")?
                .call1((buffer, numpy_dtype(py, t.dtype)?))?
                .call_method1("reshape", (PyTuple::new(py, &t.shape)?,))?,
        );
    }
    PyList::new(py, out)
}

impl PlacedModel {
    fn placement(&self) -> std::sync::MutexGuard<'_, Placement<AnyDevice>> {
        self.placement
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

#[pymethods]
impl PlacedModel {
    /// Each device's name, in the order `placement` numbers them.
    #[getter]
    fn devices(&self) -> Vec<String> {
        self.devices.clone()
    }

    /// The device (its position) `function` runs on.
    fn device_of(&self, function: &str) -> PyResult<usize> {
        self.placement().device_of(function).map_err(error)
    }

    /// The copies between devices so far: a dict of `device_to_device`,
    /// `peer` (of those, over peer access), `through_host` and `bytes`.
    fn copies<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let c = self.placement().copies();
        let d = PyDict::new(py);
        d.set_item("device_to_device", c.device_to_device)?;
        d.set_item("peer", c.peer)?;
        d.set_item("through_host", c.through_host)?;
        d.set_item("bytes", c.bytes)?;
        Ok(d)
    }

    /// Runs `function` on its device on numpy arrays (one per input, in
    /// order); returns its outputs as numpy arrays.
    #[pyo3(signature = (function, *arrays))]
    fn run<'py>(
        &self,
        py: Python<'py>,
        function: &str,
        arrays: &Bound<'py, PyTuple>,
    ) -> PyResult<Bound<'py, PyList>> {
        let info = self.model.function(function).map_err(error)?.clone();
        let inputs = host_inputs(py, &info, arrays)?;
        let results = py.detach(|| self.placement().run(&info.name, &inputs));
        to_numpy(py, results.map_err(error)?)
    }

    /// Runs `functions` in order, each on its device, the outputs of one
    /// the inputs of the next (kept in device memory); `arrays` are the
    /// first function's inputs, the result the last one's outputs.
    #[pyo3(signature = (functions, *arrays))]
    fn run_pipeline<'py>(
        &self,
        py: Python<'py>,
        functions: Vec<String>,
        arrays: &Bound<'py, PyTuple>,
    ) -> PyResult<Bound<'py, PyList>> {
        let Some(first) = functions.first() else {
            return Err(PyValueError::new_err(
                "a pipeline needs at least one function",
            ));
        };
        let info = self.model.function(first).map_err(error)?.clone();
        let inputs = host_inputs(py, &info, arrays)?;
        let names: Vec<&str> = functions.iter().map(String::as_str).collect();
        let results = py.detach(|| self.placement().run_pipeline(&names, &inputs));
        to_numpy(py, results.map_err(error)?)
    }

    fn __repr__(&self) -> String {
        format!(
            "PlacedModel({} on {})",
            self.model.path().display(),
            self.devices.join(", ")
        )
    }
}

/// Loads a compiled model with its functions placed on several devices:
/// `placement` is "FUNCTION=I,..." or a dict {function: I}, I a position
/// in `devices` (OpenCL: indices or names as TCC_DEVICE takes them; CUDA
/// and Vulkan: device ordinals); functions not named run on the first
/// device. `backend` as for `load` (default: TCC_BACKEND, else what the
/// artifact asks for).
#[pyfunction]
#[pyo3(signature = (path, placement, devices, backend=None))]
pub(crate) fn load_placed(
    path: &str,
    placement: &Bound<'_, PyAny>,
    devices: Vec<String>,
    backend: Option<&str>,
) -> PyResult<PlacedModel> {
    let model = RtModel::load(path).map_err(error)?;
    let backend = match backend {
        Some(name) => name.parse::<Backend>().map_err(error)?,
        None => match Backend::from_env().map_err(error)? {
            Some(b) => b,
            None => Backend::preferred_for(&model).map_err(error)?,
        },
    };
    let places: Vec<(String, usize)> = if let Ok(text) = placement.extract::<String>() {
        tcc_runtime::hal::parse_placement(&text).map_err(error)?
    } else if let Ok(dict) = placement.cast::<PyDict>() {
        dict.iter()
            .map(|(k, v)| Ok((k.extract::<String>()?, v.extract::<usize>()?)))
            .collect::<PyResult<_>>()?
    } else {
        return Err(PyValueError::new_err(
            "placement: expected \"FUNCTION=I,...\" or a dict {function: device position}",
        ));
    };
    let opened = open_devices(backend, &devices)?;
    let names = opened.iter().map(|d| d.summary()).collect();
    let placed = Placement::new(&opened, &model, &places).map_err(error)?;
    Ok(PlacedModel {
        placement: Mutex::new(placed),
        model,
        devices: names,
    })
}
