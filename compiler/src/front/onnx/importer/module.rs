//! The imported module around the recorded function: the function's
//! name, its arguments (types, typed attributes, names as locations), its
//! ops, the returned values with the outputs naming them, and the model's
//! graph name (the module's location). `front::build` makes the MLIR ops.

use super::super::IoInfo;
use super::super::dtype::TType;
use super::super::emit::Val;
use super::super::emit::ir::Op;

/// The names of the attributes of the function's arguments and results.
pub const NAME: &str = "tcc.name";
pub const UNSIGNED: &str = "tcc.unsigned";
pub const MINIFLOAT: &str = "tcc.minifloat";
pub const DIM_NAMES: &str = "tcc.dim_names";

/// The value of an argument's or result's attribute: a string (`tcc.name
/// = "x"`), a unit attribute (`tcc.unsigned`) or an array of strings
/// (`tcc.dim_names = ["batch", ""]`).
#[derive(Clone, Debug, PartialEq)]
pub enum ArgAttr {
    Str(String),
    Unit,
    Strs(Vec<String>),
}

/// A function argument: its type, its attributes (`tcc.name`, ...) and
/// its name (its location).
#[derive(Clone, Debug, PartialEq)]
pub struct Argument {
    pub ty: TType,
    pub attrs: Vec<(&'static str, ArgAttr)>,
    pub name: String,
}

/// The imported module, recorded: `front::build` makes its MLIR ops.
#[derive(Clone, Debug)]
pub struct Module {
    /// The model's graph name (the module's location).
    pub graph: String,
    pub function: String,
    pub arguments: Vec<Argument>,
    /// The returned values, and the outputs naming them.
    pub results: Vec<Val>,
    pub outputs: Vec<IoInfo>,
    /// For each output with symbolic extents (`--dim`), the dimension of
    /// each axis (`""` for a static one): its `tcc.dim_names`, from which
    /// the runtime sizes it (empty: none symbolic).
    pub output_dims: Vec<Option<Vec<String>>>,
    pub ops: Vec<Op>,
}

impl Module {
    /// The attributes of result `index`: its output's name, and whether it
    /// holds unsigned integers or minifloats.
    pub fn result_attrs(&self, index: usize) -> Vec<(&'static str, ArgAttr)> {
        let mut attrs = vec![(NAME, ArgAttr::Str(self.outputs[index].name.clone()))];
        attrs.extend(super::inputs::unsigned_mark(self.results[index].ty.dtype));
        if let Some(Some(names)) = self.output_dims.get(index) {
            attrs.push((DIM_NAMES, ArgAttr::Strs(names.clone())));
        }
        attrs
    }
}
