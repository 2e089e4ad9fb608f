//! The activation ranges `tcc-quantize-int8` quantizes with: a `tcc
//! profile` file read and checked, and each tensor's symmetric clipping
//! bound derived from its recorded range (`max`: the largest magnitude) or
//! its histogram (`percentile`: the smallest magnitude that holds the
//! given share of the values), or the reason it stays f32.
//!
//! A profile that cannot be read, is not a `tcc-profile` file or names no
//! tensor at all is an error; a tensor whose range is zero or not finite,
//! or that held NaNs or infinities, is quantized by nobody: the ops that
//! read it stay f32 (a stated per-tensor fallback, never NaNs).

use std::collections::HashMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// The calibration profile `tcc profile` writes.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Profile {
    /// Always `tcc-profile`.
    pub format: String,
    pub version: u32,
    /// The model's file name.
    pub model: String,
    /// How many samples were run.
    pub samples: usize,
    /// Every float tensor the model computes, in graph order, then the
    /// graph's float inputs.
    pub tensors: Vec<TensorRange>,
    /// The samples' directory (absent in profiles from before it was
    /// recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs: Option<String>,
}

/// What one tensor held over all samples.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct TensorRange {
    pub name: String,
    pub shape: Vec<i64>,
    /// The smallest and largest finite values (0 and 0 when there were none).
    pub min: f32,
    pub max: f32,
    /// NaNs and infinities seen.
    pub nonfinite: u64,
    /// Counts of the finite values in equal bins from `min` to `max` (all
    /// in the first bin when `min == max`).
    pub histogram: Vec<u64>,
}

/// The profile's `format`.
pub const FORMAT: &str = "tcc-profile";
/// The profile's `version`.
pub const VERSION: u32 = 1;

/// How an activation's clipping bound is chosen.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Calibration {
    /// The largest magnitude seen (no clipping).
    MaxAbs,
    /// The smallest magnitude below which this percentage of the values
    /// lay (from the histogram): outliers beyond it saturate.
    Percentile(f64),
}

impl Calibration {
    /// `max` or `percentile` (with the percentage of the `percentile`
    /// option).
    pub fn parse(method: &str, percentile: f64) -> Result<Self, String> {
        match method {
            "max" => Ok(Self::MaxAbs),
            "percentile" if percentile > 0.0 && percentile <= 100.0 => {
                Ok(Self::Percentile(percentile))
            }
            "percentile" => Err(format!("percentile must lie in (0, 100], not {percentile}")),
            _ => Err(format!(
                "calibration must be max or percentile, not '{method}'"
            )),
        }
    }
}

/// The tensors of a profile by name, with the calibration to apply.
#[derive(Debug)]
pub struct Ranges {
    pub model: String,
    tensors: HashMap<String, TensorRange>,
    calibration: Calibration,
}

impl Ranges {
    /// Reads and checks a profile file.
    pub fn load(path: &Path, calibration: Calibration) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read the profile {}: {e}", path.display()))?;
        Self::parse(&text, calibration).map_err(|e| format!("profile {}: {e}", path.display()))
    }

    /// Checks a profile's text (see [`Ranges::load`]).
    pub fn parse(text: &str, calibration: Calibration) -> Result<Self, String> {
        let profile: Profile = serde_json::from_str(text)
            .map_err(|e| format!("not a tcc profile (tcc profile writes one): {e}"))?;
        if profile.format != FORMAT || profile.version != VERSION {
            return Err(format!(
                "format {} version {}, expected {FORMAT} version {VERSION}",
                profile.format, profile.version
            ));
        }
        if profile.tensors.is_empty() || profile.samples == 0 {
            return Err("the profile is empty (no tensors or no samples)".into());
        }
        Ok(Self {
            model: profile.model,
            tensors: profile
                .tensors
                .into_iter()
                .map(|t| (t.name.clone(), t))
                .collect(),
            calibration,
        })
    }

    pub fn get(&self, name: &str) -> Option<&TensorRange> {
        self.tensors.get(name)
    }

    /// The tensors' names.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tensors.keys().map(String::as_str)
    }

    pub fn len(&self) -> usize {
        self.tensors.len()
    }

    pub fn is_empty(&self) -> bool {
        self.tensors.is_empty()
    }

    /// The symmetric bound of a tensor's values (positive and finite), or
    /// why the tensor stays f32.
    pub fn bound(&self, range: &TensorRange) -> Result<f32, String> {
        if range.nonfinite > 0 {
            return Err(format!("held {} NaN or infinite values", range.nonfinite));
        }
        if !range.min.is_finite() || !range.max.is_finite() {
            return Err(format!(
                "has the range [{}, {}], which is not finite",
                range.min, range.max
            ));
        }
        let max_abs = range.min.abs().max(range.max.abs());
        if max_abs == 0.0 || range.min == range.max {
            return Err(format!("has a zero range ({} to {})", range.min, range.max));
        }
        let bound = match self.calibration {
            Calibration::MaxAbs => max_abs,
            Calibration::Percentile(p) => percentile_bound(range, p).min(max_abs),
        };
        if !bound.is_finite() || bound <= f32::MIN_POSITIVE {
            return Err(format!("has the calibrated bound {bound}, no usable scale"));
        }
        Ok(bound)
    }
}

/// The smallest magnitude `a` such that at least `percent` % of the
/// histogram's values lie in `[-a, a]`, taking each bin at its farthest
/// edge from zero (so the bound errs on the side of less clipping).
fn percentile_bound(range: &TensorRange, percent: f64) -> f32 {
    let bins = range.histogram.len();
    let total: u64 = range.histogram.iter().sum();
    if bins == 0 || total == 0 {
        return range.min.abs().max(range.max.abs());
    }
    let width = (range.max as f64 - range.min as f64) / bins as f64;
    let mut by_magnitude: Vec<(f64, u64)> = range
        .histogram
        .iter()
        .enumerate()
        .map(|(i, &count)| {
            let low = range.min as f64 + width * i as f64;
            let high = low + width;
            (low.abs().max(high.abs()), count)
        })
        .collect();
    by_magnitude.sort_by(|a, b| a.0.total_cmp(&b.0));
    let wanted = (total as f64 * percent / 100.0).ceil() as u64;
    let mut seen = 0u64;
    for (magnitude, count) in by_magnitude {
        seen += count;
        if seen >= wanted {
            return magnitude as f32;
        }
    }
    range.min.abs().max(range.max.abs())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(min: f32, max: f32, histogram: Vec<u64>) -> TensorRange {
        TensorRange {
            name: "t".into(),
            shape: vec![1],
            min,
            max,
            nonfinite: 0,
            histogram,
        }
    }

    fn ranges(calibration: Calibration) -> Ranges {
        Ranges {
            model: String::new(),
            tensors: HashMap::new(),
            calibration,
        }
    }

    #[test]
    fn max_takes_the_largest_magnitude() {
        let r = range(-3.0, 2.0, vec![1, 1]);
        assert_eq!(ranges(Calibration::MaxAbs).bound(&r), Ok(3.0));
    }

    #[test]
    fn percentile_clips_rare_outliers() {
        // 0..10 in 10 bins: 999 values below 1, one near 10.
        let mut histogram = vec![0; 10];
        histogram[0] = 999;
        histogram[9] = 1;
        let r = range(0.0, 10.0, histogram);
        assert_eq!(ranges(Calibration::Percentile(99.9)).bound(&r), Ok(1.0));
        assert_eq!(ranges(Calibration::Percentile(100.0)).bound(&r), Ok(10.0));
    }

    #[test]
    fn zero_and_nonfinite_ranges_stay_f32() {
        let calibrated = ranges(Calibration::MaxAbs);
        assert!(calibrated.bound(&range(0.0, 0.0, vec![4])).is_err());
        assert!(calibrated.bound(&range(2.0, 2.0, vec![4])).is_err());
        assert!(
            calibrated
                .bound(&range(0.0, f32::INFINITY, vec![4]))
                .is_err()
        );
        let mut r = range(-1.0, 1.0, vec![4]);
        r.nonfinite = 1;
        assert!(calibrated.bound(&r).unwrap_err().contains("NaN"));
    }

    #[test]
    fn empty_and_foreign_files_are_errors() {
        let empty = r#"{"format":"tcc-profile","version":1,"model":"m","samples":1,"tensors":[]}"#;
        assert!(
            Ranges::parse(empty, Calibration::MaxAbs)
                .unwrap_err()
                .contains("empty")
        );
        assert!(Ranges::parse("{}", Calibration::MaxAbs).is_err());
        assert!(Calibration::parse("entropy", 99.0).is_err());
        assert!(Calibration::parse("percentile", 0.0).is_err());
    }
}
