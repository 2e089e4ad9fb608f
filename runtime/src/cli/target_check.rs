//! Which compile target suits a device, and the one-line warning tcc-run
//! and tcc-benchmark print when an artifact was built for another kind of
//! device (a `generic` build on PoCL runs tens of times slower than a
//! `pocl-cpu` one, and nothing said so).

use crate::Model;
use crate::device::{DeviceInfo, DeviceKind};

/// The `tcc compile --target` whose tables suit `device`: `nvidia` for an
/// NVIDIA device, `pocl-cpu` for a CPU, else `generic` (`--target=auto`).
pub fn target_for_device(device: &DeviceInfo) -> &'static str {
    if device.name.to_lowercase().contains("nvidia")
        || device.platform_name.to_lowercase().contains("nvidia")
    {
        "nvidia"
    } else if device.kind == DeviceKind::Cpu {
        "pocl-cpu"
    } else {
        "generic"
    }
}

/// The target `model` was compiled for (its metadata's `target`), if it
/// says.
pub fn model_target(model: &Model) -> Option<String> {
    let metadata: serde_json::Value = serde_json::from_str(model.metadata()?).ok()?;
    metadata["target"].as_str().map(str::to_string)
}

/// The warning for running `model` on `device` when its target is not the
/// one that suits the device, saying what to rebuild with; `None` when
/// they match or the artifact does not say. SPIR-V artifacts
/// (`--target=vulkan|opencl-spirv`) hold the portable kernels, which no
/// OpenCL C target would improve: no warning.
pub fn target_mismatch(model: &Model, device: &DeviceInfo) -> Option<String> {
    if model.source_kind() == crate::program_cache::SourceKind::SpirV {
        return None;
    }
    let built = model_target(model)?;
    let suits = target_for_device(device);
    (built != suits).then(|| {
        format!(
            "warning: {} was built for --target={built}, but {} ({}) runs --target={suits} builds faster: rebuild with `tcc compile --target={suits}` (or --target=auto on this machine)",
            model.path().display(),
            device.name,
            device.kind
        )
    })
}

/// Prints [`target_mismatch`]'s warning as `tool: warning: ...`, once per
/// process.
pub fn warn_target_mismatch(tool: &str, model: &Model, device: &DeviceInfo) {
    static WARNED: std::sync::Once = std::sync::Once::new();
    if let Some(text) = target_mismatch(model, device) {
        WARNED.call_once(|| eprintln!("{tool}: {text}"));
    }
}
