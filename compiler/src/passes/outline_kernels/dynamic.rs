//! Launches over a symbolic dimension (issue 33, the first slice: a
//! dynamic leading batch) for `tcc-outline-kernels`: the launch grid of a
//! kernel whose buffers have a `?` is computed on the host from their
//! extents (`memref.dim`), in place of the constant the strategy gives
//! at the declared maximum, so that a call at a smaller batch launches
//! only the work-groups it needs and the kernels' bounds guards cover the
//! rest. The kernels' own dynamic extents travel as `index` arguments
//! (`capture`: the host values a rebuilt view reads).

use melior::Context;
use melior::ir::attribute::IntegerAttribute;
use melior::ir::operation::{OperationBuilder, OperationLike, OperationMutLike, OperationRef};
use melior::ir::r#type::Type;
use melior::ir::{BlockLike, Identifier, Location, Value, ValueLike};

use crate::ir::strategy::KernelStrategy;
use crate::ir::types::ranked_shape;
use crate::passes::pass::PassError;

/// The buffer whose elements a kernel's launch counts: the largest (at
/// `extent` for a `?`) that one of `members` writes, with its shape.
pub(super) fn counted_buffer<'c>(
    members: &[OperationRef<'c, 'c>],
    extent: Option<i64>,
) -> Option<(Value<'c, 'c>, Vec<Option<i64>>)> {
    members
        .iter()
        .flat_map(|member| {
            let inits = crate::ir::operand::init_operands(*member);
            if crate::ir::util::op_name(member) == "memref.copy" {
                member.operand(1).into_iter().collect()
            } else if inits.is_empty() {
                // tcc's row ops (`tcc.layer_norm_rows`) write their last
                // operand.
                member
                    .operand(member.operand_count().saturating_sub(1))
                    .into_iter()
                    .collect()
            } else {
                inits
            }
        })
        .filter_map(|value| Some((value, ranked_shape(value.r#type())?)))
        .max_by_key(|(value, _)| {
            crate::ir::dynamic::shape_at(value.r#type(), extent)
                .map_or(0, |shape| shape.iter().product::<i64>())
        })
}

/// Inserts ops before `launch` on the host.
struct HostBuilder<'c, 'l> {
    context: &'c Context,
    launch: OperationRef<'c, 'l>,
    location: Location<'c>,
}

impl<'c> HostBuilder<'c, '_> {
    fn index(&self) -> Type<'c> {
        Type::index(self.context)
    }

    fn insert(&self, builder: OperationBuilder<'c>) -> Result<Value<'c, 'c>, PassError<'c>> {
        let op = builder
            .add_results(&[self.index()])
            .build()
            .map_err(|e| PassError::at(self.location, e.to_string()))?;
        let block = self
            .launch
            .block()
            .ok_or_else(|| PassError::at(self.location, "launch outside a block"))?;
        let op = block
            .insert_operation_before(unsafe { OperationRef::from_raw(self.launch.to_raw()) }, op);
        let result = op
            .result(0)
            .map_err(|e| PassError::at(self.location, e.to_string()))?;
        Ok(unsafe { Value::from_raw(result.to_raw()) })
    }

    fn constant(&self, value: i64) -> Result<Value<'c, 'c>, PassError<'c>> {
        self.insert(
            OperationBuilder::new("arith.constant", self.location).add_attributes(&[(
                Identifier::new(self.context, "value"),
                IntegerAttribute::new(self.index(), value).into(),
            )]),
        )
    }

    fn binary(
        &self,
        name: &str,
        lhs: Value<'c, 'c>,
        rhs: Value<'c, 'c>,
    ) -> Result<Value<'c, 'c>, PassError<'c>> {
        self.insert(OperationBuilder::new(name, self.location).add_operands(&[lhs, rhs]))
    }

    /// `value`'s extent `dim` on the host.
    fn dim(&self, value: Value<'c, 'c>, dim: usize) -> Result<Value<'c, 'c>, PassError<'c>> {
        let index = self.constant(dim as i64)?;
        self.insert(
            OperationBuilder::new("memref.dim", self.location).add_operands(&[value, index]),
        )
    }

    /// The product of `shape`'s extents from `from` to `to` (a `?` read
    /// from `value` on the host), or `None` when they are all static.
    fn product(
        &self,
        value: Value<'c, 'c>,
        shape: &[Option<i64>],
        range: std::ops::Range<usize>,
    ) -> Result<Option<Value<'c, 'c>>, PassError<'c>> {
        let slice = &shape[range.clone()];
        if slice.iter().all(Option::is_some) {
            return Ok(None);
        }
        let mut product: i64 = 1;
        let mut dynamic: Option<Value<'c, 'c>> = None;
        for (offset, extent) in slice.iter().enumerate() {
            match extent {
                Some(e) => product = product.saturating_mul(*e),
                None => {
                    let d = self.dim(value, range.start + offset)?;
                    dynamic = Some(match dynamic {
                        Some(p) => self.binary("arith.muli", p, d)?,
                        None => d,
                    });
                }
            }
        }
        let dynamic = dynamic.expect("a dynamic extent");
        if product == 1 {
            return Ok(Some(dynamic));
        }
        let factor = self.constant(product)?;
        Ok(Some(self.binary("arith.muli", dynamic, factor)?))
    }

    fn ceil_div(&self, value: Value<'c, 'c>, divisor: i64) -> Result<Value<'c, 'c>, PassError<'c>> {
        if divisor == 1 {
            return Ok(value);
        }
        let divisor = self.constant(divisor)?;
        self.binary("arith.ceildivui", value, divisor)
    }
}

/// Whether any of `members` computes on a dynamically shaped value.
pub(super) fn is_dynamic_group(members: &[OperationRef]) -> bool {
    members.iter().any(|member| {
        member
            .operands()
            .any(|v| crate::ir::dynamic::is_dynamic(v.r#type()))
    })
}

/// Replaces the constant grid size of `launch` along the dynamic axis
/// (launched for the declared maximum, with `strategy`) by one computed on
/// the host from the extents of `counted`, the buffer its launch counts
/// ([`counted_buffer`] of the kernel's ops, taken before they moved into
/// the kernel). An error names the kernel where its strategy's launch
/// cannot follow a dynamic extent yet.
pub(super) fn dynamic_grid<'c>(
    context: &'c Context,
    launch: OperationRef<'c, 'c>,
    counted: Option<(Value<'c, 'c>, Vec<Option<i64>>)>,
    strategy: &KernelStrategy,
    name: &str,
) -> Result<(), PassError<'c>> {
    let location = launch.location();
    let host = HostBuilder {
        context,
        launch,
        location,
    };
    let unsupported = |what: &str| {
        PassError::at(
            location,
            format!(
                "kernel {name}: {what} over a dynamic dimension ({}) is not supported yet by tcc-outline-kernels; compile one shape with --input-shape",
                crate::ir::dynamic::describe_dims(&crate::ir::dynamic::module_dims(launch)),
            ),
        )
    };
    let (buffer, shape) = counted.ok_or_else(|| unsupported("a kernel writing no buffer"))?;
    let rank = shape.len();
    // The grid along x as a host value, or None where it stays static.
    let grid_x = match *strategy {
        KernelStrategy::Loops {
            workgroup_size,
            max_workgroups,
        } => {
            let Some(points) = host.product(buffer, &shape, 0..rank)? else {
                return Ok(());
            };
            let groups = host.ceil_div(points, workgroup_size)?;
            match max_workgroups {
                Some(limit) => {
                    let limit = host.constant(limit.max(1))?;
                    host.binary("arith.minui", groups, limit)?
                }
                None => groups,
            }
        }
        KernelStrategy::RowReduce { .. } => match host.product(buffer, &shape, 0..rank)? {
            Some(points) => points,
            None => return Ok(()),
        },
        // One work-group per row of the last operand (a softmax's row may
        // be symbolic: the template reads its length).
        KernelStrategy::LayerNorm { rows, .. } if rows > 1 => {
            return Err(unsupported(
                "a layer norm of several rows a work-group over a dynamic row count",
            ));
        }
        KernelStrategy::Softmax { .. } | KernelStrategy::LayerNorm { .. } => {
            match host.product(buffer, &shape, 0..rank.saturating_sub(1))? {
                Some(rows) => rows,
                None => return Ok(()),
            }
        }
        // Tiles along (n, m): M (the output's rows, all but its last
        // dimension, with a batch of one) may be dynamic, its tiles going
        // along y; or, with static rows, the batch of products (attention's
        // heads x batch), which goes along z (times the split-K slices).
        KernelStrategy::Gemm {
            config,
            shape: gemm,
            ..
        } => {
            if shape.last().is_some_and(Option::is_none) {
                return Err(unsupported("a GEMM with a dynamic N"));
            }
            if gemm.batch != 1 {
                if rank < 3 || shape[rank - 2].is_none() {
                    return Err(unsupported(
                        "a GEMM with a dynamic M and a batch of products",
                    ));
                }
                let Some(batch) = host.product(buffer, &shape, 0..rank - 2)? else {
                    return Ok(());
                };
                let slices = i64::from(config.split_k.max(1));
                let grid_z = if slices == 1 {
                    batch
                } else {
                    let slices = host.constant(slices)?;
                    host.binary("arith.muli", batch, slices)?
                };
                let mut launch =
                    unsafe { melior::ir::operation::OperationRefMut::from_raw(launch.to_raw()) };
                launch.set_operand(2, grid_z);
                return Ok(());
            }
            let Some(m) = host.product(buffer, &shape, 0..rank.saturating_sub(1))? else {
                return Ok(());
            };
            let tiles_m = host.ceil_div(m, i64::from(config.tile_m))?;
            let mut launch =
                unsafe { melior::ir::operation::OperationRefMut::from_raw(launch.to_raw()) };
            launch.set_operand(1, tiles_m);
            return Ok(());
        }
        KernelStrategy::Window { .. } => return Err(unsupported("the window template")),
        KernelStrategy::Attention { .. } => return Err(unsupported("the attention template")),
    };
    let mut launch = unsafe { melior::ir::operation::OperationRefMut::from_raw(launch.to_raw()) };
    // gpu.launch_func's operands start with the grid sizes (x, y, z).
    launch.set_operand(0, grid_x);
    Ok(())
}
