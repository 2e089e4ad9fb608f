//! Timelines of a session's calls, and their export as a Chrome/Perfetto
//! trace (the Trace Event Format JSON that chrome://tracing and
//! ui.perfetto.dev open): `tcc-benchmark --trace=FILE.json`.
//!
//! A session records a timeline when asked ([`crate::Session::record_timeline`],
//! [`crate::CudaSession::record_timeline`]; profiling must be on). Each
//! recorded call keeps its host span (from entering `run` to returning)
//! and every command it put on the device: kernel launches, uploads of
//! inputs and constants, downloads of outputs, device-to-device copies and
//! fills, with their byte counts. Device times come from the backend's
//! profiling: OpenCL events (`CL_PROFILING_COMMAND_{QUEUED,START,END}`)
//! or CUDA events (elapsed time from an event recorded when the call
//! starts). Both are placed on the host's clock:
//! - OpenCL: the host notes the time right after enqueueing each
//!   command; the command's `QUEUED` stamp was taken before that on the
//!   device's clock, so `host - queued` bounds the clocks' offset from
//!   above, and the smallest such bound of a call is its offset.
//! - CUDA: the event recorded at the call's start (on an idle stream)
//!   is taken as the host's time of recording it; synchronous copies
//!   (`cuMemcpyHtoD`/`DtoH`) are timed on the host.
//!
//! Either way nothing of a call is placed before the call's host start.
//! The host track shows each call and its *host gaps*: the stretches of
//! the call in which the device ran nothing (the host checking inputs,
//! enqueueing, launching, waiting for results). Gaps under a microsecond
//! are left out.

use std::time::Instant;

use serde_json::{Value, json};

/// What a device command did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommandKind {
    /// A kernel launch (the kernel's index in the artifact).
    Kernel(usize),
    /// Host to device: a call's input.
    Upload,
    /// Host to device: a constant (its index), on its first use.
    ConstantUpload(u32),
    /// Device to host: a call's output.
    Download,
    /// An output used in place, mapped for the host to read (no copy on a
    /// host-memory device).
    Map,
    /// Device to device.
    Copy,
    /// A buffer set to a byte value (all-zero constants on CUDA).
    Fill,
}

impl CommandKind {
    /// The trace's category of the command.
    pub fn category(self) -> &'static str {
        match self {
            CommandKind::Kernel(_) => "kernel",
            CommandKind::Upload | CommandKind::ConstantUpload(_) => "upload",
            CommandKind::Download => "download",
            CommandKind::Map => "map",
            CommandKind::Copy => "copy",
            CommandKind::Fill => "fill",
        }
    }
}

/// One command of a recorded call, on the host's clock (nanoseconds since
/// the timeline's origin).
#[derive(Clone, Debug, PartialEq)]
pub struct Command {
    pub kind: CommandKind,
    /// Bytes moved (transfers, copies, fills).
    pub bytes: Option<u64>,
    pub start_ns: u64,
    pub end_ns: u64,
}

/// One recorded call.
#[derive(Clone, Debug, PartialEq)]
pub struct CallRecord {
    /// The session's call count when the call started (0: its first).
    pub index: u64,
    pub function: String,
    pub start_ns: u64,
    pub end_ns: u64,
    /// In start order.
    pub commands: Vec<Command>,
}

impl CallRecord {
    /// The stretches of the call in which the device ran none of its
    /// commands, as (start, end), each at least `min_ns` long.
    pub fn host_gaps(&self, min_ns: u64) -> Vec<(u64, u64)> {
        let mut busy: Vec<(u64, u64)> = self
            .commands
            .iter()
            .map(|c| (c.start_ns.max(self.start_ns), c.end_ns.min(self.end_ns)))
            .filter(|(s, e)| e > s)
            .collect();
        busy.sort_unstable();
        let mut gaps = Vec::new();
        let mut at = self.start_ns;
        for (s, e) in busy {
            if s > at && s - at >= min_ns {
                gaps.push((at, s));
            }
            at = at.max(e);
        }
        if self.end_ns > at && self.end_ns - at >= min_ns {
            gaps.push((at, self.end_ns));
        }
        gaps
    }

    /// Nanoseconds in which at least one of the call's commands ran.
    pub fn device_busy_ns(&self) -> u64 {
        let span = self.end_ns.saturating_sub(self.start_ns);
        let idle: u64 = self.host_gaps(0).iter().map(|(s, e)| e - s).sum();
        span.saturating_sub(idle)
    }
}

/// The recorded calls of one session.
#[derive(Clone, Debug, PartialEq)]
pub struct Timeline {
    /// `OpenCL queue` or `CUDA stream`: the device track's name.
    pub queue: String,
    /// The device's name.
    pub device: String,
    /// The artifact's kernel names and flops per launch (0: not counted),
    /// by kernel index.
    pub kernel_names: Vec<String>,
    pub kernel_flops: Vec<u64>,
    pub calls: Vec<CallRecord>,
    /// Calls made after the recording's limit was reached (not recorded).
    pub calls_not_recorded: u64,
}

/// Gaps shorter than this (nanoseconds) are not shown.
const MIN_GAP_NS: u64 = 1_000;

/// What the trace says about where it came from.
#[derive(Clone, Debug, Default)]
pub struct TraceInfo {
    /// The process track's name, e.g. `tcc-benchmark model.so`.
    pub process: String,
    /// Calls recorded before the measurement (labelled `warm-up`).
    pub warmup_calls: u64,
    /// Extra entries of the trace's `otherData`.
    pub other: serde_json::Map<String, Value>,
}

impl Timeline {
    /// The timeline as a Chrome trace: metadata naming the process and
    /// its two tracks (tid 1 the host, tid 2 the queue or stream), then
    /// complete (`X`) events sorted by start (an enclosing event before
    /// what it encloses): each call and its host gaps on the host track,
    /// each command on the device track, with the call index, bytes and
    /// flops in `args`. Times in microseconds from the first call.
    pub fn chrome_trace(&self, info: &TraceInfo) -> Value {
        let origin = self.calls.iter().map(|c| c.start_ns).min().unwrap_or(0);
        let us = |ns: u64| (ns.saturating_sub(origin)) as f64 / 1e3;
        let dur = |start: u64, end: u64| end.saturating_sub(start) as f64 / 1e3;
        // (start ns, duration ns, event) for sorting.
        let mut timed: Vec<(u64, u64, Value)> = Vec::new();
        for call in &self.calls {
            let warmup = call.index < info.warmup_calls;
            let gaps = call.host_gaps(MIN_GAP_NS);
            let gap_ns: u64 = gaps.iter().map(|(s, e)| e - s).sum();
            let name = format!(
                "@{} call {}{}",
                call.function,
                call.index,
                if warmup { " (warm-up)" } else { "" }
            );
            timed.push((
                call.start_ns,
                call.end_ns.saturating_sub(call.start_ns),
                json!({
                    "name": name, "cat": "call", "ph": "X", "pid": 1, "tid": 1,
                    "ts": us(call.start_ns), "dur": dur(call.start_ns, call.end_ns),
                    "args": {
                        "call": call.index, "function": call.function, "warmup": warmup,
                        "commands": call.commands.len(),
                        "device_busy_us": call.device_busy_ns() as f64 / 1e3,
                        "host_gap_us": gap_ns as f64 / 1e3,
                    },
                }),
            ));
            for (s, e) in gaps {
                timed.push((
                    s,
                    e - s,
                    json!({
                        "name": "host gap", "cat": "host", "ph": "X", "pid": 1, "tid": 1,
                        "ts": us(s), "dur": dur(s, e),
                        "args": { "call": call.index, "note": "the device runs nothing of this call" },
                    }),
                ));
            }
            for c in &call.commands {
                let mut args = serde_json::Map::new();
                args.insert("call".into(), json!(call.index));
                let name = match c.kind {
                    CommandKind::Kernel(k) => {
                        args.insert("kernel_index".into(), json!(k));
                        let flops = self.kernel_flops.get(k).copied().unwrap_or(0);
                        if flops > 0 {
                            args.insert("flops".into(), json!(flops));
                            if c.end_ns > c.start_ns {
                                let gflops = flops as f64 / (c.end_ns - c.start_ns) as f64;
                                args.insert("gflops".into(), json!(gflops));
                            }
                        }
                        self.kernel_names
                            .get(k)
                            .cloned()
                            .unwrap_or_else(|| format!("kernel {k}"))
                    }
                    CommandKind::ConstantUpload(i) => {
                        args.insert("constant".into(), json!(i));
                        format!("upload constant {i}")
                    }
                    kind => kind.category().to_string(),
                };
                if let Some(bytes) = c.bytes {
                    args.insert("bytes".into(), json!(bytes));
                }
                timed.push((
                    c.start_ns,
                    c.end_ns.saturating_sub(c.start_ns),
                    json!({
                        "name": name, "cat": c.kind.category(), "ph": "X", "pid": 1, "tid": 2,
                        "ts": us(c.start_ns), "dur": dur(c.start_ns, c.end_ns),
                        "args": args,
                    }),
                ));
            }
        }
        // Longer first at equal starts, so that a call encloses its gap.
        timed.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        let meta = |name: &str, tid: Option<u32>, args: Value| {
            let mut e = json!({ "name": name, "ph": "M", "pid": 1, "args": args });
            if let Some(tid) = tid {
                e["tid"] = json!(tid);
            }
            e
        };
        let mut events = vec![
            meta("process_name", None, json!({ "name": info.process })),
            meta("thread_name", Some(1), json!({ "name": "host" })),
            meta(
                "thread_name",
                Some(2),
                json!({ "name": format!("{} ({})", self.queue, self.device) }),
            ),
            meta("thread_sort_index", Some(1), json!({ "sort_index": 0 })),
            meta("thread_sort_index", Some(2), json!({ "sort_index": 1 })),
        ];
        events.extend(timed.into_iter().map(|(_, _, e)| e));
        let mut other = info.other.clone();
        other.insert("tool".into(), json!(crate::version_string()));
        other.insert("device".into(), json!(self.device));
        other.insert("calls_recorded".into(), json!(self.calls.len()));
        other.insert("calls_not_recorded".into(), json!(self.calls_not_recorded));
        other.insert("warmup_calls".into(), json!(info.warmup_calls));
        json!({
            "traceEvents": events,
            "displayTimeUnit": "ms",
            "otherData": other,
        })
    }
}

/// A command whose device times are known once the queue has run it.
pub(crate) enum PendingTime<E> {
    /// Timed by the device (an OpenCL event, or a CUDA event pair).
    Device(E),
    /// Timed on the host (a synchronous copy): start and end.
    Host(Instant, Instant),
}

/// A session's recording: the calls so far and the one in progress.
pub(crate) struct Recorder {
    origin: Instant,
    limit: usize,
    calls: Vec<CallRecord>,
    not_recorded: u64,
    /// The session's calls since recording started.
    next_index: u64,
    /// The call in progress, when it is recorded: its index, function and
    /// host start.
    open: Option<(u64, String, Instant)>,
}

impl Recorder {
    /// Records up to `limit` calls.
    pub(crate) fn new(limit: usize) -> Self {
        Recorder {
            origin: Instant::now(),
            limit,
            calls: Vec::new(),
            not_recorded: 0,
            next_index: 0,
            open: None,
        }
    }

    /// Nanoseconds of `t` since the origin.
    pub(crate) fn ns(&self, t: Instant) -> u64 {
        t.saturating_duration_since(self.origin).as_nanos() as u64
    }

    /// A call of `function` starts now; whether it is recorded.
    pub(crate) fn begin(&mut self, function: &str) -> bool {
        let index = self.next_index;
        self.next_index += 1;
        if self.calls.len() >= self.limit {
            self.not_recorded += 1;
            self.open = None;
            return false;
        }
        self.open = Some((index, function.to_string(), Instant::now()));
        true
    }

    /// Whether a recorded call is in progress.
    pub(crate) fn recording(&self) -> bool {
        self.open.is_some()
    }

    /// The recorded call in progress ends now with `commands` (host-clock
    /// nanoseconds, in any order): they are sorted, and moved later as a
    /// whole if the first started before the call did (a clock mapping's
    /// error).
    pub(crate) fn end(&mut self, mut commands: Vec<Command>) {
        let Some((index, function, started)) = self.open.take() else {
            return;
        };
        let start_ns = self.ns(started);
        let end_ns = self.ns(Instant::now()).max(start_ns);
        commands.sort_by_key(|c| (c.start_ns, c.end_ns));
        if let Some(first) = commands.first()
            && first.start_ns < start_ns
        {
            let shift = start_ns - first.start_ns;
            for c in &mut commands {
                c.start_ns += shift;
                c.end_ns += shift;
            }
        }
        for c in &mut commands {
            c.end_ns = c.end_ns.max(c.start_ns);
        }
        self.calls.push(CallRecord {
            index,
            function,
            start_ns,
            end_ns,
            commands,
        });
    }

    /// The recording as a timeline.
    pub(crate) fn finish(self, queue: &str, device: &str, model: &crate::Model) -> Timeline {
        Timeline {
            queue: queue.to_string(),
            device: device.to_string(),
            kernel_names: model.kernel_names().to_vec(),
            kernel_flops: model.kernel_flops().to_vec(),
            calls: self.calls,
            calls_not_recorded: self.not_recorded,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command(kind: CommandKind, start_ns: u64, end_ns: u64) -> Command {
        Command {
            kind,
            bytes: None,
            start_ns,
            end_ns,
        }
    }

    #[test]
    fn host_gaps_are_the_call_minus_the_device_work() {
        let call = CallRecord {
            index: 0,
            function: "f".into(),
            start_ns: 1_000,
            end_ns: 20_000,
            commands: vec![
                command(CommandKind::Upload, 3_000, 4_000),
                command(CommandKind::Kernel(0), 4_000, 9_000),
                // Overlapping work counts once.
                command(CommandKind::Kernel(1), 8_000, 10_000),
                command(CommandKind::Download, 10_500, 19_500),
            ],
        };
        assert_eq!(
            call.host_gaps(0),
            [(1_000, 3_000), (10_000, 10_500), (19_500, 20_000)]
        );
        assert_eq!(call.host_gaps(1_000), [(1_000, 3_000)]);
        assert_eq!(call.device_busy_ns(), 1_000 + 6_000 + 9_000);
    }

    #[test]
    fn the_trace_is_sorted_with_calls_before_their_gaps() {
        let timeline = Timeline {
            queue: "OpenCL queue".into(),
            device: "cpu".into(),
            kernel_names: vec!["mm".into()],
            kernel_flops: vec![2_000],
            calls: vec![CallRecord {
                index: 0,
                function: "f".into(),
                start_ns: 5_000,
                end_ns: 15_000,
                commands: vec![Command {
                    kind: CommandKind::Kernel(0),
                    bytes: None,
                    start_ns: 7_000,
                    end_ns: 9_000,
                }],
            }],
            calls_not_recorded: 0,
        };
        let trace = timeline.chrome_trace(&TraceInfo {
            process: "p".into(),
            warmup_calls: 1,
            ..Default::default()
        });
        let events = trace["traceEvents"].as_array().unwrap();
        let timed: Vec<&Value> = events.iter().filter(|e| e["ph"] == "X").collect();
        let names: Vec<&str> = timed.iter().map(|e| e["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["@f call 0 (warm-up)", "host gap", "mm", "host gap"]);
        assert_eq!(timed[0]["ts"], 0.0);
        assert_eq!(timed[2]["ts"], 2.0);
        assert_eq!(timed[2]["dur"], 2.0);
        assert_eq!(timed[2]["args"]["flops"], 2_000);
        assert_eq!(timed[2]["args"]["gflops"], 1.0);
        assert_eq!(timed[0]["args"]["device_busy_us"], 2.0);
    }
}
