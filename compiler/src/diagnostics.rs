//! Diagnostics: emitting errors from passes, and printing MLIR diagnostics
//! the way compilers do (`file:line:col: error: message`, the source line
//! and a caret) in the `tcc` driver.

use std::collections::HashMap;
use std::ffi::CString;
use std::sync::{Arc, Mutex};

use melior::Context;
use melior::diagnostic::{Diagnostic, DiagnosticSeverity};
use melior::ir::Location;
use mlir_sys::MlirLocation;

/// The longest text (in characters) an error message quotes whole: a
/// longer type, attribute or source line is shortened by
/// [`truncate_for_message`].
pub const MESSAGE_QUOTE_LIMIT: usize = 400;

/// `text` when it is at most [`MESSAGE_QUOTE_LIMIT`] characters, else its
/// first and last characters around `... (N characters in all) ...`, so
/// that an error about a huge type or attribute stays readable.
pub fn truncate_for_message(text: &str) -> String {
    let count = text.chars().count();
    if count <= MESSAGE_QUOTE_LIMIT {
        return text.to_string();
    }
    let head: String = text.chars().take(MESSAGE_QUOTE_LIMIT * 3 / 4).collect();
    let tail: String = text.chars().skip(count - MESSAGE_QUOTE_LIMIT / 8).collect();
    format!("{head} ... ({count} characters in all) ... {tail}")
}

/// The part of a source line a diagnostic quotes, and where its caret
/// goes: the whole line when it is short, else about 120 characters around
/// `column` (0-based, in characters) with `...` where it was cut.
pub fn source_window(line: &str, column: usize) -> (String, usize) {
    const BEFORE: usize = 60;
    const AFTER: usize = 60;
    let count = line.chars().count();
    if count <= BEFORE + AFTER + 40 {
        return (line.to_string(), column);
    }
    let column = column.min(count);
    let start = column.saturating_sub(BEFORE);
    let end = (column + AFTER).min(count);
    let mut shown = String::new();
    if start > 0 {
        shown.push_str("...");
    }
    shown.extend(line.chars().skip(start).take(end - start));
    if end < count {
        shown.push_str("...");
    }
    let caret = column - start + if start > 0 { 3 } else { 0 };
    (shown, caret)
}

/// Emits an error diagnostic at `location` (or an unknown location).
pub fn emit_error(location: Option<Location>, message: &str) {
    let Some(location) = location else {
        eprintln!("error: {message}");
        return;
    };
    let text = CString::new(message.replace('\0', " ")).unwrap_or_default();
    unsafe { mlir_sys::mlirEmitError(location.to_raw(), text.as_ptr()) };
}

fn string_ref(value: mlir_sys::MlirStringRef) -> String {
    if value.data.is_null() {
        return String::new();
    }
    let bytes = unsafe { std::slice::from_raw_parts(value.data as *const u8, value.length) };
    String::from_utf8_lossy(bytes).into_owned()
}

/// File, line and column of a location, looking through name, call-site
/// and fused locations for the first file location.
pub fn file_line_col(location: MlirLocation) -> Option<(String, u32, u32)> {
    unsafe {
        if mlir_sys::mlirLocationIsAFileLineColRange(location) {
            let file = string_ref(mlir_sys::mlirIdentifierStr(
                mlir_sys::mlirLocationFileLineColRangeGetFilename(location),
            ));
            let line = mlir_sys::mlirLocationFileLineColRangeGetStartLine(location);
            let col = mlir_sys::mlirLocationFileLineColRangeGetStartColumn(location);
            return Some((file, line.max(0) as u32, col.max(0) as u32));
        }
        if mlir_sys::mlirLocationIsAName(location) {
            return file_line_col(mlir_sys::mlirLocationNameGetChildLoc(location));
        }
        if mlir_sys::mlirLocationIsACallSite(location) {
            return file_line_col(mlir_sys::mlirLocationCallSiteGetCaller(location));
        }
        if mlir_sys::mlirLocationIsAFused(location) {
            let count = mlir_sys::mlirLocationFusedGetNumLocations(location) as usize;
            let mut locations = vec![
                mlir_sys::MlirLocation {
                    ptr: std::ptr::null()
                };
                count
            ];
            mlir_sys::mlirLocationFusedGetLocations(location, locations.as_mut_ptr());
            return locations.into_iter().find_map(file_line_col);
        }
    }
    None
}

/// `file:line:col` of a location, if it has one.
pub fn location_string(location: MlirLocation) -> Option<String> {
    file_line_col(location).map(|(file, line, col)| format!("{file}:{line}:{col}"))
}

/// Collects the context's diagnostics, formatted with the source line they
/// point at, for the driver to print (or for tests to inspect).
#[derive(Clone, Default)]
pub struct DiagnosticSink {
    messages: Arc<Mutex<Vec<String>>>,
    sources: Arc<Mutex<HashMap<String, String>>>,
}

impl DiagnosticSink {
    /// Attaches a handler to `context` that records every diagnostic.
    pub fn attach(context: &Context) -> Self {
        let sink = Self::default();
        let handler_sink = sink.clone();
        context.attach_diagnostic_handler(move |diagnostic| {
            handler_sink.record(&diagnostic);
            true
        });
        sink
    }

    /// Remembers a file's text so that diagnostics can quote its lines.
    pub fn add_source(&self, name: &str, text: &str) {
        self.sources
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(name.to_string(), text.to_string());
    }

    fn record(&self, diagnostic: &Diagnostic) {
        let severity = match diagnostic.severity() {
            DiagnosticSeverity::Error => "error",
            DiagnosticSeverity::Warning => "warning",
            DiagnosticSeverity::Note => "note",
            DiagnosticSeverity::Remark => "remark",
        };
        let message = truncate_for_message(&diagnostic.to_string());
        let location = file_line_col(diagnostic.location().to_raw());
        let mut text = match &location {
            Some((file, line, col)) => format!("{file}:{line}:{col}: {severity}: {message}"),
            None => format!("{severity}: {message}"),
        };
        if let Some((file, line, col)) = location
            && let Some(source) = self
                .sources
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(&file)
            && let Some(source_line) = source.lines().nth(line.saturating_sub(1) as usize)
        {
            let (shown, caret) = source_window(source_line, col.saturating_sub(1) as usize);
            text.push('\n');
            text.push_str(&shown);
            text.push('\n');
            text.push_str(&" ".repeat(caret));
            text.push('^');
        }
        self.messages
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(text);
        for index in 0..diagnostic.note_count() {
            if let Ok(note) = diagnostic.note(index) {
                self.record(&note);
            }
        }
    }

    /// Takes the recorded messages.
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.messages.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_messages_and_source_lines_are_shortened() {
        let short = "tensor<2x3xf32>";
        assert_eq!(truncate_for_message(short), short);
        let huge = format!("tensor<{}f32>", "1x".repeat(70_000));
        let shown = truncate_for_message(&huge);
        assert!(shown.len() < 500, "{}", shown.len());
        assert!(shown.starts_with("tensor<1x1x") && shown.ends_with("1x1xf32>"));
        assert!(shown.contains("(140011 characters in all)"), "{shown}");
        let (line, caret) = source_window("abc", 1);
        assert_eq!((line.as_str(), caret), ("abc", 1));
        let long = format!("{}X{}", "a".repeat(5000), "b".repeat(5000));
        let (line, caret) = source_window(&long, 5000);
        assert!(line.len() < 140, "{}", line.len());
        assert_eq!(line.chars().nth(caret), Some('X'));
        assert!(line.starts_with("...") && line.ends_with("..."));
    }
}
