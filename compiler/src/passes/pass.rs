//! How a tcc pass written in Rust is declared, given options and registered
//! in MLIR's pass registry (through `tcc_dialects::register_rust_pass`).
//!
//! A pass is a `'static` value implementing [`TccPass`]. Its options arrive
//! as mlir-opt option strings (`tcc-foo{a=1 b=true}` or `--tcc-foo="a=1"`),
//! are checked when the pipeline is parsed and parsed again for each run.
//! Failures become MLIR diagnostics at the op's location; a panic inside a
//! pass is caught and reported as an internal error instead of aborting.

use std::ffi::c_void;
use std::panic::{AssertUnwindSafe, catch_unwind};

use melior::ir::operation::{OperationLike, OperationRef};
use melior::{Context, ContextRef};
use mlir_sys::{
    MlirLogicalResult, MlirOperation, MlirStringCallback, MlirStringRef, mlirEmitError,
};
use tcc_dialects::RustPassRegistration;
pub use tcc_dialects::{PassOptionInfo, PassOptionKind};

pub use crate::ir::error::PassError;

/// Options of a pass, parsed from `key=value` pairs separated by spaces.
pub trait PassOptions: Default {
    /// Every option: its name, kind, default and description (for error
    /// messages, `tcc-opt --help` and printed pipelines).
    const OPTIONS: &'static [PassOptionInfo] = &[];
    /// Sets one option; returns a message when the key or value is wrong.
    fn set(&mut self, key: &str, value: &str) -> Result<(), String>;
}

/// For passes without options.
#[derive(Default, Debug, Clone, Copy)]
pub struct NoOptions;

impl PassOptions for NoOptions {
    fn set(&mut self, key: &str, _value: &str) -> Result<(), String> {
        Err(format!("this pass has no options (got '{key}')"))
    }
}

/// The op a pass runs on, as [`TccPass::run`] receives it.
pub type Root<'c> = OperationRef<'c, 'c>;

/// What [`TccPass::run`] returns.
pub type PassResult<'c> = Result<(), PassError<'c>>;

/// A tcc pass written in Rust.
pub trait TccPass: Sync + 'static {
    /// The name in pipelines and the tcc-opt flag (`tcc-...`).
    const ARGUMENT: &'static str;
    /// One line for `--list-passes` and docs/passes.md.
    const SUMMARY: &'static str;
    /// The op the pass runs on; `None` runs on whatever op it is nested under.
    const ANCHOR: Option<&'static str> = None;
    /// Dialects whose ops the pass creates.
    const DEPENDENT_DIALECTS: &'static [&'static str] = &[];
    type Options: PassOptions;

    /// Runs on `root`, the op the pass manager runs it on. `context` is the
    /// op's context; both are valid for the whole run, so ops found under
    /// `root` may be kept as `OperationRef<'c, 'c>`.
    fn run<'c>(
        &self,
        context: &'c Context,
        root: Root<'c>,
        options: &Self::Options,
    ) -> PassResult<'c>;
}

/// Calls `rewrite` on every op directly in the body of every `func.func`
/// under `root`, in program order (what most tcc rewrite passes do: a
/// rewrite may erase the op it is given and insert new ones, but not touch
/// ops after it).
pub fn for_each_body_op<'c>(
    root: OperationRef<'c, 'c>,
    mut rewrite: impl FnMut(OperationRef<'c, 'c>) -> Result<(), PassError<'c>>,
) -> Result<(), PassError<'c>> {
    for function in crate::ir::util::ops_named(root, "func.func") {
        for op in crate::ir::util::body_ops(function) {
            rewrite(op)?;
        }
    }
    Ok(())
}

/// Replaces every op named `name` under `root` that `select` accepts by the
/// value `build` creates in front of it (composite ops turned into their
/// one-kernel forms).
pub fn replace_each<'c>(
    root: OperationRef<'c, 'c>,
    name: &str,
    select: impl Fn(OperationRef<'c, 'c>) -> bool,
    mut build: impl FnMut(OperationRef<'c, 'c>) -> Result<melior::ir::Value<'c, 'c>, PassError<'c>>,
) -> Result<(), PassError<'c>> {
    let targets: Vec<_> = crate::ir::util::collect_ops(root)
        .into_iter()
        .filter(|op| crate::ir::util::op_name(op) == name && select(*op))
        .collect();
    for op in targets {
        let replacement = build(op)?;
        let old = op
            .result(0)
            .map_err(|e| PassError::at(op.location(), e.to_string()))?
            .into();
        crate::ir::util::replace_and_erase(op, old, replacement);
    }
    Ok(())
}

/// Splits an option string into `key=value` pairs. Values may be quoted or
/// brace-enclosed (`a="x y" b={1,2}`); a bare key means `key=true`.
pub fn split_options(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut pairs = Vec::new();
    let mut chars = text.trim().chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        if chars.peek().is_none() {
            return Ok(pairs);
        }
        let mut key = String::new();
        while let Some(&c) = chars.peek() {
            if c == '=' || c.is_whitespace() {
                break;
            }
            key.push(c);
            chars.next();
        }
        if chars.peek() != Some(&'=') {
            pairs.push((key, "true".to_string()));
            continue;
        }
        chars.next();
        let mut value = String::new();
        let mut depth = 0usize;
        let mut quote: Option<char> = None;
        while let Some(&c) = chars.peek() {
            match (quote, c) {
                (Some(q), c) if c == q => quote = None,
                (Some(_), _) => {}
                (None, '"' | '\'') => quote = Some(c),
                (None, '{' | '[' | '(') => depth += 1,
                (None, '}' | ']' | ')') => {
                    depth = depth
                        .checked_sub(1)
                        .ok_or_else(|| format!("unbalanced '{c}' in option '{key}'"))?
                }
                (None, c) if c.is_whitespace() && depth == 0 => break,
                _ => {}
            }
            value.push(c);
            chars.next();
        }
        if quote.is_some() || depth != 0 {
            return Err(format!("unterminated value for option '{key}'"));
        }
        let value = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .or_else(|| value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
            .map(str::to_string)
            .unwrap_or(value);
        pairs.push((key, value));
    }
}

/// Parses a pass's option string into its options.
pub fn parse_options<O: PassOptions>(text: &str) -> Result<O, String> {
    let mut options = O::default();
    for (key, value) in split_options(text)? {
        options.set(&key, &value).map_err(|message| {
            if O::OPTIONS.is_empty() || O::OPTIONS.iter().any(|o| o.name == key) {
                message
            } else {
                let names: Vec<_> = O::OPTIONS.iter().map(|o| o.name).collect();
                format!("{message}; known options: {}", names.join(", "))
            }
        })?;
    }
    Ok(options)
}

/// Parses a boolean option value.
pub fn parse_bool(key: &str, value: &str) -> Result<bool, String> {
    match value {
        "true" | "1" => Ok(true),
        "false" | "0" => Ok(false),
        _ => Err(format!(
            "option '{key}' expects true or false, got '{value}'"
        )),
    }
}

const SUCCESS: MlirLogicalResult = MlirLogicalResult { value: 1 };
const FAILURE: MlirLogicalResult = MlirLogicalResult { value: 0 };

fn string_of(text: MlirStringRef) -> String {
    if text.data.is_null() {
        return String::new();
    }
    let bytes = unsafe { std::slice::from_raw_parts(text.data as *const u8, text.length) };
    String::from_utf8_lossy(bytes).into_owned()
}

fn emit_error(location: mlir_sys::MlirLocation, message: &str) {
    let text = std::ffi::CString::new(message.replace('\0', " ")).unwrap_or_default();
    unsafe { mlirEmitError(location, text.as_ptr()) };
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

unsafe extern "C" fn check_options_trampoline<P: TccPass>(
    _pass: *const c_void,
    options: MlirStringRef,
    error: MlirStringCallback,
    user_data: *mut c_void,
) -> MlirLogicalResult {
    match parse_options::<P::Options>(&string_of(options)) {
        Ok(_) => SUCCESS,
        Err(message) => {
            let message = format!("{}: {message}", P::ARGUMENT);
            if let Some(callback) = error {
                let text = MlirStringRef {
                    data: message.as_ptr() as *const _,
                    length: message.len(),
                };
                unsafe { callback(text, user_data) };
            }
            FAILURE
        }
    }
}

unsafe extern "C" fn split_options_trampoline(
    options: MlirStringRef,
    pair: tcc_dialects::OptionPairFn,
    user_data: *mut c_void,
) -> MlirLogicalResult {
    let Ok(pairs) = split_options(&string_of(options)) else {
        return FAILURE;
    };
    for (key, value) in pairs {
        let text = |s: &str| MlirStringRef {
            data: s.as_ptr() as *const _,
            length: s.len(),
        };
        unsafe { pair(text(&key), text(&value), user_data) };
    }
    SUCCESS
}

unsafe extern "C" fn run_trampoline<P: TccPass>(
    pass: *const c_void,
    options: MlirStringRef,
    raw: MlirOperation,
) -> MlirLogicalResult {
    let pass = unsafe { &*(pass as *const P) };
    let context_ref = unsafe { ContextRef::from_raw(mlir_sys::mlirOperationGetContext(raw)) };
    let context: &Context = unsafe { context_ref.to_ref() };
    // The pass manager keeps `raw` alive for the whole run: this is the one
    // place where a pass's root gets its `'c` lifetime.
    let root = unsafe { OperationRef::from_raw(raw) };
    let op_location = root.location().to_raw();
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let options = parse_options::<P::Options>(&string_of(options))
            .map_err(|message| (None, format!("{}: {message}", P::ARGUMENT)))?;
        pass.run(context, root, &options)
            .map_err(|e| (e.location.map(|l| l.to_raw()), e.message))
    }));
    let failure = match outcome {
        Ok(Ok(())) => return SUCCESS,
        Ok(Err((location, message))) => (location.unwrap_or(op_location), message),
        Err(payload) => (
            op_location,
            format!(
                "internal error in pass {}: {}",
                P::ARGUMENT,
                panic_message(payload.as_ref())
            ),
        ),
    };
    emit_error(failure.0, &failure.1);
    FAILURE
}

/// Registers `pass` under its argument in MLIR's pass registry.
pub fn register<P: TccPass>(pass: &'static P) {
    tcc_dialects::register_rust_pass(&RustPassRegistration {
        argument: P::ARGUMENT,
        summary: P::SUMMARY,
        anchor: P::ANCHOR,
        dependent_dialects: P::DEPENDENT_DIALECTS,
        options: <P::Options as PassOptions>::OPTIONS,
        pass: pass as *const P as *const c_void,
        check_options: check_options_trampoline::<P>,
        run: run_trampoline::<P>,
        split_options: split_options_trampoline,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_plain_quoted_and_braced_values() {
        let pairs = split_options(r#"a=1 b="x y" c={1,2} flag"#).unwrap();
        assert_eq!(
            pairs,
            vec![
                ("a".into(), "1".into()),
                ("b".into(), "x y".into()),
                ("c".into(), "{1,2}".into()),
                ("flag".into(), "true".into())
            ]
        );
    }

    #[test]
    fn rejects_unterminated_values() {
        assert!(split_options("a=\"x").is_err());
        assert!(split_options("a={1").is_err());
        assert!(split_options("a=}").is_err());
    }

    #[test]
    fn no_options_rejects_any_key() {
        assert!(parse_options::<NoOptions>("").is_ok());
        assert!(parse_options::<NoOptions>("x=1").is_err());
    }
}
