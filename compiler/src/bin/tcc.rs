//! tcc: the compiler driver (`tcc compile model.mlir -o model.so`).

use clap::{Parser, Subcommand};
use tcc_compiler::driver;

#[derive(Parser)]
#[command(
    name = "tcc",
    version,
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
}

fn main() {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Compile(args) => driver::compile::run(args),
        Command::Run(args) => driver::run::run(args),
    };
    if let Err(error) = result {
        eprintln!("{error:#}");
        std::process::exit(1);
    }
}
