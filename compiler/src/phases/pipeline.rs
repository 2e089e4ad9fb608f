//! A pass pipeline as data: each step is a registered pass by name, the
//! op it runs on (the module, or each `func.func` in it) and its options
//! as typed key/value pairs, so that phase builders compose pipelines in
//! code (as IREE's `buildPassPipeline` functions do) and the session
//! builds the pass manager pass by pass ([`Pipeline::add_to`]) instead of
//! parsing one pipeline string. [`fmt::Display`] writes the textual form
//! for tcc-opt's named `tcc-phase-*` pipelines, `--dump-pass-pipeline`
//! and messages.

use std::fmt;

/// Where a step runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Anchor {
    /// On the `builtin.module`.
    Module,
    /// On each `func.func` of the module.
    Func,
}

/// One pass of a pipeline.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PassStep {
    pub anchor: Anchor,
    /// The pass's registered argument (`canonicalize`, `tcc-fold-constants`).
    pub name: &'static str,
    /// Its options, in order: a key alone is a flag set to true.
    pub options: Vec<(&'static str, Option<String>)>,
}

impl PassStep {
    pub fn new(name: &'static str) -> Self {
        PassStep {
            anchor: Anchor::Module,
            name,
            options: Vec::new(),
        }
    }

    /// The same pass on each `func.func`.
    pub fn on_functions(mut self) -> Self {
        self.anchor = Anchor::Func;
        self
    }

    /// Sets option `key` to `value`.
    pub fn option(mut self, key: &'static str, value: impl fmt::Display) -> Self {
        self.options.push((key, Some(value.to_string())));
        self
    }

    /// Sets the boolean option `key` (to true).
    pub fn flag(mut self, key: &'static str) -> Self {
        self.options.push((key, None));
        self
    }

    /// The step as one textual pipeline element: `name{key=value ...}`.
    fn element(&self) -> String {
        let mut text = self.name.to_string();
        if !self.options.is_empty() {
            let options: Vec<String> = self
                .options
                .iter()
                .map(|(key, value)| match value {
                    Some(value) => format!("{key}={value}"),
                    None => key.to_string(),
                })
                .collect();
            text.push('{');
            text.push_str(&options.join(" "));
            text.push('}');
        }
        text
    }
}

/// An ordered list of passes over a module.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pipeline {
    pub steps: Vec<PassStep>,
}

impl Pipeline {
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a step.
    pub fn add(&mut self, step: PassStep) -> &mut Self {
        self.steps.push(step);
        self
    }

    /// Appends a module pass without options.
    pub fn pass(&mut self, name: &'static str) -> &mut Self {
        self.add(PassStep::new(name))
    }

    /// Appends a function pass without options.
    pub fn func_pass(&mut self, name: &'static str) -> &mut Self {
        self.add(PassStep::new(name).on_functions())
    }

    /// Appends every step of `other`.
    pub fn extend(&mut self, other: Pipeline) -> &mut Self {
        self.steps.extend(other.steps);
        self
    }

    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// Whether a step runs the pass `name`.
    pub fn contains(&self, name: &str) -> bool {
        self.steps.iter().any(|step| step.name == name)
    }

    /// Adds the steps to `manager` (a pass manager on `builtin.module`),
    /// one pass at a time: each looked up by name in MLIR's registry and
    /// given its options, function passes nested under `func.func`.
    pub fn add_to(&self, manager: mlir_sys::MlirOpPassManager) -> Result<(), String> {
        unsafe extern "C" fn collect(
            part: mlir_sys::MlirStringRef,
            user_data: *mut std::ffi::c_void,
        ) {
            // SAFETY: MLIR passes a valid string, and `user_data` is the
            // `String` below.
            let text = unsafe { std::slice::from_raw_parts(part.data as *const u8, part.length) };
            unsafe { &mut *(user_data as *mut String) }.push_str(&String::from_utf8_lossy(text));
        }
        let func = "func.func";
        for step in &self.steps {
            // SAFETY: `manager` is a live pass manager; the nested one it
            // returns lives as long as it.
            let target = match step.anchor {
                Anchor::Module => manager,
                Anchor::Func => unsafe {
                    mlir_sys::mlirOpPassManagerGetNestedUnder(
                        manager,
                        mlir_sys::MlirStringRef {
                            data: func.as_ptr() as *const _,
                            length: func.len(),
                        },
                    )
                },
            };
            let element = step.element();
            let mut error = String::new();
            // SAFETY: as above; the callback writes into `error`.
            let added = unsafe {
                mlir_sys::mlirOpPassManagerAddPipeline(
                    target,
                    mlir_sys::MlirStringRef {
                        data: element.as_ptr() as *const _,
                        length: element.len(),
                    },
                    Some(collect),
                    &mut error as *mut String as *mut std::ffi::c_void,
                )
            };
            if added.value == 0 {
                return Err(format!("pass {element}: {error}"));
            }
        }
        Ok(())
    }
}

impl fmt::Display for Pipeline {
    /// The textual form, `builtin.module(a,func.func(b,c),d)`, with
    /// neighbouring function passes under one `func.func(...)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("builtin.module(")?;
        let mut index = 0;
        while index < self.steps.len() {
            if index > 0 {
                f.write_str(",")?;
            }
            let step = &self.steps[index];
            if step.anchor == Anchor::Func {
                let run = self.steps[index..]
                    .iter()
                    .take_while(|s| s.anchor == Anchor::Func)
                    .map(PassStep::element)
                    .collect::<Vec<_>>();
                index += run.len();
                write!(f, "func.func({})", run.join(","))?;
            } else {
                f.write_str(&step.element())?;
                index += 1;
            }
        }
        f.write_str(")")
    }
}

impl Pipeline {
    /// The elements inside `builtin.module(...)`, for a named tcc-opt
    /// pipeline.
    pub fn elements(&self) -> String {
        let text = self.to_string();
        text["builtin.module(".len()..text.len() - 1].to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pipelines_print_with_function_passes_grouped() {
        let mut pipeline = Pipeline::new();
        pipeline
            .pass("canonicalize")
            .func_pass("tcc-raise-composites")
            .func_pass("tcc-raise-attention")
            .add(PassStep::new("tcc-fuse-elementwise").option("max-ops", 7))
            .add(
                PassStep::new("tosa-to-linalg-named")
                    .on_functions()
                    .flag("prefer-conv2d-kernel-layout-hwcf"),
            );
        assert_eq!(
            pipeline.to_string(),
            "builtin.module(canonicalize,func.func(tcc-raise-composites,tcc-raise-attention),tcc-fuse-elementwise{max-ops=7},func.func(tosa-to-linalg-named{prefer-conv2d-kernel-layout-hwcf}))"
        );
        assert!(pipeline.contains("tcc-raise-attention"));
        assert_eq!(Pipeline::new().to_string(), "builtin.module()");
    }
}
