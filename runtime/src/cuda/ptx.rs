//! What the CUDA backend reads from an artifact's PTX text, without the
//! driver: the compiler's dynamic-local markers and each kernel's
//! parameter list.
//!
//! - A kernel that needs CUDA *dynamic* shared memory (more than the
//!   48 KiB a kernel may have statically, which is also all NVIDIA's
//!   OpenCL grants) is announced by a module-scope comment line
//!   `// tcc-dynamic-local: <kernel_name> <bytes>`, one per such kernel.
//!   The CUDA session raises the kernel's limit to `bytes` and launches it
//!   with that much dynamic shared memory; the OpenCL path refuses such
//!   PTX (`session/program.rs`).
//! - `.entry NAME( .param ..., ... )` gives each kernel's parameters, so
//!   that a launch with the wrong number or sizes of arguments is an error
//!   instead of a crash inside the driver (`cuLaunchKernel` trusts the
//!   argument array).

use std::collections::HashMap;

/// The comment that starts a dynamic-local marker line (tcc-abi's).
pub use tcc_abi::DYNAMIC_LOCAL_MARKER;

/// One kernel's dynamic shared memory, from its marker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DynamicLocal {
    pub kernel: String,
    pub bytes: u32,
}

/// The dynamic-local markers of `ptx`, in order. A line that starts with
/// the marker (after leading white space) must read exactly
/// `// tcc-dynamic-local: KERNEL BYTES`, name one of `kernels` and not
/// repeat a kernel; otherwise the error names the line.
pub fn dynamic_local_markers(
    ptx: &str,
    kernels: &[String],
) -> std::result::Result<Vec<DynamicLocal>, String> {
    let mut found: Vec<DynamicLocal> = Vec::new();
    for (index, line) in ptx.lines().enumerate() {
        let Some(rest) = line.trim_start().strip_prefix(DYNAMIC_LOCAL_MARKER) else {
            // Catches `//tcc-dynamic-local:` and other near misses.
            if line.contains("tcc-dynamic-local") {
                return Err(malformed(index, line));
            }
            continue;
        };
        let words: Vec<&str> = rest.split_whitespace().collect();
        let [kernel, bytes] = words.as_slice() else {
            return Err(malformed(index, line));
        };
        let bytes = bytes
            .parse::<u32>()
            .ok()
            .filter(|_| bytes.bytes().all(|b| b.is_ascii_digit()))
            .ok_or_else(|| malformed(index, line))?;
        if !kernels.iter().any(|k| k == kernel) {
            return Err(format!(
                "PTX line {}: `{}` names kernel `{kernel}`, which the artifact does not have",
                index + 1,
                line.trim()
            ));
        }
        if found.iter().any(|d| d.kernel == *kernel) {
            return Err(format!(
                "PTX line {}: a second dynamic-local marker for kernel `{kernel}`",
                index + 1
            ));
        }
        found.push(DynamicLocal {
            kernel: kernel.to_string(),
            bytes,
        });
    }
    Ok(found)
}

fn malformed(index: usize, line: &str) -> String {
    format!(
        "PTX line {}: `{}` is not a marker of the form `{DYNAMIC_LOCAL_MARKER} KERNEL BYTES`",
        index + 1,
        line.trim()
    )
}

/// Each `.entry`'s parameters, by kernel name: the byte size of each
/// parameter, in order (`.u64` 8, `.u32`/`.f32` 4, `.b8 name[16]` 16, ...).
pub fn entry_parameters(ptx: &str) -> std::result::Result<HashMap<String, Vec<u32>>, String> {
    // Line comments out, so that `.entry` in a comment is not read.
    let text: String = ptx
        .lines()
        .map(|l| l.split_once("//").map_or(l, |(code, _)| code))
        .collect::<Vec<_>>()
        .join("\n");
    let mut entries = HashMap::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find(".entry") {
        let after = &rest[at + ".entry".len()..];
        // `.entry` must be a whole directive (not `.entry_foo`).
        if !after.starts_with(char::is_whitespace) {
            rest = after;
            continue;
        }
        let after = after.trim_start();
        let name_len = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '$' || c == '%'))
            .unwrap_or(after.len());
        let name = &after[..name_len];
        if name.is_empty() {
            return Err("an `.entry` without a name".into());
        }
        let params_text = after[name_len..].trim_start();
        let Some(params_text) = params_text.strip_prefix('(') else {
            return Err(format!("`.entry {name}` has no parameter list"));
        };
        let Some(close) = params_text.find(')') else {
            return Err(format!("`.entry {name}`: unterminated parameter list"));
        };
        let sizes = params_text[..close]
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(|p| {
                parameter_size(p)
                    .ok_or_else(|| format!("`.entry {name}`: cannot read parameter `{p}`"))
            })
            .collect::<std::result::Result<Vec<u32>, String>>()?;
        entries.insert(name.to_string(), sizes);
        rest = &params_text[close..];
    }
    Ok(entries)
}

/// Bytes of one `.param` declaration: its type's size times its array
/// length (`.param .align 8 .b8 p[24]` is 24).
fn parameter_size(param: &str) -> Option<u32> {
    let mut words = param.split_whitespace();
    if words.next()? != ".param" {
        return None;
    }
    let mut size = None;
    let mut name = "";
    for word in words {
        match word {
            ".b8" | ".u8" | ".s8" => size = Some(1),
            ".b16" | ".u16" | ".s16" | ".f16" | ".bf16" => size = Some(2),
            ".b32" | ".u32" | ".s32" | ".f32" => size = Some(4),
            ".b64" | ".u64" | ".s64" | ".f64" => size = Some(8),
            w if w.starts_with('.') => {}       // .ptr, .global, .align
            w if w.parse::<u32>().is_ok() => {} // .align's value
            w => name = w,
        }
    }
    let size: u32 = size?;
    match name.split_once('[') {
        None => Some(size),
        Some((_, count)) => size.checked_mul(count.strip_suffix(']')?.trim().parse().ok()?),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kernels() -> Vec<String> {
        vec!["gemm_0".into(), "add_1".into()]
    }

    #[test]
    fn markers_are_read() {
        let ptx = "//\n// tcc-dynamic-local: gemm_0 197632\n.version 8.0\n  // tcc-dynamic-local: add_1 0\n";
        assert_eq!(
            dynamic_local_markers(ptx, &kernels()).unwrap(),
            vec![
                DynamicLocal {
                    kernel: "gemm_0".into(),
                    bytes: 197632
                },
                DynamicLocal {
                    kernel: "add_1".into(),
                    bytes: 0
                },
            ]
        );
        assert_eq!(
            dynamic_local_markers(".version 8.0\n// plain comment\n", &kernels()).unwrap(),
            vec![]
        );
    }

    #[test]
    fn malformed_markers_name_the_line() {
        for (ptx, line) in [
            ("// tcc-dynamic-local: gemm_0\n", 1),
            (".version 8.0\n// tcc-dynamic-local: gemm_0 12 extra\n", 2),
            ("// tcc-dynamic-local: gemm_0 -5\n", 1),
            ("// tcc-dynamic-local: gemm_0 +5\n", 1),
            ("// tcc-dynamic-local: gemm_0 99999999999\n", 1),
            ("// tcc-dynamic-local: gemm_0 12KiB\n", 1),
            ("\n\n//tcc-dynamic-local: gemm_0 12\n", 3),
        ] {
            let e = dynamic_local_markers(ptx, &kernels()).unwrap_err();
            assert!(
                e.starts_with(&format!("PTX line {line}: `")) && e.contains("is not a marker"),
                "{ptx:?}: {e}"
            );
        }
    }

    #[test]
    fn markers_must_name_a_kernel_once() {
        let e =
            dynamic_local_markers("// tcc-dynamic-local: conv_9 1024\n", &kernels()).unwrap_err();
        assert!(
            e.contains("kernel `conv_9`, which the artifact does not have"),
            "{e}"
        );
        let e = dynamic_local_markers(
            "// tcc-dynamic-local: gemm_0 1024\n// tcc-dynamic-local: gemm_0 2048\n",
            &kernels(),
        )
        .unwrap_err();
        assert!(e.starts_with("PTX line 2: a second"), "{e}");
    }

    #[test]
    fn entry_parameters_of_clang_ptx() {
        let ptx = "\
// .entry in_a_comment(
.version 8.0
.target sm_90
.address_size 64
.extern .shared .align 16 .b8 dyn[];
.visible .entry gemm_0(
\t.param .u64 .ptr .global .align 4 gemm_0_param_0,
\t.param .u64 .ptr .global .align 4 gemm_0_param_1,
\t.param .u32 gemm_0_param_2,
\t.param .f32 gemm_0_param_3,
\t.param .u64 gemm_0_param_4
)
.maxntid 256, 1, 1
{
\tret;
}
.visible .entry add_1()
{
\tret;
}
.visible .entry packed_2(.param .align 8 .b8 packed_2_param_0[24])
{ ret; }
";
        let entries = entry_parameters(ptx).unwrap();
        assert_eq!(entries.len(), 3, "{entries:?}");
        assert_eq!(entries["gemm_0"], vec![8, 8, 4, 4, 8]);
        assert_eq!(entries["add_1"], Vec::<u32>::new());
        assert_eq!(entries["packed_2"], vec![24]);
    }

    #[test]
    fn unreadable_entries_are_errors() {
        assert!(entry_parameters(".visible .entry k(.param .weird p)\n").is_err());
        assert!(entry_parameters(".visible .entry k(.param .u32 p\n").is_err());
        assert!(entry_parameters(".visible .entry k\n{ ret; }\n").is_err());
    }
}
