//! Kernels that a runtime can specialize per call shape (issue 33).
//!
//! A kernel on a symbolic dimension reads each extent (and each other
//! host `index` value) from a scalar argument after its buffers
//! ([`ScalarArg`]). So that the runtime can rebuild the same source with
//! a call's values as build-time constants, and the device compiler fold
//! them into the loop bounds, guards and tile counts, every scalar is read
//! through a macro of its C name: the build option named by
//! [`tcc_abi::symbolic::specialization_macro`] (kernel and argument
//! position) where the runtime defines it, else the argument, which the
//! kernel then declares as `NAME_arg`. The macro is undefined after the
//! kernel, whose scalar names other kernels reuse. A kernel without scalar
//! arguments (every kernel of a static model) is written unchanged.

use super::writer::ScalarArg;

/// `text` (a kernel's whole text, comment, signature and body) with its
/// scalar parameters renamed `NAME_arg` and read through macros; the
/// scalars are the kernel's parameters after its `buffers` buffers, in
/// order.
pub(super) fn specializable(
    kernel: &str,
    buffers: usize,
    scalars: &[ScalarArg],
    text: String,
) -> String {
    if scalars.is_empty() {
        return text;
    }
    // The signature ends at the first `) {` after `void NAME(`; only
    // there are the parameters renamed.
    let start = text.find(&format!("void {kernel}(")).unwrap_or(0);
    let end = text[start..]
        .find(") {")
        .map_or(text.len(), |offset| start + offset);
    let mut signature = text[start..end].to_string();
    let mut prologue = String::from(
        "/* Scalar arguments read through macros: build-time constants where the runtime\n * specializes the program for a call's shapes, else the arguments. */\n",
    );
    let mut epilogue = String::new();
    for (index, scalar) in scalars.iter().enumerate() {
        let name = scalar.name();
        let constant = tcc_abi::symbolic::specialization_macro(kernel, buffers + index);
        signature = signature.replace(
            &format!("const tcc_index {name},"),
            &format!("const tcc_index {name}_arg,"),
        );
        if signature.ends_with(&format!("const tcc_index {name}")) {
            signature.push_str("_arg");
        }
        prologue.push_str(&format!(
            "#ifdef {constant}\n#define {name} ((tcc_index)({constant}))\n#else\n#define {name} {name}_arg\n#endif\n"
        ));
        epilogue.push_str(&format!("#undef {name}\n"));
    }
    format!(
        "{prologue}{}{signature}{}{epilogue}",
        &text[..start],
        &text[end..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scalars_become_macros_of_their_constants_or_their_arguments() {
        let text = "/* k */\n__kernel void k(__global float* restrict a0,\n    const tcc_index a1,\n    const tcc_index a0_d1) {\n  a0[a1] = a0_d1;\n}\n".to_string();
        let scalars = [
            ScalarArg::Index { argument: 1 },
            ScalarArg::Extent { buffer: 0, dim: 1 },
        ];
        let out = specializable("k", 1, &scalars, text);
        assert!(
            out.contains("void k(__global float* restrict a0,\n    const tcc_index a1_arg,\n    const tcc_index a0_d1_arg) {\n  a0[a1] = a0_d1;\n}\n"),
            "{out}"
        );
        assert!(out.starts_with("/* Scalar arguments"), "{out}");
        for expected in [
            "#ifdef TCC_ARG_k_1\n#define a1 ((tcc_index)(TCC_ARG_k_1))\n#else\n#define a1 a1_arg\n#endif\n",
            "#ifdef TCC_ARG_k_2\n#define a0_d1 ((tcc_index)(TCC_ARG_k_2))\n#else\n#define a0_d1 a0_d1_arg\n#endif\n",
        ] {
            assert!(out.contains(expected), "{expected} in {out}");
        }
        assert!(out.ends_with("}\n#undef a1\n#undef a0_d1\n"), "{out}");
        // A static kernel is untouched.
        let fixed = "__kernel void s(__global float* a0) {\n}\n".to_string();
        assert_eq!(specializable("s", 1, &[], fixed.clone()), fixed);
    }
}
