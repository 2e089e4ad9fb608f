//! tcc: the compiler driver (`tcc compile model.mlir -o model.so`).

use clap::{Parser, Subcommand};
use tcc_compiler::driver;

#[derive(Parser)]
#[command(
    name = "tcc",
    version = tcc_version(),
    about = "tcc: an MLIR tensor compiler for OpenCL devices"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Compile a model to a `--compile-to` stop, an intermediate or an artifact.
    Compile(driver::compile::CompileArgs),
    /// Compile in-process and run on an OpenCL device (or the reference CPU lowering).
    Run(driver::run::RunArgs),
    /// Measure each GEMM/convolution kernel's candidate configurations on a device and record the fastest (for `tcc compile --tuning`).
    Tune(driver::tune::TuneArgs),
    /// Show what a compiled model holds: functions and their I/O, kernels, constants, arena, target, producer and ABI version.
    Inspect(driver::inspect::InspectArgs),
    /// Run an ONNX model on sample inputs and record every float tensor's range and histogram (a calibration profile for quantization).
    Profile(driver::profile::ProfileArgs),
    /// Import an ONNX model as TOSA-level MLIR.
    Import(driver::import::ImportArgs),
    /// Run the ONNX backend test cases (model.onnx + test_data_set_*) and report passes and failures.
    OnnxTest(tcc_compiler::driver::scoreboard::ScoreboardArgs),
}

/// `tcc 0.1.0 (git HASH)` without the leading name (clap adds it).
fn tcc_version() -> &'static str {
    let full = tcc_runtime::version_string();
    Box::leak(full.trim_start_matches("tcc ").to_string().into_boxed_str())
}

fn main() -> std::process::ExitCode {
    // Usage errors exit with 2 (clap's default), other errors with 1. Every
    // flag takes both spellings (`--input-shape`, `--input_shape`).
    let cli = match tcc_runtime::cli::parse_args::<Cli>() {
        Ok(cli) => cli,
        Err(code) => return code,
    };
    // An interrupted `-o` write leaves no temporary file behind.
    tcc_runtime::output_file::remove_partial_files_on_interrupt();
    let mut cli = cli;
    let result = match &mut cli.command {
        Command::Compile(args) => args
            .resolve_target()
            .and_then(|()| driver::compile::run(args)),
        Command::Run(args) => driver::run::run(args),
        Command::Import(args) => driver::import::run(args),
        Command::Inspect(args) => driver::inspect::run(args),
        Command::Tune(args) => driver::tune::run(args),
        Command::Profile(args) => driver::profile::run(args),
        Command::OnnxTest(args) => tcc_compiler::driver::scoreboard::run(args),
    };
    if let Err(error) = result {
        eprintln!("{}", tcc_compiler::driver::error_text(&error));
        std::process::exit(1);
    }
    std::process::ExitCode::SUCCESS
}
