//! Helpers for unit tests that read real MLIR: parse a module or a type in
//! a context with every dialect, and find ops in it.

use melior::Context;
use melior::ir::operation::OperationRef;
use melior::ir::{Module, Type};

/// Parses `source` into a module (unregistered ops allowed, for attribute
/// tests on `"test.op"`); panics on a parse error.
pub fn parse<'c>(context: &'c Context, source: &str) -> Module<'c> {
    context.set_allow_unregistered_dialects(true);
    tcc_dialects::parse_module(context, source, "test.mlir").expect("test IR parses")
}

/// Parses a type; panics on a parse error.
pub fn parse_type<'c>(context: &'c Context, text: &str) -> Type<'c> {
    Type::parse(context, text).expect("test type parses")
}

/// The first op named `name` in `module`, in pre-order; panics if none.
pub fn first_op<'c>(module: &Module<'c>, name: &str) -> OperationRef<'c, 'c> {
    let root = unsafe { OperationRef::from_raw(module.as_operation().to_raw()) };
    super::util::ops_named(root, name)
        .into_iter()
        .next()
        .unwrap_or_else(|| panic!("no {name} in the test module"))
}
