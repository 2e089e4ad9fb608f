//! Compiles the bundled MLP (embedded as bytes) and CNN (linked as a static
//! library) with `tcc` ($TCC, else on PATH) and generates their bindings.

fn main() {
    let models = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../test/models");
    tcc_build::Build::new()
        .model("mlp", models.join("mlp.mlir"))
        .linked_model("cnn", models.join("cnn.mlir"))
        .compile()
        .unwrap_or_else(|e| panic!("tcc-build: {e}"));
}
