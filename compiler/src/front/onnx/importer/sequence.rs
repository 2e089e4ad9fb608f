//! The sequence and optional ops, evaluated at import time: a sequence is
//! a list of tensor values ([`Seq`]), an optional holds one value or none,
//! and the ops rearrange them (their positions, split sizes and axes must
//! be constants). Only the tensors taken out of them reach the compiled
//! program, so a model whose sequences are built from a static structure
//! (exporters' `SplitToSequence → ... → ConcatFromSequence`, a Loop that
//! appends to a sequence) imports like any other.

use super::super::dtype::DType;
use super::super::error::{ImportError, Result, bail};
use super::super::node::Value;
use super::super::ops::movement::concat_values;
use super::super::ops::shape::{reshape_value, strided_slice_value};
use super::super::proto::NodeProto;
use super::super::tensor::Const;
use super::Importer;
use super::scope::{Item, Seq};

/// Imports `proto` when it is a sequence or optional op (or an Identity
/// of a sequence or optional).
pub(super) fn import(
    imp: &mut Importer,
    proto: &NodeProto,
    items: &[Option<Item>],
    opset: i64,
) -> Result<Option<Vec<Item>>> {
    let op = proto.op_type.as_str();
    let cx = Cx { proto, items };
    let out = match op {
        "SequenceEmpty" => {
            let code = cx.int("dtype", DType::F32.onnx_code() as i64) as i32;
            let Some(elem) = DType::from_onnx(code) else {
                bail!(
                    "SequenceEmpty's dtype {} is not supported",
                    DType::onnx_code_name(code)
                )
            };
            Item::Seq(Seq {
                elem,
                items: Vec::new(),
            })
        }
        "SequenceConstruct" => {
            let mut parts = Vec::new();
            for i in 0..items.len() {
                parts.push(cx.tensor(i)?.clone());
            }
            let Some(first) = parts.first() else {
                bail!("SequenceConstruct needs at least one input")
            };
            let elem = first.dtype();
            if parts.iter().any(|p| p.dtype() != elem) {
                bail!("SequenceConstruct's inputs must have one element type");
            }
            Item::Seq(Seq { elem, items: parts })
        }
        "SequenceAt" => {
            let seq = cx.seq(0)?;
            let at = position(&cx, 1, seq.items.len(), false)?
                .ok_or_else(|| ImportError::new("SequenceAt needs a position"))?;
            Item::Tensor(seq.items[at].clone())
        }
        "SequenceInsert" => {
            let seq = cx.seq(0)?;
            let value = cx.tensor(1)?.clone();
            if value.dtype() != seq.elem {
                bail!(
                    "SequenceInsert of a {} tensor into a sequence of {}",
                    value.dtype(),
                    seq.elem
                );
            }
            let at = position(&cx, 2, seq.items.len(), true)?.unwrap_or(seq.items.len());
            let mut seq = seq.clone();
            seq.items.insert(at, value);
            Item::Seq(seq)
        }
        "SequenceErase" => {
            let seq = cx.seq(0)?;
            if seq.items.is_empty() {
                bail!("SequenceErase of an empty sequence");
            }
            let at = position(&cx, 1, seq.items.len(), false)?.unwrap_or(seq.items.len() - 1);
            let mut seq = seq.clone();
            seq.items.remove(at);
            Item::Seq(seq)
        }
        "SequenceLength" => {
            let n = cx.seq(0)?.items.len() as i64;
            Item::Tensor(Value::constant(Const::from_i64(DType::I64, vec![], &[n])))
        }
        "SplitToSequence" => split_to_sequence(imp, &cx)?,
        "ConcatFromSequence" => concat_from_sequence(imp, &cx)?,
        "Optional" => match items.first() {
            Some(Some(item)) => Item::Opt(Some(Box::new(item.clone()))),
            _ => Item::Opt(None),
        },
        "OptionalHasElement" => {
            let has = match items.first() {
                Some(Some(Item::Opt(inner))) => inner.is_some(),
                // Opset 18: a tensor or sequence input has its element;
                // an omitted input is an empty optional.
                Some(Some(_)) if opset >= 18 => true,
                Some(Some(other)) => {
                    bail!("OptionalHasElement takes an optional, not {}", other.kind())
                }
                _ if opset >= 18 => false,
                _ => bail!("OptionalHasElement needs an input"),
            };
            Item::Tensor(Value::constant(Const::from_i64(
                DType::Bool,
                vec![],
                &[has as i64],
            )))
        }
        "OptionalGetElement" => match items.first() {
            Some(Some(Item::Opt(Some(inner)))) => (**inner).clone(),
            Some(Some(Item::Opt(None))) => {
                bail!("OptionalGetElement of an empty optional (known at import time)")
            }
            Some(Some(other)) if opset >= 18 => other.clone(),
            Some(Some(other)) => {
                bail!("OptionalGetElement takes an optional, not {}", other.kind())
            }
            _ => bail!("OptionalGetElement needs an input"),
        },
        "Identity" => match items.first() {
            Some(Some(item @ (Item::Seq(_) | Item::Opt(_)))) => item.clone(),
            _ => return Ok(None),
        },
        _ => return Ok(None),
    };
    Ok(Some(vec![out]))
}

struct Cx<'a> {
    proto: &'a NodeProto,
    items: &'a [Option<Item>],
}

impl Cx<'_> {
    fn item(&self, i: usize) -> Result<&Item> {
        match self.items.get(i) {
            Some(Some(item)) => Ok(item),
            _ => bail!("{} needs input #{i}", self.proto.op_type),
        }
    }

    fn tensor(&self, i: usize) -> Result<&Value> {
        self.item(i)?
            .tensor(&format!("{}'s input #{i}", self.proto.op_type))
    }

    fn seq(&self, i: usize) -> Result<&Seq> {
        self.item(i)?
            .seq(&format!("{}'s input #{i}", self.proto.op_type))
    }

    fn int_opt(&self, name: &str) -> Option<i64> {
        self.proto
            .attribute
            .iter()
            .find(|a| a.name == name)
            .map(|a| a.i)
    }

    fn int(&self, name: &str, default: i64) -> i64 {
        self.int_opt(name).unwrap_or(default)
    }
}

/// The position input `i` (a constant scalar, negative counting from the
/// end), in `[0, len)`, or `[0, len]` when `insert`.
fn position(cx: &Cx, i: usize, len: usize, insert: bool) -> Result<Option<usize>> {
    let Some(Some(item)) = cx.items.get(i) else {
        return Ok(None);
    };
    let p = match item.tensor("a sequence position")? {
        Value::Const(c) if c.numel() == 1 => c.i64_at(0),
        Value::Const(_) => bail!("{}'s position must be a scalar", cx.proto.op_type),
        Value::Tensor(_) => {
            return Err(ImportError::needs_value(
                format!(
                    "{}'s position ('{}') is computed at run time: tcc needs sequence positions to be known at import time",
                    cx.proto.op_type, cx.proto.input[i]
                ),
                &cx.proto.input[i],
            ));
        }
    };
    let n = len as i64;
    let hi = if insert { n } else { n - 1 };
    if p < -n || p > hi {
        bail!(
            "{}'s position {p} is out of range for a sequence of {len}",
            cx.proto.op_type
        );
    }
    Ok(Some(if p < 0 { p + n } else { p } as usize))
}

fn norm_axis(axis: i64, rank: usize, what: &str) -> Result<usize> {
    let r = rank as i64;
    if axis < -r || axis >= r {
        bail!("{what} {axis} is out of range for rank {rank}");
    }
    Ok(if axis < 0 { axis + r } else { axis } as usize)
}

/// `SplitToSequence`: pieces of `split`'s sizes (a scalar: pieces of that
/// size, the last one shorter; absent: pieces of 1, squeezed unless
/// `keepdims`).
fn split_to_sequence(imp: &mut Importer, cx: &Cx) -> Result<Item> {
    let x = cx.tensor(0)?.clone();
    let rank = x.rank();
    if rank == 0 {
        bail!("SplitToSequence of a scalar");
    }
    let axis = norm_axis(cx.int("axis", 0), rank, "SplitToSequence's axis")?;
    let dim = x.shape()[axis];
    let split = match cx.items.get(1) {
        Some(Some(item)) => match item.tensor("SplitToSequence's split")? {
            Value::Const(c) => Some(c.clone()),
            Value::Tensor(_) => {
                let name = cx.proto.input.get(1).map_or("", String::as_str);
                return Err(ImportError::needs_value(
                    format!(
                        "SplitToSequence's split ('{name}') is computed at run time: tcc needs it to be a constant"
                    ),
                    name,
                ));
            }
        },
        _ => None,
    };
    let (sizes, squeeze) = match &split {
        None => (vec![1; dim as usize], cx.int("keepdims", 1) == 0),
        Some(c) if c.shape.is_empty() => {
            let s = c.i64_at(0);
            if s <= 0 {
                bail!("SplitToSequence's split {s} must be positive");
            }
            let mut sizes = Vec::new();
            let mut left = dim;
            while left > 0 {
                sizes.push(s.min(left));
                left -= s;
            }
            (sizes, false)
        }
        Some(c) => {
            let sizes = c.i64s();
            if sizes.iter().any(|&s| s < 0) || sizes.iter().sum::<i64>() != dim {
                bail!("SplitToSequence's split {sizes:?} does not add up to the axis size {dim}");
            }
            (sizes, false)
        }
    };
    let mut items = Vec::new();
    let mut start = 0;
    for size in sizes {
        let mut starts = vec![0; rank];
        starts[axis] = start;
        let mut shape = x.shape();
        shape[axis] = size;
        let mut part = strided_slice_value(imp, &x, &starts, &vec![1; rank], &shape)?;
        if squeeze {
            shape.remove(axis);
            part = reshape_value(imp, &part, &shape)?;
        }
        items.push(part);
        start += size;
    }
    Ok(Item::Seq(Seq {
        elem: x.dtype(),
        items,
    }))
}

/// `ConcatFromSequence`: the elements concatenated along `axis`, or
/// stacked along a new one with `new_axis = 1`.
fn concat_from_sequence(imp: &mut Importer, cx: &Cx) -> Result<Item> {
    let seq = cx.seq(0)?;
    let Some(first) = seq.items.first() else {
        bail!("ConcatFromSequence of an empty sequence")
    };
    let Some(axis) = cx.int_opt("axis") else {
        bail!("ConcatFromSequence needs an axis")
    };
    let new_axis = cx.int("new_axis", 0) != 0;
    let rank = first.rank();
    let parts: Vec<Value> = if new_axis {
        let axis = norm_axis(axis, rank + 1, "ConcatFromSequence's axis")?;
        let mut out = Vec::new();
        for p in &seq.items {
            let mut shape = p.shape();
            if shape.len() != rank {
                bail!("ConcatFromSequence of tensors of different ranks");
            }
            shape.insert(axis, 1);
            out.push(reshape_value(imp, p, &shape)?);
        }
        let refs: Vec<&Value> = out.iter().collect();
        return Ok(Item::Tensor(concat_values(imp, &refs, axis)?));
    } else {
        seq.items.clone()
    };
    let axis = norm_axis(axis, rank, "ConcatFromSequence's axis")?;
    let refs: Vec<&Value> = parts.iter().collect();
    Ok(Item::Tensor(concat_values(imp, &refs, axis)?))
}
