//! Symbolic dimensions (`tcc compile --dim NAME=MIN..MAX`): graph inputs
//! whose `dim_param` is declared keep it as `?` in the imported module.
//!
//! The op importers (`ops/`) compute static shapes. Rather than teach each
//! of them symbolic arithmetic, the graph is imported twice, each symbolic
//! dimension taking a different large prime (a *probe*) in each import,
//! and the two texts are merged: they must be identical token by token
//! except for numbers that depend on the probes. Such a number
//!
//! - in a tensor type's shape (`tensor<1009x32xf32>`) becomes `?`, when it
//!   is a multiple `k * d1 * d2 ...` of symbolic dimensions in both
//!   imports (rows = batch x tokens is `k = tokens`);
//! - in a `tosa.const_shape` read only by `tosa.reshape`s becomes `-1`
//!   (the one dimension the reshape infers), at most one per shape;
//! - anywhere else (a constant computed from the shape, a slice bound, a
//!   structure that depends on the value) is an error naming the node.
//!
//! The relation between the `?`s (which symbol, which multiple) is not
//! kept in the types; the arguments name theirs with `tcc.dim_names`, and
//! the compiler's later phases derive the rest from the arguments (see
//! docs/architecture.md, "Dynamic shapes").

use std::collections::HashMap;

use super::super::error::{ImportError, Result, bail};
use super::super::proto::ModelProto;
use super::super::{ImportOptions, Imported};
use super::graph::declared_type;

/// Two probe values per symbolic dimension (the n-th dimension takes
/// `PROBES[n]`): distinct primes, larger than any dimension a model
/// declares statically in practice, so that a product of probes can be
/// told apart from a static extent and one symbol from another.
const PROBES: [(i64, i64); 4] = [(1009, 1013), (1019, 1021), (1031, 1033), (1039, 1049)];

/// Imports `model` with its symbolic dimensions kept as `?`, `import`
/// doing one import for the given probe values (and returning the
/// symbolic dimensions the graph inputs used).
pub fn import<F>(model: &ModelProto, options: &ImportOptions, import: F) -> Result<Imported>
where
    F: Fn(HashMap<String, i64>) -> Result<(Imported, Vec<String>)>,
{
    let declared = declared_params(model);
    let mut names: Vec<&String> = Vec::new();
    for name in &options.symbolic_dims {
        if !declared.contains(name) {
            let known = if declared.is_empty() {
                "its inputs declare no dynamic dimension".to_string()
            } else {
                format!(
                    "its inputs' dynamic dimensions are: {}",
                    declared.join(", ")
                )
            };
            bail!("--dim names '{name}', which no graph input of the model declares ({known})");
        }
        if !names.contains(&name) {
            names.push(name);
        }
    }
    if names.len() > PROBES.len() {
        bail!(
            "--dim declares {} symbolic dimensions; at most {} are supported",
            names.len(),
            PROBES.len()
        );
    }
    let probes = |pick: fn((i64, i64)) -> i64| -> HashMap<String, i64> {
        names
            .iter()
            .zip(PROBES)
            .map(|(n, p)| ((*n).clone(), pick(p)))
            .collect()
    };
    // An input given a static shape fixes its dimensions; another input
    // naming the same one cannot keep it symbolic.
    if let Some(graph) = model.graph.as_ref() {
        let overridden = |name: &str| options.input_shapes.iter().any(|(n, _)| n == name);
        let params_of = |info: &super::super::proto::ValueInfoProto| {
            declared_type(info).map_or(Vec::new(), |(_, dims, params)| {
                dims.iter()
                    .zip(params)
                    .filter(|(d, p)| d.is_none() && names.contains(&p))
                    .map(|(_, p)| p)
                    .collect::<Vec<String>>()
            })
        };
        let free: Vec<String> = graph
            .input
            .iter()
            .filter(|i| !overridden(&i.name))
            .flat_map(params_of)
            .collect();
        for info in graph.input.iter().filter(|i| overridden(&i.name)) {
            if let Some(p) = params_of(info).into_iter().find(|p| free.contains(p)) {
                bail!(
                    "--input-shape gives '{}' a static shape, which fixes its dimension '{p}', but other inputs keep '{p}' symbolic (--dim {p}=...): give every input naming '{p}' a shape, or none",
                    info.name
                );
            }
        }
    }
    let (first, used) = import(probes(|p| p.0))?;
    if used.is_empty() {
        // Every input naming the dimension was given a static shape
        // (--input-shape): nothing is symbolic.
        return Ok(first);
    }
    let (second, _) = import(probes(|p| p.1))?;
    let symbols: Vec<Symbol> = names
        .iter()
        .zip(PROBES)
        .map(|(n, (a, b))| Symbol {
            name: (*n).clone(),
            probes: (a, b),
        })
        .collect();
    let mlir = merge(&first.mlir, &second.mlir, &symbols)?;
    let inputs = first
        .inputs
        .into_iter()
        .map(|mut io| {
            io.ty.shape = symbolic_shape(&io.ty.shape, &symbols);
            io
        })
        .collect();
    let outputs = first
        .outputs
        .into_iter()
        .map(|mut io| {
            io.ty.shape = symbolic_shape(&io.ty.shape, &symbols);
            io
        })
        .collect();
    Ok(Imported {
        mlir,
        inputs,
        outputs,
        ..first
    })
}

/// The `dim_param`s the graph inputs declare, in order, each once.
fn declared_params(model: &ModelProto) -> Vec<String> {
    let mut params: Vec<String> = Vec::new();
    let Some(graph) = model.graph.as_ref() else {
        return params;
    };
    for info in &graph.input {
        if let Ok((_, dims, names)) = declared_type(info) {
            for (d, p) in dims.iter().zip(names) {
                if d.is_none() && !p.is_empty() && !params.contains(&p) {
                    params.push(p);
                }
            }
        }
    }
    params
}

/// A symbolic dimension and its two probe values.
struct Symbol {
    name: String,
    probes: (i64, i64),
}

/// Whether `(a, b)` (a number in the first and the second import) is
/// `k * d1 * d2 ...` for a set of symbols, the same `k >= 1` in both; the
/// names of that set.
fn monomial(a: i64, b: i64, symbols: &[Symbol]) -> Option<Vec<&str>> {
    for subset in 1u32..(1 << symbols.len()) {
        let chosen: Vec<&Symbol> = symbols
            .iter()
            .enumerate()
            .filter(|(i, _)| subset & (1 << i) != 0)
            .map(|(_, s)| s)
            .collect();
        let (pa, pb) = chosen.iter().fold((1i64, 1i64), |(x, y), s| {
            (x.saturating_mul(s.probes.0), y.saturating_mul(s.probes.1))
        });
        if a % pa == 0 && b % pb == 0 && a / pa == b / pb && a / pa >= 1 {
            return Some(chosen.iter().map(|s| s.name.as_str()).collect());
        }
    }
    None
}

/// An interface shape with the probe-dependent extents as -1 (dynamic).
fn symbolic_shape(shape: &[i64], symbols: &[Symbol]) -> Vec<i64> {
    shape
        .iter()
        .map(|&d| {
            if symbols
                .iter()
                .any(|s| d >= s.probes.0 && d % s.probes.0 == 0)
            {
                -1
            } else {
                d
            }
        })
        .collect()
}

/// The text split into runs of ASCII digits and runs of anything else.
fn tokens(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let bytes = text.as_bytes();
    for i in 1..=bytes.len() {
        if i == bytes.len() || bytes[i].is_ascii_digit() != bytes[i - 1].is_ascii_digit() {
            out.push(&text[start..i]);
            start = i;
        }
    }
    out
}

/// The line of `text` around byte `at`.
fn line_at(text: &str, at: usize) -> &str {
    let start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let end = text[at..].find('\n').map_or(text.len(), |i| at + i);
    &text[start..end]
}

/// Where a line of the imported text comes from: its `loc(...)` (the ONNX
/// node), or the line itself, shortened.
fn origin(line: &str) -> String {
    if let Some(i) = line.rfind("loc(") {
        let rest = &line[i + 4..];
        let end = rest.rfind(')').unwrap_or(rest.len());
        return format!("node {}", &rest[..end]);
    }
    let trimmed = line.trim();
    let short: String = trimmed.chars().take(120).collect();
    format!("'{short}'")
}

fn not_supported(what: &str, line: &str, symbols: &[Symbol]) -> ImportError {
    let names: Vec<&str> = symbols.iter().map(|s| s.name.as_str()).collect();
    ImportError::new(format!(
        "{}: {what}: dynamic dimension {} not supported yet by the ONNX importer here (give a static shape with --input-shape)",
        origin(line),
        names
            .iter()
            .map(|n| format!("'{n}'"))
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

/// Whether the digits token `i` of `toks` is an extent of a shaped type
/// (`tensor<AxBxf32>`, `memref<...>`, `vector<...>`).
fn is_type_extent(toks: &[&str], i: usize) -> bool {
    let before = if i > 0 { toks[i - 1] } else { "" };
    let after = toks.get(i + 1).copied().unwrap_or("");
    if !after.starts_with('x') {
        return false;
    }
    if before.ends_with("tensor<") || before.ends_with("memref<") {
        return true;
    }
    // An extent after another extent: `NxM` (the token before is `x`).
    before == "x" && i >= 2 && {
        let mut j = i - 2;
        loop {
            let t = toks[j];
            if t.ends_with("tensor<") || t.ends_with("memref<") {
                break true;
            }
            if !(t == "x" || t == "?x" || t.chars().all(|c| c.is_ascii_digit())) {
                break false;
            }
            if j == 0 {
                break false;
            }
            j -= 1;
        }
    }
}

/// Merges the two imports' texts into one with symbolic dimensions.
fn merge(a: &str, b: &str, symbols: &[Symbol]) -> Result<String> {
    let (ta, tb) = (tokens(a), tokens(b));
    let mut out = String::with_capacity(a.len());
    let mut offset = 0;
    // The const_shape lines (by their start offset in `out`'s line) whose
    // values were made -1, checked once the whole text is known.
    let mut inferred_shapes: Vec<String> = Vec::new();
    let mut replaced_in_line: HashMap<usize, usize> = HashMap::new();
    let mut i = 0;
    let mut ia = 0usize;
    while i < ta.len() || i < tb.len() {
        let (x, y) = (ta.get(i).copied(), tb.get(i).copied());
        let (Some(x), Some(y)) = (x, y) else {
            let at = offset.min(a.len().saturating_sub(1));
            return Err(not_supported(
                "the imported graph's structure depends on the dimension's value",
                line_at(a, at),
                symbols,
            ));
        };
        if x == y {
            out.push_str(x);
        } else {
            let line = line_at(a, ia);
            let digits = |t: &str| t.bytes().all(|c| c.is_ascii_digit());
            if !digits(x) || !digits(y) {
                return Err(not_supported(
                    "the imported graph's structure depends on the dimension's value",
                    line,
                    symbols,
                ));
            }
            let (Ok(va), Ok(vb)) = (x.parse::<i64>(), y.parse::<i64>()) else {
                return Err(not_supported("a number too large", line, symbols));
            };
            if monomial(va, vb, symbols).is_none() {
                return Err(not_supported(
                    &format!(
                        "an extent ({va} and {vb} at two probes) that is not a multiple of the symbolic dimensions"
                    ),
                    line,
                    symbols,
                ));
            }
            if is_type_extent(&ta, i) {
                out.push('?');
            } else if line.contains("tosa.const_shape")
                && !ta[i - 1].ends_with('-')
                && line.contains("dense<")
            {
                let line_start = a[..ia].rfind('\n').map_or(0, |p| p + 1);
                let count = replaced_in_line.entry(line_start).or_insert(0);
                *count += 1;
                if *count > 1 {
                    return Err(not_supported(
                        "a shape with two extents that depend on symbolic dimensions",
                        line,
                        symbols,
                    ));
                }
                if *count == 1 {
                    inferred_shapes.push(line.to_string());
                }
                out.push_str("-1");
            } else {
                return Err(not_supported(
                    "a value computed from the dimension's extent",
                    line,
                    symbols,
                ));
            }
        }
        ia += x.len();
        offset = ia;
        i += 1;
    }
    check_inferred_shapes(&out, &inferred_shapes, symbols)?;
    Ok(out)
}

/// Every `tosa.const_shape` given a `-1` must be read by `tosa.reshape`s
/// only (where -1 is the inferred extent); any other reader (a slice, a
/// tile, a pad) would take it literally.
fn check_inferred_shapes(text: &str, lines: &[String], symbols: &[Symbol]) -> Result<()> {
    for line in lines {
        let Some(name) = line
            .split_whitespace()
            .next()
            .filter(|n| n.starts_with('%'))
        else {
            return Err(not_supported("a shape without a name", line, symbols));
        };
        for user in text.lines() {
            if user.trim_start().starts_with(name) {
                continue;
            }
            let uses = user.match_indices(name).any(|(p, _)| {
                let next = user[p + name.len()..].chars().next();
                !next.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
            });
            if uses && !user.contains("tosa.reshape") {
                return Err(not_supported(
                    "a shape computed from the dimension read by an op other than a reshape",
                    user,
                    symbols,
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch() -> Vec<Symbol> {
        vec![Symbol {
            name: "batch".into(),
            probes: PROBES[0],
        }]
    }

    #[test]
    fn probe_dependent_extents_become_dynamic() {
        let a = "%2 = tosa.const_shape {values = dense<[1, 1009, 32]> : tensor<3xindex>} : () -> !tosa.shape<3> loc(\"fc1\")\n\
                 %3 = tosa.reshape %arg0, %2 : (tensor<1009x32xf32>, !tosa.shape<3>) -> tensor<1x1009x32xf32> loc(\"fc1\")\n\
                 %4 = tosa.reshape %3, %5 : (tensor<1x1009x32xf32>, !tosa.shape<2>) -> tensor<16144x2xf32> loc(\"r\")\n";
        let b = a
            .replace("1009", "1013")
            .replace("16144", &(16 * 1013).to_string());
        let merged = merge(a, &b, &batch()).unwrap();
        assert!(merged.contains("dense<[1, -1, 32]>"), "{merged}");
        assert!(
            merged.contains("(tensor<?x32xf32>, !tosa.shape<3>) -> tensor<1x?x32xf32>"),
            "{merged}"
        );
        assert!(merged.contains("-> tensor<?x2xf32>"), "{merged}");
    }

    #[test]
    fn values_computed_from_the_dimension_are_refused_with_the_node() {
        let a = "%1 = \"tosa.const\"() <{values = dense<[1009, 4]> : tensor<2xi64>}> : () -> tensor<2xi64> loc(\"shape_of\")\n";
        let b = a.replace("1009", "1013");
        let error = merge(a, &b, &batch()).unwrap_err().to_string();
        assert!(error.contains("node \"shape_of\""), "{error}");
        assert!(
            error.contains("dynamic dimension 'batch' not supported yet"),
            "{error}"
        );
        // Not a multiple of the dimension (batch + 1).
        let a = "%1 = tosa.reshape %0, %s : (tensor<1010xf32>, !tosa.shape<1>) -> tensor<1010xf32> loc(\"pad\")\n";
        let b = a.replace("1010", "1014");
        let error = merge(a, &b, &batch()).unwrap_err().to_string();
        assert!(error.contains("not a multiple"), "{error}");
        // A computed shape read by a slice.
        let a = "%2 = tosa.const_shape {values = dense<[1009, 4]> : tensor<2xindex>} : () -> !tosa.shape<2> loc(\"s\")\n\
                 %3 = tosa.slice %x, %1, %2 : (tensor<2000x4xf32>, !tosa.shape<2>, !tosa.shape<2>) -> tensor<1009x4xf32> loc(\"slice\")\n";
        let b = a.replace("1009", "1013");
        let error = merge(a, &b, &batch()).unwrap_err().to_string();
        assert!(error.contains("other than a reshape"), "{error}");
    }

    #[test]
    fn tokens_split_digits_from_the_rest() {
        assert_eq!(
            tokens("tensor<12x3xf32>"),
            vec!["tensor<", "12", "x", "3", "xf", "32", ">"]
        );
    }
}
