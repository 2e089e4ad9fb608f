//! The ONNX importer on bad input: every malformed or unsupported model is
//! a clear error (exit status 1, a message naming the problem), never a
//! panic; and a bounded random-mutation fuzz of valid models.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support;
use tcc_compiler::front::onnx::{self, ImportOptions};

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path)
}

/// Runs `tcc import` on a file; returns (status code, stderr).
fn import(path: &Path, extra: &[&str]) -> (Option<i32>, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_tcc"))
        .arg("import")
        .arg(path)
        .args(extra)
        .output()
        .expect("run tcc");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).to_string(),
    )
}

fn assert_rejects(name: &str, needles: &[&str]) {
    let path = repo(&format!("test/onnx/bad/{name}.onnx"));
    let (code, stderr) = import(&path, &[]);
    assert_eq!(
        code,
        Some(1),
        "{name}: exit status {code:?}, stderr:\n{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{name} panicked:\n{stderr}");
    for needle in needles {
        assert!(
            stderr.contains(needle),
            "{name}: expected '{needle}' in:\n{stderr}"
        );
    }
}

#[test]
fn unsupported_op_names_op_node_opset_and_position() {
    assert_rejects(
        "unsupported_op",
        &[
            "unsupported op 'ImageDecoder'",
            "node 'the_decoder'",
            "opset 20",
            "node 2 of 2",
        ],
    );
}

/// A constant scale must be usable; a scale computed at run time is
/// imported (quantized with the run-time tensor, issue 32), not refused.
#[test]
fn quantization_parameters_must_be_usable_constants() {
    let (code, stderr) = import(&repo("test/onnx/bad/quant_runtime_scale.onnx"), &[]);
    assert_eq!(code, Some(0), "quant_runtime_scale: {stderr}");
    assert_rejects(
        "quant_zero_scale",
        &["node 'quantize'", "scale 0 is not a finite non-zero number"],
    );
}

/// An Attention cache whose heads differ from the new keys' and values'
/// is refused with the shapes (it once imported to an invalid concat).
#[test]
fn attention_cache_of_other_heads_is_rejected() {
    assert_rejects(
        "attention_past_mismatch",
        &[
            "node 'cached_attention'",
            "past_value float[2, 2, 2, 4]",
            "V float[2, 16, 3, 4]",
            "but along the sequence",
        ],
    );
}

#[test]
fn integer_convolution_past_exact_f32_sums_is_rejected() {
    assert_rejects(
        "conv_integer_overflow",
        &["node 'wide'", "ConvInteger", "4608 products", "past 2^24"],
    );
}

#[test]
fn dynamic_input_shape_is_rejected_with_a_hint() {
    assert_rejects(
        "dynamic_shape",
        &[
            "graph input 'x'",
            "dynamic dimension 'N'",
            "--input-shape x=",
        ],
    );
    // ... and accepted with a shape.
    let path = repo("test/onnx/bad/dynamic_shape.onnx");
    let (code, stderr) = import(&path, &["--input-shape", "x=4x3"]);
    assert_eq!(code, Some(0), "{stderr}");
    let (code, stderr) = import(&path, &["--input-shape", "x=4x5"]);
    assert_eq!(code, Some(1));
    assert!(stderr.contains("the model declares"), "{stderr}");
}

#[test]
fn unsupported_dtype_is_rejected() {
    assert_rejects(
        "unsupported_dtype",
        &["graph input 'x'", "string", "does not support"],
    );
}

#[test]
fn shapes_computed_at_run_time_are_rejected() {
    assert_rejects(
        "runtime_shape",
        &[
            "node 'reshape_by_input'",
            "computed at run time",
            "static shapes",
            "'shape' is a graph input: give its value at compile time with --input-value shape=",
        ],
    );
}

#[test]
fn outputs_shaped_by_run_time_values_are_rejected() {
    assert_rejects(
        "nonzero_runtime",
        &[
            "node 'nonzero_of_input'",
            "output shape depends on the values",
            "computed at run time",
            "dynamic shapes",
        ],
    );
    assert_rejects(
        "topk_runtime_k",
        &[
            "node 'topk_by_input'",
            "k (input #1 'k') is computed at run time",
            "output shape depends on it",
        ],
    );
}

#[test]
fn other_domains_and_newer_opsets_are_rejected() {
    assert_rejects("custom_domain", &["'FusedMatMul'", "com.microsoft"]);
    assert_rejects("opset_too_new", &["opset 29", "1 to 28"]);
}

#[test]
fn truncated_and_foreign_files_are_not_onnx_models() {
    assert_rejects("truncated", &["not an ONNX model"]);
    assert_rejects("not_onnx", &["not an ONNX model"]);
    let empty = tempfile::Builder::new().suffix(".onnx").tempfile().unwrap();
    let (code, stderr) = import(empty.path(), &[]);
    assert_eq!(code, Some(1));
    assert!(stderr.contains("the file is empty"), "{stderr}");
    let (code, stderr) = import(Path::new("/nonexistent/model.onnx"), &[]);
    assert_eq!(code, Some(1));
    assert!(stderr.contains("cannot read"), "{stderr}");
}

#[test]
fn compile_and_run_reject_bad_models_too() {
    let path = repo("test/onnx/bad/unsupported_op.onnx");
    for command in [vec!["compile", "-o", "/dev/null"], vec!["run"]] {
        let output = Command::new(env!("CARGO_BIN_EXE_tcc"))
            .args(&command)
            .arg(&path)
            .output()
            .expect("run tcc");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{command:?}: {stderr}");
        assert!(
            stderr.contains("unsupported op 'ImageDecoder'") && !stderr.contains("panicked"),
            "{command:?}: {stderr}"
        );
    }
}

/// Control characters and quotes in the model's strings (a producer name
/// with a newline was found by the mutation fuzz; node and graph names
/// become locations) leave a valid module: `tcc import` prints it with
/// its locations and the printed text parses back with the same names.
#[test]
fn control_characters_in_names_print_and_parse_back() {
    use prost::Message as _;
    let bytes = std::fs::read(repo("test/onnx/models/where_compare/model.onnx")).unwrap();
    let mut model = onnx::parse_model(&bytes).unwrap();
    model.producer_name = "line one\nline two\r".into();
    model.producer_version = "1\n2".into();
    let graph = model.graph.as_mut().unwrap();
    graph.name = "g\"raph\n".into();
    graph.node[0].name = "node \"one\"\n\t".into();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("model.onnx");
    std::fs::write(&path, model.encode_to_vec()).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_tcc"))
        .arg("import")
        .arg(&path)
        .output()
        .expect("run tcc");
    let text = String::from_utf8_lossy(&output.stdout).to_string();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(text.contains(r#"loc("node \22one\22\0A\09")"#), "{text}");
    let session = tcc_compiler::driver::session::Session::new();
    let module = session
        .parse("printed.mlir", &text)
        .unwrap_or_else(|e| panic!("{e:#}\n{text}"));
    let reprinted = { module.as_operation().to_string() };
    assert!(reprinted.contains("tcc.name = \"neither\""), "{reprinted}");
}

/// `--input-value` gives a graph input that holds what the import needs
/// (a Reshape's shape, TopK's k) its value at compile time: it becomes a
/// constant and no argument, the model compiles and runs, and a value
/// that does not fit the input is refused with the reason.
#[test]
fn input_values_given_at_compile_time_become_constants() {
    use tcc_compiler::front::onnx::InputValue;
    let literal = |name: &str, values: &[&str]| {
        (
            name.to_string(),
            InputValue::Literal(values.iter().map(|v| v.to_string()).collect()),
        )
    };
    let reshape = repo("test/onnx/bad/runtime_shape.onnx");
    let options = ImportOptions {
        input_values: vec![literal("shape", &["3", "-1"])],
        ..ImportOptions::default()
    };
    let imported = onnx::import_file(&reshape, &options).expect("import with the shape given");
    let inputs: Vec<&str> = imported.inputs.iter().map(|i| i.name.as_str()).collect();
    assert_eq!(inputs, ["x"]);
    assert_eq!(imported.outputs[0].ty.shape, [3, 2]);
    let options = ImportOptions {
        input_values: vec![literal("k", &["3"])],
        ..ImportOptions::default()
    };
    let imported = onnx::import_file(&repo("test/onnx/bad/topk_runtime_k.onnx"), &options)
        .expect("import with k given");
    assert_eq!(imported.outputs[0].ty.shape, [2, 3]);
    assert_eq!(imported.outputs[1].ty.shape, [2, 3]);

    // Values that do not fit, through `tcc import`.
    for (flag, needle) in [
        (
            "shape=3",
            "1 value is given, the input's declared shape [2] holds 2",
        ),
        (
            "shape=3,two",
            "'two' is not a value of the input's element type int64",
        ),
        (
            "shape=3,99999999999999999999",
            "is not a value of the input's element type int64",
        ),
        (
            "nothing=1",
            "the graph has no input 'nothing' (its inputs are: x, shape)",
        ),
        ("shape", "expected NAME=VALUES"),
        ("shape=@/nonexistent.npy", "/nonexistent.npy"),
    ] {
        let (code, stderr) = import(&reshape, &["--input-value", flag]);
        // A flag that does not parse is a usage error (clap's status 2).
        let usage = flag == "shape" || flag.contains('@');
        assert_eq!(code, Some(if usage { 2 } else { 1 }), "{flag}: {stderr}");
        assert!(!stderr.contains("panicked"), "{flag}:\n{stderr}");
        assert!(
            stderr.contains(needle),
            "{flag}: expected '{needle}' in:\n{stderr}"
        );
    }
    let (code, stderr) = import(
        &reshape,
        &["--input-value", "shape=3,2", "--input-value", "shape=6,1"],
    );
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("a value is given twice for the input 'shape'"),
        "{stderr}"
    );
    let (code, stderr) = import(&reshape, &["--input-value", "x=1,2,3,4,5,6"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("--input-value shape="),
        "the shape is still needed: {stderr}"
    );

    // Compiled with the value from a .npy file and run: the reshape of x.
    let _guard = support::device_and_spawn_lock();
    let dir = tempfile::tempdir().expect("tempdir");
    let shape_file = dir.path().join("shape.npy");
    let shape: Vec<u8> = [3i64, 2].iter().flat_map(|v| v.to_le_bytes()).collect();
    tcc_runtime::npy::write_npy(
        &shape_file,
        &tcc_runtime::HostTensor::new(tcc_runtime::DType::I64, vec![2], shape).expect("tensor"),
    )
    .expect("write shape.npy");
    let library = dir.path().join("model.so");
    let output = Command::new(env!("CARGO_BIN_EXE_tcc"))
        .arg("compile")
        .arg(&reshape)
        .arg(format!("--input-value=shape=@{}", shape_file.display()))
        .arg("-o")
        .arg(&library)
        .output()
        .expect("run tcc");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // The artifact says what was given (its function no longer takes it).
    let inspect = Command::new(env!("CARGO_BIN_EXE_tcc"))
        .arg("inspect")
        .arg(&library)
        .output()
        .expect("run tcc inspect");
    let inspect = String::from_utf8_lossy(&inspect.stdout);
    assert!(
        inspect.contains(
            "input given at compile time (--input-value): shape = [3, 2] : tensor<2xi64>"
        ),
        "{inspect}"
    );
    assert!(
        inspect.contains("@main(x: 2x3xf32) -> (y: 3x2xf32)"),
        "{inspect}"
    );
    let model = tcc_runtime::Model::load(&library).expect("load");
    let runtime = support::uncached_runtime();
    let mut session = runtime.session(&model).expect("session");
    let x: Vec<u8> = (1..=6).flat_map(|v| (v as f32).to_le_bytes()).collect();
    let x = tcc_runtime::HostTensor::new(tcc_runtime::DType::F32, vec![2, 3], x).expect("x");
    let outputs = session.run("main", &[x]).expect("run with x alone");
    assert_eq!(outputs[0].shape, [3, 2]);
    let values: Vec<f32> = outputs[0]
        .bytes
        .chunks(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    assert_eq!(values, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]);

    // `tcc run` takes the flag too (TopK's k here).
    let output = Command::new(env!("CARGO_BIN_EXE_tcc"))
        .arg("run")
        .arg(repo("test/onnx/bad/topk_runtime_k.onnx"))
        .args([
            "--input-value",
            "k=2",
            "--input=2x5xf32=1,5,3,2,4,9,8,7,6,0",
        ])
        .output()
        .expect("run tcc");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("result[0]: 2x2xf32=[[5 4][9 8]]"),
        "{stdout}"
    );
    assert!(
        stdout.contains("result[1]: 2x2xi64=[[1 4][0 1]]"),
        "{stdout}"
    );
}

/// The built module's text (without locations).
fn built_text(imported: onnx::Imported) -> String {
    let session = tcc_compiler::driver::session::Session::new();
    let module = tcc_compiler::driver::import::build_imported(&session, "model.onnx", imported)
        .unwrap_or_else(|e| panic!("{e:#}"));
    module.as_operation().to_string()
}

#[test]
fn imported_functions_keep_graph_io_names() {
    let imported = onnx::import_file(
        &repo("test/onnx/models/where_compare/model.onnx"),
        &ImportOptions::default(),
    )
    .expect("import");
    let inputs: Vec<&str> = imported.inputs.iter().map(|i| i.name.as_str()).collect();
    let outputs: Vec<&str> = imported.outputs.iter().map(|o| o.name.as_str()).collect();
    assert_eq!(inputs, ["a", "b"]);
    assert_eq!(outputs, ["y", "neither", "eq"]);
    let text = built_text(imported);
    assert!(
        text.contains(r#"%arg0: tensor<3x5xf32> {tcc.name = "a"}"#),
        "{text}"
    );
    assert!(
        text.contains(r#"tensor<3x5xi1> {tcc.name = "neither"}"#),
        "{text}"
    );
}

/// xorshift64*: a small deterministic generator for the mutation fuzz.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Mutates valid model bytes (bit flips, byte overwrites with interesting
/// values, truncation, chunk duplication and deletion) and imports the
/// result: errors are fine, panics are not. Bounded: a fixed number of
/// iterations with a fixed seed (TCC_FUZZ_ITERATIONS overrides).
#[test]
fn mutated_models_never_panic() {
    let mut seeds = Vec::new();
    for entry in std::fs::read_dir(repo("test/onnx/models")).unwrap() {
        let path = entry.unwrap().path().join("model.onnx");
        if path.is_file() {
            seeds.push(std::fs::read(path).unwrap());
        }
    }
    seeds.sort();
    assert!(!seeds.is_empty());
    let iterations: usize = std::env::var("TCC_FUZZ_ITERATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let interesting: [u8; 8] = [0x00, 0x01, 0x7f, 0x80, 0xff, 0x08, 0x10, 0x3a];
    let options = ImportOptions::default();
    let session = tcc_compiler::driver::session::Session::new();
    let mut accepted = 0;
    for iteration in 0..iterations {
        let mut bytes = seeds[rng.below(seeds.len())].clone();
        for _ in 0..1 + rng.below(4) {
            if bytes.is_empty() {
                break;
            }
            let at = rng.below(bytes.len());
            match rng.below(6) {
                0 => bytes[at] ^= 1 << rng.below(8),
                1 => bytes[at] = interesting[rng.below(interesting.len())],
                2 => bytes.truncate(at),
                3 => {
                    let end = (at + 1 + rng.below(16)).min(bytes.len());
                    let chunk = bytes[at..end].to_vec();
                    let to = rng.below(bytes.len());
                    bytes.splice(to..to, chunk);
                }
                4 => {
                    let end = (at + 1 + rng.below(16)).min(bytes.len());
                    bytes.drain(at..end);
                }
                _ => bytes[at] = rng.next() as u8,
            }
        }
        let result = std::panic::catch_unwind(|| onnx::import_bytes(&bytes, None, &options));
        match result {
            Ok(Ok(imported)) => {
                // What the importer accepts must be valid MLIR.
                accepted += 1;
                let built = tcc_compiler::driver::import::build_imported(
                    &session,
                    "mutated.onnx",
                    imported,
                );
                if let Err(error) = built {
                    let path =
                        std::env::temp_dir().join(format!("tcc-onnx-invalid-{iteration}.onnx"));
                    std::fs::write(&path, &bytes).unwrap();
                    panic!(
                        "mutation {iteration} imported to an invalid module ({error:#}); input saved to {}",
                        path.display()
                    );
                }
            }
            Ok(Err(error)) => assert!(!error.message.is_empty()),
            Err(_) => {
                let path = std::env::temp_dir().join(format!("tcc-onnx-crash-{iteration}.onnx"));
                std::fs::write(&path, &bytes).unwrap();
                panic!(
                    "the importer panicked on mutation {iteration}; input saved to {}",
                    path.display()
                );
            }
        }
    }
    eprintln!(
        "{iterations} mutated models: {accepted} imported, {} rejected with an error",
        iterations - accepted
    );
}

#[test]
fn control_flow_that_depends_on_run_time_values_is_rejected() {
    assert_rejects(
        "if_runtime_condition",
        &[
            "node 'branchy'",
            "If's condition ('c') is computed at run time",
            "taken branch inline",
        ],
    );
    assert_rejects(
        "loop_runtime_trip_count",
        &[
            "node 'looper'",
            "trip count M ('m') is computed at run time",
            "unrolls",
        ],
    );
    assert_rejects(
        "loop_runtime_condition",
        &[
            "node 'while_small'",
            "('cond_out') is not known at import time in iteration 0",
        ],
    );
}

/// A sequence graph output is returned as its elements; a sequence
/// input needs its structure (its type does not give its length), and
/// with it becomes one argument per element.
#[test]
fn sequences_at_the_graph_boundary_are_their_elements() {
    let out = onnx::import_file(
        &repo("test/onnx/bad/sequence_output.onnx"),
        &ImportOptions::default(),
    )
    .expect("a sequence output imports");
    let names: Vec<(&str, Vec<i64>)> = out
        .outputs
        .iter()
        .map(|o| (o.name.as_str(), o.ty.shape.clone()))
        .collect();
    assert_eq!(names, [("s[0]", vec![1, 3]), ("s[1]", vec![1, 3])]);

    assert_rejects(
        "sequence_input",
        &[
            "graph input 's' is a sequence",
            "does not say how many tensors it holds",
        ],
    );
    let options = ImportOptions {
        structures: vec![(
            "s".into(),
            onnx::Structure::Sequence(vec![vec![2, 3], vec![4, 3]]),
        )],
        ..ImportOptions::default()
    };
    let seq = onnx::import_file(&repo("test/onnx/bad/sequence_input.onnx"), &options)
        .expect("a sequence input with its structure imports");
    let inputs: Vec<(&str, Vec<i64>)> = seq
        .inputs
        .iter()
        .map(|i| (i.name.as_str(), i.ty.shape.clone()))
        .collect();
    assert_eq!(inputs, [("s[0]", vec![2, 3]), ("s[1]", vec![4, 3])]);
    assert_eq!(seq.outputs[0].ty.shape, vec![6, 3]);

    // A structure of the wrong kind, or for a name that is no input.
    for (structure, needle) in [
        (
            onnx::Structure::Tensor(vec![2]),
            "is a sequence, but the structure given for it is a tensor",
        ),
        (
            onnx::Structure::Optional(None),
            "is a sequence, but the structure given for it is an optional",
        ),
    ] {
        let options = ImportOptions {
            structures: vec![("s".into(), structure)],
            ..ImportOptions::default()
        };
        let error = onnx::import_file(&repo("test/onnx/bad/sequence_input.onnx"), &options)
            .expect_err("a wrong structure is refused");
        assert!(error.message.contains(needle), "{}", error.message);
    }
    let options = ImportOptions {
        structures: vec![
            ("s".into(), onnx::Structure::Sequence(vec![vec![1, 3]])),
            ("t".into(), onnx::Structure::Sequence(vec![])),
        ],
        ..ImportOptions::default()
    };
    let error = onnx::import_file(&repo("test/onnx/bad/sequence_input.onnx"), &options)
        .expect_err("an unknown name is refused");
    assert!(
        error
            .message
            .contains("a structure is given for 't', which is not a graph input"),
        "{}",
        error.message
    );
}

/// `tcc import`/`compile --sequence NAME=SHAPES` give a sequence input's
/// structure on the command line; bad specs and names are errors.
#[test]
fn sequence_structure_flag_gives_the_elements() {
    let path = repo("test/onnx/bad/sequence_input.onnx");
    let output = Command::new(env!("CARGO_BIN_EXE_tcc"))
        .arg("import")
        .arg(&path)
        .args(["--sequence", "s=2x3,4x3,1x3"])
        .output()
        .expect("run tcc");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    for needle in [
        "tensor<2x3xf32> {tcc.name = \"s[0]\"}",
        "tensor<4x3xf32> {tcc.name = \"s[1]\"}",
        "tensor<1x3xf32> {tcc.name = \"s[2]\"}",
        "-> (tensor<7x3xf32> {tcc.name = \"y\"})",
    ] {
        assert!(stdout.contains(needle), "expected '{needle}' in:\n{stdout}");
    }
    for (flags, needle) in [
        (
            vec!["--sequence", "s=2x3,4y3"],
            "--sequence s=2x3,4y3: '4y3' is not a shape",
        ),
        (vec!["--sequence", "s"], "expected NAME=SHAPES"),
        (
            vec!["--sequence", "s=2x3", "--sequence", "s=1x3"],
            "give the structure of 's' twice",
        ),
        (
            vec!["--sequence", "s=2x3", "--sequence", "t=1x3"],
            "a structure is given for 't', which is not a graph input (the graph inputs are: s)",
        ),
        (
            vec!["--empty-optional", "s"],
            "'s' is a sequence, but the structure given for it is an optional",
        ),
        (vec![], "--sequence s=SHAPE,SHAPE,..."),
    ] {
        let (code, stderr) = import(&path, &flags);
        assert_eq!(code, Some(1), "{flags:?}: {stderr}");
        assert!(
            stderr.contains(needle),
            "{flags:?}: expected '{needle}' in:\n{stderr}"
        );
    }
    let (code, stderr) = import(
        &repo("test/onnx/bad/dynamic_shape.onnx"),
        &["--sequence", "x=2x3"],
    );
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("graph input 'x' is a tensor"), "{stderr}");
    // tcc compile takes it too (to the graph phase: no device needed).
    let output = Command::new(env!("CARGO_BIN_EXE_tcc"))
        .arg("compile")
        .arg(&path)
        .args(["--sequence", "s=2x3,", "--compile-to=graph"])
        .output()
        .expect("run tcc");
    assert_eq!(output.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("'' is not a shape"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let output = Command::new(env!("CARGO_BIN_EXE_tcc"))
        .arg("compile")
        .arg(&path)
        .args(["--sequence", "s=5x2,scalar", "--compile-to=graph"])
        .output()
        .expect("run tcc");
    // A 0-d element cannot be concatenated with a 2-D one: the node says so.
    assert_eq!(output.status.code(), Some(1));
    let output = Command::new(env!("CARGO_BIN_EXE_tcc"))
        .arg("compile")
        .arg(&path)
        .args(["--sequence", "s=5x2,1x2", "--compile-to=graph"])
        .output()
        .expect("run tcc");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("tensor<6x2xf32>"), "{stdout}");
}

/// Errors of `ai.onnx.ml` nodes name that domain's opset (the model
/// imports opset 3 of it and 17 of the default domain).
#[test]
fn ml_domain_errors_name_the_domains_opset() {
    assert_rejects(
        "ml_unsupported",
        &[
            "node 'svm' (SVMRegressor, domain ai.onnx.ml, opset 3;",
            "unsupported op 'SVMRegressor' of domain 'ai.onnx.ml'",
        ],
    );
}

#[test]
fn random_string_and_training_ops_say_why() {
    assert_rejects(
        "random_op",
        &[
            "node 'noise'",
            "RandomNormalLike draws random numbers",
            "nondeterministic",
        ],
    );
    assert_rejects(
        "string_op",
        &["node 'normalize'", "strings are not supported"],
    );
    assert_rejects(
        "training_op",
        &["node 'update'", "'Adagrad'", "is a training op"],
    );
}

/// An empty constant (a dimension of 0) that reaches an op the importer
/// lowers to a kernel: TOSA has no empty tensors, and its verifier's
/// message named no node (issue 38, item 9); now the importer refuses it
/// with the node. (Empty tensors the importer computes without a kernel,
/// and empty graph outputs, are supported: the node suite's cases.)
#[test]
fn empty_constants_are_refused_with_their_node() {
    assert_rejects(
        "empty_constant",
        &[
            "node 'empty_product'",
            "(MatMul, opset 13; node 1 of 2",
            "an input is an empty tensor (tensor<2x0xf32>)",
        ],
    );
}
