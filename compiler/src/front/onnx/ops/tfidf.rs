//! `TfIdfVectorizer` (opset 9) on integer token ids: the n-gram counts of
//! each row, weighted as `TF`, `IDF` or `TFIDF`. Its attributes fix the
//! pool of n-grams and the output's width, and the input's shape fixes
//! every position tuple an n-gram can occupy (each skip distance), so the
//! op is a constant gather of those tuples, one comparison with the pool,
//! a sum over the tuples, and one matmul with a constant matrix that
//! places (and weights) each n-gram's count in its output column: a few
//! kernels for any pool. String pools (`pool_strings`) stop with the
//! error for strings.

use super::super::dtype::DType;
use super::super::error::{ImportError, Result, bail};
use super::super::importer::Importer;
use super::super::node::{Node, Value};
use super::super::tensor::Const;
use super::movement::concat_values;
use super::shape::reshape_value;
use super::{int_attr, one, synthetic};

/// The most position tuples times pool n-grams one size may compare (the
/// comparison's elements per row).
const MAX_COMPARISONS: usize = 1 << 24;

/// How the counts are weighted.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Tf,
    Idf,
    TfIdf,
}

pub fn tfidf_vectorizer(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let x = node.input(0)?.clone();
    if node.has("pool_strings") && !node.has("pool_int64s") {
        bail!(
            "TfIdfVectorizer with pool_strings: strings are not supported (tcc computes on numeric tensors only; give token ids with pool_int64s)"
        );
    }
    if !matches!(x.dtype(), DType::I32 | DType::I64) {
        bail!(
            "TfIdfVectorizer's input must be int32 or int64 token ids, not {}",
            x.dtype()
        );
    }
    let mode = match node.string("mode", "")?.as_str() {
        "TF" => Mode::Tf,
        "IDF" => Mode::Idf,
        "TFIDF" => Mode::TfIdf,
        other => bail!("TfIdfVectorizer's mode '{other}' is not one of TF, IDF, TFIDF"),
    };
    let min_n = node.int("min_gram_length", 0)?;
    let max_n = node.int("max_gram_length", 0)?;
    let max_skip = node.int("max_skip_count", 0)?;
    if min_n < 1 || max_n < min_n || max_n > 64 {
        bail!(
            "TfIdfVectorizer's min_gram_length {min_n} and max_gram_length {max_n} must satisfy 1 <= min <= max <= 64"
        );
    }
    if !(0..=1 << 16).contains(&max_skip) {
        bail!("TfIdfVectorizer's max_skip_count {max_skip} is out of range");
    }
    let pool = node.ints("pool_int64s")?.unwrap_or_default();
    let counts = node.ints("ngram_counts")?.unwrap_or_default();
    let indexes = node.ints("ngram_indexes")?.unwrap_or_default();
    let weights = node.floats("weights")?;
    // The pool's n-grams, by size: (n, their pool ids, their tokens).
    let mut sections: Vec<(usize, Vec<usize>, Vec<i64>)> = Vec::new();
    let mut id = 0usize;
    for (k, &start) in counts.iter().enumerate() {
        let n = k + 1;
        let end = counts.get(k + 1).copied().unwrap_or(pool.len() as i64);
        if start < 0
            || end < start
            || end as usize > pool.len()
            || !((end - start) as usize).is_multiple_of(n)
        {
            bail!(
                "TfIdfVectorizer's ngram_counts {counts:?} do not split the {} values of pool_int64s into whole n-grams",
                pool.len()
            );
        }
        let grams = (end - start) as usize / n;
        let tokens = pool[start as usize..end as usize].to_vec();
        sections.push((n, (id..id + grams).collect(), tokens));
        id += grams;
    }
    // onnxruntime takes more indexes than n-grams (the extra ones only
    // widen the output); fewer leave n-grams without a column.
    if indexes.len() < id {
        bail!(
            "TfIdfVectorizer has {} ngram_indexes for the pool's {id} n-grams",
            indexes.len()
        );
    }
    if let Some(&bad) = indexes.iter().find(|&&i| !(0..1 << 24).contains(&i)) {
        bail!("TfIdfVectorizer's ngram_index {bad} is out of range");
    }
    let width = indexes.iter().max().map_or(0, |&m| m + 1);
    if width == 0 {
        bail!(
            "TfIdfVectorizer has no n-grams (ngram_indexes is empty): its output would have no columns"
        );
    }
    // One weight per n-gram, in the pool's order (the spec; onnxruntime
    // also requires one per ngram_index).
    if let Some(w) = &weights
        && w.len() != indexes.len()
    {
        bail!(
            "TfIdfVectorizer has {} weights for its {} ngram_indexes (one per n-gram of the pool)",
            w.len(),
            indexes.len()
        );
    }
    let (rows, length) = match x.shape().as_slice() {
        [c] => (None, *c),
        [b, c] if *b > 0 => (Some(*b), *c),
        shape => bail!("TfIdfVectorizer takes [C] or [B, C] (B > 0), not {shape:?}"),
    };
    let r = rows.unwrap_or(1);
    // Token ids compared as int64 (the pool's type).
    let x = if x.dtype() == DType::I64 {
        x
    } else {
        synthetic(
            imp,
            "Cast",
            vec![x],
            vec![int_attr("to", DType::I64.onnx_code() as i64)],
        )?
    };
    let x = reshape_value(imp, &x, &[r, length])?;
    // Per size: the counts of its pool n-grams, [r, grams], and their ids.
    let mut parts: Vec<Value> = Vec::new();
    let mut ids: Vec<usize> = Vec::new();
    for (n, section_ids, tokens) in &sections {
        let n = *n;
        if (n as i64) < min_n || (n as i64) > max_n || section_ids.is_empty() {
            continue;
        }
        // Every tuple of positions an n-gram occupies: unigrams once, longer
        // n-grams at each skip distance 1..=max_skip + 1 (ONNX's reference
        // and onnxruntime count them so).
        let mut tuples: Vec<i64> = Vec::new();
        let distances = if n == 1 { 1 } else { max_skip + 1 };
        for d in 1..=distances {
            let span = d * (n as i64 - 1);
            for start in 0..(length - span).max(0) {
                tuples.extend((0..n as i64).map(|k| start + k * d));
            }
        }
        let places = tuples.len() / n;
        if places == 0 {
            continue;
        }
        let grams = section_ids.len();
        if places.saturating_mul(grams).saturating_mul(n) > MAX_COMPARISONS {
            bail!(
                "TfIdfVectorizer compares {places} position tuples with {grams} {n}-grams per row, more than tcc's limit of {MAX_COMPARISONS} elements"
            );
        }
        let at = Value::constant(Const::from_i64(
            DType::I64,
            vec![tuples.len() as i64],
            &tuples,
        ));
        let taken = synthetic(
            imp,
            "Gather",
            vec![x.clone(), at],
            vec![int_attr("axis", 1)],
        )?;
        let taken = reshape_value(imp, &taken, &[r, places as i64, 1, n as i64])?;
        let pool_grams = Value::constant(Const::from_i64(
            DType::I64,
            vec![1, 1, grams as i64, n as i64],
            tokens,
        ));
        let equal = synthetic(imp, "Equal", vec![taken, pool_grams], vec![])?;
        let equal = synthetic(
            imp,
            "Cast",
            vec![equal],
            vec![int_attr("to", DType::F32.onnx_code() as i64)],
        )?;
        // A tuple matches when all n tokens do; the count sums the tuples.
        let matched = synthetic(
            imp,
            "ReduceMin",
            vec![
                equal,
                Value::constant(Const::from_i64(DType::I64, vec![1], &[3])),
            ],
            vec![int_attr("keepdims", 0)],
        )?;
        let count = synthetic(
            imp,
            "ReduceSum",
            vec![
                matched,
                Value::constant(Const::from_i64(DType::I64, vec![1], &[1])),
            ],
            vec![int_attr("keepdims", 0)],
        )?;
        parts.push(count);
        ids.extend(section_ids);
    }
    let out_shape: Vec<i64> = match rows {
        Some(b) => vec![b, width],
        None => vec![width],
    };
    if parts.is_empty() {
        // No n-gram fits in a row: all counts are zero.
        return one(Value::constant(Const::from_f64(
            DType::F32,
            out_shape,
            &vec![0.0; (r * width) as usize],
        )));
    }
    let counts = if parts.len() == 1 {
        parts.pop().expect("one part")
    } else {
        concat_values(imp, &parts.iter().collect::<Vec<_>>(), 1)?
    };
    let counts = if mode == Mode::Idf {
        // IDF weighs presence, not frequency.
        synthetic(
            imp,
            "Min",
            vec![
                counts,
                Value::constant(Const::from_f64(DType::F32, vec![1, 1], &[1.0])),
            ],
            vec![],
        )?
    } else {
        counts
    };
    // Each counted n-gram's column, weighted (TF ignores the weights).
    let mut placement = vec![0.0f64; ids.len() * width as usize];
    for (row, &id) in ids.iter().enumerate() {
        let column = indexes[id] as usize;
        let weight = match (&weights, mode) {
            (Some(w), Mode::Idf | Mode::TfIdf) => w[id] as f64,
            _ => 1.0,
        };
        placement[row * width as usize + column] += weight;
    }
    let placement = Value::constant(Const::from_f64(
        DType::F32,
        vec![ids.len() as i64, width],
        &placement,
    ));
    let y = synthetic(imp, "MatMul", vec![counts, placement], vec![])?;
    one(reshape_value(imp, &y, &out_shape)?)
}
