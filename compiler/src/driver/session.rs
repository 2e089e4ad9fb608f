//! A compilation session: an MLIR context with every dialect and pass
//! registered, a diagnostic sink, and the parsed module.

use std::path::Path;

use anyhow::{Result, anyhow, bail};
use melior::Context;
use melior::ir::Module;
use melior::ir::operation::OperationLike;

use crate::diagnostics::DiagnosticSink;

pub struct Session {
    pub context: Context,
    pub diagnostics: DiagnosticSink,
    /// What `run_pipeline` reports besides running (`tcc compile
    /// --mlir-timing`, `--mlir-print-ir-after-all`).
    pub instrumentation: Instrumentation,
}

/// Pass-manager instrumentation, as mlir-opt and iree-compile offer it.
#[derive(Clone, Debug, Default)]
pub struct Instrumentation {
    /// Print each pass's wall time to stderr after each pipeline
    /// (`--mlir-timing`).
    pub timing: bool,
    /// Print the IR after every pass to stderr (`--mlir-print-ir-after-all`).
    pub print_ir_after_all: bool,
}

impl Session {
    pub fn new() -> Self {
        crate::phases::register_all();
        let context = tcc_dialects::new_context();
        let diagnostics = DiagnosticSink::attach(&context);
        Self {
            context,
            diagnostics,
            instrumentation: Instrumentation::default(),
        }
    }

    /// Turns the recorded diagnostics into an error (or a generic message).
    pub fn failure(&self, what: &str) -> anyhow::Error {
        let messages = self.diagnostics.take();
        if messages.is_empty() {
            anyhow!("{what}")
        } else {
            anyhow!("{}", messages.join("\n"))
        }
    }

    /// Parses MLIR text (named `name` in diagnostics) and verifies it.
    pub fn parse<'c>(&'c self, name: &str, text: &str) -> Result<Module<'c>> {
        self.diagnostics.add_source(name, text);
        let module = tcc_dialects::parse_module(&self.context, text, name)
            .ok_or_else(|| self.failure(&format!("{name}: cannot parse")))?;
        if !module.as_operation().verify() {
            return Err(self.failure(&format!("{name}: verification failed")));
        }
        Ok(module)
    }

    /// Reads and parses a file.
    pub fn parse_file<'c>(&'c self, path: &Path) -> Result<Module<'c>> {
        let bytes =
            std::fs::read(path).map_err(|e| anyhow!("cannot read {}: {e}", path.display()))?;
        let text = String::from_utf8(bytes).map_err(|e| {
            anyhow!(
                "{}: not UTF-8 text (byte {}): is this an MLIR file?",
                path.display(),
                e.utf8_error().valid_up_to()
            )
        })?;
        self.parse(&path.display().to_string(), &text)
    }

    /// Runs a textual pipeline over the module, with the session's
    /// instrumentation (timing, IR printing).
    pub fn run_pipeline(&self, module: &mut Module, pipeline: &str) -> Result<()> {
        self.run_built(module, |manager| {
            let mut error = String::new();
            // SAFETY: a live pass manager; the callback writes into `error`.
            let parsed = unsafe {
                mlir_sys::mlirParsePassPipeline(
                    mlir_sys::mlirPassManagerGetAsOpPassManager(manager),
                    mlir_sys::MlirStringRef {
                        data: pipeline.as_ptr() as *const _,
                        length: pipeline.len(),
                    },
                    Some(collect_text),
                    &mut error as *mut String as *mut std::ffi::c_void,
                )
            };
            if parsed.value == 0 {
                bail!("invalid pass pipeline {pipeline}: {error}");
            }
            Ok(())
        })
    }

    /// Runs a pipeline built in code ([`crate::phases::Pipeline`]) over the
    /// module: the pass manager is built pass by pass, with the session's
    /// instrumentation.
    pub fn run_passes(
        &self,
        module: &mut Module,
        pipeline: &crate::phases::Pipeline,
    ) -> Result<()> {
        if pipeline.is_empty() {
            return Ok(());
        }
        self.run_built(module, |manager| {
            // SAFETY: a live pass manager.
            let root = unsafe { mlir_sys::mlirPassManagerGetAsOpPassManager(manager) };
            pipeline.add_to(root).map_err(anyhow::Error::msg)
        })
    }

    /// Creates a pass manager, lets `populate` add its passes, and runs it
    /// over the module with the session's instrumentation.
    fn run_built(
        &self,
        module: &mut Module,
        populate: impl FnOnce(mlir_sys::MlirPassManager) -> Result<()>,
    ) -> Result<()> {
        /// Destroys the pass manager (which prints the timing report) on
        /// every path out.
        struct Manager(mlir_sys::MlirPassManager);
        impl Drop for Manager {
            fn drop(&mut self) {
                // SAFETY: created below, destroyed once.
                unsafe { mlir_sys::mlirPassManagerDestroy(self.0) }
            }
        }
        // SAFETY: plain MLIR C API calls on a context that outlives them.
        let manager = Manager(unsafe { mlir_sys::mlirPassManagerCreate(self.context.to_raw()) });
        populate(manager.0)?;
        if self.instrumentation.timing {
            // SAFETY: as above.
            unsafe { mlir_sys::mlirPassManagerEnableTiming(manager.0) };
        }
        if self.instrumentation.print_ir_after_all {
            let flags = melior::ir::operation::OperationPrintingFlags::new();
            // SAFETY: as above; an empty tree path prints to stderr.
            unsafe {
                mlir_sys::mlirPassManagerEnableIRPrinting(
                    manager.0,
                    false,
                    true,
                    false,
                    false,
                    false,
                    flags.to_raw(),
                    mlir_sys::MlirStringRef {
                        data: std::ptr::null(),
                        length: 0,
                    },
                )
            };
        }
        // SAFETY: as above.
        let result =
            unsafe { mlir_sys::mlirPassManagerRunOnOp(manager.0, module.as_operation().to_raw()) };
        drop(manager);
        if result.value == 0 {
            bail!("{}", self.failure("compilation failed"));
        }
        Ok(())
    }
}

/// Appends a piece of text MLIR reports to the `String` at `user_data`.
unsafe extern "C" fn collect_text(part: mlir_sys::MlirStringRef, user_data: *mut std::ffi::c_void) {
    // SAFETY: MLIR passes a valid string; `user_data` is a `String`.
    let text = unsafe { std::slice::from_raw_parts(part.data as *const u8, part.length) };
    unsafe { &mut *(user_data as *mut String) }.push_str(&String::from_utf8_lossy(text));
}

impl Default for Session {
    fn default() -> Self {
        Self::new()
    }
}
