//! The importer's error: a message for the user (the driver prints it and
//! exits with status 1).

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportError {
    pub message: String,
    /// The ONNX value whose contents the import needed at import time and
    /// found computed at run time (a shape, axes, pads, a trip count), when
    /// that is why it failed: a graph input named here can be given its
    /// value at compile time (`--input-value`, [`super::InputValue`]).
    pub needs_value: Option<String>,
}

impl ImportError {
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            needs_value: None,
        }
    }

    /// An import that needs the contents of the run-time value `name`.
    pub fn needs_value(message: impl Into<String>, name: &str) -> Self {
        Self {
            message: message.into(),
            needs_value: Some(name.to_string()),
        }
    }

    /// Prefixes the message with where it happened.
    pub fn context(self, what: impl fmt::Display) -> Self {
        Self {
            message: format!("{what}: {}", self.message),
            needs_value: self.needs_value,
        }
    }
}

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ImportError {}

pub type Result<T> = std::result::Result<T, ImportError>;

/// `bail!("...")`: returns an [`ImportError`] with a formatted message
/// (`ImportError` must be in scope: the module is also compiled into the
/// fuzz target, so no `$crate` path).
macro_rules! bail {
    ($($arg:tt)*) => {
        return Err(ImportError::new(format!($($arg)*)))
    };
}

pub(crate) use bail;
