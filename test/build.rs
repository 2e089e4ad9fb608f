//! Lists test/models/*.mlir into `$OUT_DIR/models.rs` as one
//! `model_test!(ident, "name");` line per model, so that every model gets
//! its own named #[test] in tests/e2e.rs.

use std::fmt::Write as _;
use std::path::Path;

fn main() {
    let models = Path::new(env!("CARGO_MANIFEST_DIR")).join("models");
    println!("cargo:rerun-if-changed={}", models.display());
    let mut names: Vec<String> = std::fs::read_dir(&models)
        .expect("test/models exists")
        .filter_map(|entry| entry.ok())
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|e| e == "mlir"))
        .filter_map(|path| {
            path.file_stem()
                .and_then(|s| s.to_str())
                .map(str::to_string)
        })
        .collect();
    names.sort();
    let mut out = String::new();
    for name in &names {
        let ident: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '_'
                }
            })
            .collect();
        writeln!(out, "model_test!(model_{ident}, {name:?});").unwrap();
    }
    let out_dir = std::env::var("OUT_DIR").expect("OUT_DIR");
    std::fs::write(Path::new(&out_dir).join("models.rs"), out).expect("write models.rs");
}
