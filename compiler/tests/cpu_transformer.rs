//! The CPU (pocl-cpu) forms of the transformer kernels against float64
//! references computed with numpy: attention in its single-work-item form
//! (head dimensions taking float16, float8, float4 and scalar lanes;
//! grouped K/V heads, a causal mask, an additive mask, sequences that are
//! not whole chunks of 16 keys), matmuls whose constant B is packed in
//! panels (N not a whole number of panels), and GELU epilogues through
//! the rational `tcc_erf` / `tcc_tanh`, a SiLU epilogue through the
//! polynomial `tcc_expf_poly` (overflow and subnormal ranges included). The emitted OpenCL C is checked to
//! take those forms on pocl-cpu and not on nvidia.

use std::path::Path;
use std::process::{Command, Output};

fn tcc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tcc"))
        .args(args)
        .output()
        .expect("run tcc")
}

fn ok(o: Output, what: &str) -> String {
    assert!(
        o.status.success(),
        "{what} failed:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Writes the models, their inputs (`NAME_in0.npy`, ...) and float64
/// references (`NAME_ref.npy`) into the directory; prints the names.
const MODELS: &str = r#"
import math, sys, numpy as np, onnx
from onnx import helper as h, TensorProto as T, numpy_helper as nh
out = sys.argv[1]
rng = np.random.default_rng(7)
def save(name, nodes, inputs, result, inits=()):
    graph = h.make_graph(nodes, name,
        [h.make_tensor_value_info(n, T.FLOAT, list(a.shape)) for n, a in inputs],
        [h.make_tensor_value_info("y", T.FLOAT, list(result.shape))], list(inits))
    onnx.save(h.make_model(graph, opset_imports=[h.make_opsetid("", 23)]), f"{out}/{name}.onnx")
    for i, (_, a) in enumerate(inputs):
        np.save(f"{out}/{name}_in{i}.npy", a)
    np.save(f"{out}/{name}_ref.npy", result)
    print(name)
def attention(q, k, v, mask=None, causal=False):
    q, k, v = (x.astype(np.float64) for x in (q, k, v))
    group = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s + mask
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v
for length, dim, heads, kv_heads in [(37, 64, 3, 3), (21, 40, 4, 2), (50, 20, 2, 2), (19, 6, 2, 1)]:
    q = rng.standard_normal((1, heads, length, dim)).astype(np.float32)
    k = rng.standard_normal((1, kv_heads, length, dim)).astype(np.float32)
    v = rng.standard_normal((1, kv_heads, length, dim)).astype(np.float32)
    mask = rng.standard_normal((length, length)).astype(np.float32)
    tag = f"{length}x{dim}_{heads}over{kv_heads}"
    qkv = [("q", q), ("k", k), ("v", v)]
    save(f"attention_{tag}", [h.make_node("Attention", ["q", "k", "v"], ["y"])], qkv, attention(q, k, v))
    save(f"causal_{tag}", [h.make_node("Attention", ["q", "k", "v"], ["y"], is_causal=1)], qkv,
         attention(q, k, v, causal=True))
    save(f"masked_{tag}", [h.make_node("Attention", ["q", "k", "v", "mask"], ["y"])], qkv + [("mask", mask)],
         attention(q, k, v, mask=mask))
# x @ W + b, GELU (erf, or tanh's approximation), @ W2: N = 72 and 40 are
# not whole panels of 16.
x = rng.standard_normal((1, 29, 40)).astype(np.float32)
w = (rng.standard_normal((40, 72)) * 0.3).astype(np.float32)
b = rng.standard_normal(72).astype(np.float32)
w2 = (rng.standard_normal((72, 40)) * 0.3).astype(np.float32)
z = x.astype(np.float64) @ w + b
erf = np.vectorize(math.erf)
gelu_erf = 0.5 * z * (1 + erf(z / math.sqrt(2)))
gelu_tanh = 0.5 * z * (1 + np.tanh(math.sqrt(2 / math.pi) * (z + 0.044715 * z ** 3)))
c = lambda name, value: nh.from_array(np.array(value, np.float32), name)
inits = [nh.from_array(w, "w"), nh.from_array(b, "b"), nh.from_array(w2, "w2"), c("half", 0.5), c("one", 1.0),
         c("root2", math.sqrt(2)), c("a", math.sqrt(2 / math.pi)), c("cube", 0.044715), c("three", 3.0)]
head = [h.make_node("MatMul", ["x", "w"], ["xw"]), h.make_node("Add", ["xw", "b"], ["z"])]
tail = [h.make_node("Mul", ["z", "t1"], ["t2"]), h.make_node("Mul", ["t2", "half"], ["g"]),
        h.make_node("MatMul", ["g", "w2"], ["y"])]
save("gelu_erf", head + [h.make_node("Div", ["z", "root2"], ["e0"]), h.make_node("Erf", ["e0"], ["e1"]),
     h.make_node("Add", ["e1", "one"], ["t1"])] + tail, [("x", x)], gelu_erf @ w2, inits)
save("gelu_tanh", head + [h.make_node("Pow", ["z", "three"], ["p3"]), h.make_node("Mul", ["p3", "cube"], ["p4"]),
     h.make_node("Add", ["z", "p4"], ["p5"]), h.make_node("Mul", ["p5", "a"], ["p6"]),
     h.make_node("Tanh", ["p6"], ["e1"]), h.make_node("Add", ["e1", "one"], ["t1"])] + tail,
     [("x", x)], gelu_tanh @ w2, inits)
# x @ W + b, SiLU (x * sigmoid(x): the polynomial exp), @ W2; z spans
# about +-150, past where exp overflows and underflows to subnormals.
ws = (rng.standard_normal((40, 72)) * 8).astype(np.float32)
zs = x.astype(np.float64) @ ws + b
silu = zs / (1 + np.exp(-zs))
save("silu", [h.make_node("MatMul", ["x", "ws"], ["xw"]), h.make_node("Add", ["xw", "b"], ["z"]),
     h.make_node("Sigmoid", ["z"], ["s"]), h.make_node("Mul", ["z", "s"], ["g"]),
     h.make_node("MatMul", ["g", "w2"], ["y"])], [("x", x)], silu @ w2,
     [nh.from_array(ws, "ws"), nh.from_array(b, "b"), nh.from_array(w2, "w2")])
"#;

/// The largest difference between `got` and `want` (`.npy` files) and
/// the largest magnitude of `want`.
fn compare(got: &Path, want: &Path) -> (f64, f64) {
    let o = Command::new("python3")
        .arg("-c")
        .arg("import sys, numpy as np; g = np.load(sys.argv[1]).astype(np.float64); w = np.load(sys.argv[2]); assert g.shape == w.shape, (g.shape, w.shape); print(np.abs(g - w).max(), np.abs(w).max())")
        .arg(got)
        .arg(want)
        .output()
        .expect("python3");
    let text = ok(o, "comparing outputs");
    let mut fields = text.split_whitespace().map(|f| f.parse::<f64>().unwrap());
    (fields.next().unwrap(), fields.next().unwrap())
}

#[test]
fn cpu_attention_panels_and_gelu_match_float64_references() {
    let dir = tempfile::tempdir().unwrap();
    let names = ok(
        Command::new("python3")
            .arg("-c")
            .arg(MODELS)
            .arg(dir.path())
            .output()
            .expect("python3 (make deps installs numpy and onnx)"),
        "writing the models",
    );
    let names: Vec<&str> = names.lines().collect();
    assert_eq!(names.len(), 15, "{names:?}");
    for name in names {
        let model = dir.path().join(format!("{name}.onnx"));
        let mut args = vec![
            "run".to_string(),
            model.to_str().unwrap().to_string(),
            "--target=pocl-cpu".to_string(),
        ];
        for i in 0.. {
            let input = dir.path().join(format!("{name}_in{i}.npy"));
            if !input.exists() {
                break;
            }
            args.push(format!("--input=@{}", input.display()));
        }
        let got = dir.path().join(format!("{name}_got.npy"));
        args.push(format!("--output=@{}", got.display()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        ok(tcc(&args), &format!("tcc run {name}"));
        let (error, largest) = compare(&got, &dir.path().join(format!("{name}_ref.npy")));
        assert!(
            error <= 2e-6 * largest.max(1.0),
            "{name}: max error {error} (largest value {largest})"
        );
        // The kernels took the CPU forms on pocl-cpu, and not on nvidia;
        // erf and tanh are rational on both (libclc's are ~300
        // instructions on NVIDIA) and library calls on the generic target.
        let kernels = |target: &str| -> String {
            let cl = dir.path().join(format!("{name}_{target}.cl"));
            ok(
                tcc(&[
                    "compile",
                    model.to_str().unwrap(),
                    &format!("--target={target}"),
                    "--emit=opencl-c",
                    "-o",
                    cl.to_str().unwrap(),
                ]),
                &format!("tcc compile {name} --emit=opencl-c"),
            );
            let mut text = String::new();
            let files: Vec<_> = if cl.is_dir() {
                std::fs::read_dir(&cl)
                    .unwrap()
                    .map(|e| e.unwrap().path())
                    .collect()
            } else {
                vec![cl]
            };
            for file in files {
                text.push_str(&std::fs::read_to_string(file).unwrap());
            }
            text
        };
        let (cpu, gpu) = (kernels("pocl-cpu"), kernels("nvidia"));
        let forms: Vec<&str> = match name {
            "gelu_erf" | "gelu_tanh" | "silu" => vec!["((col0 + 0) / 16) * "],
            _ => vec!["one work-item per 4 query rows"],
        };
        for form in forms {
            assert!(cpu.contains(form), "{name}: no {form} in\n{cpu}");
            assert!(!gpu.contains(form), "{name}: {form} in the nvidia kernels");
        }
        // exp is the branch-free polynomial on pocl-cpu only.
        if name == "silu" {
            assert!(
                cpu.contains("tcc_expf_poly("),
                "{name}: no tcc_expf_poly in\n{cpu}"
            );
            assert!(
                !gpu.contains("tcc_expf_poly("),
                "{name}: tcc_expf_poly on nvidia"
            );
            assert!(
                !kernels("generic").contains("tcc_expf_poly("),
                "{name}: tcc_expf_poly on generic"
            );
        }
        if name.starts_with("gelu") {
            let (rational, library) = if name == "gelu_erf" {
                ("tcc_erf(", " erf(")
            } else {
                ("tcc_tanh(", " tanh(")
            };
            assert!(cpu.contains(rational), "{name}: no {rational} in\n{cpu}");
            assert!(gpu.contains(rational), "{name}: no {rational} in\n{gpu}");
            let generic = kernels("generic");
            assert!(
                generic.contains(library),
                "{name}: no{library} in\n{generic}"
            );
            assert!(
                !generic.contains(rational),
                "{name}: {rational} in the generic kernels"
            );
        }
    }
}
