//! Element addresses as C text: `offset + i0 * s0 + i1 * s1 + ...`, the one
//! builder both the templates here and the compiler's OpenCL C writer use.

/// A buffer's layout relative to its kernel argument: the element offset of
/// its first element and the stride of each dimension.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Address {
    pub offset: i64,
    pub strides: Vec<i64>,
}

impl Address {
    pub fn new(offset: i64, strides: Vec<i64>) -> Self {
        Address { offset, strides }
    }

    /// The C expression of the element at `indices` (C expressions, one per
    /// dimension): zero offsets and strides drop out, unit strides take the
    /// index alone, and no term at all is `0`.
    pub fn at<S: AsRef<str>>(&self, indices: &[S]) -> String {
        let strides: Vec<String> = self.strides.iter().map(i64::to_string).collect();
        linear(&self.offset.to_string(), &strides, indices)
    }
}

/// `offset + i0 * s0 + i1 * s1 + ...` of C expressions (offset and strides
/// numbers or, where a stride follows a run-time extent, expressions of
/// the kernel's scalar arguments): a `0` offset or stride drops out, a `1`
/// stride takes the index alone, and no term at all is `0`.
pub fn linear<S: AsRef<str>, T: AsRef<str>>(offset: &str, strides: &[S], indices: &[T]) -> String {
    let mut terms: Vec<String> = Vec::new();
    if offset != "0" {
        terms.push(offset.to_string());
    }
    for (index, stride) in indices.iter().zip(strides) {
        let index = index.as_ref();
        match stride.as_ref() {
            "0" => {}
            "1" => terms.push(index.to_string()),
            s => terms.push(format!("{index} * {s}")),
        }
    }
    if terms.is_empty() {
        "0".to_string()
    } else {
        terms.join(" + ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_drop_zero_terms_and_unit_strides() {
        let address = Address::new(12, vec![0, 64, 1]);
        assert_eq!(address.at(&["b", "i", "j"]), "12 + i * 64 + j");
        assert_eq!(Address::new(0, vec![0]).at(&["i"]), "0");
        assert_eq!(Address::new(0, vec![3, 1]).at(&["y", "x"]), "y * 3 + x");
        assert_eq!(
            linear("(a1_d1 * 8)", &["(a0_d1 * 96)", "1"], &["i", "j"]),
            "(a1_d1 * 8) + i * (a0_d1 * 96) + j"
        );
    }
}
