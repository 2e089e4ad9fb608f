//! `.npy` files ↔ `HostTensor`, through the `npyz` crate.
//!
//! Only the six ABI element types are accepted (`<f4 <f2 <i4 <i8 |i1 |b1`),
//! little-endian and C-ordered: anything else is an error, never a silent
//! conversion. Writes go through [`crate::output_file`]: a regular file is
//! replaced atomically (temporary file in the target directory, then
//! rename) so a crashed run never leaves a half-written result.

use std::fs::File;
use std::io::{BufReader, Write};
use std::path::Path;

use half::f16;
use npyz::{Order, WriterBuilder};

use crate::error::{Error, Result};
use crate::tensor::{DType, HostTensor};

fn descr(dtype: DType) -> &'static str {
    match dtype {
        DType::F32 => "<f4",
        DType::F16 => "<f2",
        DType::I32 => "<i4",
        DType::I64 => "<i8",
        DType::I8 => "|i1",
        DType::Bool => "|b1",
    }
}

fn npy_error(path: &Path, reason: impl Into<String>) -> Error {
    Error::Npy {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

/// Reads a `.npy` file into a tensor of the same dtype and shape.
pub fn read_npy(path: &Path) -> Result<HostTensor> {
    let file = File::open(path).map_err(|e| npy_error(path, format!("cannot open: {e}")))?;
    let npy = npyz::NpyFile::new(BufReader::new(file))
        .map_err(|e| npy_error(path, format!("not a readable .npy file: {e}")))?;
    let type_str = match npy.dtype() {
        npyz::DType::Plain(ts) => ts.to_string(),
        other => {
            return Err(npy_error(
                path,
                format!("structured dtype {:?} is not supported", other.descr()),
            ));
        }
    };
    let dtype = DType::ALL.into_iter().find(|d| descr(*d) == type_str).ok_or_else(|| {
        npy_error(
            path,
            format!(
                "element type `{type_str}` is not supported (supported: <f4 f32, <f2 f16, <i4 i32, <i8 i64, |i1 i8, |b1 i1; \
                 convert with numpy's astype, tcc-run does not convert)"
            ),
        )
    })?;
    if npy.order() == Order::Fortran && npy.shape().len() > 1 {
        return Err(npy_error(
            path,
            "Fortran-ordered arrays are not supported (save with np.ascontiguousarray)",
        ));
    }
    let shape = npy
        .shape()
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| npy_error(path, "dimension too large")))
        .collect::<Result<Vec<_>>>()?;
    let read_err = |e: std::io::Error| npy_error(path, format!("bad data: {e}"));
    let bytes: Vec<u8> = match dtype {
        DType::F32 => npy
            .into_vec::<f32>()
            .map_err(read_err)?
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect(),
        DType::F16 => npy
            .into_vec::<f16>()
            .map_err(read_err)?
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect(),
        DType::I32 => npy
            .into_vec::<i32>()
            .map_err(read_err)?
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect(),
        DType::I64 => npy
            .into_vec::<i64>()
            .map_err(read_err)?
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect(),
        DType::I8 => npy
            .into_vec::<i8>()
            .map_err(read_err)?
            .iter()
            .map(|&v| v as u8)
            .collect(),
        DType::Bool => npy
            .into_vec::<bool>()
            .map_err(read_err)?
            .iter()
            .map(|&v| v as u8)
            .collect(),
    };
    HostTensor::new(dtype, shape, bytes).map_err(|e| npy_error(path, e.to_string()))
}

/// Writes `tensor` to `path`: atomically (temporary file + rename) for a
/// regular file, through the file for a device or FIFO, to the target of a
/// symlink (see [`crate::output_file`]). A new file's mode follows the
/// umask.
pub fn write_npy(path: &Path, tensor: &HostTensor) -> Result<()> {
    crate::output_file::write_output(path, false, |out| write_npy_to(out, tensor))
        .map_err(|e| npy_error(path, format!("cannot write: {e}")))
}

fn write_npy_to<W: Write>(out: W, t: &HostTensor) -> std::io::Result<()> {
    let shape: Vec<u64> = t.shape.iter().map(|&d| d as u64).collect();
    let type_str: npyz::TypeStr = descr(t.dtype)
        .parse()
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("{e}")))?;
    let dtype = npyz::DType::Plain(type_str);
    macro_rules! write_as {
        ($t:ty, $conv:expr) => {{
            let mut w = npyz::WriteOptions::<$t>::new()
                .dtype(dtype)
                .shape(&shape)
                .writer(out)
                .begin_nd()?;
            w.extend(t.bytes.chunks_exact(t.dtype.size()).map($conv))?;
            w.finish()
        }};
    }
    match t.dtype {
        DType::F32 => write_as!(f32, |c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])),
        DType::F16 => write_as!(f16, |c| f16::from_le_bytes([c[0], c[1]])),
        DType::I32 => write_as!(i32, |c| i32::from_le_bytes([c[0], c[1], c[2], c[3]])),
        DType::I64 => write_as!(i64, |c| i64::from_le_bytes([
            c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]
        ])),
        DType::I8 => write_as!(i8, |c| c[0] as i8),
        DType::Bool => write_as!(bool, |c| c[0] != 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_every_dtype() {
        let dir = tempfile::tempdir().unwrap();
        for (i, lit) in [
            "2x3xf32=1,2,3,4,5,6",
            "2xf16=0.5,-1",
            "3xi32=-1,0,7",
            "i64=9",
            "2x2xi8=-128,0,1,127",
            "3xi1=1,0,1",
            "0x4xf32=",
        ]
        .iter()
        .enumerate()
        {
            let t = HostTensor::parse_literal(lit).unwrap();
            let p = dir.path().join(format!("t{i}.npy"));
            write_npy(&p, &t).unwrap();
            assert_eq!(read_npy(&p).unwrap(), t, "{lit}");
        }
    }

    #[test]
    fn rejects_bad_files() {
        let dir = tempfile::tempdir().unwrap();
        let garbage = dir.path().join("garbage.npy");
        std::fs::write(&garbage, b"definitely not numpy").unwrap();
        let e = read_npy(&garbage).unwrap_err().to_string();
        assert!(
            e.contains("garbage.npy") && e.contains("not a readable .npy file"),
            "{e}"
        );

        let missing = dir.path().join("missing.npy");
        assert!(
            read_npy(&missing)
                .unwrap_err()
                .to_string()
                .contains("cannot open")
        );

        // float64 data is refused, not converted.
        let f64_path = dir.path().join("f64.npy");
        npyz::to_file_1d(&f64_path, vec![1.0f64, 2.0]).unwrap();
        let e = read_npy(&f64_path).unwrap_err().to_string();
        assert!(e.contains("`<f8` is not supported"), "{e}");

        // Truncated data.
        let t = HostTensor::from_f32(vec![64], &[1.0; 64]).unwrap();
        let p = dir.path().join("trunc.npy");
        write_npy(&p, &t).unwrap();
        let bytes = std::fs::read(&p).unwrap();
        std::fs::write(&p, &bytes[..bytes.len() - 10]).unwrap();
        assert!(read_npy(&p).is_err());
    }
}
