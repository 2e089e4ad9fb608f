//! The artifact's checksummed description (its format is tcc-abi's,
//! [`tcc_abi::description`], re-exported here) and [`ArtifactFile`], which
//! reads it and the constants from an artifact's ELF file without loading
//! it.

use std::path::Path;

use sha2::{Digest, Sha256};
pub use tcc_abi::description::*;

/// An artifact's ELF file, read through the `object` crate without
/// loading it (nothing of it runs).
pub struct ArtifactFile {
    cache: object::ReadCache<std::fs::File>,
}

type Elf<'a> = object::File<'a, &'a object::ReadCache<std::fs::File>>;

impl ArtifactFile {
    pub fn open(path: &Path) -> Result<Self, String> {
        let file = std::fs::File::open(path).map_err(|e| format!("cannot open it: {e}"))?;
        Ok(ArtifactFile {
            cache: object::ReadCache::new(file),
        })
    }

    fn elf(&self) -> Result<Elf<'_>, String> {
        object::File::parse(&self.cache).map_err(|e| format!("not a valid ELF file: {e}"))
    }

    /// The address of the dynamic symbol `name` (with any `NAME_` prefix).
    fn symbol(elf: &Elf<'_>, name: &str) -> Option<u64> {
        use object::{Object, ObjectSymbol};
        elf.dynamic_symbols()
            .find(|s| {
                s.name()
                    .is_ok_and(|n| n == name || n.ends_with(&format!("_{name}")))
            })
            .map(|s| s.address())
    }

    /// `len` bytes of the file's sections at virtual address `address`.
    fn bytes_at<'a>(elf: &Elf<'a>, address: u64, len: u64) -> Result<&'a [u8], String> {
        use object::{Object, ObjectSection};
        for section in elf.sections() {
            let start = section.address();
            if address >= start && address < start.saturating_add(section.size()) {
                return section
                    .data_range(address, len)
                    .map_err(|e| format!("cannot read {len} bytes at {address:#x}: {e}"))?
                    .ok_or_else(|| format!("{len} bytes at {address:#x} run past their section"));
            }
        }
        Err(format!("no section holds the address {address:#x}"))
    }

    /// The description (`tcc_description_v1`), checked against its own
    /// checksum.
    pub fn description(&self) -> Result<Description, String> {
        let elf = self.elf()?;
        let name = tcc_abi::DESCRIPTION_SYMBOL;
        let address = Self::symbol(&elf, name).ok_or_else(|| {
            format!(
                "it has no {name} symbol (not a tcc artifact, or one compiled by a tcc older than the checksummed description)"
            )
        })?;
        let header = Self::bytes_at(&elf, address, HEADER_LEN as u64)?;
        let len = Description::declared_len(header)?;
        let blob = Self::bytes_at(&elf, address, HEADER_LEN as u64 + len)
            .map_err(|e| format!("its description is damaged: {e}"))?;
        Description::decode(blob)
    }

    /// [`constants_digest`] of the `count` constants that the descriptors
    /// `tcc_constants_v1` point at, each pointer found through the file's
    /// dynamic relocations (`R_*_RELATIVE`: the addend is the address).
    pub fn constants_digest(&self, count: usize) -> Result<String, String> {
        use object::Object;
        let elf = self.elf()?;
        if count == 0 {
            return Ok(constants_digest([]));
        }
        let name = tcc_abi::CONSTANTS_SYMBOL;
        let table = Self::symbol(&elf, name)
            .ok_or_else(|| format!("it has no {name} symbol, so its constants cannot be found"))?;
        let descriptors = Self::bytes_at(&elf, table, count as u64 * 16)?;
        let mut targets = std::collections::HashMap::new();
        if let Some(relocations) = elf.dynamic_relocations() {
            let end = table + count as u64 * 16;
            for (offset, relocation) in relocations {
                if (table..end).contains(&offset) {
                    targets.insert(offset, relocation.addend() as u64);
                }
            }
        }
        let mut hasher = Sha256::new();
        for i in 0..count {
            let entry = &descriptors[i * 16..i * 16 + 16];
            let bytes = u64::from_le_bytes(entry[8..16].try_into().unwrap());
            // With RELA relocations the addend is the target; a linker that
            // also writes it in place (or REL) leaves it in the entry.
            let address = match targets.get(&(table + i as u64 * 16)) {
                Some(&target) if target != 0 => target,
                _ => u64::from_le_bytes(entry[..8].try_into().unwrap()),
            };
            hasher.update(bytes.to_le_bytes());
            if bytes > 0 {
                hasher.update(Self::bytes_at(&elf, address, bytes)?);
            }
        }
        Ok(hex(&hasher.finalize()))
    }
}
