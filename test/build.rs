//! Lists test/models/*.mlir into `$OUT_DIR/models.rs` as one
//! `model_test!(ident, "name", "target");` line per model and kernel-tuning
//! target, so that every model gets its own named #[test] per target in
//! tests/e2e.rs (`model_<name>__<target>`).

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
    // One test per model and kernel-tuning target: every target's kernels
    // run on the test device (correctness does not depend on the device).
    // A model whose header pins a target (`// TARGET: nvidia`) gets that
    // target's test only.
    let mut out = String::new();
    for name in &names {
        let ident = name
            .replace(|c: char| !c.is_ascii_alphanumeric(), "_")
            .to_ascii_lowercase();
        let text =
            std::fs::read_to_string(models.join(format!("{name}.mlir"))).expect("read a model");
        let pinned = text.lines().find_map(|line| {
            line.trim_start()
                .strip_prefix("//")?
                .trim()
                .strip_prefix("TARGET:")
                .map(|t| t.trim().to_string())
        });
        let targets: Vec<String> = match pinned {
            Some(target) => vec![target],
            None => ["pocl-cpu", "nvidia", "generic"]
                .iter()
                .map(|t| t.to_string())
                .collect(),
        };
        for target in targets {
            let suffix = target.replace('-', "_");
            writeln!(
                out,
                "model_test!(model_{ident}__{suffix}, {name:?}, {target:?});"
            )
            .unwrap();
        }
    }
    let out_dir = std::env::var("OUT_DIR").expect("OUT_DIR");
    std::fs::write(Path::new(&out_dir).join("models.rs"), out).expect("write models.rs");
}
