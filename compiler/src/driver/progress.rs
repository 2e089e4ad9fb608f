//! Progress on the compiler's long work — the phases of `tcc compile`, the
//! rounds of `tcc tune`, the import of a large ONNX model — as an
//! indicatif bar or spinner on stderr. Only when stderr is a terminal (and
//! `TCC_PROGRESS` is not `0`): in logs, pipes and tests the tools print
//! only their own lines. The runtime's driver-build progress is
//! `tcc_runtime::cli::with_progress`.

use std::io::IsTerminal as _;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

/// Whether progress is drawn: stderr is a terminal and `TCC_PROGRESS` is
/// not `0`.
pub fn enabled() -> bool {
    std::io::stderr().is_terminal() && !super::environment::progress_disabled()
}

/// A bar or spinner, or nothing when progress is off.
pub struct Progress(Option<ProgressBar>);

impl Progress {
    /// A bar over `len` steps, e.g. `tcc tune: [=====>   ] 3/8 round 4`.
    pub fn bar(prefix: &str, len: u64) -> Self {
        if !enabled() {
            return Progress(None);
        }
        let bar = ProgressBar::new(len);
        bar.set_style(
            ProgressStyle::with_template("{prefix}: [{bar:30}] {pos}/{len} {msg} ({elapsed})")
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        bar.set_prefix(prefix.to_string());
        bar.enable_steady_tick(Duration::from_millis(200));
        Progress(Some(bar))
    }

    /// A spinner with a message, e.g. `tcc compile: ⠋ phase linalg (2s)`.
    pub fn spinner(prefix: &str) -> Self {
        if !enabled() {
            return Progress(None);
        }
        let spinner = ProgressBar::new_spinner();
        spinner.set_style(
            ProgressStyle::with_template("{prefix}: {spinner} {msg} ({elapsed})")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        spinner.set_prefix(prefix.to_string());
        spinner.enable_steady_tick(Duration::from_millis(120));
        Progress(Some(spinner))
    }

    /// No progress at all.
    pub fn none() -> Self {
        Progress(None)
    }

    pub fn is_drawn(&self) -> bool {
        self.0.is_some()
    }

    pub fn message(&self, message: impl Into<String>) {
        if let Some(bar) = &self.0 {
            bar.set_message(message.into());
        }
    }

    pub fn step(&self) {
        if let Some(bar) = &self.0 {
            bar.inc(1);
        }
    }

    /// Prints a line above the bar (or plainly when there is none).
    pub fn println(&self, line: impl AsRef<str>) {
        match &self.0 {
            Some(bar) => bar.println(line.as_ref()),
            None => eprintln!("{}", line.as_ref()),
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(bar) = self.0.take() {
            bar.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn nothing_is_drawn_when_stderr_is_not_a_terminal() {
        // cargo test captures stderr into a pipe.
        if !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
            assert!(!super::Progress::bar("t", 3).is_drawn());
            assert!(!super::Progress::spinner("t").is_drawn());
        }
    }
}
