//! The C API's model entry points: loading a model (from a file, from
//! memory, or linked into the program) and describing its functions and
//! their tensors.

use std::ffi::{c_char, c_void};
use std::sync::Arc;

use super::registry::{FunctionObject, ModelObject, Object, TensorInfo, model_of, register};
use super::{
    CResult, Failure, TCC_ERROR_NOT_FOUND, TCC_ERROR_NULL_ARGUMENT, TccLinkedModel, TccStatus,
    TccTensorInfo, c_str, c_str_or, c_string, guard, handle_out, in_ptr, non_null, out_ptr,
    set_if_given,
};
use crate::Model;
use crate::artifact::LinkedSymbols;

fn tensor_infos(descs: &[crate::TensorDesc]) -> Vec<TensorInfo> {
    descs
        .iter()
        .map(|d| TensorInfo {
            name: c_string(&d.name),
            dtype: d.dtype.to_abi(),
            // -1 for a symbolic extent (`tcc compile --dim`); `bytes`
            // then counts its declared maximum.
            shape: d.abi_shape(),
            bytes: d.byte_size() as u64,
        })
        .collect()
}

fn register_model(model: Model, out: &mut *mut c_void) {
    let functions = model
        .functions()
        .iter()
        .map(|f| FunctionObject {
            name: c_string(&f.name),
            inputs: tensor_infos(&f.inputs),
            outputs: tensor_infos(&f.outputs),
        })
        .collect();
    let producer = c_string(model.producer());
    *out = register(Object::Model(Arc::new(ModelObject {
        model,
        producer,
        functions,
    })));
}

#[unsafe(no_mangle)]
pub extern "C" fn tcc_model_load_file(path: *const c_char, out: *mut *mut c_void) -> TccStatus {
    guard(|| {
        let out = handle_out(out, "out")?;
        let path = c_str(path, "path")?;
        register_model(Model::load(&path)?, out);
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn tcc_model_load_memory(
    data: *const c_void,
    bytes: usize,
    label: *const c_char,
    out: *mut *mut c_void,
) -> TccStatus {
    guard(|| {
        let out = handle_out(out, "out")?;
        non_null(data, "data")?;
        let label = c_str_or(label, "label", "<model in memory>")?;
        // SAFETY: the caller promises `bytes` readable bytes at `data`.
        let slice = unsafe { std::slice::from_raw_parts(data as *const u8, bytes) };
        register_model(Model::load_bytes(slice, &label)?, out);
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn tcc_model_load_linked(
    linked: *const TccLinkedModel,
    out: *mut *mut c_void,
) -> TccStatus {
    guard(|| {
        let out = handle_out(out, "out")?;
        let linked = in_ptr(linked, "model")?;
        let name = c_str_or(linked.name, "name", "model")?;
        let describe = linked.artifact.ok_or_else(|| {
            Failure(
                TCC_ERROR_NULL_ARGUMENT,
                "the model's artifact function is NULL".into(),
            )
        })?;
        let symbols = LinkedSymbols {
            // SAFETY: the same signature, with the table type made opaque in
            // the C API header.
            describe: unsafe {
                std::mem::transmute::<
                    unsafe extern "C" fn() -> *const c_void,
                    crate::abi::TccArtifactV1Fn,
                >(describe)
            },
            ptx: linked.kernel_ptx,
            metadata: linked.metadata,
            // Not in TCC_LINKED_MODEL: a linked-in model is checked against
            // its segments only.
            description: None,
        };
        // SAFETY: the functions are a linked-in artifact's (the caller's
        // promise, by way of TCC_LINKED_MODEL).
        register_model(unsafe { Model::from_linked(&name, symbols) }?, out);
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn tcc_model_free(model: *mut c_void) -> TccStatus {
    guard(|| model_of(model, true).map(drop))
}

#[unsafe(no_mangle)]
pub extern "C" fn tcc_model_producer(
    model: *const c_void,
    producer: *mut *const c_char,
) -> TccStatus {
    guard(|| {
        let model = model_of(model, false)?;
        *out_ptr(producer, "producer")? = model.producer.as_ptr();
        Ok(())
    })
}

/// Hashes the model's constants and compares them with the checksum its
/// compiler stored (`tcc-run --verify`): `TCC_ERROR_LOAD` for a damaged
/// artifact or one without a checksummed description.
#[unsafe(no_mangle)]
pub extern "C" fn tcc_model_verify(model: *const c_void) -> TccStatus {
    guard(|| {
        let model = model_of(model, false)?;
        model.model.verify()?;
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn tcc_model_function_count(model: *const c_void, count: *mut usize) -> TccStatus {
    guard(|| {
        let model = model_of(model, false)?;
        *out_ptr(count, "count")? = model.functions.len();
        Ok(())
    })
}

fn function_at(model: &ModelObject, index: usize) -> CResult<&FunctionObject> {
    model.functions.get(index).ok_or_else(|| {
        Failure(
            TCC_ERROR_NOT_FOUND,
            format!(
                "no function {index}: the model has {} functions",
                model.functions.len()
            ),
        )
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn tcc_model_function(
    model: *const c_void,
    index: usize,
    name: *mut *const c_char,
    num_inputs: *mut usize,
    num_outputs: *mut usize,
) -> TccStatus {
    guard(|| {
        let model = model_of(model, false)?;
        let f = function_at(&model, index)?;
        set_if_given(name, f.name.as_ptr());
        set_if_given(num_inputs, f.inputs.len());
        set_if_given(num_outputs, f.outputs.len());
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn tcc_model_find_function(
    model: *const c_void,
    name: *const c_char,
    index: *mut usize,
) -> TccStatus {
    guard(|| {
        let model = model_of(model, false)?;
        let name = c_str(name, "name")?;
        let index = out_ptr(index, "index")?;
        let wanted = model.model.function(&name)?.name.clone();
        *index = model
            .model
            .functions()
            .iter()
            .position(|f| f.name == wanted)
            .expect("found above");
        Ok(())
    })
}

fn tensor_info(
    model: *const c_void,
    function: usize,
    index: usize,
    info: *mut TccTensorInfo,
    output: bool,
) -> CResult<()> {
    let model = model_of(model, false)?;
    let f = function_at(&model, function)?;
    let list = if output { &f.outputs } else { &f.inputs };
    let kind = if output { "output" } else { "input" };
    let t = list.get(index).ok_or_else(|| {
        Failure(
            TCC_ERROR_NOT_FOUND,
            format!(
                "no {kind} {index} of @{}: it has {}",
                f.name.to_string_lossy(),
                list.len()
            ),
        )
    })?;
    *out_ptr(info, "info")? = t.to_c();
    Ok(())
}

#[unsafe(no_mangle)]
pub extern "C" fn tcc_model_input(
    model: *const c_void,
    function: usize,
    index: usize,
    info: *mut TccTensorInfo,
) -> TccStatus {
    guard(|| tensor_info(model, function, index, info, false))
}

#[unsafe(no_mangle)]
pub extern "C" fn tcc_model_output(
    model: *const c_void,
    function: usize,
    index: usize,
    info: *mut TccTensorInfo,
) -> TccStatus {
    guard(|| tensor_info(model, function, index, info, true))
}
