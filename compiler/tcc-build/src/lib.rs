//! `tcc-build`: compiles tcc models from a `build.rs` and generates typed
//! Rust bindings for them.
//!
//! ```no_run
//! // build.rs
//! fn main() {
//!     tcc_build::Build::new()
//!         .model("mlp", "models/mlp.mlir")          // embedded in the binary, loaded from memory
//!         .linked_model("cnn", "models/cnn.onnx")   // linked as a static library
//!         .compile()
//!         .unwrap_or_else(|e| panic!("{e}"));
//! }
//! ```
//!
//! ```text
//! // main.rs
//! include!(concat!(env!("OUT_DIR"), "/tcc_models.rs"));
//! let runtime = tcc_runtime::Runtime::new(tcc_runtime::DeviceSelector::Default)?;
//! let mut mlp = mlp::Mlp::new(&runtime)?;
//! let y: Vec<f32> = mlp.mlp(&[0.25; mlp::mlp_io::INPUT0_LEN])?;
//! ```
//!
//! For each model the generated module has `model()` (the
//! `tcc_runtime::Model`), a struct named after the model holding a session,
//! and one method per function taking one slice per input (`&[f32]`,
//! `&[i32]`, ...: the element type is the input's dtype, so a wrong dtype
//! does not compile) and returning the outputs (one `Vec`, or a tuple of
//! them). Each function's shapes are constants in `<function>_io`
//! (`INPUT0_SHAPE`, `INPUT0_LEN`, `Input0` the element type, and the same
//! for outputs); a slice of the wrong length is an error naming the
//! function, the input and both lengths.
//!
//! The compiler is `$TCC` if set, else `tcc` on `PATH` (or
//! [`Build::tcc`]). A model is compiled with `tcc compile` to a shared
//! library, whose signature `tcc inspect --json` reads; an embedded model's
//! library is included with `include_bytes!` and loaded from memory, a
//! linked one is compiled again with `--emit=staticlib --name=NAME` and
//! linked (`tcc_runtime::linked_model!`). Either way the program needs no
//! model file at run time.
//!
//! Compile options apply to every model: [`Build::target`] (`generic`,
//! `nvidia`, `pocl-cpu`, `host`, `auto`), [`Build::input_shape`],
//! [`Build::precision`], [`Build::storage`], [`Build::tuning`],
//! [`Build::ptx`], [`Build::gpu_arch`], [`Build::backend`],
//! [`Build::max_fused_ops`], and [`Build::arg`] for any other `tcc compile`
//! flag:
//!
//! ```no_run
//! tcc_build::Build::new()
//!     .model("resnet", "models/resnet50.onnx")
//!     .target("pocl-cpu")
//!     .input_shape("data", &[8, 3, 224, 224])
//!     .storage("fp16")
//!     .compile()
//!     .unwrap_or_else(|e| panic!("{e}"));
//! ```

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// How a model gets into the program.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Embedding {
    /// The shared library's bytes, `include_bytes!`-ed and loaded from
    /// memory (`Model::load_bytes`).
    Bytes,
    /// A static library linked into the program (`linked_model!`).
    Static,
}

#[derive(Clone, Debug)]
struct ModelSpec {
    name: String,
    path: PathBuf,
    embedding: Embedding,
}

/// A build-time compilation of tcc models.
#[derive(Clone, Debug, Default)]
pub struct Build {
    models: Vec<ModelSpec>,
    tcc: Option<PathBuf>,
    target: Option<String>,
    out_dir: Option<PathBuf>,
    extra_args: Vec<String>,
}

/// Why a build failed (the message says what to do).
#[derive(Debug)]
pub struct Error(pub String);

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

fn err(message: impl Into<String>) -> Error {
    Error(message.into())
}

impl Build {
    pub fn new() -> Self {
        Self::default()
    }

    /// A model embedded as bytes; `name` names its module, struct (in
    /// CamelCase) and symbols, and must be a Rust identifier.
    pub fn model(mut self, name: &str, path: impl AsRef<Path>) -> Self {
        self.models.push(ModelSpec {
            name: name.to_string(),
            path: path.as_ref().to_path_buf(),
            embedding: Embedding::Bytes,
        });
        self
    }

    /// A model linked as a static library.
    pub fn linked_model(mut self, name: &str, path: impl AsRef<Path>) -> Self {
        self.models.push(ModelSpec {
            name: name.to_string(),
            path: path.as_ref().to_path_buf(),
            embedding: Embedding::Static,
        });
        self
    }

    /// The `tcc` binary (default: `$TCC`, else `tcc` on `PATH`).
    pub fn tcc(mut self, path: impl AsRef<Path>) -> Self {
        self.tcc = Some(path.as_ref().to_path_buf());
        self
    }

    /// `--target=` for every model: `generic` (any OpenCL 1.2 device; the
    /// default), `nvidia` (NVIDIA GPUs; also ships PTX), `pocl-cpu` (CPUs
    /// through PoCL), `host` (this build machine's CPU: pocl-cpu with its
    /// vector width) or `auto` (the build machine's default OpenCL
    /// device's kind). A `generic` build runs everywhere but can be tens
    /// of times slower on a CPU than a `pocl-cpu` one; pick the target of
    /// the machine the program runs on.
    pub fn target(mut self, target: &str) -> Self {
        self.target = Some(target.to_string());
        self
    }

    /// `--input-shape=NAME=DIMS` for every model: fills an ONNX input's
    /// dynamic dimensions or changes its batch, e.g. `("data", &[8, 3, 224,
    /// 224])` (repeat for more inputs).
    pub fn input_shape(self, name: &str, dims: &[usize]) -> Self {
        let dims: Vec<String> = dims.iter().map(|d| d.to_string()).collect();
        self.arg(&format!("--input-shape={name}={}", dims.join("x")))
    }

    /// `--precision=`: `fp32` (exact, the default; for an ONNX graph that
    /// is itself float16 or bfloat16 the graph's own type), `tf32` (GEMMs and
    /// convolutions on NVIDIA tensor cores; needs `.target("nvidia")`),
    /// `fp16` or `bf16` (weights and activations stored in 16 bits, math
    /// in fp32 registers; GEMMs on the FP16/BF16 tensor cores on nvidia).
    pub fn precision(self, precision: &str) -> Self {
        self.arg(&format!("--precision={precision}"))
    }

    /// `--storage=`: `fp32` (the default; `fp16`/`bf16` with that
    /// `precision`), `fp16` or `bf16` (weights and intermediate
    /// activations stored in 16 bits; inputs and outputs keep their
    /// types).
    pub fn storage(self, storage: &str) -> Self {
        self.arg(&format!("--storage={storage}"))
    }

    /// `--tuning=FILE`: a record written by `tcc tune` for the device the
    /// program runs on (its target must match `.target()`).
    pub fn tuning(self, record: impl AsRef<Path>) -> Self {
        self.arg(&format!("--tuning={}", record.as_ref().display()))
    }

    /// `--ptx=on|off`: ship the kernels as PTX beside the OpenCL C
    /// (default: on for `nvidia`).
    pub fn ptx(self, on: bool) -> Self {
        self.arg(if on { "--ptx=on" } else { "--ptx=off" })
    }

    /// `--gpu-arch=sm_XY`: the NVIDIA architecture the PTX is for.
    pub fn gpu_arch(self, arch: &str) -> Self {
        self.arg(&format!("--gpu-arch={arch}"))
    }

    /// `--backend=opencl|cuda`: which runtime backend launches the NVIDIA
    /// kernels.
    pub fn backend(self, backend: &str) -> Self {
        self.arg(&format!("--backend={backend}"))
    }

    /// `--max-fused-ops=N`: the most operations one fused elementwise
    /// kernel may hold (0: no cap).
    pub fn max_fused_ops(self, n: i64) -> Self {
        self.arg(&format!("--max-fused-ops={n}"))
    }

    /// Another `tcc compile` argument for every model (any flag of `tcc
    /// compile --help`, e.g. `--quantize=int8`); the methods above are
    /// the common ones.
    pub fn arg(mut self, arg: &str) -> Self {
        self.extra_args.push(arg.to_string());
        self
    }

    /// Where to write (default: `$OUT_DIR`).
    pub fn out_dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.out_dir = Some(dir.as_ref().to_path_buf());
        self
    }

    /// Compiles every model and writes `tcc_models.rs` into the output
    /// directory; prints the `cargo:` lines (rerun triggers, link flags).
    /// Returns the bindings' path.
    pub fn compile(self) -> Result<PathBuf, Error> {
        let out = match &self.out_dir {
            Some(d) => d.clone(),
            None => PathBuf::from(std::env::var_os("OUT_DIR").ok_or_else(|| {
                err("OUT_DIR is not set: call compile() from build.rs, or set out_dir()")
            })?),
        };
        let tcc = self
            .tcc
            .clone()
            .or_else(|| std::env::var_os("TCC").map(PathBuf::from))
            .unwrap_or_else(|| PathBuf::from("tcc"));
        println!("cargo:rerun-if-env-changed=TCC");
        let mut code =
            String::from("// Generated by tcc-build: typed bindings of tcc models. Do not edit.\n");
        for spec in &self.models {
            check_identifier(&spec.name)?;
            println!("cargo:rerun-if-changed={}", spec.path.display());
            let so = out.join(format!("{}.so", spec.name));
            let mut args: Vec<String> = vec![
                "compile".into(),
                spec.path.display().to_string(),
                "-o".into(),
                so.display().to_string(),
            ];
            if let Some(t) = &self.target {
                args.push(format!("--target={t}"));
            }
            args.extend(self.extra_args.iter().cloned());
            run_tcc(&tcc, &args)?;
            let inspected = run_tcc(
                &tcc,
                &["inspect".into(), so.display().to_string(), "--json".into()],
            )?;
            let description: Value = serde_json::from_slice(&inspected)
                .map_err(|e| err(format!("tcc inspect --json gave bad JSON: {e}")))?;
            if spec.embedding == Embedding::Static {
                let lib = out.join(format!("libtcc_model_{}.a", spec.name));
                let mut args = args.clone();
                args[3] = lib.display().to_string();
                args.push("--emit=staticlib".into());
                args.push(format!("--name={}", spec.name));
                run_tcc(&tcc, &args)?;
                println!("cargo:rustc-link-search=native={}", out.display());
                println!("cargo:rustc-link-lib=static=tcc_model_{}", spec.name);
            }
            code.push_str(&bindings(spec, &so, &description)?);
        }
        let path = out.join("tcc_models.rs");
        std::fs::write(&path, code)
            .map_err(|e| err(format!("cannot write {}: {e}", path.display())))?;
        Ok(path)
    }
}

fn run_tcc(tcc: &Path, args: &[String]) -> Result<Vec<u8>, Error> {
    let output = Command::new(tcc).args(args).output().map_err(|e| {
        err(format!(
            "cannot run {} ({e}): build tcc (make build) and set TCC=/path/to/tcc or put it on PATH",
            tcc.display()
        ))
    })?;
    if !output.status.success() {
        return Err(err(format!(
            "{} {} failed:\n{}",
            tcc.display(),
            args.join(" "),
            String::from_utf8_lossy(&output.stderr)
        )));
    }
    Ok(output.stdout)
}

const KEYWORDS: &[&str] = &[
    "as", "async", "await", "break", "const", "continue", "crate", "dyn", "else", "enum", "extern",
    "false", "fn", "for", "gen", "if", "impl", "in", "let", "loop", "match", "mod", "move", "mut",
    "pub", "ref", "return", "self", "Self", "static", "struct", "super", "trait", "true", "type",
    "unsafe", "use", "where", "while", "yield",
];

fn check_identifier(name: &str) -> Result<(), Error> {
    let mut chars = name.chars();
    let ok = chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !KEYWORDS.contains(&name);
    if ok {
        Ok(())
    } else {
        Err(err(format!(
            "model name `{name}` is not a Rust identifier (it names a module and C symbols)"
        )))
    }
}

/// `name` made a Rust identifier (snake case kept).
fn identifier(name: &str) -> String {
    let mut s = name
        .replace(|c: char| !c.is_ascii_alphanumeric(), "_")
        .to_ascii_lowercase();
    if s.is_empty() || s.starts_with(|c: char| c.is_ascii_digit()) {
        s.insert(0, '_');
    }
    if KEYWORDS.contains(&s.as_str()) {
        s.push('_');
    }
    s
}

fn camel(name: &str) -> String {
    name.split('_')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let mut c = p.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect()
}

/// The Rust element type of a dtype name.
fn element(dtype: &str) -> Result<&'static str, Error> {
    Ok(match dtype {
        "f32" => "f32",
        "f16" => "tcc_runtime::half::f16",
        "i32" => "i32",
        "i64" => "i64",
        "i8" => "i8",
        "i1" => "bool",
        "bf16" => "tcc_runtime::half::bf16",
        "f64" => "f64",
        "i16" => "i16",
        "ui8" => "u8",
        "ui16" => "u16",
        "ui32" => "u32",
        "ui64" => "u64",
        other => return Err(err(format!("unknown dtype {other}"))),
    })
}

fn type_text(t: &Value) -> String {
    let mut s: String = t["shape"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|d| format!("{d}x"))
        .collect();
    s.push_str(t["dtype"].as_str().unwrap_or("?"));
    s
}

/// The bindings of one model.
pub fn bindings_for(
    name: &str,
    so: &Path,
    description: &Value,
    linked: bool,
) -> Result<String, Error> {
    let spec = ModelSpec {
        name: name.to_string(),
        path: PathBuf::new(),
        embedding: if linked {
            Embedding::Static
        } else {
            Embedding::Bytes
        },
    };
    bindings(&spec, so, description)
}

fn bindings(spec: &ModelSpec, so: &Path, d: &Value) -> Result<String, Error> {
    let name = &spec.name;
    let strukt = camel(name);
    let mut c = String::new();
    let _ = writeln!(
        c,
        "\n/// Model `{name}` ({}, {}, target {}).",
        spec.path.display(),
        d["producer"].as_str().unwrap_or("?"),
        d["target"].as_str().unwrap_or("?")
    );
    let _ = writeln!(
        c,
        "pub mod {name} {{\n    #![allow(dead_code, clippy::all)]"
    );
    let _ = writeln!(
        c,
        "    use tcc_runtime::{{HostTensor, Model, Result, Runtime, Session}};\n"
    );
    match spec.embedding {
        Embedding::Bytes => {
            let _ = writeln!(
                c,
                "    /// The model, loaded from the bytes embedded in this program (no file)."
            );
            let _ = writeln!(
                c,
                "    pub fn model() -> Result<Model> {{\n        Model::load_bytes(include_bytes!({:?}), \"{name} (embedded)\")\n    }}\n",
                so.display().to_string()
            );
        }
        Embedding::Static => {
            let _ = writeln!(
                c,
                "    /// The model, linked into this program as a static library (no file)."
            );
            let _ = writeln!(
                c,
                "    pub fn model() -> Result<Model> {{\n        tcc_runtime::linked_model!({name})\n    }}\n"
            );
        }
    }
    let _ = writeln!(
        c,
        "    /// `{name}` on one runtime: a session and a method per function."
    );
    let _ = writeln!(
        c,
        "    pub struct {strukt} {{\n        session: Session,\n    }}\n"
    );
    let mut io = String::new();
    let _ = writeln!(c, "    impl {strukt} {{");
    let _ = writeln!(
        c,
        "        /// Builds the model's kernels for `runtime`'s device (cached on disk)."
    );
    let _ = writeln!(
        c,
        "        pub fn new(runtime: &Runtime) -> Result<Self> {{\n            Ok(Self {{ session: runtime.session(&model()?)? }})\n        }}\n"
    );
    let _ = writeln!(
        c,
        "        /// The session, for what the typed methods do not cover."
    );
    let _ = writeln!(
        c,
        "        pub fn session(&mut self) -> &mut Session {{\n            &mut self.session\n        }}"
    );
    for f in d["functions"].as_array().into_iter().flatten() {
        let fname = f["name"].as_str().unwrap_or_default();
        // The bindings' shapes are constants: a symbolic dimension
        // (`--dim`, `tcc inspect` names it in the shape) has none.
        if let Some(dims) = f["dims"].as_array().filter(|d| !d.is_empty()) {
            let dims: Vec<String> = dims
                .iter()
                .map(|d| {
                    format!(
                        "{}={}..{}",
                        d["name"].as_str().unwrap_or("?"),
                        d["min"],
                        d["max"]
                    )
                })
                .collect();
            return Err(err(format!(
                "{name}: @{fname} has symbolic dimensions ({}); typed bindings need static shapes: compile it with .input_shape(...) instead of --dim",
                dims.join(", ")
            )));
        }
        let mut method = identifier(fname);
        if method == "new" || method == "session" {
            method = format!("call_{method}");
        }
        let io_mod = format!("{}_io", identifier(fname));
        let inputs = f["inputs"].as_array().cloned().unwrap_or_default();
        let outputs = f["outputs"].as_array().cloned().unwrap_or_default();
        let _ = writeln!(
            io,
            "    /// Shapes and element types of @{fname}.\n    pub mod {io_mod} {{"
        );
        for (kind, list) in [("INPUT", &inputs), ("OUTPUT", &outputs)] {
            for (i, t) in list.iter().enumerate() {
                let shape: Vec<String> = t["shape"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|v| v.to_string())
                    .collect();
                let len: u64 = t["shape"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|v| v.as_u64().unwrap_or(0))
                    .product();
                let ty = element(t["dtype"].as_str().unwrap_or_default())?;
                let camel_kind = if kind == "INPUT" { "Input" } else { "Output" };
                let _ = writeln!(
                    io,
                    "        /// {} {i}: {}",
                    kind.to_lowercase(),
                    type_text(t)
                );
                let _ = writeln!(
                    io,
                    "        pub const {kind}{i}_SHAPE: [usize; {}] = [{}];",
                    shape.len(),
                    shape.join(", ")
                );
                let _ = writeln!(io, "        pub const {kind}{i}_LEN: usize = {len};");
                let _ = writeln!(io, "        pub type {camel_kind}{i} = {ty};");
            }
        }
        let _ = writeln!(io, "    }}\n");
        let params: Vec<String> = inputs
            .iter()
            .enumerate()
            .map(|(i, t)| {
                let n = t["name"]
                    .as_str()
                    .filter(|s| !s.is_empty())
                    .map(identifier)
                    .unwrap_or_else(|| format!("input{i}"));
                format!("{n}: &[{io_mod}::Input{i}]")
            })
            .collect();
        let names: Vec<String> = params
            .iter()
            .map(|p| p.split(':').next().unwrap().to_string())
            .collect();
        let returns: Vec<String> = (0..outputs.len())
            .map(|i| format!("Vec<{io_mod}::Output{i}>"))
            .collect();
        let ret = match returns.len() {
            1 => returns[0].clone(),
            _ => format!(
                "({})",
                returns.iter().map(|r| format!("{r},")).collect::<String>()
            ),
        };
        let signature = format!(
            "@{fname}({}) -> ({})",
            inputs.iter().map(type_text).collect::<Vec<_>>().join(", "),
            outputs.iter().map(type_text).collect::<Vec<_>>().join(", ")
        );
        let _ = writeln!(c, "\n        /// `{signature}`");
        let _ = writeln!(
            c,
            "        pub fn {method}(&mut self, {}) -> Result<{ret}> {{",
            params.join(", ")
        );
        let _ = writeln!(c, "            let inputs = [");
        for (i, n) in names.iter().enumerate() {
            let _ = writeln!(
                c,
                "                HostTensor::from_elements({io_mod}::INPUT{i}_SHAPE.to_vec(), {n}).map_err(|e| tcc_runtime::Error::InvalidInput(format!(\"input {i} ({n}) of @{fname}: {{e}}\")))?,"
            );
        }
        let _ = writeln!(c, "            ];");
        let _ = writeln!(
            c,
            "            let outputs = self.session.run({fname:?}, &inputs)?;"
        );
        let conv: Vec<String> = (0..outputs.len())
            .map(|i| format!("outputs[{i}].to_elements::<{io_mod}::Output{i}>()?"))
            .collect();
        match conv.len() {
            1 => {
                let _ = writeln!(c, "            Ok({})", conv[0]);
            }
            _ => {
                let _ = writeln!(
                    c,
                    "            Ok(({}))",
                    conv.iter().map(|x| format!("{x},")).collect::<String>()
                );
            }
        }
        let _ = writeln!(c, "        }}");
    }
    let _ = writeln!(c, "    }}\n");
    c.push_str(&io);
    let _ = writeln!(c, "}}");
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generates_typed_methods_and_checked_constants() {
        let d: Value = serde_json::from_str(
            r#"{"producer": "tcc 0.1.0 (git x)", "target": "generic", "functions": [
                {"name": "mlp", "inputs": [{"name": "x", "dtype": "f32", "shape": [1, 4, 16]}],
                 "outputs": [{"name": "", "dtype": "f32", "shape": [1, 4, 10]}, {"name": "", "dtype": "i1", "shape": []}]}]}"#,
        )
        .unwrap();
        let code = bindings_for("mlp", Path::new("/out/mlp.so"), &d, false).unwrap();
        assert!(code.contains("pub struct Mlp {"), "{code}");
        assert!(code.contains("pub fn mlp(&mut self, x: &[mlp_io::Input0]) -> Result<(Vec<mlp_io::Output0>,Vec<mlp_io::Output1>,)>"), "{code}");
        assert!(
            code.contains("pub const INPUT0_SHAPE: [usize; 3] = [1, 4, 16];"),
            "{code}"
        );
        assert!(code.contains("pub const INPUT0_LEN: usize = 64;"), "{code}");
        assert!(code.contains("pub type Output1 = bool;"), "{code}");
        assert!(code.contains("include_bytes!(\"/out/mlp.so\")"), "{code}");
        let linked = bindings_for("mlp", Path::new("/out/mlp.so"), &d, true).unwrap();
        assert!(
            linked.contains("tcc_runtime::linked_model!(mlp)"),
            "{linked}"
        );
        assert!(
            check_identifier("fn").is_err()
                && check_identifier("2x").is_err()
                && check_identifier("m_1").is_ok()
        );
        assert_eq!(identifier("gpu_0/data"), "gpu_0_data");
        assert_eq!(camel("my_model"), "MyModel");
    }

    /// A model compiled with `--dim` has no constant shapes: refused,
    /// naming the dimension.
    #[test]
    fn a_symbolic_dimension_is_refused() {
        let d: Value = serde_json::from_str(
            r#"{"functions": [{"name": "main", "dims": [{"name": "batch", "min": 1, "max": 64}],
                 "inputs": [{"name": "x", "dtype": "f32", "shape": ["batch", 32]}],
                 "outputs": [{"name": "y", "dtype": "f32", "shape": ["batch", 10]}]}]}"#,
        )
        .unwrap();
        let e = bindings_for("mlp", Path::new("/out/mlp.so"), &d, false).unwrap_err();
        assert!(
            e.0.contains("mlp: @main has symbolic dimensions (batch=1..64); typed bindings need static shapes"),
            "{}",
            e.0
        );
    }

    /// Every option method becomes its `tcc compile` flag.
    #[test]
    fn compile_options_reach_tcc_compile() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("args.txt");
        let fake = dir.path().join("tcc");
        std::fs::write(
            &fake,
            format!("#!/bin/sh\necho \"$@\" > {}\nexit 3\n", log.display()),
        )
        .unwrap();
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        let e = Build::new()
            .tcc(&fake)
            .model("m", "m.onnx")
            .out_dir(dir.path())
            .target("host")
            .input_shape("data", &[8, 3, 224, 224])
            .precision("tf32")
            .storage("fp16")
            .tuning("rec.json")
            .ptx(false)
            .gpu_arch("sm_90")
            .backend("cuda")
            .max_fused_ops(4)
            .arg("--quantize=int8")
            .compile()
            .unwrap_err();
        assert!(e.0.contains("tcc compile"), "{e}");
        let args = std::fs::read_to_string(&log).unwrap();
        for flag in [
            "--target=host",
            "--input-shape=data=8x3x224x224",
            "--precision=tf32",
            "--storage=fp16",
            "--tuning=rec.json",
            "--ptx=off",
            "--gpu-arch=sm_90",
            "--backend=cuda",
            "--max-fused-ops=4",
            "--quantize=int8",
        ] {
            assert!(args.split_whitespace().any(|a| a == flag), "{flag}: {args}");
        }
    }

    #[test]
    fn a_missing_compiler_says_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let e = Build::new()
            .tcc("/nonexistent/tcc")
            .model("m", "m.mlir")
            .out_dir(dir.path())
            .compile()
            .unwrap_err();
        assert!(e.0.contains("set TCC=/path/to/tcc"), "{e}");
    }
}
