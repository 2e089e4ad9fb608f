//! `tcc import model.onnx -o model.mlir`, and the model loading shared by
//! `tcc compile` and `tcc run`: `.onnx` files are imported first, anything
//! else is parsed as MLIR.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, anyhow, bail};
use clap::{Args, ValueEnum};
use melior::ir::Module;

use super::session::Session;
use crate::front::onnx::{self, ConstStyle, ImportOptions, Structure};

/// How `tcc import` writes large constants.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Constants {
    /// Dense elements attributes (`dense<"0x...">` hex literals).
    Hex,
    /// `dense_resource<...>` blobs in the file's resource section.
    Resource,
}

#[derive(Args, Debug)]
pub struct ImportArgs {
    /// The ONNX model (.onnx).
    pub input: PathBuf,
    /// Where to write the MLIR (stdout when omitted).
    #[arg(short = 'o', long = "output")]
    pub output: Option<PathBuf>,
    /// A shape for a graph input: fills its dynamic dimensions and may change its batch (first dimension): NAME=32x3x224x224 (repeat).
    #[arg(long = "input-shape", value_name = "NAME=DIMS")]
    pub input_shapes: Vec<String>,
    /// Keep a dynamic dimension symbolic, with its range: batch=1..64 (repeat); its dim_params stay `?` and the module records the ranges (tcc.dims).
    #[arg(long = "dim", value_name = "NAME=MIN..MAX", value_parser = parse_dim)]
    pub dims: Vec<tcc_dialects::dims::DimRange>,
    /// The structure of a sequence graph input: its elements' shapes, NAME=2x3,2x3,4 (three tensors; `scalar` for a 0-d one; NAME= an empty sequence); repeat per input. Its elements become arguments NAME[0], NAME[1], ...
    #[arg(long = "sequence", value_name = "NAME=SHAPES")]
    pub sequences: Vec<String>,
    /// An optional graph input that holds no value (it gets no argument); repeat per input.
    #[arg(long = "empty-optional", value_name = "NAME")]
    pub empty_optionals: Vec<String>,
    /// Give a graph input its value at compile time: NAME=0,2 (elements of its declared type), NAME=@file.npy or NAME=@file.pb (repeat). It becomes a constant, not an argument: for inputs holding what tcc needs to know when it compiles (a shape, axes, pads, sizes, a trip count).
    #[arg(long = "input-value", value_name = "NAME=VALUES", value_parser = parse_input_value_arg)]
    pub input_values: Vec<(String, onnx::InputValue)>,
    /// Import float64 tensors as float32 (tcc has no float64).
    #[arg(long)]
    pub demote_f64: bool,
    /// How to write constants with more than 64 elements.
    #[arg(long, value_enum, default_value = "resource")]
    pub constants: Constants,
    /// Write every op in MLIR's generic op syntax (`"tosa.add"(%0, %1) : ...`).
    #[arg(long)]
    pub raw: bool,
}

/// `--input-value` as clap parses it (a message, not an error chain).
pub fn parse_input_value_arg(
    text: &str,
) -> std::result::Result<(String, onnx::InputValue), String> {
    parse_input_value(text).map_err(|e| format!("{e:#}"))
}

/// `--dim NAME=MIN..MAX`.
pub fn parse_dim(text: &str) -> std::result::Result<tcc_dialects::dims::DimRange, String> {
    text.parse()
}

/// Records `--dim`'s ranges on the module (`tcc.dims`); nothing without
/// them. Each name once.
pub(crate) fn attach_dims(
    session: &Session,
    module: &Module,
    dims: &[tcc_dialects::dims::DimRange],
) -> Result<()> {
    if dims.is_empty() {
        return Ok(());
    }
    for (i, d) in dims.iter().enumerate() {
        if dims[..i].iter().any(|e| e.name == d.name) {
            bail!("--dim declares '{}' twice", d.name);
        }
    }
    // An MLIR model that uses no tcc op has not loaded the tcc dialect,
    // whose attribute this is.
    session.context.get_or_load_dialect("tcc");
    let attribute = tcc_dialects::dims::Dims(dims.to_vec())
        .to_attribute(&session.context)
        .ok_or_else(|| anyhow!("--dim: invalid ranges {dims:?}"))?;
    crate::ir::util::set_discardable_attribute(
        module.as_operation(),
        tcc_dialects::dims::DIMS,
        attribute,
    );
    Ok(())
}

/// Parses `NAME=2x3x4`.
pub fn parse_input_shape(spec: &str) -> Result<(String, Vec<i64>)> {
    let (name, dims) = spec
        .rsplit_once('=')
        .ok_or_else(|| anyhow!("--input-shape {spec}: expected NAME=DIMS, e.g. x=1x3x224x224"))?;
    let dims = if dims.is_empty() {
        Vec::new()
    } else {
        dims.split('x')
            .map(|d| {
                d.parse::<i64>()
                    .ok()
                    .filter(|&d| d >= 0)
                    .ok_or_else(|| anyhow!("--input-shape {spec}: '{d}' is not a dimension"))
            })
            .collect::<Result<Vec<_>>>()?
    };
    Ok((name.to_string(), dims))
}

/// The structures of sequence and optional graph inputs from
/// `--sequence NAME=SHAPE,SHAPE,...` (`NAME=`: an empty sequence) and
/// `--empty-optional NAME`; each input once.
pub fn parse_structures(
    sequences: &[String],
    empty_optionals: &[String],
) -> Result<Vec<(String, Structure)>> {
    let mut structures: Vec<(String, Structure)> = Vec::new();
    for spec in sequences {
        let (name, shapes) = spec.rsplit_once('=').ok_or_else(|| {
            anyhow!("--sequence {spec}: expected NAME=SHAPES, e.g. seq=2x3,2x3,4 (NAME= for an empty sequence)")
        })?;
        if name.is_empty() {
            bail!("--sequence {spec}: the graph input's name is missing");
        }
        let shapes = if shapes.is_empty() {
            Vec::new()
        } else {
            shapes
                .split(',')
                .map(|shape| {
                    if shape == "scalar" {
                        return Ok(Vec::new());
                    }
                    if shape.is_empty() {
                        bail!(
                            "--sequence {spec}: '' is not a shape (dimensions joined by x, e.g. 2x3, or scalar)"
                        );
                    }
                    parse_input_shape(&format!("{name}={shape}"))
                        .map(|(_, dims)| dims)
                        .map_err(|_| {
                            anyhow!("--sequence {spec}: '{shape}' is not a shape (dimensions joined by x, e.g. 2x3, or scalar)")
                        })
                })
                .collect::<Result<Vec<_>>>()?
        };
        structures.push((name.to_string(), Structure::Sequence(shapes)));
    }
    for name in empty_optionals {
        structures.push((name.clone(), Structure::Optional(None)));
    }
    for (i, (name, _)) in structures.iter().enumerate() {
        if structures[..i].iter().any(|(n, _)| n == name) {
            bail!("--sequence/--empty-optional give the structure of '{name}' twice");
        }
    }
    Ok(structures)
}

pub fn is_onnx(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("onnx"))
}

/// Builds an imported model's MLIR ops in the session's context (no text
/// is written or parsed) and verifies them; its `dense_resource`
/// constants' blobs are the importer's bytes, shared with the mapped
/// model file rather than copied.
pub fn build_imported<'c>(
    session: &'c Session,
    name: &str,
    imported: onnx::Imported,
) -> Result<Module<'c>> {
    use melior::ir::operation::OperationLike;
    let module = crate::front::build::build_module(&session.context, imported)
        .map_err(|e| anyhow!("{name}: {e}"))?;
    if !module.as_operation().verify() {
        return Err(session.failure(&format!("{name}: verification failed")));
    }
    Ok(module)
}

/// The runtime's element type for an imported one (the narrow integer
/// types travel one value a byte).
pub(crate) fn runtime_dtype(dtype: onnx::DType) -> Option<tcc_runtime::DType> {
    Some(match dtype {
        onnx::DType::F32 => tcc_runtime::DType::F32,
        onnx::DType::F16 => tcc_runtime::DType::F16,
        onnx::DType::I64 => tcc_runtime::DType::I64,
        onnx::DType::I32 => tcc_runtime::DType::I32,
        onnx::DType::I8 => tcc_runtime::DType::I8,
        onnx::DType::Bool => tcc_runtime::DType::Bool,
        onnx::DType::BF16 => tcc_runtime::DType::BF16,
        onnx::DType::F64 => tcc_runtime::DType::F64,
        onnx::DType::I16 => tcc_runtime::DType::I16,
        onnx::DType::U8 => tcc_runtime::DType::U8,
        onnx::DType::U16 => tcc_runtime::DType::U16,
        onnx::DType::U32 => tcc_runtime::DType::U32,
        onnx::DType::U64 => tcc_runtime::DType::U64,
        // One value a byte at the interface (see the importer's narrow types).
        onnx::DType::I4 | onnx::DType::I2 => tcc_runtime::DType::I8,
        onnx::DType::U4 | onnx::DType::U2 => tcc_runtime::DType::U8,
        onnx::DType::F8E4M3FN => tcc_runtime::DType::F8E4M3FN,
        onnx::DType::F8E4M3FNUZ => tcc_runtime::DType::F8E4M3FNUZ,
        onnx::DType::F8E5M2 => tcc_runtime::DType::F8E5M2,
        onnx::DType::F8E5M2FNUZ => tcc_runtime::DType::F8E5M2FNUZ,
        onnx::DType::F4E2M1 => tcc_runtime::DType::F4E2M1,
    })
}

/// The ONNX element type of a host tensor's (the first whose runtime type
/// it is: int8 rather than int4).
fn onnx_dtype(dtype: tcc_runtime::DType) -> Option<onnx::DType> {
    (0..64)
        .filter_map(onnx::DType::from_onnx)
        .find(|d| runtime_dtype(*d) == Some(dtype))
}

/// `--input-value NAME=@file.npy`, `NAME=@file.pb` (an ONNX TensorProto,
/// as test data sets store them) or `NAME=1,-1,3` (the elements, of the
/// input's declared element type).
pub fn parse_input_value(spec: &str) -> Result<(String, onnx::InputValue)> {
    let (name, value) = spec.split_once('=').ok_or_else(|| {
        anyhow!("--input-value {spec}: expected NAME=VALUES, NAME=@file.npy or NAME=@file.pb, e.g. axes=0,2")
    })?;
    if name.is_empty() {
        bail!("--input-value {spec}: the input's name is empty");
    }
    let value = if let Some(path) = value.strip_prefix('@') {
        let path = Path::new(path);
        if path.extension().is_some_and(|e| e == "pb") {
            use prost::Message as _;
            let bytes = std::fs::read(path)
                .with_context(|| format!("--input-value {name}: cannot read {}", path.display()))?;
            let proto = onnx::proto::TensorProto::decode(bytes.as_slice()).map_err(|e| {
                anyhow!(
                    "--input-value {name}: {} is not an ONNX TensorProto: {e}",
                    path.display()
                )
            })?;
            onnx::InputValue::Tensor(Box::new(proto))
        } else {
            let tensor = tcc_runtime::npy::read_npy(path)
                .map_err(|e| anyhow!("--input-value {name}: {e}"))?;
            let dtype = onnx_dtype(tensor.dtype).ok_or_else(|| {
                anyhow!(
                    "--input-value {name}: {} holds {:?} elements, which no ONNX type matches",
                    path.display(),
                    tensor.dtype
                )
            })?;
            onnx::InputValue::Tensor(Box::new(onnx::proto::TensorProto {
                dims: tensor.shape.iter().map(|&d| d as i64).collect(),
                data_type: dtype.onnx_code(),
                raw_data: tensor.bytes.to_vec().into(),
                ..Default::default()
            }))
        }
    } else {
        onnx::InputValue::Literal(value.split(',').map(str::to_string).collect())
    };
    Ok((name.to_string(), value))
}

/// The module attribute naming the graph inputs given their values at
/// compile time (`--input-value`), each as `NAME = VALUES`: the artifact's
/// metadata carries it and `tcc inspect` shows it, since the compiled
/// function no longer takes those inputs.
pub const GIVEN_INPUTS: &str = "tcc.given_inputs";

/// The most values of a given input that [`GIVEN_INPUTS`] spells out.
const GIVEN_VALUES_SHOWN: usize = 16;

/// `NAME = VALUES` for an input given at compile time (the first
/// [`GIVEN_VALUES_SHOWN`] values, then how many there are).
fn describe_given(name: &str, value: &onnx::InputValue) -> String {
    let (values, count, shape) = match value {
        onnx::InputValue::Literal(texts) => (
            texts
                .iter()
                .map(|t| t.trim().to_string())
                .collect::<Vec<_>>(),
            texts.len(),
            None,
        ),
        onnx::InputValue::Tensor(proto) => match onnx::tensor::decode(proto, None, name) {
            Ok(c) => {
                let shown: Vec<String> = (0..c.numel().min(GIVEN_VALUES_SHOWN))
                    .map(|i| {
                        if c.dtype.is_float() {
                            format!("{}", c.f64_at(i))
                        } else {
                            format!("{}", c.i64_at(i))
                        }
                    })
                    .collect();
                (shown, c.numel(), Some(c.ty().mlir()))
            }
            Err(_) => (Vec::new(), 0, None),
        },
    };
    let more = if count > values.len() {
        format!(", ... ({count} values)")
    } else {
        String::new()
    };
    let values = values
        .iter()
        .take(GIVEN_VALUES_SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    match shape {
        Some(ty) => format!("{name} = [{values}{more}] : {ty}"),
        None => format!("{name} = [{values}{more}]"),
    }
}

/// Records the inputs given at compile time on the module
/// ([`GIVEN_INPUTS`]); nothing without them.
fn record_given_inputs(session: &Session, module: &Module, values: &[(String, onnx::InputValue)]) {
    if values.is_empty() {
        return;
    }
    use melior::ir::attribute::{ArrayAttribute, StringAttribute};
    let context = &session.context;
    let entries: Vec<melior::ir::Attribute> = values
        .iter()
        .map(|(name, value)| StringAttribute::new(context, &describe_given(name, value)).into())
        .collect();
    crate::ir::util::set_discardable_attribute(
        module.as_operation(),
        GIVEN_INPUTS,
        ArrayAttribute::new(context, &entries).into(),
    );
}

/// The inputs given at compile time that `module` records
/// ([`GIVEN_INPUTS`]), as `NAME = VALUES`.
pub fn given_inputs(module: &Module) -> Vec<String> {
    use melior::ir::operation::OperationLike;
    let Ok(attribute) = module.as_operation().attribute(GIVEN_INPUTS) else {
        return Vec::new();
    };
    let Ok(array) = melior::ir::attribute::ArrayAttribute::try_from(attribute) else {
        return Vec::new();
    };
    (0..array.len())
        .filter_map(|i| array.element(i).ok())
        .filter_map(crate::ir::util::string_value)
        .collect()
}

/// How an ONNX model's graph inputs are imported, from the flags `tcc
/// compile` and `tcc import` share (`--input-shape`, `--dim`,
/// `--sequence`/`--empty-optional`, `--fix-dim`, `--input-value`).
#[derive(Clone, Debug, Default)]
pub struct InputSpec {
    pub shapes: Vec<(String, Vec<i64>)>,
    pub dims: Vec<tcc_dialects::dims::DimRange>,
    pub structures: Vec<(String, Structure)>,
    pub fixed: Vec<(String, i64)>,
    pub values: Vec<(String, onnx::InputValue)>,
    /// The type of a half graph compiled with half storage of that type,
    /// whose ops keep their f32 results
    /// ([`ImportOptions::round_half_at_storage`]).
    pub round_half_at_storage: Option<onnx::DType>,
}

impl InputSpec {
    /// The importer's options for it (constants as resources).
    pub fn import_options(&self) -> ImportOptions {
        ImportOptions {
            input_shapes: self.shapes.clone(),
            structures: self.structures.clone(),
            symbolic_dims: symbolic_dims(&self.dims),
            fixed_dims: self.fixed.clone(),
            input_values: self.values.clone(),
            round_half_at_storage: self.round_half_at_storage,
            const_style: ConstStyle::Resource,
            ..ImportOptions::default()
        }
    }

    /// Whether it asks for what only an ONNX model's import does.
    fn needs_onnx(&self) -> bool {
        !self.shapes.is_empty()
            || !self.structures.is_empty()
            || !self.fixed.is_empty()
            || !self.values.is_empty()
    }
}

/// Loads a model: `.onnx` files through the importer, others as MLIR.
pub fn parse_model<'c>(session: &'c Session, path: &Path) -> Result<Module<'c>> {
    parse_model_with(session, path, &[])
}

/// As [`parse_model`], with `--input-shape` overrides (ONNX models only).
pub fn parse_model_with<'c>(
    session: &'c Session,
    path: &Path,
    input_shapes: &[(String, Vec<i64>)],
) -> Result<Module<'c>> {
    let spec = InputSpec {
        shapes: input_shapes.to_vec(),
        ..InputSpec::default()
    };
    parse_model_dims(session, path, &spec)
}

/// The import's symbolic dimensions for `--dim` ranges.
pub(crate) fn symbolic_dims(
    dims: &[tcc_dialects::dims::DimRange],
) -> Vec<crate::front::onnx::SymbolicDim> {
    dims.iter()
        .map(|d| crate::front::onnx::SymbolicDim {
            name: d.name.clone(),
            min: d.min,
            max: d.max,
        })
        .collect()
}

/// As [`parse_model_with`], importing an ONNX model's inputs as `spec`
/// says; the dimensions `spec.dims` names stay symbolic (`tcc compile
/// --dim`): an ONNX model's `dim_param`s of those names become `?`, and
/// the module records the ranges as `tcc.dims` (`#tcc.dims`), which
/// `tcc-check-supported` checks the arguments against.
pub fn parse_model_dims<'c>(
    session: &'c Session,
    path: &Path,
    spec: &InputSpec,
) -> Result<Module<'c>> {
    let dims = spec.dims.as_slice();
    let module = if is_onnx(path) {
        let options = spec.import_options();
        // Large models take seconds to import and build: a spinner on a
        // terminal (see `progress`).
        let large = std::fs::metadata(path).is_ok_and(|m| m.len() > 16 << 20);
        let progress = if large {
            super::progress::Progress::spinner("tcc")
        } else {
            super::progress::Progress::none()
        };
        progress.message(format!("importing {}", path.display()));
        let imported = onnx::import_file(path, &options).map_err(|e| anyhow!("{e}"))?;
        progress.message(format!("building the imported {}", path.display()));
        let module = build_imported(session, &path.display().to_string(), imported)?;
        drop(progress);
        record_given_inputs(session, &module, &spec.values);
        module
    } else if spec.needs_onnx() {
        bail!(
            "{}: --input-shape, --fix-dim, --input-value, --sequence and --empty-optional apply to ONNX models (.onnx); an MLIR model's shapes are its function types",
            path.display()
        )
    } else {
        session.parse_file(path)?
    };
    // An empty file parses to an empty module, and a module of private
    // declarations has nothing to call: either would compile to an
    // artifact with no functions.
    use melior::ir::RegionLike;
    use melior::ir::operation::OperationLike;
    let functions: Vec<_> = crate::ir::util::collect_ops(module.as_operation())
        .into_iter()
        .filter(|op| crate::ir::util::op_name(op) == "func.func")
        .collect();
    if functions.is_empty() {
        bail!(
            "{}: the model defines no functions (func.func): there is nothing to compile",
            path.display()
        );
    }
    attach_dims(session, &module, dims)?;
    let callable = functions.iter().any(|op| {
        let private = op
            .attribute("sym_visibility")
            .ok()
            .and_then(crate::ir::util::string_value)
            .as_deref()
            == Some("private");
        let has_body = op.region(0).is_ok_and(|r| r.first_block().is_some());
        !private && has_body
    });
    if !callable {
        bail!(
            "{}: the model defines no public function with a body (only private functions or declarations): there is nothing to compile",
            path.display()
        );
    }
    Ok(module)
}

/// Prints a module with locations (the ONNX node names) into `out`, piece
/// by piece as MLIR prints it (a large model's blobs print as hundreds of
/// megabytes of hex: never held as one string); in the generic op syntax
/// with `generic`.
fn print_with_locations(
    module: &Module,
    generic: bool,
    out: &mut dyn std::io::Write,
) -> std::io::Result<()> {
    struct Sink<'a> {
        out: &'a mut dyn std::io::Write,
        error: Option<std::io::Error>,
    }
    unsafe extern "C" fn collect(part: mlir_sys::MlirStringRef, user_data: *mut std::ffi::c_void) {
        let sink = unsafe { &mut *(user_data as *mut Sink) };
        if sink.error.is_some() || part.length == 0 {
            return;
        }
        let text = unsafe { std::slice::from_raw_parts(part.data as *const u8, part.length) };
        if let Err(e) = sink.out.write_all(text) {
            sink.error = Some(e);
        }
    }
    let mut sink = Sink { out, error: None };
    unsafe {
        let flags = mlir_sys::mlirOpPrintingFlagsCreate();
        mlir_sys::mlirOpPrintingFlagsEnableDebugInfo(flags, true, false);
        if generic {
            mlir_sys::mlirOpPrintingFlagsPrintGenericOpForm(flags);
        }
        mlir_sys::mlirOperationPrintWithFlags(
            module.as_operation().to_raw(),
            flags,
            Some(collect),
            &mut sink as *mut Sink as *mut std::ffi::c_void,
        );
        mlir_sys::mlirOpPrintingFlagsDestroy(flags);
    }
    if let Some(error) = sink.error {
        return Err(error);
    }
    sink.out.write_all(b"\n")
}

pub fn run(args: &ImportArgs) -> Result<()> {
    if !is_onnx(&args.input) && args.input.extension().is_some() {
        bail!(
            "{}: tcc import reads ONNX models (.onnx)",
            args.input.display()
        );
    }
    let options = ImportOptions {
        const_style: match args.constants {
            Constants::Hex => ConstStyle::Hex,
            Constants::Resource => ConstStyle::Resource,
        },
        demote_f64: args.demote_f64,
        input_shapes: args
            .input_shapes
            .iter()
            .map(|s| parse_input_shape(s))
            .collect::<Result<_>>()?,
        symbolic_dims: symbolic_dims(&args.dims),
        structures: parse_structures(&args.sequences, &args.empty_optionals)?,
        input_values: args.input_values.clone(),
        ..ImportOptions::default()
    };
    let imported = onnx::import_file(&args.input, &options).map_err(|e| anyhow!("{e}"))?;
    // Verify before writing anything.
    let session = Session::new();
    let module = build_imported(&session, &args.input.display().to_string(), imported)?;
    attach_dims(&session, &module, &args.dims)?;
    match &args.output {
        Some(path) => tcc_runtime::output_file::write_output(path, false, |out| {
            let mut out = std::io::BufWriter::with_capacity(1 << 20, out);
            print_with_locations(&module, args.raw, &mut out)?;
            std::io::Write::flush(&mut out)
        })
        .with_context(|| format!("cannot write {}", path.display())),
        None => {
            let mut text = Vec::new();
            print_with_locations(&module, args.raw, &mut text)?;
            super::write_stdout(&String::from_utf8_lossy(&text))
        }
    }
}
