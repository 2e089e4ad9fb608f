//! `tcc compile`: runs the phases over a model and writes the IR at a
//! `--compile-to` stop, an intermediate (`--emit`), or the artifact.

use std::path::PathBuf;

use anyhow::{Result, bail};
use clap::Args;

use super::session::Session;
use super::write_atomically;
use crate::config::Target;
use crate::phases::{Phase, pipeline_to};

#[derive(Args, Debug)]
pub struct CompileArgs {
    /// The model: MLIR (TOSA/linalg level) text.
    pub input: PathBuf,
    /// Where to write the result (default: stdout for text, required for binaries).
    #[arg(short = 'o', long = "output")]
    pub output: Option<PathBuf>,
    /// Stop after this phase and print the IR (input, graph, linalg, dispatch, tile, buffer, gpu, codegen).
    #[arg(long = "compile-to", value_parser = parse_phase)]
    pub compile_to: Option<Phase>,
    /// The device family to tune kernels for (generic, nvidia, pocl-cpu).
    #[arg(long, default_value = "generic", value_parser = parse_target)]
    pub target: Target,
    /// Print statistics (kernel count, work-group sizes) to stderr.
    #[arg(long)]
    pub stats: bool,
}

fn parse_phase(text: &str) -> Result<Phase, String> {
    text.parse()
}

fn parse_target(text: &str) -> Result<Target, String> {
    text.parse()
}

pub fn run(args: &CompileArgs) -> Result<()> {
    let session = Session::new();
    let mut module = session.parse_file(&args.input)?;
    let stop = args.compile_to.unwrap_or(Phase::Codegen);
    session.run_pipeline(&mut module, &pipeline_to(stop.min(Phase::Gpu), args.target))?;
    if args.stats {
        eprint!("{}", crate::driver::stats::collect(&module).render());
    }
    if stop <= Phase::Gpu {
        let text = format!("{}\n", module.as_operation());
        return match &args.output {
            Some(path) => write_atomically(path, text.as_bytes()),
            None => {
                print!("{text}");
                Ok(())
            }
        };
    }
    bail!("--compile-to=codegen needs the code generators, which are not built into this tcc yet")
}
