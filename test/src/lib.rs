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

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, anyhow, ensure};

mod compare;
mod fixtures;
mod inputs;
mod spec;

pub use compare::{compare, compare_outputs, to_f64};
pub use fixtures::Fixtures;
pub use spec::{ModelSpec, RULE_ABS, RULE_REL, Tolerance, accumulation_bound};

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
    use tcc_runtime::{DType, HostTensor, TensorDesc};

    use super::inputs::*;
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
                dims: vec![],
            },
            TensorDesc {
                name: String::new(),
                dtype: DType::I32,
                shape: vec![100],
                dims: vec![],
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
