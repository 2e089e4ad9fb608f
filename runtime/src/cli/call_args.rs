//! The command-line arguments `tcc-run` and `tcc-benchmark` share: the
//! model, the function and its inputs, in iree-run-module's style (clap
//! arguments each binary flattens into its own).

use std::path::PathBuf;

/// Which model, which function, which inputs.
#[derive(clap::Args)]
pub struct CallArgs {
    /// The compiled model (model.so).
    pub model: Option<PathBuf>,
    /// The compiled model, as IREE's --module (instead of the positional argument).
    #[arg(long = "module", value_name = "MODEL", conflicts_with = "model")]
    pub module: Option<PathBuf>,
    /// Function to run (default: the model's only function).
    #[arg(long)]
    pub function: Option<String>,
    /// An input, in order: @FILE.npy, or a literal such as 2x3xf32=1,2,3,4,5,6
    /// (a single value splats).
    #[arg(long = "input", value_name = "INPUT", allow_hyphen_values = true)]
    pub inputs: Vec<String>,
}

impl CallArgs {
    /// The model, given positionally or as --module.
    pub fn model_path(&self) -> Option<PathBuf> {
        self.model.clone().or(self.module.clone())
    }
}
