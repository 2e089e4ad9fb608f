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
    parse_model_dims(session, path, input_shapes, &[], &[], &[], None)
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

/// As [`parse_model_with`], keeping the dimensions `dims` names symbolic
/// (`tcc compile --dim`): an ONNX model's `dim_param`s of those names
/// become `?`, and the module records the ranges as `tcc.dims`
/// (`#tcc.dims`), which `tcc-check-supported` checks the arguments
/// against. `round_half_at_storage`: the type of a half graph compiled
/// with half storage of that type, whose ops keep their f32 results
/// ([`ImportOptions::round_half_at_storage`]).
pub fn parse_model_dims<'c>(
    session: &'c Session,
    path: &Path,
    input_shapes: &[(String, Vec<i64>)],
    dims: &[tcc_dialects::dims::DimRange],
    structures: &[(String, Structure)],
    fixed: &[(String, i64)],
    round_half_at_storage: Option<crate::front::onnx::DType>,
) -> Result<Module<'c>> {
    let module = if is_onnx(path) {
        let options = ImportOptions {
            input_shapes: input_shapes.to_vec(),
            structures: structures.to_vec(),
            symbolic_dims: symbolic_dims(dims),
            fixed_dims: fixed.to_vec(),
            round_half_at_storage,
            const_style: ConstStyle::Resource,
            ..ImportOptions::default()
        };
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
        module
    } else if !input_shapes.is_empty() || !structures.is_empty() || !fixed.is_empty() {
        bail!(
            "{}: --input-shape, --fix-dim, --sequence and --empty-optional apply to ONNX models (.onnx); an MLIR model's shapes are its function types",
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
