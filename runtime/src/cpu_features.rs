//! Whether the running CPU has the instructions an artifact's CPU target
//! asks for, checked when the artifact is loaded.
//!
//! A `pocl-cpu-*` artifact records its target's instruction-set level in
//! its metadata (`cpu_arch`: `x86-64-v3` for `pocl-cpu-avx2`, `x86-64-v4`
//! for `pocl-cpu-avx512`). Its kernels' register blocks are sized for
//! that level (16 registers of 8 floats, or 32 of 16), and a build made
//! for it (a `--prepare`d binary, the compiled code of a future native
//! back end) may use its instructions. So an artifact for AVX-512 on a
//! CPU without AVX-512 is refused at load with the missing features
//! named and the target to compile for instead, as IREE refuses an
//! executable whose CPU features the host lacks, rather than running
//! with spilled register blocks or dying on an illegal instruction.
//!
//! The check is a pure function of the metadata and a feature predicate
//! ([`unsupported`]), so tests can fake a CPU's features.

/// The x86-64 features (as `is_x86_feature_detected!` names them) a
/// psABI level needs beyond the level below it; `None` for a level this
/// runtime does not know.
fn level_features(arch: &str) -> Option<Vec<&'static str>> {
    const V2: &[&str] = &["sse3", "ssse3", "sse4.1", "sse4.2", "popcnt"];
    const V3: &[&str] = &[
        "avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "lzcnt", "movbe",
    ];
    const V4: &[&str] = &["avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"];
    let levels: &[&[&str]] = match arch {
        "x86-64" => &[],
        "x86-64-v2" => &[V2],
        "x86-64-v3" => &[V2, V3],
        "x86-64-v4" => &[V2, V3, V4],
        _ => return None,
    };
    Some(levels.iter().flat_map(|l| l.iter().copied()).collect())
}

/// Whether the running CPU has `feature` (a name of
/// [`level_features`]); always false off x86-64.
pub fn host_has(feature: &str) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        match feature {
            "sse3" => std::arch::is_x86_feature_detected!("sse3"),
            "ssse3" => std::arch::is_x86_feature_detected!("ssse3"),
            "sse4.1" => std::arch::is_x86_feature_detected!("sse4.1"),
            "sse4.2" => std::arch::is_x86_feature_detected!("sse4.2"),
            "popcnt" => std::arch::is_x86_feature_detected!("popcnt"),
            "avx" => std::arch::is_x86_feature_detected!("avx"),
            "avx2" => std::arch::is_x86_feature_detected!("avx2"),
            "bmi1" => std::arch::is_x86_feature_detected!("bmi1"),
            "bmi2" => std::arch::is_x86_feature_detected!("bmi2"),
            "f16c" => std::arch::is_x86_feature_detected!("f16c"),
            "fma" => std::arch::is_x86_feature_detected!("fma"),
            "lzcnt" => std::arch::is_x86_feature_detected!("lzcnt"),
            "movbe" => std::arch::is_x86_feature_detected!("movbe"),
            "avx512f" => std::arch::is_x86_feature_detected!("avx512f"),
            "avx512bw" => std::arch::is_x86_feature_detected!("avx512bw"),
            "avx512cd" => std::arch::is_x86_feature_detected!("avx512cd"),
            "avx512dq" => std::arch::is_x86_feature_detected!("avx512dq"),
            "avx512vl" => std::arch::is_x86_feature_detected!("avx512vl"),
            _ => false,
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = feature;
        false
    }
}

/// Why an artifact with `metadata` (its `tcc_metadata_v1` JSON) cannot
/// run on a CPU whose features `has` reports, or `None` when it can (an
/// artifact without a CPU level, for a GPU, or from before the field,
/// always can).
pub fn unsupported(metadata: &str, has: impl Fn(&str) -> bool) -> Option<String> {
    let json: serde_json::Value = serde_json::from_str(metadata).ok()?;
    let arch = json.get("cpu_arch")?.as_str()?;
    let target = json
        .get("target_name")
        .and_then(|t| t.as_str())
        .unwrap_or("a CPU target");
    let Some(features) = level_features(arch) else {
        return Some(format!(
            "compiled for {target} ({arch}), an instruction set this runtime does not know: compile it again with --target=host"
        ));
    };
    let missing: Vec<&str> = features.into_iter().filter(|f| !has(f)).collect();
    if missing.is_empty() {
        return None;
    }
    let instead = if has("avx2") && has("fma") {
        "--target=pocl-cpu-avx2 (or --target=host)"
    } else {
        "--target=host"
    };
    Some(format!(
        "compiled for {target} ({arch}), but this CPU lacks {}: compile it again with {instead}",
        missing.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const AVX512: &str = r#"{"target":"pocl-cpu","target_name":"pocl-cpu-avx512","cpu_arch":"x86-64-v4","kernels":[]}"#;
    const AVX2: &str = r#"{"target":"pocl-cpu","target_name":"pocl-cpu-avx2","cpu_arch":"x86-64-v3","kernels":[]}"#;

    /// A CPU with every feature up to AVX2 (a Haswell or a Zen 2).
    fn avx2_cpu(feature: &str) -> bool {
        !feature.starts_with("avx512")
    }

    #[test]
    fn avx512_artifact_on_an_avx2_cpu_is_refused_with_the_missing_features() {
        let why = unsupported(AVX512, avx2_cpu).expect("refused");
        assert!(why.contains("pocl-cpu-avx512"), "{why}");
        assert!(why.contains("avx512f"), "{why}");
        assert!(why.contains("avx512vl"), "{why}");
        assert!(!why.contains("avx2,"), "{why}");
        assert!(why.contains("--target=pocl-cpu-avx2"), "{why}");
    }

    #[test]
    fn an_artifact_runs_where_its_level_is_met() {
        assert_eq!(unsupported(AVX2, avx2_cpu), None);
        assert_eq!(unsupported(AVX512, |_| true), None);
        assert_eq!(unsupported(AVX2, |_| true), None);
    }

    #[test]
    fn avx2_artifact_on_a_cpu_without_avx2_is_refused() {
        let sse_only = |f: &str| matches!(f, "sse3" | "ssse3" | "sse4.1" | "sse4.2" | "popcnt");
        let why = unsupported(AVX2, sse_only).expect("refused");
        assert!(why.contains("avx2") && why.contains("fma"), "{why}");
        assert!(why.contains("--target=host"), "{why}");
        assert!(!why.contains("--target=pocl-cpu-avx2"), "{why}");
    }

    #[test]
    fn gpu_and_older_artifacts_are_not_checked() {
        assert_eq!(
            unsupported(r#"{"target":"nvidia","kernels":[]}"#, |_| false),
            None
        );
        assert_eq!(unsupported("not json", |_| false), None);
    }

    #[test]
    fn an_unknown_level_is_refused() {
        let why = unsupported(r#"{"cpu_arch":"x86-64-v9"}"#, |_| true).expect("refused");
        assert!(why.contains("x86-64-v9"), "{why}");
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn the_host_has_at_least_the_baseline() {
        assert_eq!(unsupported(r#"{"cpu_arch":"x86-64"}"#, host_has), None);
        assert_eq!(
            host_has("avx2"),
            std::arch::is_x86_feature_detected!("avx2")
        );
        assert!(!host_has("no-such-feature"));
    }
}
