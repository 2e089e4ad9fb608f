//! Run-time specialization of a dynamic artifact's kernels (issue 33).
//!
//! A function compiled with `tcc compile --dim NAME=MIN..MAX` runs at any
//! extent in range: its kernels read their extents from scalar arguments.
//! The OpenCL C writer reads each such scalar through a macro
//! (`tcc_abi::symbolic::specialization_macro`: kernel and argument
//! position), so the same source also builds with a call's values as
//! build-time constants, which the device compiler folds into loop
//! bounds, guards and tile counts (the register-blocked GEMM's text is
//! then the static one's).
//!
//! The bucket is the exact shape: the function and every input's and
//! output's extents. The first call at a bucket runs the generic kernels
//! and records the scalar arguments of each launch. The second call at it
//! (the shape is hot) starts building the program with those values
//! (`-DTCC_ARG_<kernel>_<argument>=VALUE` after the artifact's own
//! options) on a thread of its own and runs the generic kernels; the
//! build goes through the program cache, which keys on the options, so
//! each bucket is built by the driver once per machine and loaded from
//! the disk cache by later processes. Calls at the bucket launch the
//! specialized kernels once the build is done; no call waits for it
//! (`Session::wait_for_specializations` does; a session's drop joins its
//! builds). A one-shot call (`tcc-run`) never builds. A kernel launched
//! with different values within one call (a kernel shared by several
//! launches) keeps its scalars. Each session records at most
//! [`MAX_BUCKETS`] buckets per function; calls at further shapes run the
//! generic kernels, as do calls with specialization off
//! ([`Specialization::Off`], `TCC_SPECIALIZE=off`), calls on a compute
//! lane past the first, and PTX programs (whose kernels take no macros).
//! A specialization that fails to build is recorded
//! ([`SpecializationStats::last_failure`]) and its bucket runs the
//! generic kernels: the calls themselves have succeeded.

use std::collections::HashMap;
use std::sync::Arc;

use opencl3::program::Program;
use serde::Serialize;

use super::program::{KernelSlot, kernel_slots};
use crate::RuntimeInner;
use crate::abi;
use crate::artifact::Artifact;
use crate::error::{Error, Result};
use crate::program_cache::{ProgramSource, SourceKind};

/// Environment variable: the default [`Specialization`] of new sessions
/// (`off` or `exact`).
pub const SPECIALIZE_ENV: &str = "TCC_SPECIALIZE";

/// The most shape buckets a session specializes per function.
pub const MAX_BUCKETS: usize = 64;

/// Whether a session specializes a dynamic function's kernels per call
/// shape.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub enum Specialization {
    /// Always the generic kernels (extents from scalar arguments).
    Off,
    /// One specialized program per exact call shape (the default).
    #[default]
    Exact,
}

impl std::str::FromStr for Specialization {
    type Err = Error;
    fn from_str(text: &str) -> Result<Self> {
        match text {
            "off" => Ok(Specialization::Off),
            "exact" => Ok(Specialization::Exact),
            other => Err(Error::InvalidInput(format!(
                "specialization `{other}`: expected off or exact"
            ))),
        }
    }
}

impl Specialization {
    /// `TCC_SPECIALIZE`, when set and non-empty (an unknown value is an
    /// error here; sessions then take the default).
    pub fn from_env() -> Result<Option<Self>> {
        match std::env::var(SPECIALIZE_ENV) {
            Ok(v) if !v.is_empty() => v
                .parse()
                .map(Some)
                .map_err(|e| Error::InvalidInput(format!("{SPECIALIZE_ENV}: {e}"))),
            _ => Ok(None),
        }
    }
}

/// What a session's run-time specialization did.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SpecializationStats {
    /// Buckets whose specialized program was built (by the driver, or
    /// loaded from the program cache: see the runtime's cache counters).
    pub programs: u64,
    /// Calls that launched specialized kernels.
    pub specialized_calls: u64,
    /// Calls of a function on a symbolic dimension that launched the
    /// generic kernels (the first at each bucket among them).
    pub generic_calls: u64,
    /// Wall time spent getting the specialized programs, in seconds.
    pub build_seconds: f64,
    /// Specializations that failed to build (their buckets run the
    /// generic kernels).
    pub failures: u64,
    /// What the last failure was.
    pub last_failure: Option<String>,
}

/// A bucket: a function and its call's extents.
type BucketKey = (String, Vec<i64>);

/// A specialized program and its kernels, in the artifact's order.
pub(super) struct Bucket {
    pub(super) kernels: Vec<KernelSlot>,
    _program: Arc<Program>,
}

/// A bucket's build on a thread of its own: the bucket, or why not, and
/// the seconds it took.
type Building = std::thread::JoinHandle<(Result<Bucket>, f64)>;

/// A session's specialized programs.
#[derive(Default)]
pub(super) struct Specializer {
    pub(super) policy: Specialization,
    /// `None`: the bucket runs the generic kernels (nothing to specialize,
    /// a failed build).
    buckets: HashMap<BucketKey, Option<Bucket>>,
    /// Buckets called once: the build options their first call recorded.
    seen: HashMap<BucketKey, String>,
    /// Buckets being built.
    building: HashMap<BucketKey, Building>,
    /// Buckets recorded per function (the cap, [`MAX_BUCKETS`]).
    per_function: HashMap<String, usize>,
    pub(super) stats: SpecializationStats,
}

/// What a call at a bucket does.
pub(super) enum Plan<'a> {
    /// Launch these kernels.
    Specialized(&'a [KernelSlot]),
    /// Launch the generic kernels and record their scalars
    /// ([`Specializer::recorded`]).
    Record(BucketKey),
    /// Launch the generic kernels.
    Generic,
}

impl Specializer {
    pub(super) fn new() -> Self {
        Specializer {
            policy: Specialization::from_env()
                .ok()
                .flatten()
                .unwrap_or_default(),
            ..Specializer::default()
        }
    }

    /// Starts the build of the bucket of a call of `function` with
    /// `shapes` on a thread of its own, from `rt` and `model`, if this is
    /// the bucket's second call (see [`Specializer::plan`]).
    pub(super) fn start_if_hot(
        &mut self,
        function: &str,
        shapes: &[i64],
        applies: bool,
        rt: &Arc<RuntimeInner>,
        model: &crate::Model,
    ) {
        if !applies || shapes.is_empty() || self.policy == Specialization::Off {
            return;
        }
        let key = (function.to_string(), shapes.to_vec());
        if let Some(defines) = self.seen.remove(&key) {
            self.start(key, defines, rt.clone(), model.clone());
        }
    }

    /// What a call of `function` with `shapes` (its inputs' then outputs'
    /// extents) does; `None` where specialization does not apply (a static
    /// function, policy off, another lane, PTX). The first call at a
    /// bucket records its scalars; the second starts the build
    /// ([`Specializer::start_if_hot`]); a call finds it once built.
    pub(super) fn plan(
        &mut self,
        function: &str,
        shapes: &[i64],
        applies: bool,
    ) -> Option<Plan<'_>> {
        if !applies || shapes.is_empty() || self.policy == Specialization::Off {
            return None;
        }
        self.collect(false);
        let key = (function.to_string(), shapes.to_vec());
        let capped = self.per_function.get(function).copied().unwrap_or(0) >= MAX_BUCKETS;
        let plan = match self.buckets.get(&key) {
            Some(Some(bucket)) => {
                self.stats.specialized_calls += 1;
                return Some(Plan::Specialized(&bucket.kernels));
            }
            Some(None) => Plan::Generic,
            None if self.building.contains_key(&key) || capped => Plan::Generic,
            None => Plan::Record(key),
        };
        self.stats.generic_calls += 1;
        Some(plan)
    }

    /// Keeps the build options of bucket `key`'s first call, which
    /// `recording` saw: its second call starts the build. A bucket whose
    /// kernels take no scalar runs the generic kernels.
    pub(super) fn recorded(
        &mut self,
        kernel_names: &[String],
        key: BucketKey,
        recording: &Recording,
    ) {
        let defines = recording.defines(kernel_names);
        *self.per_function.entry(key.0.clone()).or_default() += 1;
        if defines.is_empty() {
            self.buckets.insert(key, None);
        } else {
            self.seen.insert(key, defines);
        }
    }

    /// Builds bucket `key` with `defines` on a thread of its own (here
    /// where no thread can be made).
    fn start(
        &mut self,
        key: BucketKey,
        defines: String,
        rt: Arc<RuntimeInner>,
        model: crate::Model,
    ) {
        let build = move || {
            let started = std::time::Instant::now();
            let bucket = build_bucket(&rt, model.artifact(), &defines);
            (bucket, started.elapsed().as_secs_f64())
        };
        let shared = Arc::new(std::sync::Mutex::new(Some(build)));
        let on_thread = shared.clone();
        let spawned = std::thread::Builder::new()
            .name("tcc-specialize".into())
            .spawn(move || {
                let build = on_thread.lock().ok().and_then(|mut b| b.take());
                match build {
                    Some(build) => build(),
                    None => (Err(Error::Unsupported("no build to run".into())), 0.0),
                }
            });
        match spawned {
            Ok(handle) => {
                self.building.insert(key, handle);
            }
            Err(_) => {
                let build = shared.lock().ok().and_then(|mut b| b.take());
                if let Some(build) = build {
                    let outcome = build();
                    self.finish(key, Ok(outcome));
                }
            }
        }
    }

    /// Takes the builds that have finished (all of them, waiting, with
    /// `wait`) into their buckets.
    pub(super) fn collect(&mut self, wait: bool) {
        let done: Vec<BucketKey> = self
            .building
            .iter()
            .filter(|(_, handle)| wait || handle.is_finished())
            .map(|(key, _)| key.clone())
            .collect();
        for key in done {
            if let Some(handle) = self.building.remove(&key) {
                let outcome = handle.join();
                self.finish(key, outcome);
            }
        }
    }

    /// Puts a finished build into its bucket; a failure (or a panic on
    /// its thread) is recorded, and the bucket runs the generic kernels.
    fn finish(&mut self, key: BucketKey, outcome: std::thread::Result<(Result<Bucket>, f64)>) {
        let failure = match outcome {
            Ok((built, seconds)) => {
                self.stats.build_seconds += seconds;
                match built {
                    Ok(bucket) => {
                        self.stats.programs += 1;
                        self.buckets.insert(key, Some(bucket));
                        return;
                    }
                    Err(e) => e.to_string(),
                }
            }
            Err(panic) => format!(
                "internal error (panic): {}",
                crate::error::panic_message(panic.as_ref())
            ),
        };
        self.stats.failures += 1;
        self.stats.last_failure = Some(format!("@{} at extents {:?}: {failure}", key.0, key.1));
        self.buckets.insert(key, None);
    }
}

/// The program of the artifact's OpenCL C with `defines` after its own
/// build options, and its kernels.
fn build_bucket(rt: &RuntimeInner, art: &Artifact, defines: &str) -> Result<Bucket> {
    let own = rt.build_options(&art.build_options);
    let options = if own.is_empty() {
        defines.to_string()
    } else {
        format!("{own} {defines}")
    };
    let source = ProgramSource {
        kind: SourceKind::OpenClC,
        bytes: &art.source,
        options: &options,
    };
    let (program, _) =
        rt.programs()
            .get_or_build(&rt.context, &rt.device, &source, art.prepared.as_ref())?;
    Ok(Bucket {
        kernels: kernel_slots(&program, art)?,
        _program: program,
    })
}

/// What one kernel was launched with in a recorded call.
#[derive(Clone, Debug, PartialEq)]
enum Launched {
    /// Its (argument position, value) scalars, the same at every launch.
    Scalars(Vec<(usize, i64)>),
    /// Two launches differed: it keeps its arguments.
    Differing,
}

/// The scalar arguments each kernel was launched with in one call.
pub(super) struct Recording {
    /// Per kernel index; `None`: not launched.
    kernels: Vec<Option<Launched>>,
}

impl Recording {
    pub(super) fn new(kernels: usize) -> Self {
        Recording {
            kernels: vec![None; kernels],
        }
    }

    /// Notes one launch of `kernel` with `args`.
    pub(super) fn note(&mut self, kernel: u32, args: &[abi::TccArg]) {
        let scalars: Vec<(usize, i64)> = args
            .iter()
            .enumerate()
            .filter_map(|(i, a)| {
                // SAFETY: the union member read is the one `kind` names.
                unsafe {
                    match a.kind {
                        abi::TCC_ARG_I32 => Some((i, i64::from(a.value.i32))),
                        abi::TCC_ARG_I64 => Some((i, a.value.i64)),
                        _ => None,
                    }
                }
            })
            .collect();
        let Some(slot) = self.kernels.get_mut(kernel as usize) else {
            return;
        };
        *slot = match slot.take() {
            None => Some(Launched::Scalars(scalars)),
            Some(Launched::Scalars(seen)) if seen == scalars => Some(Launched::Scalars(seen)),
            Some(_) => Some(Launched::Differing),
        };
    }

    /// The build options defining each recorded scalar, kernel by kernel:
    /// `-DTCC_ARG_matmul_0_5=3 ...`; empty where nothing is specialized.
    fn defines(&self, names: &[String]) -> String {
        let mut defines = Vec::new();
        for (kernel, recorded) in self.kernels.iter().enumerate() {
            let (Some(Launched::Scalars(scalars)), Some(name)) = (recorded, names.get(kernel))
            else {
                continue;
            };
            for &(argument, value) in scalars {
                defines.push(format!(
                    "-D{}={value}",
                    tcc_abi::symbolic::specialization_macro(name, argument)
                ));
            }
        }
        defines.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arg(kind: u32, value: i64) -> abi::TccArg {
        let value = match kind {
            abi::TCC_ARG_I32 => abi::TccArgValue { i32: value as i32 },
            abi::TCC_ARG_I64 => abi::TccArgValue { i64: value },
            _ => abi::TccArgValue {
                buffer: std::ptr::null_mut(),
            },
        };
        abi::TccArg {
            kind,
            reserved: 0,
            value,
        }
    }

    #[test]
    fn a_recording_defines_each_kernels_scalars_unless_its_launches_differ() {
        let names = ["gemm_0".to_string(), "loops_1".into(), "loops_2".into()];
        let mut r = Recording::new(3);
        let buffer = arg(abi::TCC_ARG_BUFFER, 0);
        r.note(
            0,
            &[buffer, arg(abi::TCC_ARG_I32, 3), arg(abi::TCC_ARG_I32, 768)],
        );
        r.note(
            0,
            &[buffer, arg(abi::TCC_ARG_I32, 3), arg(abi::TCC_ARG_I32, 768)],
        );
        // Launched twice with different extents: stays generic.
        r.note(1, &[buffer, arg(abi::TCC_ARG_I64, 3)]);
        r.note(1, &[buffer, arg(abi::TCC_ARG_I64, 4)]);
        // An index out of range is ignored (the launch itself fails).
        r.note(7, &[arg(abi::TCC_ARG_I32, 1)]);
        assert_eq!(
            r.defines(&names),
            "-DTCC_ARG_gemm_0_1=3 -DTCC_ARG_gemm_0_2=768"
        );
        assert_eq!(Recording::new(3).defines(&names), "");
    }

    #[test]
    fn the_policy_parses_and_past_the_cap_calls_stay_generic() {
        assert_eq!(
            "off".parse::<Specialization>().unwrap(),
            Specialization::Off
        );
        assert_eq!(
            "exact".parse::<Specialization>().unwrap(),
            Specialization::Exact
        );
        let e = "pow2".parse::<Specialization>().unwrap_err().to_string();
        assert!(e.contains("expected off or exact"), "{e}");
        let mut s = Specializer::default();
        let plan =
            |s: &mut Specializer, shapes: &[i64], applies| match s.plan("main", shapes, applies) {
                None => "none",
                Some(Plan::Record(_)) => "record",
                Some(Plan::Generic) => "generic",
                Some(Plan::Specialized(_)) => "specialized",
            };
        // Static functions, other lanes: not planned.
        assert_eq!(plan(&mut s, &[], true), "none");
        assert_eq!(plan(&mut s, &[3, 32], false), "none");
        // Recorded until a call's recording is kept.
        assert_eq!(plan(&mut s, &[3, 32], true), "record");
        assert_eq!(plan(&mut s, &[3, 32], true), "record");
        // A bucket whose kernels take no scalar stays generic.
        s.recorded(&[], ("main".into(), vec![3, 32]), &Recording::new(1));
        assert_eq!(plan(&mut s, &[3, 32], true), "generic");
        // Past the cap, a new shape is not recorded.
        s.per_function.insert("main".into(), MAX_BUCKETS);
        assert_eq!(plan(&mut s, &[5, 32], true), "generic");
        s.policy = Specialization::Off;
        assert_eq!(plan(&mut s, &[3, 32], true), "none");
        assert_eq!(s.stats.generic_calls, 4);
        assert_eq!(s.stats.specialized_calls, 0);
    }
}
