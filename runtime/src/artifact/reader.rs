//! Reading an artifact's self-description table (`tcc_artifact_v1()`)
//! into owned values: every count is bounded, every pointer that must be
//! non-null is checked, every string is copied and must be UTF-8, and
//! every dtype and shape is checked, so that a malformed table produces an
//! error naming the bad field instead of a crash.

use std::ffi::{CStr, c_char};
use std::path::Path;

use super::bounds::Segments;
use super::{ConstantRef, FunctionInfo, TensorDesc};
use crate::abi::{
    self, TccArtifact, TccFunctionDesc, TccFunctionDescV1, TccKernelDesc, TccTensorDesc,
};
use crate::error::{Error, Result};
use crate::program_cache::SourceKind;
use crate::tensor::{DType, byte_size, type_string};

/// Sanity bounds that reject garbage tables before they are walked.
const MAX_COUNT: u32 = 1 << 20;
const MAX_RANK: u32 = 64;
pub(super) const MAX_SOURCE_BYTES: u64 = 1 << 30;

/// The validated table, before it is joined with the library handle.
pub(super) struct Parts {
    pub(super) producer: String,
    pub(super) source_kind: SourceKind,
    pub(super) source: Vec<u8>,
    pub(super) build_options: String,
    pub(super) kernels: Vec<tcc_abi::LaunchRecord>,
    pub(super) functions: Vec<FunctionInfo>,
    pub(super) constants: Vec<ConstantRef>,
}

/// Reads an artifact's table; errors name the artifact at `path`.
pub(super) struct Reader<'a> {
    pub(super) path: &'a Path,
    /// The loaded object's segments: every array, string and entry point
    /// must lie inside them (`None`: not known, pointers are trusted).
    pub(super) segments: Option<Segments>,
}

impl Reader<'_> {
    fn bad(&self, reason: impl Into<String>) -> Error {
        Error::MalformedArtifact {
            path: self.path.to_path_buf(),
            reason: reason.into(),
        }
    }

    /// A copied, UTF-8 string; `NULL` is an error unless `allow_null`.
    unsafe fn string(&self, p: *const c_char, what: &str, allow_null: bool) -> Result<String> {
        if p.is_null() {
            return if allow_null {
                Ok(String::new())
            } else {
                Err(self.bad(format!("{what} is NULL")))
            };
        }
        if let Some(segments) = &self.segments {
            let rest = segments
                .rest(p as usize)
                .ok_or_else(|| self.bad(format!("{what} points outside the artifact's memory")))?;
            // SAFETY: `rest` bytes from `p` lie in one mapped segment.
            let bytes = unsafe { std::slice::from_raw_parts(p as *const u8, rest) };
            if !bytes.contains(&0) {
                return Err(self.bad(format!("{what} runs past the artifact's memory")));
            }
        }
        // SAFETY: non-null; NUL-terminated inside its segment when checked.
        let s = unsafe { CStr::from_ptr(p) };
        s.to_str()
            .map(str::to_owned)
            .map_err(|_| self.bad(format!("{what} is not UTF-8")))
    }

    /// The `count` elements at `p`; `p` may be NULL only when `count` is 0.
    unsafe fn slice<'t, T>(&self, p: *const T, count: u32, what: &str) -> Result<&'t [T]> {
        if count == 0 {
            return Ok(&[]);
        }
        if count > MAX_COUNT {
            return Err(self.bad(format!("{what}: implausible count {count}")));
        }
        if p.is_null() {
            return Err(self.bad(format!("{what}: {count} entries but the pointer is NULL")));
        }
        self.check_range(p as usize, count as usize * size_of::<T>(), what)?;
        if !(p as usize).is_multiple_of(align_of::<T>()) {
            return Err(self.bad(format!("{what}: misaligned pointer")));
        }
        // SAFETY: non-null and, per the ABI, pointing at `count` elements.
        Ok(unsafe { std::slice::from_raw_parts(p, count as usize) })
    }

    /// Checks that `len` bytes at `address` lie in the artifact's memory.
    pub(super) fn check_range(&self, address: usize, len: usize, what: &str) -> Result<()> {
        match &self.segments {
            Some(segments) if !segments.holds(address, len) => Err(self.bad(format!(
                "{what}: {len} bytes at {address:#x} lie outside the artifact's memory"
            ))),
            _ => Ok(()),
        }
    }

    unsafe fn tensor(&self, d: &TccTensorDesc, what: &str) -> Result<TensorDesc> {
        // SAFETY: forwarded contract of `read`.
        let name = unsafe { self.string(d.name, &format!("{what} name"), true) }?;
        let dtype = DType::from_abi(d.dtype)
            .ok_or_else(|| self.bad(format!("{what}: unknown dtype code {}", d.dtype)))?;
        if d.rank > MAX_RANK {
            return Err(self.bad(format!("{what}: implausible rank {}", d.rank)));
        }
        // SAFETY: as above.
        let dims = unsafe { self.slice(d.shape, d.rank, &format!("{what} shape")) }?;
        // A symbolic extent (ABI 4) is marked here ("?", extent 0) and
        // named from the description (`Artifact::name_symbolic_dims`).
        let symbolic = dims.contains(&tcc_abi::symbolic::SYMBOLIC);
        let marks: Vec<String> = if symbolic {
            dims.iter()
                .map(|&x| {
                    if x == tcc_abi::symbolic::SYMBOLIC {
                        "?".to_string()
                    } else {
                        String::new()
                    }
                })
                .collect()
        } else {
            Vec::new()
        };
        let shape = dims
            .iter()
            .map(|&x| {
                if x == tcc_abi::symbolic::SYMBOLIC {
                    return Ok(0);
                }
                usize::try_from(x)
                    .map_err(|_| self.bad(format!("{what}: dimension {x} is not a static size")))
            })
            .collect::<Result<Vec<_>>>()?;
        if byte_size(&shape, dtype).is_none() {
            return Err(self.bad(format!(
                "{what}: {} is too large",
                type_string(&shape, dtype)
            )));
        }
        Ok(TensorDesc {
            name,
            dtype,
            shape,
            dims: marks,
        })
    }

    /// Launch record `index`: a name, a work-group of 1 to 1024 work-items
    /// in each dimension, and arguments of known kinds and element types.
    unsafe fn kernel(&self, k: &TccKernelDesc, index: usize) -> Result<tcc_abi::LaunchRecord> {
        // SAFETY: forwarded contract of `read`.
        let name = unsafe { self.string(k.name, &format!("kernels[{index}].name"), false) }?;
        let workgroup_size = [k.workgroup_x, k.workgroup_y, k.workgroup_z];
        if workgroup_size.iter().any(|&w| w == 0 || w > 1024) {
            return Err(self.bad(format!(
                "kernel `{name}`: implausible work-group size {workgroup_size:?}"
            )));
        }
        // SAFETY: as above.
        let args = unsafe { self.slice(k.args, k.num_args, &format!("kernel `{name}` args")) }?
            .iter()
            .enumerate()
            .map(|(j, arg)| {
                let known_kind = matches!(
                    arg.kind,
                    abi::TCC_ARG_BUFFER | abi::TCC_ARG_I32 | abi::TCC_ARG_I64 | abi::TCC_ARG_F32
                );
                if !known_kind {
                    return Err(self.bad(format!(
                        "kernel `{name}` argument {j}: unknown kind {}",
                        arg.kind
                    )));
                }
                if DType::from_abi(arg.dtype).is_none() {
                    return Err(self.bad(format!(
                        "kernel `{name}` argument {j}: unknown dtype code {}",
                        arg.dtype
                    )));
                }
                if arg.flags & !tcc_abi::ARG_WRITTEN != 0 {
                    return Err(self.bad(format!(
                        "kernel `{name}` argument {j}: unknown flags {:#x}",
                        arg.flags
                    )));
                }
                Ok(tcc_abi::KernelArgRecord {
                    kind: arg.kind,
                    dtype: arg.dtype,
                    elements: arg.elements,
                    written: arg.flags & tcc_abi::ARG_WRITTEN != 0,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(tcc_abi::LaunchRecord {
            name,
            flops: k.flops,
            workgroup_size,
            dynamic_local_bytes: k.dynamic_local_bytes,
            args,
        })
    }

    /// The validated contents of the table `a`.
    ///
    /// # Safety
    /// `a` is the table of a loaded artifact: its pointers, where non-null,
    /// point at what the ABI says.
    pub(super) unsafe fn read(&mut self, a: &TccArtifact) -> Result<Parts> {
        // SAFETY (whole function): every pointer is checked by `string` /
        // `slice` before use; their validity beyond non-null is the ABI's
        // contract.
        unsafe {
            let producer = self.string(a.producer, "producer", true)?;
            let source_kind = match a.source_kind {
                abi::TCC_SOURCE_OPENCL_C => SourceKind::OpenClC,
                abi::TCC_SOURCE_SPIRV => SourceKind::SpirV,
                abi::TCC_SOURCE_PTX => SourceKind::Ptx,
                k => return Err(self.bad(format!("unknown source kind {k}"))),
            };
            if a.source_bytes > MAX_SOURCE_BYTES {
                return Err(self.bad(format!("implausible source size {}", a.source_bytes)));
            }
            let mut source = if a.source_bytes == 0 {
                Vec::new()
            } else if a.source.is_null() {
                return Err(self.bad(format!(
                    "source is NULL but source_bytes is {}",
                    a.source_bytes
                )));
            } else {
                self.check_range(a.source as usize, a.source_bytes as usize, "source")?;
                std::slice::from_raw_parts(a.source as *const u8, a.source_bytes as usize).to_vec()
            };
            if source_kind != SourceKind::SpirV {
                // Text formats: a trailing NUL counted in source_bytes is not source.
                while source.last() == Some(&0) {
                    source.pop();
                }
            }
            if a.num_kernels > 0 && source.is_empty() {
                return Err(self.bad(format!("{} kernels but no kernel source", a.num_kernels)));
            }
            let build_options = self.string(a.build_options, "build_options", true)?;

            let mut kernels: Vec<tcc_abi::LaunchRecord> = Vec::new();
            for (i, k) in self
                .slice(a.kernels, a.num_kernels, "kernels")?
                .iter()
                .enumerate()
            {
                let record = self.kernel(k, i)?;
                if kernels.iter().any(|other| other.name == record.name) {
                    return Err(self.bad(format!("kernel `{}` is listed twice", record.name)));
                }
                kernels.push(record);
            }

            let descs: Vec<(&TccFunctionDescV1, u64, u64)> = self
                .slice(a.functions, a.num_functions, "functions")?
                .iter()
                .map(|f| {
                    // SAFETY: TccFunctionDesc starts with the v1 fields in
                    // the same layout (checked by the layout test).
                    let head = &*(f as *const TccFunctionDesc as *const TccFunctionDescV1);
                    (head, f.arena_bytes, f.arena_alignment)
                })
                .collect();
            let mut functions: Vec<FunctionInfo> = Vec::new();
            for (i, (f, arena_bytes, arena_alignment)) in descs.into_iter().enumerate() {
                let name = self.string(f.name, &format!("functions[{i}].name"), false)?;
                let entry = f
                    .entry
                    .ok_or_else(|| self.bad(format!("function @{name}: entry is NULL")))?;
                if let Some(segments) = &self.segments
                    && !segments.executable(entry as usize)
                {
                    return Err(self.bad(format!(
                        "function @{name}: entry points outside the artifact's code"
                    )));
                }
                // Without an arena the alignment does not matter (0 = unset).
                let arena_alignment = if arena_bytes == 0 {
                    arena_alignment.max(1)
                } else {
                    arena_alignment
                };
                if !arena_alignment.is_power_of_two() {
                    return Err(self.bad(format!(
                        "function @{name}: arena alignment {arena_alignment} is not a power of two"
                    )));
                }
                let tensors = |p, n, kind: &str| -> Result<Vec<TensorDesc>> {
                    self.slice(p, n, &format!("@{name} {kind}s"))?
                        .iter()
                        .enumerate()
                        .map(|(j, d)| self.tensor(d, &format!("@{name} {kind} {j}")))
                        .collect()
                };
                let inputs = tensors(f.inputs, f.num_inputs, "input")?;
                let outputs = tensors(f.outputs, f.num_outputs, "output")?;
                if functions.iter().any(|g| g.name == name) {
                    return Err(self.bad(format!("function @{name} is defined twice")));
                }
                functions.push(FunctionInfo {
                    name,
                    inputs,
                    outputs,
                    arena_bytes,
                    arena_alignment,
                    dims: Vec::new(),
                    specializations: Vec::new(),
                    entry,
                });
            }

            let constants = self
                .slice(a.constants, a.num_constants, "constants")?
                .iter()
                .enumerate()
                .map(|(i, c)| {
                    if c.data.is_null() && c.bytes > 0 {
                        Err(self.bad(format!(
                            "constants[{i}]: {} bytes but data is NULL",
                            c.bytes
                        )))
                    } else {
                        if c.bytes > 0 {
                            let bytes = usize::try_from(c.bytes).unwrap_or(usize::MAX);
                            self.check_range(c.data as usize, bytes, &format!("constants[{i}]"))?;
                        }
                        Ok(ConstantRef {
                            ptr: c.data as *const u8,
                            bytes: c.bytes,
                        })
                    }
                })
                .collect::<Result<Vec<_>>>()?;

            Ok(Parts {
                producer,
                source_kind,
                source,
                build_options,
                kernels,
                functions,
                constants,
            })
        }
    }
}
