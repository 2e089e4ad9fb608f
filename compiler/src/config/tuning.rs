//! Tuning records: the GEMM configuration measured fastest for each
//! product shape on one device, written by `tcc tune` and read by
//! `tcc compile --tuning=FILE` (the `tuning=` option of
//! `tcc-configure-kernels`).
//!
//! A record belongs to one device (its OpenCL name, as `tcc-run
//! --list-devices` shows it, and its driver version) and one target; an entry says, for a
//! (batch, M, N, K) product, which of the target's candidate
//! configurations ([`super::Target::gemm_candidates`]) won and by how
//! much. Shapes a record does not name keep the target's table. The
//! format is JSON so that records can be reviewed as diffs and committed
//! (`tuning/`).

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::{GemmConfig, Target};

/// The version of the record format this build reads and writes.
pub const RECORD_VERSION: u32 = 1;

/// One measured product shape.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TunedGemm {
    /// Kernel kind the shape was measured on (`matmul` or `convolution`):
    /// an implicit-GEMM convolution reads A differently from a matmul.
    pub kind: String,
    /// `[batch, m, n, k]`.
    pub shape: [i64; 4],
    /// `[tile_m, tile_n, tile_k, work_m, work_n, split_k]`.
    pub config: [u32; 6],
    /// [`GemmConfig::k_lanes`] (absent in records of the tiled forms: 1).
    #[serde(default = "one_lane", skip_serializing_if = "is_one_lane")]
    pub k_lanes: u32,
    /// Mean device time of the winning configuration, milliseconds.
    pub best_ms: f64,
    /// Mean device time of the target's table choice, milliseconds.
    pub default_ms: f64,
}

impl TunedGemm {
    pub fn gemm_config(&self) -> GemmConfig {
        let [tile_m, tile_n, tile_k, work_m, work_n, split_k] = self.config;
        GemmConfig {
            tile_m,
            tile_n,
            tile_k,
            work_m,
            work_n,
            split_k,
            k_lanes: self.k_lanes,
        }
    }
}

fn one_lane() -> u32 {
    1
}

fn is_one_lane(lanes: &u32) -> bool {
    *lanes == 1
}

/// The configurations measured best on one device.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TuningRecord {
    pub version: u32,
    /// The OpenCL device the times were measured on.
    pub device: String,
    /// Its driver's version (`CL_DRIVER_VERSION`; empty in records made
    /// before it was kept): another driver may compile the kernels into
    /// other code, so the artifact notes which one the record is for.
    #[serde(default)]
    pub driver: String,
    /// The target the candidates came from (`pocl-cpu`, `nvidia`, ...).
    pub target: String,
    pub gemms: Vec<TunedGemm>,
}

impl TuningRecord {
    pub fn new(device: &str, driver: &str, target: Target) -> Self {
        TuningRecord {
            version: RECORD_VERSION,
            device: device.to_string(),
            driver: driver.to_string(),
            target: target.name().to_string(),
            gemms: Vec::new(),
        }
    }

    /// Reads and checks a record: its version, its target's name, and
    /// every configuration's validity.
    pub fn load(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read tuning record {}: {e}", path.display()))?;
        Self::parse(&text).map_err(|e| format!("tuning record {}: {e}", path.display()))
    }

    pub fn parse(text: &str) -> Result<Self, String> {
        let record: TuningRecord = serde_json::from_str(text).map_err(|e| e.to_string())?;
        if record.version != RECORD_VERSION {
            return Err(format!(
                "format version {} (this tcc reads version {RECORD_VERSION})",
                record.version
            ));
        }
        record.target.parse::<Target>()?;
        for entry in &record.gemms {
            entry
                .gemm_config()
                .validate()
                .map_err(|e| format!("shape {:?}: {e}", entry.shape))?;
        }
        Ok(record)
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a tuning record always serializes")
    }

    /// The recorded configuration for a product of `kind` and shape, if
    /// the record is for `target`.
    pub fn lookup(&self, target: Target, kind: &str, shape: [i64; 4]) -> Option<GemmConfig> {
        if self.target != target.name() {
            return None;
        }
        self.gemms
            .iter()
            .find(|entry| entry.kind == kind && entry.shape == shape)
            .map(TunedGemm::gemm_config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> TuningRecord {
        let mut record = TuningRecord::new("pthread-test", "6.0", Target::PoclCpu);
        record.gemms.push(TunedGemm {
            kind: "convolution".into(),
            shape: [1, 49, 512, 4608],
            config: [8, 16, 4, 8, 16, 1],
            k_lanes: 1,
            best_ms: 1.5,
            default_ms: 2.0,
        });
        record
    }

    #[test]
    fn round_trips_and_looks_up_by_target_kind_and_shape() {
        let record = TuningRecord::parse(&record().to_json()).unwrap();
        assert_eq!(record, self::record());
        let config = record
            .lookup(Target::PoclCpu, "convolution", [1, 49, 512, 4608])
            .unwrap();
        assert_eq!((config.work_m, config.work_n), (8, 16));
        assert!(
            record
                .lookup(Target::PoclCpu, "matmul", [1, 49, 512, 4608])
                .is_none()
        );
        assert!(
            record
                .lookup(Target::PoclCpu, "convolution", [1, 49, 512, 9])
                .is_none()
        );
        assert!(
            record
                .lookup(Target::Nvidia, "convolution", [1, 49, 512, 4608])
                .is_none()
        );
    }

    /// The records committed under `tuning/`.
    const COMMITTED: [(&str, &str); 2] = [
        (
            "nvidia-h100.json",
            include_str!("../../../tuning/nvidia-h100.json"),
        ),
        (
            "pocl-cpu-skylake-avx512.json",
            include_str!("../../../tuning/pocl-cpu-skylake-avx512.json"),
        ),
    ];

    #[test]
    fn committed_records_parse_and_agree_with_the_nvidia_table() {
        for (name, text) in COMMITTED {
            let record = TuningRecord::parse(text).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(!record.gemms.is_empty(), "{name}");
        }
        // ResNet-50's batch-1 shapes that the table's session-11 rules
        // changed (docs/benchmarks.md, session 11 and its second round):
        // the H100 record names the table's configuration, measured there.
        let h100 = TuningRecord::parse(COMMITTED[0].1).unwrap();
        for (m, n, k, tiles) in [
            (196, 1024, 256, (16, 64, 16, 2)),
            (3136, 64, 576, (16, 64, 16, 4)),
            (784, 128, 1152, (16, 64, 16, 4)),
            (784, 128, 512, (16, 64, 16, 4)),
            (784, 256, 512, (16, 64, 16, 4)),
            (196, 1024, 512, (16, 64, 16, 4)),
            (196, 256, 1024, (16, 64, 16, 4)),
            (196, 512, 1024, (16, 64, 16, 4)),
            (49, 2048, 512, (16, 64, 16, 4)),
            (49, 2048, 1024, (16, 64, 16, 4)),
            (3136, 128, 256, (16, 64, 32, 1)),
            (784, 512, 128, (16, 64, 32, 1)),
            (784, 512, 256, (16, 64, 32, 1)),
            (3136, 64, 256, (32, 64, 32, 1)),
        ] {
            let tuned = h100.lookup(Target::Nvidia, "convolution", [1, m, n, k]);
            assert_eq!(tuned, Target::Nvidia.gemm_config(1, m, n, k), "{m}x{n}x{k}");
            assert_eq!(
                tuned.map(|c| (c.tile_m, c.tile_n, c.tile_k, c.split_k)),
                Some(tiles),
                "{m}x{n}x{k}"
            );
        }
    }

    #[test]
    fn rejects_other_versions_targets_and_invalid_tiles() {
        let mut other = record();
        other.version = 99;
        assert!(
            TuningRecord::parse(&other.to_json())
                .unwrap_err()
                .contains("version 99")
        );
        let mut target = record();
        target.target = "tpu".into();
        assert!(TuningRecord::parse(&target.to_json()).is_err());
        let mut tiles = record();
        tiles.gemms[0].config = [8, 16, 4, 3, 16, 1];
        assert!(
            TuningRecord::parse(&tiles.to_json())
                .unwrap_err()
                .contains("divide")
        );
        assert!(TuningRecord::parse("{").is_err());
    }
}
