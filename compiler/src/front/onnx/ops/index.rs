//! Ops that read or write at positions computed from run-time values:
//! GatherElements, GatherND, ScatterElements (and opset 9's Scatter),
//! ScatterND, OneHot, Trilu, CumSum, TopK, Hardmax and ArgMax/ArgMin's
//! `select_last_index`.
//!
//! TOSA has no form for these, so they become `linalg.generic`s over the
//! output that the loop-nest kernels run as they are:
//! - gathers read the data with `tensor.extract` at coordinates computed
//!   from the indices (normalized first: negative indices count from the
//!   end, and out-of-range ones are clamped so that no kernel reads out of
//!   bounds; ONNX leaves them undefined);
//! - scatters are written as gathers too: each output element reduces over
//!   the updates that target it (in update order, so with `reduction =
//!   none` the last one wins), starting from the data. No atomics, no
//!   write conflicts, any element type; the cost is the output's size
//!   times the number of updates that could reach an element;
//! - CumSum and TopK's ranking reduce over the axis with a test of the
//!   positions (`linalg.index`): quadratic in the axis length, which is
//!   what ONNX models use them on (sequence positions, a few thousand
//!   scores).

use super::super::dtype::{DType, TType};
use super::super::emit::{Attr, Body, FPred, IPred, Operand, Scalar, Sv, Val};
use super::super::error::{ImportError, Result, bail};
use super::super::fold;
use super::super::importer::Importer;
use super::super::node::{Node, Value};
use super::super::tensor::Const;
use super::shape::strided_slice_value;
use super::tensor;

/// Turns the integer `input` (of `dtype`) into an i64 index in
/// `[0, size)`: negative values count from the end, the rest is clamped.
/// Also returns the i64 constant `size`.
fn normalize(b: &mut Body, input: Sv, dtype: DType, size: i64) -> (Sv, Sv) {
    let wide = if dtype == DType::I64 {
        input
    } else {
        b.cast("arith.extsi", input, DType::I64)
    };
    let zero = b.int(0, DType::I64);
    let size_value = b.int(size, DType::I64);
    // size - 1 from the size (a symbolic extent read at run time keeps it
    // one constant: importer/symbolic.rs).
    let one = b.int(1, DType::I64);
    let last = b.op("arith.subi", &[size_value, one]);
    let last = b.op("arith.maxsi", &[last, zero]);
    let negative = b.cmpi(IPred::Slt, wide, zero);
    let wrapped = b.op("arith.addi", &[wide, size_value]);
    let fixed = b.select(negative, wrapped, wide);
    let low = b.op("arith.maxsi", &[fixed, zero]);
    (b.op("arith.minsi", &[low, last]), size_value)
}

fn int_indices(v: &Value, op: &str) -> Result<()> {
    if !v.dtype().is_int() {
        bail!("{op} indices must be int32 or int64, not {}", v.dtype());
    }
    Ok(())
}

/// Integer index components `[..., k]` as one i64 tensor of `[...]` of
/// row-major linear positions into `sizes` (each component normalized
/// against its size).
fn linearize(imp: &mut Importer, indices: &Val, sizes: &[i64]) -> Result<Val> {
    let rank = indices.rank();
    let k = sizes.len();
    let outer = indices.shape()[..rank - 1].to_vec();
    let mut parts = Vec::with_capacity(k);
    for c in 0..k {
        let s = imp.e.slice_axis(indices, rank - 1, c as i64, c as i64 + 1);
        parts.push(imp.e.reshape(&s, &outer));
    }
    let refs: Vec<&Val> = parts.iter().collect();
    let dtype = indices.dtype();
    let sizes = sizes.to_vec();
    Ok(imp.e.map(&refs, TType::new(DType::I64, outer), &|b, a| {
        let mut acc = None;
        for (c, &component) in a.iter().enumerate().take(k) {
            let (n, size) = normalize(b, component, dtype, sizes[c]);
            acc = Some(match acc {
                None => n,
                Some(acc) => {
                    let scaled = b.op("arith.muli", &[acc, size]);
                    b.op("arith.addi", &[scaled, n])
                }
            });
        }
        acc.expect("an index has at least one component")
    }))
}

/// The elements of `data` at coordinates per output element: `coords[a]`
/// is `Some(d)` for loop dimension `d`, `None` for the position held by
/// `index` (i64, in range), itself indexed by the loop dimensions
/// `index_dims`.
fn gather_at(
    imp: &mut Importer,
    data: &Val,
    out_shape: Vec<i64>,
    index: &Val,
    index_dims: &[usize],
    coords: &[Option<usize>],
) -> Val {
    let out = TType::new(data.dtype(), out_shape);
    let rank = out.rank();
    let init = imp.e.empty(&out);
    imp.e.generic(
        rank,
        &[],
        &[Operand::dims(index, index_dims)],
        Operand::dims(&init, &(0..rank).collect::<Vec<_>>()),
        &|b, a, _| {
            let ix = b.cast("arith.index_cast", a[0], Scalar::Index);
            let at: Vec<Sv> = coords
                .iter()
                .map(|c| match c {
                    Some(d) => b.index(*d),
                    None => ix,
                })
                .collect();
            b.extract(data, &at)
        },
    )
}

/// Each index normalized against `size` (as i64).
fn normalized(imp: &mut Importer, indices: &Val, size: i64) -> Val {
    let dtype = indices.dtype();
    imp.e
        .map(&[indices], indices.ty.with_dtype(DType::I64), &|b, a| {
            normalize(b, a[0], dtype, size).0
        })
}

pub fn gather_elements(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let data = node.input(0)?;
    let indices = node.input(1)?;
    int_indices(indices, "GatherElements")?;
    let rank = data.rank();
    if rank == 0 || indices.rank() != rank {
        bail!(
            "GatherElements of {} with indices {}: ranks differ",
            data.ty(),
            indices.ty()
        );
    }
    let axis = node.axis(node.int("axis", 0)?, rank, "GatherElements axis")?;
    let (ds, is) = (data.shape(), indices.shape());
    if (0..rank).any(|a| a != axis && is[a] > ds[a]) {
        bail!("GatherElements indices {is:?} exceed the data {ds:?} on an axis other than {axis}");
    }
    if is.contains(&0) || ds[axis] == 0 {
        bail!("GatherElements produces an empty tensor, which tcc does not support");
    }
    if let (Value::Const(c), Value::Const(i)) = (data, indices)
        && (i.numel() as i64) <= fold::FOLD_LIMIT
    {
        return Ok(vec![Value::constant(fold_gather_elements(c, i, axis)?)]);
    }
    let d = imp.val(data)?;
    let i = imp.val(indices)?;
    let lin = normalized(imp, &i, ds[axis]);
    let coords: Vec<Option<usize>> = (0..rank).map(|a| (a != axis).then_some(a)).collect();
    let dims: Vec<usize> = (0..rank).collect();
    tensor(gather_at(imp, &d, is, &lin, &dims, &coords))
}

/// GatherElements of constants, at import time (an index out of range is
/// an error here, where it can be named).
fn fold_gather_elements(data: &Const, indices: &Const, axis: usize) -> Result<Const> {
    let flat = element_positions(&data.shape, indices, axis, "GatherElements")?;
    Ok(fold::pick(data, indices.shape.clone(), flat.into_iter()))
}

/// For each element of `indices` (GatherElements' and ScatterElements'
/// along `axis`), the flat position in a tensor of `data_shape` it names:
/// its own coordinates, with the index along `axis`. An index out of
/// range is an error naming `op`.
fn element_positions(
    data_shape: &[i64],
    indices: &Const,
    axis: usize,
    op: &str,
) -> Result<Vec<usize>> {
    let is = &indices.shape;
    let k = data_shape[axis];
    let data_strides = fold::strides(data_shape);
    let index_strides = fold::strides(is);
    let mut flat = Vec::with_capacity(indices.numel());
    for n in 0..indices.numel() {
        let mut index = indices.i64_at(n);
        if index < -k || index >= k {
            bail!("{op} index {index} is out of range for a dimension of {k}");
        }
        if index < 0 {
            index += k;
        }
        let mut at = 0;
        for a in 0..is.len() {
            let coordinate = if a == axis {
                index as usize
            } else {
                (n / index_strides[a]) % is[a] as usize
            };
            at += coordinate * data_strides[a];
        }
        flat.push(at);
    }
    Ok(flat)
}

pub fn gather_nd(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let data = node.input(0)?;
    let indices = node.input(1)?;
    int_indices(indices, "GatherND")?;
    let (ds, is) = (data.shape(), indices.shape());
    let (r, q) = (ds.len(), is.len());
    let b = node.int("batch_dims", 0)?;
    if q == 0 || r == 0 || b < 0 || b as usize >= q.min(r) {
        bail!(
            "GatherND of {:?} with indices {is:?} and batch_dims {b}",
            ds
        );
    }
    let b = b as usize;
    let k = is[q - 1];
    if k < 1 || b + k as usize > r {
        bail!("GatherND index tuples of {k} elements for data of rank {r} with batch_dims {b}");
    }
    let k = k as usize;
    if ds[..b] != is[..b] {
        bail!("GatherND batch dimensions differ: data {ds:?}, indices {is:?}");
    }
    let mut out_shape = is[..q - 1].to_vec();
    out_shape.extend_from_slice(&ds[b + k..]);
    if out_shape.contains(&0) || ds.contains(&0) {
        bail!("GatherND produces an empty tensor, which tcc does not support");
    }
    let d = imp.val(data)?;
    let i = imp.val(indices)?;
    let lin = linearize(imp, &i, &ds[b..b + k])?;
    let mut flat = ds[..b].to_vec();
    flat.push(ds[b..b + k].iter().product());
    flat.extend_from_slice(&ds[b + k..]);
    let d = imp.e.reshape(&d, &flat);
    let mut coords: Vec<Option<usize>> = (0..b).map(Some).collect();
    coords.push(None);
    coords.extend((q - 1..out_shape.len()).map(Some));
    let dims: Vec<usize> = (0..q - 1).collect();
    tensor(gather_at(imp, &d, out_shape, &lin, &dims, &coords))
}

/// The combiner of a scatter's `reduction` for `dtype`, as the body line
/// that defines `%c` from the accumulator and the update.
fn scatter_combiner(node: &Node, dtype: DType) -> Result<Option<&'static str>> {
    let reduction = node.string("reduction", "none")?;
    let since = match reduction.as_str() {
        "none" => return Ok(None),
        "add" | "mul" => 16,
        "max" | "min" => 18,
        other => bail!("{} reduction '{other}' is not defined", node.op()),
    };
    if node.opset < since {
        bail!(
            "{} reduction '{reduction}' needs opset {since} (the model imports {})",
            node.op(),
            node.opset
        );
    }
    Ok(Some(match (reduction.as_str(), dtype.is_float()) {
        ("add", true) => "arith.addf",
        ("mul", true) => "arith.mulf",
        ("max", true) => "arith.maximumf",
        ("min", true) => "arith.minimumf",
        _ if dtype == DType::Bool => {
            bail!("{} reduction '{reduction}' of bool tensors", node.op())
        }
        ("add", false) => "arith.addi",
        ("mul", false) => "arith.muli",
        ("max", false) => "arith.maxsi",
        _ => "arith.minsi",
    }))
}

/// `data` with each element replaced by (or combined with) the updates
/// whose position equals it: a reduction over the last loop dimension
/// `loops - 1`. `position` builds the output element's position (i64);
/// `target` (i64 positions) and `updates` are indexed by their operands'
/// maps.
fn scatter_into(
    imp: &mut Importer,
    data: &Val,
    target: Operand,
    updates: Operand,
    combiner: Option<&'static str>,
    position: &dyn Fn(&mut Body) -> Sv,
) -> Val {
    let rank = data.rank();
    imp.e.generic(
        rank + 1,
        &[rank],
        &[target, updates],
        Operand::dims(data, &(0..rank).collect::<Vec<_>>()),
        &|b, a, out| {
            let pos = position(b);
            let hit = b.cmpi(IPred::Eq, a[0], pos);
            let chosen = match combiner {
                Some(op) => b.op(op, &[out, a[1]]),
                None => a[1],
            };
            b.select(hit, chosen, out)
        },
    )
}

pub fn scatter_elements(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let data = node.input(0)?;
    let indices = node.input(1)?;
    let updates = node.input(2)?;
    int_indices(indices, node.op())?;
    let rank = data.rank();
    let (ds, is) = (data.shape(), indices.shape());
    if rank == 0 || indices.rank() != rank || updates.shape() != is {
        bail!(
            "{} of {} with indices {} and updates {}: shapes do not match",
            node.op(),
            data.ty(),
            indices.ty(),
            updates.ty()
        );
    }
    if updates.dtype() != data.dtype() {
        bail!(
            "{} updates are {}, the data {}",
            node.op(),
            updates.dtype(),
            data.dtype()
        );
    }
    let axis = node.axis(node.int("axis", 0)?, rank, "axis")?;
    if (0..rank).any(|a| a != axis && is[a] > ds[a]) {
        bail!(
            "{} indices {is:?} exceed the data {ds:?} on an axis other than {axis}",
            node.op()
        );
    }
    let combiner = scatter_combiner(node, data.dtype())?;
    if let (Value::Const(c), Value::Const(i), Value::Const(u), None) =
        (data, indices, updates, combiner)
        && (c.numel() as i64) <= fold::FOLD_LIMIT
    {
        return Ok(vec![Value::constant(fold_scatter_elements(
            c,
            i,
            u,
            axis,
            node.op(),
        )?)]);
    }
    let d = imp.val(data)?;
    if is.contains(&0) {
        return tensor(d);
    }
    let i = imp.val(indices)?;
    let u = imp.val(updates)?;
    // The positions, padded to the data's extent on the other axes with
    // -1 (which no element's position equals).
    let lin = normalized(imp, &i, ds[axis]);
    let pads: Vec<(i64, i64)> = (0..rank)
        .map(|a| {
            if a == axis {
                (0, 0)
            } else {
                (0, ds[a] - is[a])
            }
        })
        .collect();
    let lin = imp.e.pad(&lin, &pads, -1.0);
    let u = imp.e.pad(&u, &pads, 0.0);
    if is[axis] == 1 {
        // One update per position along the axis (a key/value cache
        // written one token a step): each output element takes its
        // update or its data, an elementwise op reading the data as an
        // input. Its result is a new tensor, so where the data is a graph
        // input (the caller's cache, never written in place) no copy of
        // it comes first, as the reduction's accumulator needed.
        let ty = d.ty.clone();
        return tensor(imp.e.map(&[&d, &lin, &u], ty, &|b, a| {
            let p = b.index(axis);
            let pos = b.cast("arith.index_cast", p, DType::I64);
            let hit = b.cmpi(IPred::Eq, a[1], pos);
            let chosen = match combiner {
                Some(op) => b.op(op, &[a[0], a[2]]),
                None => a[2],
            };
            b.select(hit, chosen, a[0])
        }));
    }
    let map: Vec<usize> = (0..rank)
        .map(|a| if a == axis { rank } else { a })
        .collect();
    tensor(scatter_into(
        imp,
        &d,
        Operand::dims(&lin, &map),
        Operand::dims(&u, &map),
        combiner,
        &|b| {
            let p = b.index(axis);
            b.cast("arith.index_cast", p, DType::I64)
        },
    ))
}

/// ScatterElements of constants without a reduction, at import time: a
/// shape vector with one extent replaced (`torch.index_copy`'s export
/// builds the shape it expands to this way). An index out of range is an
/// error here, where it can be named.
fn fold_scatter_elements(
    data: &Const,
    indices: &Const,
    updates: &Const,
    axis: usize,
    op: &str,
) -> Result<Const> {
    // Each element's source: its own position in `data`, or `data.numel() + n`
    // for the n-th update written over it.
    let mut at: Vec<usize> = (0..data.numel()).collect();
    for (n, target) in element_positions(&data.shape, indices, axis, op)?
        .into_iter()
        .enumerate()
    {
        at[target] = data.numel() + n;
    }
    let size = data.dtype.size();
    let (full, more) = (data.full_bytes(), updates.full_bytes());
    let mut bytes = Vec::with_capacity(full.len());
    for source in at {
        let (from, i) = if source < data.numel() {
            (&full, source)
        } else {
            (&more, source - data.numel())
        };
        bytes.extend_from_slice(&from[i * size..(i + 1) * size]);
    }
    Ok(Const {
        dtype: data.dtype,
        shape: data.shape.clone(),
        bytes: bytes.into(),
        splat: false,
    })
}

pub fn scatter_nd(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let data = node.input(0)?;
    let indices = node.input(1)?;
    let updates = node.input(2)?;
    int_indices(indices, "ScatterND")?;
    let (ds, is) = (data.shape(), indices.shape());
    let (r, q) = (ds.len(), is.len());
    if q == 0 || r == 0 {
        bail!("ScatterND of {:?} with indices {is:?}", ds);
    }
    let k = is[q - 1];
    if k < 1 || k as usize > r {
        bail!("ScatterND index tuples of {k} elements for data of rank {r}");
    }
    let k = k as usize;
    let mut expected = is[..q - 1].to_vec();
    expected.extend_from_slice(&ds[k..]);
    if updates.shape() != expected {
        bail!(
            "ScatterND updates {:?} must have the shape {expected:?}",
            updates.shape()
        );
    }
    if updates.dtype() != data.dtype() {
        bail!(
            "ScatterND updates are {}, the data {}",
            updates.dtype(),
            data.dtype()
        );
    }
    let combiner = scatter_combiner(node, data.dtype())?;
    let d = imp.val(data)?;
    let count: i64 = is[..q - 1].iter().product();
    if count == 0 || ds.contains(&0) {
        return tensor(d);
    }
    let i = imp.val(indices)?;
    let u = imp.val(updates)?;
    let lin = linearize(imp, &i, &ds[..k])?;
    let lin = imp.e.reshape(&lin, &[count]);
    let mut flat = vec![count];
    flat.extend_from_slice(&ds[k..]);
    let u = imp.e.reshape(&u, &flat);
    // The output element's position among the index tuples.
    let sizes = ds[..k].to_vec();
    let position = |b: &mut Body| -> Sv {
        let mut acc = b.index_constant(0);
        for (c, &size) in sizes.iter().enumerate() {
            let s = b.index_constant(size);
            let l = b.index(c);
            let m = b.op("arith.muli", &[acc, s]);
            acc = b.op("arith.addi", &[m, l]);
        }
        b.cast("arith.index_cast", acc, DType::I64)
    };
    let mut update_map = vec![r];
    update_map.extend(k..r);
    tensor(scatter_into(
        imp,
        &d,
        Operand::dims(&lin, &[r]),
        Operand::dims(&u, &update_map),
        combiner,
        &position,
    ))
}

pub fn one_hot(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let indices = node.input(0)?;
    let depth = node
        .const_input(1, "OneHot's depth")?
        .ok_or_else(|| ImportError::new("OneHot needs a depth"))?;
    let values = node.input(2)?;
    if depth.numel() != 1 || values.shape().iter().product::<i64>() != 2 || values.rank() != 1 {
        bail!(
            "OneHot needs a scalar depth and two values, not {} and {}",
            depth.ty(),
            values.ty()
        );
    }
    let depth_value = depth.f64_at(0);
    if !(depth_value >= 1.0 && depth_value <= (1u64 << 31) as f64) {
        bail!("OneHot depth {depth_value} is not a positive size");
    }
    let depth = depth_value as i64;
    if indices.dtype() == DType::Bool {
        bail!("OneHot indices must be numbers, not bool");
    }
    let rank = indices.rank() + 1;
    let axis = node.axis(node.int("axis", -1)?, rank, "OneHot axis")?;
    let mut shape = indices.shape();
    shape.insert(axis, depth);
    let mut unsqueezed = indices.shape();
    unsqueezed.insert(axis, 1);
    let i = imp.val(indices)?;
    let i = imp.e.reshape(&i, &unsqueezed);
    let dtype = i.dtype();
    // Negative indices count from the end since opset 11 (before, like
    // any index outside [0, depth), they select no position).
    let wraps = node.opset >= 11;
    let mask = imp
        .e
        .map(&[&i], TType::new(DType::Bool, shape.clone()), &|b, a| {
            let zero = b.int(0, DType::I64);
            let depth = b.int(depth, DType::I64);
            let v = if dtype.is_float() {
                b.cast("arith.fptosi", a[0], DType::I64)
            } else if dtype == DType::I64 {
                a[0]
            } else {
                b.cast("arith.extsi", a[0], DType::I64)
            };
            let negative = b.cmpi(IPred::Slt, v, zero);
            let wrap = b.op("arith.addi", &[v, depth]);
            let n = b.select(negative, if wraps { wrap } else { v }, v);
            let p = b.index(axis);
            let pi = b.cast("arith.index_cast", p, DType::I64);
            b.cmpi(IPred::Eq, n, pi)
        });
    let (off, on) = match values {
        Value::Const(c) => (
            imp.e
                .constant(&fold::pick(c, vec![1; rank], [0].into_iter()), "off")?,
            imp.e
                .constant(&fold::pick(c, vec![1; rank], [1].into_iter()), "on")?,
        ),
        Value::Tensor(v) => {
            let off = imp.e.slice(v, &[0], &[1]);
            let on = imp.e.slice(v, &[1], &[1]);
            (
                imp.e.reshape(&off, &vec![1; rank]),
                imp.e.reshape(&on, &vec![1; rank]),
            )
        }
    };
    tensor(imp.e.select(&mask, &on, &off)?)
}

pub fn trilu(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let input = node.input(0)?;
    let rank = input.rank();
    if rank < 2 {
        bail!("Trilu of a tensor of rank {rank} (it needs at least 2)");
    }
    let upper = node.int("upper", 1)? != 0;
    let x = imp.val(input)?;
    let dtype = x.dtype();
    let predicate = if upper { IPred::Sge } else { IPred::Sle };
    let (k_const, k_tensor) = match node.opt(1) {
        None => (Some(0), None),
        Some(Value::Const(c)) if c.numel() == 1 => (Some(c.i64_at(0)), None),
        Some(Value::Tensor(v)) if v.ty.numel() == 1 && v.dtype().is_int() => {
            let k = imp.e.reshape(v, &vec![1; rank]);
            (None, Some(imp.e.cast(&k, DType::I64)))
        }
        Some(other) => bail!("Trilu's k must be one integer, not {}", other.ty()),
    };
    let inputs: Vec<&Val> = match &k_tensor {
        Some(k) => vec![&x, k],
        None => vec![&x],
    };
    tensor(imp.e.map(&inputs, x.ty.clone(), &|b, a| {
        let k = match k_const {
            Some(k) => b.int(k, DType::I64),
            None => a[1],
        };
        let i = b.index(rank - 2);
        let j = b.index(rank - 1);
        let ii = b.cast("arith.index_cast", i, DType::I64);
        let jj = b.cast("arith.index_cast", j, DType::I64);
        let diff = b.op("arith.subi", &[jj, ii]);
        let keep = b.cmpi(predicate, diff, k);
        let zero = b.constant(0.0, dtype);
        b.select(keep, a[0], zero)
    }))
}

/// CumSum, and CumProd (opset 26): the running sum or product along an
/// axis (`exclusive`, `reverse`).
pub fn cum_sum(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let op = node.op();
    let product = op == "CumProd";
    let input = node.input(0)?;
    let rank = input.rank();
    if rank == 0 {
        bail!("{op} of a scalar");
    }
    let exclusive = node.int("exclusive", 0)? != 0;
    let reverse = node.int("reverse", 0)? != 0;
    let x = imp.val(input)?;
    if x.dtype() == DType::Bool {
        bail!("{op} of bool tensors");
    }
    if x.shape().contains(&0) {
        return tensor(x);
    }
    let along = |imp: &mut Importer, axis: usize| {
        cumulative_along(imp, &x, axis, exclusive, reverse, product)
    };
    match node.input(1)? {
        Value::Const(c) if c.numel() == 1 => {
            let axis = node.axis(c.i64_at(0), rank, &format!("{op} axis"))?;
            tensor(along(imp, axis))
        }
        Value::Tensor(a) if a.ty.numel() == 1 && a.dtype().is_int() => {
            // An axis known only at run time: the results along every
            // axis, the one asked for selected (an axis out of range gives
            // the result along the last).
            let a = imp.e.reshape(a, &vec![1; rank]);
            let a = imp.e.cast(&a, DType::I64);
            let mut y = along(imp, rank - 1);
            for axis in (0..rank - 1).rev() {
                let on_axis = along(imp, axis);
                let mut hit = None;
                for value in [axis as i64, axis as i64 - rank as i64] {
                    let v = imp.e.scalar(DType::I64, rank, value as f64);
                    let eq = imp.e.binary_to("tosa.equal", &a, &v, DType::Bool)?;
                    hit = Some(match hit {
                        None => eq,
                        Some(h) => imp.e.binary("tosa.logical_or", &h, &eq)?,
                    });
                }
                y = imp.e.select(&hit.expect("two tests"), &on_axis, &y)?;
            }
            tensor(y)
        }
        other => bail!("{op}'s axis must be one integer, not {}", other.ty()),
    }
}

/// CumSum (or CumProd) along a known axis: a reduction over the axis
/// (the last loop dimension) of the elements whose position counts for
/// the output's (the others contribute 0, or 1 to a product).
fn cumulative_along(
    imp: &mut Importer,
    x: &Val,
    axis: usize,
    exclusive: bool,
    reverse: bool,
    product: bool,
) -> Val {
    let rank = x.rank();
    let dtype = x.dtype();
    // The element at m counts for position i when m <= i (forward),
    // m < i (exclusive), m >= i (reverse), m > i (both).
    let predicate = match (reverse, exclusive) {
        (false, false) => IPred::Ule,
        (false, true) => IPred::Ult,
        (true, false) => IPred::Uge,
        (true, true) => IPred::Ugt,
    };
    let combine = match (dtype.is_float(), product) {
        (true, false) => "arith.addf",
        (false, false) => "arith.addi",
        (true, true) => "arith.mulf",
        (false, true) => "arith.muli",
    };
    let identity = if product { 1.0 } else { 0.0 };
    let init = imp.e.filled(&x.ty, identity);
    let map: Vec<usize> = (0..rank)
        .map(|a| if a == axis { rank } else { a })
        .collect();
    imp.e.generic(
        rank + 1,
        &[rank],
        &[Operand::dims(x, &map)],
        Operand::dims(&init, &(0..rank).collect::<Vec<_>>()),
        &|b, a, out| {
            let i = b.index(axis);
            let m = b.index(rank);
            let counts = b.cmpi(predicate, m, i);
            let neutral = b.constant(identity, dtype);
            let v = b.select(counts, a[0], neutral);
            b.op(combine, &[out, v])
        },
    )
}

/// ReverseSequence: along `time_axis`, batch entry b's first
/// `sequence_lens[b]` elements reversed, the rest copied; a read at a
/// computed position (`tensor.extract`), the lengths clamped to the axis.
pub fn reverse_sequence(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let input = node.input(0)?;
    let rank = input.rank();
    if rank < 2 {
        bail!(
            "ReverseSequence needs a tensor of rank 2 or more, not {}",
            input.ty()
        );
    }
    let time = node.axis(node.int("time_axis", 0)?, rank, "time_axis")?;
    let batch = node.axis(node.int("batch_axis", 1)?, rank, "batch_axis")?;
    if time > 1 || batch > 1 || time == batch {
        bail!(
            "ReverseSequence's time_axis and batch_axis must be 0 and 1 in some order, not {time} and {batch}"
        );
    }
    let x = imp.val(input)?;
    let lens = imp.val(node.input(1)?)?;
    if lens.shape() != [x.shape()[batch]] || !lens.dtype().is_int() {
        bail!(
            "ReverseSequence's sequence_lens must be an integer vector of the batch size {}, not {}",
            x.shape()[batch],
            lens.ty
        );
    }
    if x.shape().contains(&0) {
        return tensor(x);
    }
    let lens = imp.e.cast(&lens, DType::I64);
    let steps = x.shape()[time];
    let init = imp.e.empty(&x.ty);
    let y = imp.e.generic(
        rank,
        &[],
        &[Operand::dims(&lens, &[batch])],
        Operand::dims(&init, &(0..rank).collect::<Vec<_>>()),
        &|b, a, _out| {
            let dims: Vec<Option<Sv>> =
                (0..rank).map(|d| (d != time).then(|| b.index(d))).collect();
            let t = b.index(time);
            let ti = b.cast("arith.index_cast", t, DType::I64);
            let zero = b.int(0, DType::I64);
            let steps = b.int(steps, DType::I64);
            let l0 = b.op("arith.maxsi", &[a[0], zero]);
            let l = b.op("arith.minsi", &[l0, steps]);
            let one = b.int(1, DType::I64);
            let lm1 = b.op("arith.subi", &[l, one]);
            let rev = b.op("arith.subi", &[lm1, ti]);
            let inside = b.cmpi(IPred::Slt, ti, l);
            let srci = b.select(inside, rev, ti);
            let src = b.cast("arith.index_cast", srci, Scalar::Index);
            let at: Vec<Sv> = dims.iter().map(|d| d.unwrap_or(src)).collect();
            b.extract(&x, &at)
        },
    );
    tensor(y)
}

pub fn top_k(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let input = node.input(0)?;
    let rank = input.rank();
    if rank == 0 {
        bail!("TopK of a scalar");
    }
    let k = if node.opset >= 10 {
        let k = node
            .const_ints(1, "TopK's k")
            .map_err(|mut e| {
                e.message.push_str(
                    "; the output shape depends on it (dynamic shapes are not supported yet)",
                );
                e
            })?
            .filter(|k| k.len() == 1)
            .ok_or_else(|| ImportError::new("TopK needs one k"))?;
        k[0]
    } else {
        node.int_opt("k")?
            .ok_or_else(|| ImportError::new("TopK needs k"))?
    };
    let axis = node.axis(node.int("axis", -1)?, rank, "TopK axis")?;
    let largest = node.int("largest", 1)? != 0;
    let x = imp.val(input)?;
    let dtype = x.dtype();
    let n = x.shape()[axis];
    if k < 0 || k > n {
        bail!("TopK's k = {k} for an axis of {n} elements");
    }
    if k == 0 || x.shape().contains(&0) {
        bail!("TopK produces an empty tensor, which tcc does not support");
    }
    if dtype == DType::Bool {
        bail!("TopK of bool tensors");
    }
    // Each element's place: how many come before it (greater, or equal
    // at a lower index; smaller for largest = 0). NaN counts as greater
    // than every number and equal to NaN (as onnxruntime and PyTorch
    // order it), so the places are a permutation.
    // Whether the element at m (`in1`) comes before the one at i (`in0`)
    // by value, and whether the two are equal.
    let compare = |b: &mut Body, a: &[Sv]| -> (Sv, Sv) {
        let (x_i, x_m) = (a[0], a[1]);
        if !dtype.is_float() {
            let predicate = if largest { IPred::Sgt } else { IPred::Slt };
            return (b.cmpi(predicate, x_m, x_i), b.cmpi(IPred::Eq, x_m, x_i));
        }
        let truth = b.int(1, DType::Bool);
        let n0 = b.cmpf(FPred::Uno, x_i, x_i);
        let n1 = b.cmpf(FPred::Uno, x_m, x_m);
        let num0 = b.op("arith.xori", &[n0, truth]);
        let num1 = b.op("arith.xori", &[n1, truth]);
        let ordered = if largest { FPred::Ogt } else { FPred::Olt };
        let gt_num = b.cmpf(ordered, x_m, x_i);
        let nan_first = if largest { [n1, num0] } else { [n0, num1] };
        let gt_nan = b.op("arith.andi", &nan_first);
        let gt = b.op("arith.ori", &[gt_num, gt_nan]);
        let eq_num = b.cmpf(FPred::Oeq, x_m, x_i);
        let eq_nan = b.op("arith.andi", &[n0, n1]);
        (gt, b.op("arith.ori", &[eq_num, eq_nan]))
    };
    let all: Vec<usize> = (0..rank).collect();
    let along: Vec<usize> = (0..rank)
        .map(|a| if a == axis { rank } else { a })
        .collect();
    let zeros = imp.e.filled(&x.ty.with_dtype(DType::I64), 0.0);
    let place = imp.e.generic(
        rank + 1,
        &[rank],
        &[Operand::dims(&x, &all), Operand::dims(&x, &along)],
        Operand::dims(&zeros, &all),
        &|b, a, out| {
            let i = b.index(axis);
            let m = b.index(rank);
            let lower = b.cmpi(IPred::Ult, m, i);
            let (gt, eq) = compare(b, a);
            let tie = b.op("arith.andi", &[eq, lower]);
            let before = b.op("arith.ori", &[gt, tie]);
            let one = b.int(1, DType::I64);
            let zero = b.int(0, DType::I64);
            let inc = b.select(before, one, zero);
            b.op("arith.addi", &[out, inc])
        },
    );
    // Output j along the axis is the element whose place is j.
    let mut shape = x.shape().to_vec();
    shape[axis] = k;
    let init = imp.e.filled(&TType::new(DType::I64, shape.clone()), 0.0);
    let indices = imp.e.generic(
        rank + 1,
        &[rank],
        &[Operand::dims(&place, &along)],
        Operand::dims(&init, &all),
        &|b, a, out| {
            let j = b.index(axis);
            let jj = b.cast("arith.index_cast", j, DType::I64);
            let hit = b.cmpi(IPred::Eq, a[0], jj);
            let m = b.index(rank);
            let mm = b.cast("arith.index_cast", m, DType::I64);
            b.select(hit, mm, out)
        },
    );
    let coords: Vec<Option<usize>> = (0..rank).map(|a| (a != axis).then_some(a)).collect();
    let values = gather_at(imp, &x, shape, &indices, &all, &coords);
    Ok(vec![Value::Tensor(values), Value::Tensor(indices)])
}

/// ArgMax/ArgMin's first index along `axis` (i32, the axis kept).
fn arg_first(imp: &mut Importer, x: &Val, axis: usize, min: bool) -> Val {
    let x = if min { imp.e.negate(x) } else { x.clone() };
    let mut shape = x.shape().to_vec();
    shape.remove(axis);
    let ty = x.ty.with_shape(shape.clone()).with_dtype(DType::I32);
    let i = imp
        .e
        .op("tosa.argmax", &[&x], &[("axis", Attr::i32(axis))], ty);
    shape.insert(axis, 1);
    imp.e.reshape(&i, &shape)
}

/// ArgMax/ArgMin with `select_last_index = 1`: the first index of the
/// input reversed along the axis, counted from the end.
pub fn arg_last(imp: &mut Importer, node: &Node, x: &Val, axis: usize) -> Result<Val> {
    let rank = x.rank();
    let n = x.shape()[axis];
    let mut starts = vec![0; rank];
    let mut steps = vec![1; rank];
    starts[axis] = n - 1;
    steps[axis] = -1;
    let reversed = strided_slice_value(imp, &Value::Tensor(x.clone()), &starts, &steps, x.shape())?;
    let reversed = imp.val(&reversed)?;
    let i = arg_first(imp, &reversed, axis, node.op() == "ArgMin");
    let i = imp.e.cast(&i, DType::I64);
    let last = imp.e.scalar(DType::I64, rank, (n - 1) as f64);
    imp.e.sub(&last, &i)
}

pub fn hardmax(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let input = node.input(0)?;
    let rank = input.rank();
    if rank == 0 {
        bail!("Hardmax of a scalar");
    }
    let x = imp.val(input)?;
    if !x.dtype().is_float() {
        bail!("Hardmax of {} tensors", x.dtype());
    }
    let shape = x.shape().to_vec();
    // Before opset 13 the input is coerced to 2-D at the axis.
    let (x2, axis) = if node.opset < 13 {
        let axis = node.axis(node.int("axis", 1)?, rank, "Hardmax axis")?;
        let outer: i64 = shape[..axis].iter().product();
        let inner: i64 = shape[axis..].iter().product();
        (imp.e.reshape(&x, &[outer, inner]), 1)
    } else {
        (
            x.clone(),
            node.axis(node.int("axis", -1)?, rank, "Hardmax axis")?,
        )
    };
    let first = arg_first(imp, &x2, axis, false);
    let dtype = x.dtype();
    let y = imp.e.map(&[&first], x2.ty.clone(), &|b, a| {
        let p = b.index(axis);
        let pi = b.cast("arith.index_cast", p, DType::I32);
        let hit = b.cmpi(IPred::Eq, a[0], pi);
        let one = b.constant(1.0, dtype);
        let zero = b.constant(0.0, dtype);
        b.select(hit, one, zero)
    });
    tensor(imp.e.reshape(&y, &shape))
}

/// TensorScatter (opset 24): the KV-cache update. Each output element
/// along `axis` at cache position c of batch entry b reads the update at
/// `s = c - write_indices[b]` (modulo the cache length when `mode =
/// circular`) when `0 <= s < sequence_length`, else the past cache: a
/// gather over the output, so no two work-items write one element.
pub fn tensor_scatter(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let past = imp.val(node.input(0)?)?;
    let update = imp.val(node.input(1)?)?;
    let rank = past.rank();
    if rank < 2 {
        bail!(
            "TensorScatter's caches must have rank 2 or more, not {}",
            past.ty
        );
    }
    let axis = node.axis(node.int("axis", -2)?, rank, "TensorScatter axis")?;
    if axis == 0 {
        bail!("TensorScatter's axis must not be the batch axis 0");
    }
    let circular = match node.string("mode", "linear")?.as_str() {
        "linear" => false,
        "circular" => true,
        other => bail!("TensorScatter mode '{other}' is not linear or circular"),
    };
    if update.dtype() != past.dtype()
        || update.rank() != rank
        || (0..rank).any(|a| a != axis && update.shape()[a] != past.shape()[a])
        || update.shape()[axis] > past.shape()[axis]
    {
        bail!(
            "TensorScatter's update {} does not fit the cache {} along axis {axis}",
            update.ty,
            past.ty
        );
    }
    let (batch, max_len, len) = (past.shape()[0], past.shape()[axis], update.shape()[axis]);
    if past.shape().contains(&0) || len == 0 {
        return tensor(past);
    }
    let write = match node.opt(2) {
        Some(w) => {
            if !w.dtype().is_int() || w.shape() != [batch] {
                bail!(
                    "TensorScatter's write_indices must be integers of shape [{batch}], not {}",
                    w.ty()
                );
            }
            let w = imp.val(w)?;
            imp.e.cast(&w, DType::I64)
        }
        None => {
            let c = Const::splat_i64(DType::I64, vec![batch], 0);
            imp.e.constant(&c, "write_indices")?
        }
    };
    let init = imp.e.empty(&past.ty);
    let y = imp.e.generic(
        rank,
        &[],
        &[
            Operand::dims(&past, &(0..rank).collect::<Vec<_>>()),
            Operand::dims(&write, &[0]),
        ],
        Operand::dims(&init, &(0..rank).collect::<Vec<_>>()),
        &|b, a, _out| {
            let dims: Vec<Sv> = (0..rank).map(|d| b.index(d)).collect();
            let c = b.cast("arith.index_cast", dims[axis], DType::I64);
            let zero = b.int(0, DType::I64);
            let diff = b.op("arith.subi", &[c, a[1]]);
            let rel = if circular {
                let max = b.int(max_len, DType::I64);
                let m = b.op("arith.remsi", &[diff, max]);
                let negative = b.cmpi(IPred::Slt, m, zero);
                let mp = b.op("arith.addi", &[m, max]);
                b.select(negative, mp, m)
            } else {
                diff
            };
            let length = b.int(len, DType::I64);
            let last = b.int(len - 1, DType::I64);
            let ge = b.cmpi(IPred::Sge, rel, zero);
            let lt = b.cmpi(IPred::Slt, rel, length);
            let hit = b.op("arith.andi", &[ge, lt]);
            let lo = b.op("arith.maxsi", &[rel, zero]);
            let clamped = b.op("arith.minsi", &[lo, last]);
            let s = b.cast("arith.index_cast", clamped, Scalar::Index);
            let at: Vec<Sv> = (0..rank)
                .map(|d| if d == axis { s } else { dims[d] })
                .collect();
            let u = b.extract(&update, &at);
            b.select(hit, u, a[0])
        },
    );
    tensor(y)
}

/// MaxUnpool: each element of X written at its flat index `I` into a zero
/// output of the shape MaxPool came from (`(in - 1) * stride - pads +
/// kernel` per spatial axis), then placed at the origin of `output_shape`
/// when that is given (a constant). Written as a gather, as the scatters
/// are: each output element reduces over the inputs whose index is its
/// own, in input order (a repeated index keeps the last, as the ONNX
/// reference does); an index out of range writes nothing.
pub fn max_unpool(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let x = imp.val(node.input(0)?)?;
    let indices = node.input(1)?;
    let rank = x.rank();
    if rank < 3 {
        bail!("MaxUnpool's input must be [N, C, spatial...], not {}", x.ty);
    }
    if !indices.dtype().is_int() || indices.shape() != x.shape() {
        bail!(
            "MaxUnpool's indices must be integers of the input's shape {:?}, not {}",
            x.shape(),
            indices.ty()
        );
    }
    let spatial = rank - 2;
    let kernel = node
        .ints("kernel_shape")?
        .filter(|k| k.len() == spatial)
        .ok_or_else(|| {
            ImportError::new(format!(
                "MaxUnpool needs kernel_shape with {spatial} entries"
            ))
        })?;
    let strides = node.ints("strides")?.unwrap_or_else(|| vec![1; spatial]);
    let pads = node.ints("pads")?.unwrap_or_else(|| vec![0; 2 * spatial]);
    if strides.len() != spatial || pads.len() != 2 * spatial {
        bail!("MaxUnpool's strides and pads do not match {spatial} spatial axes");
    }
    let mut inferred = x.shape()[..2].to_vec();
    for a in 0..spatial {
        let d = (x.shape()[a + 2] - 1) * strides[a] - pads[a] - pads[a + spatial] + kernel[a];
        if d <= 0 {
            bail!(
                "MaxUnpool's output would have a spatial size {d} on axis {}",
                a + 2
            );
        }
        inferred.push(d);
    }
    let shape = match node.opt(2) {
        None => inferred.clone(),
        Some(_) => {
            let shape = node
                .const_ints(2, "the output_shape")?
                .ok_or_else(|| ImportError::new("MaxUnpool's output_shape is missing"))?;
            if shape.len() != rank || shape.iter().zip(&inferred).any(|(s, i)| s < i) {
                bail!(
                    "MaxUnpool's output_shape {shape:?} is smaller than the unpooled shape {inferred:?}"
                );
            }
            shape
        }
    };
    let count = x.ty.numel();
    let flat_x = imp.e.reshape(&x, &[count]);
    let flat_i = {
        let i = imp.val(indices)?;
        let i = imp.e.cast(&i, DType::I64);
        imp.e.reshape(&i, &[count])
    };
    let out_ty = x.ty.with_shape(shape);
    let init = imp.e.filled(&out_ty, 0.0);
    let y = imp.e.generic(
        rank + 1,
        &[rank],
        &[
            Operand::dims(&flat_x, &[rank]),
            Operand::dims(&flat_i, &[rank]),
        ],
        Operand::dims(&init, &(0..rank).collect::<Vec<_>>()),
        &|b, a, out| {
            // The flat index, in the inferred shape, of the output
            // position, and whether the position lies outside that shape
            // (the output_shape's margin, which stays 0).
            let mut flat = b.int(0, DType::I64);
            let mut outside = b.int(0, DType::Bool);
            for (d, &extent) in inferred.iter().enumerate() {
                let p = b.index(d);
                let q = b.cast("arith.index_cast", p, DType::I64);
                let extent = b.int(extent, DType::I64);
                let scaled = b.op("arith.muli", &[flat, extent]);
                flat = b.op("arith.addi", &[scaled, q]);
                let beyond = b.cmpi(IPred::Sge, q, extent);
                outside = b.op("arith.ori", &[outside, beyond]);
            }
            let same = b.cmpi(IPred::Eq, a[1], flat);
            let truth = b.int(1, DType::Bool);
            let inside = b.op("arith.xori", &[outside, truth]);
            let hit = b.op("arith.andi", &[same, inside]);
            b.select(hit, a[0], out)
        },
    );
    tensor(y)
}
