//! Throughput measurement for `tcc-benchmark --concurrency=N
//! --in-flight=K` (and several devices, `--device=all`, or CPU parts,
//! `--cpu-partition=N`).
//!
//! `N` threads each serve the model from sessions of their own, keeping
//! up to `K` asynchronous calls ([`crate::Session::submit`]) in flight: a
//! thread submits, and once `K` calls are out waits for the oldest. Every
//! call uploads its inputs (`submit_ref`: copied into pinned staging on a
//! GPU, or written from the caller's tensor above the staging limit; used
//! in place on a CPU) and reads its outputs back into blocks recycled from
//! the thread's earlier calls ([`crate::Session::recycle`], as the
//! synchronous loop of `tcc-benchmark` does; `fresh_outputs` drops them). Threads are
//! given devices so that each device serves: with `N` at least the number
//! of devices `D`, thread `t` uses device `t mod D` alone (so with
//! `--cpu-partition` each concurrent session has its own cores); with
//! fewer threads, thread `t` sends its calls round robin to devices `t,
//! t+N, t+2N, ...`. With `split`, every call is one batch split across all
//! the devices instead ([`crate::GroupSession::run_split`]), one at a
//! time per thread.
//!
//! Latency is from `submit` to the end of `wait`; throughput is all
//! threads' calls divided by the wall time from the moment every thread
//! finished its warm-up to the moment the last one finished.

use std::sync::{Arc, Barrier, Mutex, PoisonError};
use std::time::Instant;

use serde::Serialize;

use crate::Model;
use crate::cli::LatencyStats;
use crate::devices::{DeviceGroup, GroupSession};
use crate::error::{Error, Result};
use crate::tensor::HostTensor;

/// What to measure.
#[derive(Clone, Debug)]
pub struct ThroughputOptions {
    /// Threads, each with its own sessions.
    pub concurrency: usize,
    /// Calls each thread keeps in flight.
    pub in_flight: usize,
    /// Untimed calls per thread first.
    pub warmup: usize,
    /// Timed calls per thread.
    pub iterations: usize,
    /// Each call is a batch split across every device.
    pub split: bool,
    /// Each session runs its kernels on a compute queue of its own
    /// ([`crate::Session::set_own_queue`]), so that the sessions of one
    /// device can run kernels at the same time.
    pub own_queues: bool,
    /// Drop each call's outputs instead of handing them back to the
    /// session that made them ([`crate::Session::recycle`]): every call
    /// then writes fresh host memory, page faults included.
    pub fresh_outputs: bool,
}

/// What was measured.
#[derive(Clone, Debug, Serialize)]
pub struct ThroughputReport {
    pub calls: u64,
    pub seconds: f64,
    pub calls_per_second: f64,
    /// Calls each device ran (whole calls; split calls count once per part).
    pub calls_per_device: Vec<u64>,
    /// Per model served (`jobs` order): its calls and the seconds until
    /// its last thread finished.
    pub per_model: Vec<ModelThroughput>,
    /// With `split`: per part, when its submission began and ended in
    /// milliseconds from the start of its call, averaged over the timed
    /// calls of every thread (how late the host let each device start).
    pub split_part_submissions_ms: Vec<[f64; 2]>,
    #[serde(skip)]
    pub latency_ms: LatencyStats,
}

/// One model's share of a measurement.
#[derive(Clone, Debug, Serialize)]
pub struct ModelThroughput {
    pub model: String,
    pub calls: u64,
    pub seconds: f64,
    pub calls_per_second: f64,
}

/// The devices thread `t` of `threads` serves from, out of `devices`.
pub fn devices_for_thread(t: usize, threads: usize, devices: usize) -> Vec<usize> {
    if threads >= devices {
        vec![t % devices]
    } else {
        (0..devices).filter(|d| d % threads == t).collect()
    }
}

/// One model to serve: thread `t` serves job `t mod jobs`.
#[derive(Clone, Debug)]
pub struct Job {
    pub model: Model,
    pub function: String,
    pub inputs: Vec<HostTensor>,
}

/// Runs the measurement for one model. Sessions are created (and their
/// programs built) before any timing, one after another.
pub fn measure(
    group: &DeviceGroup,
    model: &Model,
    function: &str,
    inputs: &[HostTensor],
    options: &ThroughputOptions,
) -> Result<ThroughputReport> {
    let job = Job {
        model: model.clone(),
        function: function.to_string(),
        inputs: inputs.to_vec(),
    };
    measure_jobs(group, std::slice::from_ref(&job), options)
}

/// Runs the measurement with several models served at once: thread `t`
/// serves `jobs[t mod jobs.len()]` (`tcc-benchmark --with-model`).
pub fn measure_jobs(
    group: &DeviceGroup,
    jobs: &[Job],
    options: &ThroughputOptions,
) -> Result<ThroughputReport> {
    if jobs.is_empty() {
        return Err(Error::InvalidInput("nothing to measure".into()));
    }
    if options.concurrency == 0 || options.in_flight == 0 || options.iterations == 0 {
        return Err(Error::InvalidInput(
            "--concurrency, --in-flight and --iterations must be at least 1".into(),
        ));
    }
    if options.split && options.in_flight > 1 {
        return Err(Error::InvalidInput(
            "a split call already has its parts in flight at once on every device: use --in-flight=1 with --split".into(),
        ));
    }
    let n = group.len();
    let mut sessions: Vec<(GroupSession, Vec<usize>, &Job)> =
        Vec::with_capacity(options.concurrency);
    for t in 0..options.concurrency {
        let job = &jobs[t % jobs.len()];
        let ids = if options.split {
            (0..n).collect()
        } else {
            devices_for_thread(t, options.concurrency, n)
        };
        let sub =
            DeviceGroup::from_runtimes(ids.iter().map(|&i| group.runtimes()[i].clone()).collect())?;
        let mut gs = sub.session(&job.model)?;
        // A split call's parts on one device are all in flight at once:
        // their sessions keep the default depth.
        if !options.split {
            gs.set_max_in_flight(options.in_flight);
        }
        gs.set_own_queue(options.own_queues)?;
        sessions.push((gs, ids, job));
    }
    let latency = Arc::new(Mutex::new(LatencyStats::default()));
    let counts = Arc::new(Mutex::new(vec![0u64; n]));
    let split_sums = Arc::new(Mutex::new(SplitSums::default()));
    let barrier = Arc::new(Barrier::new(options.concurrency + 1));
    let (results, seconds) = std::thread::scope(|scope| {
        let handles: Vec<_> = sessions
            .into_iter()
            .map(|(mut gs, ids, job)| {
                let (function, inputs) = (job.function.as_str(), job.inputs.as_slice());
                let (latency, counts, barrier) = (latency.clone(), counts.clone(), barrier.clone());
                let split_sums = split_sums.clone();
                scope.spawn(move || -> Result<f64> {
                    let mut ready = Ok(());
                    for _ in 0..options.warmup {
                        let r = if options.split {
                            gs.run_split(function, inputs).map(drop)
                        } else {
                            gs.run(function, inputs).map(drop)
                        };
                        if let Err(e) = r {
                            ready = Err(e);
                            break;
                        }
                    }
                    barrier.wait();
                    let started = Instant::now();
                    ready?;
                    let shared = Shared {
                        latency: &latency,
                        counts: &counts,
                        split_sums: &split_sums,
                    };
                    serve(&mut gs, &ids, function, inputs, options, &shared)?;
                    Ok(started.elapsed().as_secs_f64())
                })
            })
            .collect();
        barrier.wait();
        let started = Instant::now();
        let out: Vec<Result<f64>> = handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(Error::InvalidInput("a benchmark thread panicked".into()))
                })
            })
            .collect();
        (out, started.elapsed().as_secs_f64())
    });
    let mut per_model: Vec<ModelThroughput> = jobs
        .iter()
        .map(|j| ModelThroughput {
            model: j.model.path().display().to_string(),
            calls: 0,
            seconds: 0.0,
            calls_per_second: 0.0,
        })
        .collect();
    for (t, r) in results.into_iter().enumerate() {
        let thread_seconds = r?;
        let m = &mut per_model[t % jobs.len()];
        m.calls += options.iterations as u64;
        m.seconds = m.seconds.max(thread_seconds);
    }
    for m in &mut per_model {
        if m.seconds > 0.0 {
            m.calls_per_second = m.calls as f64 / m.seconds;
        }
    }
    let per_device = counts
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    let calls = (options.concurrency * options.iterations) as u64;
    let latency_ms = latency
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    Ok(ThroughputReport {
        calls,
        seconds,
        calls_per_second: if seconds > 0.0 {
            calls as f64 / seconds
        } else {
            0.0
        },
        calls_per_device: per_device,
        per_model,
        split_part_submissions_ms: split_sums
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .means(),
        latency_ms,
    })
}

/// Sums of split calls' part submission times (ms), for their means.
#[derive(Default)]
struct SplitSums {
    calls: u64,
    parts: Vec<[f64; 2]>,
}

impl SplitSums {
    fn add(&mut self, parts: &[(std::time::Duration, std::time::Duration)]) {
        if self.parts.len() < parts.len() {
            self.parts.resize(parts.len(), [0.0; 2]);
        }
        for (sum, (begin, end)) in self.parts.iter_mut().zip(parts) {
            sum[0] += begin.as_secs_f64() * 1e3;
            sum[1] += end.as_secs_f64() * 1e3;
        }
        self.calls += 1;
    }

    fn means(&self) -> Vec<[f64; 2]> {
        let n = self.calls.max(1) as f64;
        self.parts.iter().map(|[a, b]| [a / n, b / n]).collect()
    }
}

/// What the threads of one measurement add to.
struct Shared<'a> {
    latency: &'a Mutex<LatencyStats>,
    counts: &'a Mutex<Vec<u64>>,
    split_sums: &'a Mutex<SplitSums>,
}

/// One thread's timed calls.
fn serve(
    gs: &mut GroupSession,
    ids: &[usize],
    function: &str,
    inputs: &[HostTensor],
    options: &ThroughputOptions,
    shared: &Shared<'_>,
) -> Result<()> {
    let Shared {
        latency,
        counts,
        split_sums,
    } = shared;
    let record = |start: Instant| {
        latency
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(start.elapsed().as_secs_f64() * 1e3);
    };
    if options.split {
        for _ in 0..options.iterations {
            let start = Instant::now();
            gs.run_split(function, inputs)?;
            record(start);
            split_sums
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .add(gs.last_split_submissions());
        }
        let mut c = counts.lock().unwrap_or_else(PoisonError::into_inner);
        for &i in ids {
            c[i] += options.iterations as u64;
        }
        return Ok(());
    }
    let mut local = vec![0u64; ids.len()];
    let mut window = std::collections::VecDeque::with_capacity(options.in_flight);
    // Waits for the oldest call; its outputs go back to its session for a
    // later call to write into (as the synchronous loop does), unless
    // `fresh_outputs`.
    let mut finish = |gs: &mut GroupSession,
                      (start, slot, mut h): (Instant, Option<usize>, crate::CallHandle)|
     -> Result<()> {
        let outputs = h.wait()?;
        record(start);
        if let Some(k) = slot {
            local[k] += 1;
            if !options.fresh_outputs {
                gs.sessions_mut()[k].recycle(outputs);
            }
        }
        Ok(())
    };
    for _ in 0..options.iterations {
        let start = Instant::now();
        let h = gs.submit_ref(function, inputs)?;
        // Which of this thread's devices took the call.
        let slot = gs
            .sessions()
            .iter()
            .position(|s| Arc::ptr_eq(&s.runtime().inner, h.runtime_inner()));
        window.push_back((start, slot, h));
        if window.len() >= options.in_flight
            && let Some(oldest) = window.pop_front()
        {
            finish(gs, oldest)?;
        }
    }
    while let Some(oldest) = window.pop_front() {
        finish(gs, oldest)?;
    }
    let mut c = counts.lock().unwrap_or_else(PoisonError::into_inner);
    for (k, &i) in ids.iter().enumerate() {
        c[i] += local[k];
    }
    Ok(())
}
