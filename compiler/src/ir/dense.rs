//! Integer lists stored in attributes, read through the MLIR C API: dense
//! arrays (`array<i64: 1, 2>`, `array<i32: ...>` as in
//! `operandSegmentSizes`, `known_block_size`, `tosa` `kernel`/`stride`) and
//! integer `dense<...>` elements (`strides = dense<[2, 1]> : tensor<2xi64>`,
//! splats included). Nothing here prints an attribute to read it.

use melior::ir::attribute::AttributeLike;
use melior::ir::operation::{OperationLike, OperationRef};
use melior::ir::{Attribute, TypeLike};

/// A C API getter of one element of an attribute.
type Getter<T> = unsafe extern "C" fn(mlir_sys::MlirAttribute, isize) -> T;

/// Elements `0..count` of `raw` read by `get`, as `i64` (`None` if one
/// does not fit).
fn read_all<T: TryInto<i64>>(
    raw: mlir_sys::MlirAttribute,
    count: isize,
    get: Getter<T>,
) -> Option<Vec<i64>> {
    (0..count)
        .map(|i| unsafe { get(raw, i) }.try_into().ok())
        .collect()
}

/// The values of a dense integer array attribute (`array<i64: ...>`,
/// `array<i32: ...>`, `array<i16: ...>` or `array<i8: ...>`), widened to
/// `i64`; `None` for any other attribute.
pub fn int_array(attribute: Attribute) -> Option<Vec<i64>> {
    use mlir_sys::*;
    let raw = attribute.to_raw();
    let count = || unsafe { mlirDenseArrayGetNumElements(raw) };
    unsafe {
        if mlirAttributeIsADenseI64Array(raw) {
            read_all(raw, count(), mlirDenseI64ArrayGetElement)
        } else if mlirAttributeIsADenseI32Array(raw) {
            read_all(raw, count(), mlirDenseI32ArrayGetElement)
        } else if mlirAttributeIsADenseI16Array(raw) {
            read_all(raw, count(), mlirDenseI16ArrayGetElement)
        } else if mlirAttributeIsADenseI8Array(raw) {
            read_all(raw, count(), mlirDenseI8ArrayGetElement)
        } else {
            None
        }
    }
}

/// The values of the dense integer array attribute `name` of `op`; `None`
/// when it is absent or not a dense integer array.
pub fn int_array_attribute(op: OperationRef, name: &str) -> Option<Vec<i64>> {
    int_array(op.attribute(name).ok()?)
}

/// A convolution's pair attribute (`strides`, `dilations`) as
/// `dense<[2, 1]> : tensor<2xi64>` or the splat `dense<1> : ...`; absent:
/// `[1, 1]`; `None` when present in another form.
pub fn conv_pair(op: OperationRef, name: &str) -> Option<[i64; 2]> {
    let Ok(attribute) = op.attribute(name) else {
        return Some([1, 1]);
    };
    match int_elements(attribute).as_deref() {
        Some([v]) => Some([*v, *v]),
        Some([a, b]) => Some([*a, *b]),
        _ => None,
    }
}

/// The elements of an integer or index `dense<...>` attribute in row-major
/// order (a splat expanded to its element count), widened to `i64`; `None`
/// for any other attribute (float or unsigned elements, `dense_resource`,
/// arrays).
pub fn int_elements(attribute: Attribute) -> Option<Vec<i64>> {
    use mlir_sys::*;
    let raw = attribute.to_raw();
    if !unsafe { mlirAttributeIsADenseIntElements(raw) } {
        return None;
    }
    let element = unsafe { mlirShapedTypeGetElementType(attribute.r#type().to_raw()) };
    let count = isize::try_from(unsafe { mlirElementsAttrGetNumElements(raw) }).ok()?;
    unsafe {
        if mlirTypeIsAIndex(element) {
            return read_all(
                raw,
                count,
                mlirDenseElementsAttrGetIndexValue as Getter<u64>,
            );
        }
        // Unsigned elements cannot be read as signed values.
        if !mlirTypeIsAInteger(element) || mlirIntegerTypeIsUnsigned(element) {
            return None;
        }
        match mlirIntegerTypeGetWidth(element) {
            64 => read_all(raw, count, mlirDenseElementsAttrGetInt64Value),
            32 => read_all(raw, count, mlirDenseElementsAttrGetInt32Value),
            16 => read_all(raw, count, mlirDenseElementsAttrGetInt16Value),
            8 => read_all(raw, count, mlirDenseElementsAttrGetInt8Value),
            _ => None,
        }
    }
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
