//! The artifact's checksummed description, `tcc_description_v1`: a plain
//! byte array (no pointers, so no relocations) that the compiler exports
//! next to the ABI table. It holds, as JSON, everything the table says
//! (functions and their tensors, kernels and their flops, constant sizes,
//! source and build options as digests, producer, metadata) and the
//! SHA-256 of the constants, behind a header with its own SHA-256:
//!
//! ```text
//! "TCCDESC\x01"  u64 LE length  [32] SHA-256 of the JSON  JSON
//! ```
//!
//! It serves two checks. `tcc inspect` reads it from the ELF file (through
//! the `object` crate, `tcc_runtime::artifact::description::ArtifactFile`)
//! without loading the artifact, so nothing of the
//! artifact runs. The loader compares it with what it read from the table:
//! a damaged table (or description) is an error, not a wrong result; and
//! on request (`--verify`) it hashes the constants and compares them too.
//! The machine code is not covered: a flipped bit there is undetectable
//! (artifacts are code; see docs/reliability.md).

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The blob's magic.
pub const MAGIC: &[u8; 8] = b"TCCDESC\x01";
/// magic + length + SHA-256.
pub const HEADER_LEN: usize = 8 + 8 + 32;
/// Descriptions larger than this are refused (a model's is kilobytes).
pub const MAX_DESCRIPTION_BYTES: u64 = 64 << 20;

/// One tensor of a function's signature.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TensorEntry {
    pub name: String,
    /// The `enum tcc_dtype` code.
    pub dtype: u32,
    /// The extents; [`crate::symbolic::SYMBOLIC`] for a symbolic one.
    pub shape: Vec<i64>,
    /// With a symbolic extent: each axis's dimension name (`""` for a
    /// static axis); empty for a static tensor (and then not written).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dims: Vec<String>,
}

/// One function.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FunctionEntry {
    pub name: String,
    pub inputs: Vec<TensorEntry>,
    pub outputs: Vec<TensorEntry>,
    pub arena_bytes: u64,
    /// As the loader reads it: 1 when `arena_bytes` is 0 and none is set.
    pub arena_alignment: u64,
    /// The symbolic dimensions its tensors name, with their ranges (none
    /// for a static function, and then not written).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dims: Vec<crate::symbolic::DimEntry>,
    /// The buckets compiled ahead of time as static variants (`tcc
    /// compile --specialize`): each the values it fixes, by dimension
    /// name. The function's host entry runs the variant whose values a
    /// call binds (none for a function without, and then not written).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub specializations: Vec<Vec<(String, i64)>>,
}

/// One kernel: its launch record, as the table holds it.
pub type KernelEntry = crate::LaunchRecord;

/// What an artifact's table says, with digests of its larger parts.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Description {
    pub abi_version: u32,
    pub producer: String,
    /// The `enum tcc_source_kind` code.
    pub source_kind: u32,
    /// SHA-256 (hex) of the kernel source, trailing NULs excluded.
    pub source_sha256: String,
    pub build_options: String,
    pub kernels: Vec<KernelEntry>,
    pub functions: Vec<FunctionEntry>,
    /// Each constant's size in bytes.
    pub constant_bytes: Vec<u64>,
    /// [`constants_digest`] of the constants.
    pub constants_sha256: String,
    /// SHA-256 (hex) of the PTX text, if any.
    pub ptx_sha256: Option<String>,
    /// The compiler's JSON metadata (`tcc_metadata_v1`), if any.
    pub metadata: Option<String>,
}

/// Lower-case hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The source as the loader keeps it (text sources lose trailing NULs).
pub fn source_digest(source: &[u8]) -> String {
    let mut end = source.len();
    while end > 0 && source[end - 1] == 0 {
        end -= 1;
    }
    sha256_hex(&source[..end])
}

/// SHA-256 (hex) over the constants in order, each as its length (u64
/// LE) then its bytes.
pub fn constants_digest<'a>(constants: impl IntoIterator<Item = &'a [u8]>) -> String {
    let mut hasher = Sha256::new();
    for bytes in constants {
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    }
    hex(&hasher.finalize())
}

/// The arena alignment the loader records (see [`FunctionEntry`]).
pub fn normalized_alignment(arena_bytes: u64, arena_alignment: u64) -> u64 {
    if arena_bytes == 0 {
        arena_alignment.max(1)
    } else {
        arena_alignment
    }
}

impl Description {
    /// The blob: header, then the JSON.
    pub fn encode(&self) -> Vec<u8> {
        let json = serde_json::to_vec(self).expect("a description serializes");
        let mut out = Vec::with_capacity(HEADER_LEN + json.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&(json.len() as u64).to_le_bytes());
        out.extend_from_slice(&Sha256::digest(&json));
        out.extend_from_slice(&json);
        out
    }

    /// The JSON length a blob's header declares, after checking its magic
    /// (`header` holds at least [`HEADER_LEN`] bytes).
    pub fn declared_len(header: &[u8]) -> Result<u64, String> {
        if header.len() < HEADER_LEN || &header[..8] != MAGIC {
            return Err(
                "its description (tcc_description_v1) has a bad header: the artifact is damaged"
                    .into(),
            );
        }
        let len = u64::from_le_bytes(header[8..16].try_into().unwrap());
        if len > MAX_DESCRIPTION_BYTES {
            return Err(format!(
                "its description declares an implausible length of {len} bytes: the artifact is damaged"
            ));
        }
        Ok(len)
    }

    /// Decodes a blob (header and JSON; trailing bytes are ignored) after
    /// checking its digest.
    pub fn decode(blob: &[u8]) -> Result<Self, String> {
        let len = Self::declared_len(blob)? as usize;
        let json = blob
            .get(HEADER_LEN..HEADER_LEN + len)
            .ok_or("its description is truncated")?;
        if Sha256::digest(json)[..] != blob[16..48] {
            return Err(
                "its description does not match its checksum: the artifact is damaged".into(),
            );
        }
        serde_json::from_slice(json)
            .map_err(|e| format!("its description is not valid: {e} (the artifact is damaged)"))
    }

    /// The first difference between `self` (the description) and `table`
    /// (what the table says), in words, or `None`.
    pub fn difference(&self, table: &Description) -> Option<String> {
        if self == table {
            return None;
        }
        let what = if self.abi_version != table.abi_version {
            "the ABI version".to_string()
        } else if self.functions.len() != table.functions.len() {
            format!(
                "the table lists {} functions, the description {}",
                table.functions.len(),
                self.functions.len()
            )
        } else if let Some((a, b)) = self
            .functions
            .iter()
            .zip(&table.functions)
            .find(|(a, b)| a != b)
        {
            if a.name == b.name {
                format!("function @{}", b.name)
            } else {
                format!("function @{}, @{} in the description", b.name, a.name)
            }
        } else if self.kernels != table.kernels {
            "the kernels".into()
        } else if self.constant_bytes != table.constant_bytes {
            "the constants' sizes".into()
        } else if self.source_sha256 != table.source_sha256 || self.source_kind != table.source_kind
        {
            "the kernel source".into()
        } else if self.ptx_sha256 != table.ptx_sha256 {
            "the PTX".into()
        } else if self.metadata != table.metadata {
            "the metadata".into()
        } else {
            "the producer or build options".into()
        };
        Some(format!(
            "its table does not match its checksummed description ({what}): the artifact is damaged"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Description {
        Description {
            abi_version: crate::ABI_VERSION,
            producer: "tcc".into(),
            source_kind: 0,
            source_sha256: source_digest(b"kernel\0"),
            build_options: String::new(),
            kernels: vec![KernelEntry {
                name: "k".into(),
                flops: 3,
                workgroup_size: [64, 1, 1],
                dynamic_local_bytes: 0,
                args: vec![crate::KernelArgRecord {
                    kind: crate::ARG_BUFFER,
                    dtype: crate::DTYPE_F32,
                    elements: 2,
                    written: true,
                }],
            }],
            functions: vec![],
            constant_bytes: vec![2],
            constants_sha256: constants_digest([&[1u8, 2][..]]),
            ptx_sha256: None,
            metadata: None,
        }
    }

    #[test]
    fn every_flipped_bit_of_a_blob_is_an_error() {
        let blob = sample().encode();
        assert_eq!(Description::decode(&blob).unwrap(), sample());
        for bit in 0..blob.len() * 8 {
            let mut bad = blob.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            assert!(Description::decode(&bad).is_err(), "bit {bit}");
        }
        assert!(Description::decode(&blob[..blob.len() - 1]).is_err());
    }

    #[test]
    fn the_source_digest_ignores_trailing_nuls_and_constants_lengths_count() {
        assert_eq!(source_digest(b"abc\0\0"), source_digest(b"abc"));
        assert_ne!(
            constants_digest([&[1u8][..], &[2u8][..]]),
            constants_digest([&[1u8, 2][..]])
        );
    }
}
