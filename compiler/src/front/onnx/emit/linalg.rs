//! The linalg/tensor escape hatch, for what TOSA cannot express: an
//! elementwise `linalg.generic`, `linalg.fill`, named linalg ops and
//! `tensor.empty`, in their custom syntax.

use std::fmt::Write as _;

use super::super::dtype::TType;
use super::body::{Body, Scalar, Sv, op_line, value_name};
use super::{Attr, Emitter, Val, float_literal};

/// `%in0: f32, ..., %out: f32`.
fn block_args_text(args: &[Sv]) -> String {
    args.iter()
        .map(|&a| format!("{}: {}", value_name(a, args.len()), a.ty.mlir()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A built body's ops and its `linalg.yield` of `yielded`, one line each.
fn body_text(body: Body, yielded: Sv, args: usize) -> String {
    let mut text = String::new();
    for op in body.into_ops() {
        let _ = writeln!(text, "      {}", op_line(&op, args));
    }
    let _ = writeln!(
        text,
        "      linalg.yield {} : {}",
        value_name(yielded, args),
        yielded.ty.mlir()
    );
    text
}

impl Emitter {
    // ---- linalg escape hatch ----------------------------------------------

    /// An elementwise `linalg.generic` over `inputs` (numpy-broadcast to the
    /// result shape) whose body `body` builds from the inputs' block
    /// arguments; the value it returns is yielded.
    pub fn map(
        &mut self,
        inputs: &[&Val],
        out: TType,
        body: &dyn Fn(&mut Body, &[Sv]) -> Sv,
    ) -> Val {
        let rank = out.rank();
        let dims: Vec<String> = (0..rank).map(|i| format!("d{i}")).collect();
        let domain = format!("({})", dims.join(", "));
        let mut maps = Vec::new();
        for input in inputs {
            let offset = rank - input.rank();
            let exprs: Vec<String> = (0..input.rank())
                .map(|j| {
                    if input.shape()[j] == 1 && out.shape[j + offset] != 1 {
                        "0".to_string()
                    } else {
                        dims[j + offset].clone()
                    }
                })
                .collect();
            maps.push(format!("affine_map<{domain} -> ({})>", exprs.join(", ")));
        }
        maps.push(format!("affine_map<{domain} -> {domain}>"));
        let empty = self.fresh();
        self.line(&format!("{empty} = tensor.empty() : {}", out.mlir()));
        let result = self.fresh();
        let mut scalars: Vec<Scalar> = inputs.iter().map(|v| v.dtype().into()).collect();
        scalars.push(out.dtype.into());
        let mut built = Body::new(scalars);
        let args = built.args();
        let yielded = body(&mut built, &args[..inputs.len()]);
        let body_text = body_text(built, yielded, args.len());
        let block_args = block_args_text(&args);
        let iterators = vec!["\"parallel\""; rank].join(", ");
        let ins: Vec<String> = inputs.iter().map(|v| v.ssa.clone()).collect();
        let in_types: Vec<String> = inputs.iter().map(|v| v.ty.mlir()).collect();
        let text = format!(
            "    {result} = linalg.generic {{indexing_maps = [{}], iterator_types = [{iterators}]}} ins({} : {}) outs({empty} : {}) {{\n    ^bb0({block_args}):\n{body_text}    }} -> {} {}\n",
            maps.join(", "),
            ins.join(", "),
            in_types.join(", "),
            out.mlir(),
            out.mlir(),
            self.loc
        );
        self.body.push_str(&text);
        Val {
            ssa: result,
            ty: out,
        }
    }

    /// A filled `tensor.empty` (linalg inits).
    pub fn filled(&mut self, ty: &TType, value: f64) -> Val {
        let scalar = self.fresh();
        let literal = if ty.dtype.is_float() {
            float_literal(value, ty.dtype)
        } else {
            (value as i64).to_string()
        };
        self.line(&format!(
            "{scalar} = arith.constant {literal} : {}",
            ty.dtype.mlir()
        ));
        let empty = self.fresh();
        self.line(&format!("{empty} = tensor.empty() : {}", ty.mlir()));
        let filled = self.fresh();
        self.line(&format!(
            "{filled} = linalg.fill ins({scalar} : {}) outs({empty} : {}) -> {}",
            ty.dtype.mlir(),
            ty.mlir(),
            ty.mlir()
        ));
        Val {
            ssa: filled,
            ty: ty.clone(),
        }
    }

    /// A linalg named op `name` (convolution or pooling) with `attrs`,
    /// inputs and an init; returns the result of the init's type.
    pub fn linalg_named(
        &mut self,
        name: &str,
        attrs: &[(&str, Attr)],
        inputs: &[&Val],
        init: &Val,
    ) -> Val {
        let attrs = super::attr::dictionary(attrs);
        let result = self.fresh();
        let ins: Vec<String> = inputs.iter().map(|v| v.ssa.clone()).collect();
        let in_types: Vec<String> = inputs.iter().map(|v| v.ty.mlir()).collect();
        self.line(&format!(
            "{result} = {name} {{{attrs}}} ins({} : {}) outs({} : {}) -> {}",
            ins.join(", "),
            in_types.join(", "),
            init.ssa,
            init.ty.mlir(),
            init.ty.mlir()
        ));
        Val {
            ssa: result,
            ty: init.ty.clone(),
        }
    }

    /// An empty tensor of a type (shape-only operands such as pooling windows).
    pub fn empty(&mut self, ty: &TType) -> Val {
        let ssa = self.fresh();
        self.line(&format!("{ssa} = tensor.empty() : {}", ty.mlir()));
        Val {
            ssa,
            ty: ty.clone(),
        }
    }
}

/// An operand of [`Emitter::generic`]: a value and its indexing map, the
/// loop dimension each of its dimensions follows (a projection).
pub struct Operand<'a> {
    pub value: &'a Val,
    pub dims: Vec<usize>,
}

impl<'a> Operand<'a> {
    /// `value` indexed by the loop dimensions `dims`, in order.
    pub fn dims(value: &'a Val, dims: &[usize]) -> Self {
        Operand {
            value,
            dims: dims.to_vec(),
        }
    }
}

impl Emitter {
    /// A `linalg.generic` over `loops` dimensions (those in `reductions`
    /// reduced, the others parallel) with explicit indexing maps and one
    /// output, initialised by `init`. `body` gets the block arguments of
    /// the inputs and of the accumulator; it may read `linalg.index` and
    /// `tensor.extract` tensors defined outside (data gathered at computed
    /// coordinates); the value it returns is yielded.
    pub fn generic(
        &mut self,
        loops: usize,
        reductions: &[usize],
        ins: &[Operand],
        init: Operand,
        body: &dyn Fn(&mut Body, &[Sv], Sv) -> Sv,
    ) -> Val {
        let dims: Vec<String> = (0..loops).map(|i| format!("d{i}")).collect();
        let domain = format!("({})", dims.join(", "));
        let map = |o: &Operand| {
            let results: Vec<String> = o.dims.iter().map(|d| format!("d{d}")).collect();
            format!("affine_map<{domain} -> ({})>", results.join(", "))
        };
        let mut maps: Vec<String> = ins.iter().map(map).collect();
        maps.push(map(&init));
        let iterators: Vec<&str> = (0..loops)
            .map(|d| {
                if reductions.contains(&d) {
                    "\"reduction\""
                } else {
                    "\"parallel\""
                }
            })
            .collect();
        let out = &init.value.ty;
        let mut scalars: Vec<Scalar> = ins.iter().map(|o| o.value.dtype().into()).collect();
        scalars.push(out.dtype.into());
        let mut built = Body::new(scalars);
        let args = built.args();
        let yielded = body(&mut built, &args[..ins.len()], args[ins.len()]);
        let body_text = body_text(built, yielded, args.len());
        let block_args = block_args_text(&args);
        let result = self.fresh();
        let values: Vec<String> = ins.iter().map(|o| o.value.ssa.clone()).collect();
        let types: Vec<String> = ins.iter().map(|o| o.value.ty.mlir()).collect();
        let ins_text = if ins.is_empty() {
            String::new()
        } else {
            format!("ins({} : {}) ", values.join(", "), types.join(", "))
        };
        let text = format!(
            "    {result} = linalg.generic {{indexing_maps = [{}], iterator_types = [{}]}} {ins_text}outs({} : {}) {{\n    ^bb0({block_args}):\n{body_text}    }} -> {} {}\n",
            maps.join(", "),
            iterators.join(", "),
            init.value.ssa,
            out.mlir(),
            out.mlir(),
            self.loc
        );
        self.body.push_str(&text);
        Val {
            ssa: result,
            ty: out.clone(),
        }
    }
}
