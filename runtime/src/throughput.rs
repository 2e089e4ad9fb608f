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
//! time per thread. The warm-up goes through the same window as the timed
//! calls (at least `K` calls), so every slot's buffers exist before the
//! timing, which reports what the driver still allocated during it and
//! the host time spent in `submit` and `wait`.
//!
//! Latency is from `submit` to the end of `wait`; throughput is all
//! threads' calls divided by the wall time from the moment every thread
//! finished its warm-up to the moment the last one finished.

use std::sync::{Arc, Barrier, Mutex, PoisonError};
use std::time::Instant;

use serde::Serialize;

use crate::cli::LatencyStats;
use crate::devices::{DeviceGroup, GroupSession};
use crate::error::{Error, Result};
use crate::tensor::HostTensor;
use crate::{ComputeQueues, Model, PoolStats, StagingStats};

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
    /// The compute queues of each session's calls
    /// ([`crate::Session::set_compute_queues`]): with queues of their own,
    /// the calls of one session, or of several, run kernels at the same
    /// time.
    pub compute_queues: ComputeQueues,
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
    /// Pinned staging buffers and device buffers the driver allocated
    /// during the timed calls (after the warm-up): 0 in a steady state.
    pub timed_allocations: TimedAllocations,
    /// Mean host time per call inside `submit` (staging copies, enqueuing,
    /// waiting for a free slot) and inside `wait` (the device, copies out
    /// of staging), in milliseconds.
    pub submit_ms_mean: f64,
    pub wait_ms_mean: f64,
    /// Own compute queues per session (0: the runtime's queue).
    pub compute_queues_per_session: usize,
    /// With `split`: per part, when its submission began and ended in
    /// milliseconds from the start of its call, averaged over the timed
    /// calls of every thread (how late the host let each device start).
    pub split_part_submissions_ms: Vec<[f64; 2]>,
    #[serde(skip)]
    pub latency_ms: LatencyStats,
}

/// What the driver allocated during the timed calls, summed over devices.
#[derive(Clone, Debug, Default, Serialize)]
pub struct TimedAllocations {
    pub staging_buffers: u64,
    pub staging_bytes: u64,
    pub device_buffers: u64,
    pub device_bytes: u64,
}

impl TimedAllocations {
    /// The runtimes' pinned staging and buffer pool counters now.
    fn snapshot(group: &DeviceGroup) -> Vec<(StagingStats, PoolStats)> {
        group
            .runtimes()
            .iter()
            .map(|r| (r.staging_stats(), r.pool_stats()))
            .collect()
    }

    fn since(before: &[(StagingStats, PoolStats)], after: &[(StagingStats, PoolStats)]) -> Self {
        let mut t = TimedAllocations::default();
        for ((s0, p0), (s1, p1)) in before.iter().zip(after) {
            t.staging_buffers += s1.allocations.saturating_sub(s0.allocations);
            t.staging_bytes += s1.current_bytes.saturating_sub(s0.current_bytes);
            t.device_buffers += p1.allocations.saturating_sub(p0.allocations);
            t.device_bytes += p1.current_bytes.saturating_sub(p0.current_bytes);
        }
        t
    }
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
        gs.set_compute_queues(options.compute_queues)?;
        sessions.push((gs, ids, job));
    }
    let latency = Arc::new(Mutex::new(LatencyStats::default()));
    let counts = Arc::new(Mutex::new(vec![0u64; n]));
    let split_sums = Arc::new(Mutex::new(SplitSums::default()));
    let compute_queues_per_session = sessions
        .first()
        .and_then(|(gs, _, _)| gs.sessions().first())
        .map_or(0, |s| s.compute_queue_count());
    // Every thread's warm-up is over at the first barrier; the timing and
    // the allocation counts start before the second.
    let warmed = Arc::new(Barrier::new(options.concurrency + 1));
    let barrier = Arc::new(Barrier::new(options.concurrency + 1));
    let host_sums = Arc::new(Mutex::new([0.0f64; 2]));
    let (results, seconds, timed_allocations) = std::thread::scope(|scope| {
        let handles: Vec<_> = sessions
            .into_iter()
            .map(|(mut gs, ids, job)| {
                let (function, inputs) = (job.function.as_str(), job.inputs.as_slice());
                let (latency, counts, barrier) = (latency.clone(), counts.clone(), barrier.clone());
                let (split_sums, warmed, host_sums) =
                    (split_sums.clone(), warmed.clone(), host_sums.clone());
                scope.spawn(move || -> Result<f64> {
                    let ready = warm_up(&mut gs, function, inputs, options);
                    warmed.wait();
                    barrier.wait();
                    let started = Instant::now();
                    ready?;
                    let shared = Shared {
                        latency: &latency,
                        counts: &counts,
                        split_sums: &split_sums,
                        host_sums: &host_sums,
                    };
                    serve(
                        &mut gs,
                        &ids,
                        function,
                        inputs,
                        options,
                        options.iterations,
                        &shared,
                    )?;
                    Ok(started.elapsed().as_secs_f64())
                })
            })
            .collect();
        warmed.wait();
        let before = TimedAllocations::snapshot(group);
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
        let seconds = started.elapsed().as_secs_f64();
        (
            out,
            seconds,
            TimedAllocations::since(&before, &TimedAllocations::snapshot(group)),
        )
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
    let host_ms = *host_sums.lock().unwrap_or_else(PoisonError::into_inner);
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
        timed_allocations,
        submit_ms_mean: host_ms[0] / calls.max(1) as f64,
        wait_ms_mean: host_ms[1] / calls.max(1) as f64,
        compute_queues_per_session,
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
    /// Milliseconds spent in `submit` and in `wait`, summed.
    host_sums: &'a Mutex<[f64; 2]>,
}

/// A thread's untimed calls: split calls one at a time, or asynchronous
/// calls through the same window as the timed ones and at least
/// `in_flight` of them, so that every slot's device buffers, pinned
/// staging and output blocks exist before the timing starts (a 64 MiB
/// pinned buffer costs milliseconds to allocate and map).
fn warm_up(
    gs: &mut GroupSession,
    function: &str,
    inputs: &[HostTensor],
    options: &ThroughputOptions,
) -> Result<()> {
    if options.split {
        for _ in 0..options.warmup {
            gs.run_split(function, inputs)?;
        }
        return Ok(());
    }
    let calls = if options.warmup == 0 {
        0
    } else {
        options.warmup.max(options.in_flight)
    };
    let ids: Vec<usize> = (0..gs.sessions().len()).collect();
    let (latency, split_sums) = Default::default();
    let counts = Mutex::new(vec![0; ids.len()]);
    let host_sums = Mutex::new([0.0; 2]);
    let untimed = Shared {
        latency: &latency,
        counts: &counts,
        split_sums: &split_sums,
        host_sums: &host_sums,
    };
    serve(gs, &ids, function, inputs, options, calls, &untimed)
}

/// One thread's timed calls.
fn serve(
    gs: &mut GroupSession,
    ids: &[usize],
    function: &str,
    inputs: &[HostTensor],
    options: &ThroughputOptions,
    iterations: usize,
    shared: &Shared<'_>,
) -> Result<()> {
    let Shared {
        latency,
        counts,
        split_sums,
        host_sums,
    } = shared;
    let record = |start: Instant| {
        latency
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(start.elapsed().as_secs_f64() * 1e3);
    };
    let host = |k: usize, since: Instant| {
        host_sums.lock().unwrap_or_else(PoisonError::into_inner)[k] +=
            since.elapsed().as_secs_f64() * 1e3;
    };
    if options.split {
        for _ in 0..iterations {
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
            c[i] += iterations as u64;
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
        let waiting = Instant::now();
        let outputs = h.wait()?;
        host(1, waiting);
        record(start);
        if let Some(k) = slot {
            local[k] += 1;
            if !options.fresh_outputs {
                gs.sessions_mut()[k].recycle(outputs);
            }
        }
        Ok(())
    };
    for _ in 0..iterations {
        let start = Instant::now();
        let h = gs.submit_ref(function, inputs)?;
        host(0, start);
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
