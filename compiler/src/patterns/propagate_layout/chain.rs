//! Chains of `tosa.reshape` and `tosa.transpose` seen as one permutation
//! of "atoms", and the two rewrites that need that view:
//!
//! - [`collapse_view_chains`]: a chain of reshapes and transposes is one
//!   reshape of its source into atoms, one transpose of the atoms and one
//!   reshape that merges them into the chain's result shape. An exporter's
//!   head split written in sequence-major order (`nn.MultiheadAttention`:
//!   `[S, B, 3E] -> [S, B*H, D] -> transpose -> [B, H, S, D]`) interleaves
//!   three reshapes and two transposes that together only swap two
//!   dimensions; collapsed, it is the `[B, S, H, D] -> [B, H, S, D]`
//!   transpose that the attention kernel reads through strides.
//! - [`sink_row_permutations`]: a `tosa.matmul` whose left operand is a
//!   permutation of its rows (a sequence-major transpose of tokens: the
//!   contracted dimension keeps its place) multiplies the rows in their
//!   source order and permutes the product's rows instead, so that the
//!   permutation meets the one after the projection and cancels. When the
//!   rows are `tcc.attention`'s output, whose layout the kernel writes
//!   through strides, the heads move next to the head dimension first.
//!
//! - [`slice_before_split`]: a slice of one part of a split dimension is a
//!   slice of the unsplit dimension, then the split.
//!
//! An atom is a part of a source dimension that stays whole through the
//! chain: a reshape that splits a dimension splits its atom, one that
//! merges dimensions groups atoms. Static shapes only.

use melior::Context;
use melior::ir::operation::{OperationLike, OperationRef};
use melior::ir::{Value, ValueLike};

use super::{operand_of, result_of, transpose_perm};
use crate::ir::error::PassError;
use crate::ir::tosa_builder::TosaBuilder;
use crate::ir::types::StaticTensor;
use crate::ir::util::{defining_op, op_name, replace_and_erase, users};

/// A chain of reshapes and transposes from `source` to a result, as a
/// permutation of atoms.
struct ViewChain<'c> {
    source: Value<'c, 'c>,
    source_shape: Vec<i64>,
    /// Atom sizes, indexed by atom id.
    sizes: Vec<i64>,
    /// The atoms in the source's order (its row-major order).
    source_order: Vec<usize>,
    /// The result's dimensions, each the atoms it holds in order (a unit
    /// dimension holds none).
    result: Vec<Vec<usize>>,
    result_shape: Vec<i64>,
    /// Ops in the chain, and how many of them are transposes.
    ops: usize,
    transposes: usize,
}

impl<'c> ViewChain<'c> {
    /// The chain ending at `value`: producers that are reshapes or
    /// transposes of static tensors, each (but the last) used only by the
    /// next. `None` when `value` is no such op's result.
    fn ending_at(value: Value<'c, 'c>) -> Option<Self> {
        let mut ops = Vec::new();
        let mut current = value;
        while let Some(op) = defining_op(current) {
            let name = op_name(&op);
            if name != "tosa.reshape" && name != "tosa.transpose" {
                break;
            }
            if !ops.is_empty() && users(current).len() != 1 {
                break;
            }
            StaticTensor::of(current.r#type())?;
            ops.push(op);
            current = op.operand(0).ok()?;
        }
        if ops.is_empty() {
            return None;
        }
        ops.reverse();
        let source = current;
        let shape = StaticTensor::of(source.r#type())?.shape;
        let mut sizes = Vec::new();
        let mut dims: Vec<Vec<usize>> = Vec::new();
        for &extent in &shape {
            if extent == 1 {
                dims.push(Vec::new());
            } else {
                sizes.push(extent);
                dims.push(vec![sizes.len() - 1]);
            }
        }
        let mut source_order: Vec<usize> = (0..sizes.len()).collect();
        let mut transposes = 0;
        for op in &ops {
            if let Some(perm) = transpose_perm(*op) {
                transposes += 1;
                dims = perm
                    .iter()
                    .map(|&p| dims.get(p).cloned())
                    .collect::<Option<_>>()?;
                continue;
            }
            let target = StaticTensor::of(op.result(0).ok()?.r#type())?.shape;
            let mut flat: Vec<usize> = dims.concat();
            flat.reverse();
            let mut regrouped = Vec::new();
            for &extent in &target {
                let mut group = Vec::new();
                let mut product = 1i64;
                while product < extent {
                    let atom = flat.pop()?;
                    let size = sizes[atom];
                    if product * size <= extent {
                        product *= size;
                        group.push(atom);
                        continue;
                    }
                    // The target's boundary falls inside this atom: split
                    // it into an outer part that completes the dimension
                    // and the inner rest.
                    let outer = extent / product;
                    if extent % product != 0 || size % outer != 0 {
                        return None;
                    }
                    sizes[atom] = outer;
                    sizes.push(size / outer);
                    let inner = sizes.len() - 1;
                    let at = source_order.iter().position(|&a| a == atom)?;
                    source_order.insert(at + 1, inner);
                    product *= outer;
                    group.push(atom);
                    flat.push(inner);
                }
                if product != extent {
                    return None;
                }
                regrouped.push(group);
            }
            if !flat.is_empty() {
                return None;
            }
            dims = regrouped;
        }
        Some(ViewChain {
            source,
            source_shape: shape,
            sizes,
            source_order,
            result: dims,
            result_shape: StaticTensor::of(value.r#type())?.shape,
            ops: ops.len(),
            transposes,
        })
    }

    /// The atoms in the result's order.
    fn result_order(&self) -> Vec<usize> {
        self.result.concat()
    }
}

/// The chain's canonical form: the source reshaped into blocks (runs of
/// atoms adjacent in the source that stay adjacent, in order, within one
/// result dimension), one transpose of the blocks, and a reshape merging
/// them into the result.
struct Canonical {
    blocks: Vec<i64>,
    perm: Vec<usize>,
    transposed: Vec<i64>,
}

impl Canonical {
    fn of(chain: &ViewChain) -> Self {
        let mut dim_of = vec![0; chain.sizes.len()];
        for (d, atoms) in chain.result.iter().enumerate() {
            for &a in atoms {
                dim_of[a] = d;
            }
        }
        let order = chain.result_order();
        let position = |atom: usize| order.iter().position(|&a| a == atom).unwrap_or(0);
        // Blocks of atoms in the source order.
        let mut blocks: Vec<Vec<usize>> = Vec::new();
        for &atom in &chain.source_order {
            match blocks.last_mut() {
                Some(block)
                    if dim_of[*block.last().unwrap_or(&atom)] == dim_of[atom]
                        && position(atom) == position(*block.last().unwrap_or(&atom)) + 1 =>
                {
                    block.push(atom)
                }
                _ => blocks.push(vec![atom]),
            }
        }
        let size = |block: &Vec<usize>| block.iter().map(|&a| chain.sizes[a]).product::<i64>();
        let mut by_result: Vec<usize> = (0..blocks.len()).collect();
        by_result.sort_by_key(|&b| position(blocks[b][0]));
        // Leading unit dimensions that the source and the result share stay
        // in front (a batch of 1): the form a channel shuffle's recognizer
        // (`tcc-merge-grouped-convs`) and the attention's operands expect.
        let leading = |shape: &[i64]| shape.iter().take_while(|&&d| d == 1).count();
        let units = leading(&chain.source_shape).min(leading(&chain.result_shape));
        let ones = std::iter::repeat_n(1i64, units);
        Canonical {
            blocks: ones.clone().chain(blocks.iter().map(size)).collect(),
            transposed: ones
                .chain(by_result.iter().map(|&b| size(&blocks[b])))
                .collect(),
            perm: (0..units)
                .chain(by_result.iter().map(|&b| b + units))
                .collect(),
        }
    }

    fn transposes(&self) -> bool {
        self.perm.iter().enumerate().any(|(i, &p)| i != p)
    }

    /// Ops of the form, given the source's and the result's shapes.
    fn ops(&self, source: &[i64], result: &[i64]) -> usize {
        usize::from(source != self.blocks.as_slice())
            + usize::from(self.transposes())
            + usize::from(
                result
                    != if self.transposes() {
                        &self.transposed
                    } else {
                        &self.blocks
                    },
            )
    }

    /// Builds the form on `source` before `anchor`.
    fn build<'c>(
        &self,
        context: &'c Context,
        anchor: OperationRef<'c, 'c>,
        source: Value<'c, 'c>,
        result: &[i64],
    ) -> Result<Value<'c, 'c>, PassError<'c>> {
        let builder = TosaBuilder::before(context, anchor)?;
        let mut value = source;
        if StaticTensor::of(value.r#type()).map(|t| t.shape) != Some(self.blocks.clone()) {
            value = builder.reshape(value, &self.blocks)?;
        }
        if self.transposes() {
            value = builder.transpose(value, &self.perm)?;
        }
        if StaticTensor::of(value.r#type()).map(|t| t.shape).as_deref() != Some(result) {
            value = builder.reshape(value, result)?;
        }
        Ok(value)
    }
}

/// Replaces the chain of reshapes and transposes ending at `op` by its
/// canonical form where that has fewer transposes, or as many and fewer
/// ops. Returns whether it rewrote.
pub fn collapse_view_chains<'c>(
    context: &'c Context,
    op: OperationRef<'c, 'c>,
) -> Result<bool, PassError<'c>> {
    let name = op_name(&op);
    if name != "tosa.reshape" && name != "tosa.transpose" {
        return Ok(false);
    }
    let result = result_of(op)?;
    // Only at a chain's end: a result used once by a reshape or transpose
    // is the middle of a longer chain.
    if let [user] = users(result).as_slice()
        && matches!(op_name(user).as_str(), "tosa.reshape" | "tosa.transpose")
    {
        return Ok(false);
    }
    let Some(chain) = ViewChain::ending_at(result) else {
        return Ok(false);
    };
    if chain.ops < 2 {
        return Ok(false);
    }
    let form = Canonical::of(&chain);
    let ops = form.ops(&chain.source_shape, &chain.result_shape);
    let transposes = usize::from(form.transposes());
    let better =
        transposes < chain.transposes || (transposes == chain.transposes && ops < chain.ops);
    if !better {
        return Ok(false);
    }
    let replacement = form.build(context, op, chain.source, &chain.result_shape)?;
    replace_and_erase(op, result, replacement);
    Ok(true)
}

/// `tosa.matmul(rows, weights)` whose `rows` (`[1, M, K]`) permute their
/// source's rows: the product of the rows in source order, its rows then
/// permuted (see the module comment). Returns whether it rewrote.
pub fn sink_row_permutations<'c>(
    context: &'c Context,
    op: OperationRef<'c, 'c>,
) -> Result<bool, PassError<'c>> {
    if op_name(&op) != "tosa.matmul" {
        return Ok(false);
    }
    let rows = operand_of(op, 0)?;
    let Some(chain) = ViewChain::ending_at(rows) else {
        return Ok(false);
    };
    let product = result_of(op)?;
    let (Some(product_type), [1, m, k]) = (
        StaticTensor::of(product.r#type()),
        chain.result_shape.as_slice(),
    ) else {
        return Ok(false);
    };
    let (m, k) = (*m, *k);
    let Some(&n) = product_type.shape.get(2) else {
        return Ok(false);
    };
    let Some(k_atoms) = chain.result.last().filter(|atoms| !atoms.is_empty()) else {
        return Ok(false);
    };
    let count = chain.source_order.len();
    let row_atoms_in_result: Vec<usize> = chain.result[..chain.result.len() - 1].concat();
    let base_rows: Vec<usize> = chain
        .source_order
        .iter()
        .copied()
        .filter(|a| !k_atoms.contains(a))
        .collect();
    // A row permutation at all?
    if base_rows == row_atoms_in_result {
        return Ok(false);
    }
    // The source's atoms with the contracted ones last, in the result's
    // order: the source itself where they already are, else (only where
    // the transpose comes for free: the attention kernel writes its output
    // through strides, `tcc-fold-attention-transposes`) a whole-dimension
    // permutation of it.
    let contracted_last = chain.source_order[count - k_atoms.len()..] == k_atoms[..];
    if !contracted_last {
        let from_attention =
            defining_op(chain.source).is_some_and(|p| op_name(&p) == "tcc.attention");
        let whole_dimensions = chain.source_shape.iter().all(|&d| d != 1)
            && chain.sizes.len() == chain.source_shape.len()
            && chain.source_order.iter().enumerate().all(|(i, &a)| i == a);
        if !from_attention || !whole_dimensions {
            return Ok(false);
        }
    }
    let builder = TosaBuilder::before(context, op)?;
    let base = if contracted_last {
        chain.source
    } else {
        let perm: Vec<usize> = base_rows.iter().chain(k_atoms.iter()).copied().collect();
        builder.transpose(chain.source, &perm)?
    };
    let flat = builder.reshape(base, &[1, m, k])?;
    let mut operands = vec![flat];
    for index in 1..op.operand_count() {
        operands.push(operand_of(op, index)?);
    }
    let unpermuted = builder.insert("tosa.matmul", &operands, product.r#type(), &[])?;
    let mut row_shape: Vec<i64> = base_rows.iter().map(|&a| chain.sizes[a]).collect();
    row_shape.push(n);
    let split = builder.reshape(unpermuted, &row_shape)?;
    let mut perm: Vec<usize> = row_atoms_in_result
        .iter()
        .map(|a| base_rows.iter().position(|b| b == a))
        .collect::<Option<_>>()
        .ok_or_else(|| PassError::at(op.location(), "row atoms do not match"))?;
    perm.push(base_rows.len());
    let permuted = builder.transpose(split, &perm)?;
    let replacement = builder.reshape(permuted, &[1, m, n])?;
    replace_and_erase(op, product, replacement);
    Ok(true)
}

/// `tosa.slice(reshape(x))` where the reshape splits one dimension of `x`
/// into several and the slice takes a range of the outermost of them (and
/// all of the inner ones): the same range of `x`'s dimension (scaled by
/// the inner ones' size), then the reshape. A fused Q/K/V projection
/// split as `[S, B, 3E] -> [S, B, 3, E]`, then one slice per third, is the
/// case: each third becomes a slice of the projection's last dimension,
/// so that its head split is a plain reshape of a strided view (a view,
/// where slicing the split form made a copy). Returns whether it rewrote.
pub fn slice_before_split<'c>(
    context: &'c Context,
    op: OperationRef<'c, 'c>,
) -> Result<bool, PassError<'c>> {
    if op_name(&op) != "tosa.slice" {
        return Ok(false);
    }
    let input = operand_of(op, 0)?;
    let Some(reshape) = defining_op(input).filter(|p| op_name(p) == "tosa.reshape") else {
        return Ok(false);
    };
    let source = operand_of(reshape, 0)?;
    let (Some(x), Some(split)) = (
        StaticTensor::of(source.r#type()),
        StaticTensor::of(input.r#type()),
    ) else {
        return Ok(false);
    };
    let (Some(start), Some(size)) = (
        crate::patterns::fold_constants::shape_operand(op, 1),
        crate::patterns::fold_constants::shape_operand(op, 2),
    ) else {
        return Ok(false);
    };
    // Pair x's dimensions with the reshape's where their running
    // products meet: the sliced dimension must lie in a group that splits
    // one dimension of x.
    let rank = split.shape.len();
    let sliced_dims: Vec<usize> = (0..rank)
        .filter(|&d| !(start[d] == 0 && (size[d] == split.shape[d] || size[d] == -1)))
        .collect();
    let [sliced_dim] = sliced_dims.as_slice() else {
        return Ok(false);
    };
    let sliced_dim = *sliced_dim;
    let (mut xi, mut si) = (0usize, 0usize);
    let (mut x_product, mut s_product) = (1i64, 1i64);
    let mut pairing = None;
    while xi < x.shape.len() || si < rank {
        let (x_start, s_start) = (xi, si);
        loop {
            if x_product <= s_product && xi < x.shape.len() {
                x_product *= x.shape[xi];
                xi += 1;
            } else if si < rank {
                s_product *= split.shape[si];
                si += 1;
            } else {
                break;
            }
            if x_product == s_product && xi > x_start && si > s_start {
                break;
            }
        }
        if x_product != s_product {
            return Ok(false);
        }
        if (s_start..si).contains(&sliced_dim) {
            pairing = Some((x_start..xi, s_start..si));
            break;
        }
    }
    let Some((x_dims, group)) = pairing else {
        return Ok(false);
    };
    // One dimension of x, split; the slice on the first of the parts that
    // are not units.
    let x_dims: Vec<usize> = x_dims.filter(|&d| x.shape[d] != 1).collect();
    let [prefix] = x_dims.as_slice() else {
        return Ok(false);
    };
    let prefix = *prefix;
    if group.clone().any(|d| d < sliced_dim && split.shape[d] != 1) {
        return Ok(false);
    }
    let group = sliced_dim..group.end;
    let inner: i64 = split.shape[group.start + 1..group.end].iter().product();
    let result = result_of(op)?;
    let Some(sliced) = StaticTensor::of(result.r#type()) else {
        return Ok(false);
    };
    let mut new_start = vec![0i64; x.shape.len()];
    let mut new_size = x.shape.clone();
    new_start[prefix] = start[group.start] * inner;
    new_size[prefix] = sliced.shape[group.start] * inner;
    let builder = TosaBuilder::before(context, op)?;
    let mut window_shape = x.shape.clone();
    window_shape[prefix] = new_size[prefix];
    let window_type = StaticTensor {
        shape: window_shape,
        element: sliced.element,
    }
    .to_type();
    let start_value = builder.const_shape(&new_start)?;
    let size_value = builder.const_shape(&new_size)?;
    let window = builder.insert(
        "tosa.slice",
        &[source, start_value, size_value],
        window_type,
        &[],
    )?;
    let replacement = builder.reshape(window, &sliced.shape)?;
    replace_and_erase(op, result, replacement);
    Ok(true)
}
