//! Checks `runtime/include/tcc_abi.h` against the table: a C program of
//! `_Static_assert`s on every field's `offsetof`, every struct's `sizeof`
//! and every constant, generated from `tcc_abi`, must compile against the
//! header with the system C compiler (`$CC`, else `cc`); and each struct of
//! the header must declare exactly the table's fields, in order.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::Command;

fn header_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../runtime/include")
}

/// The C program asserting the table's layout and constants.
fn assertions() -> String {
    let mut text = String::from("#include \"tcc_abi.h\"\n#include <stddef.h>\n");
    for s in tcc_abi::STRUCTS {
        let (fields, size) = s.layout();
        for (field, offset) in fields {
            let _ = writeln!(
                text,
                "_Static_assert(offsetof({0}, {field}) == {offset}, \"{0}.{field} at {offset}\");",
                s.name
            );
        }
        let _ = writeln!(
            text,
            "_Static_assert(sizeof({0}) == {size}, \"sizeof({0}) == {size}\");",
            s.name
        );
    }
    for (name, value) in tcc_abi::CONSTANTS {
        let _ = writeln!(
            text,
            "_Static_assert({name} == {value}, \"{name} == {value}\");"
        );
    }
    text
}

#[test]
fn the_c_header_has_the_tables_layout_and_constants() {
    let directory = tempfile_dir();
    let source = directory.join("abi_check.c");
    std::fs::write(&source, assertions()).unwrap();
    let compiler = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let output = Command::new(&compiler)
        .arg("-std=c11")
        .arg("-fsyntax-only")
        .arg("-I")
        .arg(header_dir())
        .arg(&source)
        .output()
        .expect("a C compiler (cc or $CC)");
    assert!(
        output.status.success(),
        "tcc_abi.h disagrees with tcc_abi:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let _ = std::fs::remove_dir_all(&directory);
}

/// The field names of `typedef struct { ... } NAME;` in the header, in
/// order (the last identifier before each top-level `;`).
fn header_fields(header: &str, name: &str) -> Vec<String> {
    let end = header
        .find(&format!("}} {name};"))
        .unwrap_or_else(|| panic!("tcc_abi.h declares no struct {name}"));
    let start = header[..end].rfind("typedef struct {").unwrap() + "typedef struct {".len();
    // Drop comments and the union's body.
    let mut body = String::new();
    let mut rest = &header[start..end];
    while let Some(open) = rest.find("/*") {
        body.push_str(&rest[..open]);
        rest = &rest[open + rest[open..].find("*/").unwrap() + 2..];
    }
    body.push_str(rest);
    while let (Some(open), Some(close)) = (body.find('{'), body.find('}')) {
        body.replace_range(open..=close, "");
    }
    body.split(';')
        .filter(|d| !d.trim().is_empty())
        .map(|declaration| {
            // `int32_t (*alloc)(...)` names `alloc`; others end in the name.
            let declaration = declaration.trim();
            let name_part = match declaration.find("(*") {
                Some(p) => &declaration[p + 2..declaration[p..].find(')').unwrap() + p],
                None => declaration,
            };
            name_part
                .rsplit(|c: char| !(c.is_alphanumeric() || c == '_'))
                .find(|w| !w.is_empty())
                .unwrap()
                .to_string()
        })
        .collect()
}

#[test]
fn the_c_header_declares_exactly_the_tables_fields() {
    let header = std::fs::read_to_string(header_dir().join("tcc_abi.h")).unwrap();
    for s in tcc_abi::STRUCTS {
        let table: Vec<&str> = s.fields.iter().map(|(f, _)| *f).collect();
        assert_eq!(header_fields(&header, s.name), table, "struct {}", s.name);
    }
}

fn tempfile_dir() -> PathBuf {
    let directory = std::env::temp_dir().join(format!("tcc-abi-check-{}", std::process::id()));
    std::fs::create_dir_all(&directory).unwrap();
    directory
}
