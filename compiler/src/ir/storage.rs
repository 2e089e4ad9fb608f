//! Which buffers are stored narrower than their element type: the
//! `tcc.storage` marks that `tcc-narrow-storage` writes (`--precision=fp16|bf16`, `--storage`)
//! on constant globals, allocations and kernel arguments, read by the
//! memory plan and the back ends.

use melior::ir::Type;
use melior::ir::attribute::{AttributeLike, TypeAttribute};
use melior::ir::operation::{OperationLike, OperationRef};

use super::attr_names::STORAGE;

/// The storage a kernel argument is marked with (`tcc.storage` in the
/// function's `arg_attrs`), if any.
pub fn argument_storage<'c>(function: OperationRef<'c, '_>, index: usize) -> Option<Type<'c>> {
    let array = function.attribute("arg_attrs").ok()?.to_raw();
    unsafe {
        if !mlir_sys::mlirAttributeIsAArray(array)
            || index as isize >= mlir_sys::mlirArrayAttrGetNumElements(array)
        {
            return None;
        }
        let dictionary = mlir_sys::mlirArrayAttrGetElement(array, index as isize);
        if !mlir_sys::mlirAttributeIsADictionary(dictionary) {
            return None;
        }
        let name = mlir_sys::MlirStringRef {
            data: STORAGE.as_ptr() as *const _,
            length: STORAGE.len(),
        };
        let attribute = mlir_sys::mlirDictionaryAttrGetElementByName(dictionary, name);
        if attribute.ptr.is_null() || !mlir_sys::mlirAttributeIsAType(attribute) {
            return None;
        }
        Some(Type::from_raw(mlir_sys::mlirTypeAttrGetValue(attribute)))
    }
}

/// The storage an op (`memref.global`, `memref.alloc`) is marked with.
pub fn op_storage<'c: 'a, 'a>(op: &impl OperationLike<'c, 'a>) -> Option<Type<'c>> {
    op.attribute(STORAGE)
        .ok()
        .and_then(|a| TypeAttribute::try_from(a).ok())
        .map(|t| t.value())
}
