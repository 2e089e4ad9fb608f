//! A model's header directives (`// TOLERANCE:`, `// INPUT-RANGE:`,
//! `// TARGET:`) and the tolerance rule they override.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, anyhow, ensure};
use tcc_runtime::{DType, HostTensor, TensorDesc};

use crate::inputs::{fnv1a, random_tensor};
use crate::{models_dir, to_f64};

/// `|got - want| <= abs + rel * |want|`, element by element.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Tolerance {
    pub abs: f64,
    pub rel: f64,
}

impl Tolerance {
    pub fn allows(&self, got: f64, want: f64) -> bool {
        if got.is_nan() || want.is_nan() {
            return got.is_nan() && want.is_nan();
        }
        if got == want {
            // Also equal infinities. An exact tolerance (`0 0`) tells -0
            // from +0, as a bit-exact result must.
            return self.abs > 0.0
                || self.rel > 0.0
                || got.is_sign_negative() == want.is_sign_negative();
        }
        if got.is_infinite() || want.is_infinite() {
            return false;
        }
        (got - want).abs() <= self.abs + self.rel * want.abs()
    }

    /// How far beyond the tolerance `got` is (negative: within it).
    pub(crate) fn excess(&self, got: f64, want: f64) -> f64 {
        if self.allows(got, want) {
            return -1.0;
        }
        if got.is_nan() || want.is_nan() || got.is_infinite() || want.is_infinite() {
            return f64::INFINITY;
        }
        (got - want).abs() - (self.abs + self.rel * want.abs())
    }
}

/// A model file with its header directives.
#[derive(Clone, Debug)]
pub struct ModelSpec {
    /// File stem: `mlp` for `test/models/mlp.mlir`.
    pub name: String,
    pub path: PathBuf,
    pub tolerance: Tolerance,
    /// Input index → inclusive value range (`// INPUT-RANGE: 1 0 7`).
    pub input_ranges: BTreeMap<usize, (f64, f64)>,
    /// `// TARGET: nvidia`: compile for this kernel-tuning target only (the
    /// suite runs every other model for every target).
    pub target: Option<String>,
    /// `// ACCUMULATION: <terms> <scale>`: the longest sum in the model and
    /// the magnitude of its partial sums, which justify an absolute
    /// tolerance above [`RULE_ABS`] (see [`ModelSpec::tolerance_rule`]).
    pub accumulation: Option<(f64, f64)>,
    /// `// TOLERANCE-EXCEPTION: <reason>`: a tolerance outside the rule,
    /// with the reason.
    pub tolerance_exception: Option<String>,
}

/// The suite's tolerance rule (test/README.md, "Tolerances"): without an
/// accumulation, at most `RULE_ABS` absolute and `RULE_REL` relative
/// (exactly rounded f32 arithmetic, a few ulp of transcendental ops over
/// chains of them).
pub const RULE_ABS: f64 = 1e-5;
pub const RULE_REL: f64 = 1e-4;

/// An n-term sum of partial sums up to `scale`, added in another order
/// (or with fused multiply-adds), differs by about `sqrt(n) * eps * scale`;
/// the rule allows twice that.
pub fn accumulation_bound(terms: f64, scale: f64) -> f64 {
    2.0 * terms.sqrt() * f32::EPSILON as f64 * scale
}

impl ModelSpec {
    /// `test/models/<name>.mlir`.
    pub fn by_name(name: &str) -> Result<Self> {
        Self::load(&models_dir().join(format!("{name}.mlir")))
    }

    /// Reads the header directives: `// TOLERANCE: <abs> <rel>` (required,
    /// once) and any number of `// INPUT-RANGE: <input index> <lo> <hi>`.
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .ok_or_else(|| anyhow!("{}: no file name", path.display()))?
            .to_string();
        let mut tolerance = None;
        let mut input_ranges = BTreeMap::new();
        let mut target = None;
        let mut accumulation = None;
        let mut tolerance_exception = None;
        for (number, line) in text.lines().enumerate() {
            let Some(comment) = line.trim_start().strip_prefix("//") else {
                continue;
            };
            let comment = comment.trim();
            let at = || format!("{}:{}", path.display(), number + 1);
            if let Some(rest) = comment.strip_prefix("TOLERANCE:") {
                let values = numbers(rest).with_context(at)?;
                ensure!(
                    values.len() == 2,
                    "{}: expected `// TOLERANCE: <abs> <rel>`",
                    at()
                );
                ensure!(
                    values.iter().all(|v| *v >= 0.0),
                    "{}: tolerances must be >= 0",
                    at()
                );
                ensure!(tolerance.is_none(), "{}: a second TOLERANCE line", at());
                tolerance = Some(Tolerance {
                    abs: values[0],
                    rel: values[1],
                });
            } else if let Some(rest) = comment.strip_prefix("INPUT-RANGE:") {
                let values = numbers(rest).with_context(at)?;
                ensure!(
                    values.len() == 3
                        && values[0] >= 0.0
                        && values[0].fract() == 0.0
                        && values[1] <= values[2],
                    "{}: expected `// INPUT-RANGE: <input index> <lo> <hi>` with lo <= hi",
                    at()
                );
                input_ranges.insert(values[0] as usize, (values[1], values[2]));
            } else if let Some(rest) = comment.strip_prefix("ACCUMULATION:") {
                let values = numbers(rest).with_context(at)?;
                ensure!(
                    values.len() == 2 && values[0] >= 1.0 && values[1] > 0.0,
                    "{}: expected `// ACCUMULATION: <terms> <scale of the partial sums>`",
                    at()
                );
                ensure!(
                    accumulation.is_none(),
                    "{}: a second ACCUMULATION line",
                    at()
                );
                accumulation = Some((values[0], values[1]));
            } else if let Some(rest) = comment.strip_prefix("TOLERANCE-EXCEPTION:") {
                ensure!(
                    !rest.trim().is_empty(),
                    "{}: a TOLERANCE-EXCEPTION needs its reason",
                    at()
                );
                tolerance_exception = Some(rest.trim().to_string());
            } else if let Some(rest) = comment.strip_prefix("TARGET:") {
                let name = rest.trim();
                ensure!(
                    !name.is_empty() && !name.contains(char::is_whitespace),
                    "{}: expected `// TARGET: <generic|nvidia|pocl-cpu>`",
                    at()
                );
                ensure!(target.is_none(), "{}: a second TARGET line", at());
                target = Some(name.to_string());
            }
        }
        let tolerance = tolerance.ok_or_else(|| {
            anyhow!(
                "{}: no `// TOLERANCE: <abs> <rel>` header line",
                path.display()
            )
        })?;
        Ok(ModelSpec {
            name,
            path: path.to_path_buf(),
            tolerance,
            input_ranges,
            target,
            accumulation,
            tolerance_exception,
        })
    }

    /// `Err` when the model's TOLERANCE exceeds the suite's rule without a
    /// stated reason: the relative term above [`RULE_REL`], or the absolute
    /// term above [`RULE_ABS`] and above the [`accumulation_bound`] of its
    /// `ACCUMULATION` header. A `TOLERANCE-EXCEPTION` header states the
    /// reason for anything else.
    pub fn tolerance_rule(&self) -> Result<()> {
        if self.tolerance_exception.is_some() {
            return Ok(());
        }
        let Tolerance { abs, rel } = self.tolerance;
        let abs_limit = match self.accumulation {
            Some((terms, scale)) => RULE_ABS.max(accumulation_bound(terms, scale)),
            None => RULE_ABS,
        };
        ensure!(
            rel <= RULE_REL,
            "{}: TOLERANCE rel {rel} exceeds the rule's {RULE_REL} (state the reason in a `// TOLERANCE-EXCEPTION:` line)",
            self.path.display()
        );
        ensure!(
            abs <= abs_limit,
            "{}: TOLERANCE abs {abs} exceeds the rule's {abs_limit:.2e} ({}; add or correct `// ACCUMULATION: <terms> <scale>`, or state the reason in `// TOLERANCE-EXCEPTION:`)",
            self.path.display(),
            match self.accumulation {
                Some((n, s)) => format!("2 sqrt({n}) eps {s}"),
                None => "no ACCUMULATION line".into(),
            }
        );
        Ok(())
    }

    /// With an `ACCUMULATION` header, the reference results (themselves
    /// partial sums or derived from them) must lie within its scale, so a
    /// header cannot claim a scale the model does not have.
    pub fn check_scale(&self, outputs: &[HostTensor]) -> Result<()> {
        let Some((_, scale)) = self.accumulation else {
            return Ok(());
        };
        let largest = outputs
            .iter()
            .filter(|t| matches!(t.dtype, DType::F32 | DType::F16))
            .flat_map(to_f64)
            .filter(|v| v.is_finite())
            .fold(0.0f64, |m, v| m.max(v.abs()));
        ensure!(
            largest <= scale,
            "{}: the reference outputs reach {largest}, above the ACCUMULATION scale {scale}",
            self.path.display()
        );
        Ok(())
    }

    /// Deterministic inputs for `function`: f32 uniform in [-1, 1] (or the
    /// INPUT-RANGE), integers uniform in the INPUT-RANGE (default [-8, 8]),
    /// booleans 0/1. The same model, function and shapes always give the
    /// same bytes.
    pub fn inputs(&self, function: &str, descs: &[TensorDesc]) -> Result<Vec<HostTensor>> {
        descs
            .iter()
            .enumerate()
            .map(|(index, desc)| {
                let seed = fnv1a(format!("{}/{}/{}", self.name, function, index).as_bytes());
                random_tensor(desc, self.input_ranges.get(&index).copied(), seed).with_context(
                    || format!("input {index} ({}) of @{function}", desc.type_string()),
                )
            })
            .collect()
    }
}

pub(crate) fn numbers(text: &str) -> Result<Vec<f64>> {
    text.split_whitespace()
        .map(|word| {
            word.parse::<f64>()
                .map_err(|_| anyhow!("`{word}` is not a number"))
        })
        .collect()
}
