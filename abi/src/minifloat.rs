//! The minifloat element types (ONNX's float8 e4m3fn, e4m3fnuz, e5m2,
//! e5m2fnuz and float4e2m1): their layouts, and the conversions from
//! their bits to f64 and from f64 to their bits (round half to even,
//! saturating or not) that the compiler's constant folding and the
//! runtime's tensor printing, parsing and comparison share. A tensor of
//! them holds one element a byte.

/// How a minifloat's special values are encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Specials {
    /// e4m3fn: no infinities; NaN is S.1111.111.
    NanAllOnes,
    /// e5m2: IEEE-like; exponent all ones is infinity (mantissa 0) or NaN.
    Ieee,
    /// fnuz: no infinities, no negative zero; NaN is 1.0000000.
    NanNegativeZero,
    /// float4e2m1: neither infinities nor NaN.
    None,
}

/// The layout of a minifloat: sign bit, `exponent` bits, `mantissa` bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Minifloat {
    pub exponent: u32,
    pub mantissa: u32,
    pub bias: i32,
    pub specials: Specials,
}

impl Minifloat {
    /// float8e4m3fn: no infinities, NaN S.1111.111, bias 7.
    pub const F8E4M3FN: Minifloat = Minifloat::new(4, 3, 7, Specials::NanAllOnes);
    /// float8e4m3fnuz: bias 8, NaN 0x80, no negative zero.
    pub const F8E4M3FNUZ: Minifloat = Minifloat::new(4, 3, 8, Specials::NanNegativeZero);
    /// float8e5m2: IEEE-like, bias 15.
    pub const F8E5M2: Minifloat = Minifloat::new(5, 2, 15, Specials::Ieee);
    /// float8e5m2fnuz: bias 16, NaN 0x80, no negative zero.
    pub const F8E5M2FNUZ: Minifloat = Minifloat::new(5, 2, 16, Specials::NanNegativeZero);
    /// float4e2m1: bias 1, no specials.
    pub const F4E2M1: Minifloat = Minifloat::new(2, 1, 1, Specials::None);

    const fn new(exponent: u32, mantissa: u32, bias: i32, specials: Specials) -> Minifloat {
        Minifloat {
            exponent,
            mantissa,
            bias,
            specials,
        }
    }

    /// The sign bit's position.
    pub fn sign_shift(self) -> u32 {
        self.exponent + self.mantissa
    }

    /// The largest finite value's bits (without the sign).
    pub fn max_bits(self) -> u32 {
        let all = (1u32 << self.sign_shift()) - 1;
        match self.specials {
            Specials::NanAllOnes => all - 1,
            Specials::Ieee => all - (1 << self.mantissa),
            Specials::NanNegativeZero | Specials::None => all,
        }
    }

    /// The smallest normal exponent (unbiased).
    pub fn min_exponent(self) -> i32 {
        1 - self.bias
    }

    /// The value of `bits` (the low `sign_shift() + 1` bits).
    pub fn decode(self, bits: u8) -> f64 {
        let bits = bits as u32;
        let sign = (bits >> self.sign_shift()) & 1;
        let magnitude = bits & ((1 << self.sign_shift()) - 1);
        let nan = match self.specials {
            Specials::NanAllOnes => magnitude == (1 << self.sign_shift()) - 1,
            Specials::Ieee => magnitude > ((1 << self.exponent) - 1) << self.mantissa,
            Specials::NanNegativeZero => sign == 1 && magnitude == 0,
            Specials::None => false,
        };
        if nan {
            return f64::NAN;
        }
        let exponent = (magnitude >> self.mantissa) as i32;
        let mantissa = (magnitude & ((1 << self.mantissa) - 1)) as f64;
        let value = if self.specials == Specials::Ieee && exponent == (1 << self.exponent) - 1 {
            f64::INFINITY
        } else if exponent == 0 {
            mantissa * 2f64.powi(self.min_exponent() - self.mantissa as i32)
        } else {
            (mantissa + (1u32 << self.mantissa) as f64)
                * 2f64.powi(exponent - self.bias - self.mantissa as i32)
        };
        if sign == 1 { -value } else { value }
    }

    /// The bits of `value` rounded to nearest even; out of range: the
    /// largest finite value when `saturate`, else infinity (e5m2) or NaN.
    /// NaN gives NaN (float4e2m1, which has none: a zero of the other
    /// sign, as ONNX's reference does).
    pub fn encode(self, value: f64, saturate: bool) -> u8 {
        let sign_bit = 1u32 << self.sign_shift();
        let sign = if value.is_sign_negative() {
            sign_bit
        } else {
            0
        };
        let nan_bits = match self.specials {
            Specials::NanAllOnes => sign | (sign_bit - 1),
            Specials::Ieee => {
                sign | (((1 << self.exponent) - 1) << self.mantissa) | (1 << (self.mantissa - 1))
            }
            Specials::NanNegativeZero => sign_bit,
            // No NaN: a zero of the other sign, as ONNX's reference
            // (ml_dtypes) converts it.
            Specials::None => sign ^ sign_bit,
        };
        if value.is_nan() {
            return nan_bits as u8;
        }
        let max = self.decode(self.max_bits() as u8);
        let a = value.abs();
        // Round to the grid of a's binade (or the subnormal grid).
        let exponent = if a == 0.0 {
            self.min_exponent()
        } else {
            (a.log2().floor() as i32).max(self.min_exponent())
        };
        let quantum = 2f64.powi(exponent - self.mantissa as i32);
        let rounded = (a / quantum).round_ties_even() * quantum;
        let magnitude = if rounded > max || a.is_infinite() {
            if saturate || self.specials == Specials::None {
                self.max_bits()
            } else if self.specials == Specials::Ieee {
                return (sign | (((1 << self.exponent) - 1) << self.mantissa)) as u8;
            } else {
                return nan_bits as u8;
            }
        } else if rounded < 2f64.powi(self.min_exponent()) {
            (rounded / 2f64.powi(self.min_exponent() - self.mantissa as i32)) as u32
        } else {
            let e = rounded.log2().floor() as i32;
            let m = (rounded / 2f64.powi(e - self.mantissa as i32)) as u32 - (1 << self.mantissa);
            (((e + self.bias) as u32) << self.mantissa) | m
        };
        if magnitude == 0 && self.specials == Specials::NanNegativeZero {
            return 0;
        }
        (sign | magnitude) as u8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Minifloat; 5] = [
        Minifloat::F8E4M3FN,
        Minifloat::F8E4M3FNUZ,
        Minifloat::F8E5M2,
        Minifloat::F8E5M2FNUZ,
        Minifloat::F4E2M1,
    ];

    #[test]
    fn every_finite_encoding_round_trips() {
        for format in ALL {
            for bits in 0..(1u32 << (format.sign_shift() + 1)) {
                let value = format.decode(bits as u8);
                if value.is_nan() {
                    continue;
                }
                let again = format.encode(value, false);
                // -0 of the fnuz types does not exist: 0.
                assert_eq!(format.decode(again), value, "{format:?} {bits:#x}");
            }
        }
    }

    #[test]
    fn ranges_specials_and_rounding_are_the_types() {
        let [e4m3, e4m3uz, e5m2, e5m2uz, e2m1] = ALL;
        // The largest finite values (ml_dtypes' finfo.max).
        let max = |f: Minifloat| f.decode(f.max_bits() as u8);
        assert_eq!(
            [max(e4m3), max(e4m3uz), max(e5m2), max(e5m2uz), max(e2m1)],
            [448.0, 240.0, 57344.0, 57344.0, 6.0]
        );
        // Smallest subnormals.
        assert_eq!(e4m3.decode(1), 2f64.powi(-9));
        assert_eq!(e5m2.decode(1), 2f64.powi(-16));
        assert_eq!(e2m1.decode(1), 0.5);
        // Ties to even: 464 is halfway between 448 and 480.
        assert_eq!(e4m3.encode(464.0, false), 0x7E);
        assert_eq!(e4m3.encode(465.0, false), 0x7F); // NaN: no 480
        assert_eq!(e4m3.encode(465.0, true), 0x7E);
        assert_eq!(e5m2.encode(1e6, false), 0x7C); // +inf
        assert_eq!(e5m2.encode(-1e6, true), 0xFB);
        assert!(e5m2.decode(0x7E).is_nan());
        assert_eq!(e5m2.decode(0xFC), f64::NEG_INFINITY);
        assert_eq!(e4m3uz.encode(-0.0, true), 0);
        assert_eq!(e4m3uz.encode(f64::NAN, true), 0x80);
        assert!(e5m2uz.decode(0x80).is_nan());
        assert_eq!(e4m3.encode(f64::NAN, true), 0x7F);
        assert_eq!(e2m1.encode(7.0, false), 0x7);
        assert_eq!(e2m1.encode(f64::NAN, true), 0x8);
        assert_eq!(e2m1.encode(-2.5, false), 0xC); // -2 (ties to even)
    }
}
