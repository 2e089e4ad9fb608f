//! Opening what a tool runs on: the runtime or the group of devices of its
//! `--device`, `--kernel-format` and `--cpu-partition` flags, and the
//! session, with progress lines on stderr while the driver builds the
//! kernels, compiles them on the first call, or writes the cache.

use crate::device::DeviceSelector;
use crate::error::Result;
use crate::{Model, Runtime, Session};

/// Creates the session for `model` (the driver may build its kernels, which
/// can take a while on a cold cache) and shows a progress line on stderr
/// while that lasts more than a moment: a ticking spinner on a terminal,
/// else one line when it starts and one when it ends. Notes about the
/// kernel form (PTX refused, another vendor's device) are printed as one
/// line each.
pub fn open_session(tool: &str, rt: &Runtime, model: &Model) -> Result<Session> {
    let message = format!(
        "building {} kernels for {}",
        model.kernel_names().len(),
        rt.device().name
    );
    let session = with_progress(
        tool,
        &message,
        " (once per model and driver; later runs use the cache)",
        "kernels ready",
        || rt.session(model),
    )?;
    if let Some(note) = session.program_note() {
        eprintln!("{tool}: note: {note}");
    }
    Ok(session)
}

/// Writes the program cache entries the runtime deferred (PoCL: after the
/// first calls, so that they do not wait for it), with a progress line:
/// the driver compiles every kernel once more for the entry.
pub fn finish_cache_writes(tool: &str, rt: &Runtime) {
    if rt.pending_cache_writes() == 0 {
        return;
    }
    with_progress(
        tool,
        "writing the program cache entry for later runs",
        " (once per model and driver)",
        "written",
        || rt.wait_for_cache_writes(),
    );
}

/// Runs `work` and, when it lasts more than 0.7 s, shows progress on
/// stderr: a ticking spinner with `message` and the elapsed time on a
/// terminal, else `TOOL: MESSAGE{detail}` when it starts and `TOOL: {done}
/// after N s` when it ends.
pub fn with_progress<T>(
    tool: &str,
    message: &str,
    detail: &str,
    done: &str,
    work: impl FnOnce() -> T,
) -> T {
    use std::io::IsTerminal;
    use std::sync::mpsc;
    use std::time::{Duration, Instant};

    let (finished, wait) = mpsc::channel::<()>();
    let (tool_name, message, detail, done) = (
        tool.to_string(),
        message.to_string(),
        detail.to_string(),
        done.to_string(),
    );
    let progress = std::thread::spawn(move || {
        let started = Instant::now();
        if wait.recv_timeout(Duration::from_millis(700)).is_ok() {
            return;
        }
        if std::io::stderr().is_terminal() {
            let spinner = indicatif::ProgressBar::new_spinner();
            spinner.set_style(
                indicatif::ProgressStyle::with_template("{prefix}: {spinner} {msg} ({elapsed})")
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
            );
            spinner.set_prefix(tool_name);
            spinner.set_message(message);
            spinner.enable_steady_tick(Duration::from_millis(120));
            let _ = wait.recv();
            spinner.finish_and_clear();
        } else {
            eprintln!("{tool_name}: {message}{detail}");
            let _ = wait.recv();
            eprintln!(
                "{tool_name}: {done} after {:.1} s",
                started.elapsed().as_secs_f64()
            );
        }
    });
    let result = work();
    let _ = finished.send(());
    let _ = progress.join();
    result
}

/// The first call of a session whose kernels were just built: the progress
/// line covers the driver compiling each kernel for its launch size (PoCL
/// does that at a kernel's first launch, most of a cold first call).
pub fn first_call<T>(tool: &str, session: &mut Session, call: impl FnOnce(&mut Session) -> T) -> T {
    if session.program_origin() == Some(crate::ProgramOrigin::SourceBuild) {
        with_progress(
            tool,
            "first call: the driver compiles each kernel for its launch size",
            " (once per model and driver)",
            "first call done",
            || call(session),
        )
    } else {
        call(session)
    }
}

/// The runtime for a tool's `--device` and `--kernel-format` flags.
pub fn runtime(
    device: Option<&str>,
    kernel_format: Option<&str>,
    profiling: bool,
) -> Result<Runtime> {
    let options = runtime_options(kernel_format, profiling)?;
    Runtime::with_options(DeviceSelector::from_flag_or_env(device), options)
}

/// The runtime options of a tool's `--kernel-format` and profiling.
fn runtime_options(kernel_format: Option<&str>, profiling: bool) -> Result<crate::RuntimeOptions> {
    Ok(crate::RuntimeOptions {
        profiling,
        kernel_format: self::kernel_format(kernel_format)?,
        ..Default::default()
    })
}

/// `--kernel-format`, else `TCC_KERNEL_FORMAT`, else automatic.
pub fn kernel_format(flag: Option<&str>) -> Result<crate::KernelFormat> {
    match flag {
        Some(text) => text.parse(),
        None => Ok(crate::KernelFormat::from_env()?.unwrap_or_default()),
    }
}

/// Whether the `--device` flag (or `TCC_DEVICE`) and `--cpu-partition`
/// ask for several devices (`all`, a list, or parts of a CPU device).
pub fn wants_several_devices(device: Option<&str>, cpu_partition: usize) -> Result<bool> {
    Ok(crate::DeviceList::from_flag_or_env(device)?.is_several() || cpu_partition != 1)
}

/// The devices of a tool's `--device` (one, a list or `all`) and
/// `--cpu-partition`, a runtime on each.
pub fn device_group(
    device: Option<&str>,
    cpu_partition: usize,
    kernel_format: Option<&str>,
    profiling: bool,
) -> Result<crate::DeviceGroup> {
    let options = runtime_options(kernel_format, profiling)?;
    crate::DeviceGroup::open(
        &crate::DeviceList::from_flag_or_env(device)?,
        cpu_partition,
        options,
    )
}
