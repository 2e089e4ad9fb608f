//! The linalg/tensor escape hatch, for what TOSA cannot express: an
//! elementwise `linalg.generic`, `linalg.fill`, named linalg ops and
//! `tensor.empty`, in their custom syntax.

use std::fmt::Write as _;

use super::super::dtype::TType;
use super::{Emitter, Val, float_literal};

impl Emitter {
    // ---- linalg escape hatch ----------------------------------------------

    /// An elementwise `linalg.generic` over `inputs` (numpy-broadcast to the
    /// result shape) with a body written by `body` from the block argument
    /// names; the body's last line must define `%r`.
    pub fn map(&mut self, inputs: &[&Val], out: TType, body: &dyn Fn(&[String]) -> String) -> Val {
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
        let args: Vec<String> = (0..inputs.len()).map(|i| format!("%in{i}")).collect();
        let mut block_args: Vec<String> = inputs
            .iter()
            .zip(&args)
            .map(|(v, a)| format!("{a}: {}", v.dtype().mlir()))
            .collect();
        block_args.push(format!("%out: {}", out.dtype.mlir()));
        let iterators = vec!["\"parallel\""; rank].join(", ");
        let ins: Vec<String> = inputs.iter().map(|v| v.ssa.clone()).collect();
        let in_types: Vec<String> = inputs.iter().map(|v| v.ty.mlir()).collect();
        let mut text = format!(
            "    {result} = linalg.generic {{indexing_maps = [{}], iterator_types = [{iterators}]}} ins({} : {}) outs({empty} : {}) {{\n    ^bb0({}):\n",
            maps.join(", "),
            ins.join(", "),
            in_types.join(", "),
            out.mlir(),
            block_args.join(", ")
        );
        for line in body(&args).lines() {
            let _ = writeln!(text, "      {line}");
        }
        let _ = writeln!(
            text,
            "      linalg.yield %r : {}\n    }} -> {} {}",
            out.dtype.mlir(),
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
    pub fn linalg_named(&mut self, name: &str, attrs: &str, inputs: &[&Val], init: &Val) -> Val {
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
