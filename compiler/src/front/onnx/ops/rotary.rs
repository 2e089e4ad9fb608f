//! RotaryEmbedding (opset 23): rotary position embeddings (RoPE) as
//! TOSA data movement and elementwise math. The input is brought to
//! `[batch, seq, heads, head]` (a 4-D `[batch, heads, seq, head]` input
//! transposed, a 3-D `[batch, seq, hidden]` one split into `num_heads`),
//! the first `rotary_embedding_dim` features of each head rotated as pairs
//! (the two halves, or even and odd features when `interleaved`) by the
//! angles of the cos/sin caches (picked by `position_ids` with a gather
//! when given) and the rest copied, then brought back to the input's
//! layout.

use super::super::emit::Val;
use super::super::error::{ImportError, Result, bail};
use super::super::importer::Importer;
use super::super::node::{Node, Value, require_float};
use super::shape::gather_tensor;
use super::tensor;

pub fn rotary_embedding(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let input = node.input(0)?;
    require_float(input, "RotaryEmbedding's input")?;
    let x = imp.val(input)?;
    let shape = x.shape().to_vec();
    // [batch, seq, heads, head].
    let x4 = match shape.len() {
        4 => imp.e.transpose(&x, &[0, 2, 1, 3]),
        3 => {
            let heads = node.int("num_heads", 0)?;
            if heads <= 0 || shape[2] % heads != 0 {
                bail!(
                    "RotaryEmbedding of a 3-D input needs num_heads dividing its hidden size {}, not {heads}",
                    shape[2]
                );
            }
            imp.e
                .reshape(&x, &[shape[0], shape[1], heads, shape[2] / heads])
        }
        _ => bail!("RotaryEmbedding's input must be 3-D or 4-D, not {}", x.ty),
    };
    let s4 = x4.shape().to_vec();
    let (batch, seq, heads, head) = (s4[0], s4[1], s4[2], s4[3]);
    let dim = match node.int("rotary_embedding_dim", 0)? {
        0 => head,
        d if d > 0 && d <= head && d % 2 == 0 => d,
        d => bail!("rotary_embedding_dim {d} must be even and at most the head size {head}"),
    };
    let half = dim / 2;
    let interleaved = node.int("interleaved", 0)? != 0;
    let cache = |imp: &mut Importer, index: usize, what: &str| -> Result<Val> {
        let c = node.input(index)?;
        if c.dtype() != x.dtype() {
            bail!(
                "RotaryEmbedding's {what} must be {} like the input, not {}",
                x.dtype(),
                c.dtype()
            );
        }
        let v = match node.opt(3) {
            Some(ids) => {
                if !ids.dtype().is_int() || ids.shape() != [batch, seq] {
                    bail!(
                        "RotaryEmbedding's position_ids must be integers of shape [{batch}, {seq}], not {}",
                        ids.ty()
                    );
                }
                if c.rank() != 2 {
                    bail!(
                        "RotaryEmbedding's {what} must be [max_position, {half}] with position_ids, not {}",
                        c.ty()
                    );
                }
                let table = imp.val(c)?;
                gather_tensor(imp, &table, 0, ids)?
            }
            None => imp.val(c)?,
        };
        if v.shape() != [batch, seq, half] {
            bail!(
                "RotaryEmbedding's {what} gives {} per position, not [{batch}, {seq}, {half}]",
                v.ty
            );
        }
        Ok(imp.e.reshape(&v, &[batch, seq, 1, half]))
    };
    let cos = cache(imp, 1, "cos_cache")?;
    let sin = cache(imp, 2, "sin_cache")?;
    let rotate = imp.e.slice_axis(&x4, 3, 0, dim);
    let (x1, x2) = if interleaved {
        let pairs = imp.e.reshape(&rotate, &[batch, seq, heads, half, 2]);
        let even = imp.e.slice_axis(&pairs, 4, 0, 1);
        let odd = imp.e.slice_axis(&pairs, 4, 1, 2);
        let shape = [batch, seq, heads, half];
        (imp.e.reshape(&even, &shape), imp.e.reshape(&odd, &shape))
    } else {
        (
            imp.e.slice_axis(&rotate, 3, 0, half),
            imp.e.slice_axis(&rotate, 3, half, dim),
        )
    };
    let cos_x1 = imp.e.mul(&cos, &x1)?;
    let sin_x2 = imp.e.mul(&sin, &x2)?;
    let real = imp.e.sub(&cos_x1, &sin_x2)?;
    let sin_x1 = imp.e.mul(&sin, &x1)?;
    let cos_x2 = imp.e.mul(&cos, &x2)?;
    let imag = imp.e.add(&sin_x1, &cos_x2)?;
    let rotated = if interleaved {
        let shape = [batch, seq, heads, half, 1];
        let real = imp.e.reshape(&real, &shape);
        let imag = imp.e.reshape(&imag, &shape);
        let pairs = imp.e.concat(&[real, imag], 4);
        imp.e.reshape(&pairs, &[batch, seq, heads, dim])
    } else {
        imp.e.concat(&[real, imag], 3)
    };
    let y4 = if dim < head {
        let rest = imp.e.slice_axis(&x4, 3, dim, head);
        imp.e.concat(&[rotated, rest], 3)
    } else {
        rotated
    };
    let y = if shape.len() == 4 {
        imp.e.transpose(&y4, &[0, 2, 1, 3])
    } else {
        imp.e.reshape(&y4, &shape)
    };
    tensor(y)
}
