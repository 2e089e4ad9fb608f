//! Builds the LLVM-dialect ops of a host entry with melior's builders: an
//! insertion point (the current block), the function's common failure
//! block, and one method per op the entry uses. Types come from
//! [`tcc_abi`]'s table, so the runtime table's layout is written nowhere
//! else.

use melior::Context;
use melior::dialect::llvm::{self, AllocaOptions, LoadStoreOptions};
use melior::ir::attribute::{DenseI32ArrayAttribute, IntegerAttribute, TypeAttribute};
use melior::ir::operation::{OperationBuilder, OperationLike, OperationRef};
use melior::ir::r#type::IntegerType;
use melior::ir::{
    Block, BlockLike, BlockRef, Identifier, Location, Operation, RegionLike, RegionRef, Type,
    Value, ValueLike,
};

use crate::back::{CodegenError, ErrorAt};

/// `!llvm.struct<...>` of an ABI struct, field by field from the table.
pub fn struct_type<'c>(context: &'c Context, layout: &tcc_abi::Struct) -> Type<'c> {
    let fields: Vec<Type<'c>> = layout
        .fields
        .iter()
        .map(|(_, scalar)| scalar_type(context, *scalar))
        .collect();
    llvm::r#type::r#struct(context, &fields, false)
}

/// The LLVM type of one ABI field.
pub fn scalar_type(context: &Context, scalar: tcc_abi::Scalar) -> Type<'_> {
    match scalar {
        tcc_abi::Scalar::U32 => IntegerType::new(context, 32).into(),
        tcc_abi::Scalar::U64 | tcc_abi::Scalar::Word => IntegerType::new(context, 64).into(),
        tcc_abi::Scalar::Ptr => llvm::r#type::pointer(context, 0),
    }
}

/// The types an entry uses.
#[derive(Clone, Copy)]
pub struct Types<'c> {
    pub i1: Type<'c>,
    pub i32: Type<'c>,
    pub i64: Type<'c>,
    pub ptr: Type<'c>,
    /// `tcc_runtime_api`.
    pub api: Type<'c>,
    /// `tcc_arg`.
    pub arg: Type<'c>,
}

impl<'c> Types<'c> {
    pub fn new(context: &'c Context) -> Self {
        Self {
            i1: IntegerType::new(context, 1).into(),
            i32: IntegerType::new(context, 32).into(),
            i64: IntegerType::new(context, 64).into(),
            ptr: llvm::r#type::pointer(context, 0),
            api: struct_type(context, &tcc_abi::RUNTIME_API),
            arg: struct_type(context, &tcc_abi::ARG),
        }
    }
}

/// `llvm.icmp`'s `ne` predicate.
const NE: i64 = 1;

/// Appends ops at the end of the current block of one function body.
pub struct Builder<'c> {
    pub context: &'c Context,
    pub location: Location<'c>,
    pub types: Types<'c>,
    region: RegionRef<'c, 'c>,
    entry: BlockRef<'c, 'c>,
    block: BlockRef<'c, 'c>,
    /// `^fail(%status: i32)`: returns the status.
    fail: BlockRef<'c, 'c>,
}

impl<'c> Builder<'c> {
    /// Starts building the body of `function` (an `llvm.func` with an empty
    /// region) with entry arguments `arguments`; the failure block is
    /// created at once and stays last.
    pub fn new(
        context: &'c Context,
        function: OperationRef<'c, 'c>,
        arguments: &[Type<'c>],
    ) -> Result<Self, CodegenError> {
        let location = function.location();
        let types = Types::new(context);
        let region = function.region(0).at(&function)?;
        let entry = Block::new(&arguments.iter().map(|t| (*t, location)).collect::<Vec<_>>());
        let block = region.append_block(entry);
        let fail = region.append_block(Block::new(&[(types.i32, location)]));
        let status = fail.argument(0).at(&function)?;
        fail.append_operation(llvm::r#return(Some(status.into()), location));
        Ok(Self {
            context,
            location,
            types,
            region,
            entry: block,
            block,
            fail,
        })
    }

    /// Argument `index` of the entry block.
    pub fn argument(&self, index: usize) -> Result<Value<'c, 'c>, CodegenError> {
        self.entry
            .argument(index)
            .map(Into::into)
            .map_err(|e| CodegenError::new(e.to_string()))
    }

    fn append(&self, operation: Operation<'c>) -> OperationRef<'c, 'c> {
        self.block.append_operation(operation)
    }

    /// Appends an op with one result and returns the result.
    fn value(&self, operation: Operation<'c>) -> Result<Value<'c, 'c>, CodegenError> {
        let op = self.append(operation);
        op.result(0).map(Into::into).at(&op)
    }

    fn build(&self, builder: OperationBuilder<'c>) -> Result<Operation<'c>, CodegenError> {
        builder
            .build()
            .map_err(|e| CodegenError::new(format!("internal error: {e}")))
    }

    fn attribute(
        &self,
        name: &str,
        value: impl Into<melior::ir::Attribute<'c>>,
    ) -> (Identifier<'c>, melior::ir::Attribute<'c>) {
        (Identifier::new(self.context, name), value.into())
    }

    /// `llvm.mlir.constant(value : ty)`.
    pub fn constant(&self, value: i64, ty: Type<'c>) -> Result<Value<'c, 'c>, CodegenError> {
        let op = self.build(
            OperationBuilder::new("llvm.mlir.constant", self.location)
                .add_attributes(&[self.attribute("value", IntegerAttribute::new(ty, value))])
                .add_results(&[ty]),
        )?;
        self.value(op)
    }

    /// `llvm.getelementptr base[indices] : element`. Never `inbounds`: the
    /// no-wrap flags are a property, which the C API cannot set (nor need
    /// the entries them: they run once per call).
    pub fn gep(
        &self,
        base: Value<'c, 'c>,
        indices: &[i32],
        element: Type<'c>,
    ) -> Result<Value<'c, 'c>, CodegenError> {
        let attributes = [
            self.attribute(
                "rawConstantIndices",
                DenseI32ArrayAttribute::new(self.context, indices),
            ),
            self.attribute("elem_type", TypeAttribute::new(element)),
        ];
        let op = self.build(
            OperationBuilder::new("llvm.getelementptr", self.location)
                .add_attributes(&attributes)
                .add_operands(&[base])
                .add_results(&[self.types.ptr]),
        )?;
        self.value(op)
    }

    /// `llvm.load address : ty`.
    pub fn load(
        &self,
        address: Value<'c, 'c>,
        ty: Type<'c>,
    ) -> Result<Value<'c, 'c>, CodegenError> {
        self.value(llvm::load(
            self.context,
            address,
            ty,
            self.location,
            LoadStoreOptions::default(),
        ))
    }

    /// `llvm.store value, address`.
    pub fn store(&self, value: Value<'c, 'c>, address: Value<'c, 'c>) {
        self.append(llvm::store(
            self.context,
            value,
            address,
            self.location,
            LoadStoreOptions::default(),
        ));
    }

    /// `llvm.alloca %one x element`.
    pub fn alloca(
        &self,
        one: Value<'c, 'c>,
        element: Type<'c>,
    ) -> Result<Value<'c, 'c>, CodegenError> {
        self.value(llvm::alloca(
            self.context,
            one,
            self.types.ptr,
            self.location,
            AllocaOptions::new().elem_type(Some(TypeAttribute::new(element))),
        ))
    }

    /// `llvm.mul lhs, rhs`.
    pub fn mul(
        &self,
        lhs: Value<'c, 'c>,
        rhs: Value<'c, 'c>,
    ) -> Result<Value<'c, 'c>, CodegenError> {
        self.value(llvm::mul(lhs, rhs, self.location))
    }

    /// A two-operand integer op of the LLVM dialect whose result has the
    /// operands' type (`llvm.add`, `llvm.sdiv`, `llvm.intr.smax`, ...).
    pub fn binary(
        &self,
        name: &str,
        lhs: Value<'c, 'c>,
        rhs: Value<'c, 'c>,
    ) -> Result<Value<'c, 'c>, CodegenError> {
        let op = self.build(
            OperationBuilder::new(name, self.location)
                .add_operands(&[lhs, rhs])
                .add_results(&[lhs.r#type()]),
        )?;
        self.value(op)
    }

    /// `llvm.icmp predicate lhs, rhs` (LLVM's `ICmpPredicate` number: 0
    /// eq, 1 ne, 2 slt, 3 sle, 4 sgt, 5 sge, 6 ult, 7 ule, 8 ugt, 9 uge).
    pub fn icmp(
        &self,
        predicate: i64,
        lhs: Value<'c, 'c>,
        rhs: Value<'c, 'c>,
    ) -> Result<Value<'c, 'c>, CodegenError> {
        let op = self.build(
            OperationBuilder::new("llvm.icmp", self.location)
                .add_attributes(&[self.attribute(
                    "predicate",
                    IntegerAttribute::new(self.types.i64, predicate),
                )])
                .add_operands(&[lhs, rhs])
                .add_results(&[self.types.i1]),
        )?;
        self.value(op)
    }

    /// `llvm.select condition, on_true, on_false`.
    pub fn select(
        &self,
        condition: Value<'c, 'c>,
        on_true: Value<'c, 'c>,
        on_false: Value<'c, 'c>,
    ) -> Result<Value<'c, 'c>, CodegenError> {
        let op = self.build(
            OperationBuilder::new("llvm.select", self.location)
                .add_operands(&[condition, on_true, on_false])
                .add_results(&[on_true.r#type()]),
        )?;
        self.value(op)
    }

    /// A one-operand cast (`llvm.trunc`, `llvm.zext`, `llvm.sext`) to `ty`.
    pub fn cast(
        &self,
        name: &str,
        value: Value<'c, 'c>,
        ty: Type<'c>,
    ) -> Result<Value<'c, 'c>, CodegenError> {
        let op = self.build(
            OperationBuilder::new(name, self.location)
                .add_operands(&[value])
                .add_results(&[ty]),
        )?;
        self.value(op)
    }

    /// An indirect `llvm.call callee(args)`, returning `result` or nothing.
    pub fn call(
        &self,
        callee: Value<'c, 'c>,
        args: &[Value<'c, 'c>],
        result: Option<Type<'c>>,
    ) -> Result<Option<Value<'c, 'c>>, CodegenError> {
        let mut operands = vec![callee];
        operands.extend_from_slice(args);
        let segments = [operands.len() as i32, 0];
        let mut builder = OperationBuilder::new("llvm.call", self.location)
            .add_operands(&operands)
            .add_attributes(&[
                self.attribute(
                    "operandSegmentSizes",
                    DenseI32ArrayAttribute::new(self.context, &segments),
                ),
                self.attribute(
                    "op_bundle_sizes",
                    DenseI32ArrayAttribute::new(self.context, &[]),
                ),
            ]);
        if let Some(result) = result {
            builder = builder.add_results(&[result]);
        }
        let op = self.append(self.build(builder)?);
        Ok(op.result(0).ok().map(Into::into))
    }

    /// If `status` is not zero, branches to the failure block with it;
    /// otherwise building goes on in a new block.
    pub fn check(
        &mut self,
        status: Value<'c, 'c>,
        zero: Value<'c, 'c>,
    ) -> Result<(), CodegenError> {
        let failed = self.build(
            OperationBuilder::new("llvm.icmp", self.location)
                .add_attributes(&[
                    self.attribute("predicate", IntegerAttribute::new(self.types.i64, NE))
                ])
                .add_operands(&[status, zero])
                .add_results(&[self.types.i1]),
        )?;
        let failed = self.value(failed)?;
        let next = self.region.insert_block_before(self.fail, Block::new(&[]));
        let branch = self.build(
            OperationBuilder::new("llvm.cond_br", self.location)
                .add_attributes(&[self.attribute(
                    "operandSegmentSizes",
                    DenseI32ArrayAttribute::new(self.context, &[1, 1, 0]),
                )])
                .add_operands(&[failed, status])
                .add_successors(&[&self.fail, &next]),
        )?;
        self.append(branch);
        self.block = next;
        Ok(())
    }

    /// `llvm.return value`, ending the current block.
    pub fn ret(&self, value: Value<'c, 'c>) {
        self.append(llvm::r#return(Some(value), self.location));
    }
}
