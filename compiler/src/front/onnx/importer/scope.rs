//! The value table of one graph, nested: a subgraph (an `If` branch, a
//! `Loop` or `Scan` body, a `SequenceMap` body) sees the values of the
//! graphs around it (ONNX's lexical scoping), so each scope has a parent.
//!
//! Besides tensors, a scope holds the sequences and optionals that the
//! sequence and optional ops build (and the graph's sequence and optional
//! inputs): they exist only at import time (a sequence is a list of
//! tensor values, each computed at run time or known), since tcc's
//! compiled functions take and return tensors — one per element.

use std::collections::{HashMap, HashSet};

use super::super::dtype::DType;
use super::super::error::{ImportError, Result, bail};
use super::super::node::Value;
use super::Values;

/// A sequence of tensors (all of one element type).
#[derive(Clone, Debug)]
pub struct Seq {
    pub elem: DType,
    pub items: Vec<Value>,
}

/// A value of any ONNX kind that the importer represents.
#[derive(Clone, Debug)]
pub enum Item {
    Tensor(Value),
    Seq(Seq),
    /// An optional: empty, or holding a tensor or a sequence.
    Opt(Option<Box<Item>>),
}

impl Item {
    /// What the value is, for messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Item::Tensor(_) => "a tensor",
            Item::Seq(_) => "a sequence",
            Item::Opt(_) => "an optional",
        }
    }

    /// The tensor, or an error naming `what` and the kind found.
    pub fn tensor(&self, what: &str) -> Result<&Value> {
        match self {
            Item::Tensor(v) => Ok(v),
            other => bail!("{what} must be a tensor, not {}", other.kind()),
        }
    }

    /// The sequence, or an error naming `what` and the kind found.
    pub fn seq(&self, what: &str) -> Result<&Seq> {
        match self {
            Item::Seq(s) => Ok(s),
            other => bail!("{what} must be a sequence, not {}", other.kind()),
        }
    }
}

/// One graph's values; lookups fall back to the enclosing graphs.
pub struct Scope<'p> {
    /// Tensors by ONNX name.
    pub values: Values,
    /// Sequences and optionals by ONNX name.
    pub aggregates: HashMap<String, Item>,
    pub parent: Option<&'p Scope<'p>>,
}

impl<'p> Scope<'p> {
    pub fn new(values: Values) -> Self {
        Self {
            values,
            aggregates: HashMap::new(),
            parent: None,
        }
    }

    /// A scope nested in `parent` (a subgraph's).
    pub fn child(parent: &'p Scope<'p>) -> Self {
        Self {
            values: HashMap::new(),
            aggregates: HashMap::new(),
            parent: Some(parent),
        }
    }

    /// The value named `name` here or in an enclosing scope (the
    /// innermost definition wins).
    pub fn get(&self, name: &str) -> Option<Item> {
        let mut scope = Some(self);
        while let Some(s) = scope {
            if let Some(v) = s.values.get(name) {
                return Some(Item::Tensor(v.clone()));
            }
            if let Some(item) = s.aggregates.get(name) {
                return Some(item.clone());
            }
            scope = s.parent;
        }
        None
    }

    /// Defines `name` in this scope.
    pub fn insert(&mut self, name: String, item: Item) {
        match item {
            Item::Tensor(v) => {
                self.aggregates.remove(&name);
                self.values.insert(name, v);
            }
            other => {
                self.values.remove(&name);
                self.aggregates.insert(name, other);
            }
        }
    }

    /// Every name visible here (for the subgraph's dependency order).
    pub fn visible(&self) -> HashSet<String> {
        let mut out = HashSet::new();
        let mut scope = Some(self);
        while let Some(s) = scope {
            out.extend(s.values.keys().cloned());
            out.extend(s.aggregates.keys().cloned());
            scope = s.parent;
        }
        out
    }
}
