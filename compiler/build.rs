//! Generates the ONNX protobuf types (`onnx.rs` in OUT_DIR) from the
//! official schema in `proto/onnx.proto` (and `proto/onnx-data.proto`: the
//! sequences and optionals of test data sets) with prost, compiling the schema
//! with protox (a pure-Rust protobuf compiler: no system `protoc`).

fn main() {
    println!("cargo:rerun-if-changed=proto/onnx.proto");
    println!("cargo:rerun-if-changed=proto/onnx-data.proto");
    println!("cargo:rerun-if-changed=build.rs");
    let descriptors = match protox::compile(["onnx.proto", "onnx-data.proto"], ["proto"]) {
        Ok(descriptors) => descriptors,
        Err(error) => panic!("cannot compile proto/onnx.proto: {error}"),
    };
    // Tensor bytes as `bytes::Bytes`: decoding from a `Bytes` of the mapped
    // file then slices the weights out of the mapping instead of copying
    // them (the importer keeps them mapped until they reach the artifact).
    if let Err(error) = prost_build::Config::new()
        .bytes([".onnx.TensorProto.raw_data"])
        .compile_fds(descriptors)
    {
        panic!("cannot generate Rust code for proto/onnx.proto: {error}");
    }
}
