//! `tcc-record-interface`: remembers each public function's interface —
//! how many results it has and the names of its arguments and results —
//! as attributes, before bufferization turns results into output
//! arguments; and which of them hold unsigned integers (`tcc.unsigned`
//! marks, recorded as `tcc.io_unsigned`), so that the artifact's interface
//! says uint8 where the tensor is a signless i8; likewise the minifloat
//! an `i8` tensor holds (`tcc.minifloat`, recorded as `tcc.io_minifloat`). The host code generator reads them to tell inputs from
//! outputs; names come from `tcc.name` argument/result attributes (set by
//! importers, e.g. ONNX graph input names) and default to "".

use melior::Context;
use melior::ir::attribute::{ArrayAttribute, IntegerAttribute, StringAttribute};
use melior::ir::operation::{OperationLike, OperationMutLike, OperationRefMut};
use melior::ir::r#type::IntegerType;
use melior::ir::{Attribute, TypeLike};

use super::pass::{NoOptions, PassError, PassResult, Root, TccPass};
use crate::ir::attr_names;
use crate::ir::util::{body_ops_named, string_value};

pub struct RecordInterface;

/// Whether each entry of an `arg_attrs`/`res_attrs` array has the
/// `tcc.unsigned` mark.
fn unsigned_of(attribute: Option<Attribute>, count: usize) -> Vec<bool> {
    let mut marks = vec![false; count];
    if let Some(array) = attribute.and_then(|a| ArrayAttribute::try_from(a).ok()) {
        for (index, mark) in marks.iter_mut().enumerate() {
            if let Ok(dictionary) = array.element(index)
                && let Ok(dictionary) =
                    melior::ir::attribute::DictionaryAttribute::try_from(dictionary)
            {
                *mark = dictionary.element_by_name(attr_names::UNSIGNED).is_some();
            }
        }
    }
    marks
}

/// The string entries `key` of an `arg_attrs`/`res_attrs` array, ""
/// where absent.
fn strings_of(attribute: Option<Attribute>, count: usize, key: &str) -> Vec<String> {
    let mut names = vec![String::new(); count];
    if let Some(array) = attribute.and_then(|a| ArrayAttribute::try_from(a).ok()) {
        for (index, name) in names.iter_mut().enumerate() {
            if let Ok(dictionary) = array.element(index)
                && let Ok(dictionary) =
                    melior::ir::attribute::DictionaryAttribute::try_from(dictionary)
                && let Some(value) = dictionary.element_by_name(key).and_then(string_value)
            {
                *name = value;
            }
        }
    }
    names
}

/// `tcc.name` entries of an `arg_attrs`/`res_attrs` array, "" where absent.
fn names_of(attribute: Option<Attribute>, count: usize) -> Vec<String> {
    let mut names = vec![String::new(); count];
    if let Some(array) = attribute.and_then(|a| ArrayAttribute::try_from(a).ok()) {
        for (index, name) in names.iter_mut().enumerate() {
            if let Ok(dictionary) = array.element(index)
                && let Ok(dictionary) =
                    melior::ir::attribute::DictionaryAttribute::try_from(dictionary)
                && let Some(value) = dictionary
                    .element_by_name(attr_names::NAME)
                    .and_then(string_value)
            {
                *name = value;
            }
        }
    }
    names
}

impl TccPass for RecordInterface {
    const ARGUMENT: &'static str = "tcc-record-interface";
    const SUMMARY: &'static str =
        "Record each function's result count and argument/result names for the host ABI";
    const ANCHOR: Option<&'static str> = Some("builtin.module");
    type Options = NoOptions;

    fn run<'c>(&self, context: &'c Context, module: Root<'c>, _: &NoOptions) -> PassResult<'c> {
        for function in body_ops_named(module, "func.func") {
            if function.attribute(attr_names::NUM_OUTPUTS).is_ok() {
                continue;
            }
            let function_type = function
                .attribute("function_type")
                .ok()
                .and_then(|a| melior::ir::attribute::TypeAttribute::try_from(a).ok())
                .map(|t| t.value())
                .ok_or_else(|| PassError::at(function.location(), "function without a type"))?;
            if !function_type.is_function() {
                return Err(PassError::at(
                    function.location(),
                    "function_type is not a function type",
                ));
            }
            let function_type = melior::ir::r#type::FunctionType::try_from(function_type)
                .map_err(|_| PassError::at(function.location(), "malformed function type"))?;
            let (inputs, outputs) = (function_type.input_count(), function_type.result_count());
            let mut names = names_of(function.attribute("arg_attrs").ok(), inputs);
            names.extend(names_of(function.attribute("res_attrs").ok(), outputs));
            let names: Vec<Attribute> = names
                .iter()
                .map(|n| StringAttribute::new(context, n).into())
                .collect();
            let mut function = unsafe { OperationRefMut::from_raw(function.to_raw()) };
            let i64_type = IntegerType::new(context, 64).into();
            let bool_type = IntegerType::new(context, 1).into();
            function.set_discardable_attribute(
                attr_names::NUM_OUTPUTS,
                IntegerAttribute::new(i64_type, outputs as i64).into(),
            );
            function.set_discardable_attribute(
                attr_names::IO_NAMES,
                ArrayAttribute::new(context, &names).into(),
            );
            let mut unsigned = unsigned_of(function.attribute("arg_attrs").ok(), inputs);
            unsigned.extend(unsigned_of(function.attribute("res_attrs").ok(), outputs));
            if unsigned.iter().any(|&u| u) {
                let marks: Vec<Attribute> = unsigned
                    .iter()
                    .map(|&u| IntegerAttribute::new(bool_type, u as i64).into())
                    .collect();
                function.set_discardable_attribute(
                    attr_names::IO_UNSIGNED,
                    ArrayAttribute::new(context, &marks).into(),
                );
            }
            let mut minifloats = strings_of(
                function.attribute("arg_attrs").ok(),
                inputs,
                attr_names::MINIFLOAT,
            );
            minifloats.extend(strings_of(
                function.attribute("res_attrs").ok(),
                outputs,
                attr_names::MINIFLOAT,
            ));
            if minifloats.iter().any(|m| !m.is_empty()) {
                let marks: Vec<Attribute> = minifloats
                    .iter()
                    .map(|m| StringAttribute::new(context, m).into())
                    .collect();
                function.set_discardable_attribute(
                    attr_names::IO_MINIFLOAT,
                    ArrayAttribute::new(context, &marks).into(),
                );
            }
        }
        Ok(())
    }
}
