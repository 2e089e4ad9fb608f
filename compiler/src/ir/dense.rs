//! Integer lists stored in attributes, read through the MLIR C API: dense
//! arrays (`array<i64: 1, 2>`, `array<i32: ...>` as in
//! `operandSegmentSizes`, `known_block_size`, `tosa` `kernel`/`stride`) and
//! integer `dense<...>` elements (`strides = dense<[2, 1]> : tensor<2xi64>`,
//! splats included). Nothing here prints an attribute to read it.

use melior::ir::attribute::AttributeLike;
use melior::ir::operation::{OperationLike, OperationRef};
use melior::ir::{Attribute, TypeLike};

/// The values of a dense integer array attribute (`array<i64: ...>`,
/// `array<i32: ...>`, `array<i16: ...>` or `array<i8: ...>`), widened to
/// `i64`; `None` for any other attribute.
pub fn int_array(attribute: Attribute) -> Option<Vec<i64>> {
    let raw = attribute.to_raw();
    let get: unsafe extern "C" fn(mlir_sys::MlirAttribute, isize) -> i64 = unsafe {
        if mlir_sys::mlirAttributeIsADenseI64Array(raw) {
            mlir_sys::mlirDenseI64ArrayGetElement
        } else if mlir_sys::mlirAttributeIsADenseI32Array(raw) {
            i32_element
        } else if mlir_sys::mlirAttributeIsADenseI16Array(raw) {
            i16_element
        } else if mlir_sys::mlirAttributeIsADenseI8Array(raw) {
            i8_element
        } else {
            return None;
        }
    };
    let count = unsafe { mlir_sys::mlirDenseArrayGetNumElements(raw) };
    Some((0..count).map(|i| unsafe { get(raw, i) }).collect())
}

unsafe extern "C" fn i32_element(attribute: mlir_sys::MlirAttribute, index: isize) -> i64 {
    unsafe { mlir_sys::mlirDenseI32ArrayGetElement(attribute, index) as i64 }
}

unsafe extern "C" fn i16_element(attribute: mlir_sys::MlirAttribute, index: isize) -> i64 {
    unsafe { mlir_sys::mlirDenseI16ArrayGetElement(attribute, index) as i64 }
}

unsafe extern "C" fn i8_element(attribute: mlir_sys::MlirAttribute, index: isize) -> i64 {
    unsafe { mlir_sys::mlirDenseI8ArrayGetElement(attribute, index) as i64 }
}

/// The values of the dense integer array attribute `name` of `op`; `None`
/// when it is absent or not a dense integer array.
pub fn int_array_attribute(op: OperationRef, name: &str) -> Option<Vec<i64>> {
    int_array(op.attribute(name).ok()?)
}

/// The elements of an integer or index `dense<...>` attribute in row-major
/// order (a splat expanded to its element count), widened to `i64`; `None`
/// for any other attribute (float elements, `dense_resource`, arrays).
pub fn int_elements(attribute: Attribute) -> Option<Vec<i64>> {
    let raw = attribute.to_raw();
    if !unsafe { mlir_sys::mlirAttributeIsADenseIntElements(raw) } {
        return None;
    }
    let element = unsafe { mlir_sys::mlirShapedTypeGetElementType(attribute.r#type().to_raw()) };
    let get: unsafe extern "C" fn(mlir_sys::MlirAttribute, isize) -> i64 = unsafe {
        if mlir_sys::mlirTypeIsAIndex(element) {
            index_value
        } else if !mlir_sys::mlirTypeIsAInteger(element)
            || mlir_sys::mlirIntegerTypeIsUnsigned(element)
        {
            // Unsigned elements cannot be read as signed values.
            return None;
        } else {
            match mlir_sys::mlirIntegerTypeGetWidth(element) {
                64 => mlir_sys::mlirDenseElementsAttrGetInt64Value,
                32 => int32_value,
                16 => int16_value,
                8 => int8_value,
                _ => return None,
            }
        }
    };
    let count = unsafe { mlir_sys::mlirElementsAttrGetNumElements(raw) };
    let count = isize::try_from(count).ok()?;
    Some((0..count).map(|i| unsafe { get(raw, i) }).collect())
}

unsafe extern "C" fn index_value(attribute: mlir_sys::MlirAttribute, index: isize) -> i64 {
    unsafe { mlir_sys::mlirDenseElementsAttrGetIndexValue(attribute, index) as i64 }
}

unsafe extern "C" fn int32_value(attribute: mlir_sys::MlirAttribute, index: isize) -> i64 {
    unsafe { mlir_sys::mlirDenseElementsAttrGetInt32Value(attribute, index) as i64 }
}

unsafe extern "C" fn int16_value(attribute: mlir_sys::MlirAttribute, index: isize) -> i64 {
    unsafe { mlir_sys::mlirDenseElementsAttrGetInt16Value(attribute, index) as i64 }
}

unsafe extern "C" fn int8_value(attribute: mlir_sys::MlirAttribute, index: isize) -> i64 {
    unsafe { mlir_sys::mlirDenseElementsAttrGetInt8Value(attribute, index) as i64 }
}

/// The sizes of `op`'s operand segments (`operandSegmentSizes`), if it has
/// them: for a linalg structured op `[inputs, inits]`.
pub fn operand_segment_sizes(op: OperationRef) -> Option<Vec<i64>> {
    int_array_attribute(op, "operandSegmentSizes")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::testing::{first_op, parse};

    #[test]
    fn reads_dense_arrays_of_every_width() {
        let context = tcc_dialects::new_context();
        let module = parse(
            &context,
            r#"
            "test.op"() {a = array<i64: 4, -2, 1>, b = array<i32: 2, 1>,
                         c = array<i16: 7>, d = array<i8>, e = 3 : i64} : () -> ()
            "#,
        );
        let op = first_op(&module, "test.op");
        assert_eq!(int_array_attribute(op, "a"), Some(vec![4, -2, 1]));
        assert_eq!(int_array_attribute(op, "b"), Some(vec![2, 1]));
        assert_eq!(int_array_attribute(op, "c"), Some(vec![7]));
        assert_eq!(int_array_attribute(op, "d"), Some(vec![]));
        assert_eq!(int_array_attribute(op, "e"), None);
        assert_eq!(int_array_attribute(op, "missing"), None);
    }

    #[test]
    fn reads_integer_dense_elements_and_splats() {
        let context = tcc_dialects::new_context();
        let module = parse(
            &context,
            r#"
            "test.op"() {a = dense<[2, 1]> : tensor<2xi64>, b = dense<3> : vector<2xi32>,
                         c = dense<[[1, -1], [0, 5]]> : tensor<2x2xi8>,
                         d = dense<[4, 5]> : tensor<2xindex>,
                         f = dense<1.0> : tensor<2xf32>} : () -> ()
            "#,
        );
        let op = first_op(&module, "test.op");
        let elements = |name| int_elements(op.attribute(name).unwrap());
        assert_eq!(elements("a"), Some(vec![2, 1]));
        assert_eq!(elements("b"), Some(vec![3, 3]));
        assert_eq!(elements("c"), Some(vec![1, -1, 0, 5]));
        assert_eq!(elements("d"), Some(vec![4, 5]));
        assert_eq!(elements("f"), None);
    }

    #[test]
    fn reads_a_linalg_ops_operand_segments() {
        let context = tcc_dialects::new_context();
        let module = parse(
            &context,
            r#"
            func.func @f(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
              %0 = linalg.add ins(%a, %b : tensor<4xf32>, tensor<4xf32>)
                              outs(%a : tensor<4xf32>) -> tensor<4xf32>
              return %0 : tensor<4xf32>
            }
            "#,
        );
        let add = first_op(&module, "linalg.add");
        assert_eq!(operand_segment_sizes(add), Some(vec![2, 1]));
        let func = first_op(&module, "func.func");
        assert_eq!(operand_segment_sizes(func), None);
    }
}
