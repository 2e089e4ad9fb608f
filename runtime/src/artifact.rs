//! Loads a compiled model (`model.so`) and turns its self-description
//! (`tcc_artifact_v1()`) into owned, validated Rust values.
//!
//! The artifact is foreign code: every count is bounded, every pointer that
//! must be non-null is checked, every string is copied and must be UTF-8,
//! and every dtype and shape is checked, so a malformed table produces an
//! error naming the bad field instead of a crash. (A pointer that is
//! non-null but dangling cannot be detected; that is a compiler bug.)
//! The table is read in `reader`, inside the segments the loader mapped
//! for the library (`bounds`), and compared with the artifact's
//! checksummed `description` where it has one.

mod bounds;
pub mod description;
mod reader;

use std::ffi::{CStr, c_char};
use std::path::{Path, PathBuf};

use libloading::Library;
use serde::Serialize;

use crate::abi::{self, TccArtifactV1Fn, TccEntryFn};
use crate::error::{Error, Result};
use crate::program_cache::SourceKind;
use crate::tensor::{DType, HostTensor, byte_size, type_string};
use reader::{MAX_SOURCE_BYTES, Reader};

/// One input or output of a function.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TensorDesc {
    /// ONNX/argument name, possibly empty.
    pub name: String,
    pub dtype: DType,
    /// The extents; a symbolic one (see `dims`) at its declared maximum.
    pub shape: Vec<usize>,
    /// A tensor on a symbolic dimension (`tcc compile --dim`): each axis's
    /// dimension name, `""` for a static axis; empty for a static tensor.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dims: Vec<String>,
}

impl TensorDesc {
    /// `1x8x128xf32`; a symbolic extent by its name (`batchx32xf32`).
    pub fn type_string(&self) -> String {
        if self.dims.is_empty() {
            return type_string(&self.shape, self.dtype);
        }
        let mut s = String::new();
        for (axis, d) in self.shape.iter().enumerate() {
            match self.dims.get(axis).filter(|n| !n.is_empty()) {
                Some(name) => s.push_str(name),
                None => s.push_str(&d.to_string()),
            }
            s.push('x');
        }
        s.push_str(self.dtype.name());
        s
    }

    /// Whether axis `axis` is symbolic.
    pub fn is_symbolic(&self, axis: usize) -> bool {
        self.dims.get(axis).is_some_and(|n| !n.is_empty())
    }

    /// The shape as the ABI states it (`tcc_abi::symbolic::SYMBOLIC` for a
    /// symbolic extent).
    pub fn abi_shape(&self) -> Vec<i64> {
        self.shape
            .iter()
            .enumerate()
            .map(|(axis, &d)| {
                if self.is_symbolic(axis) {
                    tcc_abi::symbolic::SYMBOLIC
                } else {
                    d as i64
                }
            })
            .collect()
    }

    /// Bytes of one tensor of this description (checked at load time not
    /// to overflow).
    pub fn byte_size(&self) -> usize {
        byte_size(&self.shape, self.dtype).unwrap_or(usize::MAX)
    }
}

/// One entry point of the model.
#[derive(Clone, Debug, Serialize)]
pub struct FunctionInfo {
    pub name: String,
    pub inputs: Vec<TensorDesc>,
    pub outputs: Vec<TensorDesc>,
    /// Bytes of the function's arena (its static memory plan); 0 without
    /// one.
    pub arena_bytes: u64,
    /// Alignment of every view offset in the arena.
    pub arena_alignment: u64,
    /// The symbolic dimensions its tensors name (`tcc compile --dim`),
    /// with their ranges; empty for a static function.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dims: Vec<tcc_abi::symbolic::DimEntry>,
    /// The buckets compiled as static variants (`tcc compile
    /// --specialize`), each the values it fixes by dimension name: a call
    /// whose shapes bind one runs that variant's kernels (the artifact's
    /// host entry picks it); empty without.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub specializations: Vec<Vec<(String, i64)>>,
    #[serde(skip)]
    pub(crate) entry: TccEntryFn,
}

/// The shapes of one call of a function: every output's, and what the
/// entry reads (`tcc_runtime_api.shapes`: every input's extents, then
/// every output's).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CallShapes {
    pub outputs: Vec<Vec<usize>>,
    pub flat: Vec<i64>,
}

impl FunctionInfo {
    /// Whether it has a symbolic dimension: its calls may take inputs of
    /// any shape in the declared ranges ([`FunctionInfo::call_shapes`]).
    pub fn is_dynamic(&self) -> bool {
        !self.dims.is_empty()
    }

    /// The function as one call of it on inputs of `shapes` sees it: for a
    /// function on a symbolic dimension, a copy whose inputs and outputs
    /// have the call's shapes (their sizes the call's), with the shapes the
    /// entry reads ([`CallShapes::flat`]); a static function as it is, with
    /// none. What a driver that sizes its buffers from the descriptions
    /// (the CUDA one) calls with.
    pub fn sized_for(
        &self,
        shapes: &[&[usize]],
    ) -> Result<(std::borrow::Cow<'_, FunctionInfo>, Vec<i64>)> {
        if !self.is_dynamic() {
            return Ok((std::borrow::Cow::Borrowed(self), Vec::new()));
        }
        let call = self.call_shapes(shapes)?;
        let mut sized = self.clone();
        for (input, shape) in sized.inputs.iter_mut().zip(shapes) {
            input.shape = shape.to_vec();
        }
        for (output, shape) in sized.outputs.iter_mut().zip(call.outputs) {
            output.shape = shape;
        }
        Ok((std::borrow::Cow::Owned(sized), call.flat))
    }

    /// The static variant (`tcc compile --specialize`) a call on inputs of
    /// `shapes` runs: the bucket whose values the inputs bind (the
    /// artifact's host entry makes the same choice), or `None` for the
    /// generic function (or shapes the call would refuse).
    pub fn specialization_of_call(&self, shapes: &[&[usize]]) -> Option<&[(String, i64)]> {
        if self.specializations.is_empty() {
            return None;
        }
        let value_of = |dim: &str| {
            self.inputs.iter().zip(shapes).find_map(|(input, shape)| {
                let axis = input.dims.iter().position(|d| d == dim)?;
                shape.get(axis).map(|&v| v as i64)
            })
        };
        self.call_shapes(shapes).ok()?;
        self.specializations
            .iter()
            .find(|bucket| {
                bucket
                    .iter()
                    .all(|(dim, value)| value_of(dim) == Some(*value))
            })
            .map(Vec::as_slice)
    }

    /// The shapes of a call on inputs of `shapes`: [`Self::call_shapes`]
    /// for a function on a symbolic dimension; otherwise the declared
    /// outputs, with no entry shapes to pass.
    pub fn shapes_of_call(&self, shapes: &[&[usize]]) -> Result<CallShapes> {
        if self.is_dynamic() {
            return self.call_shapes(shapes);
        }
        Ok(CallShapes {
            outputs: self.outputs.iter().map(|d| d.shape.clone()).collect(),
            flat: Vec::new(),
        })
    }

    /// The shapes of a call on inputs of `shapes`: each symbolic dimension
    /// bound to the value the inputs give it (in its declared range, the
    /// same in every input naming it; `tcc_abi::symbolic::bind`), the
    /// outputs sized from them. The caller checked the input count.
    pub fn call_shapes(&self, shapes: &[&[usize]]) -> Result<CallShapes> {
        let input_shapes: Vec<Vec<i64>> = self.inputs.iter().map(TensorDesc::abi_shape).collect();
        let output_shapes: Vec<Vec<i64>> = self.outputs.iter().map(TensorDesc::abi_shape).collect();
        fn declared<'a>(t: &'a TensorDesc, shape: &'a [i64]) -> tcc_abi::symbolic::Declared<'a> {
            tcc_abi::symbolic::Declared {
                name: &t.name,
                shape,
                dims: &t.dims,
            }
        }
        let given: Vec<Vec<u64>> = shapes
            .iter()
            .map(|s| s.iter().map(|&d| d as u64).collect())
            .collect();
        let given: Vec<&[u64]> = given.iter().map(Vec::as_slice).collect();
        let declared_inputs: Vec<_> = self
            .inputs
            .iter()
            .zip(&input_shapes)
            .map(|(t, s)| declared(t, s))
            .collect();
        let values = tcc_abi::symbolic::bind(&self.name, &self.dims, &declared_inputs, &given)
            .map_err(Error::InvalidInput)?;
        let mut call = CallShapes::default();
        for shape in shapes {
            call.flat.extend(shape.iter().map(|&d| d as i64));
        }
        for (output, shape) in self.outputs.iter().zip(&output_shapes) {
            let shape = tcc_abi::symbolic::shape_at(&declared(output, shape), &self.dims, &values)
                .map_err(|e| Error::InvalidInput(format!("@{}: {e}", self.name)))?;
            call.flat.extend(shape.iter().map(|&d| d as i64));
            call.outputs
                .push(shape.into_iter().map(|d| d as usize).collect());
        }
        Ok(call)
    }

    /// Zero tensors of its inputs' types (a warm-up call's inputs).
    pub fn zero_inputs(&self) -> Result<Vec<HostTensor>> {
        self.inputs
            .iter()
            .map(|d| HostTensor::zeros(d.dtype, d.shape.clone()))
            .collect()
    }

    /// `@mlp(x: 1x8x128xf32) -> (1x8x64xf32)`.
    pub fn signature(&self) -> String {
        let list = |ts: &[TensorDesc]| {
            ts.iter()
                .map(|t| {
                    if t.name.is_empty() {
                        t.type_string()
                    } else {
                        format!("{}: {}", t.name, t.type_string())
                    }
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        format!(
            "@{}({}) -> ({})",
            self.name,
            list(&self.inputs),
            list(&self.outputs)
        )
    }

    /// Checks host tensors against the signature; `sources[i]` says where
    /// input `i` came from ("x.npy", "the command line"), default "the
    /// caller". Errors read like
    /// `input 0 of @mlp expects 1x8x128xf32, got 1x8x64xf32 from x.npy`.
    pub fn check_inputs(&self, inputs: &[HostTensor], sources: &[&str]) -> Result<()> {
        self.check_input_types(
            inputs.iter().map(|t| (t.dtype, t.shape.as_slice())),
            sources,
        )
    }

    pub(crate) fn check_input_types<'t>(
        &self,
        inputs: impl ExactSizeIterator<Item = (DType, &'t [usize])>,
        sources: &[&str],
    ) -> Result<()> {
        if inputs.len() != self.inputs.len() {
            let expected: Vec<String> = self.inputs.iter().map(|d| d.type_string()).collect();
            return Err(Error::InvalidInput(format!(
                "@{} expects {} input{} ({}), got {}",
                self.name,
                self.inputs.len(),
                if self.inputs.len() == 1 { "" } else { "s" },
                expected.join(", "),
                inputs.len()
            )));
        }
        let mut shapes = Vec::with_capacity(self.inputs.len());
        for (i, ((dtype, shape), d)) in inputs.zip(&self.inputs).enumerate() {
            shapes.push(shape);
            if self.is_dynamic() && dtype == d.dtype {
                continue;
            }
            if dtype != d.dtype || shape != d.shape.as_slice() {
                let source = sources.get(i).copied().unwrap_or("the caller");
                return Err(Error::InvalidInput(format!(
                    "input {i} of @{} expects {}, got {} from {source}",
                    self.name,
                    d.type_string(),
                    type_string(shape, dtype)
                )));
            }
        }
        if self.is_dynamic() {
            // Where the inputs came from, each place once.
            let mut from: Vec<&str> = Vec::new();
            for source in sources.iter().filter(|s| **s != "the caller") {
                if !from.contains(source) {
                    from.push(source);
                }
            }
            self.call_shapes(&shapes).map_err(|e| match e {
                Error::InvalidInput(why) if !from.is_empty() => {
                    Error::InvalidInput(format!("{why} (inputs from {})", from.join(", ")))
                }
                other => other,
            })?;
        }
        Ok(())
    }
}

/// A constant's bytes, inside the loaded library's read-only data.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ConstantRef {
    pub ptr: *const u8,
    pub bytes: u64,
}

/// A loaded artifact. The library stays loaded as long as this value lives,
/// which keeps entry points and constant pointers valid.
pub struct Artifact {
    pub path: PathBuf,
    /// The ABI version of its table (`TCC_ABI_VERSION_MIN..=TCC_ABI_VERSION`).
    pub abi_version: u32,
    pub producer: String,
    pub source_kind: SourceKind,
    pub source: Vec<u8>,
    pub build_options: String,
    /// Each kernel's launch record (name, work-group size, CUDA dynamic
    /// local memory, flops, arguments), in the table's order: the index a
    /// `launch` callback names.
    pub kernels: Vec<tcc_abi::LaunchRecord>,
    /// The kernels' names, in the same order (from [`Self::kernels`]).
    pub kernel_names: Vec<String>,
    /// Floating-point operations per launch of each kernel (0: not
    /// counted; from [`Self::kernels`]).
    pub kernel_flops: Vec<u64>,
    /// The same kernels as PTX, from the optional `tcc_kernel_ptx_v1`
    /// (`tcc compile --target=nvidia`).
    pub ptx: Option<Vec<u8>>,
    /// The compiler's JSON description of the artifact (target, kernels
    /// with kind and work-group size, version), from the optional
    /// `tcc_metadata_v1`; read by `tcc inspect`.
    pub metadata: Option<String>,
    pub functions: Vec<FunctionInfo>,
    pub(crate) constants: Vec<ConstantRef>,
    // Dropped last (fields drop in declaration order). `None` for a model
    // linked into the program.
    _library: Option<Library>,
    /// The in-memory file a model loaded from bytes was opened through
    /// (`/proc/self/fd/N`), kept open while the library is loaded: the
    /// dynamic loader knows a library by that name, and a reused
    /// descriptor number would make a later load return this library.
    pub(crate) memfd: Option<std::fs::File>,
    /// The checksummed description (`tcc_description_v1`), already
    /// compared with the table; `None` for an artifact without one.
    pub description: Option<description::Description>,
    /// Where its prepared programs would be (`<path>.prepared/`, written
    /// by `tcc compile --prepare`); `None` for a model loaded from memory
    /// or linked into the program.
    pub prepared: Option<crate::program_cache::PreparedDir>,
}

// SAFETY: the raw pointers in `constants` and the entry functions point into
// the library's immutable data and code, which live as long as `_library`;
// the artifact's host code keeps no state of its own (it works only through
// the runtime context it is handed on each call).
unsafe impl Send for Artifact {}
unsafe impl Sync for Artifact {}

impl std::fmt::Debug for Artifact {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Artifact")
            .field("path", &self.path)
            .field("producer", &self.producer)
            .field("source_kind", &self.source_kind)
            .field("kernel_names", &self.kernel_names)
            .field("functions", &self.functions)
            .field("constants", &self.constants.len())
            .finish()
    }
}

impl Artifact {
    /// The largest static memory plan of its functions: the arena every
    /// driver's session allocates once (0: no plan).
    pub(crate) fn arena_bytes(&self) -> u64 {
        self.functions
            .iter()
            .map(|f| f.arena_bytes)
            .max()
            .unwrap_or(0)
    }

    /// Opens `path`, calls `tcc_artifact_v1` and validates what it returns.
    /// The file's ELF headers are checked first (`elf::check_file`), so a
    /// truncated or foreign file is an error rather than a crash in the
    /// dynamic loader.
    pub fn load(path: &Path) -> Result<Self> {
        let load_err = |reason: String| Error::ArtifactLoad {
            path: path.to_path_buf(),
            reason,
        };
        // An absolute path keeps dlopen from searching the library path for
        // a bare file name like "model.so".
        let abs = std::fs::canonicalize(path).map_err(|e| load_err(e.to_string()))?;
        if !abs.is_file() {
            return Err(load_err("not a file".into()));
        }
        crate::elf::check_file(&abs).map_err(load_err)?;
        // SAFETY: loading runs the library's initialisers; a tcc artifact
        // has none beyond what the C toolchain adds. This is inherent to
        // running a compiled model.
        let library = unsafe { Library::new(&abs) }.map_err(|e| load_err(e.to_string()))?;
        let mut artifact = Self::from_library(path, library, "")?;
        artifact.prepared = crate::program_cache::PreparedDir::beside(path);
        Ok(artifact)
    }

    /// Validates the artifact a loaded library describes; `prefix` is the
    /// symbol prefix (`tcc compile --name=NAME` gives `NAME_`).
    pub(crate) fn from_library(path: &Path, library: Library, prefix: &str) -> Result<Self> {
        let symbol = |name: &[u8]| -> Vec<u8> { [prefix.as_bytes(), name].concat() };
        // SAFETY: the symbol's type is fixed by tcc_abi.h.
        let describe: TccArtifactV1Fn =
            unsafe { library.get::<TccArtifactV1Fn>(&symbol(abi::ARTIFACT_SYMBOL)) }
                .map(|s| *s)
                .map_err(|e| Error::ArtifactLoad {
                    path: path.to_path_buf(),
                    reason: format!(
                        "no `{prefix}tcc_artifact_v1` symbol, not a tcc artifact ({e})"
                    ),
                })?;
        // SAFETY: optional symbols, types fixed by tcc_abi.h.
        let ptx = unsafe { library.get::<abi::TccKernelPtxV1Fn>(&symbol(abi::KERNEL_PTX_SYMBOL)) }
            .ok()
            .map(|s| *s);
        let metadata =
            unsafe { library.get::<abi::TccMetadataV1Fn>(&symbol(abi::METADATA_SYMBOL)) }
                .ok()
                .map(|s| *s);
        // SAFETY: a data symbol: its address, read through the segment
        // checks of `from_symbols`.
        let description =
            unsafe { library.get::<*const u8>(&symbol(tcc_abi::DESCRIPTION_SYMBOL.as_bytes())) }
                .ok()
                .map(|s| *s);
        // SAFETY: the functions come from `library`, which the artifact keeps.
        unsafe {
            Self::from_symbols(
                path,
                LinkedSymbols {
                    describe,
                    ptx,
                    metadata,
                    description,
                },
                Some(library),
            )
        }
    }

    /// Validates the artifact behind `symbols`: a library's, or one linked
    /// into the program (`library` is then `None`).
    ///
    /// # Safety
    /// The functions must follow tcc_abi.h, and stay valid (with the data
    /// they return) while the artifact lives: forever for linked-in code,
    /// as long as `library` for a loaded one.
    pub(crate) unsafe fn from_symbols(
        path: &Path,
        symbols: LinkedSymbols,
        library: Option<Library>,
    ) -> Result<Self> {
        // The segments the loader mapped for the artifact: everything the
        // table points at must lie inside them.
        let segments = bounds::Segments::containing(symbols.describe as usize);
        let r = Reader {
            path,
            segments: segments.clone(),
        };
        // SAFETY: calling the artifact's own description function.
        let raw = unsafe { (symbols.describe)() };
        if raw.is_null() {
            return Err(Error::ArtifactLoad {
                path: path.to_path_buf(),
                reason: "tcc_artifact_v1() returned NULL".into(),
            });
        }
        r.check_range(
            raw as usize,
            std::mem::size_of::<abi::TccArtifact>(),
            "the table",
        )?;
        // SAFETY: non-null, points at the artifact's static table.
        let table = unsafe { &*raw };
        if !(abi::TCC_ABI_VERSION_MIN..=abi::TCC_ABI_VERSION).contains(&table.abi_version) {
            return Err(Error::AbiVersion {
                path: path.to_path_buf(),
                found: table.abi_version,
                expected: abi::TCC_ABI_VERSION,
            });
        }
        let mut r = r;
        // SAFETY: the table was produced against tcc_abi.h; `Reader` checks
        // every count and pointer before it is followed.
        let parts = unsafe { r.read(table) }?;
        let text = |getter: Option<unsafe extern "C" fn() -> *const c_char>,
                    what: &str|
         -> Result<Option<Vec<u8>>> {
            let Some(getter) = getter else {
                return Ok(None);
            };
            // SAFETY: returns a NUL-terminated string or NULL.
            let pointer = unsafe { getter() };
            if pointer.is_null() {
                return Ok(None);
            }
            if let Some(segments) = &segments {
                let rest = segments.rest(pointer as usize).unwrap_or(0);
                // SAFETY: `rest` bytes from `pointer` lie in one mapped segment.
                let bytes = unsafe { std::slice::from_raw_parts(pointer as *const u8, rest) };
                if !bytes.contains(&0) {
                    return Err(Error::MalformedArtifact {
                        path: path.to_path_buf(),
                        reason: format!("the {what} lies outside the artifact's memory"),
                    });
                }
            }
            // SAFETY: non-null, NUL-terminated static data.
            let text = unsafe { CStr::from_ptr(pointer) }.to_bytes();
            if text.len() as u64 > MAX_SOURCE_BYTES {
                return Err(Error::MalformedArtifact {
                    path: path.to_path_buf(),
                    reason: format!("implausible {what} size {}", text.len()),
                });
            }
            Ok((!text.is_empty()).then(|| text.to_vec()))
        };
        // Optional: the kernels as PTX.
        let ptx = text(symbols.ptx, "PTX")?;
        // Optional: the compiler's JSON description (`tcc inspect`).
        let metadata = text(symbols.metadata, "metadata")?
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned());
        // A CPU target's instruction set (AVX-512, AVX2) the running CPU
        // lacks: refused here, before any kernel is built.
        if let Some(why) = metadata
            .as_deref()
            .and_then(|m| crate::cpu_features::unsupported(m, crate::cpu_features::host_has))
        {
            return Err(Error::ArtifactLoad {
                path: path.to_path_buf(),
                reason: why,
            });
        }
        let description = match symbols.description {
            // SAFETY: checked against the segments before it is read.
            Some(blob) => Some(unsafe { Self::checked_description(&r, blob) }?),
            None => None,
        };
        let mut artifact = Artifact {
            path: path.to_path_buf(),
            abi_version: table.abi_version,
            kernel_names: parts.kernels.iter().map(|k| k.name.clone()).collect(),
            kernel_flops: parts.kernels.iter().map(|k| k.flops).collect(),
            kernels: parts.kernels,
            ptx,
            metadata,
            producer: parts.producer,
            source_kind: parts.source_kind,
            source: parts.source,
            build_options: parts.build_options,
            functions: parts.functions,
            constants: parts.constants,
            _library: library,
            memfd: None,
            description: None,
            prepared: None,
        };
        // Symbolic dimensions: named, with their ranges, only by the
        // description; the table marks the extents.
        let symbolic = |t: &TensorDesc| !t.dims.is_empty();
        let dynamic = artifact
            .functions
            .iter()
            .any(|f| f.inputs.iter().chain(&f.outputs).any(symbolic));
        match &description {
            Some(description) => artifact.name_symbolic_dims(description).map_err(|reason| {
                Error::MalformedArtifact {
                    path: path.to_path_buf(),
                    reason,
                }
            })?,
            None if dynamic => {
                return Err(Error::MalformedArtifact {
                    path: path.to_path_buf(),
                    reason: "its table has a symbolic extent (-1) but it has no description (tcc_description_v1) to name it".into(),
                });
            }
            None => {}
        }
        if let Some(description) = description {
            let mut table = artifact.table_description();
            // The constants are hashed only on request (`verify`).
            table.constants_sha256 = description.constants_sha256.clone();
            if let Some(why) = description.difference(&table) {
                return Err(Error::MalformedArtifact {
                    path: path.to_path_buf(),
                    reason: why,
                });
            }
            artifact.description = Some(description);
        }
        Ok(artifact)
    }

    /// The description blob at `blob`, decoded after checking that it lies
    /// in the artifact's memory and matches its own checksum.
    ///
    /// # Safety
    /// `blob` is the address of the artifact's `tcc_description_v1`.
    unsafe fn checked_description(r: &Reader, blob: *const u8) -> Result<description::Description> {
        let bad = |reason: String| Error::MalformedArtifact {
            path: r.path.to_path_buf(),
            reason,
        };
        r.check_range(blob as usize, description::HEADER_LEN, "tcc_description_v1")?;
        // SAFETY: checked just above.
        let header = unsafe { std::slice::from_raw_parts(blob, description::HEADER_LEN) };
        let len = description::Description::declared_len(header).map_err(bad)? as usize;
        r.check_range(
            blob as usize,
            description::HEADER_LEN + len,
            "tcc_description_v1",
        )?;
        // SAFETY: checked just above.
        let bytes = unsafe { std::slice::from_raw_parts(blob, description::HEADER_LEN + len) };
        description::Description::decode(bytes).map_err(bad)
    }

    /// Gives every symbolic extent of the table (marked by the reader) the
    /// dimension the description names, and each function the declared
    /// ranges; the extent is then the dimension's maximum.
    fn name_symbolic_dims(
        &mut self,
        description: &description::Description,
    ) -> std::result::Result<(), String> {
        for f in &mut self.functions {
            let Some(entry) = description.functions.iter().find(|e| e.name == f.name) else {
                continue;
            };
            for dim in &entry.dims {
                if dim.min < 1 || dim.min > dim.max || dim.max > i32::MAX as u64 {
                    return Err(format!(
                        "@{}: dimension '{}' has the range {}..{}",
                        f.name, dim.name, dim.min, dim.max
                    ));
                }
            }
            let pairs = f
                .inputs
                .iter_mut()
                .zip(&entry.inputs)
                .chain(f.outputs.iter_mut().zip(&entry.outputs));
            for (tensor, described) in pairs {
                if tensor.dims.is_empty() && described.dims.is_empty() {
                    continue;
                }
                if described.dims.len() != tensor.shape.len() {
                    return Err(format!(
                        "@{}: '{}' has symbolic extents the description does not name",
                        f.name, tensor.name
                    ));
                }
                let marked = std::mem::take(&mut tensor.dims);
                for (axis, name) in described.dims.iter().enumerate() {
                    let symbolic = marked.get(axis).is_some_and(|m| !m.is_empty());
                    if name.is_empty() {
                        if symbolic {
                            return Err(format!(
                                "@{}: '{}' dimension {axis} is symbolic in the table but not in the description",
                                f.name, tensor.name
                            ));
                        }
                        continue;
                    }
                    if !symbolic {
                        return Err(format!(
                            "@{}: '{}' dimension {axis} is static in the table but the description names it '{name}'",
                            f.name, tensor.name
                        ));
                    }
                    let dim = entry.dims.iter().find(|d| &d.name == name).ok_or_else(|| {
                        format!(
                            "@{}: '{}' names the undeclared dimension '{name}'",
                            f.name, tensor.name
                        )
                    })?;
                    tensor.shape[axis] = dim.max as usize;
                }
                tensor.dims = described.dims.clone();
                if byte_size(&tensor.shape, tensor.dtype).is_none() {
                    return Err(format!("@{}: '{}' is too large", f.name, tensor.name));
                }
            }
            f.dims = entry.dims.clone();
            f.specializations = entry.specializations.clone();
        }
        Ok(())
    }

    /// What the table says, as a description (the constants' digest is
    /// the description's: only [`Artifact::verify`] hashes them).
    fn table_description(&self) -> description::Description {
        use description::{FunctionEntry, TensorEntry};
        let tensors = |ts: &[TensorDesc]| -> Vec<TensorEntry> {
            ts.iter()
                .map(|t| TensorEntry {
                    name: t.name.clone(),
                    dtype: t.dtype.to_abi(),
                    shape: t.abi_shape(),
                    dims: t.dims.clone(),
                })
                .collect()
        };
        description::Description {
            abi_version: self.abi_version,
            producer: self.producer.clone(),
            source_kind: match self.source_kind {
                SourceKind::OpenClC => abi::TCC_SOURCE_OPENCL_C,
                SourceKind::SpirV => abi::TCC_SOURCE_SPIRV,
                SourceKind::Ptx => abi::TCC_SOURCE_PTX,
            },
            source_sha256: description::source_digest(&self.source),
            build_options: self.build_options.clone(),
            kernels: self.kernels.clone(),
            functions: self
                .functions
                .iter()
                .map(|f| FunctionEntry {
                    name: f.name.clone(),
                    inputs: tensors(&f.inputs),
                    outputs: tensors(&f.outputs),
                    arena_bytes: f.arena_bytes,
                    arena_alignment: f.arena_alignment,
                    dims: f.dims.clone(),
                    specializations: f.specializations.clone(),
                })
                .collect(),
            constant_bytes: self.constants.iter().map(|c| c.bytes).collect(),
            constants_sha256: self
                .description
                .as_ref()
                .map(|d| d.constants_sha256.clone())
                .unwrap_or_default(),
            ptx_sha256: self.ptx.as_deref().map(description::sha256_hex),
            metadata: self.metadata.clone(),
        }
    }

    /// Hashes the constants and compares them with the checksummed
    /// description (`--verify`): an error for a damaged artifact, or one
    /// without a description.
    pub fn verify(&self) -> Result<()> {
        let bad = |reason: String| Error::MalformedArtifact {
            path: self.path.clone(),
            reason,
        };
        let Some(description) = &self.description else {
            return Err(bad(
                "it has no checksummed description (tcc_description_v1: compiled by an older tcc, or linked in), so it cannot be verified".into(),
            ));
        };
        // SAFETY: the library is loaded while `self` lives.
        let digest =
            description::constants_digest(self.constants.iter().map(|c| unsafe { c.as_slice() }));
        if digest != description.constants_sha256 {
            return Err(bad(
                "its constants do not match their checksum: the artifact is damaged".into(),
            ));
        }
        Ok(())
    }
}

/// The functions an artifact exports (see tcc_abi.h); only `describe` is
/// required.
#[derive(Clone, Copy, Debug)]
pub struct LinkedSymbols {
    /// `tcc_artifact_v1`.
    pub describe: TccArtifactV1Fn,
    /// `tcc_kernel_ptx_v1`.
    pub ptx: Option<abi::TccKernelPtxV1Fn>,
    /// `tcc_metadata_v1`.
    pub metadata: Option<abi::TccMetadataV1Fn>,
    /// The address of `tcc_description_v1` (a data symbol), if any.
    pub description: Option<*const u8>,
}

impl ConstantRef {
    /// The constant's bytes.
    ///
    /// # Safety
    /// The library the constant came from must still be loaded.
    pub(crate) unsafe fn as_slice<'a>(&self) -> &'a [u8] {
        if self.bytes == 0 {
            &[]
        } else {
            // SAFETY: checked non-null at load time; valid while loaded.
            unsafe { std::slice::from_raw_parts(self.ptr, self.bytes as usize) }
        }
    }
}

#[cfg(test)]
impl FunctionInfo {
    /// A description for unit tests of code that reads signatures; its
    /// entry fails if called.
    pub(crate) fn for_test(
        name: &str,
        inputs: Vec<TensorDesc>,
        outputs: Vec<TensorDesc>,
    ) -> FunctionInfo {
        unsafe extern "C" fn fails(
            _: *const crate::abi::TccRuntimeApi,
            _: *const *mut crate::abi::TccBuffer,
            _: *const *mut crate::abi::TccBuffer,
        ) -> i32 {
            1
        }
        FunctionInfo {
            name: name.into(),
            inputs,
            outputs,
            arena_bytes: 0,
            arena_alignment: 1,
            dims: vec![],
            specializations: vec![],
            entry: fails,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::{TccBuffer, TccRuntimeApi};

    unsafe extern "C" fn never(
        _: *const TccRuntimeApi,
        _: *const *mut TccBuffer,
        _: *const *mut TccBuffer,
    ) -> i32 {
        1
    }

    fn mlp() -> FunctionInfo {
        FunctionInfo {
            name: "mlp".into(),
            inputs: vec![
                TensorDesc {
                    name: "x".into(),
                    dtype: DType::F32,
                    shape: vec![1, 8, 128],
                    dims: vec![],
                },
                TensorDesc {
                    name: String::new(),
                    dtype: DType::Bool,
                    shape: vec![],
                    dims: vec![],
                },
            ],
            outputs: vec![TensorDesc {
                name: "y".into(),
                dtype: DType::F32,
                shape: vec![1, 8, 64],
                dims: vec![],
            }],
            arena_bytes: 0,
            arena_alignment: 1,
            dims: vec![],
            specializations: vec![],
            entry: never,
        }
    }

    /// `mlp` on a symbolic batch (`--dim batch=1..16`): x is `batchx128`,
    /// y `batchx64`, each extent at the maximum in its description.
    fn dynamic_mlp() -> FunctionInfo {
        let names = vec!["batch".to_string(), String::new()];
        let tensor = |name: &str, inner: usize| TensorDesc {
            name: name.into(),
            dtype: DType::F32,
            shape: vec![16, inner],
            dims: names.clone(),
        };
        FunctionInfo {
            inputs: vec![tensor("x", 128), tensor("h", 128)],
            outputs: vec![tensor("y", 64)],
            dims: vec![tcc_abi::symbolic::DimEntry {
                name: "batch".into(),
                min: 1,
                max: 16,
            }],
            ..mlp()
        }
    }

    #[test]
    fn a_call_at_a_bucket_names_its_static_variant() {
        let f = FunctionInfo {
            specializations: vec![vec![("batch".into(), 1)], vec![("batch".into(), 8)]],
            ..dynamic_mlp()
        };
        let at = |batch: usize| {
            f.specialization_of_call(&[&[batch, 128], &[batch, 128]])
                .map(crate::describe_bucket)
        };
        assert_eq!(at(8).as_deref(), Some("batch=8"));
        assert_eq!(at(1).as_deref(), Some("batch=1"));
        assert_eq!(at(3), None);
        // A call the function refuses (out of range) names none.
        assert_eq!(at(17), None);
        assert_eq!(
            dynamic_mlp().specialization_of_call(&[&[8, 128], &[8, 128]]),
            None
        );
    }

    #[test]
    fn a_call_binds_the_symbolic_batch_and_sizes_the_outputs() {
        let f = dynamic_mlp();
        assert_eq!(
            f.signature(),
            "@mlp(x: batchx128xf32, h: batchx128xf32) -> (y: batchx64xf32)"
        );
        let at = |batch: usize| HostTensor::zeros(DType::F32, vec![batch, 128]).unwrap();
        f.check_inputs(&[at(3), at(3)], &[]).unwrap();
        let call = f.call_shapes(&[&[3, 128], &[3, 128]]).unwrap();
        assert_eq!(call.outputs, [vec![3, 64]]);
        assert_eq!(call.flat, [3, 128, 3, 128, 3, 64]);
        let e = f
            .check_inputs(&[at(17), at(17)], &["x.npy", "h.npy"])
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "input 0 ('x') of @mlp: dimension 0 is 'batch' = 17, outside its declared range 1..16 (compiled with --dim batch=1..16) (inputs from x.npy, h.npy)"
        );
        let e = f.check_inputs(&[at(2), at(4)], &[]).unwrap_err();
        assert!(
            e.to_string()
                .contains("disagree on dimension 'batch' (1..16)"),
            "{e}"
        );
        let wrong = HostTensor::zeros(DType::I32, vec![2, 128]).unwrap();
        let e = f.check_inputs(&[at(2), wrong], &[]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "input 1 of @mlp expects batchx128xf32, got 2x128xi32 from the caller"
        );
    }

    #[test]
    fn input_messages() {
        let f = mlp();
        let x = HostTensor::zeros(DType::F32, vec![1, 8, 64]).unwrap();
        let flag = HostTensor::zeros(DType::Bool, vec![]).unwrap();
        let e = f
            .check_inputs(&[x.clone(), flag.clone()], &["x.npy"])
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "input 0 of @mlp expects 1x8x128xf32, got 1x8x64xf32 from x.npy"
        );
        let good = HostTensor::zeros(DType::F32, vec![1, 8, 128]).unwrap();
        let wrong_dtype = HostTensor::zeros(DType::I8, vec![]).unwrap();
        let e = f
            .check_inputs(&[good.clone(), wrong_dtype], &["x.npy", "the command line"])
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "input 1 of @mlp expects i1, got i8 from the command line"
        );
        let e = f
            .check_inputs(std::slice::from_ref(&good), &[])
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "@mlp expects 2 inputs (1x8x128xf32, i1), got 1"
        );
        let e = f.check_inputs(&[x, flag.clone()], &[]).unwrap_err();
        assert!(e.to_string().ends_with("from the caller"));
        f.check_inputs(&[good, flag], &[]).unwrap();
        assert_eq!(f.signature(), "@mlp(x: 1x8x128xf32, i1) -> (y: 1x8x64xf32)");
    }
}
