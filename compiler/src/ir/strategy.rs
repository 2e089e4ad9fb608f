//! Reading and writing an op's kernel strategy (`tcc.strategy`, the typed
//! attributes of the tcc dialect decoded by
//! [`tcc_dialects::strategy::KernelStrategy`]).

use melior::ir::operation::{OperationLike, OperationMutLike};

pub use tcc_dialects::strategy::KernelStrategy;

use super::attr_names::STRATEGY;

/// The strategy `op` carries, if any.
pub fn of<'c: 'a, 'a>(op: &impl OperationLike<'c, 'a>) -> Option<KernelStrategy> {
    op.attribute(STRATEGY)
        .ok()
        .and_then(KernelStrategy::from_attribute)
}

/// Whether `op` carries a strategy.
pub fn has<'c: 'a, 'a>(op: &impl OperationLike<'c, 'a>) -> bool {
    op.has_attribute(STRATEGY)
}

/// Sets `op`'s strategy. Fails when the strategy's parameters are invalid
/// (the attribute's verifier says why).
pub fn set<'c: 'a, 'a>(
    context: &'c melior::Context,
    op: &mut impl OperationMutLike<'c, 'a>,
    strategy: &KernelStrategy,
) -> Result<(), String> {
    let attribute = strategy
        .to_attribute(context)
        .ok_or_else(|| format!("invalid kernel strategy {strategy:?}"))?;
    op.set_discardable_attribute(STRATEGY, attribute);
    Ok(())
}
