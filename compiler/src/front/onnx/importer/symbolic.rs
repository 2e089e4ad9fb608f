//! Symbolic dimensions (`tcc compile --dim NAME=MIN..MAX`): graph inputs
//! whose `dim_param` is declared keep it as `?` in the imported module.
//!
//! The op importers (`ops/`) compute static shapes. Rather than teach each
//! of them symbolic arithmetic, the graph is imported twice, each symbolic
//! dimension taking a different value of its range (a *probe*: its maximum
//! in the first import, a smaller value in the second; see
//! [`choose_probes`]), and the two recorded functions are merged op by op:
//! they must be the same ops on the same values with the same attributes,
//! except for numbers that depend on the probes. Such a number
//!
//! - in a tensor type's shape (`tensor<32x128xf32>` and `tensor<25x128xf32>`)
//!   becomes `?`, when it is a multiple `k * d1 * d2 ...` of symbolic
//!   dimensions in both imports (rows = batch x tokens is `k = tokens`);
//! - in a `tosa.const_shape` read only by `tosa.reshape`s becomes `-1`
//!   (the one dimension the reshape infers), at most one per shape;
//! - in a constant folded at import time becomes an op that builds the
//!   constant at run time: a seed broadcast, a ramp, or the leading part
//!   of the first import's constant (a position-embedding table sliced to
//!   the sequence: the first import, at the maxima, holds every row a
//!   call can read);
//! - anywhere else (a slice bound, a structure that depends on the value)
//!   is an error naming the node.
//!
//! The relation between the `?`s (which symbol, which multiple) is not
//! kept in the types; the arguments name theirs with `tcc.dim_names`, and
//! the compiler's later phases derive the rest from the arguments (see
//! docs/architecture.md, "Dynamic shapes").

use std::collections::HashMap;

use super::super::dtype::{DType, TType};
use super::super::emit::ir::{
    Broadcasted, Elements, Kind, Op, ResultType, RuntimeExtent, Use, ValueId,
};
use super::super::emit::string_literal;
use super::super::emit::{BodyAttr, Scalar, Val};
use super::super::error::{ImportError, Result, bail};
use super::super::fold::{broadcast, strided_slice};
use super::super::proto::ModelProto;
use super::super::tensor::Const;
use super::super::{Blob, ImportOptions, IoInfo, SymbolicDim};
use super::Recorded;
use super::graph::declared_type;

/// Probes for a dimension whose range holds no two values of at least 2
/// (`--dim batch=1..2`): distinct primes past any such range. A graph that
/// slices a buffer by such a dimension cannot import at them; everything
/// else can.
const WIDE_PROBES: [(i64, i64); 4] = [(1009, 1013), (1019, 1021), (1031, 1033), (1039, 1049)];

/// The largest first probe: a constant the import folds along a dimension
/// (a class token expanded to the batch) has this many rows at most, so
/// that `--dim batch=1..1000000` does not fold a million. A constant cut
/// to a dimension whose maximum is larger is refused.
const MAX_PROBE: i64 = 8192;

/// At most this many symbolic dimensions.
const MAX_SYMBOLS: usize = WIDE_PROBES.len();

/// The two probes of each symbolic dimension: the first its maximum (so
/// that a constant the import folds holds every element a call in range
/// can read), at most [`MAX_PROBE`], the second a smaller value of its range, at least 2 (an
/// extent of 1 broadcasts and would change the imported graph), near three
/// quarters of the maximum and odd where it can be (so that a value that
/// changes only every few steps of the dimension, or with its parity,
/// still differs between the imports), and chosen so that every product
/// of symbols is told apart from every other by its two probes
/// ([`distinguishable`]).
fn choose_probes(dims: &[SymbolicDim]) -> Vec<(i64, i64)> {
    let mut chosen: Vec<(i64, i64)> = Vec::with_capacity(dims.len());
    for (index, dim) in dims.iter().enumerate() {
        let high = dim.max.min(MAX_PROBE);
        let low = dim.min.max(2);
        let start = ((high.saturating_mul(3) / 4) | 1).clamp(low, high);
        let candidates = (low..=start).rev().chain(start + 1..high);
        let pick = candidates
            .take(64)
            .map(|second| (high, second))
            .find(|&pair| {
                pair.1 < pair.0 && distinguishable(&[chosen.as_slice(), &[pair]].concat())
            });
        chosen.push(pick.unwrap_or(WIDE_PROBES[index]));
    }
    chosen
}

/// Whether no two distinct products of symbols (the empty product, a
/// static extent, included) have proportional probe pairs: a number that
/// is `k` times one product in both imports is then no other's multiple.
fn distinguishable(probes: &[(i64, i64)]) -> bool {
    let products: Vec<(i128, i128)> = (0u32..(1 << probes.len()))
        .map(|subset| {
            probes
                .iter()
                .enumerate()
                .filter(|(i, _)| subset & (1 << i) != 0)
                .fold((1i128, 1i128), |(x, y), (_, &(a, b))| {
                    (x.saturating_mul(a as i128), y.saturating_mul(b as i128))
                })
        })
        .collect();
    products.iter().enumerate().all(|(i, &(a, b))| {
        products[i + 1..]
            .iter()
            .all(|&(c, d)| a.saturating_mul(d) != b.saturating_mul(c))
    })
}

/// Imports `model` with its symbolic dimensions kept as `?`, `import`
/// doing one import for the given probe values (and returning the
/// symbolic dimensions the graph inputs used).
pub fn import<F>(model: &ModelProto, options: &ImportOptions, import: F) -> Result<Recorded>
where
    F: Fn(HashMap<String, i64>) -> Result<(Recorded, Vec<String>)>,
{
    let declared = declared_params(model);
    let mut dims: Vec<SymbolicDim> = Vec::new();
    for dim in &options.symbolic_dims {
        let name = &dim.name;
        if !declared.contains(name) {
            let known = if declared.is_empty() {
                "its inputs declare no dynamic dimension".to_string()
            } else {
                format!(
                    "its inputs' dynamic dimensions are: {}",
                    declared.join(", ")
                )
            };
            bail!("--dim names '{name}', which no graph input of the model declares ({known})");
        }
        if dim.min < 1 || dim.max < dim.min {
            bail!(
                "--dim {name}={}..{}: a dimension's range is MIN..MAX with 1 <= MIN <= MAX",
                dim.min,
                dim.max
            );
        }
        if !dims.iter().any(|d| d.name == *name) {
            dims.push(dim.clone());
        }
    }
    if dims.len() > MAX_SYMBOLS {
        bail!(
            "--dim declares {} symbolic dimensions; at most {MAX_SYMBOLS} are supported",
            dims.len(),
        );
    }
    let names: Vec<&String> = dims.iter().map(|d| &d.name).collect();
    let chosen = choose_probes(&dims);
    // Each import: the probes, and the fixed dimensions' values.
    let probes = |pick: fn((i64, i64)) -> i64| -> HashMap<String, i64> {
        names
            .iter()
            .zip(&chosen)
            .map(|(n, &p)| ((*n).clone(), pick(p)))
            .chain(options.fixed_dims.iter().cloned())
            .collect()
    };
    // An input given a static shape fixes its dimensions; another input
    // naming the same one cannot keep it symbolic.
    if let Some(graph) = model.graph.as_ref() {
        let overridden = |name: &str| options.input_shapes.iter().any(|(n, _)| n == name);
        let params_of = |info: &super::super::proto::ValueInfoProto| {
            declared_type(info).map_or(Vec::new(), |(_, dims, params)| {
                dims.iter()
                    .zip(params)
                    .filter(|(d, p)| d.is_none() && names.contains(&p))
                    .map(|(_, p)| p)
                    .collect::<Vec<String>>()
            })
        };
        let free: Vec<String> = graph
            .input
            .iter()
            .filter(|i| !overridden(&i.name))
            .flat_map(params_of)
            .collect();
        for info in graph.input.iter().filter(|i| overridden(&i.name)) {
            if let Some(p) = params_of(info).into_iter().find(|p| free.contains(p)) {
                bail!(
                    "--input-shape gives '{}' a static shape, which fixes its dimension '{p}', but other inputs keep '{p}' symbolic (--dim {p}=...): give every input naming '{p}' a shape, or none",
                    info.name
                );
            }
        }
    }
    // An error at the probes that the import at the dimensions' minima
    // does not repeat names them: a graph that relates its dimensions (a
    // mask `past_sequence + sequence` long beside a cache `past_sequence`
    // long) fails at values no call would have.
    let at_probes = |error: ImportError, values: &HashMap<String, i64>| {
        let minima: HashMap<String, i64> = names
            .iter()
            .zip(&dims)
            .map(|(n, d)| ((*n).clone(), d.min))
            .chain(options.fixed_dims.iter().cloned())
            .collect();
        if import(minima).err().is_some_and(|e| e == error) {
            return error;
        }
        let mut named: Vec<String> = names
            .iter()
            .map(|n| format!("{n}={}", values[*n]))
            .collect();
        named.sort();
        ImportError::new(format!(
            "{}; this happened importing with the symbolic dimensions at {}, and not at their minima: tcc keeps declared dimensions independent, so a graph whose extents relate them (one the sum of two others) cannot keep them all symbolic",
            error.message,
            named.join(", ")
        ))
    };
    let first_values = probes(|p| p.0);
    let (first, used) = import(first_values.clone()).map_err(|e| at_probes(e, &first_values))?;
    if used.is_empty() {
        // Every input naming the dimension was given a static shape
        // (--input-shape): nothing is symbolic.
        return Ok(first);
    }
    let second_values = probes(|p| p.1);
    let (second, _) = import(second_values.clone()).map_err(|e| at_probes(e, &second_values))?;
    let symbols: Vec<Symbol> = names
        .iter()
        .zip(&chosen)
        .zip(&dims)
        .map(|((n, &probes), dim)| Symbol {
            name: (*n).clone(),
            probes,
            max: dim.max,
        })
        .collect();
    let second_inputs = second.inputs.clone();
    let mut merged = merge(first, second, &symbols)?;
    for (io, other) in merged.inputs.iter_mut().zip(&second_inputs) {
        io.ty.shape = symbolic_shape(&io.ty.shape, &other.ty.shape);
    }
    Ok(merged)
}

/// Checks `options.fixed_dims` (`--specialize`): each names a `dim_param`
/// a graph input declares, once, with a positive value, and none is also
/// kept symbolic.
pub fn check_fixed(model: &ModelProto, options: &ImportOptions) -> Result<()> {
    let declared = declared_params(model);
    for (index, (name, value)) in options.fixed_dims.iter().enumerate() {
        if !declared.contains(name) {
            bail!(
                "a specialization fixes '{name}', which no graph input of the model declares (its inputs' dynamic dimensions are: {})",
                if declared.is_empty() {
                    "none".to_string()
                } else {
                    declared.join(", ")
                }
            );
        }
        if *value < 1 {
            bail!("a specialization fixes '{name}' to {value}: a dimension is at least 1");
        }
        if options.fixed_dims[..index].iter().any(|(n, _)| n == name) {
            bail!("a specialization fixes '{name}' twice");
        }
        if options.symbolic_dims.iter().any(|d| d.name == *name) {
            bail!("'{name}' cannot be both symbolic and fixed in one import");
        }
    }
    Ok(())
}

/// The `dim_param`s the graph inputs declare, in order, each once.
fn declared_params(model: &ModelProto) -> Vec<String> {
    let mut params: Vec<String> = Vec::new();
    let Some(graph) = model.graph.as_ref() else {
        return params;
    };
    for info in &graph.input {
        if let Ok((_, dims, names)) = declared_type(info) {
            for (d, p) in dims.iter().zip(names) {
                if d.is_none() && !p.is_empty() && !params.contains(&p) {
                    params.push(p);
                }
            }
        }
    }
    params
}

/// A symbolic dimension and its two probe values.
struct Symbol {
    name: String,
    probes: (i64, i64),
    /// The declared maximum.
    max: i64,
}

/// Whether `(a, b)` (a number in the first and the second import) is
/// `k * d1 * d2 ...` for a set of symbols, the same `k >= 1` in both; the
/// indices of that set and `k`.
fn monomial(a: i64, b: i64, symbols: &[Symbol]) -> Option<(Vec<usize>, i64)> {
    for subset in 1u32..(1 << symbols.len()) {
        let chosen: Vec<usize> = (0..symbols.len())
            .filter(|i| subset & (1 << i) != 0)
            .collect();
        let (pa, pb) = chosen.iter().fold((1i64, 1i64), |(x, y), &i| {
            (
                x.saturating_mul(symbols[i].probes.0),
                y.saturating_mul(symbols[i].probes.1),
            )
        });
        if a % pa == 0 && b % pb == 0 && a / pa == b / pb && a / pa >= 1 {
            return Some((chosen, a / pa));
        }
    }
    None
}

/// Where each symbolic dimension's extent is read at run time: the first
/// graph argument and axis whose extents in the two imports are the
/// symbol's probes (`None` where no argument has it).
struct Sources(Vec<Option<(usize, usize)>>);

impl Sources {
    fn new(
        arguments: (&[super::module::Argument], &[super::module::Argument]),
        symbols: &[Symbol],
    ) -> Sources {
        Sources(
            symbols
                .iter()
                .map(|s| {
                    arguments
                        .0
                        .iter()
                        .zip(arguments.1)
                        .enumerate()
                        .find_map(|(i, (a, b))| {
                            a.ty.shape
                                .iter()
                                .zip(&b.ty.shape)
                                .position(|(&x, &y)| (x, y) == s.probes)
                                .map(|axis| (i, axis))
                        })
                })
                .collect(),
        )
    }

    /// The run-time extents of the `?`s of `a` and `b` merged (one per
    /// axis where the imports differ).
    fn extents(
        &self,
        a: &TType,
        b: &TType,
        origin: &str,
        symbols: &[Symbol],
    ) -> Result<Vec<RuntimeExtent>> {
        a.shape
            .iter()
            .zip(&b.shape)
            .filter(|(x, y)| x != y)
            .map(|(&x, &y)| self.extent(x, y, origin, symbols))
            .collect()
    }

    /// The run-time value of a number that is `x` in the first import
    /// and `y` in the second: a multiple of symbols some argument carries.
    fn extent(&self, x: i64, y: i64, origin: &str, symbols: &[Symbol]) -> Result<RuntimeExtent> {
        let Some((chosen, factor)) = monomial(x, y, symbols) else {
            return Err(not_supported(
                &format!(
                    "an extent ({x} and {y} at two probes) that is not a multiple of the symbolic dimensions"
                ),
                origin,
                symbols,
            ));
        };
        let dims = chosen
            .iter()
            .map(|&i| {
                self.0[i].ok_or_else(|| {
                    not_supported(
                        "an extent of a dimension no graph input carries",
                        origin,
                        symbols,
                    )
                })
            })
            .collect::<Result<_>>()?;
        Ok(RuntimeExtent { factor, dims })
    }
}

/// The elements of a `tosa.const` of type `ty`: its dense elements, or
/// its blob's among `blobs`.
fn const_elements(elements: &Elements, ty: &ResultType, blobs: &[Blob]) -> Option<Const> {
    match elements {
        Elements::Dense(c) => Some(c.clone()),
        Elements::Blob(key) => {
            let ResultType::Tensor(ty) = ty else {
                return None;
            };
            let blob = blobs.iter().find(|b| &b.key == key)?;
            Some(Const {
                dtype: ty.dtype,
                shape: ty.shape.clone(),
                bytes: blob.bytes.clone(),
                splat: false,
            })
        }
    }
}

/// The constant both imports' `a` and `b` repeat along the axes where
/// their shapes differ (a constant expanded to the batch: the class
/// token, a splat of token-type ids), with extent 1 there; `None` when
/// they are not such a repetition of one seed.
fn broadcast_seed(a: &Const, b: &Const) -> Option<Const> {
    if a.dtype != b.dtype || a.shape.len() != b.shape.len() {
        return None;
    }
    let seed_shape: Vec<i64> = a
        .shape
        .iter()
        .zip(&b.shape)
        .map(|(&x, &y)| if x == y { x } else { 1 })
        .collect();
    if a.splat && b.splat {
        return (a.bytes == b.bytes).then(|| a.reshaped(seed_shape));
    }
    let zeros = vec![0; a.shape.len()];
    let ones = vec![1; a.shape.len()];
    let seed = strided_slice(a, &zeros, &ones, &seed_shape);
    let repeats = |c: &Const| broadcast(&seed, &c.shape).full_bytes() == c.full_bytes();
    (repeats(a) && repeats(b)).then_some(seed)
}

/// Whether two constants hold the same elements of the same type.
fn same_elements(p: &Const, q: &Const) -> bool {
    if p.dtype != q.dtype || p.shape != q.shape {
        return false;
    }
    match (p.splat, q.splat) {
        (false, false) | (true, true) => p.bytes[..] == q.bytes[..],
        _ => p.full_bytes() == q.full_bytes(),
    }
}

/// Whether the second import's constant `y` is the leading part of the
/// first's `x` along every axis (the first import's probes are the
/// dimensions' maxima, so `x` holds every element a call can read: a
/// position-embedding table gathered by the positions `0..sequence`, a
/// causal mask's top-left corner).
fn leads(
    x: &Elements,
    x_ty: &ResultType,
    y: &Elements,
    y_ty: &ResultType,
    blobs: (&[Blob], &[Blob]),
) -> bool {
    let (Some(a), Some(b)) = (
        const_elements(x, x_ty, blobs.0),
        const_elements(y, y_ty, blobs.1),
    ) else {
        return false;
    };
    if a.dtype != b.dtype
        || a.shape.len() != b.shape.len()
        || a.shape.iter().zip(&b.shape).any(|(p, q)| q > p)
    {
        return false;
    }
    let zeros = vec![0; a.shape.len()];
    let ones = vec![1; a.shape.len()];
    strided_slice(&a, &zeros, &ones, &b.shape).full_bytes() == b.full_bytes()
}

/// The constant both imports' `a` and `b` hold when it grows by a fixed
/// step along the one axis where their shapes differ (`seed + i * step`
/// at index `i` there, seed and step with extent 1 on it; integers, or
/// f32 equal to that sum rounded): the seed, the step and the axis;
/// `None` otherwise.
fn ramp_seed(a: &Const, b: &Const) -> Option<(Const, Const, usize)> {
    let float = a.dtype == DType::F32;
    if a.dtype != b.dtype
        || !(float || matches!(a.dtype, DType::I64 | DType::I32))
        || a.shape.len() != b.shape.len()
    {
        return None;
    }
    let differing: Vec<usize> = (0..a.shape.len())
        .filter(|&i| a.shape[i] != b.shape[i])
        .collect();
    let [axis] = differing[..] else {
        return None;
    };
    if a.shape[axis] < 2 || b.shape[axis] < 2 {
        return None;
    }
    let mut seed_shape = a.shape.clone();
    seed_shape[axis] = 1;
    let zeros = vec![0; a.shape.len()];
    let ones = vec![1; a.shape.len()];
    let mut second = zeros.clone();
    second[axis] = 1;
    let first_row = strided_slice(a, &zeros, &ones, &seed_shape);
    let second_row = strided_slice(a, &second, &ones, &seed_shape);
    // Element `e` of a shape: index `(e / inner) % extent` along `axis`,
    // seed element `(e / (inner * extent)) * inner + e % inner`.
    let inner: usize = a.shape[axis + 1..].iter().product::<i64>() as usize;
    let grows = |c: &Const, at: &dyn Fn(usize, usize, usize) -> bool| {
        let extent = c.shape[axis] as usize;
        (0..c.numel()).all(|e| {
            at(
                e,
                (e / inner) % extent,
                (e / (inner * extent)) * inner + e % inner,
            )
        })
    };
    let (seed, step) = if float {
        let seed = first_row.f64s();
        let step: Vec<f64> = second_row
            .f64s()
            .iter()
            .zip(&seed)
            .map(|(n, s)| n - s)
            .collect();
        let value = |s: usize, i: usize| (seed[s] + i as f64 * step[s]) as f32;
        let follows = |c: &Const| grows(c, &|e, i, s| c.f64_at(e) as f32 == value(s, i));
        if step.iter().all(|&s| s == 0.0) || !follows(a) || !follows(b) {
            return None;
        }
        (
            Const::from_f64(a.dtype, seed_shape.clone(), &seed),
            Const::from_f64(a.dtype, seed_shape, &step),
        )
    } else {
        let seed = first_row.i64s();
        let step: Vec<i64> = second_row
            .i64s()
            .iter()
            .zip(&seed)
            .map(|(n, s)| n.wrapping_sub(*s))
            .collect();
        let value = |s: usize, i: usize| seed[s].wrapping_add((i as i64).wrapping_mul(step[s]));
        let follows = |c: &Const| grows(c, &|e, i, s| c.i64_at(e) == value(s, i));
        if step.iter().all(|&s| s == 0) || !follows(a) || !follows(b) {
            return None;
        }
        (
            Const::from_i64(a.dtype, seed_shape.clone(), &seed),
            Const::from_i64(a.dtype, seed_shape, &step),
        )
    };
    Some((seed, step, axis))
}

/// An interface shape of the first import with the extents that differ in
/// the second (`other`) as -1 (dynamic).
fn symbolic_shape(shape: &[i64], other: &[i64]) -> Vec<i64> {
    shape
        .iter()
        .zip(other)
        .map(|(&d, &e)| if d == e { d } else { -1 })
        .collect()
}

/// Where an op comes from: its ONNX node.
fn origin(loc: &str) -> String {
    format!("node {}", string_literal(loc))
}

fn not_supported(what: &str, origin: &str, symbols: &[Symbol]) -> ImportError {
    let names: Vec<String> = symbols.iter().map(|s| format!("'{}'", s.name)).collect();
    ImportError::new(format!(
        "{origin}: {what}: dynamic dimension {} not supported yet by the ONNX importer here (give a static shape with --input-shape)",
        names.join(", ")
    ))
}

const STRUCTURE: &str = "the imported graph's structure depends on the dimension's value";
const COMPUTED: &str = "a value computed from the dimension's extent";

/// One number of both imports: itself when they agree, `-1` when it is a
/// multiple of symbolic dimensions.
fn extent(a: i64, b: i64, origin: &str, symbols: &[Symbol]) -> Result<i64> {
    if a == b {
        return Ok(a);
    }
    if monomial(a, b, symbols).is_none() {
        return Err(not_supported(
            &format!(
                "an extent ({a} and {b} at two probes) that is not a multiple of the symbolic dimensions"
            ),
            origin,
            symbols,
        ));
    }
    Ok(-1)
}

/// A tensor type of both imports, with the probe-dependent extents `?`.
fn merge_type(a: &TType, b: &TType, origin: &str, symbols: &[Symbol]) -> Result<TType> {
    if a.dtype != b.dtype || a.shape.len() != b.shape.len() {
        return Err(not_supported(STRUCTURE, origin, symbols));
    }
    let shape = a
        .shape
        .iter()
        .zip(&b.shape)
        .map(|(&x, &y)| extent(x, y, origin, symbols))
        .collect::<Result<_>>()?;
    Ok(a.with_shape(shape))
}

fn merge_result(
    a: &ResultType,
    b: &ResultType,
    origin: &str,
    symbols: &[Symbol],
) -> Result<ResultType> {
    match (a, b) {
        (ResultType::Tensor(x), ResultType::Tensor(y)) => {
            Ok(ResultType::Tensor(merge_type(x, y, origin, symbols)?))
        }
        (ResultType::Shape(x), ResultType::Shape(y)) if x == y => Ok(a.clone()),
        _ => Err(not_supported(STRUCTURE, origin, symbols)),
    }
}

fn merge_uses(a: &[Use], b: &[Use], origin: &str, symbols: &[Symbol]) -> Result<Vec<Use>> {
    if a.len() != b.len() || a.iter().zip(b).any(|(x, y)| x.id != y.id) {
        return Err(not_supported(STRUCTURE, origin, symbols));
    }
    a.iter()
        .zip(b)
        .map(|(x, y)| {
            Ok(Use {
                id: x.id,
                ty: merge_result(&x.ty, &y.ty, origin, symbols)?,
            })
        })
        .collect()
}

fn merge_val(a: &Val, b: &Val, origin: &str, symbols: &[Symbol]) -> Result<Val> {
    if a.id() != b.id() {
        return Err(not_supported(STRUCTURE, origin, symbols));
    }
    let ty = merge_type(&a.ty, &b.ty, origin, symbols)?;
    Ok(a.retyped(ty))
}

/// One op of both imports. A `tosa.const_shape` whose values depend on
/// the probes gets `-1` there; `inferred` counts them. A constant that
/// repeats one seed along the probe-dependent axes becomes that seed
/// broadcast at run time, and an empty or filled tensor of such a shape
/// reads its extents at run time (`sources`).
fn merge_op(
    a: &Op,
    b: &Op,
    symbols: &[Symbol],
    sources: &Sources,
    blobs: (&[Blob], &[Blob]),
    inferred: &mut usize,
) -> Result<Op> {
    let origin = origin(&a.loc);
    if a.loc != b.loc {
        return Err(not_supported(STRUCTURE, &origin, symbols));
    }
    let runtime_extents = || match (&a.ty, &b.ty) {
        (ResultType::Tensor(x), ResultType::Tensor(y)) => sources.extents(x, y, &origin, symbols),
        _ => Err(not_supported(STRUCTURE, &origin, symbols)),
    };
    let kind = match (&a.kind, &b.kind) {
        (
            Kind::Plain {
                name,
                operands,
                attrs,
            },
            Kind::Plain {
                name: name_b,
                operands: operands_b,
                attrs: attrs_b,
            },
        ) => {
            if name != name_b {
                return Err(not_supported(STRUCTURE, &origin, symbols));
            }
            let operands = merge_uses(operands, operands_b, &origin, symbols)?;
            if attrs != attrs_b {
                return Err(not_supported(COMPUTED, &origin, symbols));
            }
            Kind::Plain {
                name: name.clone(),
                operands,
                attrs: attrs.clone(),
            }
        }
        (Kind::ConstShape(x), Kind::ConstShape(y)) => {
            if x.len() != y.len() {
                return Err(not_supported(STRUCTURE, &origin, symbols));
            }
            let values: Vec<i64> = x
                .iter()
                .zip(y)
                .map(|(&p, &q)| extent(p, q, &origin, symbols))
                .collect::<Result<_>>()?;
            *inferred = values.iter().zip(x).filter(|(v, p)| v != p).count();
            Kind::ConstShape(values)
        }
        (
            Kind::Named {
                name,
                attrs,
                ins,
                init,
            },
            Kind::Named {
                name: name_b,
                attrs: attrs_b,
                ins: ins_b,
                init: init_b,
            },
        ) => {
            if name != name_b || attrs != attrs_b {
                return Err(not_supported(STRUCTURE, &origin, symbols));
            }
            let ins = merge_uses(ins, ins_b, &origin, symbols)?;
            let init = merge_uses(
                std::slice::from_ref(init),
                std::slice::from_ref(init_b),
                &origin,
                symbols,
            )?
            .remove(0);
            Kind::Named {
                name: name.clone(),
                attrs: attrs.clone(),
                ins,
                init,
            }
        }
        (Kind::Generic(x), Kind::Generic(y)) => {
            let same_loops = x.reductions == y.reductions
                && x.args == y.args
                && x.yielded == y.yielded
                && x.init.1 == y.init.1
                && x.ins.len() == y.ins.len()
                && x.ins.iter().zip(&y.ins).all(|(p, q)| p.1 == q.1);
            if !same_loops || x.body.len() != y.body.len() {
                return Err(not_supported(STRUCTURE, &origin, symbols));
            }
            let mut merged = (**x).clone();
            for ((p, q), m) in x.ins.iter().zip(&y.ins).zip(&mut merged.ins) {
                m.0 = merge_uses(
                    std::slice::from_ref(&p.0),
                    std::slice::from_ref(&q.0),
                    &origin,
                    symbols,
                )?
                .remove(0);
            }
            merged.init.0 = merge_uses(
                std::slice::from_ref(&x.init.0),
                std::slice::from_ref(&y.init.0),
                &origin,
                symbols,
            )?
            .remove(0);
            for ((p, q), m) in x.body.iter().zip(&y.body).zip(&mut merged.body) {
                let same = p.name == q.name
                    && p.operands == q.operands
                    && p.result == q.result
                    && p.tensor.as_ref().map(|u| u.id) == q.tensor.as_ref().map(|u| u.id);
                if !same {
                    return Err(not_supported(STRUCTURE, &origin, symbols));
                }
                if p.attrs != q.attrs {
                    // An integer constant that is a multiple of the
                    // symbols (a gather's extent to wrap negative
                    // indices with): read at run time.
                    let ([("value", BodyAttr::Int(x, ty))], [("value", BodyAttr::Int(y, _))]) =
                        (p.attrs.as_slice(), q.attrs.as_slice())
                    else {
                        return Err(not_supported(COMPUTED, &origin, symbols));
                    };
                    if p.name != "arith.constant" || *ty == Scalar::Elem(DType::Bool) {
                        return Err(not_supported(COMPUTED, &origin, symbols));
                    }
                    let extent = sources.extent(*x, *y, &origin, symbols)?;
                    m.attrs = vec![("value", BodyAttr::Extent(extent, *ty))];
                }
                if let (Some(t), Some(u)) = (&p.tensor, &q.tensor) {
                    m.tensor = merge_uses(
                        std::slice::from_ref(t),
                        std::slice::from_ref(u),
                        &origin,
                        symbols,
                    )?
                    .pop();
                }
            }
            Kind::Generic(Box::new(merged))
        }
        // A constant of a probe-dependent type (a blob of either import
        // has the same key): the seed it repeats, broadcast.
        (Kind::Const(x), Kind::Const(y)) if a.ty != b.ty => {
            let source = const_elements(x, &a.ty, blobs.0)
                .zip(const_elements(y, &b.ty, blobs.1))
                .and_then(|(x, y)| {
                    broadcast_seed(&x, &y)
                        .map(|seed| Broadcasted::Elements(Elements::Dense(seed)))
                        .or_else(|| {
                            ramp_seed(&x, &y).map(|(seed, step, axis)| Broadcasted::Ramp {
                                seed,
                                step,
                                axis,
                            })
                        })
                });
            match source {
                Some(source) => Kind::Broadcast {
                    source,
                    extents: runtime_extents()?,
                },
                None if leads(x, &a.ty, y, &b.ty, blobs) => {
                    let (ResultType::Tensor(source), ResultType::Tensor(other)) = (&a.ty, &b.ty)
                    else {
                        return Err(not_supported(STRUCTURE, &origin, symbols));
                    };
                    // The first import's constant holds what a call reads
                    // only where its probes were the maxima.
                    let short = source
                        .shape
                        .iter()
                        .zip(&other.shape)
                        .filter(|(p, q)| p != q)
                        .filter_map(|(&p, &q)| monomial(p, q, symbols))
                        .flat_map(|(chosen, _)| chosen)
                        .find(|&i| symbols[i].probes.0 < symbols[i].max);
                    if let Some(i) = short {
                        return Err(not_supported(
                            &format!(
                                "a constant cut to '{}', which the import holds only up to {} (declare a maximum of at most {MAX_PROBE})",
                                symbols[i].name, symbols[i].probes.0
                            ),
                            &origin,
                            symbols,
                        ));
                    }
                    Kind::ConstPrefix {
                        elements: x.clone(),
                        source: source.clone(),
                        extents: runtime_extents()?,
                    }
                }
                None => return Err(not_supported(COMPUTED, &origin, symbols)),
            }
        }
        (Kind::Empty(_), Kind::Empty(_)) => Kind::Empty(runtime_extents()?),
        (Kind::Fill(x, _), Kind::Fill(y, _)) if x == y => Kind::Fill(*x, runtime_extents()?),
        // Constants of one type are compared by their elements, not by
        // blob key: which constants an import keeps inline and how it
        // numbers its blobs can follow the probes.
        (Kind::Const(x), Kind::Const(y))
            if const_elements(x, &a.ty, blobs.0)
                .zip(const_elements(y, &b.ty, blobs.1))
                .is_some_and(|(p, q)| same_elements(&p, &q)) =>
        {
            Kind::Const(x.clone())
        }
        (Kind::Const(_), Kind::Const(_)) => {
            return Err(not_supported(COMPUTED, &origin, symbols));
        }
        (x, y) if x == y => x.clone(),
        (Kind::Fill(..), Kind::Fill(..)) => {
            return Err(not_supported(COMPUTED, &origin, symbols));
        }
        _ => return Err(not_supported(STRUCTURE, &origin, symbols)),
    };
    Ok(Op {
        kind,
        ty: merge_result(&a.ty, &b.ty, &origin, symbols)?,
        loc: a.loc.clone(),
    })
}

/// A `tosa.tile` whose multiples follow a symbolic dimension (`-1` in its
/// merged `tosa.const_shape`), or whose source has several symbolic
/// extents, repeating extent-1 axes only (how Expand is imported): the
/// same broadcast with its extents read at run time.
/// Any other op is returned as it is.
fn tile_as_broadcast(
    ops: &[Op],
    index: usize,
    (a, b): (&Op, &Op),
    symbols: &[Symbol],
    sources: &Sources,
) -> Result<Option<Kind>> {
    let op = &ops[index];
    let Some(operands) = two_operands(op, "tosa.tile") else {
        return Ok(None);
    };
    let ResultType::Tensor(source) = &operands[0].ty else {
        return Ok(None);
    };
    // Static multiples on a source with several `?`s (a grouped-query
    // attention's keys repeated over the heads of a group): upstream's
    // lowering of `tosa.tile` reshapes through one inferred extent only.
    let several = source.shape.iter().filter(|&&d| d < 0).count() > 1;
    let multiples = match operands[1].id {
        ValueId::Op(i) => match &ops[i].kind {
            Kind::ConstShape(values) if values.contains(&-1) || several => values,
            _ => return Ok(None),
        },
        _ => return Ok(None),
    };
    // Every repeated axis has extent 1 (a broadcast); an axis tiled by a
    // static count > 1 with a larger extent is not.
    let broadcast_only = source
        .shape
        .iter()
        .zip(multiples)
        .all(|(&extent, &m)| m == 1 || extent == 1);
    if !broadcast_only {
        return Ok(None);
    }
    let Some(extents) = result_extents((a, b), symbols, sources)? else {
        return Ok(None);
    };
    Ok(Some(Kind::Broadcast {
        source: Broadcasted::Value(operands[0].clone()),
        extents,
    }))
}

/// The operands of `op` when it is the two-operand `name` (a value and
/// its `tosa.const_shape`).
fn two_operands<'o>(op: &'o Op, name: &str) -> Option<&'o [Use]> {
    match &op.kind {
        Kind::Plain {
            name: n, operands, ..
        } if n == name && operands.len() == 2 => Some(operands),
        _ => None,
    }
}

/// The run-time extents of the `?`s of an op's result, whose types are
/// `a`'s and `b`'s in the two imports (`None` for a shape).
fn result_extents(
    (a, b): (&Op, &Op),
    symbols: &[Symbol],
    sources: &Sources,
) -> Result<Option<Vec<RuntimeExtent>>> {
    let (ResultType::Tensor(x), ResultType::Tensor(y)) = (&a.ty, &b.ty) else {
        return Ok(None);
    };
    sources.extents(x, y, &origin(&a.loc), symbols).map(Some)
}

/// A `tosa.reshape` whose merged shape has several `-1`s (`batch x
/// sequence x hidden` from the rows of a product): a [`Kind::Reshape`]
/// whose extents are read at run time (`tosa.reshape` infers one extent
/// only). Any other op is returned as it is.
fn reshape_with_runtime_extents(
    ops: &[Op],
    index: usize,
    (a, b): (&Op, &Op),
    inferred_shapes: &[(ValueId, usize)],
    symbols: &[Symbol],
    sources: &Sources,
) -> Result<Option<Kind>> {
    let Some(operands) = two_operands(&ops[index], "tosa.reshape") else {
        return Ok(None);
    };
    let inferred = inferred_shapes
        .iter()
        .find(|(id, _)| *id == operands[1].id)
        .map_or(0, |&(_, n)| n);
    if inferred < 2 {
        return Ok(None);
    }
    let Some(extents) = result_extents((a, b), symbols, sources)? else {
        return Ok(None);
    };
    Ok(Some(Kind::Reshape {
        source: operands[0].clone(),
        extents,
    }))
}

/// Merges the two imports' functions into one with symbolic dimensions.
fn merge(a: Recorded, b: Recorded, symbols: &[Symbol]) -> Result<Recorded> {
    let (ma, mb) = (&a.module, &b.module);
    let last = || {
        ma.ops
            .last()
            .map_or("'graph outputs'".to_string(), |op| origin(&op.loc))
    };
    if ma.arguments.len() != mb.arguments.len() || ma.ops.len() != mb.ops.len() {
        return Err(not_supported(STRUCTURE, &last(), symbols));
    }
    let mut arguments = Vec::with_capacity(ma.arguments.len());
    for (x, y) in ma.arguments.iter().zip(&mb.arguments) {
        let origin = format!("graph input {}", string_literal(&x.name));
        if x.attrs != y.attrs || x.name != y.name {
            return Err(not_supported(STRUCTURE, &origin, symbols));
        }
        let mut merged = x.clone();
        merged.ty = merge_type(&x.ty, &y.ty, &origin, symbols)?;
        arguments.push(merged);
    }
    let sources = Sources::new((&ma.arguments, &mb.arguments), symbols);
    let mut ops = Vec::with_capacity(ma.ops.len());
    let mut inferred_shapes = Vec::new();
    for (index, (x, y)) in ma.ops.iter().zip(&mb.ops).enumerate() {
        let mut inferred = 0;
        ops.push(merge_op(
            x,
            y,
            symbols,
            &sources,
            (&a.blobs, &b.blobs),
            &mut inferred,
        )?);
        if inferred > 0 {
            inferred_shapes.push((ValueId::Op(index), inferred));
        }
        if let Some(kind) = tile_as_broadcast(&ops, index, (x, y), symbols, &sources)? {
            ops[index].kind = kind;
        }
        if let Some(kind) =
            reshape_with_runtime_extents(&ops, index, (x, y), &inferred_shapes, symbols, &sources)?
        {
            ops[index].kind = kind;
        }
    }
    check_inferred_shapes(&ops, &inferred_shapes, symbols)?;
    let origin = "'graph outputs'";
    if ma.results.len() != mb.results.len() {
        return Err(not_supported(STRUCTURE, origin, symbols));
    }
    let results = ma
        .results
        .iter()
        .zip(&mb.results)
        .map(|(x, y)| merge_val(x, y, origin, symbols))
        .collect::<Result<Vec<_>>>()?;
    if ma.outputs.len() != mb.outputs.len() {
        return Err(not_supported(STRUCTURE, origin, symbols));
    }
    let outputs: Vec<IoInfo> = ma
        .outputs
        .iter()
        .zip(&mb.outputs)
        .map(|(io, other)| IoInfo {
            name: io.name.clone(),
            ty: io
                .ty
                .with_shape(symbolic_shape(&io.ty.shape, &other.ty.shape)),
        })
        .collect();
    // Each output's symbolic extents by name: the runtime sizes an output
    // from the dimensions' values, so each must be one dimension itself.
    let output_dims = ma
        .outputs
        .iter()
        .zip(&mb.outputs)
        .map(|(io, other)| output_dim_names(io, other, symbols))
        .collect::<Result<Vec<_>>>()?;
    let module = super::module::Module {
        arguments,
        ops,
        results,
        outputs,
        output_dims,
        ..a.module
    };
    Ok(Recorded { module, ..a })
}

/// The dimension of each axis of an output whose extents are `a` in the
/// first import and `b` in the second (`""` for a static axis); `None`
/// when none is symbolic or the import has one symbolic dimension (every
/// `?` is it). An extent that is not one dimension itself (`2 x batch`,
/// `batch x sequence`) is refused with the output's name.
fn output_dim_names(a: &IoInfo, b: &IoInfo, symbols: &[Symbol]) -> Result<Option<Vec<String>>> {
    // With one symbolic dimension every `?` is it (the host code names
    // it so; `tcc-check-supported` refuses a multiple of it).
    if a.ty.shape == b.ty.shape || symbols.len() < 2 {
        return Ok(None);
    }
    let origin = format!("graph output {}", string_literal(&a.name));
    a.ty.shape
        .iter()
        .zip(&b.ty.shape)
        .map(|(&x, &y)| {
            if x == y {
                return Ok(Some(String::new()));
            }
            match monomial(x, y, symbols) {
                Some((chosen, 1)) if chosen.len() == 1 => {
                    Ok(Some(symbols[chosen[0]].name.clone()))
                }
                _ => Err(not_supported(
                    &format!(
                        "an output extent ({x} and {y} at two probes) that is not one symbolic dimension (the runtime sizes outputs from the dimensions)"
                    ),
                    &origin,
                    symbols,
                )),
            }
        })
        .collect::<Result<Option<Vec<_>>>>()
}

/// Every `tosa.const_shape` given a `-1` (`shapes`: with how many) must
/// be read by `tosa.reshape`s (where -1 is the one inferred extent), or
/// be the size of a `tosa.slice`
/// that keeps the whole dynamic axis (start 0 there: -1 is the rest of
/// the axis, as a strided 1x1 convolution's crop of its image takes every
/// image); any other reader (a slice's start, a tile, a pad) would take
/// it literally.
fn check_inferred_shapes(
    ops: &[Op],
    shapes: &[(ValueId, usize)],
    symbols: &[Symbol],
) -> Result<()> {
    if shapes.is_empty() {
        return Ok(());
    }
    let inferred = |id: &ValueId| shapes.iter().find(|(s, _)| s == id).map(|&(_, n)| n);
    let const_shape = |id: &ValueId| match id {
        ValueId::Op(index) => match &ops.get(*index)?.kind {
            Kind::ConstShape(values) => Some(values.clone()),
            _ => None,
        },
        _ => None,
    };
    // A slice whose size is inferred only where its source is dynamic and
    // its start is 0.
    let whole_axis_slice = |op: &Op| {
        let Kind::Plain { name, operands, .. } = &op.kind else {
            return false;
        };
        if name != "tosa.slice" || operands.len() != 3 || inferred(&operands[1].id).is_some() {
            return false;
        }
        let (Some(start), Some(size)) =
            (const_shape(&operands[1].id), const_shape(&operands[2].id))
        else {
            return false;
        };
        let ResultType::Tensor(source) = &operands[0].ty else {
            return false;
        };
        size.iter().enumerate().all(|(axis, &s)| {
            s != -1 || (start.get(axis) == Some(&0) && source.shape.get(axis) == Some(&-1))
        })
    };
    for op in ops {
        let read = op.uses().iter().filter_map(|u| inferred(&u.id)).max();
        let Some(count) = read else {
            continue;
        };
        let reshape = matches!(&op.kind, Kind::Plain { name, .. } if name == "tosa.reshape");
        if reshape && count > 1 {
            return Err(not_supported(
                "a shape with two extents that depend on symbolic dimensions",
                &origin(&op.loc),
                symbols,
            ));
        }
        if !reshape && !whole_axis_slice(op) {
            return Err(not_supported(
                "a shape computed from the dimension read by an op other than a reshape",
                &origin(&op.loc),
                symbols,
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::super::dtype::DType;
    use super::super::super::emit::{ConstStyle, Emitter};
    use super::super::super::tensor::Const;
    use super::super::module::{ArgAttr, Argument, Module, NAME};
    use super::*;

    /// The batch, `--dim batch=1..32`.
    fn batch() -> Vec<Symbol> {
        let probes = choose_probes(&[SymbolicDim {
            name: "batch".into(),
            min: 1,
            max: 32,
        }]);
        vec![Symbol {
            name: "batch".into(),
            probes: probes[0],
            max: 32,
        }]
    }

    /// A one-input function built by `body` for the batch `n`.
    fn recorded(n: i64, body: &dyn Fn(&mut Emitter, &Val, i64) -> Val) -> Recorded {
        let mut e = Emitter::new(ConstStyle::Hex);
        let ty = TType::new(DType::F32, vec![n, 32]);
        let x = Val::argument(0, ty.clone());
        let y = body(&mut e, &x, n);
        let ops = e.take_function();
        let outputs = vec![IoInfo {
            name: "y".into(),
            ty: y.ty.clone(),
        }];
        Recorded {
            module: Module {
                graph: "g".into(),
                function: "main".into(),
                arguments: vec![Argument {
                    ty: ty.clone(),
                    attrs: vec![(NAME, ArgAttr::Str("x".into()))],
                    name: "x".into(),
                }],
                results: vec![y],
                outputs,
                output_dims: Vec::new(),
                ops,
            },
            blobs: Vec::new(),
            inputs: vec![IoInfo {
                name: "x".into(),
                ty,
            }],
            opset: 17,
        }
    }

    fn merged(body: &dyn Fn(&mut Emitter, &Val, i64) -> Val) -> Result<Module> {
        let symbols = batch();
        let (a, b) = symbols[0].probes;
        merge(recorded(a, body), recorded(b, body), &symbols).map(|r| r.module)
    }

    #[test]
    fn probes_lie_in_the_range_and_tell_products_apart() {
        let dim = |name: &str, min, max| SymbolicDim {
            name: name.into(),
            min,
            max,
        };
        let probes = choose_probes(&[dim("batch", 1, 32), dim("sequence", 1, 512)]);
        assert_eq!(probes[0], (32, 25));
        assert_eq!(probes[1], (512, 385));
        assert!(distinguishable(&probes));
        // Two dimensions of one range take different second probes.
        let probes = choose_probes(&[dim("a", 1, 64), dim("b", 1, 64), dim("c", 1, 64)]);
        assert!(probes.iter().all(|&(p, q)| p == 64 && (2..64).contains(&q)));
        assert!(distinguishable(&probes), "{probes:?}");
        assert!(!distinguishable(&[(64, 49), (64, 49)]));
        // (64, 48) and (4, 3): 64 x 3 = 48 x 4, a multiple of the one is
        // a multiple of the other.
        assert!(!distinguishable(&[(64, 48), (4, 3)]));
        // The minimum bounds the second probe; a range without two values
        // of at least 2 takes the wide probes.
        assert_eq!(choose_probes(&[dim("batch", 30, 32)])[0], (32, 30));
        assert_eq!(choose_probes(&[dim("batch", 1, 3)])[0], (3, 2));
        assert_eq!(choose_probes(&[dim("batch", 1, 2)])[0], WIDE_PROBES[0]);
        assert_eq!(choose_probes(&[dim("batch", 8, 8)])[0], WIDE_PROBES[0]);
        // A huge maximum is probed at MAX_PROBE.
        assert_eq!(choose_probes(&[dim("batch", 1, 1 << 40)])[0].0, MAX_PROBE);
    }

    #[test]
    fn probe_dependent_extents_become_dynamic() {
        let module = merged(&|e, x, n| {
            e.set_location("fc1");
            let y = e.reshape(x, &[1, n, 32]);
            e.set_location("r");
            e.reshape(&y, &[16 * n, 2])
        })
        .unwrap();
        let f32s = |shape: &[i64]| ResultType::Tensor(TType::new(DType::F32, shape.to_vec()));
        assert_eq!(module.arguments[0].ty.shape, [-1, 32]);
        let kinds: Vec<(&Kind, &ResultType)> =
            module.ops.iter().map(|o| (&o.kind, &o.ty)).collect();
        assert_eq!(kinds.len(), 4, "{kinds:?}");
        assert_eq!(
            kinds[0],
            (&Kind::ConstShape(vec![1, -1, 32]), &ResultType::Shape(3))
        );
        let Kind::Plain { name, operands, .. } = kinds[1].0 else {
            panic!("{kinds:?}")
        };
        assert_eq!(name, "tosa.reshape");
        let types: Vec<&ResultType> = operands.iter().map(|u| &u.ty).collect();
        assert_eq!(types, [&f32s(&[-1, 32]), &ResultType::Shape(3)]);
        assert_eq!(kinds[1].1, &f32s(&[1, -1, 32]));
        assert_eq!(
            kinds[2],
            (&Kind::ConstShape(vec![-1, 2]), &ResultType::Shape(2))
        );
        assert_eq!(kinds[3].1, &f32s(&[-1, 2]));
        assert_eq!(module.results[0].ty.shape, [-1, 2]);
    }

    /// `--dim batch=1..32 --dim sequence=1..512`, and a one-input function
    /// of `batch x sequence x 32` built by `body` at each import's probes.
    fn merged_with_sequence(body: &dyn Fn(&mut Emitter, &Val, i64, i64) -> Val) -> Result<Module> {
        let dims = [
            SymbolicDim {
                name: "batch".into(),
                min: 1,
                max: 32,
            },
            SymbolicDim {
                name: "sequence".into(),
                min: 1,
                max: 512,
            },
        ];
        let probes = choose_probes(&dims);
        let symbols: Vec<Symbol> = dims
            .iter()
            .zip(&probes)
            .map(|(d, &probes)| Symbol {
                name: d.name.clone(),
                probes,
                max: d.max,
            })
            .collect();
        let import = |n: i64, t: i64| {
            let mut module = recorded(n, &|_, x, _| x.clone());
            let mut e = Emitter::new(ConstStyle::Hex);
            let ty = TType::new(DType::F32, vec![n, t, 32]);
            let x = Val::argument(0, ty.clone());
            let y = body(&mut e, &x, n, t);
            module.module.arguments[0].ty = ty.clone();
            module.module.outputs[0].ty = y.ty.clone();
            module.module.results = vec![y];
            module.module.ops = e.take_function();
            module.inputs[0].ty = ty;
            module
        };
        let (a, b) = (probes[0], probes[1]);
        merge(import(a.0, b.0), import(a.1, b.1), &symbols).map(|r| r.module)
    }

    #[test]
    fn reshapes_with_several_symbolic_extents_read_them_at_run_time() {
        let module = merged_with_sequence(&|e, x, n, t| {
            e.set_location("rows");
            let rows = e.reshape(x, &[n * t, 32]);
            e.set_location("back");
            e.reshape(&rows, &[n, t, 32])
        })
        .unwrap();
        assert_eq!(module.arguments[0].ty.shape, [-1, -1, 32]);
        // The rows keep tosa.reshape (one inferred extent, batch x
        // sequence); the way back has two, read from the argument.
        let reshapes: Vec<&Op> = module
            .ops
            .iter()
            .filter(|o| matches!(&o.kind, Kind::Plain { name, .. } if name == "tosa.reshape"))
            .collect();
        assert_eq!(reshapes.len(), 1);
        assert_eq!(&*reshapes[0].loc, "rows");
        let back = module
            .ops
            .iter()
            .find(|o| &*o.loc == "back" && matches!(o.kind, Kind::Reshape { .. }));
        let Some(Op {
            kind: Kind::Reshape { source, extents },
            ty: ResultType::Tensor(ty),
            ..
        }) = back
        else {
            panic!("{:?}", module.ops)
        };
        assert_eq!(ty.shape, [-1, -1, 32]);
        assert_eq!(
            source.ty,
            ResultType::Tensor(TType::new(DType::F32, vec![-1, 32]))
        );
        let of = |axis| RuntimeExtent {
            factor: 1,
            dims: vec![(0, axis)],
        };
        assert_eq!(extents, &[of(0), of(1)]);
        assert_eq!(
            module.output_dims,
            [Some(vec![
                "batch".to_string(),
                "sequence".to_string(),
                String::new()
            ])]
        );
    }

    #[test]
    fn outputs_whose_extent_is_a_product_of_dimensions_are_refused() {
        let error = merged_with_sequence(&|e, x, n, t| {
            e.set_location("rows");
            e.reshape(x, &[n * t, 32])
        })
        .unwrap_err()
        .to_string();
        assert!(error.contains("graph output \"y\""), "{error}");
        assert!(error.contains("not one symbolic dimension"), "{error}");
    }

    #[test]
    fn values_computed_from_the_dimension_are_refused_with_the_node() {
        let error = merged(&|e, x, n| {
            e.set_location("shape_of");
            let c = Const::from_i64(DType::I64, vec![2], &[n, 4]);
            let _ = e.constant(&c, "shape").unwrap();
            x.clone()
        })
        .unwrap_err()
        .to_string();
        assert!(error.contains("node \"shape_of\""), "{error}");
        assert!(
            error.contains("dynamic dimension 'batch' not supported yet"),
            "{error}"
        );
        // Not a multiple of the dimension (batch + 1).
        let error = merged(&|e, x, _| {
            e.set_location("pad");
            e.pad(x, &[(0, 1), (0, 0)], 0.0)
        })
        .unwrap_err()
        .to_string();
        assert!(error.contains("not a multiple"), "{error}");
        // A computed shape read by a slice.
        let error = merged(&|e, x, n| {
            e.set_location("slice");
            e.slice(x, &[0, 0], &[n - 1, 4])
        })
        .unwrap_err()
        .to_string();
        assert!(error.contains("not a multiple"), "{error}");
        // A slice keeping the whole dynamic axis (start 0) takes the rest
        // of it: its size becomes -1 there.
        let module = merged(&|e, x, n| {
            e.set_location("slice");
            e.slice(x, &[0, 0], &[n, 4])
        })
        .unwrap();
        assert_eq!(module.results[0].ty.shape, [-1, 4]);
        // A computed shape read by any other op (a tile of a block whose
        // extent is not 1 along the batch) is refused with the node.
        let error = merged(&|e, x, n| {
            e.set_location("tile");
            let c = Const::from_f64(DType::F32, vec![2, 32], &[0.5; 64]);
            let block = e.constant(&c, "block").unwrap();
            let tiled = e.tile(&block, &[n, 1]);
            let _ = x;
            e.reshape(&tiled, &[n, 64])
        })
        .unwrap_err()
        .to_string();
        assert!(error.contains("other than a reshape"), "{error}");
        assert!(error.contains("node \"tile\""), "{error}");
    }

    /// The argument's batch extent, read at run time.
    fn batch_extent() -> Vec<RuntimeExtent> {
        vec![RuntimeExtent {
            factor: 1,
            dims: vec![(0, 0)],
        }]
    }

    #[test]
    fn values_expanded_to_the_dimension_are_broadcast_at_run_time() {
        // A tile of a row to the batch (an Expand of a computed value).
        let module = merged(&|e, x, n| {
            e.set_location("expand");
            let row = e.reduce("tosa.reduce_sum", x, 0);
            let tiled = e.tile(&row, &[n, 1]);
            e.set_location("add");
            e.binary("tosa.add", x, &tiled).unwrap()
        })
        .unwrap();
        let tile = module
            .ops
            .iter()
            .find(|o| &*o.loc == "expand" && matches!(o.kind, Kind::Broadcast { .. }))
            .expect("the tile became a broadcast");
        let Kind::Broadcast { source, extents } = &tile.kind else {
            unreachable!()
        };
        assert!(
            matches!(source, Broadcasted::Value(u) if u.ty == ResultType::Tensor(TType::new(DType::F32, vec![1, 32])))
        );
        assert_eq!(extents, &batch_extent());
        assert_eq!(
            tile.ty,
            ResultType::Tensor(TType::new(DType::F32, vec![-1, 32]))
        );

        // A constant the import folded to the batch (a class token, a
        // splat of ids): its seed, broadcast.
        for splat in [false, true] {
            let module = merged(&|e, x, n| {
                e.set_location("token");
                let row: Vec<f64> = (0..32)
                    .map(|i| if splat { 2.0 } else { i as f64 })
                    .collect();
                let values: Vec<f64> = (0..n).flat_map(|_| row.clone()).collect();
                let c = Const::from_f64(DType::F32, vec![n, 32], &values);
                let c = if splat {
                    Const::splat_f64(DType::F32, vec![n, 32], 2.0)
                } else {
                    c
                };
                let token = e.constant(&c, "token").unwrap();
                e.set_location("add");
                e.binary("tosa.add", x, &token).unwrap()
            })
            .unwrap();
            let Kind::Broadcast {
                source: Broadcasted::Elements(Elements::Dense(seed)),
                extents,
            } = &module.ops[0].kind
            else {
                panic!("{:?}", module.ops[0].kind)
            };
            assert_eq!(seed.shape, [1, 32]);
            assert_eq!(seed.splat, splat);
            assert_eq!(seed.f64_at(5), if splat { 2.0 } else { 5.0 });
            assert_eq!(extents, &batch_extent());
        }

        // Integers growing along the batch (an `arange` over it, flat
        // gather indices): the first row and the step, as a ramp.
        let module = merged(&|e, x, n| {
            e.set_location("arange");
            let values: Vec<i64> = (0..n).flat_map(|b| [b, 7, 2 * b + 1]).collect();
            let c = Const::from_i64(DType::I64, vec![n, 3], &values);
            let _ = e.constant(&c, "arange").unwrap();
            x.clone()
        })
        .unwrap();
        let Kind::Broadcast {
            source: Broadcasted::Ramp { seed, step, axis },
            extents,
        } = &module.ops[0].kind
        else {
            panic!("{:?}", module.ops[0].kind)
        };
        assert_eq!(
            (seed.shape.as_slice(), seed.i64s()),
            (&[1, 3][..], vec![0, 7, 1])
        );
        assert_eq!(step.i64s(), [1, 0, 2]);
        assert_eq!((*axis, extents), (0, &batch_extent()));

        // A constant whose elements do not depend on the extent (squares
        // of the index, row by row): the first import's, at the maximum,
        // cut to the call's extent.
        fn float_squares(n: i64) -> Const {
            let values: Vec<f64> = (0..n * 32).map(|i| (i * i) as f64).collect();
            Const::from_f64(DType::F32, vec![n, 32], &values)
        }
        fn squares(n: i64) -> Const {
            let values: Vec<i64> = (0..n).map(|i| i * i).collect();
            Const::from_i64(DType::I64, vec![n, 1], &values)
        }
        type Maker = fn(i64) -> Const;
        let (max, _) = batch()[0].probes;
        let cut: [Maker; 2] = [float_squares, squares];
        for c in cut {
            let module = merged(&|e, x, n| {
                e.set_location("table");
                let _ = e.constant(&c(n), "table").unwrap();
                x.clone()
            })
            .unwrap();
            let Kind::ConstPrefix {
                elements: Elements::Dense(whole),
                source,
                extents,
            } = &module.ops[0].kind
            else {
                panic!("{:?}", module.ops[0].kind)
            };
            assert_eq!(whole, &c(max));
            assert_eq!(source, &whole.ty());
            assert_eq!(extents, &batch_extent());
            let ResultType::Tensor(ty) = &module.ops[0].ty else {
                panic!("{:?}", module.ops[0].ty)
            };
            assert_eq!(ty.shape[0], -1);
            assert_eq!(ty.shape[1..], whole.shape[1..]);
        }

        // Probed below the declared maximum (past MAX_PROBE), the first
        // import's constant is too short for the largest calls: refused.
        let short = [Symbol {
            name: "batch".into(),
            probes: (max, batch()[0].probes.1),
            max: 2 * max,
        }];
        let body = |e: &mut Emitter, x: &Val, n: i64| {
            e.set_location("table");
            let _ = e.constant(&squares(n), "table").unwrap();
            x.clone()
        };
        let error = merge(
            recorded(short[0].probes.0, &body),
            recorded(short[0].probes.1, &body),
            &short,
        )
        .map(|_| ())
        .unwrap_err()
        .to_string();
        assert!(
            error.contains(&format!(
                "a constant cut to 'batch', which the import holds only up to {max}"
            )),
            "{error}"
        );

        // Constants whose elements depend on the extent are still refused:
        // positions scaled by it, indices counted back from it.
        fn scaled(n: i64) -> Const {
            let values: Vec<f64> = (0..n).map(|i| i as f64 / n as f64).collect();
            Const::from_f64(DType::F32, vec![n], &values)
        }
        fn reversed(n: i64) -> Const {
            let values: Vec<i64> = (0..n).map(|i| n - 1 - i).collect();
            Const::from_i64(DType::I64, vec![n], &values)
        }
        let refused: [(Maker, &str); 2] = [(scaled, "scaled"), (reversed, "reversed")];
        for (c, what) in refused {
            let error = merged(&|e, x, n| {
                e.set_location("ramp");
                let _ = e.constant(&c(n), "ramp").unwrap();
                x.clone()
            })
            .unwrap_err()
            .to_string();
            assert!(
                error.contains("a value computed from the dimension"),
                "{what}: {error}"
            );
            assert!(error.contains("node \"ramp\""), "{what}: {error}");
        }
    }

    #[test]
    fn body_constants_equal_to_the_dimension_read_it_at_run_time() {
        // x + batch in a linalg.generic body (a gather's bound).
        let module = merged(&|e, x, n| {
            e.set_location("plus_batch");
            e.map(&[x], x.ty.clone(), &|b, a| {
                let size = b.int(n, DType::I64);
                let size = b.cast("arith.sitofp", size, DType::F32);
                b.op("arith.addf", &[a[0], size])
            })
        })
        .unwrap();
        let Kind::Generic(g) = &module.ops.last().unwrap().kind else {
            panic!("{:?}", module.ops)
        };
        let extent = BodyAttr::Extent(batch_extent().remove(0), Scalar::Elem(DType::I64));
        assert!(
            g.body
                .iter()
                .any(|op| op.attrs == [("value", extent.clone())]),
            "{:?}",
            g.body
        );
        // A constant that is no multiple of it (batch - 1) is refused.
        let error = merged(&|e, x, n| {
            e.set_location("minus_one");
            e.map(&[x], x.ty.clone(), &|b, a| {
                let size = b.int(n - 1, DType::I64);
                let size = b.cast("arith.sitofp", size, DType::F32);
                b.op("arith.addf", &[a[0], size])
            })
        })
        .unwrap_err()
        .to_string();
        assert!(error.contains("not a multiple"), "{error}");
        assert!(error.contains("node \"minus_one\""), "{error}");
    }

    #[test]
    fn empty_and_filled_tensors_of_the_dimension_read_it_at_run_time() {
        let module = merged(&|e, x, _| {
            e.set_location("zeros");
            let zeros = e.filled(&x.ty, 0.0);
            e.binary("tosa.add", x, &zeros).unwrap()
        })
        .unwrap();
        assert_eq!(module.ops[0].kind, Kind::Fill(0.0, batch_extent()));
    }
}
