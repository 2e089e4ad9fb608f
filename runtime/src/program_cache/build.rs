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
            if device.il_version.is_none() {
                return Err(Error::Unsupported(format!(
                    "the artifact's kernels are SPIR-V but {} accepts no intermediate language \
                     (CL_DEVICE_IL_VERSION is empty); compile the model to OpenCL C instead",
                    device.name
                )));
            }
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
