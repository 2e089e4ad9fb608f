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

/// LLVM's address-significance table (`.llvm_addrsig`).
const SHT_LLVM_ADDRSIG: u32 = 0x6fff_4c03;

/// Writes to `output` one relocatable object holding the host object
/// `host` and the constants of the weights object `weights` (as
/// [`write_object`] wrote it): the host object is read into an ELF builder,
/// each constant's section is added to it borrowing its bytes, and the
/// host's undefined references to the constants become definitions. What
/// `--emit=obj` writes: a linker (`ld.lld -r`) would map the weights and
/// hold a second copy in its output buffer, about three times their size.
pub fn merge_into_host(host: &[u8], weights: &[u8], output: &Path) -> Result<(), CodegenError> {
    use object::build::elf::{Builder, SectionData};
    use object::elf;
    use object::read::{Object as _, ObjectSection as _, ObjectSymbol as _};
    let failed = |e: &dyn std::fmt::Display| {
        CodegenError::new(format!("merging the host and weights objects failed: {e}"))
    };
    let mut builder = Builder::read(host).map_err(|e| failed(&e))?;
    // The address-significance table lists symbol-table indices, which the
    // rewrite renumbers; a linker without it treats every symbol as
    // address-significant, which is always correct.
    for section in builder.sections.iter_mut() {
        if section.sh_type == SHT_LLVM_ADDRSIG {
            section.delete = true;
        }
    }
    // LLVM writes section and symbol names into one `.strtab`, which the
    // builder reads as the symbol names only: section names get a table
    // of their own.
    if !builder
        .sections
        .iter()
        .any(|s| matches!(s.data, SectionData::SectionString))
    {
        let names = builder.sections.add();
        names.name = b".shstrtab"[..].into();
        names.sh_type = elf::SHT_STRTAB;
        names.sh_addralign = 1;
        names.data = SectionData::SectionString;
    }
    let constants = object::read::File::parse(weights).map_err(|e| failed(&e))?;
    for symbol in constants.symbols() {
        let object::SymbolSection::Section(index) = symbol.section() else {
            continue;
        };
        let section = constants.section_by_index(index).map_err(|e| failed(&e))?;
        let name = symbol.name_bytes().map_err(|e| failed(&e))?;
        let added = builder.sections.add();
        added.name = section.name_bytes().map_err(|e| failed(&e))?.into();
        added.sh_type = elf::SHT_PROGBITS;
        added.sh_flags = u64::from(elf::SHF_ALLOC);
        added.sh_addralign = section.align();
        added.data = SectionData::Data(section.data().map_err(|e| failed(&e))?.into());
        let id = added.id();
        let defined = match builder
            .symbols
            .iter_mut()
            .find(|s| s.name.as_slice() == name && s.section.is_none())
        {
            Some(declared) => declared,
            None => {
                let new = builder.symbols.add();
                new.name = name.into();
                new
            }
        };
        defined.section = Some(id);
        defined.st_shndx = 0;
        defined.st_value = 0;
        defined.st_size = symbol.size();
        defined.st_info = (elf::STB_GLOBAL << 4) | elf::STT_OBJECT;
        defined.st_other = elf::STV_HIDDEN;
    }
    let file = std::fs::File::create(output)
        .map_err(|e| CodegenError::new(format!("cannot create {}: {e}", output.display())))?;
    let mut buffer = object::write::StreamingBuffer::new(BufWriter::with_capacity(1 << 20, file));
    builder.write(&mut buffer).map_err(|e| failed(&e))?;
    buffer
        .result()
        .and_then(|()| std::io::Write::flush(&mut buffer.into_inner()))
        .map_err(|e| CodegenError::new(format!("cannot write {}: {e}", output.display())))
}
