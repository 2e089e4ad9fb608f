//! One ONNX node as the op importers see it: its inputs (SSA values or
//! constants), typed attribute access, and the opset in force.

use std::rc::Rc;

use super::dtype::{DType, TType};
use super::emit::Val;
use super::error::{ImportError, Result, bail};
use super::proto::{AttributeProto, NodeProto, TensorProto};
use super::tensor::Const;

/// A value of the graph: computed at run time, or known at import time.
#[derive(Clone, Debug)]
pub enum Value {
    Tensor(Val),
    Const(Rc<Const>),
}

impl Value {
    pub fn ty(&self) -> TType {
        match self {
            Value::Tensor(v) => v.ty.clone(),
            Value::Const(c) => c.ty(),
        }
    }

    pub fn shape(&self) -> Vec<i64> {
        match self {
            Value::Tensor(v) => v.ty.shape.clone(),
            Value::Const(c) => c.shape.clone(),
        }
    }

    pub fn rank(&self) -> usize {
        match self {
            Value::Tensor(v) => v.ty.shape.len(),
            Value::Const(c) => c.shape.len(),
        }
    }

    pub fn dtype(&self) -> DType {
        match self {
            Value::Tensor(v) => v.ty.dtype,
            Value::Const(c) => c.dtype,
        }
    }

    pub fn as_const(&self) -> Option<&Const> {
        match self {
            Value::Const(c) => Some(c),
            Value::Tensor(_) => None,
        }
    }

    pub fn constant(c: Const) -> Value {
        Value::Const(Rc::new(c))
    }
}

// AttributeProto.AttributeType codes.
const FLOAT: i32 = 1;
const INT: i32 = 2;
const STRING: i32 = 3;
const TENSOR: i32 = 4;
const FLOATS: i32 = 6;
const INTS: i32 = 7;

pub struct Node<'a> {
    pub proto: &'a NodeProto,
    /// The default-domain opset the model imports.
    pub opset: i64,
    /// One entry per declared input; `None` for an omitted optional input.
    pub inputs: Vec<Option<Value>>,
}

impl<'a> Node<'a> {
    pub fn op(&self) -> &str {
        &self.proto.op_type
    }

    /// Input `index`, which the op requires.
    pub fn input(&self, index: usize) -> Result<&Value> {
        match self.inputs.get(index) {
            Some(Some(value)) => Ok(value),
            _ => bail!("{} needs input #{index}", self.op()),
        }
    }

    /// Optional input `index`.
    pub fn opt(&self, index: usize) -> Option<&Value> {
        self.inputs.get(index).and_then(|v| v.as_ref())
    }

    /// Input `index` as a constant, when present. An input that is only
    /// known at run time is an error (tcc needs it to know shapes).
    pub fn const_input(&self, index: usize, what: &str) -> Result<Option<&Const>> {
        match self.opt(index) {
            None => Ok(None),
            Some(Value::Const(c)) => Ok(Some(c)),
            Some(Value::Tensor(_)) => {
                let name = self
                    .proto
                    .input
                    .get(index)
                    .map(String::as_str)
                    .unwrap_or("");
                Err(ImportError::needs_value(
                    format!(
                        "{what} (input #{index} '{name}') is computed at run time; tcc needs it to be a constant (static shapes)"
                    ),
                    name,
                ))
            }
        }
    }

    /// A constant integer-vector input (shapes, axes, pads).
    pub fn const_ints(&self, index: usize, what: &str) -> Result<Option<Vec<i64>>> {
        match self.const_input(index, what)? {
            Some(c) if c.numel() > 1 << 16 => bail!("{what} has {} values", c.numel()),
            Some(c) => Ok(Some(c.i64s())),
            None => Ok(None),
        }
    }

    fn find(&self, name: &str) -> Option<&'a AttributeProto> {
        self.proto.attribute.iter().find(|a| a.name == name)
    }

    pub fn has(&self, name: &str) -> bool {
        self.find(name).is_some()
    }

    pub fn int_opt(&self, name: &str) -> Result<Option<i64>> {
        match self.find(name) {
            None => Ok(None),
            Some(a) if a.r#type == INT || a.r#type == 0 => Ok(Some(a.i)),
            Some(_) => bail!("attribute '{name}' must be an integer"),
        }
    }

    pub fn int(&self, name: &str, default: i64) -> Result<i64> {
        Ok(self.int_opt(name)?.unwrap_or(default))
    }

    pub fn float_opt(&self, name: &str) -> Result<Option<f32>> {
        match self.find(name) {
            None => Ok(None),
            Some(a) if a.r#type == FLOAT || a.r#type == 0 => Ok(Some(a.f)),
            Some(_) => bail!("attribute '{name}' must be a float"),
        }
    }

    pub fn float(&self, name: &str, default: f32) -> Result<f32> {
        Ok(self.float_opt(name)?.unwrap_or(default))
    }

    pub fn ints(&self, name: &str) -> Result<Option<Vec<i64>>> {
        match self.find(name) {
            None => Ok(None),
            Some(a) if a.r#type == INTS || a.r#type == 0 => Ok(Some(a.ints.clone())),
            Some(_) => bail!("attribute '{name}' must be a list of integers"),
        }
    }

    pub fn floats(&self, name: &str) -> Result<Option<Vec<f32>>> {
        match self.find(name) {
            None => Ok(None),
            Some(a) if a.r#type == FLOATS || a.r#type == 0 => Ok(Some(a.floats.clone())),
            Some(_) => bail!("attribute '{name}' must be a list of floats"),
        }
    }

    pub fn string(&self, name: &str, default: &str) -> Result<String> {
        match self.find(name) {
            None => Ok(default.to_string()),
            Some(a) if a.r#type == STRING || a.r#type == 0 => {
                match String::from_utf8(a.s.clone()) {
                    Ok(s) => Ok(s),
                    Err(_) => bail!("attribute '{name}' is not UTF-8"),
                }
            }
            Some(_) => bail!("attribute '{name}' must be a string"),
        }
    }

    pub fn tensor(&self, name: &str) -> Result<Option<&'a TensorProto>> {
        match self.find(name) {
            None => Ok(None),
            Some(a) if a.r#type == TENSOR || (a.r#type == 0 && a.t.is_some()) => match &a.t {
                Some(t) => Ok(Some(t)),
                None => bail!("attribute '{name}' has no tensor"),
            },
            Some(_) => bail!("attribute '{name}' must be a tensor"),
        }
    }

    /// Normalizes a possibly negative axis for a rank.
    pub fn axis(&self, axis: i64, rank: usize, what: &str) -> Result<usize> {
        let r = rank as i64;
        if axis < -r || axis >= r {
            bail!("{what} {axis} is out of range for rank {rank}");
        }
        Ok(if axis < 0 {
            (axis + r) as usize
        } else {
            axis as usize
        })
    }

    /// Normalizes a list of axes (sorted, unique).
    pub fn axes(&self, axes: &[i64], rank: usize, what: &str) -> Result<Vec<usize>> {
        let mut out = Vec::new();
        for &a in axes {
            let a = self.axis(a, rank, what)?;
            if out.contains(&a) {
                bail!("{what} {a} appears twice");
            }
            out.push(a);
        }
        out.sort();
        Ok(out)
    }
}

/// Element-type checks shared by op importers.
pub fn require_float(value: &Value, what: &str) -> Result<()> {
    if !value.dtype().is_float() {
        bail!("{what} must be a float tensor, not {}", value.dtype());
    }
    Ok(())
}

/// The value as an SSA value's type (for signatures in messages).
pub fn describe(value: &Value) -> String {
    value.ty().to_string()
}

pub fn tensor_value(v: Val) -> Value {
    Value::Tensor(v)
}

#[allow(dead_code)]
pub fn unsupported(what: &str) -> ImportError {
    ImportError::new(format!("{what} is not supported"))
}
