//! The importer's error: a message for the user (the driver prints it and
//! exits with status 1).

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportError {
    pub message: String,
}

impl ImportError {
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }

    /// Prefixes the message with where it happened.
    pub fn context(self, what: impl fmt::Display) -> Self {
        Self {
            message: format!("{what}: {}", self.message),
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
