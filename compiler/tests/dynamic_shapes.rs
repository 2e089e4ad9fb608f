//! Dynamic shapes (issue 33), as far as they reach today: `--dim
//! NAME=MIN..MAX` keeps an ONNX model's `dim_param` symbolic through the
//! import (`?` in every type that depends on it, the ranges on the module
//! as `#tcc.dims`, each input's dimensions named by `tcc.dim_names`), and
//! the graph, linalg, dispatch, tile and buffer phases compile a leading
//! batch as `?` (the tile phase's strategies chosen at the declared
//! maximum), outlining launches each kernel for the call's batch, the
//! loop mapping runs loop kernels to it, the memory plan holds the
//! maximum and the OpenCL C kernels read the batch from scalar arguments;
//! every step that cannot compile a symbolic dimension yet (the host
//! writer, and ops outside the first slice) refuses it with the op,
//! the pass and the dimension named. The models are written at test time by
//! `test/onnx/dynamic/models.py` (the onnx package).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The test models, written once per test into a temporary directory.
fn models() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new("python3")
        .arg(repo().join("test/onnx/dynamic/models.py"))
        .arg(dir.path())
        .output()
        .expect("python3");
    assert!(
        output.status.success(),
        "models.py failed (is the onnx package installed? `make deps`): {}",
        String::from_utf8_lossy(&output.stderr)
    );
    dir
}

fn tcc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tcc"))
        .args(args)
        .output()
        .expect("run tcc")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn ok(o: Output) -> String {
    assert!(o.status.success(), "tcc failed: {}", text(&o));
    text(&o)
}

fn fails(o: Output) -> String {
    assert_eq!(o.status.code(), Some(1), "expected exit 1: {}", text(&o));
    let t = text(&o);
    assert!(!t.contains("panicked"), "{t}");
    t
}

fn path(dir: &tempfile::TempDir, name: &str) -> String {
    dir.path().join(name).display().to_string()
}

#[test]
fn a_declared_batch_stays_symbolic_through_the_import() {
    let dir = models();
    let mlp = ok(tcc(&[
        "import",
        &path(&dir, "mlp.onnx"),
        "--dim",
        "batch=1..64",
    ]));
    assert!(
        mlp.contains("tcc.dims = #tcc.dims<names = [\"batch\"], min = [1], max = [64]>"),
        "{mlp}"
    );
    assert!(
        mlp.contains(
            "%arg0: tensor<?x32xf32> {tcc.dim_names = [\"batch\", \"\"], tcc.name = \"x\"}"
        ),
        "{mlp}"
    );
    assert!(
        mlp.contains("-> (tensor<?x10xf32> {tcc.name = \"y\"})"),
        "{mlp}"
    );
    // The MatMul's rows (batch) and the reshapes around it: the batch is
    // the reshapes' inferred extent.
    assert!(mlp.contains("-> tensor<1x?x64xf32>"), "{mlp}");
    assert!(mlp.contains("dense<[-1, 64]> : tensor<2xindex>"), "{mlp}");
    assert!(mlp.contains("tcc.softmax"), "{mlp}");
    assert!(!mlp.contains("1009") && !mlp.contains("1013"), "{mlp}");

    let cnn = ok(tcc(&[
        "import",
        &path(&dir, "cnn.onnx"),
        "--dim",
        "batch=1..64",
    ]));
    for expected in [
        "%arg0: tensor<?x3x16x16xf32>",
        "tosa.conv2d",
        "-> tensor<?x16x16x8xf32>",
        "tosa.max_pool2d",
        "-> tensor<?x8x8x8xf32>",
        "-> (tensor<?x10xf32> {tcc.name = \"y\"})",
    ] {
        assert!(cnn.contains(expected), "{expected} in {cnn}");
    }

    // The same name ties two inputs together.
    let two = ok(tcc(&[
        "import",
        &path(&dir, "two_inputs.onnx"),
        "--dim",
        "batch=2..8",
    ]));
    assert_eq!(
        two.matches("tensor<?x16xf32> {tcc.dim_names = [\"batch\", \"\"]")
            .count(),
        2,
        "{two}"
    );
    assert!(
        two.contains(
            "tosa.add %arg0, %arg1 : (tensor<?x16xf32>, tensor<?x16xf32>) -> tensor<?x16xf32>"
        ),
        "{two}"
    );
}

#[test]
fn input_shape_still_specializes_a_declared_dimension() {
    let dir = models();
    let mlp = ok(tcc(&[
        "import",
        &path(&dir, "mlp.onnx"),
        "--dim",
        "batch=1..64",
        "--input-shape",
        "x=5x32",
    ]));
    assert!(mlp.contains("%arg0: tensor<5x32xf32>"), "{mlp}");
    assert!(
        !mlp.contains("tcc.dim_names") && !mlp.contains('?'),
        "{mlp}"
    );
    let out = dir.path().join("mlp5.so");
    ok(tcc(&[
        "compile",
        &path(&dir, "mlp.onnx"),
        "--dim",
        "batch=1..64",
        "--input-shape",
        "x=5x32",
        "-o",
        &out.display().to_string(),
    ]));
    assert!(out.is_file());
}

#[test]
fn the_graph_linalg_and_dispatch_phases_keep_a_leading_batch_symbolic() {
    let dir = models();
    let phase = |model: &str, dim: &str| {
        ok(tcc(&[
            "compile",
            &path(&dir, model),
            "--dim",
            dim,
            "--compile-to",
            "dispatch",
        ]))
    };
    // The MLP: both products with a dynamic M, the bias and ReLU as
    // elementwise kernels, the softmax as the row template's op; every op
    // in a named kernel, no static stand-in for the batch anywhere.
    let mlp = phase("mlp.onnx", "batch=1..64");
    for expected in [
        "%arg0: tensor<?x32xf32> {tcc.dim_names = [\"batch\", \"\"], tcc.name = \"x\"}",
        "tcc.dispatch \"batch_matmul_add_min_max_0\" -> tensor<1x?x64xf32> {",
        "linalg.batch_matmul {tcc.kind = \"matmul\"}",
        "ins(%expanded, %cst_2 : tensor<1x?x32xf32>, tensor<1x32x64xf32>) outs(%",
        "tcc.dispatch \"softmax_2\" -> tensor<?x10xf32> {",
        "linalg.softmax {tcc.kind = \"softmax\"}",
        "dimension(1) ins(%collapsed_11 : tensor<?x10xf32>)",
        "-> (tensor<?x10xf32> {tcc.name = \"y\"})",
    ] {
        assert!(mlp.contains(expected), "{expected} in {mlp}");
    }
    assert!(!mlp.contains("1009") && !mlp.contains("x64x32"), "{mlp}");
    // The CNN: the convolution with a dynamic N, its NCHW input's
    // transpose and its pad folded into its loads (a `tcc.conv`, as for a
    // static batch), the ReLU its epilogue, the pooling, the
    // global average pool as a row sum over the static spatial extent, the
    // Gemm with a dynamic M.
    let cnn = phase("cnn.onnx", "batch=1..64");
    for expected in [
        "tcc.conv<conv_2d_nhwc_hwcf, strides = [1, 1], dilations = [1, 1]> ins(%cst_2 : tensor<3x3x3x8xf32>) outs(%",
        "tensor<?x16x16x8xf32>) indexing_maps",
        "tcc.dispatch \"conv_min_max_0\" -> tensor<?x16x16x8xf32> {",
        "linalg.pooling_nhwc_max",
        "tensor<?x8x8x8xf32>",
        "tensor<1x?x8xf32>, tensor<1x8x10xf32>",
        "-> (tensor<?x10xf32> {tcc.name = \"y\"})",
    ] {
        assert!(cnn.contains(expected), "{expected} in {cnn}");
    }
    // The same kernels as the model compiled for one batch: nothing the
    // static model folds or fuses is left apart for a symbolic one.
    let kernels = |ir: &str| {
        let mut names: Vec<String> = ir
            .match_indices("tcc.dispatch \"")
            .map(|(at, _)| {
                let rest = &ir[at + "tcc.dispatch \"".len()..];
                rest[..rest.find('"').unwrap()].to_string()
            })
            .collect();
        names.sort();
        names.dedup();
        names
    };
    // Each product takes its bias (and the MLP's ReLU) as its epilogue
    // (tcc-reshape-epilogues), as with a static batch: the MLP is the two
    // products and the softmax, the CNN four kernels.
    for (model, dynamic, shape, count) in [
        ("mlp.onnx", &mlp, "x=5x32", 3),
        ("cnn.onnx", &cnn, "x=5x3x16x16", 4),
    ] {
        let fixed = ok(tcc(&[
            "compile",
            &path(&dir, model),
            "--input-shape",
            shape,
            "--compile-to",
            "dispatch",
        ]));
        assert_eq!(kernels(dynamic), kernels(&fixed), "{model}");
        assert_eq!(kernels(dynamic).len(), count, "{model}: {dynamic}");
    }
    // LayerNormalization: the row kernel over the static last axis.
    let ln = phase("layer_norm.onnx", "batch=1..64");
    assert!(
        ln.contains("tcc.layer_norm_rows ins(%arg0, %cst, %cst_0 : tensor<?x16xf32>, tensor<16xf32>, tensor<16xf32>) outs(")
            && ln.contains("tcc.dispatch \"layer_norm_0\" -> tensor<?x16xf32> {")
            && ln.contains("{tcc.kind = \"layer_norm\"} -> tensor<?x16xf32>"),
        "{ln}"
    );
    // Two inputs tied by one name: one elementwise kernel on both.
    let two = phase("two_inputs.onnx", "batch=2..8");
    assert!(
        two.contains("ins(%arg0, %arg1 : tensor<?x16xf32>, tensor<?x16xf32>)"),
        "{two}"
    );
}

#[test]
fn the_tile_phase_chooses_strategies_at_the_declared_maximum() {
    let dir = models();
    let strategies = |args: &[&str]| {
        let ir = ok(tcc(&[&["compile", "--compile-to", "tile"], args].concat()));
        let mut found: Vec<String> = ir
            .match_indices("tcc.strategy = ")
            .map(|(at, _)| {
                let rest = &ir[at..];
                rest[..rest.find('>').unwrap() + 1].to_string()
            })
            .collect();
        found.sort();
        found
    };
    // Every kernel of the model with a symbolic batch (1..64) takes the
    // strategy it takes when compiled for batch 64: the GEMM template's
    // tiles for M = 64 (the MLP) and M = 64 x 16 x 16 (the convolution),
    // loop nests' work-groups, the softmax and layer norm row templates.
    // On the CPU the pooling is the exception: the window template's
    // launch counts work-items from the batch, so a symbolic one keeps the
    // loop nest.
    for (target, models) in [
        (
            "opencl-generic",
            &[
                ("mlp", "x=64x32"),
                ("cnn", "x=64x3x16x16"),
                ("layer_norm", "x=64x16"),
            ][..],
        ),
        (
            "pocl-cpu-avx2",
            &[("mlp", "x=64x32"), ("layer_norm", "x=64x16")][..],
        ),
    ] {
        for (model, shape) in models {
            let model = path(&dir, &format!("{model}.onnx"));
            let dynamic = strategies(&[&model, "--target", target, "--dim", "batch=1..64"]);
            let fixed = strategies(&[&model, "--target", target, "--input-shape", shape]);
            assert!(!dynamic.is_empty(), "{model}");
            assert_eq!(dynamic, fixed, "{target} {model}");
        }
    }
    let mlp = strategies(&[&path(&dir, "mlp.onnx"), "--dim", "batch=1..64"]);
    assert!(
        mlp.iter()
            .any(|s| s.starts_with("tcc.strategy = #tcc.gemm<")
                && s.contains("m = 64, n = 64, k = 32>")),
        "{mlp:?}"
    );
    // The buffer phase keeps the batch symbolic: dynamic buffers, their
    // extents read with memref.dim, nothing at a stand-in extent.
    let buffer = ok(tcc(&[
        "compile",
        &path(&dir, "mlp.onnx"),
        "--dim",
        "batch=1..64",
        "--compile-to",
        "buffer",
    ]));
    for expected in [
        "%arg0: memref<?x32xf32> {tcc.dim_names = [\"batch\", \"\"], tcc.name = \"x\"}, %arg1: memref<?x10xf32> {tcc.name = \"y\"}",
        "memref.dim",
        "memref<1x?x64xf32>",
    ] {
        assert!(buffer.contains(expected), "{expected} in {buffer}");
    }
}

#[test]
fn the_gpu_phase_launches_kernels_for_the_batch_of_the_call() {
    let dir = models();
    // Outlining: each launch's grid along the batch is computed on the
    // host from the buffers' extents (memref.dim), the strategies' sizes
    // (chosen at the maximum) stay; a view rebuilt in a kernel takes its
    // host size as an index argument. The loop mapping then runs each loop
    // kernel to its dynamic extent.
    let buffer = ok(tcc(&[
        "compile",
        &path(&dir, "mlp.onnx"),
        "--dim",
        "batch=1..64",
        "--compile-to",
        "buffer",
    ]));
    let file = dir.path().join("mlp.buffer.mlir");
    std::fs::write(&file, buffer).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_tcc-opt"))
        .arg(&file)
        .arg("--pass-pipeline=builtin.module(tcc-configure-kernels,tcc-outline-kernels,canonicalize,cse)")
        .output()
        .unwrap();
    let gpu = ok(output);
    let output = Command::new(env!("CARGO_BIN_EXE_tcc-opt"))
        .arg(&file)
        .arg("--pass-pipeline=builtin.module(tcc-configure-kernels,tcc-outline-kernels,tcc-lower-kernel-loops,tcc-map-loops-to-work-items,canonicalize,cse)")
        .output()
        .unwrap();
    let mapped = ok(output);
    for expected in [
        // The first product: the GEMM template's 32-row tiles of M along y.
        "%5 = arith.ceildivui %dim_0, %c32 : index",
        "gpu.launch_func  @tcc_kernels::@batch_matmul_add_min_max_0 blocks in (%c2, %5, %c1) threads in (%c16, %c16, %c1)  args(%alloc : memref<1x?x64xf32>, %arg0 : memref<?x32xf32>, %1 : memref<1x32x64xf32>, %3 : memref<1x64xf32>, %alloc_1 : memref<1x?x64xf32>, %4 : index)",
        // The second product with its bias, a loop nest: ceil(batch x 10
        // / 128) work-groups.
        "%6 = arith.muli %dim_0, %c10 : index",
        "%7 = arith.ceildivui %6, %c128 : index",
        "gpu.launch_func  @tcc_kernels::@batch_matmul_add_1 blocks in (%7, %c1, %c1) threads in (%c128, %c1, %c1)",
        // The softmax: one work-group per row of the output it writes
        // straight into (tcc-elide-output-copies), whose batch the
        // runtime sizes from the call's.
        "%dim_4 = memref.dim %arg1, %c0 : memref<?x10xf32>",
        "gpu.launch_func  @tcc_kernels::@softmax_2 blocks in (%dim_4, %c1, %c1) threads in (%c64, %c1, %c1)  args(%alloc_3 : memref<1x?x10xf32>, %arg1 : memref<?x10xf32>)",
        "gpu.func @batch_matmul_add_min_max_0(%arg0: memref<1x?x64xf32>, %arg1: memref<?x32xf32>, %arg2: memref<1x32x64xf32>, %arg3: memref<1x64xf32>, %arg4: memref<1x?x64xf32>, %arg5: index) kernel",
        "output_shape [1, %arg5, 32] : memref<?x32xf32> into memref<1x?x32xf32>",
    ] {
        assert!(gpu.contains(expected), "{expected} in {gpu}");
    }
    // The second product (a loop nest over 1 x batch x 10): a grid-stride
    // loop to batch x 10 points, the batch's index the quotient, the unit
    // dimension before it at 0.
    let kernel = &mapped[mapped.find("gpu.func @batch_matmul_add_1").unwrap()..];
    let kernel = &kernel[..kernel.find("gpu.return").unwrap()];
    for expected in [
        "%dim = memref.dim %arg0, %c1 : memref<1x?x10xf32>",
        "%1 = arith.muli %dim, %c10 : index",
        "scf.for %arg5 = %global_id_x to %1 step %0 {",
        "%4 = arith.divui %arg5, %c10 : index",
        "memref.store %cst, %arg0[%c0, %4, %3] : memref<1x?x10xf32>",
    ] {
        assert!(kernel.contains(expected), "{expected} in {kernel}");
    }
    assert!(!mapped.contains("scf.parallel"), "{mapped}");
    // The memory plan: the intermediates it plans are views of the arena
    // sized by the call's batch, in slots of the declared maximum;
    // --stats prints the arena beside the one the minimum would take.
    let out = tcc(&[
        "compile",
        &path(&dir, "mlp.onnx"),
        "--dim",
        "batch=1..64",
        "--compile-to",
        "gpu",
        "--stats",
    ]);
    let stats = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(
        stats.contains("arena @main: 32768 bytes (liveness lower bound 32768 bytes, 1.000x), planned at the declared maximum; at the minimum 12288 bytes (liveness lower bound 512 bytes)"),
        "{stats}"
    );
    let planned = ok(out);
    let cnn = tcc(&[
        "compile",
        &path(&dir, "cnn.onnx"),
        "--dim",
        "batch=1..64",
        "--compile-to",
        "gpu",
        "--stats=json",
    ]);
    let stats = String::from_utf8_lossy(&cnn.stderr).to_string();
    assert!(
        stats.contains("{\"name\": \"main\", \"arena_bytes\": 528384, \"live_bytes_bound\": 524304, \"arena_bytes_at_min\": 12288, \"live_bytes_bound_at_min\": 8208}"),
        "{stats}"
    );
    assert!(
        planned.contains("tcc.arena_bytes = 32768 : i64")
            && planned
                .contains("memref.alloc() {alignment = 4096 : i64, tcc.arena} : memref<32768xi8>")
            // Sized by the batch the argument gives (its elements / 32).
            && planned.contains("%4 = arith.divsi %dim, %c32 : index")
            && planned.contains("[%4] : memref<32768xi8> to memref<1x?x64xf32>")
            && planned.contains("[%4] : memref<32768xi8> to memref<1x?x10xf32>")
            && !planned.contains("memref.copy"),
        "{planned}"
    );
}

/// The kernel named `name` in an `--emit=opencl-c` program.
fn kernel_text<'a>(program: &'a str, name: &str) -> &'a str {
    let start = program
        .find(&format!("void {name}("))
        .unwrap_or_else(|| panic!("no kernel {name} in {program}"));
    let end = program[start..]
        .find("\n}\n")
        .map_or(program.len(), |e| start + e + 3);
    &program[start..end]
}

#[test]
fn the_opencl_c_kernels_read_the_batch_from_scalar_arguments() {
    let dir = models();
    let program = ok(tcc(&[
        "compile",
        &path(&dir, "mlp.onnx"),
        "--dim",
        "batch=1..64",
        "--emit=opencl-c",
    ]));
    // The GEMM: its tiles are the declared maximum's, M the call's batch
    // (the output's dynamic extent, a scalar after the buffers and the
    // rebuilt view's size a5), checked wherever a row is read or stored.
    let gemm = kernel_text(&program, "batch_matmul_add_min_max_0");
    for expected in [
        "__global float* restrict a4,\n    const tcc_index a5_arg,\n    const tcc_index a0_d1_arg) {",
        "M=a0_d1 (at most 64) N=64 K=32",
        "fetch_a[r] = (i < a0_d1 && k < 32) ? vload4(0, a1 + i * 32 + k)",
        "if (i < a0_d1 && j < 64) {",
    ] {
        assert!(gemm.contains(expected), "{expected} in {gemm}");
    }
    assert!(!gemm.contains("i < 64"), "{gemm}");
    // Each scalar is read through a macro: the build-time constant the
    // runtime defines when it specializes the program for a call's shape
    // (argument 6 of the kernel), else the argument; undefined after the
    // kernel, whose names the next kernel reuses.
    for expected in [
        "#ifdef TCC_ARG_batch_matmul_add_min_max_0_6\n#define a0_d1 ((tcc_index)(TCC_ARG_batch_matmul_add_min_max_0_6))\n#else\n#define a0_d1 a0_d1_arg\n#endif\n",
        "#ifdef TCC_ARG_batch_matmul_add_min_max_0_5\n#define a5 ((tcc_index)(TCC_ARG_batch_matmul_add_min_max_0_5))\n#else\n#define a5 a5_arg\n#endif\n",
        "}\n#undef a5\n#undef a0_d1\n",
    ] {
        assert!(program.contains(expected), "{expected} in {program}");
    }
    // The loop nest runs its grid-stride loop to the batch's points.
    let loops = kernel_text(&program, "batch_matmul_add_1");
    for expected in [
        "    const tcc_index a0_d1_arg,\n    const tcc_index a1_d1_arg) {",
        "const tcc_index v4 = (a0_d1 * 10);",
        "v5 < v4;",
    ] {
        assert!(loops.contains(expected), "{expected} in {loops}");
    }
    // The softmax takes one work-group per row (the host's grid): no
    // extent, its rows' offsets from the group id.
    let softmax = kernel_text(&program, "softmax_2");
    assert!(
        softmax.contains("__global float* restrict a1) {")
            && softmax.contains("const tcc_index in_row = 0 + row * 10;"),
        "{softmax}"
    );
    assert!(!program.contains("9223372036854775808"), "{program}");
    // The CNN's implicit-GEMM convolution: M is batch x 16 x 16 output
    // pixels; a reduction reads the batch through a reshape's size.
    let cnn = ok(tcc(&[
        "compile",
        &path(&dir, "cnn.onnx"),
        "--dim",
        "batch=1..64",
        "--emit=opencl-c",
    ]));
    let conv = kernel_text(&cnn, "conv_min_max_0");
    for expected in [
        "    const tcc_index a1_d0_arg) {",
        "M=(a1_d0 * 256) (at most 16384) N=8 K=27",
        "if (i < (a1_d0 * 256) && j < 8) {",
    ] {
        assert!(conv.contains(expected), "{expected} in {conv}");
    }
    assert!(
        kernel_text(&cnn, "reduce_add_mul_2").contains("    const tcc_index a3_arg) {"),
        "{cnn}"
    );
    // The same model at one static batch: no scalar argument at all.
    let fixed = ok(tcc(&[
        "compile",
        &path(&dir, "mlp.onnx"),
        "--input-shape",
        "x=64x32",
        "--emit=opencl-c",
    ]));
    assert!(!fixed.contains("const tcc_index a"), "{fixed}");
    assert!(
        kernel_text(&fixed, "batch_matmul_add_min_max_0").contains("M=64 N=64 K=32"),
        "{fixed}"
    );
    // pocl-cpu's register-blocked GEMM reads the call's M where the
    // static form writes M: the row tiles of its linear group index, the
    // rows' clamp and the store guard.
    let cpu = ok(tcc(&[
        "compile",
        &path(&dir, "mlp.onnx"),
        "--dim",
        "batch=1..64",
        "--target=pocl-cpu",
        "--emit=opencl-c",
    ]));
    let gemm = kernel_text(&cpu, "batch_matmul_add_min_max_0");
    for expected in [
        "register-blocked: ",
        "M=a0_d1 (at most 64) N=64 K=32",
        "const tcc_index row0 = (group % ((a0_d1 + ",
        "- 1));",
        "if (i >= a0_d1) break;",
    ] {
        assert!(gemm.contains(expected), "{expected} in {gemm}");
    }
}

#[test]
fn what_cannot_compile_a_symbolic_dimension_yet_says_so() {
    let dir = models();
    // PTX compiles a symbolic batch (the CUDA driver sizes each call), in
    // half precision too: a product whose rows follow the batch runs a
    // tiled body whose M bounds are run-time values (under fp16 its
    // mma.sync tensor-core form, never wgmma), the attention's batch of
    // products keeps its own.
    for precision in ["fp32", "fp16"] {
        let out = dir.path().join(format!("nvidia-{precision}.so"));
        ok(tcc(&[
            "compile",
            &path(&dir, "encoder.onnx"),
            "--dim",
            "batch=1..64",
            "--target=nvidia",
            "--ptx=on",
            &format!("--precision={precision}"),
            "-o",
            &out.display().to_string(),
        ]));
        let ptx = ok(tcc(&[
            "compile",
            &path(&dir, "encoder.onnx"),
            "--dim",
            "batch=1..64",
            "--target=nvidia",
            &format!("--precision={precision}"),
            "--emit=ptx",
        ]));
        assert_eq!(ptx.contains("mma.sync"), precision == "fp16", "{precision}");
        assert!(!ptx.contains("wgmma"), "{precision}");
        let tile = ok(tcc(&[
            "compile",
            &path(&dir, "encoder.onnx"),
            "--dim",
            "batch=1..64",
            "--target=nvidia",
            &format!("--precision={precision}"),
            "--compile-to=tile",
        ]));
        // The projections' rows are batch x 16 tokens: bounded at 64 x 16
        // (not 64), in the module's precision (K = 32 is too short to
        // split).
        let strategy = match precision {
            "fp32" => "split_k = 1, batch = 1, m = 1024, n = 32, k = 32>",
            _ => "split_k = 1, batch = 1, m = 1024, n = 32, k = 32, precision = \"fp16\">",
        };
        assert!(tile.contains(strategy), "{precision}: {tile}");
    }
    // Vulkan's portable kernels: the softmax's decomposition into static
    // TOSA refuses the batch, and past it the SPIR-V writer does, each
    // named.
    for (model, error_text) in [
        (
            "mlp.onnx",
            "'tcc.softmax' (node 'softmax') computes on the dynamically shaped type 'tensor<?x10xf32>' (dynamic dimension 'batch' (1..64)): dynamic dimension not supported yet by tcc-decompose-composites",
        ),
        (
            "two_inputs.onnx",
            "'gpu.launch_func' (node 'relu') computes on the dynamically shaped type 'memref<?x16xf32>' (dynamic dimension 'batch' (1..64)): dynamic dimension not supported yet by the SPIR-V writer (codegen)",
        ),
    ] {
        let out = dir.path().join("vulkan.so");
        let error = fails(tcc(&[
            "compile",
            &path(&dir, model),
            "--dim",
            "batch=1..64",
            "--target=vulkan",
            "-o",
            &out.display().to_string(),
        ]));
        assert!(error.contains(error_text), "{model}: {error}");
        assert!(!out.exists());
    }
    // An op outside the first slice is refused at the input, named: here
    // a reduction over the batch itself.
    let error = fails(tcc(&[
        "compile",
        &path(&dir, "sum_over_batch.onnx"),
        "--dim",
        "batch=1..64",
        "-o",
        "/dev/null",
    ]));
    assert!(
        error.contains("'tosa.reduce_sum' (node 'sum_batch') computes on the dynamically shaped type 'tensor<?x4xf32>' (dynamic dimension 'batch' (1..64)): 'tosa.reduce_sum' reduces over the dynamic dimension"),
        "{error}"
    );
    // A value computed from the dimension (Shape) cannot stay symbolic in
    // the importer.
    let error = fails(tcc(&[
        "import",
        &path(&dir, "shape_of.onnx"),
        "--dim",
        "batch=1..8",
    ]));
    assert!(
        error.contains("a value computed from the dimension's extent: dynamic dimension 'batch' not supported yet by the ONNX importer"),
        "{error}"
    );
}

#[test]
fn bad_dimension_declarations_are_clear_errors() {
    let dir = models();
    let mlp = path(&dir, "mlp.onnx");
    let error = fails(tcc(&["compile", &mlp, "-o", "/dev/null"]));
    assert!(
        error.contains("graph input 'x' has the dynamic dimension 'batch' (shape batchx32): give its range with --dim batch=MIN..MAX"),
        "{error}"
    );
    let two = path(&dir, "two_inputs.onnx");
    let error = fails(tcc(&[
        "import",
        &two,
        "--dim",
        "batch=1..8",
        "--input-shape",
        "a=4x16",
    ]));
    assert!(
        error.contains("--input-shape gives 'a' a static shape, which fixes its dimension 'batch', but other inputs keep 'batch' symbolic"),
        "{error}"
    );
    let both = ok(tcc(&[
        "import",
        &two,
        "--dim",
        "batch=1..8",
        "--input-shape",
        "a=4x16",
        "--input-shape",
        "b=4x16",
    ]));
    assert!(
        both.contains("tensor<4x16xf32>") && !both.contains('?'),
        "{both}"
    );
    let error = fails(tcc(&["import", &mlp, "--dim", "seq=1..8"]));
    assert!(
        error.contains("--dim names 'seq', which no graph input of the model declares (its inputs' dynamic dimensions are: batch)"),
        "{error}"
    );
    let error = fails(tcc(&[
        "import",
        &mlp,
        "--dim",
        "batch=1..8",
        "--dim",
        "batch=1..4",
    ]));
    assert!(error.contains("--dim declares 'batch' twice"), "{error}");
    for (bad, expected) in [
        ("batch=0..8", "1 <= MIN <= MAX"),
        ("batch=9..8", "1 <= MIN <= MAX"),
        ("batch", "expected NAME=MIN..MAX"),
        ("batch=1..x", "expected NAME=MIN..MAX"),
    ] {
        let o = tcc(&["import", &mlp, "--dim", bad]);
        assert_eq!(o.status.code(), Some(2), "{bad}: {}", text(&o));
        assert!(text(&o).contains(expected), "{bad}: {}", text(&o));
    }
}

/// The phases that compile a symbolic batch, held to the model's numbers:
/// the MLP, the CNN and the two tied inputs through tcc's dispatch phase with `--dim
/// batch=1..64`, lowered by upstream MLIR's passes alone to the CPU (run by
/// tcc-opt, which knows the tcc dialect's `tcc.conv`;
/// `test/onnx/dynamic/run_lowered.py`), run at batch 1, 5 and 64 and
/// compared with onnxruntime (rtol 1e-4, atol 1e-5), each output of the
/// batch's shape.
#[test]
fn the_dispatch_phase_computes_the_model_at_every_batch() {
    let dir = models();
    for (model, inner, width) in [
        ("mlp.onnx", "32", 10),
        ("cnn.onnx", "3x16x16", 10),
        ("two_inputs.onnx", "16,16", 16),
    ] {
        let output = Command::new("python3")
            .arg(repo().join("test/onnx/dynamic/run_lowered.py"))
            .arg(env!("CARGO_BIN_EXE_tcc"))
            .arg(path(&dir, model))
            .arg("dispatch")
            .arg(inner)
            .args(["1", "5", "64"])
            .output()
            .expect("python3");
        let report = text(&output);
        assert!(output.status.success(), "{model}: {report}");
        for batch in [1, 5, 64] {
            assert!(
                report.contains(&format!(
                    "batch {batch}: shape [{batch}, {width}] (onnxruntime [{batch}, {width}])"
                )),
                "{model}: {report}"
            );
        }
        assert_eq!(report.matches(": ok").count(), 3, "{model}: {report}");
    }
}

/// Compiles `model` for `--target=opencl-generic` (the OpenCL C every
/// device builds) with `args`, to `out`.
fn compile_to(model: &str, args: &[&str], out: &Path) {
    compile_for("opencl-generic", model, args, out);
}

/// `tcc compile MODEL --target=TARGET -o OUT ARGS...`, which must succeed.
fn compile_for(target: &str, model: &str, args: &[&str], out: &Path) {
    let target = format!("--target={target}");
    let mut all = vec!["compile", model, target.as_str(), "-o"];
    let out_text = out.display().to_string();
    all.push(&out_text);
    all.extend_from_slice(args);
    ok(tcc(&all));
}

/// models.py's `name`.onnx compiled for pocl-cpu with `--dim
/// batch=1..16` and loaded, with an uncached runtime to run it.
fn pocl_dynamic_model(
    dir: &tempfile::TempDir,
    name: &str,
) -> (tcc_runtime::Runtime, tcc_runtime::Model) {
    let onnx = path(dir, &format!("{name}.onnx"));
    let dynamic = dir.path().join(format!("{name}.so"));
    compile_for("pocl-cpu", &onnx, &["--dim", "batch=1..16"], &dynamic);
    (
        crate::support::uncached_runtime(),
        tcc_runtime::Model::load(&dynamic).unwrap(),
    )
}

/// Deterministic inputs of `shapes`, different for each input and batch.
fn batch_inputs(shapes: &[Vec<usize>]) -> Vec<tcc_runtime::HostTensor> {
    shapes
        .iter()
        .enumerate()
        .map(|(k, shape)| {
            let n: usize = shape.iter().product();
            let values: Vec<f32> = (0..n)
                .map(|i| ((i * 7919 + k * 104_729) % 2003) as f32 / 1001.5 - 1.0)
                .collect();
            tcc_runtime::HostTensor::from_f32(shape.clone(), &values).unwrap()
        })
        .collect()
}

/// The first element where `got` and `want` differ by more than f32
/// rounding across a different kernel configuration (the dynamic
/// artifact's tiles are the declared maximum's).
fn mismatch(got: &[f32], want: &[f32]) -> Option<String> {
    if got.len() != want.len() {
        return Some(format!("{} elements, want {}", got.len(), want.len()));
    }
    got.iter().zip(want).enumerate().find_map(|(i, (&g, &w))| {
        let close = (f64::from(g) - f64::from(w)).abs() <= 1e-5 + 1e-5 * f64::from(w).abs();
        (!close).then(|| format!("[{i}] = {g}, want {w}"))
    })
}

/// One artifact compiled with `--dim batch=1..64` runs at batch 1, 3 and
/// 8 on the default OpenCL device (PoCL's CPU device here), compiled for
/// `--target=opencl-generic` (tiled GEMMs) and `--target=pocl-cpu`
/// (register-blocked GEMMs): each output has the call's batch and equals,
/// element by element, what the static artifact compiled for exactly
/// that batch (`--input-shape`) computes on the same inputs. The MLP (two
/// GEMMs with a dynamic M, a softmax), the CNN (an implicit-GEMM
/// convolution on an NCHW input, pooling, a global average, a Gemm), a
/// layer norm and two inputs tied by the dimension. The first call at a
/// batch runs the generic kernels and records their scalars; the second
/// runs them too and starts building the program specialized for that
/// shape (one source build, counted by the program cache); once built,
/// the third launches it, without building anything, and so do the same
/// call asynchronously (`submit`) and on device tensors (`run_device`),
/// with the same result.
#[test]
fn one_artifact_runs_every_batch_in_range() {
    let _serial = crate::support::device_and_spawn_lock();
    let dir = models();
    let runtime = crate::support::uncached_runtime();
    // A model, its inputs' names and their shape after the batch, and
    // its output's shape after the batch.
    type Case = (
        &'static str,
        &'static [&'static str],
        Vec<usize>,
        Vec<usize>,
    );
    let cases: Vec<Case> = vec![
        ("mlp", &["x"], vec![32], vec![10]),
        ("cnn", &["x"], vec![3, 16, 16], vec![10]),
        ("layer_norm", &["x"], vec![16], vec![16]),
        ("two_inputs", &["a", "b"], vec![16], vec![16]),
    ];
    // The layer norm's kernels take no scalar (one work-group per row, the
    // grid the host's): nothing to specialize, every call is generic.
    let specializes = |name: &str| name != "layer_norm";
    let mut runs = 0;
    for target in ["opencl-generic", "pocl-cpu"] {
        for (name, inputs, inner, output_inner) in &cases {
            let what = format!("{name} (--target={target})");
            let onnx = path(&dir, &format!("{name}.onnx"));
            let dynamic = dir.path().join(format!("{name}-{target}-dynamic.so"));
            compile_for(target, &onnx, &["--dim", "batch=1..64"], &dynamic);
            let model = tcc_runtime::Model::load(&dynamic).unwrap();
            let function = model.functions()[0].clone();
            assert_eq!(function.dims.len(), 1, "{what}: {function:?}");
            assert_eq!(
                (
                    function.dims[0].name.as_str(),
                    function.dims[0].min,
                    function.dims[0].max
                ),
                ("batch", 1, 64)
            );
            let mut session = runtime.session(&model).unwrap();
            assert_eq!(session.specialization(), tcc_runtime::Specialization::Exact);
            for (bucket, batch) in [1usize, 3, 8].into_iter().enumerate() {
                let shape: Vec<usize> = std::iter::once(batch)
                    .chain(inner.iter().copied())
                    .collect();
                let shapes = vec![shape.clone(); inputs.len()];
                let values = batch_inputs(&shapes);
                // The first call at this batch: generic kernels, their
                // scalars recorded; nothing built.
                let builds = runtime.cache_stats().source_builds;
                let (bucket, built) = (bucket as u64, u64::from(specializes(name)));
                let generic = session.run(&function.name, &values).unwrap();
                let stats = session.specialization_stats();
                assert_eq!(
                    (stats.programs, stats.generic_calls, stats.failures),
                    (
                        bucket * built,
                        if built == 1 {
                            2 * bucket + 1
                        } else {
                            5 * bucket + 1
                        },
                        0
                    ),
                    "{what} at batch {batch}: {stats:?}"
                );
                assert_eq!(runtime.cache_stats().source_builds, builds);
                // The second: generic kernels too, while the shape's
                // specialization is built from source, once.
                let second = session.run(&function.name, &values).unwrap();
                assert_eq!(second[0].to_f32().unwrap(), generic[0].to_f32().unwrap());
                session.wait_for_specializations();
                let stats = session.specialization_stats();
                assert_eq!(
                    (stats.programs, stats.failures),
                    ((bucket + 1) * built, 0),
                    "{what} at batch {batch}: {stats:?}"
                );
                assert_eq!(
                    runtime.cache_stats().source_builds,
                    builds + built,
                    "{what} at batch {batch}"
                );
                // The third: the specialized kernels, nothing built.
                let got = session.run(&function.name, &values).unwrap();
                let stats = session.specialization_stats();
                assert_eq!(
                    stats.specialized_calls,
                    (3 * bucket + 1) * built,
                    "{what} at batch {batch}: {stats:?}"
                );
                runs += 1;
                // The same call asynchronously, and on device tensors.
                let submitted = session
                    .submit(&function.name, values.clone())
                    .unwrap()
                    .wait()
                    .unwrap();
                let uploaded: Vec<_> = values.iter().map(|v| session.upload(v).unwrap()).collect();
                let on_device = session
                    .run_device(&function.name, &uploaded.iter().collect::<Vec<_>>())
                    .unwrap();
                let downloaded = session.download(&on_device[0]).unwrap();
                let stats = session.specialization_stats();
                assert_eq!(
                    stats.specialized_calls,
                    (3 * bucket + 3) * built,
                    "{what} at batch {batch}: {stats:?}"
                );
                assert_eq!(
                    runtime.cache_stats().source_builds,
                    builds + built,
                    "{what} at batch {batch}"
                );
                for other in [&submitted[0], &downloaded] {
                    assert_eq!(other.shape, got[0].shape, "{what} at batch {batch}");
                    assert_eq!(other.to_f32().unwrap(), got[0].to_f32().unwrap());
                }

                let fixed = dir.path().join(format!("{name}-{target}-{batch}.so"));
                let dims = shape
                    .iter()
                    .map(usize::to_string)
                    .collect::<Vec<_>>()
                    .join("x");
                let specs: Vec<String> = inputs.iter().map(|i| format!("{i}={dims}")).collect();
                let mut args = Vec::new();
                for spec in &specs {
                    args.extend(["--input-shape", spec.as_str()]);
                }
                compile_for(target, &onnx, &args, &fixed);
                let static_model = tcc_runtime::Model::load(&fixed).unwrap();
                assert!(static_model.functions()[0].dims.is_empty());
                let want = runtime
                    .session(&static_model)
                    .unwrap()
                    .run(&static_model.functions()[0].name, &values)
                    .unwrap();

                let expected: Vec<usize> = std::iter::once(batch)
                    .chain(output_inner.iter().copied())
                    .collect();
                assert_eq!(want[0].shape, expected, "{what} at batch {batch}");
                let w = want[0].to_f32().unwrap();
                for (form, out) in [("generic", &generic), ("specialized", &got)] {
                    assert_eq!(out.len(), 1, "{what} at batch {batch}");
                    assert_eq!(out[0].shape, expected, "{what} at batch {batch}");
                    if let Some(why) = mismatch(&out[0].to_f32().unwrap(), &w) {
                        panic!("{what} at batch {batch}, {form} kernels: {why}");
                    }
                }
            }
        }
    }
    assert_eq!(runs, 24);
}

/// A specialized program is built once per machine: a second runtime on
/// the same cache directory (another process, in effect) loads each
/// shape's program from the disk cache instead of building it; with
/// specialization off (`Session::set_specialization`, `TCC_SPECIALIZE=off`)
/// every call launches the generic kernels and nothing is built.
#[test]
fn a_shapes_specialization_is_built_once_per_machine() {
    let _serial = crate::support::device_and_spawn_lock();
    let dir = models();
    let so = dir.path().join("mlp-pocl-cpu.so");
    compile_for(
        "pocl-cpu",
        &path(&dir, "mlp.onnx"),
        &["--dim", "batch=1..64"],
        &so,
    );
    let model = tcc_runtime::Model::load(&so).unwrap();
    let cache = tempfile::tempdir().unwrap();
    let runtime = || {
        tcc_runtime::Runtime::with_options(
            tcc_runtime::DeviceSelector::from_flag_or_env(None),
            tcc_runtime::RuntimeOptions {
                cache_dir: Some(cache.path().to_path_buf()),
                ..tcc_runtime::RuntimeOptions::default()
            },
        )
        .expect("an OpenCL device")
    };
    let inputs = |batch: usize| batch_inputs(&[vec![batch, 32]]);
    let mut outputs = Vec::new();
    for (round, (source_builds, disk_hits)) in [(3, 0), (0, 3)].into_iter().enumerate() {
        let rt = runtime();
        let mut session = rt.session(&model).unwrap();
        let mut got = Vec::new();
        for batch in [2, 2, 5, 5, 2, 5] {
            got.push(
                session.run("main", &inputs(batch)).unwrap()[0]
                    .to_f32()
                    .unwrap(),
            );
            session.wait_for_specializations();
        }
        let stats = session.specialization_stats();
        assert_eq!(
            (stats.programs, stats.generic_calls, stats.specialized_calls),
            (2, 4, 2),
            "round {round}: {stats:?}"
        );
        rt.wait_for_cache_writes();
        // The generic program, then one per batch.
        let cached = rt.cache_stats();
        assert_eq!(
            (cached.source_builds, cached.disk_hits),
            (source_builds, disk_hits),
            "round {round}: {cached:?}"
        );
        assert_eq!(got[0], got[1]);
        assert_eq!(got[0], got[4]);
        assert_eq!(got[2], got[3]);
        assert_eq!(got[2], got[5]);
        outputs.push(got);
    }
    assert_eq!(outputs[0], outputs[1]);

    // Off: generic kernels only, nothing built past the generic program.
    let rt = crate::support::uncached_runtime();
    let mut session = rt.session(&model).unwrap();
    session.set_specialization(tcc_runtime::Specialization::Off);
    for batch in [2, 2, 5] {
        session.run("main", &inputs(batch)).unwrap();
    }
    assert_eq!(
        session.specialization_stats(),
        tcc_runtime::SpecializationStats::default()
    );
    assert_eq!(rt.cache_stats().source_builds, 1);
}

/// A call whose batch is outside the declared range, or whose inputs
/// disagree on the dimension, is refused before anything launches, with
/// the dimension, the value and the range named; `tcc-run` takes any
/// batch in range and prints an output of that batch; `tcc inspect`
/// shows the dimension and its range; a static artifact still declares
/// ABI version 3, a dynamic one 4.
#[test]
fn calls_outside_the_declared_range_are_refused_with_the_dimension_named() {
    let _serial = crate::support::device_and_spawn_lock();
    let dir = models();
    let two = dir.path().join("two.so");
    compile_to(
        &path(&dir, "two_inputs.onnx"),
        &["--dim", "batch=2..16"],
        &two,
    );
    let model = tcc_runtime::Model::load(&two).unwrap();
    let runtime = tcc_runtime::Runtime::with_options(
        tcc_runtime::DeviceSelector::from_flag_or_env(None),
        tcc_runtime::RuntimeOptions {
            profiling: true,
            disk_cache: false,
            ..tcc_runtime::RuntimeOptions::default()
        },
    )
    .expect("an OpenCL device");
    let mut session = runtime.session(&model).unwrap();
    let f = model.functions()[0].name.clone();
    for (shapes, expected) in [
        (
            vec![vec![17, 16], vec![17, 16]],
            "input 0 ('a') of @main: dimension 0 is 'batch' = 17, outside its declared range 2..16 (compiled with --dim batch=2..16)",
        ),
        (
            vec![vec![1, 16], vec![1, 16]],
            "dimension 0 is 'batch' = 1, outside its declared range 2..16",
        ),
        (
            vec![vec![3, 16], vec![4, 16]],
            "the inputs of @main disagree on dimension 'batch' (2..16): input 0 ('a') gives 3 (dimension 0), input 1 ('b') gives 4 (dimension 0)",
        ),
        (
            vec![vec![3, 16], vec![3, 15]],
            "input 1 ('b') of @main expects shape batchx16, got 3x15",
        ),
    ] {
        let error = session
            .run(&f, &batch_inputs(&shapes))
            .unwrap_err()
            .to_string();
        assert!(error.contains(expected), "{shapes:?}: {error}");
    }
    // Nothing was launched by the refused calls; a good one launches.
    assert!(session.kernel_profile().unwrap().is_empty());
    let out = session
        .run(&f, &batch_inputs(&[vec![5, 16], vec![5, 16]]))
        .unwrap();
    assert_eq!(out[0].shape, [5, 16]);
    assert!(!session.kernel_profile().unwrap().is_empty());

    // tcc-run (built beside tcc by `make build`): any batch in range; a
    // bad one is exit 1 and named.
    let run = |args: &[&str]| {
        Command::new(Path::new(env!("CARGO_BIN_EXE_tcc")).with_file_name("tcc-run"))
            .arg(&two)
            .args(args)
            .output()
            .expect("tcc-run")
    };
    for batch in [2, 7, 16] {
        let o = run(&[
            &format!("--input={batch}x16xf32=0.5"),
            &format!("--input={batch}x16xf32=-0.25"),
        ]);
        let t = text(&o);
        assert!(o.status.success(), "{t}");
        assert!(
            t.contains(&format!("result[0]: {batch}x16xf32=[[0.25 0.25")),
            "{t}"
        );
    }
    let o = run(&["--input=20x16xf32=0.5", "--input=20x16xf32=0.5"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains("'batch' = 20, outside its declared range 2..16"),
        "{}",
        text(&o)
    );
    assert!(!text(&o).contains("panicked"));

    let inspect = ok(tcc(&["inspect", &two.display().to_string()]));
    assert!(inspect.contains("ABI version: 4"), "{inspect}");
    assert!(
        inspect.contains("@main(a: batchx16xf32, b: batchx16xf32) -> (y: batchx16xf32)"),
        "{inspect}"
    );
    assert!(inspect.contains("dims batch=2..16"), "{inspect}");
    let fixed = dir.path().join("fixed.so");
    compile_to(
        &path(&dir, "two_inputs.onnx"),
        &["--input-shape", "a=4x16", "--input-shape", "b=4x16"],
        &fixed,
    );
    let inspect = ok(tcc(&["inspect", &fixed.display().to_string()]));
    assert!(inspect.contains("ABI version: 3"), "{inspect}");
}

/// The C API (`tcc_runtime::capi`, what `tcc_runtime.h` declares) on one
/// dynamic artifact: `tcc_model_input` gives `-1` for the symbolic
/// extent; `tcc_session_run` takes any batch in range with outputs of the
/// matching shape, and refuses an output of another batch or an input
/// out of range with the dimension named (`tcc_last_error`); so do calls
/// on device tensors (`tcc_session_run_device`), their outputs of the
/// call's batch.
#[test]
fn the_c_api_runs_a_symbolic_batch() {
    use std::ffi::{CStr, CString, c_void};
    use tcc_runtime::capi::*;
    let _serial = crate::support::device_and_spawn_lock();
    let dir = models();
    let so = dir.path().join("mlp.so");
    compile_to(&path(&dir, "mlp.onnx"), &["--dim", "batch=1..64"], &so);
    let last_error = || {
        // SAFETY: tcc_last_error returns a NUL-terminated string.
        unsafe { CStr::from_ptr(tcc_last_error()) }
            .to_string_lossy()
            .into_owned()
    };
    let file = CString::new(so.display().to_string()).unwrap();
    let mut model: *mut c_void = std::ptr::null_mut();
    assert_eq!(
        tcc_model_load_file(file.as_ptr(), &mut model),
        TCC_OK,
        "{}",
        last_error()
    );
    let mut info = TccTensorInfo {
        name: std::ptr::null(),
        dtype: 0,
        rank: 0,
        shape: std::ptr::null(),
        bytes: 0,
    };
    assert_eq!(tcc_model_input(model, 0, 0, &mut info), TCC_OK);
    // SAFETY: `rank` entries, valid while the model is.
    let shape = unsafe { std::slice::from_raw_parts(info.shape, info.rank as usize) };
    assert_eq!(shape, [-1, 32]);
    assert_eq!(info.bytes, 64 * 32 * 4);
    let mut runtime: *mut c_void = std::ptr::null_mut();
    assert_eq!(
        tcc_runtime_create(std::ptr::null(), &mut runtime),
        TCC_OK,
        "{}",
        last_error()
    );
    let mut session: *mut c_void = std::ptr::null_mut();
    assert_eq!(
        tcc_session_create(runtime, model, &mut session),
        TCC_OK,
        "{}",
        last_error()
    );
    // A C view of f32 values of `shape` (both outlive it).
    fn f32_tensor(values: &mut [f32], shape: &[i64]) -> TccTensor {
        TccTensor {
            data: values.as_mut_ptr() as *mut c_void,
            bytes: (values.len() * 4) as u64,
            dtype: tcc_abi::DTYPE_F32,
            rank: shape.len() as u32,
            shape: shape.as_ptr(),
        }
    }
    let inputs_of =
        |batch: usize| -> Vec<f32> { (0..batch * 32).map(|i| (i % 7) as f32 * 0.1).collect() };
    let run = |batch: usize, out_batch: usize| -> (TccStatus, Vec<f32>) {
        let mut x = inputs_of(batch);
        let mut y = vec![0f32; out_batch * 10];
        let x_shape = [batch as i64, 32];
        let y_shape = [out_batch as i64, 10];
        let input = f32_tensor(&mut x, &x_shape);
        let output = f32_tensor(&mut y, &y_shape);
        let status = tcc_session_run(session, std::ptr::null(), &input, 1, &output, 1);
        (status, y)
    };
    for batch in [1, 3, 8] {
        let (status, y) = run(batch, batch);
        assert_eq!(status, TCC_OK, "batch {batch}: {}", last_error());
        // Each row is a softmax: it sums to 1.
        for row in y.chunks(10) {
            let sum: f32 = row.iter().sum();
            assert!((sum - 1.0).abs() < 1e-5, "batch {batch}: {row:?}");
        }
    }
    let (status, _) = run(3, 4);
    assert_eq!(status, TCC_ERROR_INVALID_ARGUMENT);
    assert!(
        last_error()
            .contains("output 0 of @main expects batchx10xf32 (here 3x10xf32), got 4x10xf32"),
        "{}",
        last_error()
    );
    let (status, _) = run(65, 65);
    assert_eq!(status, TCC_ERROR_INVALID_ARGUMENT);
    assert!(
        last_error().contains("dimension 0 is 'batch' = 65, outside its declared range 1..64"),
        "{}",
        last_error()
    );
    // Device tensors (tcc_session_run_device): each call's output has its
    // batch and the host call's values; a batch out of range is refused.
    let upload = |batch: usize| {
        let mut x = inputs_of(batch);
        let x_shape = [batch as i64, 32];
        let input = f32_tensor(&mut x, &x_shape);
        let mut dx = std::ptr::null_mut();
        assert_eq!(
            tcc_device_tensor_upload(session, &input, &mut dx),
            TCC_OK,
            "{}",
            last_error()
        );
        dx
    };
    for batch in [2, 5] {
        let dx = upload(batch);
        let mut dy = std::ptr::null_mut();
        assert_eq!(
            tcc_session_run_device(session, std::ptr::null(), &dx, 1, &mut dy, 1),
            TCC_OK,
            "batch {batch}: {}",
            last_error()
        );
        assert_eq!(tcc_device_tensor_info(dy, &mut info), TCC_OK);
        // SAFETY: `rank` entries, valid while the tensor is.
        let shape = unsafe { std::slice::from_raw_parts(info.shape, info.rank as usize) };
        assert_eq!(shape, [batch as i64, 10]);
        assert_eq!(info.bytes, (batch * 10 * 4) as u64);
        let mut y = vec![0f32; batch * 10];
        assert_eq!(
            tcc_device_tensor_download(dy, y.as_mut_ptr() as *mut c_void, info.bytes),
            TCC_OK,
            "{}",
            last_error()
        );
        let (status, want) = run(batch, batch);
        assert_eq!(status, TCC_OK);
        for (a, b) in y.iter().zip(&want) {
            assert!((a - b).abs() <= 1e-6, "batch {batch}: {y:?} vs {want:?}");
        }
        assert_eq!(tcc_device_tensor_free(dx), TCC_OK);
        assert_eq!(tcc_device_tensor_free(dy), TCC_OK);
    }
    let dx = upload(65);
    let mut dy = std::ptr::null_mut();
    assert_eq!(
        tcc_session_run_device(session, std::ptr::null(), &dx, 1, &mut dy, 1),
        TCC_ERROR_INVALID_ARGUMENT
    );
    assert!(dy.is_null());
    assert!(
        last_error().contains("'batch' = 65, outside its declared range 1..64"),
        "{}",
        last_error()
    );
    assert_eq!(tcc_device_tensor_free(dx), TCC_OK);
    assert_eq!(tcc_session_free(session), TCC_OK);
    assert_eq!(tcc_runtime_free(runtime), TCC_OK);
    assert_eq!(tcc_model_free(model), TCC_OK);
}

/// A batch whose declared maximum makes a buffer of 2^32 elements: the
/// kernels index in 64 bits (`typedef long tcc_index`) and the host
/// passes the batch as a `TCC_ARG_I64` scalar; one artifact runs at batch
/// 2 and 3.
#[test]
fn a_wide_range_passes_the_batch_as_a_64_bit_scalar() {
    let _serial = crate::support::device_and_spawn_lock();
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("abs.mlir");
    std::fs::write(
        &source,
        "func.func @abs(%x: tensor<?x1024x1024xf32>) -> tensor<?x1024x1024xf32> {\n  \
         %0 = tosa.abs %x : (tensor<?x1024x1024xf32>) -> tensor<?x1024x1024xf32>\n  \
         return %0 : tensor<?x1024x1024xf32>\n}\n",
    )
    .unwrap();
    let source = source.display().to_string();
    let program = ok(tcc(&[
        "compile",
        &source,
        "--dim",
        "batch=1..4096",
        "--emit=opencl-c",
    ]));
    assert!(program.contains("typedef long tcc_index;"), "{program}");
    let so = dir.path().join("abs.so");
    compile_to(&source, &["--dim", "batch=1..4096"], &so);
    let model = tcc_runtime::Model::load(&so).unwrap();
    let mut session = crate::support::uncached_runtime().session(&model).unwrap();
    for batch in [2usize, 3] {
        let n = batch << 20;
        let values: Vec<f32> = (0..n).map(|i| (i % 13) as f32 - 6.0).collect();
        let x = tcc_runtime::HostTensor::from_f32(vec![batch, 1024, 1024], &values).unwrap();
        let y = session.run("abs", &[x]).unwrap();
        assert_eq!(y[0].shape, [batch, 1024, 1024]);
        let got = y[0].to_f32().unwrap();
        let want: Vec<f32> = values.iter().map(|v| v.abs()).collect();
        assert!(got == want, "batch {batch}: {:?}", mismatch(&got, &want));
    }
}

/// A transformer encoder layer on a symbolic batch (models.py's
/// `encoder.onnx`: heads split by a Reshape of a shape computed from
/// `Shape(x)`, batched QKᵀ and P·V products over `2 x batch` heads, a
/// padding mask, softmax, layer norms, a GELU feed-forward) compiles as
/// one artifact, and with `--specialize batch=1,3` carries static variants
/// for those batches: `tcc inspect` and the runtime name them, equal
/// weights are stored once, and a call at a bucket runs the variant's
/// kernels (the static artifact's: one attention kernel, biases fused
/// into the products) while any other batch runs the generic ones; every
/// output equals the static artifact's for that batch.
#[test]
fn static_variants_run_at_their_buckets_and_the_generic_function_elsewhere() {
    let _serial = crate::support::device_and_spawn_lock();
    let dir = models();
    let onnx = path(&dir, "encoder.onnx");
    let generic = dir.path().join("encoder-generic.so");
    let specialized = dir.path().join("encoder-specialized.so");
    compile_to(&onnx, &["--dim", "batch=1..16"], &generic);
    compile_to(
        &onnx,
        &["--dim", "batch=1..16", "--specialize", "batch=1,3"],
        &specialized,
    );
    let inspect = ok(tcc(&["inspect", &specialized.display().to_string()]));
    assert!(
        inspect.contains("dims batch=1..16  specialized batch=1 batch=3"),
        "{inspect}"
    );
    let generic_model = tcc_runtime::Model::load(&generic).unwrap();
    let model = tcc_runtime::Model::load(&specialized).unwrap();
    // The variants are not functions of their own: the generic entry
    // calls them.
    assert_eq!(model.functions().len(), 1);
    let function = model.functions()[0].clone();
    assert_eq!(
        function.specializations,
        vec![
            vec![("batch".to_string(), 1)],
            vec![("batch".to_string(), 3)]
        ]
    );
    // The weights the variants import again are stored once: what the
    // specialized artifact adds are the variants' own folded constants
    // (the merged Q/K/V weights), not three copies of every weight.
    let bytes = |m: &tcc_runtime::Model| -> u64 { m.constant_bytes().iter().sum() };
    assert!(
        bytes(&model) < 2 * bytes(&generic_model),
        "{} bytes of constants against the generic artifact's {}",
        bytes(&model),
        bytes(&generic_model)
    );
    let runtime = tcc_runtime::Runtime::with_options(
        tcc_runtime::DeviceSelector::from_flag_or_env(None),
        tcc_runtime::RuntimeOptions {
            disk_cache: false,
            profiling: true,
            ..tcc_runtime::RuntimeOptions::default()
        },
    )
    .unwrap();
    let mut session = runtime.session(&model).unwrap();
    for batch in [1usize, 3, 5] {
        let values = batch_inputs(&[vec![batch, 16, 32], vec![batch, 16]]);
        let fixed = dir.path().join(format!("encoder-{batch}.so"));
        compile_to(
            &onnx,
            &[
                "--input-shape",
                &format!("x={batch}x16x32"),
                "--input-shape",
                &format!("mask={batch}x16"),
            ],
            &fixed,
        );
        let fixed_model = tcc_runtime::Model::load(&fixed).unwrap();
        let want = runtime
            .session(&fixed_model)
            .unwrap()
            .run(&fixed_model.functions()[0].name, &values)
            .unwrap();
        session.reset_profile().unwrap();
        let got = session.run(&function.name, &values).unwrap();
        assert_eq!(got[0].shape, vec![batch, 16, 32]);
        // The runtime names the variant the host code runs.
        let variant = function
            .specialization_of_call(&[&[batch, 16, 32], &[batch, 16]])
            .map(tcc_runtime::describe_bucket);
        assert_eq!(
            variant.as_deref(),
            (batch != 5).then(|| format!("batch={batch}")).as_deref()
        );
        if let Some(m) = mismatch(&got[0].to_f32().unwrap(), &want[0].to_f32().unwrap()) {
            panic!("batch {batch}: {m}");
        }
        let launched: Vec<String> = session
            .kernel_profile()
            .unwrap()
            .into_iter()
            .filter(|k| k.calls > 0)
            .map(|k| k.name)
            .collect();
        let attention = launched.iter().any(|n| n.starts_with("attention"));
        let softmax = launched.iter().any(|n| n.starts_with("softmax"));
        if batch == 5 {
            // The generic function: the batched products and a softmax.
            assert!(softmax && !attention, "batch 5 launched {launched:?}");
        } else {
            assert!(attention && !softmax, "batch {batch} launched {launched:?}");
        }
    }
}

/// `--fix-dim NAME=VALUE` gives one dynamic axis a value and leaves the
/// others as they are: a model with dynamic `batch` and `sequence` axes
/// compiles for a symbolic batch at one sequence length; a name no input
/// declares, or one both fixed and symbolic, is refused by name.
#[test]
fn fix_dim_gives_one_dynamic_axis_a_value() {
    let dir = models();
    let onnx = path(&dir, "tokens.onnx");
    // What `tcc inspect` prints of tokens.onnx compiled with `flags`.
    let signature = |flags: &[&str], name: &str| {
        let out = dir.path().join(name);
        compile_to(&onnx, flags, &out);
        ok(tcc(&["inspect", &out.display().to_string()]))
    };
    let inspect = signature(
        &["--dim", "batch=1..8", "--fix-dim", "sequence=4"],
        "tokens.so",
    );
    assert!(
        inspect.contains("@main(x: batchx4x8xf32) -> (y: batchx4x8xf32)"),
        "{inspect}"
    );
    // `tcc compile tokens.onnx FLAGS -o /dev/null`, which must fail: its
    // message.
    let refused = |flags: &[&str]| {
        let mut all = vec!["compile", onnx.as_str(), "-o", "/dev/null"];
        all.extend_from_slice(flags);
        fails(tcc(&all))
    };
    for (flags, expected) in [
        // Without it the sequence has no value.
        (&["--dim", "batch=1..8"][..], "sequence"),
        (
            &["--dim", "batch=1..8", "--fix-dim", "seq=4"][..],
            "fixes 'seq', which no graph input of the model declares (its inputs' dynamic dimensions are: batch, sequence)",
        ),
        (
            &["--dim", "batch=1..8", "--fix-dim", "batch=4"][..],
            "'batch' cannot be both symbolic and fixed",
        ),
    ] {
        let error = refused(flags);
        assert!(error.contains(expected), "{flags:?}: {error}");
    }
    // A malformed value is a usage error (exit 2), as --dim's are.
    let o = tcc(&[
        "compile",
        &onnx,
        "--fix-dim",
        "sequence=0",
        "-o",
        "/dev/null",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("a dimension is at least 1"),
        "{}",
        text(&o)
    );
    // With every axis fixed the function is static.
    let inspect = signature(
        &["--fix-dim", "batch=2", "--fix-dim", "sequence=3"],
        "tokens-fixed.so",
    );
    assert!(
        inspect.contains("@main(x: 2x3x8xf32) -> (y: 2x3x8xf32)"),
        "{inspect}"
    );
}

/// A depthwise convolution (a grouped Conv with one channel per group)
/// and a broadcast product of two global pools on a symbolic batch: one
/// artifact for `--target=pocl-cpu` runs batch 1 and 3 as the static
/// artifacts of those batches do (MobileNetV2 and EfficientNet-B0 are
/// built of these).
#[test]
fn depthwise_convolutions_take_a_symbolic_batch() {
    let _serial = crate::support::device_and_spawn_lock();
    let dir = models();
    let onnx = path(&dir, "depthwise.onnx");
    let (runtime, model) = pocl_dynamic_model(&dir, "depthwise");
    let mut session = runtime.session(&model).unwrap();
    for batch in [1usize, 3] {
        let values = batch_inputs(&[vec![batch, 8, 10, 10]]);
        let fixed = dir.path().join(format!("depthwise-{batch}.so"));
        compile_for(
            "pocl-cpu",
            &onnx,
            &["--input-shape", &format!("x={batch}x8x10x10")],
            &fixed,
        );
        let fixed_model = tcc_runtime::Model::load(&fixed).unwrap();
        let want = runtime
            .session(&fixed_model)
            .unwrap()
            .run(&fixed_model.functions()[0].name, &values)
            .unwrap();
        let got = session.run(&model.functions()[0].name, &values).unwrap();
        assert_eq!(got[0].shape, vec![batch, 8, 1, 1]);
        if let Some(m) = mismatch(&got[0].to_f32().unwrap(), &want[0].to_f32().unwrap()) {
            panic!("batch {batch}: {m}");
        }
    }
}

/// Values the import computes from the batch's extent (models.py's
/// `constants_of_the_batch.onnx`): a row expanded to the batch, positions
/// counted along it (`Range` of `Shape`: integers compared with an input
/// at run time, and cast to float and scaled), and a splat of its shape
/// become broadcasts and ramps sized by the call's batch, and a table
/// gathered by the positions its leading rows cut at run time, so one
/// artifact computes them at every batch: y = x + row + pos * w + x[pos]
/// + 2 + 100 * (ids == pos) + table[pos].
#[test]
fn values_computed_from_the_batch_follow_the_call() {
    let _serial = crate::support::device_and_spawn_lock();
    let dir = models();
    let (runtime, model) = pocl_dynamic_model(&dir, "constants_of_the_batch");
    let mut session = runtime.session(&model).unwrap();
    let (row, w) = ([1.0f32, -2.0, 0.5, 3.0], [0.25f32, -1.0, 2.0, 0.0]);
    for batch in [1usize, 5, 16] {
        let x: Vec<f32> = (0..batch * 4).map(|i| (i % 7) as f32 - 3.0).collect();
        // Every third row's id is its position.
        let ids: Vec<i64> = (0..batch as i64)
            .map(|b| if b % 3 == 0 { b } else { b + 1 })
            .collect();
        let inputs = [
            tcc_runtime::HostTensor::from_f32(vec![batch, 4], &x).unwrap(),
            tcc_runtime::HostTensor::new(
                tcc_runtime::DType::I64,
                vec![batch],
                ids.iter().flat_map(|v| v.to_le_bytes()).collect(),
            )
            .unwrap(),
        ];
        let got = session.run(&model.functions()[0].name, &inputs).unwrap();
        assert_eq!(got[0].shape, vec![batch, 4]);
        let want: Vec<f32> = (0..batch * 4)
            .map(|e| {
                let (b, j) = (e / 4, e % 4);
                let same = if ids[b] == b as i64 { 100.0 } else { 0.0 };
                let table = ((b * b) as f32 - 3.0 * j as f32) / 8.0;
                2.0 * x[e] + row[j] + b as f32 * w[j] + 2.0 + same + table
            })
            .collect();
        if let Some(m) = mismatch(&got[0].to_f32().unwrap(), &want) {
            panic!("batch {batch}: {m}");
        }
    }
}

/// `--specialize` buckets of one dimension keep the others symbolic: a
/// GPT-2 export with a symbolic `batch` and `sequence` (two layers,
/// test/onnx/exporters-sequence), compiled with `--specialize
/// sequence=11,16`, runs its variants at sequence 11 and 16 for any
/// batch (each variant's own batch symbolic) and the generic function at
/// sequence 4, each equal to the artifact without variants.
#[test]
fn sequence_buckets_keep_the_batch_symbolic() {
    let _serial = crate::support::device_and_spawn_lock();
    let dir = models();
    let onnx = repo()
        .join("test/onnx/exporters-sequence/gpt2-torchscript-sequence/model.onnx")
        .display()
        .to_string();
    let generic = dir.path().join("gpt2-generic.so");
    let specialized = dir.path().join("gpt2-specialized.so");
    let dims = ["--dim", "batch=1..3", "--dim", "sequence=1..16"];
    compile_to(&onnx, &dims, &generic);
    let mut flags = dims.to_vec();
    flags.extend(["--specialize", "sequence=11,16"]);
    compile_to(&onnx, &flags, &specialized);
    let inspect = ok(tcc(&["inspect", &specialized.display().to_string()]));
    assert!(
        inspect.contains("dims batch=1..3, sequence=1..16  specialized sequence=11 sequence=16"),
        "{inspect}"
    );
    let generic_model = tcc_runtime::Model::load(&generic).unwrap();
    let model = tcc_runtime::Model::load(&specialized).unwrap();
    let function = model.functions()[0].clone();
    let runtime = crate::support::uncached_runtime();
    let mut session = runtime.session(&model).unwrap();
    let mut reference = runtime.session(&generic_model).unwrap();
    for (batch, sequence) in [(2usize, 16usize), (3, 11), (1, 11), (2, 4)] {
        let ids: Vec<u8> = (0..batch * sequence)
            .flat_map(|i| (((i * 37 + batch) % 128) as i64).to_le_bytes())
            .collect();
        let input =
            tcc_runtime::HostTensor::new(tcc_runtime::DType::I64, vec![batch, sequence], ids)
                .unwrap();
        let variant = function
            .specialization_of_call(&[&[batch, sequence]])
            .map(tcc_runtime::describe_bucket);
        assert_eq!(
            variant.as_deref(),
            (sequence != 4)
                .then(|| format!("sequence={sequence}"))
                .as_deref(),
            "{batch} x {sequence}"
        );
        let got = session
            .run(&function.name, std::slice::from_ref(&input))
            .unwrap();
        let want = reference
            .run(&generic_model.functions()[0].name, &[input])
            .unwrap();
        assert_eq!(got[0].shape, vec![batch, sequence, 32]);
        if let Some(m) = mismatch(&got[0].to_f32().unwrap(), &want[0].to_f32().unwrap()) {
            panic!("{batch} x {sequence}: {m}");
        }
    }
}

/// Greedy decoding with a static key/value cache (issue 33,
/// autoregressive decoding): the GPT-2 of test/onnx/exporters-kv,
/// compiled once with `batch` and `sequence` symbolic, generates the
/// tokens onnxruntime generates (`greedy.json`, `kv_greedy.py`) through
/// `tcc_runtime::decode::generate` (the prompt's step, then one-token
/// steps), with the cache left in device memory: the only bytes read back
/// are each step's logits. `tcc-benchmark --decode` and the Rust example
/// `generate` make the same tokens; a prompt too long for the cache and a
/// model that is no decoder step are refused, saying why.
#[test]
fn greedy_decoding_keeps_the_cache_on_the_device_and_matches_onnxruntime() {
    let _serial = crate::support::device_and_spawn_lock();
    let dir = tempfile::tempdir().unwrap();
    let kv = repo().join("test/onnx/exporters-kv");
    let decoder = dir.path().join("decoder.so");
    compile_to(
        &kv.join("gpt2-static-kv-torchscript/model.onnx")
            .display()
            .to_string(),
        &["--dim", "batch=1..4", "--dim", "sequence=1..32"],
        &decoder,
    );
    let reference: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(kv.join("greedy.json")).unwrap()).unwrap();
    let rows = |key: &str| -> Vec<Vec<i64>> {
        serde_json::from_value(reference[key].clone()).expect("rows of token ids")
    };
    let (prompt_rows, want) = (rows("prompt"), rows("tokens"));
    let (batch, length, new_tokens) = (prompt_rows.len(), prompt_rows[0].len(), want[0].len());
    let prompt =
        tcc_runtime::HostTensor::from_elements(vec![batch, length], &prompt_rows.concat()).unwrap();

    // In a block: the runtime (and its hold on the program cache) is gone
    // before the tools below open the model.
    let (generation, read_back) = {
        let model = tcc_runtime::Model::load(&decoder).unwrap();
        let function = model.functions()[0].name.clone();
        let runtime = crate::support::uncached_runtime();
        let mut session = runtime.session(&model).unwrap();
        let before = runtime.transfer_stats();
        let generation =
            tcc_runtime::decode::generate(&mut session, &function, &prompt, new_tokens).unwrap();
        (
            generation,
            runtime.transfer_stats().bytes_to_host - before.bytes_to_host,
        )
    };
    assert_eq!(generation.tokens, want, "the tokens onnxruntime generates");
    assert_eq!(generation.step_s.len(), new_tokens - 1);
    // Logits [batch, sequence, 128] f32: the prompt's, then one row per step.
    let logits = |seq: usize| (batch * seq * 128 * 4) as u64;
    assert_eq!(
        read_back,
        logits(length) + (new_tokens as u64 - 1) * logits(1),
        "only the logits come back; the cache stays in device memory"
    );

    let prompt_file = dir.path().join("prompt.npy");
    tcc_runtime::npy::write_npy(&prompt_file, &prompt).unwrap();
    let bench = |extra: &[&str]| {
        Command::new(Path::new(env!("CARGO_BIN_EXE_tcc")).with_file_name("tcc-benchmark"))
            .arg(&decoder)
            .args(["--warmup=0", "--iterations=1", "--json"])
            .args(extra)
            .output()
            .expect("tcc-benchmark")
    };
    let o = bench(&[
        &format!("--decode={new_tokens}"),
        &format!("--prompt=@{}", prompt_file.display()),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let tokens: Vec<Vec<i64>> = serde_json::from_value(report["decode"]["tokens"].clone()).unwrap();
    assert_eq!(tokens, want);
    assert!(report["decode"]["tokens_per_second"].as_f64().unwrap() > 0.0);
    assert_eq!(report["decode"]["max_cache"], 32);

    // The Rust example (built with the workspace's examples; on its own if
    // this test runs alone).
    let example = Path::new(env!("CARGO_BIN_EXE_tcc"))
        .parent()
        .unwrap()
        .join("examples/generate");
    if !example.exists() {
        let built = Command::new(env!("CARGO"))
            .args(["build", "-p", "tcc-runtime", "--example", "generate"])
            .current_dir(repo())
            .status()
            .expect("cargo");
        assert!(built.success(), "building the generate example");
    }
    let prompt_flag: Vec<String> = prompt_rows
        .iter()
        .map(|r| r.iter().map(i64::to_string).collect::<Vec<_>>().join(","))
        .collect();
    let o = Command::new(&example)
        .arg(&decoder)
        .args([
            "--prompt",
            &prompt_flag.join(";"),
            "--tokens",
            &new_tokens.to_string(),
        ])
        .output()
        .expect("generate example");
    assert!(o.status.success(), "{}", text(&o));
    let lines: Vec<Vec<i64>> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| l.split(' ').map(|t| t.parse().unwrap()).collect())
        .collect();
    assert_eq!(lines, want);

    // Bad input: more positions than the cache holds; not a decoder step.
    let o = bench(&[
        "--decode=30",
        &format!("--prompt=@{}", prompt_file.display()),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains(
            "a prompt of 6 tokens and 30 new ones need 35 cache positions; @main's cache holds 32"
        ),
        "{}",
        text(&o)
    );
    let mlp = dir.path().join("mlp.so");
    compile_to(
        &repo().join("test/models/mlp.mlir").display().to_string(),
        &[],
        &mlp,
    );
    let o = Command::new(Path::new(env!("CARGO_BIN_EXE_tcc")).with_file_name("tcc-benchmark"))
        .arg(&mlp)
        .args(["--decode=4", "--prompt=1x3"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains(
            "@mlp is not a decoder step with a static key/value cache: no input named input_ids"
        ),
        "{}",
        text(&o)
    );
    assert!(!text(&o).contains("panicked"));
}

/// A decode step's projection: few rows (M = the batch, symbolic) times a
/// long K. On nvidia a bound of at most 8 rows takes the few-row form (the
/// lanes of a work-group share K, rows past the call's M guarded), a
/// bound of 16 splits K across work-groups (the workspace and counters
/// laid out for the declared maximum's tiles, a call launching the rows
/// it has), so that the weights stream through enough work-groups either
/// way; the OpenCL C kernels (their portable lane sums and split-K
/// fix-up) run here at batches from 1 to the bound, equal to a reference
/// sum.
#[test]
fn few_symbolic_rows_stream_the_weights_through_many_work_groups() {
    let _serial = crate::support::device_and_spawn_lock();
    for (max, form, batches) in [
        (8, "k_lanes = ", [1usize, 5, 8]),
        (16, "split_k = ", [1, 9, 16]),
    ] {
        few_symbolic_rows(max, form, &batches);
    }
}

fn few_symbolic_rows(max: usize, form: &str, batches: &[usize]) {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("projection.mlir");
    std::fs::write(
        &source,
        format!(
            r#"module attributes {{tcc.dims = #tcc.dims<names = ["batch"], min = [1], max = [{max}]>}} {{
  func.func @projection(%x: tensor<1x?x2048xf32> {{tcc.dim_names = ["", "batch", ""]}}, %w: tensor<1x2048x768xf32>) -> tensor<1x?x768xf32> {{
    %zp = "tosa.const"() <{{values = dense<0.0> : tensor<1xf32>}}> : () -> tensor<1xf32>
    %y = tosa.matmul %x, %w, %zp, %zp : (tensor<1x?x2048xf32>, tensor<1x2048x768xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<1x?x768xf32>
    return %y : tensor<1x?x768xf32>
  }}
}}
"#
        ),
    )
    .unwrap();
    let source = source.display().to_string();
    let tile = ok(tcc(&[
        "compile",
        &source,
        "--target=nvidia",
        "--compile-to=tile",
    ]));
    let parts = tile
        .split(form)
        .nth(1)
        .and_then(|rest| rest.split(',').next())
        .and_then(|n| n.trim().parse::<u32>().ok())
        .unwrap_or_else(|| panic!("no {form}in the GEMM strategy of {tile}"));
    assert!(
        parts > 1,
        "K of 2048 over {max} rows: {form}{parts}: {tile}"
    );
    let out = dir.path().join("projection.so");
    compile_for("nvidia", &source, &[], &out);
    let model = tcc_runtime::Model::load(&out).unwrap();
    let runtime = crate::support::uncached_runtime();
    let mut session = runtime.session(&model).unwrap();
    let w: Vec<f32> = (0..2048 * 768usize)
        .map(|i| ((i * 7919 % 1000) as f32 - 500.0) / 1000.0)
        .collect();
    for &batch in batches {
        let x: Vec<f32> = (0..batch * 2048)
            .map(|i: usize| ((i * 104729 % 997) as f32 - 498.0) / 997.0)
            .collect();
        let inputs = [
            tcc_runtime::HostTensor::from_f32(vec![1, batch, 2048], &x).unwrap(),
            tcc_runtime::HostTensor::from_f32(vec![1, 2048, 768], &w).unwrap(),
        ];
        let got = session.run("projection", &inputs).unwrap();
        assert_eq!(got[0].shape, vec![1, batch, 768]);
        let got = got[0].to_f32().unwrap();
        for r in 0..batch {
            for c in 0..768 {
                let want: f64 = (0..2048)
                    .map(|k| f64::from(x[r * 2048 + k]) * f64::from(w[k * 768 + c]))
                    .sum();
                let g = f64::from(got[r * 768 + c]);
                assert!(
                    (g - want).abs() <= 1e-4 * (1.0 + want.abs()),
                    "batch {batch} [{r}, {c}]: {g} vs {want}"
                );
            }
        }
    }
}
