//! What the CUDA backend reads from an artifact's PTX text, without the
//! driver: each kernel's parameter list. (What a kernel needs at launch,
//! its CUDA *dynamic* shared memory included, is its launch record in the
//! artifact's table, not text in the PTX.)
//!
//! `.entry NAME( .param ..., ... )` gives each kernel's parameters, so
//! that a launch with the wrong number or sizes of arguments is an error
//! instead of a crash inside the driver (`cuLaunchKernel` trusts the
//! argument array).

use std::collections::HashMap;

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
