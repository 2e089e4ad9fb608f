//! Pieces shared by the `tcc-run` and `tcc-benchmark` binaries: parsing
//! `--input` / `--output` values in iree-run-module's style, choosing the
//! function, printing the device list, and turning errors into "message on
//! stderr, exit code 1". Opening the runtime and the session, with
//! progress lines, is in `setup`; the `--backend` flag and a session of
//! either backend in `backend`.

mod backend;
mod call_args;
mod setup;
mod target_check;

pub use backend::*;
pub use call_args::CallArgs;
pub use setup::*;
pub use target_check::*;

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;

use crate::device::{DeviceInfo, DeviceSelector};
use crate::error::{Error, Result};
use crate::tensor::HostTensor;
use crate::{Model, npy};

/// An `--input` value: the tensor and where it came from (for messages).
#[derive(Clone, Debug, PartialEq)]
pub struct InputArg {
    pub tensor: HostTensor,
    /// The `.npy` path as given, or "the command line".
    pub source: String,
}

/// Parses `--input`: `@path.npy` reads a file, anything else is a tensor
/// literal (`2x3xf32=1,2,3,4,5,6`, splat `2x3xf32=0`).
pub fn parse_input(spec: &str) -> Result<InputArg> {
    if let Some((_, path)) = crate::iree_flags::typed_file(spec) {
        return Ok(InputArg {
            tensor: crate::iree_flags::read_typed_file(spec)?,
            source: path.to_string(),
        });
    }
    if let Some(path) = spec.strip_prefix('@') {
        let tensor = npy::read_npy(path.as_ref())?;
        Ok(InputArg {
            tensor,
            source: path.to_string(),
        })
    } else {
        let tensor = HostTensor::parse_literal(spec).map_err(|e| {
            Error::InvalidInput(format!(
                "--input={spec}: {e} (a file needs a leading @, e.g. @x.npy)"
            ))
        })?;
        Ok(InputArg {
            tensor,
            source: "the command line".into(),
        })
    }
}

/// The element type and shape an `--input` value declares, found without
/// materializing it: a literal's type, or a `.npy` file's header.
pub fn input_type(spec: &str) -> Result<(crate::tensor::DType, Vec<usize>, String)> {
    if let Some(path) = spec.strip_prefix('@') {
        let (dtype, shape) = npy::read_npy_type(path.as_ref())?;
        Ok((dtype, shape, path.to_string()))
    } else if let Some((ty, path)) = crate::iree_flags::typed_file(spec) {
        let (shape, dtype) = crate::tensor::parse_type(ty)
            .map_err(|e| Error::InvalidInput(format!("--input={spec}: {e}")))?;
        Ok((dtype, shape, path.to_string()))
    } else {
        let ty = spec.split_once('=').map_or(spec, |(ty, _)| ty);
        let (shape, dtype) = crate::tensor::parse_type(ty).map_err(|e| {
            Error::InvalidInput(format!(
                "--input={}: {e} (a file needs a leading @, e.g. @x.npy)",
                crate::tensor::abbreviate(spec)
            ))
        })?;
        Ok((dtype, shape, "the command line".into()))
    }
}

/// Parses the `--input` values of a call of `function`: their count and
/// every type are checked against the function's signature before any
/// tensor is built or file read, so that a huge literal
/// (`--input=1000000000x1000000xf32=1`) is an error, not an allocation.
pub fn parse_inputs_for(
    specs: &[String],
    function: &crate::FunctionInfo,
) -> Result<(Vec<HostTensor>, Vec<String>)> {
    let declared = specs
        .iter()
        .map(|s| input_type(s))
        .collect::<Result<Vec<_>>>()?;
    let sources: Vec<&str> = declared.iter().map(|(_, _, s)| s.as_str()).collect();
    function.check_input_types(
        declared
            .iter()
            .map(|(dtype, shape, _)| (*dtype, shape.as_slice())),
        &sources,
    )?;
    let parsed = specs
        .iter()
        .map(|s| parse_input(s))
        .collect::<Result<Vec<_>>>()?;
    // A file could have changed in between: check the tensors themselves.
    let (tensors, sources): (Vec<_>, Vec<_>) =
        parsed.into_iter().map(|a| (a.tensor, a.source)).unzip();
    let source_refs: Vec<&str> = sources.iter().map(String::as_str).collect();
    function.check_inputs(&tensors, &source_refs)?;
    Ok((tensors, sources))
}

/// Inputs for a call of `function` when none are given: zeros of each
/// input's type, or with `seed` deterministic pseudo-random values
/// (splitmix64): floats uniform in [0, 1), integers and booleans 0 or 1
/// (safe as indices and masks). The second vector says which, per input.
pub fn default_inputs(
    function: &crate::FunctionInfo,
    seed: Option<u64>,
) -> Result<(Vec<HostTensor>, Vec<String>)> {
    let mut state = seed.unwrap_or(0);
    let mut next = move || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let mut tensors = Vec::new();
    for d in &function.inputs {
        // Zeros also check the size: a huge type is an error here.
        let zeros = HostTensor::zeros(d.dtype, d.shape.clone())?;
        if seed.is_none() {
            tensors.push(zeros);
            continue;
        }
        let size = d.dtype.size();
        let mut bytes = vec![0u8; zeros.bytes.len()];
        for element in bytes.chunks_exact_mut(size) {
            let bits = next();
            // 24 random bits: a float in [0, 1) that f16 and f32 both hold.
            let unit = (bits >> 40) as f32 / (1u32 << 24) as f32;
            if d.dtype == crate::tensor::DType::F32 {
                element.copy_from_slice(&unit.to_le_bytes());
            } else if d.dtype == crate::tensor::DType::F16 {
                element.copy_from_slice(&half::f16::from_f32(unit).to_le_bytes());
            } else {
                // Integers and booleans, little-endian: 0 or 1.
                element[0] = (bits >> 63) as u8;
            }
        }
        tensors.push(HostTensor::from_bytes(
            d.dtype,
            d.shape.clone(),
            crate::HostBytes::copy_aligned(&bytes),
        )?);
    }
    let what = match seed {
        Some(s) => format!("random values (seed {s})"),
        None => "zeros".to_string(),
    };
    let sources = vec![what; tensors.len()];
    Ok((tensors, sources))
}

/// Where an output goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OutputArg {
    /// `@path.npy`: written as .npy, atomically (`@path.bin`: raw bytes).
    Npy(PathBuf),
    /// `+path.npy` / `+path.bin`: appended to the file (iree-run-module's
    /// `+`), created if missing.
    Append(PathBuf),
    /// `-` or empty: printed to stdout.
    Print,
}

pub fn parse_output(spec: &str) -> Result<OutputArg> {
    match spec {
        "" | "-" => Ok(OutputArg::Print),
        s => match (s.strip_prefix('@'), s.strip_prefix('+')) {
            (Some(p), _) if !p.is_empty() => Ok(OutputArg::Npy(PathBuf::from(p))),
            (_, Some(p)) if !p.is_empty() => Ok(OutputArg::Append(PathBuf::from(p))),
            _ => Err(Error::InvalidInput(format!(
                "--output={spec}: expected @FILE.npy, @FILE.bin, +FILE.npy to append (or - to print), e.g. --output=@y.npy"
            ))),
        },
    }
}

/// Puts result `index` where `arg` says: a file, appended to a file, or
/// printed as `result[i]: TYPE=[...]`.
pub fn emit_output(
    arg: &OutputArg,
    index: usize,
    tensor: &HostTensor,
    out: &mut impl std::io::Write,
    max_elements: usize,
) -> anyhow::Result<()> {
    match arg {
        OutputArg::Npy(path) => crate::iree_flags::write_file(path, tensor, false)?,
        OutputArg::Append(path) => crate::iree_flags::write_file(path, tensor, true)?,
        OutputArg::Print => writeln!(out, "result[{index}]: {}", tensor.format(max_elements))?,
    }
    Ok(())
}

/// The function to run: `--function` if given, else the model's only one.
pub fn resolve_function(model: &Model, flag: Option<&str>) -> Result<String> {
    if let Some(name) = flag {
        return Ok(model.function(name)?.name.clone());
    }
    match model.functions() {
        [only] => Ok(only.name.clone()),
        fs => Err(Error::InvalidInput(format!(
            "{} has {} functions; choose one with --function ({})",
            model.path().display(),
            fs.len(),
            fs.iter()
                .map(|f| format!("@{}", f.name))
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// End-to-end latencies of a benchmark, in constant memory: min, max and
/// mean over every call, and quantiles from the calls themselves up to
/// [`LatencyStats::MAX_SAMPLES`] calls, beyond that from a uniform random
/// sample of that size (reservoir sampling). `tcc-benchmark
/// --iterations=100000000000` must not allocate a vector per call.
#[derive(Clone, Debug)]
pub struct LatencyStats {
    count: u64,
    sum: f64,
    min: f64,
    max: f64,
    samples: Vec<f64>,
    rng: u64,
}

impl Default for LatencyStats {
    fn default() -> Self {
        LatencyStats {
            count: 0,
            sum: 0.0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            samples: Vec::new(),
            rng: 0x9e37_79b9_7f4a_7c15,
        }
    }
}

impl LatencyStats {
    /// Calls kept for the quantiles (800 KB).
    pub const MAX_SAMPLES: usize = 100_000;

    pub fn push(&mut self, value: f64) {
        self.count += 1;
        self.sum += value;
        self.min = self.min.min(value);
        self.max = self.max.max(value);
        if self.samples.len() < Self::MAX_SAMPLES {
            self.samples.push(value);
        } else {
            // Algorithm R: the new value replaces a random slot with
            // probability MAX_SAMPLES / count.
            self.rng ^= self.rng << 13;
            self.rng ^= self.rng >> 7;
            self.rng ^= self.rng << 17;
            let slot = self.rng % self.count;
            if (slot as usize) < Self::MAX_SAMPLES {
                self.samples[slot as usize] = value;
            }
        }
    }

    /// Calls recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Calls the quantiles are computed from (all of them, up to
    /// [`Self::MAX_SAMPLES`]).
    pub fn sample_count(&self) -> usize {
        self.samples.len()
    }

    pub fn min(&self) -> f64 {
        self.min
    }

    pub fn max(&self) -> f64 {
        self.max
    }

    pub fn mean(&self) -> f64 {
        self.sum / self.count.max(1) as f64
    }

    /// Nearest-rank percentile `p` (0-100) of the sample; NaN when empty.
    pub fn percentile(&self, p: f64) -> f64 {
        if self.samples.is_empty() {
            return f64::NAN;
        }
        let mut sorted = self.samples.clone();
        sorted.sort_by(f64::total_cmp);
        let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
        sorted[rank.clamp(1, sorted.len()) - 1]
    }
}

/// Human-readable byte count: `512 B`, `4.0 KiB`, `1.5 GiB`.
pub fn format_bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// The `--list-devices` report: each platform, then each of its devices.
pub fn format_device_list(devices: &[DeviceInfo]) -> String {
    let default = DeviceSelector::Default
        .select(devices)
        .ok()
        .map(|d| d.index);
    let mut out = String::new();
    let mut platform: Option<(&str, &str)> = None;
    let mut platform_index = 0;
    for d in devices {
        let this = (d.platform_name.as_str(), d.platform_version.as_str());
        if platform != Some(this) {
            if platform.is_some() {
                platform_index += 1;
            }
            platform = Some(this);
            let _ = writeln!(
                out,
                "platform {platform_index}: {} ({})",
                d.platform_name, d.platform_version
            );
        }
        let mark = if Some(d.index) == default {
            " (default)"
        } else {
            ""
        };
        let _ = writeln!(out, "  device {}: {} [{}]{mark}", d.index, d.name, d.kind);
        let rows = [
            ("driver version", d.driver_version.clone()),
            ("OpenCL C", d.opencl_c_version.clone()),
            (
                "IL (SPIR-V)",
                d.il_version.clone().unwrap_or_else(|| "none".into()),
            ),
            ("fp16", if d.fp16 { "yes" } else { "no" }.into()),
            ("compute units", d.compute_units.to_string()),
            ("global memory", format_bytes(d.global_mem_bytes)),
            ("local memory", format_bytes(d.local_mem_bytes)),
            ("max allocation", format_bytes(d.max_alloc_bytes)),
            (
                "base address alignment",
                format!("{} B", d.base_align_bytes),
            ),
            ("max work-group", d.max_work_group_size.to_string()),
        ];
        for (k, v) in rows {
            let _ = writeln!(out, "    {:<16} {v}", format!("{k}:"));
        }
    }
    out
}

/// Parses the command line; `--help`/`--version` print and exit 0, a usage
/// error prints to stderr and exits 1.
pub fn parse_args<T: clap::Parser>() -> std::result::Result<T, ExitCode> {
    parse_args_from::<T, _, _>(std::env::args_os())
}

/// [`parse_args`] on a given command line (the first item is the program).
pub fn parse_args_from<T, I, S>(argv: I) -> std::result::Result<T, ExitCode>
where
    T: clap::Parser,
    I: IntoIterator<Item = S>,
    S: Into<std::ffi::OsString> + Clone,
{
    let mut cmd = both_spellings(T::command());
    let parsed = match cmd.try_get_matches_from_mut(argv) {
        Ok(mut matches) => T::from_arg_matches_mut(&mut matches).map_err(|e| e.format(&mut cmd)),
        Err(e) => Err(e),
    };
    parsed.map_err(|e| {
        let _ = e.print();
        if e.use_stderr() {
            // Usage errors: 2, as every tcc tool (and clap, and getopt
            // conventions) has it; 1 is for failures.
            ExitCode::from(2)
        } else {
            ExitCode::SUCCESS
        }
    })
}

/// Accepts both spellings of every long flag, `--print-max-elements` and
/// `--print_max_elements`, `--expected_output` and `--expected-output`
/// (IREE's tools use `_`, tcc's own flags `-`): each flag gets a hidden
/// alias with the other separator, where no other flag has that name. In
/// subcommands too.
pub fn both_spellings(cmd: clap::Command) -> clap::Command {
    let taken: std::collections::HashSet<String> = cmd
        .get_arguments()
        .filter_map(|a| a.get_long())
        .map(str::to_string)
        .collect();
    let cmd = cmd.mut_args(|arg| {
        let mut names: Vec<String> = arg.get_long().into_iter().map(str::to_string).collect();
        names.extend(
            arg.get_all_aliases()
                .unwrap_or_default()
                .into_iter()
                .map(str::to_string),
        );
        let mut arg = arg;
        for name in &names {
            for other in [name.replace('-', "_"), name.replace('_', "-")] {
                if other != *name && !taken.contains(&other) && !names.contains(&other) {
                    arg = arg.alias(other);
                }
            }
        }
        arg
    });
    let subcommands: Vec<String> = cmd
        .get_subcommands()
        .map(|c| c.get_name().to_string())
        .collect();
    subcommands
        .into_iter()
        .fold(cmd, |cmd, name| cmd.mut_subcommand(name, both_spellings))
}

/// The `--version` text of every tcc tool: `0.1.0 (git HASH)` (clap puts
/// the tool's name first: `tcc-run 0.1.0 (git HASH)`; the string says
/// which tcc it belongs to).
pub fn version() -> &'static str {
    static TEXT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TEXT.get_or_init(|| {
        format!(
            "{} (tcc, git {})",
            env!("CARGO_PKG_VERSION"),
            crate::GIT_HASH
        )
    })
}

/// Prints `error: …` (with the error chain) and returns exit code 1; the
/// tool's name is not repeated (`prog` is kept for callers).
pub fn report(_prog: &str, result: anyhow::Result<()>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // A bare "Broken pipe" from a `writeln!` says nothing of where.
            let broken_pipe = e
                .downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe);
            if broken_pipe {
                eprintln!("error: cannot write to standard output: {e:#}");
            } else {
                eprintln!("error: {e:#}");
            }
            ExitCode::FAILURE
        }
    }
}

/// Parses the `--input` values of a call split across devices: each type
/// is the function's or the function's with axis 0 a multiple of its own
/// (see [`crate::SplitPlan`]), checked before any tensor is built.
pub fn parse_inputs_split(
    specs: &[String],
    function: &crate::FunctionInfo,
) -> Result<(Vec<HostTensor>, crate::SplitPlan)> {
    let declared = specs
        .iter()
        .map(|s| input_type(s))
        .collect::<Result<Vec<_>>>()?;
    crate::SplitPlan::new(
        function,
        declared
            .iter()
            .map(|(dtype, shape, _)| (*dtype, shape.as_slice())),
    )?;
    let tensors = specs
        .iter()
        .map(|s| parse_input(s).map(|a| a.tensor))
        .collect::<Result<Vec<_>>>()?;
    // A file could have changed in between: check the tensors themselves.
    let plan = crate::SplitPlan::new(
        function,
        tensors.iter().map(|t| (t.dtype, t.shape.as_slice())),
    )?;
    Ok((tensors, plan))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_stats_are_exact_when_small_and_bounded_when_large() {
        let mut small = LatencyStats::default();
        for v in [5.0, 1.0, 3.0, 2.0, 4.0] {
            small.push(v);
        }
        assert_eq!((small.min(), small.max(), small.mean()), (1.0, 5.0, 3.0));
        assert_eq!(small.percentile(50.0), 3.0);
        assert_eq!(small.percentile(90.0), 5.0);
        let mut large = LatencyStats::default();
        let n = 3 * LatencyStats::MAX_SAMPLES as u64;
        for i in 0..n {
            large.push((i % 1000) as f64);
        }
        assert_eq!(large.count(), n);
        assert_eq!(large.sample_count(), LatencyStats::MAX_SAMPLES);
        assert_eq!((large.min(), large.max()), (0.0, 999.0));
        assert!((large.mean() - 499.5).abs() < 1e-9);
        // A uniform sample: the median of 0..999 repeated is about 500.
        let median = large.percentile(50.0);
        assert!((480.0..=520.0).contains(&median), "{median}");
        let p90 = large.percentile(90.0);
        assert!((880.0..=920.0).contains(&p90), "{p90}");
    }

    #[test]
    fn inputs() {
        let a = parse_input("2x2xf32=1,2,3,4").unwrap();
        assert_eq!(a.source, "the command line");
        assert_eq!(a.tensor.to_f32().unwrap(), vec![1., 2., 3., 4.]);
        let e = parse_input("x.npy").unwrap_err().to_string();
        assert!(e.contains("a file needs a leading @"), "{e}");
        let e = parse_input("@/nonexistent/x.npy").unwrap_err().to_string();
        assert!(e.starts_with("/nonexistent/x.npy: cannot open"), "{e}");

        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.npy");
        let t = HostTensor::from_i32(vec![3], &[1, 2, 3]).unwrap();
        npy::write_npy(&p, &t).unwrap();
        let a = parse_input(&format!("@{}", p.display())).unwrap();
        assert_eq!(a.tensor, t);
        assert_eq!(a.source, p.display().to_string());
    }

    #[test]
    fn outputs() {
        assert_eq!(
            parse_output("@y.npy").unwrap(),
            OutputArg::Npy("y.npy".into())
        );
        assert_eq!(parse_output("-").unwrap(), OutputArg::Print);
        assert!(parse_output("y.npy").is_err());
        assert!(parse_output("@").is_err());
    }

    #[test]
    fn bytes() {
        assert_eq!(format_bytes(512), "512 B");
        assert_eq!(format_bytes(4096), "4.0 KiB");
        assert_eq!(format_bytes(3 << 30), "3.0 GiB");
    }
}
