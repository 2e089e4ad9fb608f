//! `tcc-order-globals`: puts the module's `memref.global`s in the order the
//! host functions first use them and renames the ones bufferization made
//! (`__constant_<shape>`, `__constant_<shape>_<n>`) by that order, so that
//! the same model always compiles to the same artifact.
//!
//! Upstream's one-shot bufferization creates a global per constant tensor,
//! but in an order that varies from run to run when a module has several
//! functions; the globals' order is the artifact's constant table, and
//! their names are what `--compile-to` prints. After this pass both follow
//! program order: the functions in module order, each one's ops in
//! pre-order. Globals no function uses keep their relative order after the
//! used ones; globals with names of their own (not `__constant_`) keep
//! their names.

use std::collections::HashMap;

use melior::Context;
use melior::ir::operation::{OperationLike, OperationMutLike, OperationRef, OperationRefMut};
use melior::ir::{BlockLike, RegionLike};

use super::pass::{NoOptions, PassError, PassResult, Root, TccPass};
use crate::ir::util::{body_ops_named, collect_ops, op_name, string_value};

/// The prefix of the globals upstream bufferization names.
const BUFFERIZATION_PREFIX: &str = "__constant_";

pub struct OrderGlobals;

impl TccPass for OrderGlobals {
    const ARGUMENT: &'static str = "tcc-order-globals";
    const SUMMARY: &'static str = "Order memref.globals by first use and name bufferization's constants by that order (reproducible artifacts)";
    const ANCHOR: Option<&'static str> = Some("builtin.module");
    type Options = NoOptions;

    fn run<'c>(&self, context: &'c Context, module: Root<'c>, _: &NoOptions) -> PassResult<'c> {
        let globals = body_ops_named(module, "memref.global");
        if globals.is_empty() {
            return Ok(());
        }
        let by_name: HashMap<String, OperationRef> = globals
            .iter()
            .filter_map(|g| Some((symbol_name(*g)?, *g)))
            .collect();
        // First uses, in program order.
        let mut order: Vec<String> = Vec::new();
        for function in body_ops_named(module, "func.func") {
            for op in collect_ops(function) {
                if op_name(&op) != "memref.get_global" {
                    continue;
                }
                let Some(symbol) = op.attribute("name").ok().and_then(flat_symbol) else {
                    continue;
                };
                if by_name.contains_key(&symbol) && !order.contains(&symbol) {
                    order.push(symbol);
                }
            }
        }
        for global in &globals {
            if let Some(name) = symbol_name(*global)
                && !order.contains(&name)
            {
                order.push(name);
            }
        }
        rename(context, module, &order)?;
        // Move them, in order, to the top of the module.
        let body = module
            .region(0)
            .ok()
            .and_then(|r| r.first_block())
            .ok_or_else(|| PassError::at(module.location(), "module without a body"))?;
        let ordered: Vec<OperationRef> = order
            .iter()
            .filter_map(|n| by_name.get(n).copied())
            .collect();
        for global in ordered.iter().rev() {
            if let Some(first) = body.first_operation()
                && first.to_raw().ptr != global.to_raw().ptr
            {
                unsafe { mlir_sys::mlirOperationMoveBefore(global.to_raw(), first.to_raw()) };
            }
        }
        Ok(())
    }
}

/// Renames the bufferization-made globals of `order` (names as they are
/// now) to `__constant_<shape>` for the first of each shape and
/// `__constant_<shape>_<n>` (n = 0, 1, ...) for the next, in that order.
fn rename<'c>(
    context: &'c melior::Context,
    module: OperationRef<'c, 'c>,
    order: &[String],
) -> Result<(), PassError<'c>> {
    let made: Vec<&String> = order
        .iter()
        .filter(|n| n.starts_with(BUFFERIZATION_PREFIX))
        .collect();
    let taken: Vec<&String> = order
        .iter()
        .filter(|n| !n.starts_with(BUFFERIZATION_PREFIX))
        .collect();
    let mut seen: HashMap<&str, usize> = HashMap::new();
    let mut targets = Vec::with_capacity(made.len());
    for name in &made {
        let base = base_name(name);
        let count = seen.entry(base).or_insert(0);
        let mut target = if *count == 0 {
            base.to_string()
        } else {
            format!("{base}_{}", *count - 1)
        };
        *count += 1;
        while taken.iter().any(|t| **t == target) {
            target.push('_');
        }
        targets.push(target);
    }
    // Through temporary names, so that no rename meets a name still in use.
    for (index, name) in made.iter().enumerate() {
        replace_symbol(
            context,
            module,
            name,
            &format!("__tcc_order_globals_{index}"),
        )?;
    }
    for (index, target) in targets.iter().enumerate() {
        replace_symbol(
            context,
            module,
            &format!("__tcc_order_globals_{index}"),
            target,
        )?;
    }
    Ok(())
}

/// `__constant_4x16xf32_3` without its `_3`.
fn base_name(name: &str) -> &str {
    match name.rsplit_once('_') {
        Some((base, suffix))
            if !suffix.is_empty()
                && suffix.bytes().all(|b| b.is_ascii_digit())
                && base.len() > BUFFERIZATION_PREFIX.len() =>
        {
            base
        }
        _ => name,
    }
}

/// Renames the global `from` to `to`, and every use of it in the module.
fn replace_symbol<'c>(
    context: &'c melior::Context,
    module: OperationRef<'c, 'c>,
    from: &str,
    to: &str,
) -> Result<(), PassError<'c>> {
    let string_ref = |s: &str| mlir_sys::MlirStringRef {
        data: s.as_ptr() as *const _,
        length: s.len(),
    };
    let result = unsafe {
        mlir_sys::mlirSymbolTableReplaceAllSymbolUses(
            string_ref(from),
            string_ref(to),
            module.to_raw(),
        )
    };
    if result.value == 0 {
        return Err(PassError::at(
            module.location(),
            format!("cannot rename the uses of @{from} to @{to}"),
        ));
    }
    for global in body_ops_named(module, "memref.global") {
        if symbol_name(global).as_deref() == Some(from) {
            let name = melior::ir::attribute::StringAttribute::new(context, to);
            // `sym_name` is inherent: set through the op, not as a
            // discardable attribute.
            unsafe { OperationRefMut::from_raw(global.to_raw()) }
                .set_attribute("sym_name", name.into());
        }
    }
    Ok(())
}

fn symbol_name(op: OperationRef) -> Option<String> {
    op.attribute("sym_name").ok().and_then(string_value)
}

/// The name of a symbol reference (`@name`).
fn flat_symbol(attribute: melior::ir::Attribute) -> Option<String> {
    crate::ir::util::symbol_names(attribute).map(|(_, leaf)| leaf)
}

#[cfg(test)]
mod tests {
    use super::base_name;

    #[test]
    fn base_names_drop_only_a_numeric_suffix() {
        assert_eq!(base_name("__constant_4x16xf32"), "__constant_4x16xf32");
        assert_eq!(base_name("__constant_4x16xf32_12"), "__constant_4x16xf32");
        assert_eq!(base_name("__constant_4xi32"), "__constant_4xi32");
        assert_eq!(base_name("__constant_"), "__constant_");
    }
}
