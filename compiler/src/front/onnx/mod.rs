//! The ONNX importer: an ONNX model (protobuf, parsed with prost from the
//! official schema) becomes a recorded TOSA-level module — one function
//! with the graph's inputs and outputs as named arguments and results —
//! whose MLIR ops `front::build` makes (through melior, no text), and
//! which the input phase takes like any other model.
//!
//! - [`tensor`]: initializers and constants (raw, typed and external data);
//! - [`importer`]: the graph walk, value table, signature;
//! - [`ops`]: one importer per ONNX op (TOSA, tcc composites, a few linalg
//!   ops where TOSA has no match), [`fold`] for values known at import
//!   time (shape computations);
//! - [`emit`]: records the function as typed ops ([`emit::ir`]), with
//!   the typed builder of `linalg.generic` bodies ([`emit::Body`]) the op
//!   importers use.
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
pub use emit::{Blob, ConstStyle};
pub use error::{ImportError, Result};

/// How to import.
#[derive(Clone, Debug)]
pub struct ImportOptions {
    /// How constants with more than 64 elements are recorded.
    pub const_style: ConstStyle,
    /// Import float64 tensors as float32 (tcc has no float64).
    pub demote_f64: bool,
    /// Static shapes for graph inputs with dynamic dimensions.
    pub input_shapes: Vec<(String, Vec<i64>)>,
    /// The structure of sequence and optional graph inputs, which their
    /// ONNX types do not give (a sequence's length and its elements'
    /// shapes, whether an optional holds a value): each becomes one
    /// tensor argument per element it holds (see [`Structure`]).
    pub structures: Vec<(String, Structure)>,
    /// The `dim_param`s to keep symbolic (`tcc compile --dim NAME=..`):
    /// they become `?` in the imported types, tied by name through each
    /// argument's `tcc.dim_names` (see `importer::symbolic`).
    pub symbolic_dims: Vec<SymbolicDim>,
    /// `dim_param`s fixed to a value (`tcc compile --fix-dim`, and each
    /// variant of `--specialize`): every input naming one takes the value,
    /// the others keeping theirs (symbolic ones too). A name is either
    /// fixed or symbolic.
    pub fixed_dims: Vec<(String, i64)>,
    /// The name of the imported function.
    pub function_name: String,
    /// Also return every float32 tensor that a node computes at run time,
    /// after the graph outputs (`tcc profile` records their ranges).
    pub expose_intermediates: bool,
    /// Locate each node's ops at the name of its first output tensor
    /// instead of the node's name (`tcc compile --quantize`: the names a
    /// calibration profile gives tensors).
    pub name_by_outputs: bool,
    /// The graph's half type (float16 or bfloat16) when its computing ops
    /// keep what they produce in f32 rather than rounding each result to
    /// that type:
    /// set when the graph is compiled with half storage of its own type
    /// (`--precision=fp16|bf16`), where `tcc-narrow-storage` rounds every
    /// tensor a kernel stores. The graph then compiles as its f32 twin
    /// does at that precision: one rounding per stored tensor, and no
    /// cast kernels between the ops (otherwise each op's f32 result is
    /// rounded, and widened again by the next op). Data movement keeps
    /// half tensors half unless it mixes them with f32 ones; outputs
    /// declared half are rounded at the end.
    pub round_half_at_storage: Option<DType>,
    /// Graph inputs whose values are given at compile time (`tcc compile
    /// --input-value NAME=...`): each is imported as a constant of its
    /// declared type, as an initializer would be, and is not an argument
    /// of the function. For inputs that hold what the import needs to know
    /// (a shape, axes, pads, sizes, a trip count: what
    /// [`ImportError::needs_value`] names), as TensorRT's build-time shape
    /// tensor values and onnxruntime's free-dimension overrides fix what
    /// the graph leaves open.
    pub input_values: Vec<(String, InputValue)>,
}

/// A graph input's value given at compile time
/// ([`ImportOptions::input_values`]).
#[derive(Clone, Debug, PartialEq)]
pub enum InputValue {
    /// A tensor (from a `.npy` or `.pb` file); its element type and shape
    /// must be the input's declared ones.
    Tensor(Box<proto::TensorProto>),
    /// The elements, as written (`1,-1,3`), of the input's declared
    /// element type: as many as its declared shape holds, or one for a
    /// scalar, or any number for a 1-D input of a dynamic extent.
    Literal(Vec<String>),
}

/// A `dim_param` kept symbolic and the values it takes (`tcc compile
/// --dim NAME=MIN..MAX`): the import probes the graph at values in the
/// range (see `importer::symbolic`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SymbolicDim {
    pub name: String,
    pub min: i64,
    pub max: i64,
}

impl Default for ImportOptions {
    fn default() -> Self {
        Self {
            const_style: ConstStyle::Resource,
            demote_f64: false,
            input_shapes: Vec::new(),
            structures: Vec::new(),
            symbolic_dims: Vec::new(),
            fixed_dims: Vec::new(),
            function_name: "main".into(),
            expose_intermediates: false,
            name_by_outputs: false,
            round_half_at_storage: None,
            input_values: Vec::new(),
        }
    }
}

/// What a sequence or optional graph input holds for one compilation:
/// tcc's compiled functions take tensors, so a sequence input becomes one
/// argument per element (named `NAME[i]`), an optional one argument for
/// its value (named `NAME`, or `NAME[i]` for an optional sequence) or
/// none when it is empty. Sequence and optional graph outputs are returned
/// the same way.
#[derive(Clone, Debug, PartialEq)]
pub enum Structure {
    /// A tensor of this shape.
    Tensor(Vec<i64>),
    /// A sequence of tensors of these shapes.
    Sequence(Vec<Vec<i64>>),
    /// An optional: empty, or holding a tensor or a sequence.
    Optional(Option<Box<Structure>>),
}

impl Structure {
    /// The tensors it holds: their names (from `name`, the graph input's)
    /// and shapes, in argument order.
    pub fn tensors(&self, name: &str) -> Vec<(String, Vec<i64>)> {
        match self {
            Structure::Tensor(shape) => vec![(name.to_string(), shape.clone())],
            Structure::Sequence(shapes) => shapes
                .iter()
                .enumerate()
                .map(|(i, s)| (format!("{name}[{i}]"), s.clone()))
                .collect(),
            Structure::Optional(None) => Vec::new(),
            Structure::Optional(Some(inner)) => inner.tensors(name),
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
    /// The module, recorded (`front::build` makes its MLIR ops).
    pub module: importer::module::Module,
    /// The bytes of the module's `dense_resource` constants
    /// ([`ConstStyle::Resource`]; empty with [`ConstStyle::Hex`]).
    pub blobs: Vec<Blob>,
    /// The function's name.
    pub function: String,
    pub inputs: Vec<IoInfo>,
    pub outputs: Vec<IoInfo>,
    /// The model's default-domain opset.
    pub opset: i64,
    /// Whether [`Imported::blobs`] lie in a read-only mapping of the model
    /// file ([`import_file`]), whose pages the kernel can drop and read
    /// again from the file: a blob that must be copied (to align it) then
    /// releases what it has copied.
    pub mapped: bool,
}

/// Parses serialized ONNX model bytes (copied: see [`parse_shared`]).
pub fn parse_model(bytes: &[u8]) -> Result<proto::ModelProto> {
    parse_shared(bytes::Bytes::copy_from_slice(bytes))
}

/// Parses serialized ONNX model bytes without copying the tensors' raw
/// data: each `raw_data` is a slice of `bytes` (of the mapped file, for
/// [`import_file`]).
pub fn parse_shared(bytes: bytes::Bytes) -> Result<proto::ModelProto> {
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
    import_shared(bytes::Bytes::copy_from_slice(bytes), base_dir, options)
}

/// As [`import_bytes`], sharing `bytes` with the imported constants.
pub fn import_shared(
    bytes: bytes::Bytes,
    base_dir: Option<&Path>,
    options: &ImportOptions,
) -> Result<Imported> {
    let model = parse_shared(bytes)?;
    importer::import_model(&model, base_dir, options)
}

/// The model file's bytes, mapped read-only rather than read: weights are
/// then paged in from the page cache as they are used, and shared by the
/// importer's constants and (with [`ConstStyle::Resource`]) the compiler's
/// blobs, instead of being copied. A file that cannot be mapped (a pipe,
/// `/proc`) is read.
pub fn map_file(path: &Path) -> std::io::Result<bytes::Bytes> {
    map_or_read(path).map(|(bytes, _)| bytes)
}

/// [`map_file`], saying whether the bytes are mapped (`true`) or read.
fn map_or_read(path: &Path) -> std::io::Result<(bytes::Bytes, bool)> {
    let file = std::fs::File::open(path)?;
    let metadata = file.metadata()?;
    if metadata.is_file() && metadata.len() > 0 {
        // SAFETY: the mapping is read-only and private; as with any mapped
        // input (onnxruntime maps models too), a file truncated by another
        // process while tcc runs is outside what tcc can guard against.
        if let Ok(map) = unsafe { memmap2::Mmap::map(&file) } {
            return Ok((bytes::Bytes::from_owner(map), true));
        }
    }
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut &file, &mut bytes)?;
    Ok((bytes.into(), false))
}

/// The 16-bit float type a *half graph* computes in: a model whose
/// floating-point interface (graph inputs and outputs) is all float16, or
/// all bfloat16, or, where the interface has no floating-point tensor,
/// whose floating-point initializers are. Such a graph was exported to run
/// in half precision (`model.half()`), so `tcc compile` stores its weights
/// and intermediates in that type by default (`--precision` says otherwise).
/// `None` for anything else: an f32 or f64 model, or one that mixes types
/// at its edges.
pub fn half_graph_type(model: &proto::ModelProto) -> Option<DType> {
    use proto::type_proto;
    let graph = model.graph.as_ref()?;
    let floats = |codes: &mut dyn Iterator<Item = i32>| -> Vec<DType> {
        codes
            .filter_map(DType::from_onnx)
            .filter(|t| matches!(t, DType::F32 | DType::F16 | DType::BF16 | DType::F64))
            .collect()
    };
    let interface = floats(
        &mut graph
            .input
            .iter()
            .chain(&graph.output)
            .filter(|value| !graph.initializer.iter().any(|init| init.name == value.name))
            .filter_map(|value| match value.r#type.as_ref()?.value.as_ref()? {
                type_proto::Value::TensorType(tensor) => Some(tensor.elem_type),
                _ => None,
            }),
    );
    let types = if interface.is_empty() {
        floats(&mut graph.initializer.iter().map(|init| init.data_type))
    } else {
        interface
    };
    let first = *types.first()?;
    (matches!(first, DType::F16 | DType::BF16) && types.iter().all(|t| *t == first))
        .then_some(first)
}

/// [`half_graph_type`] of the model file at `path`, parsed without copying
/// its weights; `None` when it cannot be read or parsed (the import then
/// says why).
pub fn half_graph_type_of_file(path: &Path) -> Option<DType> {
    let bytes = map_file(path).ok()?;
    half_graph_type(&parse_shared(bytes).ok()?)
}

/// Imports the model file at `path`.
pub fn import_file(path: &Path, options: &ImportOptions) -> Result<Imported> {
    let (bytes, mapped) = map_or_read(path)
        .map_err(|e| ImportError::new(format!("cannot read {}: {e}", path.display())))?;
    let base_dir = path.parent().map(|p| {
        if p.as_os_str().is_empty() {
            Path::new(".")
        } else {
            p
        }
    });
    let imported =
        import_shared(bytes, base_dir, options).map_err(|e| e.context(path.display()))?;
    Ok(Imported { mapped, ..imported })
}
