//! Writes a recorded function ([`super::ir`]) as MLIR: TOSA ops and tcc's
//! composites in the generic op syntax (`%v3 = "tosa.add"(%v1, %v2) :
//! (...) -> ...`), linalg/tensor ops in their custom syntax, bodies in
//! the generic syntax, constants inline (`dense<[...]>`, `dense<"0x...">`)
//! or as `dense_resource` blobs (with the resource section for
//! [`super::ConstStyle::Resource`]).

use std::fmt::Write as _;

use super::super::dtype::DType;
use super::super::tensor::Const;
use super::INLINE_ELEMENTS;
use super::attr::dictionary;
use super::body::{BodyAttr, BodyOp, Scalar, Sv};
use super::ir::{Elements, Expr, Generic, Kind, Op, ResultType, Use, ValueId};
use super::literal::{element_literal, hex, nested};
use super::{float_literal, string_literal};

/// A value's name.
pub fn name(id: ValueId) -> String {
    match id {
        ValueId::Arg(i) => format!("%arg{i}"),
        ValueId::Op(i) => format!("%v{i}"),
        ValueId::None => "%none".to_string(),
    }
}

impl ResultType {
    /// `tensor<2x?xf32>` or `!tosa.shape<3>`.
    pub fn mlir(&self) -> String {
        match self {
            ResultType::Tensor(t) => t.mlir(),
            ResultType::Shape(n) => format!("!tosa.shape<{n}>"),
        }
    }
}

fn names_and_types(uses: &[&Use]) -> (String, String) {
    let names: Vec<String> = uses.iter().map(|u| name(u.id)).collect();
    let types: Vec<String> = uses.iter().map(|u| u.ty.mlir()).collect();
    (names.join(", "), types.join(", "))
}

/// The attribute literal of a constant's elements: `dense<...> : tensor<...>`.
pub fn dense_literal(c: &Const) -> String {
    let ty = c.ty().mlir();
    let count = c.numel();
    if count == 0 {
        return format!("dense<> : {ty}");
    }
    if c.uniform() {
        return format!("dense<{}> : {ty}", element_literal(c, 0));
    }
    if count <= INLINE_ELEMENTS || c.dtype == DType::Bool {
        let mut text = String::new();
        nested(&c.shape, &mut 0, &|i| element_literal(c, i), &mut text);
        return format!("dense<{text}> : {ty}");
    }
    format!("dense<\"0x{}\"> : {ty}", hex(&c.bytes))
}

fn elements_literal(elements: &Elements, ty: &ResultType) -> String {
    match elements {
        Elements::Dense(c) => dense_literal(c),
        Elements::Resource(key) | Elements::Blob(key) => {
            format!("dense_resource<{key}> : {}", ty.mlir())
        }
    }
}

fn index_list(values: &[i64]) -> String {
    if values.is_empty() {
        return "dense<> : tensor<0xindex>".to_string();
    }
    let list: Vec<String> = values.iter().map(|v| v.to_string()).collect();
    format!(
        "dense<[{}]> : tensor<{}xindex>",
        list.join(", "),
        values.len()
    )
}

/// The function's ops, one (or, for a fill, three) lines each.
pub fn body(ops: &[Op]) -> String {
    let mut text = String::new();
    for (index, op) in ops.iter().enumerate() {
        write_op(&mut text, index, op);
    }
    text
}

fn write_op(text: &mut String, index: usize, op: &Op) {
    let result = name(ValueId::Op(index));
    let ty = op.ty.mlir();
    let loc = format!("loc({})", string_literal(&op.loc));
    let generic = |text: &mut String, op_name: &str, uses: &[&Use], attrs: String| {
        let (names, types) = names_and_types(uses);
        let attrs = if attrs.is_empty() {
            String::new()
        } else {
            format!(" <{{{attrs}}}>")
        };
        let _ = writeln!(
            text,
            "    {result} = \"{op_name}\"({names}){attrs} : ({types}) -> {ty} {loc}"
        );
    };
    match &op.kind {
        Kind::Plain {
            name: op_name,
            operands,
            attrs,
        } => {
            let uses: Vec<&Use> = operands.iter().collect();
            let attrs: Vec<(&str, super::Attr)> =
                attrs.iter().map(|(n, a)| (n.as_str(), a.clone())).collect();
            generic(text, op_name, &uses, dictionary(&attrs));
        }
        Kind::Const(elements) => {
            let values = format!("values = {}", elements_literal(elements, &op.ty));
            generic(text, "tosa.const", &[], values);
        }
        Kind::ConstShape(values) => {
            let values = format!("values = {}", index_list(values));
            generic(text, "tosa.const_shape", &[], values);
        }
        Kind::Empty => {
            let _ = writeln!(text, "    {result} = tensor.empty() : {ty} {loc}");
        }
        Kind::Fill(value) => {
            let ResultType::Tensor(t) = &op.ty else {
                return;
            };
            let literal = if t.dtype.is_float() {
                float_literal(*value, t.dtype)
            } else {
                (*value as i64).to_string()
            };
            let element = t.dtype.mlir();
            let _ = writeln!(
                text,
                "    {result}_c = arith.constant {literal} : {element} {loc}\n    {result}_e = tensor.empty() : {ty} {loc}\n    {result} = linalg.fill ins({result}_c : {element}) outs({result}_e : {ty}) -> {ty} {loc}"
            );
        }
        Kind::Named {
            name: op_name,
            attrs,
            ins,
            init,
        } => {
            let uses: Vec<&Use> = ins.iter().collect();
            let (names, types) = names_and_types(&uses);
            let attrs: Vec<(&str, super::Attr)> =
                attrs.iter().map(|(n, a)| (n.as_str(), a.clone())).collect();
            let _ = writeln!(
                text,
                "    {result} = {op_name} {{{}}} ins({names} : {types}) outs({} : {}) -> {ty} {loc}",
                dictionary(&attrs),
                name(init.id),
                init.ty.mlir()
            );
        }
        Kind::Generic(g) => write_generic(text, &result, &ty, &loc, g),
    }
}

fn map_text(loops: usize, exprs: &[Expr]) -> String {
    let dims: Vec<String> = (0..loops).map(|i| format!("d{i}")).collect();
    let results: Vec<String> = exprs
        .iter()
        .map(|e| match e {
            Expr::Dim(d) => format!("d{d}"),
            Expr::Zero => "0".to_string(),
        })
        .collect();
    format!(
        "affine_map<({}) -> ({})>",
        dims.join(", "),
        results.join(", ")
    )
}

fn write_generic(text: &mut String, result: &str, ty: &str, loc: &str, g: &Generic) {
    let loops = g.reductions.len();
    let mut maps: Vec<String> = g.ins.iter().map(|(_, m)| map_text(loops, m)).collect();
    maps.push(map_text(loops, &g.init.1));
    let iterators: Vec<&str> = g
        .reductions
        .iter()
        .map(|&r| if r { "\"reduction\"" } else { "\"parallel\"" })
        .collect();
    let uses: Vec<&Use> = g.ins.iter().map(|(u, _)| u).collect();
    let ins = if uses.is_empty() {
        String::new()
    } else {
        let (names, types) = names_and_types(&uses);
        format!("ins({names} : {types}) ")
    };
    let count = g.args.len();
    let block_args: Vec<String> = g
        .args
        .iter()
        .enumerate()
        .map(|(id, t)| format!("{}: {}", body_name(Sv { id, ty: *t }, count), t.mlir()))
        .collect();
    let _ = writeln!(
        text,
        "    {result} = linalg.generic {{indexing_maps = [{}], iterator_types = [{}]}} {ins}outs({} : {}) {{\n    ^bb0({}):",
        maps.join(", "),
        iterators.join(", "),
        name(g.init.0.id),
        g.init.0.ty.mlir(),
        block_args.join(", ")
    );
    for op in &g.body {
        let _ = writeln!(text, "      {}", body_line(op, count));
    }
    let _ = writeln!(
        text,
        "      linalg.yield {} : {}\n    }} -> {ty} {loc}",
        body_name(g.yielded, count),
        g.yielded.ty.mlir()
    );
}

/// The name a body value prints as: `%in0...` for the inputs, `%out` for
/// the output's block argument (the last one), `%bN` for op results.
fn body_name(v: Sv, args: usize) -> String {
    if v.id + 1 == args {
        "%out".to_string()
    } else if v.id < args {
        format!("%in{}", v.id)
    } else {
        format!("%b{}", v.id)
    }
}

/// A body attribute's literal (`2 : i64`, `1.0e0 : f32`, `true`).
fn body_attr(attr: &BodyAttr) -> String {
    match attr {
        BodyAttr::Int(v, Scalar::Elem(DType::Bool)) => {
            if *v != 0 { "true" } else { "false" }.to_string()
        }
        BodyAttr::Int(v, ty) => format!("{v} : {}", ty.mlir()),
        BodyAttr::Float(v, d) => format!("{} : {}", float_literal(*v, *d), d.mlir()),
    }
}

/// One body op as a line of generic-syntax IR.
fn body_line(op: &BodyOp, args: usize) -> String {
    let mut names: Vec<String> = Vec::new();
    let mut types: Vec<String> = Vec::new();
    if let Some(tensor) = &op.tensor {
        names.push(name(tensor.id));
        types.push(tensor.ty.mlir());
    }
    for v in &op.operands {
        names.push(body_name(*v, args));
        types.push(v.ty.mlir().to_string());
    }
    let mut line = format!(
        "{} = \"{}\"({})",
        body_name(op.result, args),
        op.name,
        names.join(", ")
    );
    if !op.attrs.is_empty() {
        let attrs: Vec<String> = op
            .attrs
            .iter()
            .map(|(k, a)| format!("{k} = {}", body_attr(a)))
            .collect();
        let _ = write!(line, " <{{{}}}>", attrs.join(", "));
    }
    let _ = write!(line, " : ({}) -> {}", types.join(", "), op.result.ty.mlir());
    line
}

/// The `{-# dialect_resources ... #-}` section (empty without blobs).
pub fn resource_section(resources: &[(String, Vec<u8>)]) -> String {
    if resources.is_empty() {
        return String::new();
    }
    let mut text = String::from("\n{-#\n  dialect_resources: {\n    builtin: {\n");
    for (index, (key, blob)) in resources.iter().enumerate() {
        let comma = if index + 1 < resources.len() { "," } else { "" };
        let _ = writeln!(text, "      {key}: \"0x{}\"{comma}", hex(blob));
    }
    text.push_str("    }\n  }\n#-}\n");
    text
}

#[cfg(test)]
mod tests {
    use super::super::super::dtype::TType;
    use super::super::{ConstStyle, Emitter};
    use super::*;

    #[test]
    fn constants_inline_hex_or_resource() {
        let small = Const::from_f64(DType::F32, vec![2, 2], &[1.0, 2.0, 3.0, 4.5]);
        assert_eq!(
            dense_literal(&small),
            "dense<[[1.0e0, 2.0e0], [3.0e0, 4.5e0]]> : tensor<2x2xf32>"
        );
        let splat = Const::splat_f64(DType::F32, vec![3], 0.0);
        assert_eq!(dense_literal(&splat), "dense<0.0e0> : tensor<3xf32>");
        let big = Const::from_i64(DType::I32, vec![65], &(0..65).collect::<Vec<_>>());
        assert!(dense_literal(&big).starts_with("dense<\"0x0000000001000000"));
        let mut r = Emitter::new(ConstStyle::Resource);
        r.constant(&big, "my.w").unwrap();
        let (ops, resources) = r.take_function();
        assert!(body(&ops).contains("values = dense_resource<my_w_0> : tensor<65xi32>"));
        assert!(resource_section(&resources).contains("my_w_0: \"0x040000000000000001000000"));
    }

    #[test]
    fn ops_print_with_their_locations() {
        let mut e = Emitter::new(ConstStyle::Hex);
        e.set_location("n\"1");
        let x = super::super::Val::argument(0, TType::new(DType::F32, vec![2, 3]));
        let y = e.reshape(&x, &[3, 2]);
        let _ = e.map(&[&y], y.ty.clone(), &|b, a| b.op("math.sqrt", &[a[0]]));
        let (ops, _) = e.take_function();
        let text = body(&ops);
        assert!(
            text.contains("%v0 = \"tosa.const_shape\"() <{values = dense<[3, 2]> : tensor<2xindex>}> : () -> !tosa.shape<2> loc(\"n\\221\")"),
            "{text}"
        );
        assert!(
            text.contains("%v1 = \"tosa.reshape\"(%arg0, %v0) : (tensor<2x3xf32>, !tosa.shape<2>) -> tensor<3x2xf32>"),
            "{text}"
        );
        assert!(
            text.contains("%v2 = tensor.empty() : tensor<3x2xf32>"),
            "{text}"
        );
        assert!(
            text.contains("%b2 = \"math.sqrt\"(%in0) : (f32) -> f32\n      linalg.yield %b2 : f32"),
            "{text}"
        );
    }
}
