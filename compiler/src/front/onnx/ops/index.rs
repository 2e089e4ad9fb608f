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
use super::super::emit::{Operand, Val, float_literal};
use super::super::error::{ImportError, Result, bail};
use super::super::fold;
use super::super::importer::Importer;
use super::super::node::{Node, Value};
use super::super::tensor::Const;
use super::shape::strided_slice_value;
use super::tensor;

/// The literal of `value` in an `arith.constant` of `dtype`.
fn literal(dtype: DType, value: f64) -> String {
    match dtype {
        DType::Bool => (if value != 0.0 { "true" } else { "false" }).to_string(),
        d if d.is_float() => float_literal(value, d),
        _ => (value as i64).to_string(),
    }
}

/// Body lines that turn the integer `input` (of `dtype`) into an i64
/// index in `[0, size)` named `out`: negative values count from the end,
/// the rest is clamped.
fn normalize_lines(input: &str, dtype: DType, size: i64, out: &str) -> String {
    let mut text = String::new();
    let wide = if dtype == DType::I64 {
        input.to_string()
    } else {
        text.push_str(&format!(
            "{out}_w = arith.extsi {input} : {} to i64\n",
            dtype.mlir()
        ));
        format!("{out}_w")
    };
    text.push_str(&format!(
        "{out}_zero = arith.constant 0 : i64\n\
         {out}_size = arith.constant {size} : i64\n\
         {out}_last = arith.constant {} : i64\n\
         {out}_neg = arith.cmpi slt, {wide}, {out}_zero : i64\n\
         {out}_wrap = arith.addi {wide}, {out}_size : i64\n\
         {out}_fix = arith.select {out}_neg, {out}_wrap, {wide} : i64\n\
         {out}_low = arith.maxsi {out}_fix, {out}_zero : i64\n\
         {out} = arith.minsi {out}_low, {out}_last : i64\n",
        (size - 1).max(0)
    ));
    text
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
    Ok(imp.e.map(&refs, TType::new(DType::I64, outer), &|a| {
        let mut text = String::new();
        for (c, name) in a.iter().enumerate() {
            text.push_str(&normalize_lines(name, dtype, sizes[c], &format!("%n{c}")));
            if c == 0 {
                text.push_str("%acc0 = arith.addi %n0_zero, %n0 : i64\n");
            } else {
                text.push_str(&format!(
                    "%mul{c} = arith.muli %acc{}, %n{c}_size : i64\n%acc{c} = arith.addi %mul{c}, %n{c} : i64\n",
                    c - 1
                ));
            }
        }
        text.push_str(&format!("%r = arith.addi %acc{}, %n0_zero : i64", k - 1));
        text
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
    let data_ssa = data.ssa.clone();
    let data_ty = data.ty.mlir();
    let coords = coords.to_vec();
    imp.e.generic(
        rank,
        &[],
        &[Operand::dims(index, index_dims)],
        Operand::dims(&init, &(0..rank).collect::<Vec<_>>()),
        &|a, _| {
            let mut text = format!("%ix = arith.index_cast {} : i64 to index\n", a[0]);
            let mut names = Vec::new();
            for (i, c) in coords.iter().enumerate() {
                match c {
                    Some(d) => {
                        text.push_str(&format!("%c{i} = linalg.index {d} : index\n"));
                        names.push(format!("%c{i}"));
                    }
                    None => names.push("%ix".to_string()),
                }
            }
            text.push_str(&format!(
                "%r = tensor.extract {data_ssa}[{}] : {data_ty}",
                names.join(", ")
            ));
            text
        },
    )
}

/// Each index normalized against `size` (as i64).
fn normalized(imp: &mut Importer, indices: &Val, size: i64) -> Val {
    let dtype = indices.dtype();
    imp.e
        .map(&[indices], indices.ty.with_dtype(DType::I64), &|a| {
            normalize_lines(&a[0], dtype, size, "%r")
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
    let ds = &data.shape;
    let is = &indices.shape;
    let k = ds[axis];
    let data_strides = fold::strides(ds);
    let index_strides = fold::strides(is);
    let mut flat = Vec::with_capacity(indices.numel());
    for n in 0..indices.numel() {
        let mut index = indices.i64_at(n);
        if index < -k || index >= k {
            bail!("GatherElements index {index} is out of range for a dimension of {k}");
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
    Ok(fold::pick(data, is.clone(), flat.into_iter()))
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
/// `loops - 1`. `position` writes the body lines defining `%pos` (i64) for
/// the output element; `target` (i64 positions) and `updates` are indexed
/// by their operands' maps.
fn scatter_into(
    imp: &mut Importer,
    data: &Val,
    target: Operand,
    updates: Operand,
    combiner: Option<&str>,
    position: &str,
) -> Val {
    let rank = data.rank();
    let t = data.dtype().mlir();
    let combine = match combiner {
        Some(op) => format!("%c = {op} %out, %in1 : {t}\n"),
        None => String::new(),
    };
    let chosen = if combiner.is_some() { "%c" } else { "%in1" };
    let position = position.to_string();
    imp.e.generic(
        rank + 1,
        &[rank],
        &[target, updates],
        Operand::dims(data, &(0..rank).collect::<Vec<_>>()),
        &|_, _| {
            format!(
                "{position}%hit = arith.cmpi eq, %in0, %pos : i64\n{combine}%r = arith.select %hit, {chosen}, %out : {t}"
            )
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
    let map: Vec<usize> = (0..rank)
        .map(|a| if a == axis { rank } else { a })
        .collect();
    let position =
        format!("%p = linalg.index {axis} : index\n%pos = arith.index_cast %p : index to i64\n");
    tensor(scatter_into(
        imp,
        &d,
        Operand::dims(&lin, &map),
        Operand::dims(&u, &map),
        combiner,
        &position,
    ))
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
    let mut position = String::from("%q = arith.constant 0 : index\n");
    let mut acc = "%q".to_string();
    for (c, &size) in ds[..k].iter().enumerate() {
        position.push_str(&format!(
            "%s{c} = arith.constant {size} : index\n%l{c} = linalg.index {c} : index\n%m{c} = arith.muli {acc}, %s{c} : index\n%a{c} = arith.addi %m{c}, %l{c} : index\n"
        ));
        acc = format!("%a{c}");
    }
    position.push_str(&format!("%pos = arith.index_cast {acc} : index to i64\n"));
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
    let wrapped = if node.opset >= 11 { "%wrap" } else { "%v" };
    let mask = imp
        .e
        .map(&[&i], TType::new(DType::Bool, shape.clone()), &|a| {
            let wide = if dtype.is_float() {
                format!("%v = arith.fptosi {} : {} to i64\n", a[0], dtype.mlir())
            } else if dtype == DType::I64 {
                format!("%v = arith.addi {0}, %zero : i64\n", a[0])
            } else {
                format!("%v = arith.extsi {} : {} to i64\n", a[0], dtype.mlir())
            };
            format!(
                "%zero = arith.constant 0 : i64\n%depth = arith.constant {depth} : i64\n{wide}\
             %neg = arith.cmpi slt, %v, %zero : i64\n%wrap = arith.addi %v, %depth : i64\n\
             %n = arith.select %neg, {wrapped}, %v : i64\n%p = linalg.index {axis} : index\n\
             %pi = arith.index_cast %p : index to i64\n%r = arith.cmpi eq, %n, %pi : i64"
            )
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
    let zero = literal(dtype, 0.0);
    let t = dtype.mlir();
    let predicate = if upper { "sge" } else { "sle" };
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
    tensor(imp.e.map(&inputs, x.ty.clone(), &|a| {
        let k = match k_const {
            Some(k) => format!("%k = arith.constant {k} : i64\n"),
            None => format!(
                "%kz = arith.constant 0 : i64\n%k = arith.addi {}, %kz : i64\n",
                a[1]
            ),
        };
        format!(
            "{k}%i = linalg.index {} : index\n%j = linalg.index {} : index\n\
             %ii = arith.index_cast %i : index to i64\n%jj = arith.index_cast %j : index to i64\n\
             %diff = arith.subi %jj, %ii : i64\n%keep = arith.cmpi {predicate}, %diff, %k : i64\n\
             %zero = arith.constant {zero} : {t}\n%r = arith.select %keep, {}, %zero : {t}",
            rank - 2,
            rank - 1,
            a[0]
        )
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
        (false, false) => "ule",
        (false, true) => "ult",
        (true, false) => "uge",
        (true, true) => "ugt",
    };
    let combine = match (dtype.is_float(), product) {
        (true, false) => "arith.addf",
        (false, false) => "arith.addi",
        (true, true) => "arith.mulf",
        (false, true) => "arith.muli",
    };
    let identity = if product { 1.0 } else { 0.0 };
    let t = dtype.mlir();
    let neutral = literal(dtype, identity);
    let init = imp.e.filled(&x.ty, identity);
    let map: Vec<usize> = (0..rank)
        .map(|a| if a == axis { rank } else { a })
        .collect();
    imp.e.generic(
        rank + 1,
        &[rank],
        &[Operand::dims(x, &map)],
        Operand::dims(&init, &(0..rank).collect::<Vec<_>>()),
        &|a, out| {
            format!(
                "%i = linalg.index {axis} : index\n%m = linalg.index {rank} : index\n\
                 %in = arith.cmpi {predicate}, %m, %i : index\n%neutral = arith.constant {neutral} : {t}\n\
                 %v = arith.select %in, {}, %neutral : {t}\n%r = {combine} {out}, %v : {t}",
                a[0]
            )
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
    let source = x.ssa.clone();
    let source_ty = x.ty.mlir();
    let indices: Vec<String> = (0..rank)
        .map(|a| {
            if a == time {
                "%src".to_string()
            } else {
                format!("%d{a}")
            }
        })
        .collect();
    let dims: String = (0..rank)
        .filter(|&a| a != time)
        .map(|a| format!("%d{a} = linalg.index {a} : index\n"))
        .collect();
    let y = imp.e.generic(
        rank,
        &[],
        &[Operand::dims(&lens, &[batch])],
        Operand::dims(&init, &(0..rank).collect::<Vec<_>>()),
        &|a, _out| {
            format!(
                "{dims}%t = linalg.index {time} : index\n%ti = arith.index_cast %t : index to i64\n\
                 %zero = arith.constant 0 : i64\n%steps = arith.constant {steps} : i64\n\
                 %l0 = arith.maxsi {len}, %zero : i64\n%l = arith.minsi %l0, %steps : i64\n\
                 %one = arith.constant 1 : i64\n%lm1 = arith.subi %l, %one : i64\n\
                 %rev = arith.subi %lm1, %ti : i64\n%inside = arith.cmpi slt, %ti, %l : i64\n\
                 %srci = arith.select %inside, %rev, %ti : i64\n\
                 %src = arith.index_cast %srci : i64 to index\n\
                 %r = tensor.extract {source}[{}] : {source_ty}",
                indices.join(", "),
                len = a[0],
            )
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
            .map_err(|e| {
                ImportError::new(format!(
                    "{e}; the output shape depends on it (dynamic shapes are not supported yet)"
                ))
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
    let t = dtype.mlir();
    let compare = if dtype.is_float() {
        let (ordered, nan_first) = if largest {
            ("ogt", "%n1, %num0")
        } else {
            ("olt", "%n0, %num1")
        };
        format!(
            "%true = arith.constant true\n%n0 = arith.cmpf uno, %in0, %in0 : {t}\n\
             %n1 = arith.cmpf uno, %in1, %in1 : {t}\n%num0 = arith.xori %n0, %true : i1\n\
             %num1 = arith.xori %n1, %true : i1\n%gt_num = arith.cmpf {ordered}, %in1, %in0 : {t}\n\
             %gt_nan = arith.andi {nan_first} : i1\n%gt = arith.ori %gt_num, %gt_nan : i1\n\
             %eq_num = arith.cmpf oeq, %in1, %in0 : {t}\n%eq_nan = arith.andi %n0, %n1 : i1\n\
             %eq = arith.ori %eq_num, %eq_nan : i1\n"
        )
    } else {
        format!(
            "%gt = arith.cmpi {}, %in1, %in0 : {t}\n%eq = arith.cmpi eq, %in1, %in0 : {t}\n",
            if largest { "sgt" } else { "slt" }
        )
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
        &|_, out| {
            format!(
                "%i = linalg.index {axis} : index\n%m = linalg.index {rank} : index\n\
                 %lower = arith.cmpi ult, %m, %i : index\n{compare}\
                 %tie = arith.andi %eq, %lower : i1\n%b = arith.ori %gt, %tie : i1\n\
                 %one = arith.constant 1 : i64\n%zero = arith.constant 0 : i64\n\
                 %inc = arith.select %b, %one, %zero : i64\n%r = arith.addi {out}, %inc : i64"
            )
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
        &|a, out| {
            format!(
                "%j = linalg.index {axis} : index\n%jj = arith.index_cast %j : index to i64\n\
                 %hit = arith.cmpi eq, {}, %jj : i64\n%m = linalg.index {rank} : index\n\
                 %mm = arith.index_cast %m : index to i64\n%r = arith.select %hit, %mm, {out} : i64",
                a[0]
            )
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
        .op("tosa.argmax", &[&x], &format!("axis = {axis} : i32"), ty);
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
    let t = x.dtype().mlir();
    let (one_text, zero) = (literal(x.dtype(), 1.0), literal(x.dtype(), 0.0));
    let y = imp.e.map(&[&first], x2.ty.clone(), &|a| {
        format!(
            "%p = linalg.index {axis} : index\n%pi = arith.index_cast %p : index to i32\n\
             %hit = arith.cmpi eq, {}, %pi : i32\n%one = arith.constant {one_text} : {t}\n\
             %zero = arith.constant {zero} : {t}\n%r = arith.select %hit, %one, %zero : {t}",
            a[0]
        )
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
    let t = past.dtype().mlir();
    let update_ssa = update.ssa.clone();
    let update_ty = update.ty.mlir();
    let indices: Vec<String> = (0..rank)
        .map(|a| {
            if a == axis {
                "%s".to_string()
            } else {
                format!("%d{a}")
            }
        })
        .collect();
    let dims: String = (0..rank)
        .map(|a| format!("%d{a} = linalg.index {a} : index\n"))
        .collect();
    let position = if circular {
        format!(
            "%max = arith.constant {max_len} : i64\n%m = arith.remsi %diff, %max : i64\n\
             %neg = arith.cmpi slt, %m, %zero : i64\n%mp = arith.addi %m, %max : i64\n\
             %rel = arith.select %neg, %mp, %m : i64\n"
        )
    } else {
        "%rel = arith.addi %diff, %zero : i64\n".to_string()
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
        &|a, _out| {
            format!(
                "{dims}%c = arith.index_cast %d{axis} : index to i64\n%zero = arith.constant 0 : i64\n\
                 %diff = arith.subi %c, {w} : i64\n{position}\
                 %len = arith.constant {len} : i64\n%last = arith.constant {last} : i64\n\
                 %ge = arith.cmpi sge, %rel, %zero : i64\n%lt = arith.cmpi slt, %rel, %len : i64\n\
                 %hit = arith.andi %ge, %lt : i1\n%lo = arith.maxsi %rel, %zero : i64\n\
                 %clamped = arith.minsi %lo, %last : i64\n%s = arith.index_cast %clamped : i64 to index\n\
                 %u = tensor.extract {update_ssa}[{}] : {update_ty}\n\
                 %r = arith.select %hit, %u, {past} : {t}",
                indices.join(", "),
                w = a[1],
                past = a[0],
                last = len - 1,
            )
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
    let t = x.dtype().mlir();
    // The flat index, in the inferred shape, of the output position; -1
    // outside it (the output_shape's margin, which stays 0).
    let mut text =
        String::from("%flat0 = arith.constant 0 : i64\n%outside0 = arith.constant false\n");
    for a in 0..rank {
        text.push_str(&format!(
            "%p{a} = linalg.index {a} : index\n%q{a} = arith.index_cast %p{a} : index to i64\n\
             %extent{a} = arith.constant {} : i64\n%scaled{a} = arith.muli %flat{a}, %extent{a} : i64\n\
             %flat{} = arith.addi %scaled{a}, %q{a} : i64\n%beyond{a} = arith.cmpi sge, %q{a}, %extent{a} : i64\n\
             %outside{} = arith.ori %outside{a}, %beyond{a} : i1\n",
            inferred[a],
            a + 1,
            a + 1,
        ));
    }
    let out_ty = x.ty.with_shape(shape);
    let init = imp.e.filled(&out_ty, 0.0);
    let y = imp.e.generic(
        rank + 1,
        &[rank],
        &[Operand::dims(&flat_x, &[rank]), Operand::dims(&flat_i, &[rank])],
        Operand::dims(&init, &(0..rank).collect::<Vec<_>>()),
        &|a, out| {
            format!(
                "{text}%same = arith.cmpi eq, {}, %flat{rank} : i64\n%true = arith.constant true\n\
                 %inside = arith.xori %outside{rank}, %true : i1\n%hit = arith.andi %same, %inside : i1\n\
                 %r = arith.select %hit, {}, {out} : {t}",
                a[1], a[0]
            )
        },
    );
    tensor(y)
}
