//! Kernel buffers and the typed parameter list of a kernel.
//!
//! Every kernel argument is a whole buffer: a [`Buffer`] (its C name and
//! the element type it stores) plus an [`Access`] makes a
//! [`KernelParameter`], and a [`KernelParameters`] list renders itself as
//! the kernel's C parameter list. Templates and the compiler's writer read
//! and write a buffer's elements only through [`Buffer::load`],
//! [`Buffer::store`] and their vector forms, so that how an element is
//! stored (a `bool` as a byte today; later, say, a `half` read into a
//! `float`) is decided in this one place.

use std::fmt;

/// The element type a buffer stores, as its C pointer declares it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Storage {
    F16,
    /// bfloat16, as the top 16 bits of an f32 (`ushort` in C).
    BF16,
    F32,
    F64,
    /// A boolean, stored as one byte (`uchar`: 0 or 1).
    Bool,
    I8,
    I16,
    I32,
    I64,
}

impl Storage {
    /// The C type of the buffer's pointer.
    pub fn c_type(self) -> &'static str {
        match self {
            Storage::F16 => "half",
            Storage::BF16 => "ushort",
            Storage::F32 => "float",
            Storage::F64 => "double",
            Storage::Bool => "uchar",
            Storage::I8 => "char",
            Storage::I16 => "short",
            Storage::I32 => "int",
            Storage::I64 => "long",
        }
    }
}

/// A kernel argument's buffer: its C name and what it stores.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Buffer {
    pub name: String,
    pub storage: Storage,
}

impl Buffer {
    pub fn new(name: impl Into<String>, storage: Storage) -> Self {
        Buffer {
            name: name.into(),
            storage,
        }
    }

    /// A buffer of floats (what the templates' operands hold).
    pub fn f32(name: impl Into<String>) -> Self {
        Buffer::new(name, Storage::F32)
    }

    /// The C expression of the element at `index` (an element offset).
    /// A half buffer's element is read as a `float` (`vload_half`, which
    /// every OpenCL device has, with or without `cl_khr_fp16`); a bf16
    /// one's bits become the top half of a `float`'s.
    pub fn load(&self, index: &str) -> String {
        match self.storage {
            Storage::Bool => format!("({}[{index}] != 0)", self.name),
            Storage::F16 => format!("vload_half({index}, {})", self.name),
            Storage::BF16 => format!("as_float((uint){}[{index}] << 16)", self.name),
            _ => format!("{}[{index}]", self.name),
        }
    }

    /// The C statement storing `value` at element offset `index`; a half
    /// buffer takes a `float` rounded to the nearest even half
    /// (`TCC_STORE_F16`: `vstore_half_rte`, or one `cvt.rn` in the PTX
    /// form, see [`F16_HELPERS`]), a bf16 one the float rounded to nearest
    /// even bf16 (`tcc_f32_to_bf16`, NaN kept a quiet NaN: see the program
    /// prelude, [`BF16_HELPERS`]).
    pub fn store(&self, value: &str, index: &str) -> String {
        match self.storage {
            Storage::Bool => format!("{}[{index}] = (uchar)({value} ? 1 : 0);", self.name),
            Storage::F16 => format!("TCC_STORE_F16({value}, {index}, {});", self.name),
            Storage::BF16 => format!("{}[{index}] = tcc_f32_to_bf16({value});", self.name),
            _ => format!("{}[{index}] = {value};", self.name),
        }
    }

    /// The C expression of the `width` elements from element offset
    /// `index` (a `floatN` for a float buffer, and for a half one).
    pub fn load_vector(&self, width: u32, index: &str) -> String {
        match self.storage {
            Storage::F16 => format!("vload_half{width}(0, {} + {index})", self.name),
            Storage::BF16 => format!(
                "as_float{width}(convert_uint{width}(vload{width}(0, {} + {index})) << 16)",
                self.name
            ),
            _ => format!("vload{width}(0, {} + {index})", self.name),
        }
    }

    /// The C statement storing the `width`-element vector `value` from
    /// element offset `index`.
    pub fn store_vector(&self, width: u32, value: &str, index: &str) -> String {
        match self.storage {
            Storage::F16 => format!(
                "TCC_STORE_F16_{width}({value}, 0, {} + {index});",
                self.name
            ),
            Storage::BF16 => format!(
                "vstore{width}(tcc_f32_to_bf16_{width}({value}), 0, {} + {index});",
                self.name
            ),
            _ => format!("vstore{width}({value}, 0, {} + {index});", self.name),
        }
    }
}

impl Buffer {
    /// Like [`Buffer::load_vector`], for a caller that knows `index` is a
    /// multiple of `width` elements from the buffer's start (buffers start
    /// 16-byte aligned): one memory instruction per 16 bytes. libclc's
    /// `vloadN` and `vload_halfN` read element by element (they may not
    /// assume alignment), which made a 7x7 depthwise kernel over half
    /// channels four 16-bit loads per `float4`: 68 load instructions per
    /// window row where 17 do. Widths 2, 4, 8 and 16 (floats: 2 and 4;
    /// wider float vectors keep `vloadN`, whose CPU form is one SIMD load).
    pub fn load_vector_aligned(&self, width: u32, index: &str) -> String {
        let p = &self.name;
        match (self.storage, width) {
            (Storage::F32, 2 | 4) => format!("(*(__global const float{width}*)({p} + {index}))"),
            (Storage::F16, 2 | 4 | 8 | 16) => format!("tcc_load_f16_aligned{width}({p} + {index})"),
            (Storage::BF16, 2 | 4 | 8 | 16) => {
                format!("tcc_load_bf16_aligned{width}({p} + {index})")
            }
            _ => self.load_vector(width, index),
        }
    }

    /// Like [`Buffer::store_vector`], for a caller that knows `index` is a
    /// multiple of `width` elements from the buffer's start: one memory
    /// instruction per 16 bytes (see [`Buffer::load_vector_aligned`]).
    pub fn store_vector_aligned(&self, width: u32, value: &str, index: &str) -> String {
        let p = &self.name;
        match (self.storage, width) {
            (Storage::F32, 2 | 4) => {
                format!("*(__global float{width}*)({p} + {index}) = {value};")
            }
            (Storage::F16, 2 | 4 | 8) => {
                format!("tcc_store_f16_aligned{width}({value}, {p} + {index});")
            }
            (Storage::BF16, 2 | 4 | 8) => {
                format!("tcc_store_bf16_aligned{width}({value}, {p} + {index});")
            }
            _ => self.store_vector(width, value, index),
        }
    }
}

/// The helpers that widen half bits held in a `uint` (two halves) to
/// floats: one `cvt` each in the PTX form, `vload_half2` of the word
/// elsewhere. Guarded, so that every kernel text that needs them may
/// carry them.
pub const HALF_BITS_HELPERS: &str = "\
#ifndef TCC_HALF_BITS_HELPERS
#define TCC_HALF_BITS_HELPERS
#ifdef TCC_PTX
inline float2 tcc_half2_bits_to_float2(uint w) { float lo, hi; __asm__(\"{ .reg .b16 l, h; mov.b32 {l, h}, %2; cvt.f32.f16 %0, l; cvt.f32.f16 %1, h; }\" : \"=f\"(lo), \"=f\"(hi) : \"r\"(w)); return (float2)(lo, hi); }
#else
inline float2 tcc_half2_bits_to_float2(uint w) { __private uint bits = w; return vload_half2(0, (__private const half*)&bits); }
#endif
#endif
";

/// The aligned half loads ([`Buffer::load_vector_aligned`]): in the PTX
/// form one 4-, 8- or 16-byte load and a `cvt.f32.f16` per element, the
/// conversions of a load in one `asm` statement (an `asm` call between
/// the two words' loads kept LLVM from merging them into one);
/// elsewhere `vload_halfN` (which OpenCL compilers for CPUs vectorize).
/// The program prelude adds them (after [`HALF_BITS_HELPERS`]) where a
/// kernel calls one.
pub const F16_ALIGNED_LOADS: &str = "\
#ifdef TCC_PTX
inline float2 tcc_load_f16_aligned2(__global const half* p) { return tcc_half2_bits_to_float2(*(__global const uint*)p); }
inline float4 tcc_load_f16_aligned4(__global const half* p) {
  const uint2 w = *(__global const uint2*)p;
  float4 r;
  __asm__(\"{ .reg .b16 h<4>; mov.b32 {h0, h1}, %4; mov.b32 {h2, h3}, %5; cvt.f32.f16 %0, h0; cvt.f32.f16 %1, h1; cvt.f32.f16 %2, h2; cvt.f32.f16 %3, h3; }\"
          : \"=f\"(r.s0), \"=f\"(r.s1), \"=f\"(r.s2), \"=f\"(r.s3) : \"r\"(w.x), \"r\"(w.y));
  return r;
}
inline float8 tcc_load_f16_aligned8(__global const half* p) {
  const uint4 w = *(__global const uint4*)p;
  float8 r;
  __asm__(\"{ .reg .b16 h<8>; mov.b32 {h0, h1}, %8; mov.b32 {h2, h3}, %9; mov.b32 {h4, h5}, %10; mov.b32 {h6, h7}, %11; cvt.f32.f16 %0, h0; cvt.f32.f16 %1, h1; cvt.f32.f16 %2, h2; cvt.f32.f16 %3, h3; cvt.f32.f16 %4, h4; cvt.f32.f16 %5, h5; cvt.f32.f16 %6, h6; cvt.f32.f16 %7, h7; }\"
          : \"=f\"(r.s0), \"=f\"(r.s1), \"=f\"(r.s2), \"=f\"(r.s3), \"=f\"(r.s4), \"=f\"(r.s5), \"=f\"(r.s6), \"=f\"(r.s7) : \"r\"(w.x), \"r\"(w.y), \"r\"(w.z), \"r\"(w.w));
  return r;
}
#else
inline float2 tcc_load_f16_aligned2(__global const half* p) { return vload_half2(0, p); }
inline float4 tcc_load_f16_aligned4(__global const half* p) { return vload_half4(0, p); }
inline float8 tcc_load_f16_aligned8(__global const half* p) { return vload_half8(0, p); }
#endif
inline float16 tcc_load_f16_aligned16(__global const half* p) { return (float16)(tcc_load_f16_aligned8(p), tcc_load_f16_aligned8(p + 8)); }
";

/// An epilogue that stores a vector of neighbouring outputs at once (a
/// window column's channels, four columns of a GEMM tile): each lane's
/// value computed on its own (the epilogue's scalar arithmetic), then one
/// store ([`Buffer::store_vector_aligned`]).
#[derive(Clone, Debug)]
pub struct VectorStore {
    /// C statements computing one lane's float to store, from
    /// `acc_value` and the lane's indices; they end by assigning it to
    /// `stored[l]`.
    pub value: String,
    /// The C statement storing the `floatN` `stored_vector` at the first
    /// lane's indices.
    pub store: String,
}

impl fmt::Display for Buffer {
    /// The buffer's C name (its pointer).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

/// The OpenCL C helpers a program that stores bf16 needs (the program
/// prelude includes them): f32 → bf16 rounded to nearest even, scalar and
/// for the vector widths the templates use. In the PTX form one
/// `cvt.rn.bf16.f32` (sm_80 and later, as bf16 storage needs; a NaN
/// becomes the canonical quiet NaN); elsewhere in integer arithmetic, a
/// NaN kept a quiet NaN of the same sign (adding the rounding bias to a
/// NaN's bits could carry it into an infinity). The integer form's NaN
/// test became a branch around each store in PTX, which kept ptxas from
/// batching an epilogue's loads: BERT-base's GEMMs with a residual took
/// 41.1 and 69.9 us a layer in bf16 against 23.2 and 43.0 in fp16 (H200,
/// batch 32).
pub const BF16_HELPERS: &str = "\
#ifdef TCC_PTX
inline ushort tcc_f32_to_bf16(float x) { ushort r; __asm__(\"cvt.rn.bf16.f32 %0, %1;\" : \"=h\"(r) : \"f\"(x)); return r; }
#else
inline ushort tcc_f32_to_bf16(float x) { uint u = as_uint(x); return isnan(x) ? (ushort)((u >> 16) | 0x40) : (ushort)((u + 0x7FFF + ((u >> 16) & 1)) >> 16); }
#endif
inline float tcc_round_bf16(float x) { return as_float((uint)tcc_f32_to_bf16(x) << 16); }
inline ushort2 tcc_f32_to_bf16_2(float2 x) { return (ushort2)(tcc_f32_to_bf16(x.s0), tcc_f32_to_bf16(x.s1)); }
inline ushort4 tcc_f32_to_bf16_4(float4 x) { return (ushort4)(tcc_f32_to_bf16_2(x.s01), tcc_f32_to_bf16_2(x.s23)); }
inline ushort8 tcc_f32_to_bf16_8(float8 x) { return (ushort8)(tcc_f32_to_bf16_4(x.s0123), tcc_f32_to_bf16_4(x.s4567)); }
inline ushort16 tcc_f32_to_bf16_16(float16 x) { return (ushort16)(tcc_f32_to_bf16_8(x.lo), tcc_f32_to_bf16_8(x.hi)); }
inline float2 tcc_bf16_word_to_float2(uint w) { return (float2)(as_float(w << 16), as_float(w & 0xFFFF0000u)); }
inline float2 tcc_load_bf16_aligned2(__global const ushort* p) { return tcc_bf16_word_to_float2(*(__global const uint*)p); }
inline float4 tcc_load_bf16_aligned4(__global const ushort* p) { const uint2 w = *(__global const uint2*)p; return (float4)(tcc_bf16_word_to_float2(w.x), tcc_bf16_word_to_float2(w.y)); }
inline float8 tcc_load_bf16_aligned8(__global const ushort* p) { const uint4 w = *(__global const uint4*)p; return (float8)(tcc_bf16_word_to_float2(w.x), tcc_bf16_word_to_float2(w.y), tcc_bf16_word_to_float2(w.z), tcc_bf16_word_to_float2(w.w)); }
inline float16 tcc_load_bf16_aligned16(__global const ushort* p) { return (float16)(tcc_load_bf16_aligned8(p), tcc_load_bf16_aligned8(p + 8)); }
inline void tcc_store_bf16_aligned2(float2 v, __global ushort* p) { *(__global uint*)p = as_uint(tcc_f32_to_bf16_2(v)); }
inline void tcc_store_bf16_aligned4(float4 v, __global ushort* p) { *(__global uint2*)p = as_uint2(tcc_f32_to_bf16_4(v)); }
inline void tcc_store_bf16_aligned8(float8 v, __global ushort* p) { *(__global uint4*)p = as_uint4(tcc_f32_to_bf16_8(v)); }
";

/// The half stores of the program prelude (added where a kernel stores
/// through a half buffer). OpenCL C's `vstore_half_rte` is what they mean
/// (round to nearest even, overflow to infinity, NaN kept); in the PTX form
/// it is one `cvt.rn.f16.f32` and a 16-bit store, since libclc's
/// `vstore_half_rte` rounds in software before its own conversion (about 60
/// instructions an element: BERT-base's fp16 GELU-epilogue GEMM took 186
/// against bf16's 88 us a layer on an H200 for that alone). Buffers are
/// kernel parameters, so `__global`.
pub const F16_HELPERS: &str = "\
#ifdef TCC_PTX
inline ushort tcc_f32_to_f16(float x) { ushort r; __asm__(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(r) : \"f\"(x)); return r; }
inline ushort2 tcc_f32_to_f16_2(float2 x) { return (ushort2)(tcc_f32_to_f16(x.s0), tcc_f32_to_f16(x.s1)); }
inline ushort4 tcc_f32_to_f16_4(float4 x) { return (ushort4)(tcc_f32_to_f16_2(x.s01), tcc_f32_to_f16_2(x.s23)); }
inline ushort8 tcc_f32_to_f16_8(float8 x) { return (ushort8)(tcc_f32_to_f16_4(x.s0123), tcc_f32_to_f16_4(x.s4567)); }
inline ushort16 tcc_f32_to_f16_16(float16 x) { return (ushort16)(tcc_f32_to_f16_8(x.lo), tcc_f32_to_f16_8(x.hi)); }
#define TCC_STORE_F16(v, i, p) (((__global ushort*)(p))[i] = tcc_f32_to_f16(v))
#define TCC_STORE_F16_2(v, o, p) vstore2(tcc_f32_to_f16_2(v), o, (__global ushort*)(p))
#define TCC_STORE_F16_4(v, o, p) vstore4(tcc_f32_to_f16_4(v), o, (__global ushort*)(p))
#define TCC_STORE_F16_8(v, o, p) vstore8(tcc_f32_to_f16_8(v), o, (__global ushort*)(p))
#define TCC_STORE_F16_16(v, o, p) vstore16(tcc_f32_to_f16_16(v), o, (__global ushort*)(p))
#define tcc_store_f16_aligned2(v, p) (*(__global uint*)(p) = as_uint(tcc_f32_to_f16_2(v)))
#define tcc_store_f16_aligned4(v, p) (*(__global uint2*)(p) = as_uint2(tcc_f32_to_f16_4(v)))
#define tcc_store_f16_aligned8(v, p) (*(__global uint4*)(p) = as_uint4(tcc_f32_to_f16_8(v)))
#else
#define TCC_STORE_F16(v, i, p) vstore_half_rte(v, i, p)
#define TCC_STORE_F16_2(v, o, p) vstore_half2_rte(v, o, p)
#define TCC_STORE_F16_4(v, o, p) vstore_half4_rte(v, o, p)
#define TCC_STORE_F16_8(v, o, p) vstore_half8_rte(v, o, p)
#define TCC_STORE_F16_16(v, o, p) vstore_half16_rte(v, o, p)
#define tcc_store_f16_aligned2(v, p) vstore_half2_rte(v, 0, p)
#define tcc_store_f16_aligned4(v, p) vstore_half4_rte(v, 0, p)
#define tcc_store_f16_aligned8(v, p) vstore_half8_rte(v, 0, p)
#endif
";

/// Whether a kernel writes through a parameter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    ReadOnly,
    Written,
}

/// One kernel parameter: a buffer and whether the kernel writes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelParameter {
    pub buffer: Buffer,
    pub access: Access,
}

impl fmt::Display for KernelParameter {
    /// The C declaration: a restrict pointer, const unless written.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let constness = match self.access {
            Access::ReadOnly => "const ",
            Access::Written => "",
        };
        write!(
            f,
            "__global {constness}{}* restrict {}",
            self.buffer.storage.c_type(),
            self.buffer.name
        )
    }
}

/// A kernel's parameters, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelParameters {
    pub buffers: Vec<KernelParameter>,
    /// Dynamic extents the host passes after the buffers (`const
    /// tcc_index`): a view rebuilt in the kernel with a symbolic size
    /// names them; a row template, whose work-groups each take one row,
    /// reads none.
    pub extents: Vec<String>,
}

impl fmt::Display for KernelParameters {
    /// The C parameter list, one parameter per line after the first.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, parameter) in self.buffers.iter().enumerate() {
            if index > 0 {
                f.write_str(",\n    ")?;
            }
            write!(f, "{parameter}")?;
        }
        for extent in &self.extents {
            write!(f, ",\n    const tcc_index {extent}")?;
        }
        Ok(())
    }
}

impl KernelParameters {
    /// Float buffers `a0, a1, ...`, written where `written` says so (for
    /// tests of the templates).
    pub fn floats(written: &[bool]) -> Self {
        KernelParameters {
            buffers: written
                .iter()
                .enumerate()
                .map(|(index, written)| KernelParameter {
                    buffer: Buffer::f32(format!("a{index}")),
                    access: if *written {
                        Access::Written
                    } else {
                        Access::ReadOnly
                    },
                })
                .collect(),
            extents: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_render_as_restrict_pointers() {
        let mut parameters = KernelParameters {
            buffers: vec![
                KernelParameter {
                    buffer: Buffer::f32("a0"),
                    access: Access::ReadOnly,
                },
                KernelParameter {
                    buffer: Buffer::new("a1", Storage::Bool),
                    access: Access::Written,
                },
            ],
            extents: Vec::new(),
        };
        assert_eq!(
            parameters.to_string(),
            "__global const float* restrict a0,\n    __global uchar* restrict a1"
        );
        parameters.extents.push("a2".to_string());
        assert!(
            parameters
                .to_string()
                .ends_with("a1,\n    const tcc_index a2"),
            "{parameters}"
        );
    }

    #[test]
    fn aligned_vectors_are_one_wide_access() {
        let x = Buffer::f32("a0");
        assert_eq!(
            x.load_vector_aligned(4, "i"),
            "(*(__global const float4*)(a0 + i))"
        );
        assert_eq!(
            x.store_vector_aligned(2, "v", "i"),
            "*(__global float2*)(a0 + i) = v;"
        );
        // Wider float vectors keep vloadN (a CPU's SIMD load already).
        assert_eq!(x.load_vector_aligned(16, "i"), "vload16(0, a0 + i)");
        let half = Buffer::new("a1", Storage::F16);
        assert_eq!(
            half.load_vector_aligned(4, "c"),
            "tcc_load_f16_aligned4(a1 + c)"
        );
        assert_eq!(
            half.store_vector_aligned(8, "e", "c"),
            "tcc_store_f16_aligned8(e, a1 + c);"
        );
        assert_eq!(
            half.store_vector_aligned(16, "e", "c"),
            "TCC_STORE_F16_16(e, 0, a1 + c);"
        );
        let brain = Buffer::new("a2", Storage::BF16);
        assert_eq!(
            brain.load_vector_aligned(8, "i"),
            "tcc_load_bf16_aligned8(a2 + i)"
        );
        assert_eq!(
            brain.store_vector_aligned(4, "e", "i"),
            "tcc_store_bf16_aligned4(e, a2 + i);"
        );
        // Other element types keep their plain vector forms.
        let ints = Buffer::new("a3", Storage::I32);
        assert_eq!(ints.load_vector_aligned(4, "i"), "vload4(0, a3 + i)");
        // The helpers the calls name exist in the preludes.
        // Widths 2, 4 and 8 have a PTX and a portable form; 16 is two 8s.
        for width in [2, 4, 8] {
            let definition = format!("tcc_load_f16_aligned{width}(__global const half* p)");
            assert_eq!(F16_ALIGNED_LOADS.matches(&definition).count(), 2, "{width}");
        }
        assert!(F16_ALIGNED_LOADS.contains("tcc_load_f16_aligned16(__global const half* p)"));
        for name in ["tcc_load_bf16_aligned4", "tcc_store_bf16_aligned8"] {
            assert!(BF16_HELPERS.contains(name), "{name}");
        }
        assert_eq!(
            F16_HELPERS.matches("define tcc_store_f16_aligned4").count(),
            2
        );
    }

    #[test]
    fn accesses_go_through_the_buffer() {
        let x = Buffer::f32("a0");
        assert_eq!(x.load("i + 1"), "a0[i + 1]");
        assert_eq!(x.store("v", "i"), "a0[i] = v;");
        assert_eq!(x.load_vector(4, "i"), "vload4(0, a0 + i)");
        assert_eq!(x.store_vector(16, "e", "c"), "vstore16(e, 0, a0 + c);");
        let flags = Buffer::new("a1", Storage::Bool);
        assert_eq!(flags.load("i"), "(a1[i] != 0)");
        assert_eq!(flags.store("v", "i"), "a1[i] = (uchar)(v ? 1 : 0);");
        let half = Buffer::new("a2", Storage::F16);
        assert_eq!(half.load("i"), "vload_half(i, a2)");
        assert_eq!(half.store("v", "i"), "TCC_STORE_F16(v, i, a2);");
        assert_eq!(
            half.store_vector(4, "e", "c"),
            "TCC_STORE_F16_4(e, 0, a2 + c);"
        );
        let brain = Buffer::new("a3", Storage::BF16);
        assert_eq!(brain.load("i"), "as_float((uint)a3[i] << 16)");
        assert_eq!(brain.store("v", "i"), "a3[i] = tcc_f32_to_bf16(v);");
        assert_eq!(
            brain.load_vector(4, "i"),
            "as_float4(convert_uint4(vload4(0, a3 + i)) << 16)"
        );
    }
}
