//! Independently computed expected outputs (test/models/expected/).

use std::path::PathBuf;

use anyhow::{Context as _, Result, ensure};
use tcc_runtime::HostTensor;

use crate::models_dir;

/// Independently computed outputs of a model (test/models/expected/<model>/,
/// written by test/models/expected/gen.py with numpy): for each function,
/// the inputs they were computed from (`<function>.inputN.npy`, which must
/// be the suite's inputs) and the outputs (`<function>.outputN.npy`).
pub struct Fixtures {
    dir: PathBuf,
}

impl Fixtures {
    /// `test/models/expected`.
    pub fn root() -> PathBuf {
        models_dir().join("expected")
    }

    /// The model's fixtures, if it has a directory of them.
    pub fn load(model: &str) -> Result<Option<Fixtures>> {
        let dir = Self::root().join(model);
        Ok(dir.is_dir().then_some(Fixtures { dir }))
    }

    fn read(&self, function: &str, kind: &str, index: usize) -> Result<HostTensor> {
        let path = self.dir.join(format!("{function}.{kind}{index}.npy"));
        tcc_runtime::npy::read_npy(&path).with_context(|| {
            format!(
                "{}: cannot read the expected {kind} (run test/models/expected/gen.py)",
                path.display()
            )
        })
    }

    /// Fails unless the stored inputs are the suite's `inputs` (else the
    /// stored outputs belong to other inputs: the fixtures are stale).
    pub fn check_inputs(&self, function: &str, inputs: &[HostTensor]) -> Result<()> {
        for (index, input) in inputs.iter().enumerate() {
            let stored = self.read(function, "input", index)?;
            ensure!(
                &stored == input,
                "{}: the stored input {index} of @{function} is not the suite's: regenerate with test/models/expected/gen.py",
                self.dir.display()
            );
        }
        ensure!(
            !self
                .dir
                .join(format!("{function}.input{}.npy", inputs.len()))
                .exists(),
            "{}: @{function} has more stored inputs than the function",
            self.dir.display()
        );
        Ok(())
    }

    /// The `count` expected outputs of `function` (a missing one is an
    /// error, not a skip).
    pub fn outputs(&self, function: &str, count: usize) -> Result<Vec<HostTensor>> {
        ensure!(
            !self
                .dir
                .join(format!("{function}.output{count}.npy"))
                .exists(),
            "{}: @{function} has more stored outputs than the function",
            self.dir.display()
        );
        (0..count)
            .map(|index| self.read(function, "output", index))
            .collect()
    }

    pub fn describe(&self, function: &str, index: usize) -> String {
        self.dir
            .join(format!("{function}.output{index}.npy"))
            .display()
            .to_string()
    }
}
