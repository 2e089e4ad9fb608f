//! Throughput: asynchronous calls from one or more threads, on one or
//! several devices (`tcc_runtime::throughput`), throughput next to
//! latency.

use std::io::Write;

use serde_json::json;
use tcc_runtime::Model;
use tcc_runtime::cli::{self, format_bytes};

use crate::{Args, host_io_text};

/// `--concurrency`, `--in-flight`, several devices, `--cpu-partition` or
/// `--split`: asynchronous calls from one or more threads
/// (`tcc_runtime::throughput`), throughput next to latency.
pub(crate) fn measure(args: &Args, model: &Model, function: &str) -> anyhow::Result<()> {
    let signature = model.function(function)?;
    let tensors = if args.call.inputs.is_empty() {
        crate::inputs(args, signature)?.0
    } else if args.split {
        cli::parse_inputs_split(&args.call.inputs, signature)?.0
    } else {
        cli::parse_inputs_for(&args.call.inputs, signature)?.0
    };
    let group = cli::device_group(
        args.device.as_deref(),
        args.cpu_partition,
        args.kernel_format.as_deref(),
        false,
    )?;
    for rt in group.runtimes() {
        cli::warn_target_mismatch("tcc-benchmark", model, rt.device());
    }
    let mut jobs = vec![tcc_runtime::throughput::Job {
        model: model.clone(),
        function: function.to_string(),
        inputs: tensors,
    }];
    for spec in &args.with_model {
        // `other.so@f`: the text after the last `@` names the function when
        // it holds no `/`.
        let (path, function) = match spec.rsplit_once('@') {
            Some((p, f)) if !f.contains('/') && !p.is_empty() => (p, Some(f)),
            _ => (spec.as_str(), None),
        };
        let other = Model::load(path)?;
        let f = cli::resolve_function(&other, function)?;
        let zeros = other
            .function(&f)?
            .inputs
            .iter()
            .map(|d| tcc_runtime::HostTensor::zeros(d.dtype, d.shape.clone()))
            .collect::<Result<Vec<_>, _>>()?;
        jobs.push(tcc_runtime::throughput::Job {
            model: other,
            function: f,
            inputs: zeros,
        });
    }
    let compute_queues = match (&args.compute_queues, args.own_queues) {
        (Some(text), _) => tcc_runtime::ComputeQueues::parse(text)?,
        (None, true) => tcc_runtime::ComputeQueues::Own(1),
        (None, false) => tcc_runtime::ComputeQueues::Auto,
    };
    let options = tcc_runtime::throughput::ThroughputOptions {
        concurrency: args.concurrency,
        in_flight: args.in_flight,
        warmup: args.warmup,
        iterations: args.iterations,
        split: args.split,
        compute_queues,
        fresh_outputs: args.fresh_outputs,
    };
    let report = cli::with_progress(
        "tcc-benchmark",
        &format!(
            "opening {} session(s) on {} device(s) ({} kernels; a cold cache builds them), then measuring",
            args.concurrency,
            group.len(),
            model.kernel_names().len()
        ),
        "",
        "measured",
        || tcc_runtime::throughput::measure_jobs(&group, &jobs, &options),
    )?;
    let lat = &report.latency_ms;
    let (min, median, p90, mean) = (
        lat.min(),
        lat.percentile(50.0),
        lat.percentile(90.0),
        lat.mean(),
    );
    let devices: Vec<String> = group
        .runtimes()
        .iter()
        .map(|r| r.device().summary())
        .collect();
    let staging: Vec<_> = group.runtimes().iter().map(|r| r.staging_stats()).collect();
    let mut out = std::io::stdout().lock();
    if args.json {
        let report = json!({
            "model": model.path().display().to_string(),
            "function": function,
            "devices": devices,
            "concurrency": args.concurrency,
            "in_flight": args.in_flight,
            "cpu_partition": args.cpu_partition,
            "split": args.split,
            "own_queues": args.own_queues,
            "compute_queues": format!("{compute_queues:?}"),
            "compute_queues_per_session": report.compute_queues_per_session,
            "timed_allocations": report.timed_allocations,
            "submit_ms_mean": report.submit_ms_mean,
            "wait_ms_mean": report.wait_ms_mean,
            "warmup": args.warmup,
            "iterations": args.iterations,
            "calls": report.calls,
            "seconds": report.seconds,
            "throughput_calls_per_s": report.calls_per_second,
            "calls_per_device": report.calls_per_device,
            "per_model": report.per_model,
            "split_part_submissions_ms": report.split_part_submissions_ms,
            "latency_ms": { "min": min, "median": median, "p90": p90, "mean": mean, "quantile_samples": lat.sample_count() },
            "host_io": group.runtimes()[0].host_io(),
            "pinned_staging": staging,
            "buffer_pool": group.runtimes().iter().map(|r| r.pool_stats()).collect::<Vec<_>>(),
            "transfers": group.runtimes().iter().map(|r| r.transfer_stats()).collect::<Vec<_>>(),
        });
        writeln!(out, "{report}")?;
    } else {
        writeln!(out, "@{function} on {} device(s):", devices.len())?;
        for (d, n) in devices.iter().zip(&report.calls_per_device) {
            writeln!(out, "  {d}: {n} calls")?;
        }
        writeln!(
            out,
            "{} thread(s) x {} calls (after {} warm-up each), {} in flight per thread{}",
            args.concurrency,
            args.iterations,
            args.warmup,
            args.in_flight,
            if args.split {
                ", each call split across the devices"
            } else {
                ""
            }
        )?;
        writeln!(
            out,
            "throughput: {:.2} calls/s ({} calls in {:.3} s)",
            report.calls_per_second, report.calls, report.seconds
        )?;
        if report.per_model.len() > 1 {
            for m in &report.per_model {
                writeln!(
                    out,
                    "  {}: {} calls in {:.3} s, {:.2} calls/s",
                    m.model, m.calls, m.seconds, m.calls_per_second
                )?;
            }
        }
        writeln!(
            out,
            "latency submit-to-result: min {min:.3} ms  median {median:.3} ms  p90 {p90:.3} ms  mean {mean:.3} ms"
        )?;
        for (j, [begin, end]) in report.split_part_submissions_ms.iter().enumerate() {
            writeln!(
                out,
                "  part {j}: submitted {begin:.3} to {end:.3} ms after its call began (mean)"
            )?;
        }
        writeln!(
            out,
            "host time per call: {:.3} ms in submit, {:.3} ms in wait; compute queues per session: {}",
            report.submit_ms_mean,
            report.wait_ms_mean,
            match report.compute_queues_per_session {
                0 => "the device's (shared)".to_string(),
                n => format!("{n} of its own"),
            }
        )?;
        let t = &report.timed_allocations;
        if t.staging_buffers + t.device_buffers > 0 {
            writeln!(
                out,
                "allocated during the timed calls: {} pinned staging buffers ({}), {} device buffers ({})",
                t.staging_buffers,
                format_bytes(t.staging_bytes),
                t.device_buffers,
                format_bytes(t.device_bytes)
            )?;
        }
        let pinned: u64 = staging.iter().map(|s| s.current_bytes).sum();
        writeln!(
            out,
            "host tensors: {}; pinned staging {}",
            host_io_text(group.runtimes()[0].host_io()),
            format_bytes(pinned)
        )?;
    }
    for rt in group.runtimes() {
        cli::finish_cache_writes("tcc-benchmark", rt);
    }
    Ok(())
}
