//! Expressions of the OpenCL C writer: constants, arith and math ops
//! (one `const` local each), comparisons, and float literals that read
//! back exactly.

use melior::ir::Attribute;
use melior::ir::attribute::{FloatAttribute, IntegerAttribute};
use melior::ir::operation::{OperationLike, OperationRef};

use super::writer::{ElementType, KernelWriter, index_literal, key};
use crate::back::{CodegenError, ErrorAt};

/// A float literal that reads back exactly.
fn float_literal(value: f64, element: ElementType) -> String {
    if value.is_nan() {
        return "NAN".into();
    }
    if value.is_infinite() {
        return if value > 0.0 {
            "INFINITY".into()
        } else {
            "(-INFINITY)".into()
        };
    }
    match element {
        ElementType::F64 => format!("{value:e}"),
        _ => {
            let text = format!("{:e}", value as f32);
            if value < 0.0 {
                format!("({text}f)")
            } else {
                format!("{text}f")
            }
        }
    }
}

impl KernelWriter {
    pub(super) fn constant(&mut self, op: OperationRef) -> Result<(), CodegenError> {
        let value: Attribute = op.attribute("value").at(&op)?;
        let ty = Self::result_type(op)?;
        let expr = if ty.is_float() {
            let number = FloatAttribute::try_from(value)
                .map_err(|_| CodegenError::at(&op, "float constant expected"))?
                .value();
            float_literal(number, ty)
        } else if ty == ElementType::I1 {
            let number = IntegerAttribute::try_from(value)
                .map_err(|_| CodegenError::at(&op, "integer constant expected"))?
                .value();
            if number != 0 {
                "true".into()
            } else {
                "false".into()
            }
        } else {
            let number = IntegerAttribute::try_from(value)
                .map_err(|_| CodegenError::at(&op, "integer constant expected"))?
                .value();
            match ty {
                ElementType::I64 => format!("{number}L"),
                ElementType::Index => index_literal(number),
                _ => format!("({}){number}", ty.c_type()),
            }
        };
        // Constants are inlined at their uses.
        let result = op.result(0).at(&op)?;
        self.names.insert(key(result.into()), expr);
        Ok(())
    }

    /// Expressions of arithmetic, math and cast ops; `None` if unknown.
    pub(super) fn expression(
        &self,
        op: OperationRef,
        name: &str,
    ) -> Result<Option<String>, CodegenError> {
        let binary = |symbol: &str| -> Result<String, CodegenError> {
            Ok(format!(
                "({} {symbol} {})",
                self.operand(op, 0)?,
                self.operand(op, 1)?
            ))
        };
        let call = |function: &str| -> Result<String, CodegenError> {
            let args: Vec<String> = (0..op.operand_count())
                .map(|i| self.operand(op, i))
                .collect::<Result<_, _>>()?;
            Ok(format!("{function}({})", args.join(", ")))
        };
        let result = || Self::result_type(op);
        let source = || Self::operand_type(op, 0);
        Ok(Some(match name {
            "arith.addf" | "arith.addi" => binary("+")?,
            "arith.subf" | "arith.subi" => binary("-")?,
            "arith.mulf" | "arith.muli" => binary("*")?,
            "arith.divf" | "arith.divsi" => binary("/")?,
            "arith.remf" => call("fmod")?,
            "arith.remsi" => binary("%")?,
            "arith.andi" => binary("&")?,
            "arith.ori" => binary("|")?,
            "arith.xori" => binary("^")?,
            "arith.shli" => binary("<<")?,
            "arith.shrsi" => binary(">>")?,
            "arith.divui" | "arith.remui" | "arith.shrui" => {
                let unsigned = result()?.unsigned_type();
                let symbol = match name {
                    "arith.divui" => "/",
                    "arith.remui" => "%",
                    _ => ">>",
                };
                format!(
                    "({})(({unsigned}){} {symbol} ({unsigned}){})",
                    result()?.c_type(),
                    self.operand(op, 0)?,
                    self.operand(op, 1)?
                )
            }
            "arith.negf" => format!("(-{})", self.operand(op, 0)?),
            "arith.maximumf" if self.select_min_max && result()? == ElementType::F32 => {
                call("tcc_maximumf_select")?
            }
            "arith.minimumf" if self.select_min_max && result()? == ElementType::F32 => {
                call("tcc_minimumf_select")?
            }
            "arith.maximumf" if result()? == ElementType::F32 => call("tcc_maximumf")?,
            "arith.minimumf" if result()? == ElementType::F32 => call("tcc_minimumf")?,
            "arith.maximumf" | "arith.maxnumf" => call("fmax")?,
            "arith.minimumf" | "arith.minnumf" => call("fmin")?,
            "arith.maxsi" => call("max")?,
            "arith.minsi" => call("min")?,
            "arith.maxui" | "arith.minui" => {
                let unsigned = result()?.unsigned_type();
                let function = if name == "arith.maxui" { "max" } else { "min" };
                format!(
                    "({})({function}(({unsigned}){}, ({unsigned}){}))",
                    result()?.c_type(),
                    self.operand(op, 0)?,
                    self.operand(op, 1)?
                )
            }
            // A cast to a half type rounds the `float` register to it.
            "arith.sitofp" | "arith.uitofp" | "arith.truncf" if result()?.is_half() => {
                let value = self.operand(op, 0)?;
                let wide = match (name, source()?) {
                    (_, ElementType::I1) => format!("({value} ? 1.0f : 0.0f)"),
                    ("arith.uitofp", from) => {
                        format!("(float)(({}){value})", from.unsigned_type())
                    }
                    // A 64-bit integer or f64 rounds to f32 first, which can
                    // differ from rounding once to half only at a tie that
                    // f32 made; through f64 (when there) it is exact.
                    _ => format!("(float)({value})"),
                };
                let round = if result()? == ElementType::F16 {
                    "tcc_round_f16"
                } else {
                    "tcc_round_bf16"
                };
                format!("{round}({wide})")
            }
            "arith.sitofp" | "arith.fptosi" | "arith.extf" | "arith.truncf" | "arith.extsi"
            | "arith.trunci" | "arith.index_cast" => {
                let value = self.operand(op, 0)?;
                if source()? == ElementType::I1 {
                    // i1 sign-extends to -1.
                    let one = if name == "arith.extsi" { "-1" } else { "1" };
                    format!("({})({value} ? {one} : 0)", result()?.c_type())
                } else {
                    format!("({})({value})", result()?.c_type())
                }
            }
            "arith.uitofp" | "arith.extui" | "arith.index_castui" | "arith.fptoui" => {
                let value = self.operand(op, 0)?;
                if source()? == ElementType::I1 {
                    format!("({})({value} ? 1 : 0)", result()?.c_type())
                } else if source()?.is_float() {
                    format!(
                        "({})(({})({value}))",
                        result()?.c_type(),
                        result()?.unsigned_type()
                    )
                } else {
                    format!(
                        "({})(({})({value}))",
                        result()?.c_type(),
                        source()?.unsigned_type()
                    )
                }
            }
            "arith.bitcast" => {
                let target = result()?;
                let function = match target {
                    ElementType::F32 => "as_float",
                    ElementType::I32 => "as_int",
                    ElementType::F64 => "as_double",
                    ElementType::I64 => "as_long",
                    _ => {
                        return Err(CodegenError::at(
                            &op,
                            format!("bitcast to {target:?} is not supported"),
                        ));
                    }
                };
                format!("{function}({})", self.operand(op, 0)?)
            }
            // f32 through the prelude's tcc_expf (fast in the PTX form).
            "math.exp" if self.polynomial_exp && result()? == ElementType::F32 => {
                call("tcc_expf_poly")?
            }
            "math.exp" if result()? == ElementType::F32 => call("tcc_expf")?,
            "math.exp" => call("exp")?,
            "math.exp2" => call("exp2")?,
            "math.expm1" => call("expm1")?,
            "math.log" => call("log")?,
            "math.log2" => call("log2")?,
            "math.log10" => call("log10")?,
            "math.log1p" => call("log1p")?,
            "math.tanh" if self.rational_erf_tanh && result()? == ElementType::F32 => {
                call("tcc_tanh")?
            }
            "math.tanh" => call("tanh")?,
            "math.erf" if self.rational_erf_tanh && result()? == ElementType::F32 => {
                call("tcc_erf")?
            }
            "math.erf" => call("erf")?,
            "math.sqrt" => call("sqrt")?,
            "math.rsqrt" => call("rsqrt")?,
            "math.powf" => call("pow")?,
            "math.fpowi" => call("pown")?,
            "math.absf" => call("fabs")?,
            "math.absi" => format!("({})abs({})", result()?.c_type(), self.operand(op, 0)?),
            "math.floor" => call("floor")?,
            "math.ceil" => call("ceil")?,
            "math.round" => call("round")?,
            "math.roundeven" => call("rint")?,
            "math.trunc" => call("trunc")?,
            "math.fma" => call("fma")?,
            "math.sin" => call("sin")?,
            "math.cos" => call("cos")?,
            "math.tan" => call("tan")?,
            "math.atan" => call("atan")?,
            "math.asin" => call("asin")?,
            "math.acos" => call("acos")?,
            "math.sinh" => call("sinh")?,
            "math.cosh" => call("cosh")?,
            "math.asinh" => call("asinh")?,
            "math.acosh" => call("acosh")?,
            "math.atanh" => call("atanh")?,
            "math.atan2" => call("atan2")?,
            "math.copysign" => call("copysign")?,
            "math.isnan" => format!("(bool)isnan({})", self.operand(op, 0)?),
            "math.isinf" => format!("(bool)isinf({})", self.operand(op, 0)?),
            _ => return Ok(None),
        }))
    }

    fn predicate(op: OperationRef) -> Result<i64, CodegenError> {
        op.attribute("predicate")
            .ok()
            .and_then(crate::ir::util::integer_value)
            .ok_or_else(|| CodegenError::at(&op, "comparison without a predicate"))
    }

    pub(super) fn cmpf(&mut self, op: OperationRef) -> Result<(), CodegenError> {
        let (a, b) = (self.operand(op, 0)?, self.operand(op, 1)?);
        let nan = format!("(isnan({a}) || isnan({b}))");
        // arith::CmpFPredicate numbering.
        let expr = match Self::predicate(op)? {
            0 => "false".to_string(),
            1 => format!("({a} == {b})"),
            2 => format!("({a} > {b})"),
            3 => format!("({a} >= {b})"),
            4 => format!("({a} < {b})"),
            5 => format!("({a} <= {b})"),
            6 => format!("({a} != {b} && !{nan})"),
            7 => format!("(!{nan})"),
            8 => format!("({a} == {b} || {nan})"),
            9 => format!("(!({a} <= {b}))"),
            10 => format!("(!({a} < {b}))"),
            11 => format!("(!({a} >= {b}))"),
            12 => format!("(!({a} > {b}))"),
            13 => format!("({a} != {b})"),
            14 => nan,
            15 => "true".to_string(),
            other => {
                return Err(CodegenError::at(
                    &op,
                    format!("unknown cmpf predicate {other}"),
                ));
            }
        };
        self.define(op, expr)
    }

    pub(super) fn cmpi(&mut self, op: OperationRef) -> Result<(), CodegenError> {
        let (a, b) = (self.operand(op, 0)?, self.operand(op, 1)?);
        let unsigned = Self::operand_type(op, 0)?.unsigned_type();
        let (ua, ub) = (format!("(({unsigned}){a})"), format!("(({unsigned}){b})"));
        // arith::CmpIPredicate numbering.
        let expr = match Self::predicate(op)? {
            0 => format!("({a} == {b})"),
            1 => format!("({a} != {b})"),
            2 => format!("({a} < {b})"),
            3 => format!("({a} <= {b})"),
            4 => format!("({a} > {b})"),
            5 => format!("({a} >= {b})"),
            6 => format!("({ua} < {ub})"),
            7 => format!("({ua} <= {ub})"),
            8 => format!("({ua} > {ub})"),
            9 => format!("({ua} >= {ub})"),
            other => {
                return Err(CodegenError::at(
                    &op,
                    format!("unknown cmpi predicate {other}"),
                ));
            }
        };
        self.define(op, expr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_literals_read_back() {
        assert_eq!(float_literal(0.5, ElementType::F32), "5e-1f");
        assert_eq!(
            float_literal(-3.4028234663852886e38, ElementType::F32),
            "(-3.4028235e38f)"
        );
        assert_eq!(float_literal(f64::INFINITY, ElementType::F32), "INFINITY");
        assert_eq!(float_literal(f64::NAN, ElementType::F32), "NAN");
    }
}
