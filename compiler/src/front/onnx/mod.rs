//! The ONNX importer: an ONNX model (protobuf, parsed with prost from the
//! official schema) becomes TOSA-level MLIR text — one `func.func` with
//! the graph's inputs and outputs as named arguments and results — that
//! the input phase takes like any other model.
//!
//! - [`tensor`]: initializers and constants (raw, typed and external data);
//! - [`importer`]: the graph walk, value table, signature;
//! - [`ops`]: one importer per ONNX op (TOSA, tcc composites, a few linalg
//!   ops where TOSA has no match), [`fold`] for values known at import
//!   time (shape computations);
//! - [`emit`]: the MLIR text writer.
//!
//! This module depends on nothing else in tcc (only `prost` and `libc`), so that the
//! fuzz target can compile it on its own.

pub mod dtype;
pub mod emit;
pub mod error;
pub mod fold;
pub mod importer;
pub mod node;
pub mod ops;
pub mod proto;
pub mod tensor;

use std::path::Path;

pub use dtype::{DType, TType};
pub use emit::ConstStyle;
pub use error::{ImportError, Result};

/// How to import.
#[derive(Clone, Debug)]
pub struct ImportOptions {
    /// How constants with more than 64 elements are written.
    pub const_style: ConstStyle,
    /// Import float64 tensors as float32 (tcc has no float64).
    pub demote_f64: bool,
    /// Static shapes for graph inputs with dynamic dimensions.
    pub input_shapes: Vec<(String, Vec<i64>)>,
    /// The name of the imported function.
    pub function_name: String,
    /// Also return every float32 tensor that a node computes at run time,
    /// after the graph outputs (`tcc profile` records their ranges).
    pub expose_intermediates: bool,
    /// Locate each node's ops at the name of its first output tensor
    /// instead of the node's name (`tcc compile --quantize`: the names a
    /// calibration profile gives tensors).
    pub name_by_outputs: bool,
}

impl Default for ImportOptions {
    fn default() -> Self {
        Self {
            const_style: ConstStyle::Resource,
            demote_f64: false,
            input_shapes: Vec::new(),
            function_name: "main".into(),
            expose_intermediates: false,
            name_by_outputs: false,
        }
    }
}

/// A graph input or output.
#[derive(Clone, Debug, PartialEq)]
pub struct IoInfo {
    pub name: String,
    pub ty: TType,
}

/// An imported model.
#[derive(Clone, Debug)]
pub struct Imported {
    /// The MLIR module as text.
    pub mlir: String,
    /// The function's name.
    pub function: String,
    pub inputs: Vec<IoInfo>,
    pub outputs: Vec<IoInfo>,
    /// The model's default-domain opset.
    pub opset: i64,
}

/// Parses serialized ONNX model bytes.
pub fn parse_model(bytes: &[u8]) -> Result<proto::ModelProto> {
    use prost::Message as _;
    if bytes.is_empty() {
        return Err(ImportError::new("not an ONNX model: the file is empty"));
    }
    proto::ModelProto::decode(bytes).map_err(|e| {
        ImportError::new(format!(
            "not an ONNX model (truncated or not protobuf): {e}"
        ))
    })
}

/// Imports serialized model bytes; external data is read relative to
/// `base_dir`.
pub fn import_bytes(
    bytes: &[u8],
    base_dir: Option<&Path>,
    options: &ImportOptions,
) -> Result<Imported> {
    let model = parse_model(bytes)?;
    importer::import_model(&model, base_dir, options)
}

/// Imports the model file at `path`.
pub fn import_file(path: &Path, options: &ImportOptions) -> Result<Imported> {
    let bytes = std::fs::read(path)
        .map_err(|e| ImportError::new(format!("cannot read {}: {e}", path.display())))?;
    let base_dir = path.parent().map(|p| {
        if p.as_os_str().is_empty() {
            Path::new(".")
        } else {
            p
        }
    });
    import_bytes(&bytes, base_dir, options).map_err(|e| e.context(path.display()))
}
