//! Building a kernel program with the driver: from the artifact's source
//! (OpenCL C, SPIR-V or PTX) or from a cached binary, with the build log
//! and the kernels its errors point into on failure.

use opencl3::context::Context;
use opencl3::program::Program;

use super::{ProgramSource, SourceKind};
use crate::device::DeviceInfo;
use crate::error::{Error, Result};

/// Builds `source` with the driver, returning the build log on failure.
pub(super) fn build_from_source(
    context: &Context,
    device: &DeviceInfo,
    source: &ProgramSource,
) -> Result<Program> {
    let mut program = match source.kind {
        SourceKind::OpenClC => {
            let text = std::str::from_utf8(source.bytes).map_err(|e| {
                Error::Unsupported(format!("the artifact's OpenCL C source is not UTF-8: {e}"))
            })?;
            Program::create_from_source(context, text)
                .map_err(|e| Error::cl("clCreateProgramWithSource", e))?
        }
        SourceKind::SpirV => {
            il_accepts(&device.name, device.il_version.as_deref(), source.bytes)?;
            Program::create_from_il(context, source.bytes)
                .map_err(|e| Error::cl("clCreateProgramWithIL", e))?
        }
        // NVIDIA's OpenCL takes PTX text as a program binary and JITs it.
        SourceKind::Ptx => {
            // SAFETY: the device belongs to the context (both come from the runtime).
            unsafe { Program::create_from_binary(context, &[device.device.id()], &[source.bytes]) }
                .map_err(|e| Error::cl("clCreateProgramWithBinary (PTX)", e))?
        }
    };
    let text = (source.kind == SourceKind::OpenClC)
        .then(|| std::str::from_utf8(source.bytes).ok())
        .flatten();
    build(&mut program, device, source.options, text)?;
    Ok(program)
}

pub(super) fn program_from_binary(
    context: &Context,
    device: &DeviceInfo,
    binary: &[u8],
    options: &str,
) -> Result<Program> {
    // SAFETY: the device belongs to the context (both come from the runtime).
    let mut program =
        unsafe { Program::create_from_binary(context, &[device.device.id()], &[binary]) }
            .map_err(|e| Error::cl("clCreateProgramWithBinary", e))?;
    build(&mut program, device, options, None)?;
    // The session creates the kernels by name; a binary whose kernels the
    // driver cannot create is refused here, while it can still be evicted.
    opencl3::kernel::create_program_kernels(&program)
        .map_err(|e| Error::cl("clCreateKernelsInProgram", e))?;
    Ok(program)
}

/// Builds `program`; a failure carries the build log and, given the
/// OpenCL C `source`, the kernels the log's errors point into.
fn build(
    program: &mut Program,
    device: &DeviceInfo,
    options: &str,
    source: Option<&str>,
) -> Result<()> {
    let id = device.device.id();
    program.build(&[id], options).map_err(|e| {
        let log = program
            .get_build_log(id)
            .unwrap_or_else(|e| format!("(no build log: {e})"))
            .trim()
            .to_string();
        Error::Build {
            device: device.name.clone(),
            code: e.to_string(),
            kernels: source
                .map(|s| kernels_with_errors(s, &log))
                .unwrap_or_default(),
            log,
        }
    })
}

/// The kernels of OpenCL C `source` that a build log's error lines point
/// into: drivers name the source line (`file.cl:LINE:COLUMN: error: ...`
/// from clang-based ones, PoCL and NVIDIA among them), and a kernel spans
/// from its `__kernel` line to the next one's.
pub fn kernels_with_errors(source: &str, log: &str) -> Vec<String> {
    // (first line, name) of each kernel, in order; lines count from 1.
    let mut starts: Vec<(usize, String)> = Vec::new();
    let mut pending_kernel = None;
    for (index, line) in source.lines().enumerate() {
        let line_number = index + 1;
        if line.trim_start().starts_with("__kernel") {
            pending_kernel = Some(line_number);
        }
        if let Some(start) = pending_kernel
            && let Some(rest) = line.split("void ").nth(1)
            && let Some(name) = rest.split('(').next()
        {
            starts.push((start, name.trim().to_string()));
            pending_kernel = None;
        }
    }
    let mut kernels: Vec<String> = Vec::new();
    for line in log.lines().filter(|l| l.contains("error")) {
        let Some(line_number) = first_line_reference(line) else {
            continue;
        };
        if let Some((_, name)) = starts.iter().rev().find(|(start, _)| *start <= line_number)
            && !kernels.contains(name)
        {
            kernels.push(name.clone());
        }
    }
    kernels
}

/// The LINE of the first `:LINE:COLUMN:` in a log line.
fn first_line_reference(line: &str) -> Option<usize> {
    let parts: Vec<&str> = line.split(':').collect();
    parts.windows(3).find_map(|w| {
        let numeric = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
        (numeric(w[0]) && numeric(w[1]))
            .then(|| w[0].parse().ok())
            .flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_errors_name_the_kernels_their_lines_fall_in() {
        let source = "/* prelude */\ninline float f(float x) { return x; }\n\n__kernel __attribute__((reqd_work_group_size(1, 1, 1)))\nvoid conv_0(__global float* a0) {\n  a0[0] = 1.0f;\n}\n\n__kernel __attribute__((reqd_work_group_size(64, 1, 1)))\nvoid softmax_1(__global float* a0) {\n  a0[0] = nope;\n}\n";
        let log = "/root/.cache/pocl/kcache/tempfile_x.cl:11:11: error: use of undeclared identifier 'nope'\n/tmp/t.cl:6:3: warning: something\n1 error generated.";
        assert_eq!(kernels_with_errors(source, log), vec!["softmax_1"]);
        let both = "a.cl:6:3: error: x\na.cl:11:2: error: y\na.cl:10:1: error: z";
        assert_eq!(
            kernels_with_errors(source, both),
            vec!["conv_0", "softmax_1"]
        );
        // An error in the prelude, or a log without line references, names none.
        assert!(kernels_with_errors(source, "a.cl:2:8: error: p").is_empty());
        assert!(kernels_with_errors(source, "error: out of resources").is_empty());
        let error = Error::Build {
            device: "pthread".into(),
            code: "CL_BUILD_PROGRAM_FAILURE".into(),
            kernels: kernels_with_errors(source, log),
            log: log.into(),
        };
        assert!(
            error
                .to_string()
                .starts_with("kernel program failed to build for pthread: CL_BUILD_PROGRAM_FAILURE (errors in kernel softmax_1)\nbuild log:"),
            "{error}"
        );
    }
}

/// Whether an OpenCL device that reports `il_version`
/// (`CL_DEVICE_IL_VERSION`, e.g. "SPIR-V_1.0 SPIR-V_1.1") takes the SPIR-V
/// module `spirv` through `clCreateProgramWithIL`: its IL list must name
/// SPIR-V at the module's version or later, and the module must be for
/// OpenCL (Kernel capability, `tcc compile --target=opencl-spirv`), not for
/// Vulkan (Shader). The error names the device and what it lacks.
pub(crate) fn il_accepts(device: &str, il_version: Option<&str>, spirv: &[u8]) -> Result<()> {
    let word = |i: usize| {
        spirv
            .get(i * 4..i * 4 + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    if word(0) != Some(0x0723_0203) {
        return Err(Error::Unsupported(
            "the artifact's SPIR-V kernels are not a SPIR-V module (bad magic number)".into(),
        ));
    }
    let version = word(1).unwrap_or(0);
    let (major, minor) = ((version >> 16) & 0xff, (version >> 8) & 0xff);
    if crate::drivers::vulkan::spirv_is_shader(spirv) {
        return Err(Error::Unsupported(format!(
            "the artifact's kernels are SPIR-V for Vulkan (Shader capability), which OpenCL \
             does not load: run it with --backend=vulkan, or compile the model with \
             --target=opencl-spirv for {device}"
        )));
    }
    let reported: Vec<(u32, u32)> = il_version
        .unwrap_or("")
        .split_whitespace()
        .filter_map(|il| {
            let (ma, mi) = il.strip_prefix("SPIR-V_")?.split_once('.')?;
            Some((ma.parse().ok()?, mi.parse().ok()?))
        })
        .collect();
    if reported.iter().any(|&v| v >= (major, minor)) {
        return Ok(());
    }
    let what = match il_version {
        Some(il) if !il.trim().is_empty() => format!("CL_DEVICE_IL_VERSION is \"{}\"", il.trim()),
        _ => "CL_DEVICE_IL_VERSION is empty".to_string(),
    };
    Err(Error::Unsupported(format!(
        "the artifact's kernels are SPIR-V {major}.{minor} but {device} accepts no SPIR-V \
         {major}.{minor} intermediate language ({what}); compile the model to OpenCL C \
         (any --target but vulkan and opencl-spirv), or to --target=vulkan for a Vulkan device"
    )))
}

#[cfg(test)]
mod il_tests {
    use super::il_accepts;

    /// A module header (magic, version 1.`minor`) and one OpCapability.
    fn module(minor: u32, capability: u32) -> Vec<u8> {
        [
            0x0723_0203,
            minor << 8 | 1 << 16,
            0,
            1,
            0,
            2 << 16 | 17,
            capability,
        ]
        .iter()
        .flat_map(|w: &u32| w.to_le_bytes())
        .collect()
    }

    const KERNEL: u32 = 6;
    const SHADER: u32 = 1;

    #[test]
    fn il_is_chosen_from_the_device_report() {
        il_accepts(
            "dev",
            Some("SPIR-V_1.0 SPIR-V_1.1 SPIR-V_1.2"),
            &module(0, KERNEL),
        )
        .unwrap();
        il_accepts("dev", Some("SPIR-V_1.2"), &module(2, KERNEL)).unwrap();
        let e = il_accepts("dev", Some("SPIR-V_1.0"), &module(3, KERNEL))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("SPIR-V 1.3 but dev accepts no SPIR-V 1.3"),
            "{e}"
        );
        assert!(e.contains("CL_DEVICE_IL_VERSION is \"SPIR-V_1.0\""), "{e}");
        for none in [None, Some(""), Some("  ")] {
            let e = il_accepts("PoCL cpu", none, &module(0, KERNEL))
                .unwrap_err()
                .to_string();
            assert!(e.contains("PoCL cpu accepts no SPIR-V 1.0"), "{e}");
            assert!(e.contains("CL_DEVICE_IL_VERSION is empty"), "{e}");
        }
    }

    #[test]
    fn shader_spirv_is_refused_with_the_vulkan_hint() {
        let e = il_accepts("dev", Some("SPIR-V_1.5"), &module(3, SHADER))
            .unwrap_err()
            .to_string();
        assert!(e.contains("SPIR-V for Vulkan (Shader capability)"), "{e}");
        assert!(e.contains("--backend=vulkan"), "{e}");
        let e = il_accepts("dev", Some("SPIR-V_1.5"), b"not spirv")
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a SPIR-V module"), "{e}");
    }
}
