//! Builds the ONNX importer's recorded module (`onnx::importer::text`'s
//! [`Module`]: typed ops on numbered values) as MLIR operations through
//! melior, so that no imported model is written as text and parsed back.
//!
//! Ops are built by [`OperationBuilder`] with typed attributes from
//! melior's constructors: constants as dense elements from their bytes, or
//! as `dense_resource` attributes whose blobs are the importer's shared
//! bytes (a slice of the mapped model file, not copied where it is
//! aligned); `linalg.generic` bodies as regions; linalg named ops' bodies
//! by linalg's own region builder. Every op carries the location the
//! importer recorded, `loc("node name")`, so errors naming the node are
//! the same as for a model written as MLIR; ops inside a body carry their
//! `linalg.generic`'s.
//!
//! It lives beside `onnx/` rather than inside it: the importer itself
//! depends on nothing of MLIR, so that the fuzz target compiles it alone.

use std::collections::HashMap;
use std::ffi::c_void;

use melior::Context;
use melior::ir::attribute::{
    ArrayAttribute, AttributeLike, DenseI32ArrayAttribute, DenseI64ArrayAttribute,
    IntegerAttribute, StringAttribute, TypeAttribute,
};
use melior::ir::operation::{OperationBuilder, OperationLike};
use melior::ir::r#type::{FunctionType, IntegerType, TypeLike};
use melior::ir::{
    Attribute, Block, BlockLike, Identifier, Location, Module as MlirModule, Region, RegionLike,
    Type, Value,
};

use super::onnx::dtype::{DType, TType};
use super::onnx::emit::ir::{
    Broadcasted, Elements, Expr, Generic, Kind, Op, ResultType, RuntimeExtent, Use, ValueId,
};
use super::onnx::emit::{Attr, BodyAttr, BodyOp, Scalar};
use super::onnx::importer::module::{ArgAttr, Module};
use super::onnx::tensor::Const;
use super::onnx::{Blob, Imported};

/// What went wrong building an imported module (an importer bug: every
/// record names values and types the importer checked).
#[derive(Debug)]
pub struct BuildError(pub String);

impl std::fmt::Display for BuildError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot build the imported module: {}", self.0)
    }
}

impl std::error::Error for BuildError {}

type Result<T> = std::result::Result<T, BuildError>;

fn error(message: impl Into<String>) -> BuildError {
    BuildError(message.into())
}

/// The dialects the imported ops belong to, loaded before any is built
/// (an op of a dialect the context has not loaded would be built as an
/// unregistered op).
const DIALECTS: [&str; 8] = [
    "builtin", "func", "tosa", "tensor", "linalg", "arith", "math", "tcc",
];

/// Builds `imported`'s module in `context`, its `dense_resource`
/// constants holding the importer's blobs.
pub fn build_module<'c>(context: &'c Context, imported: Imported) -> Result<MlirModule<'c>> {
    let Imported {
        module,
        blobs,
        mapped,
        ..
    } = imported;
    build(context, &module, blobs, mapped)
}

/// Builds `module` in `context`; `blobs` are the bytes its
/// [`Elements::Blob`] constants name, `mapped` says whether they lie in a
/// read-only mapping of the model file.
pub fn build<'c>(
    context: &'c Context,
    module: &Module,
    blobs: Vec<Blob>,
    mapped: bool,
) -> Result<MlirModule<'c>> {
    for dialect in DIALECTS {
        context.get_or_load_dialect(dialect);
    }
    let b = Builder {
        context,
        blobs: blobs.into_iter().map(|b| (b.key.clone(), b)).collect(),
        mapped,
    };
    let graph = if module.graph.is_empty() {
        "graph"
    } else {
        &module.graph
    };
    let mlir = MlirModule::new(b.name_loc(graph));
    let function = b.function(module, graph)?;
    mlir.body().append_operation(function);
    Ok(mlir)
}

struct Builder<'c> {
    context: &'c Context,
    blobs: HashMap<String, Blob>,
    mapped: bool,
}

impl<'c> Builder<'c> {
    fn name_loc(&self, name: &str) -> Location<'c> {
        Location::name(self.context, name, Location::unknown(self.context))
    }

    fn id(&self, name: &str) -> Identifier<'c> {
        Identifier::new(self.context, name)
    }

    // ---- types -----------------------------------------------------------

    fn element(&self, dtype: DType) -> Type<'c> {
        let c = self.context;
        match dtype {
            DType::F32 => Type::float32(c),
            DType::F16 => Type::float16(c),
            DType::BF16 => Type::bfloat16(c),
            DType::F64 => Type::float64(c),
            DType::I64 | DType::U64 => IntegerType::new(c, 64).into(),
            DType::I32 | DType::U32 => IntegerType::new(c, 32).into(),
            DType::I16 | DType::U16 => IntegerType::new(c, 16).into(),
            DType::Bool => IntegerType::new(c, 1).into(),
            // i8, u8 and the narrow types (one element per byte).
            _ => IntegerType::new(c, 8).into(),
        }
    }

    fn scalar(&self, scalar: Scalar) -> Type<'c> {
        match scalar {
            Scalar::Elem(d) => self.element(d),
            Scalar::Index => Type::index(self.context),
        }
    }

    fn shaped(&self, shape: &[i64], element: Type<'c>) -> Type<'c> {
        // SAFETY: mlirShapedTypeGetDynamicSize has no preconditions.
        let dynamic = unsafe { mlir_sys::mlirShapedTypeGetDynamicSize() };
        let shape: Vec<i64> = shape
            .iter()
            .map(|&d| if d < 0 { dynamic } else { d })
            .collect();
        // SAFETY: the element type belongs to the live context; a null
        // encoding is "none".
        unsafe {
            Type::from_raw(mlir_sys::mlirRankedTensorTypeGet(
                shape.len() as isize,
                shape.as_ptr(),
                element.to_raw(),
                mlir_sys::MlirAttribute {
                    ptr: std::ptr::null(),
                },
            ))
        }
    }

    fn tensor(&self, ty: &TType) -> Type<'c> {
        self.shaped(&ty.shape, self.element(ty.dtype))
    }

    fn result_type(&self, ty: &ResultType) -> Type<'c> {
        match ty {
            ResultType::Tensor(t) => self.tensor(t),
            ResultType::Shape(n) => tcc_dialects::tosa_shape_type(self.context, *n),
        }
    }

    // ---- attributes ------------------------------------------------------

    fn integer(&self, value: i64, ty: Type<'c>) -> Attribute<'c> {
        IntegerAttribute::new(ty, value).into()
    }

    /// A float attribute as the importer's literal wrote it: an f16/bf16/
    /// f32 value rounded to f32 first (the literal is the f32's shortest
    /// decimal), then to the type.
    fn float(&self, value: f64, dtype: DType) -> Attribute<'c> {
        let value = match dtype {
            DType::F16 | DType::BF16 | DType::F32 => value as f32 as f64,
            _ => value,
        };
        // SAFETY: the type belongs to the live context.
        unsafe {
            Attribute::from_raw(mlir_sys::mlirFloatAttrDoubleGet(
                self.context.to_raw(),
                self.element(dtype).to_raw(),
                value,
            ))
        }
    }

    fn attr(&self, attr: &Attr) -> Result<Attribute<'c>> {
        let c = self.context;
        Ok(match attr {
            Attr::Int(v, d) => self.integer(*v, self.element(*d)),
            Attr::Float(v, d) => self.float(*v, *d),
            Attr::Str(s) => StringAttribute::new(c, s).into(),
            Attr::Type(d) => TypeAttribute::new(self.element(*d)).into(),
            Attr::I64s(v) => DenseI64ArrayAttribute::new(c, v).into(),
            Attr::I32s(v) => {
                let v: Vec<i32> = v
                    .iter()
                    .map(|&x| i32::try_from(x).map_err(|_| error(format!("{x} is not an i32"))))
                    .collect::<Result<_>>()?;
                DenseI32ArrayAttribute::new(c, &v).into()
            }
            Attr::I64Elements(v) => {
                let ty = self.shaped(&[v.len() as i64], self.element(DType::I64));
                self.raw_elements(ty, &i64_bytes(v))?
            }
        })
    }

    fn body_attr(&self, attr: &BodyAttr) -> Result<Attribute<'c>> {
        Ok(match attr {
            BodyAttr::Int(v, Scalar::Elem(DType::Bool)) => {
                self.integer(i64::from(*v != 0), self.element(DType::Bool))
            }
            BodyAttr::Int(v, ty) => self.integer(*v, self.scalar(*ty)),
            BodyAttr::Float(v, d) => self.float(*v, *d),
            // A value computed before the generic (`body`), not an attribute.
            BodyAttr::Extent(..) => {
                return Err(error("a run-time extent is not an attribute of a body op"));
            }
        })
    }

    /// Dense elements of `ty` from their raw little-endian bytes (one
    /// element for a splat).
    fn raw_elements(&self, ty: Type<'c>, bytes: &[u8]) -> Result<Attribute<'c>> {
        // SAFETY: the type is live; MLIR copies the bytes.
        let raw = unsafe {
            mlir_sys::mlirDenseElementsAttrRawBufferGet(
                ty.to_raw(),
                bytes.len(),
                bytes.as_ptr() as *const c_void,
            )
        };
        if raw.ptr.is_null() {
            return Err(error(format!(
                "{} bytes are not the elements of a {ty}",
                bytes.len()
            )));
        }
        // SAFETY: checked non-null above.
        Ok(unsafe { Attribute::from_raw(raw) })
    }

    /// A constant's elements as a dense elements attribute.
    fn dense(&self, c: &Const) -> Result<Attribute<'c>> {
        let ty = self.tensor(&c.ty());
        if c.dtype == DType::Bool {
            // i1 elements are stored one bit each: from their values.
            let count = if c.splat { 1 } else { c.numel() };
            let values: Vec<i32> = (0..count).map(|i| i32::from(c.i64_at(i) != 0)).collect();
            if c.splat && c.numel() != 1 {
                return self.raw_elements(ty, &[if values[0] != 0 { 0xff } else { 0 }]);
            }
            // SAFETY: the type is live; MLIR copies the values.
            let raw = unsafe {
                mlir_sys::mlirDenseElementsAttrBoolGet(
                    ty.to_raw(),
                    values.len() as isize,
                    values.as_ptr(),
                )
            };
            if raw.ptr.is_null() {
                return Err(error("invalid boolean constant"));
            }
            // SAFETY: checked non-null above.
            return Ok(unsafe { Attribute::from_raw(raw) });
        }
        self.raw_elements(ty, &c.bytes)
    }

    /// A `dense_resource` attribute of type `ty` named `key`, whose blob is
    /// `bytes` (moved in: MLIR drops it when the context lets the blob go).
    fn resource(
        &self,
        ty: Type<'c>,
        key: &str,
        bytes: bytes::Bytes,
        alignment: usize,
    ) -> Result<Attribute<'c>> {
        unsafe extern "C" fn release(
            user_data: *mut c_void,
            _data: *const c_void,
            _size: usize,
            _align: usize,
        ) {
            // SAFETY: `user_data` is the box made below, released once.
            drop(unsafe { Box::from_raw(user_data as *mut bytes::Bytes) });
        }
        // The blob's elements must be aligned as it says: a tensor at an
        // odd offset of the file is copied (the allocator aligns it).
        let bytes = if (bytes.as_ptr() as usize).is_multiple_of(alignment) {
            bytes
        } else if self.mapped {
            bytes::Bytes::from(copy_releasing_mapped(&bytes))
        } else {
            bytes::Bytes::from(bytes.to_vec())
        };
        let alignment = if (bytes.as_ptr() as usize).is_multiple_of(alignment) {
            alignment
        } else {
            1
        };
        let (data, size) = (bytes.as_ptr(), bytes.len());
        let owner = Box::into_raw(Box::new(bytes)) as *mut c_void;
        // SAFETY: `data` stays valid and unchanged while `owner` (the
        // shared, immutable buffer) lives; MLIR calls `release` once
        // when it drops the blob, and the blob is immutable.
        let raw = unsafe {
            mlir_sys::mlirUnmanagedDenseResourceElementsAttrGet(
                ty.to_raw(),
                mlir_sys::MlirStringRef {
                    data: key.as_ptr() as *const std::os::raw::c_char,
                    length: key.len(),
                },
                data as *mut c_void,
                size,
                alignment,
                false,
                Some(release),
                owner,
            )
        };
        if raw.ptr.is_null() {
            return Err(error(format!("cannot make the resource {key}")));
        }
        // SAFETY: checked non-null above.
        Ok(unsafe { Attribute::from_raw(raw) })
    }

    fn elements(&self, elements: &Elements, ty: &ResultType) -> Result<Attribute<'c>> {
        let ty_mlir = self.result_type(ty);
        match elements {
            Elements::Dense(c) => self.dense(c),
            Elements::Blob(key) => {
                let blob = self
                    .blobs
                    .get(key)
                    .ok_or_else(|| error(format!("no blob {key}")))?;
                self.resource(ty_mlir, key, blob.bytes.clone(), blob.alignment)
            }
        }
    }

    fn shape_elements(&self, values: &[i64]) -> Result<Attribute<'c>> {
        let ty = self.shaped(&[values.len() as i64], Type::index(self.context));
        self.raw_elements(ty, &i64_bytes(values))
    }

    fn arg_attr(&self, attr: &ArgAttr) -> Attribute<'c> {
        let c = self.context;
        match attr {
            ArgAttr::Str(s) => StringAttribute::new(c, s).into(),
            // SAFETY: the context is live.
            ArgAttr::Unit => unsafe { Attribute::from_raw(mlir_sys::mlirUnitAttrGet(c.to_raw())) },
            ArgAttr::Strs(v) => {
                let items: Vec<Attribute> = v
                    .iter()
                    .map(|s| StringAttribute::new(c, s).into())
                    .collect();
                ArrayAttribute::new(c, &items).into()
            }
        }
    }

    // ---- the function ----------------------------------------------------

    fn function(&self, module: &Module, graph: &str) -> Result<melior::ir::Operation<'c>> {
        let c = self.context;
        let arguments: Vec<(Type, Location)> = module
            .arguments
            .iter()
            .map(|a| (self.tensor(&a.ty), self.name_loc(&a.name)))
            .collect();
        let results: Vec<Type> = module.results.iter().map(|v| self.tensor(&v.ty)).collect();
        let inputs: Vec<Type> = arguments.iter().map(|(t, _)| *t).collect();
        let block = Block::new(&arguments);
        {
            let mut values: Vec<Value> = Vec::with_capacity(module.ops.len());
            for op in &module.ops {
                let value = self.op(&block, op, &values)?;
                values.push(value);
            }
            let returned: Vec<Value> = module
                .results
                .iter()
                .map(|v| lookup(&block, &values, v.id()))
                .collect::<Result<_>>()?;
            let ret = OperationBuilder::new("func.return", self.name_loc("graph outputs"))
                .add_operands(&returned)
                .build()
                .map_err(|e| error(format!("func.return: {e}")))?;
            block.append_operation(ret);
        }
        let region = Region::new();
        region.append_block(block);
        let function = melior::dialect::func::func(
            c,
            StringAttribute::new(c, &module.function),
            TypeAttribute::new(FunctionType::new(c, &inputs, &results).into()),
            region,
            &[],
            self.name_loc(graph),
        );
        let set = |index: usize, name: &str, attr: Attribute, result: bool| {
            let name = mlir_sys::MlirStringRef {
                data: name.as_ptr() as *const std::os::raw::c_char,
                length: name.len(),
            };
            // SAFETY: `function` is a live func.func with that many
            // arguments and results.
            unsafe {
                if result {
                    mlir_sys::mlirFuncSetResultAttr(
                        function.to_raw(),
                        index as isize,
                        name,
                        attr.to_raw(),
                    );
                } else {
                    mlir_sys::mlirFuncSetArgAttr(
                        function.to_raw(),
                        index as isize,
                        name,
                        attr.to_raw(),
                    );
                }
            }
        };
        for (i, a) in module.arguments.iter().enumerate() {
            for (name, attr) in &a.attrs {
                set(i, name, self.arg_attr(attr), false);
            }
        }
        for i in 0..module.results.len() {
            for (name, attr) in module.result_attrs(i) {
                set(i, name, self.arg_attr(&attr), true);
            }
        }
        Ok(function)
    }

    /// Builds `op` at the end of `block`; returns its result.
    fn op<'b>(
        &self,
        block: &'b Block<'c>,
        op: &Op,
        values: &[Value<'c, 'b>],
    ) -> Result<Value<'c, 'b>> {
        let loc = self.name_loc(&op.loc);
        let ty = self.result_type(&op.ty);
        let uses = |uses: &[&Use]| -> Result<Vec<Value<'c, 'b>>> {
            uses.iter().map(|u| lookup(block, values, u.id)).collect()
        };
        let named = |attrs: &[(String, Attr)]| -> Result<Vec<(Identifier<'c>, Attribute<'c>)>> {
            attrs
                .iter()
                .map(|(n, a)| Ok((self.id(n), self.attr(a)?)))
                .collect()
        };
        let made = match &op.kind {
            Kind::Plain {
                name,
                operands,
                attrs,
            } => {
                let operands = uses(&operands.iter().collect::<Vec<_>>())?;
                built(
                    OperationBuilder::new(name, loc)
                        .add_operands(&operands)
                        .add_attributes(&named(attrs)?)
                        .add_results(&[ty])
                        .build(),
                )
            }
            Kind::Const(elements) => {
                let values = self.elements(elements, &op.ty)?;
                built(
                    OperationBuilder::new("tosa.const", loc)
                        .add_attributes(&[(self.id("values"), values)])
                        .add_results(&[ty])
                        .build(),
                )
            }
            Kind::ConstShape(shape) => built(
                OperationBuilder::new("tosa.const_shape", loc)
                    .add_attributes(&[(self.id("values"), self.shape_elements(shape)?)])
                    .add_results(&[ty])
                    .build(),
            ),
            Kind::Empty(extents) => {
                let sizes = self.runtime_sizes(block, extents, loc)?;
                built(
                    OperationBuilder::new("tensor.empty", loc)
                        .add_operands(&sizes)
                        .add_results(&[ty])
                        .build(),
                )
            }
            Kind::Broadcast { source, extents } => {
                self.broadcast(block, values, source, extents, &op.ty, loc)
            }
            Kind::Reshape { source, extents } => {
                self.reshape(block, values, source, extents, &op.ty, loc)
            }
            Kind::ConstPrefix {
                elements,
                source,
                extents,
            } => self.const_prefix(block, elements, source, extents, &op.ty, loc),
            Kind::Fill(value, extents) => {
                let ResultType::Tensor(t) = &op.ty else {
                    return Err(error("linalg.fill of a shape"));
                };
                let element = self.element(t.dtype);
                let attr = if t.dtype.is_float() {
                    self.float(*value, t.dtype)
                } else {
                    self.integer(*value as i64, element)
                };
                let constant = OperationBuilder::new("arith.constant", loc)
                    .add_attributes(&[(self.id("value"), attr)])
                    .add_results(&[element])
                    .build()
                    .map_err(|e| error(format!("arith.constant: {e}")))?;
                let constant = result(block.append_operation(constant))?;
                let empty = self.sized_empty(block, extents, t, loc)?;
                self.named_op("linalg.fill", loc, &[], &[constant], empty, ty)
            }
            Kind::Named {
                name,
                attrs,
                ins,
                init,
            } => {
                let ins = uses(&ins.iter().collect::<Vec<_>>())?;
                let init = lookup(block, values, init.id)?;
                self.named_op(name, loc, &named(attrs)?, &ins, init, ty)
            }
            Kind::Generic(g) => self.generic(block, values, g, loc, ty),
        }
        .map_err(|e| error(format!("{}: {}", op_name(op), e.0)))?;
        result(block.append_operation(made))
    }

    /// A linalg named op (`linalg.fill`, a convolution or pooling) on
    /// `ins` into `init`, its body filled by linalg's region builder.
    fn named_op(
        &self,
        name: &str,
        loc: Location<'c>,
        attrs: &[(Identifier<'c>, Attribute<'c>)],
        ins: &[Value<'c, '_>],
        init: Value<'c, '_>,
        ty: Type<'c>,
    ) -> Result<melior::ir::Operation<'c>> {
        let mut attrs = attrs.to_vec();
        attrs.push((
            self.id("operandSegmentSizes"),
            DenseI32ArrayAttribute::new(self.context, &[ins.len() as i32, 1]).into(),
        ));
        let mut operands = ins.to_vec();
        operands.push(init);
        let op = OperationBuilder::new(name, loc)
            .add_operands(&operands)
            .add_attributes(&attrs)
            .add_results(&[ty])
            .add_regions([Region::new()])
            .build()
            .map_err(|e| error(e.to_string()))?;
        // SAFETY: `op` is a live linalg named op with one empty region.
        unsafe { mlir_sys::mlirLinalgFillBuiltinNamedOpRegion(op.to_raw()) };
        Ok(op)
    }

    fn generic<'b>(
        &self,
        block: &'b Block<'c>,
        values: &[Value<'c, 'b>],
        g: &Generic,
        loc: Location<'c>,
        ty: Type<'c>,
    ) -> Result<melior::ir::Operation<'c>> {
        let c = self.context;
        let loops = g.reductions.len();
        let map = |exprs: &[Expr]| self.affine_map(loops, exprs);
        let mut maps: Vec<Attribute> = g.ins.iter().map(|(_, m)| map(m)).collect();
        maps.push(map(&g.init.1));
        let iterators: Vec<Attribute> = g
            .reductions
            .iter()
            .map(|&r| tcc_dialects::linalg_iterator_type(c, r))
            .collect();
        let mut operands: Vec<Value> = g
            .ins
            .iter()
            .map(|(u, _)| lookup(block, values, u.id))
            .collect::<Result<_>>()?;
        operands.push(lookup(block, values, g.init.0.id)?);
        let args: Vec<(Type, Location)> = g.args.iter().map(|&s| (self.scalar(s), loc)).collect();
        let body = Block::new(&args);
        self.body(&body, block, values, &g.body, g.yielded, loc)?;
        let region = Region::new();
        region.append_block(body);
        OperationBuilder::new("linalg.generic", loc)
            .add_operands(&operands)
            .add_attributes(&[
                (
                    self.id("indexing_maps"),
                    ArrayAttribute::new(c, &maps).into(),
                ),
                (
                    self.id("iterator_types"),
                    ArrayAttribute::new(c, &iterators).into(),
                ),
                (
                    self.id("operandSegmentSizes"),
                    DenseI32ArrayAttribute::new(c, &[g.ins.len() as i32, 1]).into(),
                ),
            ])
            .add_results(&[ty])
            .add_regions([region])
            .build()
            .map_err(|e| error(e.to_string()))
    }

    /// An affine map attribute of `loops` dimensions with `exprs` results.
    fn affine_map(&self, loops: usize, exprs: &[Expr]) -> Attribute<'c> {
        let c = self.context;
        let mut exprs: Vec<mlir_sys::MlirAffineExpr> = exprs
            .iter()
            .map(|e| unsafe {
                // SAFETY: the context is live.
                match e {
                    Expr::Dim(d) => mlir_sys::mlirAffineDimExprGet(c.to_raw(), *d as isize),
                    Expr::Zero => mlir_sys::mlirAffineConstantExprGet(c.to_raw(), 0),
                }
            })
            .collect();
        // SAFETY: the expressions belong to the live context.
        unsafe {
            let map = mlir_sys::mlirAffineMapGet(
                c.to_raw(),
                loops as isize,
                0,
                exprs.len() as isize,
                exprs.as_mut_ptr(),
            );
            Attribute::from_raw(mlir_sys::mlirAffineMapAttrGet(map))
        }
    }

    /// An `index` constant at the end of `block`.
    fn index_constant<'b>(
        &self,
        block: &'b Block<'c>,
        value: i64,
        loc: Location<'c>,
    ) -> Result<Value<'c, 'b>> {
        let index = Type::index(self.context);
        let op = OperationBuilder::new("arith.constant", loc)
            .add_attributes(&[(self.id("value"), self.integer(value, index))])
            .add_results(&[index])
            .build();
        appended(block, op, "arith.constant")
    }

    /// The `index` values of `extents`, computed at the end of `block`
    /// from the function's arguments (`tensor.dim`, `arith.muli`).
    fn runtime_sizes<'b>(
        &self,
        block: &'b Block<'c>,
        extents: &[RuntimeExtent],
        loc: Location<'c>,
    ) -> Result<Vec<Value<'c, 'b>>> {
        let index = Type::index(self.context);
        let mut sizes = Vec::with_capacity(extents.len());
        for extent in extents {
            let mut size: Option<Value> = None;
            for &(argument, axis) in &extent.dims {
                let source = lookup(block, &[], ValueId::Arg(argument))?;
                let axis = self.index_constant(block, axis as i64, loc)?;
                let dim = OperationBuilder::new("tensor.dim", loc)
                    .add_operands(&[source, axis])
                    .add_results(&[index])
                    .build();
                let dim = appended(block, dim, "tensor.dim")?;
                size = Some(match size {
                    None => dim,
                    Some(product) => self.multiply(block, product, dim, loc)?,
                });
            }
            let size = match size {
                None => self.index_constant(block, extent.factor, loc)?,
                Some(product) if extent.factor == 1 => product,
                Some(product) => {
                    let factor = self.index_constant(block, extent.factor, loc)?;
                    self.multiply(block, product, factor, loc)?
                }
            };
            sizes.push(size);
        }
        Ok(sizes)
    }

    fn multiply<'b>(
        &self,
        block: &'b Block<'c>,
        a: Value<'c, 'b>,
        b: Value<'c, 'b>,
        loc: Location<'c>,
    ) -> Result<Value<'c, 'b>> {
        let op = OperationBuilder::new("arith.muli", loc)
            .add_operands(&[a, b])
            .add_results(&[Type::index(self.context)])
            .build();
        appended(block, op, "arith.muli")
    }

    /// A [`Kind::ConstPrefix`]: the `tosa.const` of the whole `source`,
    /// read by an all-parallel `linalg.generic` over a `tensor.empty` of
    /// the result type sized at run time (`extents` at its `?`s), whose
    /// body takes each element with `tensor.extract` at its own indices (a
    /// gather from the constant, as the importer's gathers are; a
    /// `tensor.extract_slice` would bufferize to a view of the constant
    /// with a dynamic layout, which kernels cannot take).
    fn const_prefix<'b>(
        &self,
        block: &'b Block<'c>,
        elements: &Elements,
        source: &TType,
        extents: &[RuntimeExtent],
        ty: &ResultType,
        loc: Location<'c>,
    ) -> Result<melior::ir::Operation<'c>> {
        let ResultType::Tensor(out) = ty else {
            return Err(error("the leading part of a constant as a shape"));
        };
        let dynamic = out.shape.iter().filter(|&&d| d < 0).count();
        if out.shape.len() != source.shape.len() || dynamic != extents.len() {
            return Err(error(format!(
                "the leading part of a constant of rank {} as rank {} with {} run-time extents",
                source.shape.len(),
                out.shape.len(),
                extents.len()
            )));
        }
        let source_ty = ResultType::Tensor(source.clone());
        let constant = OperationBuilder::new("tosa.const", loc)
            .add_attributes(&[(self.id("values"), self.elements(elements, &source_ty)?)])
            .add_results(&[self.result_type(&source_ty)])
            .build();
        let constant = appended(block, constant, "tosa.const")?;
        let empty = self.sized_empty(block, extents, out, loc)?;
        let rank = out.shape.len();
        let element = self.element(out.dtype);
        let body = Block::new(&[(element, loc)]);
        let i64: Type = IntegerType::new(self.context, 64).into();
        let mut indices = Vec::with_capacity(rank);
        for axis in 0..rank {
            let index = OperationBuilder::new("linalg.index", loc)
                .add_attributes(&[(self.id("dim"), self.integer(axis as i64, i64))])
                .add_results(&[Type::index(self.context)])
                .build();
            indices.push(appended(&body, index, "linalg.index")?);
        }
        let mut operands = vec![constant];
        operands.extend(indices);
        let extract = OperationBuilder::new("tensor.extract", loc)
            .add_operands(&operands)
            .add_results(&[element])
            .build();
        let value = appended(&body, extract, "tensor.extract")?;
        let y = OperationBuilder::new("linalg.yield", loc)
            .add_operands(&[value])
            .build()
            .map_err(|e| error(format!("linalg.yield: {e}")))?;
        body.append_operation(y);
        let identity: Vec<Expr> = (0..rank).map(Expr::Dim).collect();
        let maps = [self.affine_map(rank, &identity)];
        self.parallel_generic(&[], empty, &maps, out, body, loc)
    }

    /// A [`Kind::Reshape`]: `source` collapsed to one axis
    /// (`tensor.collapse_shape`, where its rank is above 1) and expanded to
    /// the result type (`tensor.expand_shape`, where its rank is above 1),
    /// whose `?` extents are `extents`, read at run time. Both are views of
    /// one row-major buffer, as `tosa.reshape` lowers to.
    fn reshape<'b>(
        &self,
        block: &'b Block<'c>,
        values: &[Value<'c, 'b>],
        source: &Use,
        extents: &[RuntimeExtent],
        ty: &ResultType,
        loc: Location<'c>,
    ) -> Result<melior::ir::Operation<'c>> {
        let (ResultType::Tensor(out), ResultType::Tensor(input)) = (ty, &source.ty) else {
            return Err(error("a reshape of a shape"));
        };
        let dynamic = out.shape.iter().filter(|&&d| d < 0).count();
        if dynamic != extents.len() || out.shape.is_empty() || input.shape.is_empty() {
            return Err(error(format!(
                "a reshape of rank {} to rank {} with {} run-time extents",
                input.shape.len(),
                out.shape.len(),
                extents.len()
            )));
        }
        let c = self.context;
        let one_group = |rank: usize| -> Attribute<'c> {
            let group: Vec<Attribute> = (0..rank)
                .map(|axis| self.integer(axis as i64, IntegerType::new(c, 64).into()))
                .collect();
            ArrayAttribute::new(c, &[ArrayAttribute::new(c, &group).into()]).into()
        };
        let flat_ty = self.result_type(&ResultType::Tensor(TType::new(out.dtype, vec![-1])));
        let mut flat = lookup(block, values, source.id)?;
        if input.shape.len() > 1 {
            let collapse = OperationBuilder::new("tensor.collapse_shape", loc)
                .add_operands(&[flat])
                .add_attributes(&[(self.id("reassociation"), one_group(input.shape.len()))])
                .add_results(&[flat_ty])
                .build();
            flat = appended(block, collapse, "tensor.collapse_shape")?;
        }
        let result = self.result_type(ty);
        if out.shape.len() == 1 {
            // One axis: the collapsed value is the result (a cast names its
            // type where the source was already one axis).
            return OperationBuilder::new("tensor.cast", loc)
                .add_operands(&[flat])
                .add_results(&[result])
                .build()
                .map_err(|e| error(format!("tensor.cast: {e}")));
        }
        let sizes = self.runtime_sizes(block, extents, loc)?;
        let static_sizes: Vec<i64> = out
            .shape
            .iter()
            .map(|&d| if d < 0 { i64::MIN } else { d })
            .collect();
        let mut operands = vec![flat];
        operands.extend(sizes);
        OperationBuilder::new("tensor.expand_shape", loc)
            .add_operands(&operands)
            .add_attributes(&[
                (self.id("reassociation"), one_group(out.shape.len())),
                (
                    self.id("static_output_shape"),
                    DenseI64ArrayAttribute::new(c, &static_sizes).into(),
                ),
            ])
            .add_results(&[result])
            .build()
            .map_err(|e| error(format!("tensor.expand_shape: {e}")))
    }

    /// A `tensor.empty` of `out` whose `?` extents are `extents`, read at
    /// run time, at the end of `block`.
    fn sized_empty<'b>(
        &self,
        block: &'b Block<'c>,
        extents: &[RuntimeExtent],
        out: &TType,
        loc: Location<'c>,
    ) -> Result<Value<'c, 'b>> {
        let sizes = self.runtime_sizes(block, extents, loc)?;
        let empty = OperationBuilder::new("tensor.empty", loc)
            .add_operands(&sizes)
            .add_results(&[self.tensor(out)])
            .build();
        appended(block, empty, "tensor.empty")
    }

    /// An all-parallel `linalg.generic` of `body` over `init` (of type
    /// `out`) reading `inputs`, `maps` one per input and the init's last.
    fn parallel_generic<'b>(
        &self,
        inputs: &[Value<'c, 'b>],
        init: Value<'c, 'b>,
        maps: &[Attribute<'c>],
        out: &TType,
        body: Block<'c>,
        loc: Location<'c>,
    ) -> Result<melior::ir::Operation<'c>> {
        let region = Region::new();
        region.append_block(body);
        let iterators: Vec<Attribute> = (0..out.shape.len())
            .map(|_| tcc_dialects::linalg_iterator_type(self.context, false))
            .collect();
        let mut operands = inputs.to_vec();
        operands.push(init);
        OperationBuilder::new("linalg.generic", loc)
            .add_operands(&operands)
            .add_attributes(&[
                (
                    self.id("indexing_maps"),
                    ArrayAttribute::new(self.context, maps).into(),
                ),
                (
                    self.id("iterator_types"),
                    ArrayAttribute::new(self.context, &iterators).into(),
                ),
                (
                    self.id("operandSegmentSizes"),
                    DenseI32ArrayAttribute::new(self.context, &[inputs.len() as i32, 1]).into(),
                ),
            ])
            .add_results(&[self.tensor(out)])
            .add_regions([region])
            .build()
            .map_err(|e| error(e.to_string()))
    }

    /// A [`Kind::Broadcast`]: its source (a recorded value, or a
    /// `tosa.const` of the elements) repeated along its extent-1 axes into
    /// a `tensor.empty` sized at run time, by a `linalg.generic`.
    fn broadcast<'b>(
        &self,
        block: &'b Block<'c>,
        values: &[Value<'c, 'b>],
        source: &Broadcasted,
        extents: &[RuntimeExtent],
        ty: &ResultType,
        loc: Location<'c>,
    ) -> Result<melior::ir::Operation<'c>> {
        let ResultType::Tensor(out) = ty else {
            return Err(error("a broadcast to a shape"));
        };
        let constant = |c: &Const| -> Result<Value<'c, 'b>> {
            let ty = ResultType::Tensor(TType::new(c.dtype, c.shape.clone()));
            let op = OperationBuilder::new("tosa.const", loc)
                .add_attributes(&[(self.id("values"), self.dense(c)?)])
                .add_results(&[self.result_type(&ty)])
                .build();
            appended(block, op, "tosa.const")
        };
        // The inputs (all of one shape), and the axis a ramp grows along.
        let (inputs, shape, ramp): (Vec<Value>, Vec<i64>, Option<usize>) = match source {
            Broadcasted::Value(u) => {
                let ResultType::Tensor(t) = &u.ty else {
                    return Err(error("a broadcast of a shape"));
                };
                (vec![lookup(block, values, u.id)?], t.shape.clone(), None)
            }
            Broadcasted::Elements(Elements::Dense(c)) => {
                (vec![constant(c)?], c.shape.clone(), None)
            }
            Broadcasted::Elements(Elements::Blob(_)) => {
                return Err(error("a broadcast of a resource constant"));
            }
            Broadcasted::Ramp { seed, step, axis } => (
                vec![constant(seed)?, constant(step)?],
                seed.shape.clone(),
                Some(*axis),
            ),
        };
        if shape.len() != out.shape.len() {
            return Err(error(format!(
                "a broadcast of rank {} to rank {}",
                shape.len(),
                out.shape.len()
            )));
        }
        let empty = self.sized_empty(block, extents, out, loc)?;
        let rank = out.shape.len();
        let source_map: Vec<Expr> = shape
            .iter()
            .zip(&out.shape)
            .enumerate()
            .map(|(axis, (&s, &o))| {
                if s == 1 && o != 1 {
                    Expr::Zero
                } else {
                    Expr::Dim(axis)
                }
            })
            .collect();
        let identity: Vec<Expr> = (0..rank).map(Expr::Dim).collect();
        let mut maps: Vec<Attribute> = inputs
            .iter()
            .map(|_| self.affine_map(rank, &source_map))
            .collect();
        maps.push(self.affine_map(rank, &identity));
        let element = self.element(out.dtype);
        let body = Block::new(&vec![(element, loc); inputs.len() + 1]);
        let argument = |i: usize| {
            body.argument(i)
                .map(Value::from)
                .map_err(|e| error(e.to_string()))
        };
        let mut yielded = argument(0)?;
        if let Some(axis) = ramp {
            // seed + index * step, in the element type.
            let scalar = |name: &str,
                          operands: &[Value<'c, '_>],
                          attrs: &[(Identifier<'c>, Attribute<'c>)],
                          ty: Type<'c>| {
                let op = OperationBuilder::new(name, loc)
                    .add_operands(operands)
                    .add_attributes(attrs)
                    .add_results(&[ty])
                    .build();
                appended(&body, op, name)
            };
            let index = scalar(
                "linalg.index",
                &[],
                &[(
                    self.id("dim"),
                    self.integer(axis as i64, IntegerType::new(self.context, 64).into()),
                )],
                Type::index(self.context),
            )?;
            yielded = if out.dtype.is_float() {
                let i64: Type = IntegerType::new(self.context, 64).into();
                let index = scalar("arith.index_cast", &[index], &[], i64)?;
                let index = scalar("arith.sitofp", &[index], &[], element)?;
                let grown = scalar("arith.mulf", &[index, argument(1)?], &[], element)?;
                scalar("arith.addf", &[argument(0)?, grown], &[], element)?
            } else {
                let index = scalar("arith.index_cast", &[index], &[], element)?;
                let grown = scalar("arith.muli", &[index, argument(1)?], &[], element)?;
                scalar("arith.addi", &[argument(0)?, grown], &[], element)?
            };
        }
        let y = OperationBuilder::new("linalg.yield", loc)
            .add_operands(&[yielded])
            .build()
            .map_err(|e| error(format!("linalg.yield: {e}")))?;
        body.append_operation(y);
        self.parallel_generic(&inputs, empty, &maps, out, body, loc)
    }

    /// The ops of a `linalg.generic` body and its `linalg.yield`.
    fn body<'b>(
        &self,
        body: &Block<'c>,
        outer: &'b Block<'c>,
        outer_values: &[Value<'c, 'b>],
        ops: &[BodyOp],
        yielded: super::onnx::emit::Sv,
        loc: Location<'c>,
    ) -> Result<()> {
        let mut values: Vec<Value> = (0..body.argument_count())
            .map(|i| {
                body.argument(i)
                    .map(Value::from)
                    .map_err(|e| error(e.to_string()))
            })
            .collect::<Result<_>>()?;
        for op in ops {
            // A constant that is a run-time extent: computed before the
            // generic from the arguments, cast to its type in the body.
            if let [(_, BodyAttr::Extent(extent, ty))] = op.attrs.as_slice() {
                let size = self.runtime_sizes(outer, std::slice::from_ref(extent), loc)?;
                let cast = OperationBuilder::new("arith.index_cast", loc)
                    .add_operands(&size)
                    .add_results(&[self.scalar(*ty)])
                    .build();
                values.push(appended(body, cast, "arith.index_cast")?);
                continue;
            }
            let mut operands = Vec::new();
            if let Some(tensor) = &op.tensor {
                operands.push(lookup(outer, outer_values, tensor.id)?);
            }
            for v in &op.operands {
                operands.push(
                    *values
                        .get(v.index())
                        .ok_or_else(|| error("unknown body value"))?,
                );
            }
            let attrs: Vec<(Identifier, Attribute)> = op
                .attrs
                .iter()
                .map(|(n, a)| Ok((self.id(n), self.body_attr(a)?)))
                .collect::<Result<_>>()?;
            let built = OperationBuilder::new(op.name, loc)
                .add_operands(&operands)
                .add_attributes(&attrs)
                .add_results(&[self.scalar(op.result.ty)])
                .build()
                .map_err(|e| error(format!("{}: {e}", op.name)))?;
            values.push(result(body.append_operation(built))?);
        }
        let yielded = *values
            .get(yielded.index())
            .ok_or_else(|| error("unknown yielded value"))?;
        let y = OperationBuilder::new("linalg.yield", loc)
            .add_operands(&[yielded])
            .build()
            .map_err(|e| error(format!("linalg.yield: {e}")))?;
        body.append_operation(y);
        Ok(())
    }
}

fn built<'c>(
    op: std::result::Result<melior::ir::Operation<'c>, melior::Error>,
) -> Result<melior::ir::Operation<'c>> {
    op.map_err(|e| error(e.to_string()))
}

/// Appends a built op named `name` to `block`; its one result.
fn appended<'c, 'b>(
    block: &'b Block<'c>,
    op: std::result::Result<melior::ir::Operation<'c>, melior::Error>,
    name: &str,
) -> Result<Value<'c, 'b>> {
    let op = op.map_err(|e| error(format!("{name}: {e}")))?;
    result(block.append_operation(op))
}

fn op_name(op: &Op) -> &str {
    match &op.kind {
        Kind::Plain { name, .. } | Kind::Named { name, .. } => name,
        Kind::Const(_) => "tosa.const",
        Kind::ConstShape(_) => "tosa.const_shape",
        Kind::Empty(_) => "tensor.empty",
        Kind::Fill(..) => "linalg.fill",
        Kind::Broadcast { .. } => "linalg.generic",
        Kind::ConstPrefix { .. } => "linalg.generic",
        Kind::Reshape { .. } => "tensor.expand_shape",
        Kind::Generic(_) => "linalg.generic",
    }
}

fn result<'c, 'b>(op: melior::ir::operation::OperationRef<'c, 'b>) -> Result<Value<'c, 'b>> {
    op.result(0)
        .map(Value::from)
        .map_err(|e| error(e.to_string()))
}

/// The value `id` names: an argument of `block` or an op's result.
fn lookup<'c, 'b>(
    block: &'b Block<'c>,
    values: &[Value<'c, 'b>],
    id: ValueId,
) -> Result<Value<'c, 'b>> {
    match id {
        ValueId::Arg(i) => block
            .argument(i)
            .map(Value::from)
            .map_err(|_| error(format!("no argument {i}"))),
        ValueId::Op(i) => values
            .get(i)
            .copied()
            .ok_or_else(|| error(format!("value {i} is used before it is defined"))),
        ValueId::None => Err(error("a placeholder value is used")),
    }
}

fn i64_bytes(values: &[i64]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// Copies `mapped` (bytes of a read-only file mapping) a chunk at a time,
/// telling the kernel after each chunk that the mapping's pages it has
/// copied are not needed: they leave this process's resident set (and are
/// read again from the file if anything touches them), so a misaligned
/// tensor is resident once, not twice, while it is copied.
fn copy_releasing_mapped(mapped: &[u8]) -> Vec<u8> {
    const CHUNK: usize = 1 << 20;
    // SAFETY: sysconf has no preconditions.
    let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
        .ok()
        .filter(|p| p.is_power_of_two())
        .unwrap_or(4096);
    let mut copy = Vec::with_capacity(mapped.len());
    for chunk in mapped.chunks(CHUNK) {
        copy.extend_from_slice(chunk);
        // The whole pages inside the chunk (a page it shares with the next
        // chunk, or with another tensor, stays).
        let start = (chunk.as_ptr() as usize).next_multiple_of(page);
        let end = (chunk.as_ptr() as usize + chunk.len()) / page * page;
        if end > start {
            // SAFETY: the range lies inside a read-only mapping of a file
            // (the caller's contract), which this process never writes:
            // MADV_DONTNEED only drops the pages, and a later read of them
            // faults the same bytes in from the file again. A failure
            // leaves the pages resident, which is harmless.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED);
            }
        }
    }
    copy
}

#[cfg(test)]
mod tests {
    use melior::ir::BlockLike;
    use melior::ir::operation::OperationLike;

    use super::super::onnx::IoInfo;
    use super::super::onnx::emit::{ConstStyle, Emitter, Val};
    use super::super::onnx::importer::module::{Argument, DIM_NAMES, NAME, UNSIGNED};
    use super::*;

    /// A module of one function of argument `x` returning what `body`
    /// records, built and verified.
    fn built<'c>(
        context: &'c Context,
        style: ConstStyle,
        x: TType,
        attrs: Vec<(&'static str, ArgAttr)>,
        body: &dyn Fn(&mut Emitter, &Val) -> Val,
    ) -> MlirModule<'c> {
        let mut e = Emitter::new(style);
        let arg = Val::argument(0, x.clone());
        let y = body(&mut e, &arg);
        let module = Module {
            graph: "g".into(),
            function: "main".into(),
            arguments: vec![Argument {
                ty: x,
                attrs,
                name: "x".into(),
            }],
            outputs: vec![IoInfo {
                name: "y".into(),
                ty: y.ty.clone(),
            }],
            results: vec![y],
            output_dims: Vec::new(),
            ops: e.take_function(),
        };
        let built = build(context, &module, e.take_blobs(), false).expect("builds");
        assert!(built.as_operation().verify(), "{}", built.as_operation());
        built
    }

    fn context() -> Context {
        tcc_dialects::new_context()
    }

    #[test]
    fn constants_are_dense_elements_or_shared_resources() {
        let context = context();
        let f32s = |shape: Vec<i64>| TType::new(DType::F32, shape);
        let module = built(
            &context,
            ConstStyle::Resource,
            f32s(vec![2, 2]),
            vec![(NAME, ArgAttr::Str("x".into()))],
            &|e, x| {
                let small = Const::from_f64(DType::F32, vec![2, 2], &[1.0, 2.0, 3.0, 4.5]);
                let small = e.constant(&small, "small").unwrap();
                let splat = e.splat(DType::F32, vec![2, 2], 0.0);
                let big = Const::from_i64(DType::I32, vec![65], &(0..65).collect::<Vec<_>>());
                let _ = e.constant(&big, "my.w").unwrap();
                let y = e.binary("tosa.add", x, &small).unwrap();
                e.binary("tosa.add", &y, &splat).unwrap()
            },
        );
        let text = module.as_operation().to_string();
        for needle in [
            "dense<[[1.000000e+00, 2.000000e+00], [3.000000e+00, 4.500000e+00]]> : tensor<2x2xf32>",
            "dense<0.000000e+00> : tensor<2x2xf32>",
            "dense_resource<my_w_b0> : tensor<65xi32>",
            // The resource section holds the blob: alignment 4, then 0, 1.
            "my_w_b0: \"0x040000000000000001000000",
        ] {
            assert!(text.contains(needle), "{needle} in\n{text}");
        }
        // Without resources, the big constant's elements are inline.
        let module = built(
            &context,
            ConstStyle::Hex,
            f32s(vec![1]),
            Vec::new(),
            &|e, x| {
                let big = Const::from_i64(DType::I32, vec![65], &(0..65).collect::<Vec<_>>());
                let _ = e.constant(&big, "w").unwrap();
                x.clone()
            },
        );
        let text = module.as_operation().to_string();
        assert!(
            text.contains("dense<[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10,"),
            "{text}"
        );
        assert!(!text.contains("dense_resource"), "{text}");
    }

    #[test]
    fn ops_carry_the_node_locations_and_bodies_their_ops() {
        let context = context();
        let module = built(
            &context,
            ConstStyle::Hex,
            TType::new(DType::F32, vec![2, 3]),
            vec![(NAME, ArgAttr::Str("x".into()))],
            &|e, x| {
                e.set_location("n\"1");
                let y = e.reshape(x, &[3, 2]);
                e.set_location("root");
                e.map(&[&y], y.ty.clone(), &|b, a| b.op("math.sqrt", &[a[0]]))
            },
        );
        let function = module.body().first_operation().expect("func.func");
        let block = function.region(0).unwrap().first_block().unwrap();
        let mut names = Vec::new();
        let mut op = block.first_operation();
        while let Some(o) = op {
            names.push((o.name().as_string_ref().as_str().unwrap().to_string(), {
                let loc = o.location();
                if loc.is_name() {
                    loc.name_value()
                        .as_string_ref()
                        .as_str()
                        .unwrap()
                        .to_string()
                } else {
                    String::new()
                }
            }));
            op = o.next_in_block();
        }
        let expected = [
            ("tosa.const_shape", "n\"1"),
            ("tosa.reshape", "n\"1"),
            ("tensor.empty", "root"),
            ("linalg.generic", "root"),
            ("func.return", "graph outputs"),
        ];
        let expected: Vec<(String, String)> = expected
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        assert_eq!(names, expected);
        let text = module.as_operation().to_string();
        assert!(
            text.contains("%4 = math.sqrt %in : f32\n      linalg.yield %4 : f32"),
            "{text}"
        );
        assert!(text.contains("!tosa.shape<2>"), "{text}");
    }

    #[test]
    fn argument_and_result_attributes_are_typed() {
        let context = context();
        let module = built(
            &context,
            ConstStyle::Hex,
            TType::new(DType::U8, vec![-1, 4]),
            vec![
                (NAME, ArgAttr::Str("x".into())),
                (UNSIGNED, ArgAttr::Unit),
                (
                    DIM_NAMES,
                    ArgAttr::Strs(vec!["batch".into(), String::new()]),
                ),
            ],
            &|_, x| x.clone(),
        );
        let text = module.as_operation().to_string();
        assert!(
            text.contains(
                "%arg0: tensor<?x4xi8> {tcc.dim_names = [\"batch\", \"\"], tcc.name = \"x\", tcc.unsigned}"
            ),
            "{text}"
        );
        assert!(
            text.contains("-> (tensor<?x4xi8> {tcc.name = \"y\", tcc.unsigned})"),
            "{text}"
        );
    }
}
