//! Einsum (opset 12): any equation the spec allows — explicit or implicit
//! output, ellipsis with broadcasting, repeated labels (diagonals), sums —
//! lowered to transposes, reshapes, `tosa.gather` (diagonals),
//! `tosa.reduce_sum` and `tosa.matmul`, so contractions take tcc's GEMM
//! kernels.
//!
//! Each operand first loses its repeated labels (diagonal) and the labels
//! no other operand nor the output uses (summed). The operands are then
//! contracted left to right: the labels of both are arranged as
//! [batch, left, contracted] x [batch, contracted, right] and multiplied
//! as one batched matmul (integers: a broadcast product and a sum). The
//! last result is summed over what the output lacks and transposed into
//! the output's order.

use super::super::dtype::DType;
use super::super::emit::Val;
use super::super::error::{ImportError, Result, bail};

use super::super::importer::Importer;
use super::super::node::{Node, Value};
use super::super::tensor::Const;
use super::tensor;

/// A dimension label: letters are their character code, ellipsis
/// dimensions `ELLIPSIS + i` (right-aligned across operands).
type Label = u32;
const ELLIPSIS: Label = 1 << 16;

/// One term of the equation: letters and where the ellipsis stands.
struct Term {
    letters: Vec<char>,
    ellipsis_at: Option<usize>,
}

fn parse_term(text: &str) -> Result<Term> {
    let mut letters = Vec::new();
    let mut ellipsis_at = None;
    let mut rest = text;
    while !rest.is_empty() {
        if let Some(tail) = rest.strip_prefix("...") {
            if ellipsis_at.is_some() {
                bail!("Einsum term '{text}' has two ellipses");
            }
            ellipsis_at = Some(letters.len());
            rest = tail;
            continue;
        }
        let c = rest.chars().next().unwrap();
        if !c.is_ascii_alphabetic() {
            bail!("Einsum term '{text}' has the character '{c}' (letters and '...' only)");
        }
        letters.push(c);
        rest = &rest[1..];
    }
    Ok(Term {
        letters,
        ellipsis_at,
    })
}

/// The labels of an operand of rank `rank` (ellipsis dimensions numbered
/// right-aligned against `ellipsis_rank`).
fn labels_of(term: &Term, rank: usize, ellipsis_rank: usize, what: &str) -> Result<Vec<Label>> {
    let named = term.letters.len();
    let e = match term.ellipsis_at {
        Some(_) if rank >= named => rank - named,
        None if rank == named => 0,
        _ => bail!("Einsum {what} has rank {rank}, which its term does not describe"),
    };
    let mut out = Vec::with_capacity(rank);
    for (i, &c) in term.letters.iter().enumerate() {
        if term.ellipsis_at == Some(i) {
            out.extend((ellipsis_rank - e..ellipsis_rank).map(|k| ELLIPSIS + k as Label));
        }
        out.push(c as Label);
    }
    if term.ellipsis_at == Some(named) {
        out.extend((ellipsis_rank - e..ellipsis_rank).map(|k| ELLIPSIS + k as Label));
    }
    Ok(out)
}

/// An operand while it is being reduced: its value and the label of each
/// dimension.
struct Operand {
    v: Val,
    labels: Vec<Label>,
}

impl Operand {
    fn size(&self, label: Label) -> Option<i64> {
        self.labels
            .iter()
            .position(|&l| l == label)
            .map(|i| self.v.shape()[i])
    }
}

/// Takes the diagonal of every label that appears more than once.
fn diagonals(imp: &mut Importer, mut op: Operand) -> Result<Operand> {
    loop {
        let Some((p, q)) = (0..op.labels.len()).find_map(|p| {
            (p + 1..op.labels.len())
                .find(|&q| op.labels[q] == op.labels[p])
                .map(|q| (p, q))
        }) else {
            return Ok(op);
        };
        let shape = op.v.shape().to_vec();
        let n = shape[p];
        if shape[q] != n {
            bail!(
                "Einsum: the repeated label of dimensions {n} and {} differs in size",
                shape[q]
            );
        }
        let rank = shape.len();
        let mut perm: Vec<usize> = (0..rank).filter(|&a| a != p && a != q).collect();
        perm.extend([p, q]);
        let moved = imp.e.transpose(&op.v, &perm);
        let mut flat: Vec<i64> = perm[..rank - 2].iter().map(|&a| shape[a]).collect();
        let outer: i64 = flat.iter().product();
        flat.push(n);
        // [outer, n * n] gathered at k * (n + 1) along the last axis.
        let m = imp.e.reshape(&moved, &[outer, n * n]);
        let t = imp.e.transpose(&m, &[1, 0]);
        let values = imp.e.reshape(&t, &[1, n * n, outer]);
        let index: Vec<i64> = (0..n).map(|k| k * (n + 1)).collect();
        let idx = imp
            .e
            .constant(&Const::from_i64(DType::I32, vec![1, n], &index), "diagonal")?;
        let g = imp.e.op(
            "tosa.gather",
            &[&values, &idx],
            &[],
            values.ty.with_shape(vec![1, n, outer]),
        );
        let g = imp.e.reshape(&g, &[n, outer]);
        let g = imp.e.transpose(&g, &[1, 0]);
        let v = imp.e.reshape(&g, &flat);
        let mut labels: Vec<Label> = perm[..rank - 2].iter().map(|&a| op.labels[a]).collect();
        labels.push(op.labels[p]);
        op = Operand { v, labels };
    }
}

/// Sums the dimensions whose labels `keep` rejects.
fn sum_out(imp: &mut Importer, op: Operand, keep: &dyn Fn(Label) -> bool) -> Operand {
    let axes: Vec<usize> = (0..op.labels.len())
        .filter(|&i| !keep(op.labels[i]))
        .collect();
    if axes.is_empty() {
        return op;
    }
    let summed = imp.e.reduce_axes("tosa.reduce_sum", &op.v, &axes);
    let labels: Vec<Label> = (0..op.labels.len())
        .filter(|i| !axes.contains(i))
        .map(|i| op.labels[i])
        .collect();
    let shape: Vec<i64> = labels.iter().map(|&l| op.size(l).unwrap()).collect();
    let v = imp.e.reshape(&summed, &shape);
    Operand { v, labels }
}

/// Transposes `op` so its labels are `order` (a permutation of them).
fn arrange(imp: &mut Importer, op: &Operand, order: &[Label]) -> Val {
    let perm: Vec<usize> = order
        .iter()
        .map(|l| op.labels.iter().position(|m| m == l).unwrap())
        .collect();
    imp.e.transpose(&op.v, &perm)
}

/// Broadcasts the dimensions of `op` labelled in `sizes` to those sizes.
fn broadcast_labels(imp: &mut Importer, op: Operand, sizes: &[(Label, i64)]) -> Result<Operand> {
    let target: Vec<i64> = op
        .labels
        .iter()
        .zip(op.v.shape())
        .map(|(l, &d)| sizes.iter().find(|(m, _)| m == l).map_or(d, |&(_, s)| s))
        .collect();
    if target == op.v.shape() {
        return Ok(op);
    }
    let v = imp.e.broadcast_to(&op.v, &target)?;
    Ok(Operand {
        v,
        labels: op.labels,
    })
}

/// Contracts two operands, keeping the labels `keep` accepts.
fn contract(
    imp: &mut Importer,
    a: Operand,
    b: Operand,
    keep: &dyn Fn(Label) -> bool,
) -> Result<Operand> {
    // A shared label of size 1 on one side only broadcasts (ellipsis):
    // kept, the size-1 side is broadcast; summed, it is dropped there.
    let mut a = a;
    let mut b = b;
    let mut grow_a = Vec::new();
    let mut grow_b = Vec::new();
    for &l in &a.labels.clone() {
        let (Some(da), Some(db)) = (a.size(l), b.size(l)) else {
            continue;
        };
        if da == db {
            continue;
        }
        if da != 1 && db != 1 {
            bail!("Einsum: a label has sizes {da} and {db}, which do not broadcast");
        }
        if keep(l) {
            if da == 1 {
                grow_a.push((l, db));
            } else {
                grow_b.push((l, da));
            }
        } else {
            // Drop the size-1 dimension (a sum over one element).
            let side = if da == 1 { &mut a } else { &mut b };
            let i = side.labels.iter().position(|&m| m == l).unwrap();
            side.labels.remove(i);
            let mut shape = side.v.shape().to_vec();
            shape.remove(i);
            side.v = imp.e.reshape(&side.v, &shape);
        }
    }
    let a = broadcast_labels(imp, a, &grow_a)?;
    let b = broadcast_labels(imp, b, &grow_b)?;
    // Labels of one side only that nothing needs are summed first.
    let a = sum_out(imp, a, &|l| keep(l) || b.labels.contains(&l));
    let b = sum_out(imp, b, &|l| keep(l) || a.labels.contains(&l));
    let batch: Vec<Label> = a
        .labels
        .iter()
        .copied()
        .filter(|&l| b.labels.contains(&l) && keep(l))
        .collect();
    let inner: Vec<Label> = a
        .labels
        .iter()
        .copied()
        .filter(|&l| b.labels.contains(&l) && !keep(l))
        .collect();
    let left: Vec<Label> = a
        .labels
        .iter()
        .copied()
        .filter(|l| !b.labels.contains(l))
        .collect();
    let right: Vec<Label> = b
        .labels
        .iter()
        .copied()
        .filter(|l| !a.labels.contains(l))
        .collect();
    let size = |op: &Operand, ls: &[Label]| -> Vec<i64> {
        ls.iter().map(|&l| op.size(l).unwrap()).collect()
    };
    let (bs, ls, ks, rs) = (
        size(&a, &batch),
        size(&a, &left),
        size(&a, &inner),
        size(&b, &right),
    );
    let (nb, m, k, n) = (
        bs.iter().product::<i64>(),
        ls.iter().product::<i64>(),
        ks.iter().product::<i64>(),
        rs.iter().product::<i64>(),
    );
    let order_a: Vec<Label> = batch.iter().chain(&left).chain(&inner).copied().collect();
    let order_b: Vec<Label> = batch.iter().chain(&inner).chain(&right).copied().collect();
    let at = arrange(imp, &a, &order_a);
    let bt = arrange(imp, &b, &order_b);
    let a3 = imp.e.reshape(&at, &[nb, m, k]);
    let b3 = imp.e.reshape(&bt, &[nb, k, n]);
    let y = if a3.dtype().is_float() {
        imp.e.matmul3(&a3, &b3)
    } else {
        // [nb, m, k, 1] * [nb, 1, k, n] summed over k.
        let a4 = imp.e.reshape(&a3, &[nb, m, k, 1]);
        let b4 = imp.e.reshape(&b3, &[nb, 1, k, n]);
        let p = imp.e.mul(&a4, &b4)?;
        let s = imp.e.reduce("tosa.reduce_sum", &p, 2);
        imp.e.reshape(&s, &[nb, m, n])
    };
    let labels: Vec<Label> = batch.iter().chain(&left).chain(&right).copied().collect();
    let shape: Vec<i64> = bs.iter().chain(&ls).chain(&rs).copied().collect();
    let v = imp.e.reshape(&y, &shape);
    Ok(Operand { v, labels })
}

pub fn einsum(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let equation: String = node
        .string("equation", "")?
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    if equation.is_empty() {
        bail!("Einsum needs an equation");
    }
    let inputs: Vec<&Value> = node.inputs.iter().flatten().collect();
    if inputs.is_empty() || inputs.len() != node.inputs.len() {
        bail!("Einsum needs its inputs");
    }
    let (lhs, rhs) = match equation.split_once("->") {
        Some((l, r)) => (l, Some(r)),
        None => (equation.as_str(), None),
    };
    let terms: Vec<Term> = lhs.split(',').map(parse_term).collect::<Result<_>>()?;
    if terms.len() != inputs.len() {
        bail!(
            "Einsum equation '{equation}' has {} terms for {} inputs",
            terms.len(),
            inputs.len()
        );
    }
    let dtype = inputs[0].dtype();
    if inputs.iter().any(|v| v.dtype() != dtype) || dtype == DType::Bool {
        bail!("Einsum inputs must share one numeric element type");
    }
    let ellipsis_rank = terms
        .iter()
        .zip(&inputs)
        .filter(|(t, _)| t.ellipsis_at.is_some())
        .map(|(t, v)| v.rank().saturating_sub(t.letters.len()))
        .max()
        .unwrap_or(0);
    let mut operands = Vec::new();
    for (i, (term, value)) in terms.iter().zip(&inputs).enumerate() {
        let labels = labels_of(term, value.rank(), ellipsis_rank, &format!("input {i}"))?;
        let v = imp.val(value)?;
        operands.push(Operand { v, labels });
    }
    // The output's labels.
    let output: Vec<Label> = match rhs {
        Some(r) => {
            let term = parse_term(r)?;
            // Without '...' in the output, ellipsis dimensions are summed.
            let labels = labels_of(
                &term,
                term.letters.len()
                    + if term.ellipsis_at.is_some() {
                        ellipsis_rank
                    } else {
                        0
                    },
                ellipsis_rank,
                "output",
            )?;
            for (i, l) in labels.iter().enumerate() {
                if labels[..i].contains(l) {
                    bail!("Einsum output '{r}' repeats a label");
                }
                if *l < ELLIPSIS && !operands.iter().any(|o| o.labels.contains(l)) {
                    bail!(
                        "Einsum output label '{}' is in no input",
                        char::from_u32(*l).unwrap_or('?')
                    );
                }
            }
            labels
        }
        None => {
            let mut letters: Vec<char> = terms
                .iter()
                .flat_map(|t| t.letters.iter().copied())
                .collect();
            letters.sort();
            let once: Vec<char> = letters
                .iter()
                .copied()
                .filter(|c| letters.iter().filter(|d| *d == c).count() == 1)
                .collect();
            (0..ellipsis_rank as Label)
                .map(|k| ELLIPSIS + k)
                .chain(once.iter().map(|&c| c as Label))
                .collect()
        }
    };
    // Every label's size (broadcast over size-1 ellipsis dimensions).
    let mut sizes: Vec<(Label, i64)> = Vec::new();
    for op in &operands {
        for (&l, &d) in op.labels.iter().zip(op.v.shape()) {
            match sizes.iter_mut().find(|(m, _)| *m == l) {
                Some((_, s)) if *s == d || d == 1 => {}
                Some((_, s)) if *s == 1 => *s = d,
                Some((_, s)) => bail!("Einsum: a label has sizes {s} and {d}"),
                None => sizes.push((l, d)),
            }
        }
    }
    let mut reduced = Vec::new();
    for (i, op) in operands.into_iter().enumerate() {
        let op = diagonals(imp, op)?;
        reduced.push((i, op));
    }
    let count = reduced.len();
    let mut iter = reduced.into_iter();
    let (_, first) = iter.next().unwrap();
    // Labels still needed after operand `i`: the output's and the later operands'.
    let later: Vec<Vec<Label>> = (0..count)
        .map(|i| {
            let mut ls = output.clone();
            for (j, t) in terms.iter().enumerate().skip(i + 1) {
                ls.extend(
                    labels_of(t, inputs[j].rank(), ellipsis_rank, "input").unwrap_or_default(),
                );
            }
            ls
        })
        .collect();
    let mut acc = sum_out(imp, first, &|l| later[0].contains(&l));
    for (i, op) in iter {
        let needed = &later[i];
        let op = sum_out(imp, op, &|l| needed.contains(&l) || acc.labels.contains(&l));
        acc = contract(imp, acc, op, &|l| needed.contains(&l))?;
    }
    let acc = sum_out(imp, acc, &|l| output.contains(&l));
    // Output labels missing from the result (size-1 broadcast dims dropped
    // in a contraction) come back as size-1 dimensions, then broadcast.
    let mut v = acc.v.clone();
    let mut labels = acc.labels.clone();
    for &l in &output {
        if !labels.contains(&l) {
            let mut shape = v.shape().to_vec();
            shape.push(1);
            v = imp.e.reshape(&v, &shape);
            labels.push(l);
        }
    }
    let op = Operand { v, labels };
    let arranged = arrange(imp, &op, &output);
    let target: Vec<i64> = output
        .iter()
        .map(|l| sizes.iter().find(|(m, _)| m == l).map_or(1, |&(_, s)| s))
        .collect();
    let y = if arranged.shape() != target.as_slice() {
        imp.e.broadcast_to(&arranged, &target)?
    } else {
        arranged
    };
    tensor(y)
}
