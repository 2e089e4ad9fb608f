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

/// Environment variable: `foreground` makes `tcc-run` and `tcc-benchmark`
/// write deferred program cache entries themselves before they exit,
/// instead of passing them to a background process.
pub const CACHE_WRITE_ENV: &str = "TCC_CACHE_WRITE";

/// Finishes the program cache entries the runtime deferred (PoCL: after the
/// first calls, so that they do not wait for it; the driver compiles every
/// kernel once more for the entry, as long as the first call took). Each
/// is passed to a background `tcc-run` that inherits the entry's lock
/// (other processes wait for the entry as before) and writes it at a lower
/// priority, so that the tool exits right after its results. Where that
/// cannot start, or with `TCC_CACHE_WRITE=foreground`, the tool writes them
/// itself, with a progress line.
pub fn finish_cache_writes(tool: &str, rt: &Runtime) {
    if rt.pending_cache_writes() == 0 {
        return;
    }
    if std::env::var(CACHE_WRITE_ENV).as_deref() != Ok("foreground") {
        for handed in rt.hand_over_cache_writes() {
            match spawn_entry_writer(&handed) {
                Ok(pid) => eprintln!(
                    "{tool}: the program cache entry is written in the background (pid {pid}; a run before it is done waits for it)"
                ),
                Err(e) => {
                    eprintln!(
                        "{tool}: note: cannot write the program cache entry in the background ({e})"
                    );
                    rt.take_back_cache_write(handed);
                }
            }
        }
    }
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

/// The `tcc-run` next to this executable (an install or `target/debug`
/// puts the tools side by side).
fn tcc_run_beside_this_tool() -> std::io::Result<std::path::PathBuf> {
    let exe = std::env::current_exe()?;
    let tcc_run = exe.with_file_name("tcc-run");
    if tcc_run.is_file() {
        Ok(tcc_run)
    } else {
        Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("no {}", tcc_run.display()),
        ))
    }
}

/// Starts `tcc-run --write-cache-entry=KEY` for `handed`: its own process
/// group (a Ctrl-C at the terminal later does not reach it), no standard
/// streams, niceness 10, and the entry's locked lock file as an inherited
/// descriptor. Returns its process id.
fn spawn_entry_writer(handed: &crate::program_cache::HandOver) -> std::io::Result<u32> {
    use std::os::fd::AsRawFd;
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};

    let fd = handed.lock.as_raw_fd();
    let mut command = Command::new(tcc_run_beside_this_tool()?);
    command
        .arg(format!("--write-cache-entry={}", handed.key_hex))
        .arg(format!("--cache-lock-fd={fd}"))
        .arg(format!("--cache-build-options={}", handed.build_options))
        .arg("--cache-lock")
        .arg(&handed.lock_path)
        .arg(format!("--device={}", handed.device_index))
        .arg(&handed.artifact)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0);
    // SAFETY: between fork and exec the closure calls only async-signal-
    // safe functions (fcntl, nice) on a descriptor it does not close.
    unsafe {
        command.pre_exec(move || {
            // The descriptor was opened close-on-exec; this one copy in
            // the child keeps it (and the flock) across the exec.
            if libc::fcntl(fd, libc::F_SETFD, 0) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            libc::nice(10);
            Ok(())
        });
    }
    let child = command.spawn()?;
    Ok(child.id())
}

/// `tcc-run --write-cache-entry=KEY --cache-lock-fd=FD --cache-lock=PATH
/// --cache-build-options=OPTIONS`:
/// the background half of [`finish_cache_writes`].
pub fn write_handed_over_entry(
    model: &Model,
    device: Option<&str>,
    kernel_format: Option<&str>,
    build_options: &str,
    key_hex: &str,
    lock_fd: i32,
    lock_path: &std::path::Path,
) -> anyhow::Result<()> {
    use std::os::fd::FromRawFd;
    if lock_fd < 3 {
        anyhow::bail!("--cache-lock-fd={lock_fd}: not a descriptor passed on by tcc-run");
    }
    // SAFETY: the parent passed this descriptor (its locked lock file) to
    // this process, which owns it from here on and uses it nowhere else.
    let lock = unsafe { std::fs::File::from_raw_fd(lock_fd) };
    let rt = runtime(device, kernel_format, false)?;
    rt.write_handed_over_entry(model, build_options, key_hex, lock, lock_path)?;
    Ok(())
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
