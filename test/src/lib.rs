//! Shared pieces of tcc's end-to-end suite (see test/README.md):
//!
//! - reading a model's header directives (`// TOLERANCE: <abs> <rel>`,
//!   `// INPUT-RANGE: <index> <lo> <hi>`, `// TARGET: <target>`),
//! - deterministic pseudo-random inputs from a function's input descriptions,
//! - comparing outputs with a tolerance and describing the worst element,
//! - the expected-failures list (test/expected-failures.txt).
//!
//! Depends on tcc-runtime only (no LLVM), so that the device bundle's
//! `tcc-compare` and `tcc-e2e-inputs` binaries can be built from it.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, anyhow, bail, ensure};
use tcc_runtime::{DType, HostTensor, TensorDesc};

/// `test/models`.
pub fn models_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("models")
}

/// `test/expected-failures.txt`.
pub fn expected_failures_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("expected-failures.txt")
}

/// Every `test/models/*.mlir`, sorted by name.
pub fn list_models() -> Result<Vec<PathBuf>> {
    let dir = models_dir();
    let mut models: Vec<PathBuf> = std::fs::read_dir(&dir)
        .with_context(|| format!("cannot list {}", dir.display()))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|e| e == "mlir"))
        .collect();
    models.sort();
    Ok(models)
}

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
    fn excess(&self, got: f64, want: f64) -> f64 {
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

fn numbers(text: &str) -> Result<Vec<f64>> {
    text.split_whitespace()
        .map(|word| {
            word.parse::<f64>()
                .map_err(|_| anyhow!("`{word}` is not a number"))
        })
        .collect()
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |hash, &b| {
        (hash ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// splitmix64: small, fast, and the same everywhere.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1) with 24 bits, so every value is an exact f32.
    fn unit(&mut self) -> f64 {
        (self.next() >> 40) as f64 / (1u64 << 24) as f64
    }

    /// Uniform integer in [lo, hi].
    fn int(&mut self, lo: i64, hi: i64) -> i64 {
        let span = (hi - lo + 1) as u64;
        lo + (self.next() % span) as i64
    }
}

fn random_tensor(desc: &TensorDesc, range: Option<(f64, f64)>, seed: u64) -> Result<HostTensor> {
    let mut rng = Rng(seed);
    let count: usize = desc.shape.iter().product();
    let mut bytes = Vec::with_capacity(count * desc.dtype.size());
    let int_range = |default: (i64, i64)| -> Result<(i64, i64)> {
        match range {
            None => Ok(default),
            Some((lo, hi)) if lo.fract() == 0.0 && hi.fract() == 0.0 => Ok((lo as i64, hi as i64)),
            Some(_) => bail!("INPUT-RANGE of an integer input must be integers"),
        }
    };
    match desc.dtype {
        DType::F32 | DType::F16 => {
            let (lo, hi) = range.unwrap_or((-1.0, 1.0));
            for _ in 0..count {
                let value = (lo + (hi - lo) * rng.unit()) as f32;
                if desc.dtype == DType::F32 {
                    bytes.extend_from_slice(&value.to_le_bytes());
                } else {
                    bytes.extend_from_slice(&f32_to_f16(value).to_le_bytes());
                }
            }
        }
        DType::I32 => {
            let (lo, hi) = int_range((-8, 8))?;
            for _ in 0..count {
                bytes.extend_from_slice(&(rng.int(lo, hi) as i32).to_le_bytes());
            }
        }
        DType::I64 => {
            let (lo, hi) = int_range((-8, 8))?;
            for _ in 0..count {
                bytes.extend_from_slice(&rng.int(lo, hi).to_le_bytes());
            }
        }
        DType::I8 => {
            let (lo, hi) = int_range((-8, 8))?;
            for _ in 0..count {
                bytes.push(rng.int(lo, hi) as i8 as u8);
            }
        }
        DType::Bool => {
            let (lo, hi) = int_range((0, 1))?;
            ensure!(lo >= 0 && hi <= 1, "an i1 input's range must lie in [0, 1]");
            for _ in 0..count {
                bytes.push(rng.int(lo, hi) as u8);
            }
        }
    }
    Ok(HostTensor::new(desc.dtype, desc.shape.clone(), bytes)?)
}

fn f32_to_f16(value: f32) -> u16 {
    // Round to nearest even, enough for test inputs in a small range.
    let bits = value.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let exponent = ((bits >> 23) & 0xff) as i32 - 127 + 15;
    let mantissa = bits & 0x7f_ffff;
    if exponent <= 0 {
        if exponent < -10 {
            return sign;
        }
        let m = (mantissa | 0x80_0000) >> (1 - exponent);
        let half = (m + 0xfff + ((m >> 13) & 1)) >> 13;
        return sign | half as u16;
    }
    if exponent >= 31 {
        return sign | 0x7c00;
    }
    let rounded = ((exponent as u32) << 10 | mantissa >> 13)
        + (((mantissa & 0x1fff) + ((mantissa >> 13) & 1)) > 0x1000) as u32;
    sign | rounded as u16
}

fn f16_to_f32(bits: u16) -> f32 {
    let sign = ((bits & 0x8000) as u32) << 16;
    let exponent = ((bits >> 10) & 0x1f) as u32;
    let mantissa = (bits & 0x3ff) as u32;
    let value = match exponent {
        0 => {
            return f32::from_bits(sign)
                + (if sign != 0 { -1.0 } else { 1.0 }) * mantissa as f32 * 2f32.powi(-24);
        }
        31 => sign | 0x7f80_0000 | (mantissa << 13),
        e => sign | ((e + 127 - 15) << 23) | (mantissa << 13),
    };
    f32::from_bits(value)
}

/// Every element as f64 (integers and booleans exactly).
pub fn to_f64(tensor: &HostTensor) -> Vec<f64> {
    let b = &tensor.bytes;
    match tensor.dtype {
        DType::F32 => b
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()) as f64)
            .collect(),
        DType::F16 => b
            .chunks_exact(2)
            .map(|c| f16_to_f32(u16::from_le_bytes(c.try_into().unwrap())) as f64)
            .collect(),
        DType::I32 => b
            .chunks_exact(4)
            .map(|c| i32::from_le_bytes(c.try_into().unwrap()) as f64)
            .collect(),
        DType::I64 => b
            .chunks_exact(8)
            .map(|c| i64::from_le_bytes(c.try_into().unwrap()) as f64)
            .collect(),
        DType::I8 => b.iter().map(|&x| x as i8 as f64).collect(),
        DType::Bool => b.iter().map(|&x| x as f64).collect(),
    }
}

fn multi_index(mut flat: usize, shape: &[usize]) -> String {
    let mut index = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        if shape[d] > 0 {
            index[d] = flat % shape[d];
            flat /= shape[d];
        }
    }
    format!(
        "[{}]",
        index
            .iter()
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    )
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

/// Independently computed outputs of a model (test/models/expected/<model>/,
/// written by test/models/expected/gen.py with numpy): for each function,
/// the inputs they were computed from (`<function>.inputN.npy`, which must
/// be the suite's inputs) and the outputs (`<function>.outputN.npy`).
pub struct Fixtures {
    dir: PathBuf,
}

impl Fixtures {
    /// `test/models/expected`.
    pub fn root() -> PathBuf {
        models_dir().join("expected")
    }

    /// The model's fixtures, if it has a directory of them.
    pub fn load(model: &str) -> Result<Option<Fixtures>> {
        let dir = Self::root().join(model);
        Ok(dir.is_dir().then_some(Fixtures { dir }))
    }

    fn read(&self, function: &str, kind: &str, index: usize) -> Result<HostTensor> {
        let path = self.dir.join(format!("{function}.{kind}{index}.npy"));
        tcc_runtime::npy::read_npy(&path).with_context(|| {
            format!(
                "{}: cannot read the expected {kind} (run test/models/expected/gen.py)",
                path.display()
            )
        })
    }

    /// Fails unless the stored inputs are the suite's `inputs` (else the
    /// stored outputs belong to other inputs: the fixtures are stale).
    pub fn check_inputs(&self, function: &str, inputs: &[HostTensor]) -> Result<()> {
        for (index, input) in inputs.iter().enumerate() {
            let stored = self.read(function, "input", index)?;
            ensure!(
                &stored == input,
                "{}: the stored input {index} of @{function} is not the suite's: regenerate with test/models/expected/gen.py",
                self.dir.display()
            );
        }
        ensure!(
            !self
                .dir
                .join(format!("{function}.input{}.npy", inputs.len()))
                .exists(),
            "{}: @{function} has more stored inputs than the function",
            self.dir.display()
        );
        Ok(())
    }

    /// The `count` expected outputs of `function` (a missing one is an
    /// error, not a skip).
    pub fn outputs(&self, function: &str, count: usize) -> Result<Vec<HostTensor>> {
        ensure!(
            !self
                .dir
                .join(format!("{function}.output{count}.npy"))
                .exists(),
            "{}: @{function} has more stored outputs than the function",
            self.dir.display()
        );
        (0..count)
            .map(|index| self.read(function, "output", index))
            .collect()
    }

    pub fn describe(&self, function: &str, index: usize) -> String {
        self.dir
            .join(format!("{function}.output{index}.npy"))
            .display()
            .to_string()
    }
}

/// test/expected-failures.txt: `model-name: reason` lines; `#` comments
/// and blank lines are ignored.
pub fn expected_failures() -> Result<BTreeMap<String, String>> {
    let path = expected_failures_path();
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(BTreeMap::new()),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    parse_expected_failures(&text).with_context(|| path.display().to_string())
}

pub fn parse_expected_failures(text: &str) -> Result<BTreeMap<String, String>> {
    let mut map = BTreeMap::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (name, reason) = line
            .split_once(':')
            .ok_or_else(|| anyhow!("line {}: expected `model-name: reason`", number + 1))?;
        let (name, reason) = (name.trim(), reason.trim());
        ensure!(
            !name.is_empty() && !reason.is_empty(),
            "line {}: expected `model-name: reason`",
            number + 1
        );
        ensure!(
            map.insert(name.to_string(), reason.to_string()).is_none(),
            "line {}: {name} is listed twice",
            number + 1
        );
    }
    Ok(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tolerance_is_abs_plus_rel() {
        let t = Tolerance {
            abs: 1e-3,
            rel: 1e-2,
        };
        assert!(t.allows(100.9, 100.0));
        assert!(!t.allows(101.1, 100.0));
        assert!(t.allows(f64::NAN, f64::NAN));
        assert!(!t.allows(f64::NAN, 0.0));
        assert!(t.allows(f64::INFINITY, f64::INFINITY));
        assert!(!t.allows(f64::INFINITY, f64::NEG_INFINITY));
        let exact = Tolerance { abs: 0.0, rel: 0.0 };
        assert!(exact.allows(0.5, 0.5) && !exact.allows(0.5, 0.5000001));
        assert!(exact.allows(-0.0, -0.0) && !exact.allows(-0.0, 0.0) && !exact.allows(0.0, -0.0));
        assert!(t.allows(-0.0, 0.0));
    }

    #[test]
    fn compare_reports_the_worst_element() {
        let want = HostTensor::from_f32(vec![2, 3], &[0., 1., 2., 3., 4., 5.]).unwrap();
        let got = HostTensor::from_f32(vec![2, 3], &[0., 1., 2.5, 3., 4., 7.]).unwrap();
        let message = compare(&got, &want, Tolerance { abs: 0.1, rel: 0.0 }).unwrap_err();
        assert!(message.starts_with("2 of 6 elements"), "{message}");
        assert!(
            message.contains("worst at [1, 2]: got 7, want 5"),
            "{message}"
        );
        assert!(compare(&want, &want, Tolerance { abs: 0.0, rel: 0.0 }).is_ok());
        let other = HostTensor::from_f32(vec![3, 2], &[0.; 6]).unwrap();
        assert!(
            compare(&other, &want, Tolerance { abs: 1.0, rel: 0.0 })
                .unwrap_err()
                .contains("type mismatch")
        );
    }

    #[test]
    fn inputs_are_deterministic_and_in_range() {
        let spec = ModelSpec {
            name: "m".into(),
            path: "m.mlir".into(),
            tolerance: Tolerance { abs: 0.0, rel: 0.0 },
            input_ranges: [(1, (0.0, 7.0))].into_iter().collect(),
            target: None,
            accumulation: None,
            tolerance_exception: None,
        };
        let descs = vec![
            TensorDesc {
                name: String::new(),
                dtype: DType::F32,
                shape: vec![4, 8],
            },
            TensorDesc {
                name: String::new(),
                dtype: DType::I32,
                shape: vec![100],
            },
        ];
        let a = spec.inputs("f", &descs).unwrap();
        assert_eq!(a, spec.inputs("f", &descs).unwrap());
        assert_ne!(a[0], spec.inputs("g", &descs).unwrap()[0]);
        assert!(to_f64(&a[0]).iter().all(|v| (-1.0..=1.0).contains(v)));
        let ints = to_f64(&a[1]);
        assert!(ints.iter().all(|v| (0.0..=7.0).contains(v)));
        assert!(ints.contains(&0.0) && ints.contains(&7.0));
    }

    #[test]
    fn f16_round_trip() {
        for v in [0.0f32, 1.0, -0.5, 0.333, 65504.0, 1e-5] {
            let back = f16_to_f32(f32_to_f16(v));
            assert!((back - v).abs() <= v.abs() * 1e-3 + 1e-7, "{v} -> {back}");
        }
    }

    #[test]
    fn expected_failures_format() {
        let map =
            parse_expected_failures("# comment\n\nfoo: a reason: with colon\n bar : x\n").unwrap();
        assert_eq!(
            map.get("foo").map(String::as_str),
            Some("a reason: with colon")
        );
        assert_eq!(map.get("bar").map(String::as_str), Some("x"));
        assert!(parse_expected_failures("foo\n").is_err());
        assert!(parse_expected_failures("foo: a\nfoo: b\n").is_err());
    }

    #[test]
    fn tolerance_rule() {
        let spec = |abs, rel, accumulation, exception: Option<&str>| ModelSpec {
            name: "m".into(),
            path: "m.mlir".into(),
            tolerance: Tolerance { abs, rel },
            input_ranges: BTreeMap::new(),
            target: None,
            accumulation,
            tolerance_exception: exception.map(str::to_string),
        };
        assert!(spec(1e-5, 1e-4, None, None).tolerance_rule().is_ok());
        assert!(spec(2e-5, 1e-5, None, None).tolerance_rule().is_err());
        assert!(spec(1e-5, 2e-4, None, None).tolerance_rule().is_err());
        // 2 * sqrt(2048) * 2^-23 * 50 = 5.4e-4
        assert!(
            spec(5e-4, 1e-5, Some((2048.0, 50.0)), None)
                .tolerance_rule()
                .is_ok()
        );
        assert!(
            spec(6e-4, 1e-5, Some((2048.0, 50.0)), None)
                .tolerance_rule()
                .is_err()
        );
        assert!(spec(1e-3, 1e-3, None, Some("why")).tolerance_rule().is_ok());
        let s = spec(5e-4, 1e-5, Some((2048.0, 50.0)), None);
        let small = HostTensor::from_f32(vec![2], &[-49.0, 3.0]).unwrap();
        let large = HostTensor::from_f32(vec![2], &[-51.0, 3.0]).unwrap();
        assert!(s.check_scale(&[small]).is_ok());
        assert!(s.check_scale(&[large]).is_err());
    }

    #[test]
    fn every_model_header_parses() {
        for path in list_models().unwrap() {
            ModelSpec::load(&path).unwrap();
        }
    }
}
