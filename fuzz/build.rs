//! The ONNX protobuf types, as in compiler/build.rs.

fn main() {
    println!("cargo:rerun-if-changed=../compiler/proto/onnx.proto");
    let descriptors = protox::compile(["onnx.proto"], ["../compiler/proto"]).expect("compile onnx.proto");
    prost_build::Config::new().bytes([".onnx.TensorProto.raw_data"]).compile_fds(descriptors).expect("generate onnx.rs");
}
