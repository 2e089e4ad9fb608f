//! Throughput through the driver-neutral core (`tcc_runtime::hal`): on
//! the CUDA and Vulkan backends, `--in-flight=N` keeps N calls in flight
//! on each device (N sessions, each on a stream or command buffer of its
//! own), several devices
//! (`--device=0,1` or `all`) take whole calls round robin, and `--split`
//! cuts each call's batch across them (data parallel). Reports calls per
//! second next to the mean latency of a call.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use serde_json::json;
use tcc_runtime::cli;
use tcc_runtime::hal::{AnyDevice, Device, Group};
use tcc_runtime::{Backend, HostTensor, Model};

use crate::Args;

/// The throughput measurement through the core (see the module
/// documentation).
pub(crate) fn measure(
    args: &Args,
    model: &Model,
    function: &str,
    backend: Backend,
) -> anyhow::Result<()> {
    let signature = model.function(function)?;
    let tensors: Vec<HostTensor> = if args.call.inputs.is_empty() {
        crate::inputs(args, signature)?.0
    } else if args.split {
        cli::parse_inputs_split(&args.call.inputs, signature)?.0
    } else {
        cli::parse_inputs_for(&args.call.inputs, signature)?.0
    };
    let ordinals = cli::device_ordinals(backend, args.device.as_deref())?;
    let devices =
        tcc_runtime::hal::open_devices(backend, &tcc_runtime::DeviceList::All, &ordinals, false)?;
    let names: Vec<String> = devices.iter().map(|d| d.summary()).collect();
    let opened = Instant::now();
    let mut group = Group::new(&devices, model, args.in_flight)?;
    let open_seconds = opened.elapsed().as_secs_f64();
    let call = |group: &mut Group<AnyDevice>| -> anyhow::Result<()> {
        if args.split {
            group.run_split(function, &tensors)?;
        } else {
            group.run(function, &tensors)?;
        }
        Ok(())
    };
    for _ in 0..args.warmup.max(1) {
        call(&mut group)?;
    }
    let window = if args.split {
        1
    } else {
        args.in_flight * devices.len()
    };
    let started = Instant::now();
    let mut latencies: Vec<Duration> = Vec::with_capacity(args.iterations);
    if args.split {
        for _ in 0..args.iterations {
            let t = Instant::now();
            call(&mut group)?;
            latencies.push(t.elapsed());
        }
    } else {
        let mut in_flight = VecDeque::new();
        for _ in 0..args.iterations {
            if in_flight.len() == window {
                let (t, p): (Instant, tcc_runtime::hal::Pending) = in_flight.pop_front().unwrap();
                p.wait()?;
                latencies.push(t.elapsed());
            }
            in_flight.push_back((Instant::now(), group.submit_staged(function, &tensors)?));
        }
        for (t, p) in in_flight {
            p.wait()?;
            latencies.push(t.elapsed());
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    let calls_per_second = args.iterations as f64 / seconds;
    let mean_ms =
        latencies.iter().map(Duration::as_secs_f64).sum::<f64>() * 1e3 / latencies.len() as f64;
    let batch = tensors
        .first()
        .and_then(|t| t.shape.first().copied())
        .unwrap_or(1);
    if args.json {
        let report = json!({
            "function": function,
            "backend": backend.name(),
            "devices": names,
            "in_flight": args.in_flight,
            "split": args.split,
            "batch": batch,
            "iterations": args.iterations,
            "seconds": seconds,
            "throughput_calls_per_s": calls_per_second,
            "items_per_second": calls_per_second * batch as f64,
            "latency_ms": { "mean": mean_ms },
            "open_seconds": open_seconds,
            "module_cache": devices
                .iter()
                .filter_map(|d| match d {
                    AnyDevice::Cuda(rt) => Some(rt.module_cache_stats()),
                    _ => None,
                })
                .collect::<Vec<_>>(),
        });
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        println!(
            "@{function} on {} ({} backend), {} in flight per device{}",
            names.join(", "),
            backend.title(),
            args.in_flight,
            if args.split { ", batch split" } else { "" }
        );
        println!(
            "{} calls in {:.3} s: {:.1} calls/s ({:.1} items/s at batch {batch}), mean latency {:.3} ms",
            args.iterations,
            seconds,
            calls_per_second,
            calls_per_second * batch as f64,
            mean_ms
        );
        println!("sessions opened in {open_seconds:.3} s");
    }
    Ok(())
}
