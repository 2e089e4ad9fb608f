//! Comparing outputs with a tolerance: every element as f64, the number out
//! of tolerance, and the worst one with its multi-index.

use std::fmt::Write as _;

use tcc_runtime::HostTensor;

use crate::Tolerance;

/// Every element as f64 (integers and booleans exactly).
pub fn to_f64(tensor: &HostTensor) -> Vec<f64> {
    tensor
        .bytes
        .chunks_exact(tensor.dtype.size())
        .map(|c| tensor.dtype.value_f64(c))
        .collect()
}

fn multi_index(flat: usize, shape: &[usize]) -> String {
    let mut rest = flat;
    let mut index: Vec<String> = (shape.iter().rev())
        .map(|&d| {
            if d == 0 {
                return 0;
            }
            let i = rest % d;
            rest /= d;
            i
        })
        .map(|i| i.to_string())
        .collect();
    index.reverse();
    format!("[{}]", index.join(", "))
}

/// Compares one output with the expected one. `Err` holds a description:
/// type mismatch, or the number of elements out of tolerance with the worst
/// one (index, got, want) and the largest absolute error.
pub fn compare(
    got: &HostTensor,
    want: &HostTensor,
    tolerance: Tolerance,
) -> std::result::Result<(), String> {
    if got.dtype != want.dtype || got.shape != want.shape {
        return Err(format!(
            "type mismatch: got {}, want {}",
            got.type_string(),
            want.type_string()
        ));
    }
    let (g, w) = (to_f64(got), to_f64(want));
    if g.len() != w.len() {
        return Err(format!("got {} elements, want {}", g.len(), w.len()));
    }
    let mut bad = 0usize;
    let mut worst: Option<(usize, f64)> = None;
    let mut max_abs = 0f64;
    for (i, (&a, &b)) in g.iter().zip(&w).enumerate() {
        if !(a.is_nan() && b.is_nan()) {
            let diff = (a - b).abs();
            if diff.is_nan() || diff > max_abs {
                max_abs = if diff.is_nan() { f64::INFINITY } else { diff };
            }
        }
        let excess = tolerance.excess(a, b);
        if excess >= 0.0 {
            bad += 1;
            if worst.is_none_or(|(_, e)| excess > e) {
                worst = Some((i, excess));
            }
        }
    }
    let Some((i, _)) = worst else { return Ok(()) };
    let mut message = format!(
        "{bad} of {} elements out of tolerance (abs {}, rel {}); worst at {}: got {}, want {} (|diff| {:e}); max |diff| {:e}",
        g.len(),
        tolerance.abs,
        tolerance.rel,
        multi_index(i, &got.shape),
        g[i],
        w[i],
        (g[i] - w[i]).abs(),
        max_abs
    );
    // A few more, to show a pattern (a whole row off, every other element...).
    let examples: Vec<String> = g
        .iter()
        .zip(&w)
        .enumerate()
        .filter(|(_, (a, b))| !tolerance.allows(**a, **b))
        .take(6)
        .map(|(i, (a, b))| format!("{}: got {a} want {b}", multi_index(i, &got.shape)))
        .collect();
    let _ = write!(message, "; first: {}", examples.join(", "));
    Err(message)
}

/// Compares a call's outputs of `@function` with the reference's, pushing
/// a line per difference onto `failures`: a different number of outputs,
/// or each output out of `tolerance` (see [`compare`]).
pub fn compare_outputs(
    function: &str,
    got: &[HostTensor],
    want: &[HostTensor],
    tolerance: Tolerance,
    failures: &mut Vec<String>,
) {
    if got.len() != want.len() {
        failures.push(format!(
            "@{function}: {} outputs, the reference has {}",
            got.len(),
            want.len()
        ));
        return;
    }
    for (index, (g, w)) in got.iter().zip(want).enumerate() {
        if let Err(message) = compare(g, w, tolerance) {
            failures.push(format!(
                "@{function} output {index} ({}): {message}",
                w.type_string()
            ));
        }
    }
}
