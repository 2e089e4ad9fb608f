//! The recurrent ops RNN, GRU and LSTM, unrolled over their static
//! sequence length: the input projections of every step are one GEMM
//! (`X · Wᵀ` over all steps and batch rows, biases added once), then each
//! step is a matmul with the recurrence weights and the gates'
//! elementwise math, so the GEMM kernels do the work.
//!
//! Every direction (forward, reverse, bidirectional), the activations
//! with their alpha/beta, `clip`, LSTM's peepholes and `input_forget`,
//! GRU's `linear_before_reset`, `layout` 0/1, initial states and all
//! outputs are imported. A constant `sequence_lens` follows onnxruntime:
//! steps past an entry's length leave its state unchanged and give zeros
//! in `Y`, and the reverse direction runs over each entry's own length.

use super::super::dtype::{DType, checked_numel};
use super::super::emit::Val;
use super::super::error::{ImportError, Result, bail};
use super::super::fold;
use super::super::importer::Importer;
use super::super::node::{Node, Value, require_float};
use super::super::tensor::Const;
use super::shape::{reshape_value, strided_slice_value, transpose_value};

/// The longest sequence unrolled (each step is a copy of the cell).
const MAX_STEPS: i64 = 1 << 14;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Cell {
    Rnn,
    Gru,
    Lstm,
}

impl Cell {
    fn gates(self) -> i64 {
        match self {
            Cell::Rnn => 1,
            Cell::Gru => 3,
            Cell::Lstm => 4,
        }
    }

    fn default_activations(self) -> &'static [&'static str] {
        match self {
            Cell::Rnn => &["Tanh"],
            Cell::Gru => &["Sigmoid", "Tanh"],
            Cell::Lstm => &["Sigmoid", "Tanh", "Tanh"],
        }
    }
}

/// An activation function of the recurrent ops, with its parameters.
#[derive(Clone, Debug)]
struct Act {
    name: String,
    alpha: f64,
    beta: f64,
}

/// The activations for each direction: `activations` (lower-cased) with
/// `activation_alpha`/`activation_beta` consumed in order by the
/// functions that take them (onnxruntime's reading), defaults otherwise.
fn activations(node: &Node, cell: Cell, directions: usize) -> Result<Vec<Vec<Act>>> {
    let per = cell.default_activations().len();
    let names: Vec<String> = match node
        .proto
        .attribute
        .iter()
        .find(|a| a.name == "activations")
    {
        None => cell
            .default_activations()
            .iter()
            .cycle()
            .take(per * directions)
            .map(|s| s.to_string())
            .collect(),
        Some(a) => {
            let mut names = Vec::new();
            for s in &a.strings {
                match String::from_utf8(s.clone()) {
                    Ok(s) => names.push(s),
                    Err(_) => bail!("an activation name is not UTF-8"),
                }
            }
            if names.len() == per && directions == 2 {
                names = names.iter().chain(names.iter()).cloned().collect();
            }
            if names.len() != per * directions {
                bail!(
                    "{} takes {per} activations per direction ({directions} directions), not {}",
                    node.op(),
                    names.len()
                );
            }
            names
        }
    };
    let alphas = node.floats("activation_alpha")?.unwrap_or_default();
    let betas = node.floats("activation_beta")?.unwrap_or_default();
    let (mut ai, mut bi) = (alphas.iter(), betas.iter());
    let mut acts = Vec::new();
    for name in names {
        let lower = name.to_ascii_lowercase();
        // (takes alpha, takes beta, default alpha, default beta)
        let (ta, tb, da, db) = match lower.as_str() {
            "relu" | "tanh" | "sigmoid" | "softsign" | "softplus" => (false, false, 0.0, 0.0),
            "affine" => (true, true, 1.0, 0.0),
            "scaledtanh" => (true, true, 1.0, 1.0),
            "leakyrelu" => (true, false, 0.01, 0.0),
            "thresholdedrelu" => (true, false, 1.0, 0.0),
            "hardsigmoid" => (true, true, 0.2, 0.5),
            "elu" => (true, false, 1.0, 0.0),
            _ => bail!("{}: unknown activation '{name}'", node.op()),
        };
        let alpha = if ta {
            ai.next().map_or(da, |&a| a as f64)
        } else {
            da
        };
        let beta = if tb {
            bi.next().map_or(db, |&b| b as f64)
        } else {
            db
        };
        acts.push(Act {
            name: lower,
            alpha,
            beta,
        });
    }
    Ok(acts.chunks(per).map(<[Act]>::to_vec).collect())
}

/// Applies an activation (after clipping the input to `[-clip, clip]`).
fn apply(imp: &mut Importer, act: &Act, x: &Val, clip: Option<f64>) -> Result<Val> {
    let x = match clip {
        Some(c) => imp.e.clamp(x, -c, c),
        None => x.clone(),
    };
    let (d, rank) = (x.dtype(), x.rank());
    let bool_ty = x.ty.with_dtype(DType::Bool);
    Ok(match act.name.as_str() {
        "sigmoid" => imp.e.unary("tosa.sigmoid", &x),
        "tanh" => imp.e.unary("tosa.tanh", &x),
        "relu" => imp.e.clamp(&x, 0.0, f64::INFINITY),
        "affine" => {
            let ax = imp.e.scale(&x, act.alpha)?;
            imp.e.offset(&ax, act.beta)?
        }
        "scaledtanh" => {
            let bx = imp.e.scale(&x, act.beta)?;
            let t = imp.e.unary("tosa.tanh", &bx);
            imp.e.scale(&t, act.alpha)?
        }
        "leakyrelu" => {
            let ax = imp.e.scale(&x, act.alpha)?;
            let zero = imp.e.scalar(d, rank, 0.0);
            let keep = imp.e.op("tosa.greater_equal", &[&x, &zero], &[], bool_ty);
            imp.e.select(&keep, &x, &ax)?
        }
        "thresholdedrelu" => {
            let threshold = imp.e.scalar(d, rank, act.alpha);
            let zero = imp.e.scalar(d, rank, 0.0);
            let keep = imp.e.op("tosa.greater", &[&x, &threshold], &[], bool_ty);
            imp.e.select(&keep, &x, &zero)?
        }
        "hardsigmoid" => {
            let ax = imp.e.scale(&x, act.alpha)?;
            let axb = imp.e.offset(&ax, act.beta)?;
            imp.e.clamp(&axb, 0.0, 1.0)
        }
        "elu" => {
            let zero = imp.e.scalar(d, rank, 0.0);
            let positive = imp.e.op("tosa.greater", &[&x, &zero], &[], bool_ty);
            let e = imp.e.unary("tosa.exp", &x);
            let em1 = imp.e.offset(&e, -1.0)?;
            let negative = imp.e.scale(&em1, act.alpha)?;
            imp.e.select(&positive, &x, &negative)?
        }
        "softsign" => {
            let a = imp.e.unary("tosa.abs", &x);
            let a1 = imp.e.offset(&a, 1.0)?;
            imp.e.div(&x, &a1)?
        }
        "softplus" => {
            // max(x, 0) + log(1 + exp(-|x|)), stable for large |x|.
            let positive = imp.e.clamp(&x, 0.0, f64::INFINITY);
            let a = imp.e.unary("tosa.abs", &x);
            let na = imp.e.negate(&a);
            let e = imp.e.unary("tosa.exp", &na);
            let e1 = imp.e.offset(&e, 1.0)?;
            let l = imp.e.unary("tosa.log", &e1);
            imp.e.add(&positive, &l)?
        }
        other => bail!("unknown activation '{other}'"),
    })
}

/// Element `index` of `v` along axis 0, that axis removed.
fn take0(imp: &mut Importer, v: &Value, index: i64) -> Result<Value> {
    let shape = v.shape();
    let rank = shape.len();
    let mut starts = vec![0; rank];
    starts[0] = index;
    let mut sizes = shape.clone();
    sizes[0] = 1;
    let part = strided_slice_value(imp, v, &starts, &vec![1; rank], &sizes)?;
    reshape_value(imp, &part, &shape[1..])
}

/// Columns `[begin, end)` of the last axis of a 1-D or 2-D value.
fn cols(imp: &mut Importer, v: &Value, begin: i64, end: i64) -> Result<Value> {
    let shape = v.shape();
    let rank = shape.len();
    let mut starts = vec![0; rank];
    starts[rank - 1] = begin;
    let mut sizes = shape;
    sizes[rank - 1] = end - begin;
    strided_slice_value(imp, v, &starts, &vec![1; rank], &sizes)
}

/// `a + b`, folded when both are constants.
fn add_values(imp: &mut Importer, a: &Value, b: &Value) -> Result<Value> {
    if let (Value::Const(x), Value::Const(y)) = (a, b)
        && let Some(c) = fold::binary("Add", x, y)?
    {
        return Ok(Value::constant(c));
    }
    let (x, y) = (imp.val(a)?, imp.val(b)?);
    Ok(Value::Tensor(imp.e.add(&x, &y)?))
}

/// `x[rows] @ w` for 2-D `x` and `w`.
fn mm(imp: &mut Importer, x: &Val, w: &Val) -> Result<Val> {
    super::matmul::matmul_vals(imp, x, w)
}

/// One direction's parameters, as the per-step math needs them.
struct Dir {
    /// `[H, G*H]`: the recurrence weights transposed.
    rt: Val,
    /// GRU: `Rᵀ` of the z and r gates (`[H, 2H]`) and of h (`[H, H]`).
    rt_zr: Option<Val>,
    rt_h: Option<Val>,
    /// GRU: the recurrence bias of h (`[H]`).
    rb_h: Option<Val>,
    /// LSTM's peepholes `(p_i, p_o, p_f)`, `[H]` each.
    peep: Option<(Val, Val, Val)>,
    acts: Vec<Act>,
    h0: Option<Val>,
    c0: Option<Val>,
    reverse: bool,
}

pub fn rnn(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let cell = match node.op() {
        "RNN" => Cell::Rnn,
        "GRU" => Cell::Gru,
        _ => Cell::Lstm,
    };
    let op = node.op();
    let x = node.input(0)?;
    require_float(x, &format!("{op}'s X"))?;
    let (w, r) = (node.input(1)?, node.input(2)?);
    let dtype = x.dtype();
    for (v, what) in [(w, "W"), (r, "R")] {
        if v.dtype() != dtype {
            bail!("{op}'s {what} is {}, X is {dtype}", v.dtype());
        }
    }
    let layout = if node.opset >= 14 {
        node.int("layout", 0)?
    } else {
        0
    };
    if layout != 0 && layout != 1 {
        bail!("{op}'s layout {layout} is not 0 or 1");
    }
    if x.rank() != 3 || w.rank() != 3 || r.rank() != 3 {
        bail!(
            "{op} takes 3-D X, W and R, not {:?}, {:?}, {:?}",
            x.shape(),
            w.shape(),
            r.shape()
        );
    }
    let x = if layout == 1 {
        transpose_value(imp, x, &[1, 0, 2])?
    } else {
        x.clone()
    };
    let (steps, batch, input) = (x.shape()[0], x.shape()[1], x.shape()[2]);
    let direction = node.string("direction", "forward")?;
    let dirs: Vec<bool> = match direction.as_str() {
        "forward" => vec![false],
        "reverse" => vec![true],
        "bidirectional" => vec![false, true],
        other => bail!("{op}'s direction '{other}' is not forward, reverse or bidirectional"),
    };
    let nd = dirs.len() as i64;
    let g = cell.gates();
    let hidden = match node.int_opt("hidden_size")? {
        Some(h) => h,
        None => r.shape()[2],
    };
    if hidden <= 0 || hidden > 1 << 24 {
        bail!("{op}'s hidden_size {hidden} is out of range");
    }
    if w.shape() != [nd, g * hidden, input] || r.shape() != [nd, g * hidden, hidden] {
        bail!(
            "{op} with hidden_size {hidden}, {nd} directions and input size {input} needs W of [{nd}, {}, {input}] and R of [{nd}, {}, {hidden}], not {:?} and {:?}",
            g * hidden,
            g * hidden,
            w.shape(),
            r.shape()
        );
    }
    if steps == 0 || batch == 0 {
        bail!("{op} over an empty sequence or batch");
    }
    if steps > MAX_STEPS || checked_numel(&[steps, batch, input, g, hidden]).is_none() {
        bail!(
            "{op} over {steps} steps of a batch of {batch}: too long to unroll (at most {MAX_STEPS} steps)"
        );
    }
    let clip = node.float_opt("clip")?.map(f64::from);
    if clip.is_some_and(|c| c.is_nan() || c < 0.0) {
        bail!("{op}'s clip must be positive");
    }
    let input_forget = cell == Cell::Lstm && node.int("input_forget", 0)? != 0;
    let linear_before_reset = cell == Cell::Gru && node.int("linear_before_reset", 0)? != 0;
    let acts = activations(node, cell, dirs.len())?;
    let lens = sequence_lens(imp, node, steps, batch, dirs.contains(&true))?;

    // Initial states, [D, B, H] (layout 1: [B, D, H]).
    let state = |imp: &mut Importer, index: usize, what: &str| -> Result<Option<Value>> {
        let Some(v) = node.opt(index) else {
            return Ok(None);
        };
        if v.dtype() != dtype {
            bail!("{op}'s {what} is {}, X is {dtype}", v.dtype());
        }
        let v = if layout == 1 && v.rank() == 3 {
            transpose_value(imp, v, &[1, 0, 2])?
        } else {
            v.clone()
        };
        if v.shape() != [nd, batch, hidden] {
            bail!(
                "{op}'s {what} must be [{nd}, {batch}, {hidden}] (layout {layout}), not {:?}",
                v.shape()
            );
        }
        Ok(Some(v))
    };
    let h0 = state(imp, 5, "initial_h")?;
    let c0 = if cell == Cell::Lstm {
        state(imp, 6, "initial_c")?
    } else {
        None
    };
    let bias = match node.opt(3) {
        Some(b) if b.shape() != [nd, 2 * g * hidden] || b.dtype() != dtype => bail!(
            "{op}'s B must be [{nd}, {}] of {dtype}, not {}",
            2 * g * hidden,
            b.ty()
        ),
        other => other.cloned(),
    };
    let peepholes = match (cell, node.opt(7)) {
        (Cell::Lstm, Some(p)) if p.shape() != [nd, 3 * hidden] || p.dtype() != dtype => {
            bail!("LSTM's P must be [{nd}, {}], not {}", 3 * hidden, p.ty())
        }
        (Cell::Lstm, Some(p)) => Some(p.clone()),
        _ => None,
    };

    // All steps' input projections: [S*B, I] x [I, G*H] per direction.
    let x2 = reshape_value(imp, &x, &[steps * batch, input])?;
    let x2 = imp.val(&x2)?;
    let mut ys: Vec<Vec<Val>> = Vec::new();
    let mut finals_h = Vec::new();
    let mut finals_c = Vec::new();
    for (d, &reverse) in dirs.iter().enumerate() {
        let di = d as i64;
        let wd = take0(imp, w, di)?;
        let wt = transpose_value(imp, &wd, &[1, 0])?;
        let wt = imp.val(&wt)?;
        let mut xw = mm(imp, &x2, &wt)?;
        let rd = take0(imp, r, di)?;
        let rt_value = transpose_value(imp, &rd, &[1, 0])?;
        let mut dir = Dir {
            rt: imp.val(&rt_value)?,
            rt_zr: None,
            rt_h: None,
            rb_h: None,
            peep: None,
            acts: acts[d].clone(),
            h0: match &h0 {
                Some(h) => {
                    let v = take0(imp, h, di)?;
                    Some(imp.val(&v)?)
                }
                None => None,
            },
            c0: match &c0 {
                Some(c) => {
                    let v = take0(imp, c, di)?;
                    Some(imp.val(&v)?)
                }
                None => None,
            },
            reverse,
        };
        if cell == Cell::Gru {
            let zr = cols(imp, &rt_value, 0, 2 * hidden)?;
            let h = cols(imp, &rt_value, 2 * hidden, 3 * hidden)?;
            dir.rt_zr = Some(imp.val(&zr)?);
            dir.rt_h = Some(imp.val(&h)?);
        }
        if let Some(b) = &bias {
            let bd = take0(imp, b, di)?;
            let wb = cols(imp, &bd, 0, g * hidden)?;
            let rb = cols(imp, &bd, g * hidden, 2 * g * hidden)?;
            // GRU's h gate keeps its recurrence bias inside the reset.
            let (rb_in, rb_h) = if cell == Cell::Gru {
                let zr = cols(imp, &rb, 0, 2 * hidden)?;
                let zeros = Value::constant(Const::splat_f64(dtype, vec![hidden], 0.0));
                let joined = super::movement::concat_values(imp, &[&zr, &zeros], 0)?;
                (joined, Some(cols(imp, &rb, 2 * hidden, 3 * hidden)?))
            } else {
                (rb, None)
            };
            let sum = add_values(imp, &wb, &rb_in)?;
            let sum = imp.val(&sum)?;
            xw = imp.e.add(&xw, &sum)?;
            if let Some(h) = rb_h {
                dir.rb_h = Some(imp.val(&h)?);
            }
        }
        if let Some(p) = &peepholes {
            let pd = take0(imp, p, di)?;
            let mut parts = Vec::new();
            for k in 0..3 {
                let v = cols(imp, &pd, k * hidden, (k + 1) * hidden)?;
                parts.push(imp.val(&v)?);
            }
            dir.peep = Some((parts[0].clone(), parts[1].clone(), parts[2].clone()));
        }
        let (y, h, c) = run_direction(
            imp,
            cell,
            &dir,
            &xw,
            (steps, batch, hidden),
            &lens,
            (clip, input_forget, linear_before_reset),
        )?;
        ys.push(y);
        finals_h.push(h);
        if let Some(c) = c {
            finals_c.push(c);
        }
    }

    // Y: [S, D, B, H] (layout 1: [B, S, D, H]); Y_h, Y_c: [D, B, H]
    // (layout 1: [B, D, H]).
    let wanted = |i: usize| node.proto.output.get(i).is_some_and(|o| !o.is_empty());
    let mut outputs = Vec::new();
    if wanted(0) {
        let mut per_dir = Vec::new();
        for y in &ys {
            let parts: Vec<Val> = y
                .iter()
                .map(|t| imp.e.reshape(t, &[1, 1, batch, hidden]))
                .collect();
            per_dir.push(imp.e.concat(&parts, 0));
        }
        let mut y = imp.e.concat(&per_dir, 1);
        if layout == 1 {
            y = imp.e.transpose(&y, &[2, 0, 1, 3]);
        }
        outputs.push(Value::Tensor(y));
    } else {
        outputs.push(Value::constant(Const::splat_f64(dtype, vec![0], 0.0)));
    }
    for finals in [&finals_h, &finals_c] {
        if finals.is_empty() {
            break;
        }
        let parts: Vec<Val> = finals
            .iter()
            .map(|t| imp.e.reshape(t, &[1, batch, hidden]))
            .collect();
        let mut s = imp.e.concat(&parts, 0);
        if layout == 1 {
            s = imp.e.transpose(&s, &[1, 0, 2]);
        }
        outputs.push(Value::Tensor(s));
    }
    Ok(outputs)
}

/// `sequence_lens`: every entry the full length, known per entry, or
/// computed at run time (then only the forward direction, whose steps
/// need no per-entry reordering).
enum Lens {
    Full,
    Known(Vec<i64>),
    Runtime(Val),
}

impl Lens {
    fn known(&self) -> Option<&[i64]> {
        match self {
            Lens::Known(l) => Some(l),
            _ => None,
        }
    }
}

fn sequence_lens(
    imp: &mut Importer,
    node: &Node,
    steps: i64,
    batch: i64,
    reverse: bool,
) -> Result<Lens> {
    let op = node.op();
    let lens = match node.opt(4) {
        None => return Ok(Lens::Full),
        Some(Value::Tensor(v)) => {
            if v.shape() != [batch] || !v.dtype().is_int() {
                bail!(
                    "{op}'s sequence_lens must be [{batch}] integers, not {}",
                    v.ty
                );
            }
            if reverse {
                bail!(
                    "{op}'s sequence_lens is computed at run time: tcc needs it to be a constant for the reverse and bidirectional directions (each entry's sequence is reversed within its own length)"
                );
            }
            return Ok(Lens::Runtime(imp.e.reshape(v, &[batch, 1])));
        }
        Some(Value::Const(c)) => c.i64s(),
    };
    if lens.len() as i64 != batch {
        bail!(
            "{op}'s sequence_lens has {} entries for a batch of {batch}",
            lens.len()
        );
    }
    if let Some(bad) = lens.iter().find(|&&l| l < 0 || l > steps) {
        bail!("{op}'s sequence_lens entry {bad} is outside [0, {steps}]");
    }
    Ok(if lens.iter().all(|&l| l == steps) {
        Lens::Full
    } else {
        Lens::Known(lens)
    })
}

/// Rows `[row, row + n)` of a 2-D value.
fn rows(imp: &mut Importer, x: &Val, row: i64, n: i64) -> Val {
    imp.e.slice_axis(x, 0, row, row + n)
}

/// The input projection of step `k` of a direction: `[B, G*H]` rows of
/// `xw` (`[S*B, G*H]`, time-major). The reverse direction takes time
/// `S-1-k`, or with sequence lengths `len_b-1-k` for each entry `b`.
fn step_input(
    imp: &mut Importer,
    xw: &Val,
    (steps, batch): (i64, i64),
    k: i64,
    reverse: bool,
    lens: Option<&[i64]>,
) -> Val {
    match (reverse, lens) {
        (false, _) => rows(imp, xw, k * batch, batch),
        (true, None) => rows(imp, xw, (steps - 1 - k) * batch, batch),
        (true, Some(lens)) => {
            let parts: Vec<Val> = (0..batch)
                .map(|b| {
                    // Past an entry's length the row is masked out; any row
                    // will do.
                    let t = (lens[b as usize] - 1 - k).max(0);
                    rows(imp, xw, t * batch + b, 1)
                })
                .collect();
            if parts.len() == 1 {
                parts[0].clone()
            } else {
                imp.e.concat(&parts, 0)
            }
        }
    }
}

/// Runs one direction: returns `Y` by time (`[B, H]` each), the final
/// hidden state and (LSTM) the final cell state.
fn run_direction(
    imp: &mut Importer,
    cell: Cell,
    dir: &Dir,
    xw: &Val,
    (steps, batch, hidden): (i64, i64, i64),
    lens: &Lens,
    (clip, input_forget, linear_before_reset): (Option<f64>, bool, bool),
) -> Result<(Vec<Val>, Val, Option<Val>)> {
    let dtype = xw.dtype();
    let zeros = imp.e.splat(dtype, vec![batch, hidden], 0.0);
    let mut h = dir.h0.clone();
    let mut c = dir.c0.clone();
    let mut outs: Vec<Val> = Vec::new();
    let gate =
        |imp: &mut Importer, v: &Val, k: i64| imp.e.slice_axis(v, 1, k * hidden, (k + 1) * hidden);
    for k in 0..steps {
        let xk = step_input(imp, xw, (steps, batch), k, dir.reverse, lens.known());
        let h_prev = h.clone().unwrap_or_else(|| zeros.clone());
        let (h_new, c_new) = match cell {
            Cell::Rnn => {
                let pre = match &h {
                    Some(hv) => {
                        let hr = mm(imp, hv, &dir.rt)?;
                        imp.e.add(&xk, &hr)?
                    }
                    None => xk,
                };
                (apply(imp, &dir.acts[0], &pre, clip)?, None)
            }
            Cell::Gru => {
                let (f, gact) = (&dir.acts[0], &dir.acts[1]);
                let x_zr = imp.e.slice_axis(&xk, 1, 0, 2 * hidden);
                let x_h = gate(imp, &xk, 2);
                let (zr, hh) = match &h {
                    None => (x_zr, None),
                    Some(hv) if linear_before_reset => {
                        let all = mm(imp, hv, &dir.rt)?;
                        let zr = imp.e.slice_axis(&all, 1, 0, 2 * hidden);
                        let zr = imp.e.add(&x_zr, &zr)?;
                        (zr, Some(gate(imp, &all, 2)))
                    }
                    Some(hv) => {
                        let rt_zr = dir.rt_zr.as_ref().expect("GRU weights");
                        let hr = mm(imp, hv, rt_zr)?;
                        (imp.e.add(&x_zr, &hr)?, None)
                    }
                };
                let z_pre = gate(imp, &zr, 0);
                let r_pre = gate(imp, &zr, 1);
                let z = apply(imp, f, &z_pre, clip)?;
                let rr = apply(imp, f, &r_pre, clip)?;
                // The recurrent term of h: r * (H Rhᵀ + Rbh) with
                // linear_before_reset, (r * H) Rhᵀ + Rbh without.
                let rec = if linear_before_reset {
                    let base = match hh {
                        Some(v) => v,
                        None => zeros.clone(),
                    };
                    let base = match &dir.rb_h {
                        Some(b) => imp.e.add(&base, b)?,
                        None => base,
                    };
                    Some(imp.e.mul(&rr, &base)?)
                } else {
                    let prod = match &h {
                        Some(hv) => {
                            let rh = imp.e.mul(&rr, hv)?;
                            Some(mm(imp, &rh, dir.rt_h.as_ref().expect("GRU weights"))?)
                        }
                        None => None,
                    };
                    match (prod, &dir.rb_h) {
                        (Some(p), Some(b)) => Some(imp.e.add(&p, b)?),
                        (Some(p), None) => Some(p),
                        (None, Some(b)) => Some(imp.e.add(&zeros, b)?),
                        (None, None) => None,
                    }
                };
                let h_pre = match rec {
                    Some(rv) => imp.e.add(&x_h, &rv)?,
                    None => x_h,
                };
                let hcand = apply(imp, gact, &h_pre, clip)?;
                // (1 - z) * h~ + z * H = h~ + z * (H - h~)
                let diff = imp.e.sub(&h_prev, &hcand)?;
                let zd = imp.e.mul(&z, &diff)?;
                (imp.e.add(&hcand, &zd)?, None)
            }
            Cell::Lstm => {
                let (f, gact, hact) = (&dir.acts[0], &dir.acts[1], &dir.acts[2]);
                let pre = match &h {
                    Some(hv) => {
                        let hr = mm(imp, hv, &dir.rt)?;
                        imp.e.add(&xk, &hr)?
                    }
                    None => xk,
                };
                let c_prev = c.clone().unwrap_or_else(|| zeros.clone());
                let mut i_pre = gate(imp, &pre, 0);
                let mut o_pre = gate(imp, &pre, 1);
                let mut f_pre = gate(imp, &pre, 2);
                let c_pre = gate(imp, &pre, 3);
                if let Some((pi, _, pf)) = &dir.peep {
                    let t = imp.e.mul(pi, &c_prev)?;
                    i_pre = imp.e.add(&i_pre, &t)?;
                    let t = imp.e.mul(pf, &c_prev)?;
                    f_pre = imp.e.add(&f_pre, &t)?;
                }
                let ig = apply(imp, f, &i_pre, clip)?;
                let fg = if input_forget {
                    // Coupled gates: f = 1 - i.
                    let one = imp.e.scalar(dtype, 2, 1.0);
                    imp.e.sub(&one, &ig)?
                } else {
                    apply(imp, f, &f_pre, clip)?
                };
                let cg = apply(imp, gact, &c_pre, clip)?;
                let keep = imp.e.mul(&fg, &c_prev)?;
                let new = imp.e.mul(&ig, &cg)?;
                let c_new = imp.e.add(&keep, &new)?;
                if let Some((_, po, _)) = &dir.peep {
                    let t = imp.e.mul(po, &c_new)?;
                    o_pre = imp.e.add(&o_pre, &t)?;
                }
                let og = apply(imp, f, &o_pre, clip)?;
                let hc = apply(imp, hact, &c_new, None)?;
                (imp.e.mul(&og, &hc)?, Some(c_new))
            }
        };
        let mask = match lens {
            Lens::Full => None,
            Lens::Known(lens) => {
                let alive: Vec<i64> = lens.iter().map(|&l| (k < l) as i64).collect();
                let mask = Const::from_i64(DType::Bool, vec![batch, 1], &alive);
                Some(imp.e.constant(&mask, "sequence_mask")?)
            }
            Lens::Runtime(l) => {
                let step = imp.e.splat(l.dtype(), vec![1, 1], k as f64);
                Some(imp.e.binary_to("tosa.greater", l, &step, DType::Bool)?)
            }
        };
        match mask {
            None => {
                outs.push(h_new.clone());
                h = Some(h_new);
                c = c_new;
            }
            Some(mask) => {
                // Entries whose sequence has ended keep their state and
                // output zeros.
                outs.push(imp.e.select(&mask, &h_new, &zeros)?);
                h = Some(imp.e.select(&mask, &h_new, &h_prev)?);
                if let Some(cn) = c_new {
                    let c_prev = c.clone().unwrap_or_else(|| zeros.clone());
                    c = Some(imp.e.select(&mask, &cn, &c_prev)?);
                }
            }
        }
    }
    // Outputs by time: the reverse direction's step k is time S-1-k (with
    // lengths: len_b-1-k for entry b, zeros past the length).
    let by_time: Vec<Val> = match (dir.reverse, lens.known()) {
        (false, _) => outs,
        (true, None) => outs.into_iter().rev().collect(),
        (true, Some(lens)) => (0..steps)
            .map(|t| {
                let parts: Vec<Val> = (0..batch)
                    .map(|b| {
                        let l = lens[b as usize];
                        let src = if t < l {
                            &outs[(l - 1 - t) as usize]
                        } else {
                            &zeros
                        };
                        rows(imp, src, b, 1)
                    })
                    .collect();
                if parts.len() == 1 {
                    parts[0].clone()
                } else {
                    imp.e.concat(&parts, 0)
                }
            })
            .collect(),
    };
    let h_final = h.unwrap_or(zeros);
    let c_final = if cell == Cell::Lstm {
        Some(c.unwrap_or_else(|| imp.e.splat(dtype, vec![batch, hidden], 0.0)))
    } else {
        None
    };
    Ok((by_time, h_final, c_final))
}
