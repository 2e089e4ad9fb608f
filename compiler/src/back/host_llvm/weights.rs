//! The artifact's constants (weights) as an ELF relocatable object of
//! their own, written with the `object` crate straight from the bytes the
//! MLIR attributes hold (a mapped model file's blobs) to the file, and
//! linked beside the host object.
//!
//! Putting hundreds of megabytes of weights into the LLVM module instead
//! copies them three times (a `ConstantDataArray`, the assembler's
//! fragments, the object's memory buffer) and makes printing the module
//! cost gigabytes; here they are copied once, by the kernel, into the file.
//! The host module declares each `tcc.constant.N` as an external hidden
//! symbol that this object defines.

use std::borrow::Cow;
use std::io::BufWriter;
use std::path::Path;

use object::write::{Object, Symbol, SymbolSection};
use object::{Architecture, BinaryFormat, Endianness, SymbolFlags, SymbolKind, SymbolScope};

use super::super::CodegenError;

/// The alignment of every constant (as the inline form's globals).
pub const CONSTANT_ALIGNMENT: u64 = 64;

/// The name of constant `index` (a hidden symbol: local to the shared
/// library, but global in a relocatable object or a static library, so it
/// carries the model's symbol prefix there, `NAME_tcc.constant.N`, and two
/// models' objects link into one program).
pub fn constant_symbol(prefix: &str, index: usize) -> String {
    format!("{prefix}tcc.constant.{index}")
}

/// The ELF architecture of a host triple (`None`: this machine).
fn architecture(triple: Option<&str>) -> Result<Architecture, CodegenError> {
    let aarch64 = match triple {
        Some(text) => text.starts_with("aarch64") || text.starts_with("arm64"),
        None => cfg!(target_arch = "aarch64"),
    };
    if aarch64 {
        Ok(Architecture::Aarch64)
    } else if triple.is_none_or(|t| t.starts_with("x86_64")) {
        Ok(Architecture::X86_64)
    } else {
        Err(CodegenError::new(format!(
            "--host-triple={}: tcc's LLVM has the x86-64 and AArch64 back ends ({})",
            triple.unwrap_or_default(),
            super::HOST_TRIPLES.join(", ")
        )))
    }
}

/// Writes `constants` into an ELF object at `path`: constant `i` is the
/// hidden symbol [`constant_symbol`]`(i)` in a read-only section of its own,
/// 64-byte aligned. The bytes are borrowed, not copied, until written.
pub fn write_object(
    path: &Path,
    triple: Option<&str>,
    prefix: &str,
    constants: &[Cow<'_, [u8]>],
) -> Result<(), CodegenError> {
    let mut object = Object::new(BinaryFormat::Elf, architecture(triple)?, Endianness::Little);
    for (index, bytes) in constants.iter().enumerate() {
        let name = constant_symbol(prefix, index);
        // ELF has no segment names.
        let section = object.add_section(
            Vec::new(),
            format!(".rodata.{name}").into_bytes(),
            object::SectionKind::ReadOnlyData,
        );
        object.set_section_data(section, &bytes[..], CONSTANT_ALIGNMENT);
        object.add_symbol(Symbol {
            name: name.into_bytes(),
            value: 0,
            size: bytes.len() as u64,
            kind: SymbolKind::Data,
            scope: SymbolScope::Linkage,
            weak: false,
            section: SymbolSection::Section(section),
            flags: SymbolFlags::None,
        });
    }
    let file = std::fs::File::create(path)
        .map_err(|e| CodegenError::new(format!("cannot create {}: {e}", path.display())))?;
    object
        .write_stream(BufWriter::with_capacity(1 << 20, file))
        .map_err(|e| CodegenError::new(format!("cannot write {}: {e}", path.display())))
}
