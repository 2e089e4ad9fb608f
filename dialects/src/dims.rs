//! The symbolic dimensions of a module (`#tcc.dims<...>`, `td/TccAttrs.td`)
//! as Rust values: each name a module keeps as `?` in its types and the
//! range it may take at run time. `tcc compile --dim NAME=MIN..MAX` parses
//! into a [`DimRange`]; the module carries them all as `tcc.dims`, read
//! back through [`Dims::from_attribute`]. Function arguments say which of
//! their dimensions is which symbol with `tcc.dim_names`
//! ([`DIM_NAMES`]).

use std::fmt;
use std::str::FromStr;

use melior::ir::Attribute;
use melior::ir::attribute::AttributeLike;
use mlir_sys::{
    MlirAttribute, MlirContext, MlirStringRef, mlirArrayAttrGetElement,
    mlirArrayAttrGetNumElements, mlirAttributeIsAArray, mlirAttributeIsAString,
    mlirDenseArrayGetNumElements, mlirDenseI64ArrayGetElement, mlirStringAttrGetValue,
};

/// The module attribute holding the [`Dims`].
pub const DIMS: &str = "tcc.dims";
/// The argument attribute naming the symbol of each dimension (`""` for a
/// static one).
pub const DIM_NAMES: &str = "tcc.dim_names";
/// The largest extent a symbolic dimension may declare (the kernels index
/// with 32-bit integers).
pub const MAX_EXTENT: i64 = i32::MAX as i64;

/// One symbolic dimension and its inclusive range.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DimRange {
    pub name: String,
    pub min: i64,
    pub max: i64,
}

impl DimRange {
    /// Whether `value` lies in the range.
    pub fn contains(&self, value: i64) -> bool {
        (self.min..=self.max).contains(&value)
    }
}

impl fmt::Display for DimRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}..{}", self.name, self.min, self.max)
    }
}

/// Whether `name` can name a dimension: what ONNX exporters write for a
/// `dim_param` (letters, digits, `_`, `-`, `.`, `/`, `:`), not empty.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | ':'))
}

impl FromStr for DimRange {
    type Err = String;

    /// `NAME=MIN..MAX` or `NAME=N` (the range of one value).
    fn from_str(text: &str) -> Result<Self, String> {
        let usage = || format!("--dim '{text}': expected NAME=MIN..MAX, e.g. batch=1..64");
        let (name, range) = text.split_once('=').ok_or_else(usage)?;
        let name = name.trim();
        if !valid_name(name) {
            return Err(format!(
                "--dim '{text}': '{name}' is not a dimension name (letters, digits, _ - . / :)"
            ));
        }
        let (min, max) = match range.split_once("..") {
            Some((lo, hi)) => (lo.trim(), hi.trim()),
            None => (range.trim(), range.trim()),
        };
        let number = |s: &str| s.parse::<i64>().map_err(|_| usage());
        let (min, max) = (number(min)?, number(max)?);
        if min < 1 || min > max || max > MAX_EXTENT {
            return Err(format!(
                "--dim '{text}': the range must satisfy 1 <= MIN <= MAX <= {MAX_EXTENT}"
            ));
        }
        Ok(DimRange {
            name: name.to_string(),
            min,
            max,
        })
    }
}

/// Every symbolic dimension of a module, in declaration order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Dims(pub Vec<DimRange>);

unsafe extern "C" {
    fn tccDimsAttrGet(
        context: MlirContext,
        count: isize,
        names: *const MlirStringRef,
        min: *const i64,
        max: *const i64,
    ) -> MlirAttribute;
    fn tccDimsAttrRead(
        attr: MlirAttribute,
        names: *mut MlirAttribute,
        min: *mut MlirAttribute,
        max: *mut MlirAttribute,
    ) -> bool;
}

fn owned(text: MlirStringRef) -> String {
    if text.data.is_null() {
        return String::new();
    }
    // SAFETY: the attribute's storage, alive as long as its context.
    let bytes = unsafe { std::slice::from_raw_parts(text.data as *const u8, text.length) };
    String::from_utf8_lossy(bytes).into_owned()
}

/// The strings of an array attribute (`tcc.dim_names`, the names of
/// `#tcc.dims`); `None` if it is not an array of strings.
pub fn string_array(attribute: Attribute) -> Option<Vec<String>> {
    let raw = attribute.to_raw();
    if !unsafe { mlirAttributeIsAArray(raw) } {
        return None;
    }
    let count = unsafe { mlirArrayAttrGetNumElements(raw) };
    let mut strings = Vec::with_capacity(count.max(0) as usize);
    for i in 0..count {
        let element = unsafe { mlirArrayAttrGetElement(raw, i) };
        if !unsafe { mlirAttributeIsAString(element) } {
            return None;
        }
        strings.push(owned(unsafe { mlirStringAttrGetValue(element) }));
    }
    Some(strings)
}

fn i64_array(raw: MlirAttribute) -> Vec<i64> {
    let count = unsafe { mlirDenseArrayGetNumElements(raw) };
    (0..count)
        .map(|i| unsafe { mlirDenseI64ArrayGetElement(raw, i) })
        .collect()
}

impl Dims {
    /// The range of the dimension `name`.
    pub fn get(&self, name: &str) -> Option<&DimRange> {
        self.0.iter().find(|d| d.name == name)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Decodes a `#tcc.dims` attribute; `None` for any other attribute.
    pub fn from_attribute(attribute: Attribute) -> Option<Self> {
        let null = MlirAttribute {
            ptr: std::ptr::null(),
        };
        let (mut names, mut min, mut max) = (null, null, null);
        if !unsafe { tccDimsAttrRead(attribute.to_raw(), &mut names, &mut min, &mut max) } {
            return None;
        }
        let names = string_array(unsafe { Attribute::from_raw(names) })?;
        let (min, max) = (i64_array(min), i64_array(max));
        Some(Dims(
            names
                .into_iter()
                .zip(min.into_iter().zip(max))
                .map(|(name, (min, max))| DimRange { name, min, max })
                .collect(),
        ))
    }

    /// The attribute in `context`; `None` when the ranges fail its
    /// verifier (reported through the context's diagnostics).
    pub fn to_attribute<'c>(&self, context: &'c melior::Context) -> Option<Attribute<'c>> {
        let names: Vec<MlirStringRef> = self
            .0
            .iter()
            .map(|d| MlirStringRef {
                data: d.name.as_ptr() as *const _,
                length: d.name.len(),
            })
            .collect();
        let min: Vec<i64> = self.0.iter().map(|d| d.min).collect();
        let max: Vec<i64> = self.0.iter().map(|d| d.max).collect();
        let attribute = unsafe {
            tccDimsAttrGet(
                context.to_raw(),
                self.0.len() as isize,
                names.as_ptr(),
                min.as_ptr(),
                max.as_ptr(),
            )
        };
        (!attribute.ptr.is_null()).then(|| unsafe { Attribute::from_raw(attribute) })
    }
}

impl fmt::Display for Dims {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, d) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{d}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_parse_from_the_command_line() {
        let batch: DimRange = "batch=1..64".parse().unwrap();
        assert_eq!(
            batch,
            DimRange {
                name: "batch".into(),
                min: 1,
                max: 64
            }
        );
        assert!(batch.contains(1) && batch.contains(64));
        assert!(!batch.contains(0) && !batch.contains(65));
        assert_eq!("seq=8".parse::<DimRange>().unwrap().max, 8);
        for bad in [
            "batch",
            "batch=0..4",
            "batch=5..4",
            "=1..2",
            "b x=1..2",
            "b=1..x",
        ] {
            assert!(bad.parse::<DimRange>().is_err(), "{bad}");
        }
        assert!(
            "b=1..4294967296"
                .parse::<DimRange>()
                .unwrap_err()
                .contains("2147483647")
        );
    }

    #[test]
    fn dims_round_trip_through_their_attribute() {
        let context = crate::new_context();
        context.load_all_available_dialects();
        let dims = Dims(vec![
            "batch=1..64".parse().unwrap(),
            "seq=1..512".parse().unwrap(),
        ]);
        let attribute = dims.to_attribute(&context).unwrap();
        assert_eq!(
            attribute.to_string(),
            "#tcc.dims<names = [\"batch\", \"seq\"], min = [1, 1], max = [64, 512]>"
        );
        assert_eq!(Dims::from_attribute(attribute), Some(dims.clone()));
        let parsed = Attribute::parse(&context, &attribute.to_string()).unwrap();
        assert_eq!(parsed, attribute);
        assert!(Dims::from_attribute(Attribute::parse(&context, "\"batch\"").unwrap()).is_none());
        let twice = Dims(vec![dims.0[0].clone(), dims.0[0].clone()]);
        assert!(twice.to_attribute(&context).is_none());
        let empty_range = Dims(vec![DimRange {
            name: "batch".into(),
            min: 9,
            max: 3,
        }]);
        assert!(empty_range.to_attribute(&context).is_none());
    }
}
