//! `tcc profile`: runs test/onnx/models/quant_qdq's float path (a
//! convolution and a ReLU between quantize/dequantize pairs) on two
//! samples on the CI's OpenCL CPU device and checks the profile it
//! writes against values computed here; and its errors for an empty
//! sample directory, a sample missing an input and an MLIR model.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use tcc_compiler::driver::profile::Profile;
use tcc_runtime::HostTensor;

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path)
}

fn profile(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_tcc"))
        .arg("profile")
        .args(args)
        .env("TCC_CACHE_DIR", dir.join("cache"))
        .env("POCL_CACHE_DIR", dir.join("pocl"))
        .output()
        .expect("run tcc profile")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A 1x4x6x6 sample whose values run from `low` in steps of `step`.
fn sample(path: &Path, low: f32, step: f32) {
    let values: Vec<f32> = (0..144).map(|i| low + step * i as f32).collect();
    let tensor = HostTensor::from_f32(vec![1, 4, 6, 6], &values).unwrap();
    tcc_runtime::npy::write_npy(path, &tensor).unwrap();
}

#[test]
fn records_every_float_tensor_with_its_range_and_histogram() {
    let dir = tempfile::tempdir().unwrap();
    let samples = dir.path().join("samples");
    std::fs::create_dir(&samples).unwrap();
    sample(&samples.join("a.npy"), -2.0, 0.02);
    sample(&samples.join("b.npy"), -1.0, 0.01);
    let out = dir.path().join("profile.json");
    let report = dir.path().join("profile.html");
    let model = repo("test/onnx/models/quant_qdq/model.onnx");
    let o = profile(
        dir.path(),
        &[
            model.to_str().unwrap(),
            &format!("--inputs={}", samples.display()),
            &format!("-o={}", out.display()),
            &format!("--report={}", report.display()),
            "--bins=8",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("over 2 samples"), "{}", stderr(&o));
    let profile: Profile = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(
        (profile.format.as_str(), profile.version),
        ("tcc-profile", 1)
    );
    assert_eq!(profile.samples, 2);
    let names: Vec<&str> = profile.tensors.iter().map(|t| t.name.as_str()).collect();
    // The graph output first, then the float tensors the nodes compute
    // (not the integer ones, not the folded weights), then the graph's
    // float input.
    assert_eq!(names, ["y", "xd", "c", "r", "x"], "{names:?}");
    let get = |name: &str| profile.tensors.iter().find(|t| t.name == name).unwrap();
    // xd is x quantized to uint8 steps of 0.02 around 128 and back: the
    // samples' extremes -2.0 and 0.86 on the grid, clamped to [-2.56, 2.54].
    let xd = get("xd");
    assert_eq!(xd.shape, [1, 4, 6, 6]);
    assert!(
        (xd.min + 2.0).abs() < 1e-5 && (xd.max - 0.86).abs() < 1e-5,
        "{xd:?}"
    );
    let r = get("r");
    assert_eq!(r.shape, [1, 8, 6, 6]);
    assert!(r.min == 0.0 && r.max > 0.0 && get("c").min < 0.0, "{r:?}");
    for t in &profile.tensors {
        assert_eq!(t.histogram.len(), 8, "{}", t.name);
        let count: i64 = t.shape.iter().product::<i64>() * 2;
        assert_eq!(t.histogram.iter().sum::<u64>() as i64, count, "{}", t.name);
        assert_eq!(t.nonfinite, 0);
    }

    // The HTML report: well-formed, self-contained, one row per tensor in
    // the profile's order with its histogram, and the summary's counts.
    let html = std::fs::read_to_string(&report).unwrap();
    check_balanced(&html);
    assert!(
        !html.contains("http") && !html.contains(" src="),
        "the page must not fetch anything"
    );
    let rows: Vec<&str> = html
        .split("<td class=\"name\">")
        .skip(1)
        .map(|row| row.split("<br/>").next().unwrap())
        .collect();
    assert_eq!(rows, names, "one row per tensor, in order");
    assert_eq!(html.matches("<svg class=\"hist\"").count(), names.len());
    assert!(html.contains("<dt>tensors</dt><dd>5</dd>"), "{html}");
    assert!(html.contains("<dt>samples</dt><dd>2</dd>"), "{html}");
    assert!(
        html.contains("<dt>bins per tensor</dt><dd>8</dd>"),
        "{html}"
    );
    let values: i64 = profile
        .tensors
        .iter()
        .map(|t| t.shape.iter().product::<i64>() * 2)
        .sum();
    assert!(
        html.contains(&format!("<dt>finite values seen</dt><dd>{values}</dd>")),
        "{html}"
    );
    // xd's range as the table shows it (4 significant digits).
    let xd_row = html.split("<tr id=\"t1\">").nth(1).unwrap();
    assert!(
        xd_row.starts_with("<td data-v=\"1\">1</td><td class=\"name\">xd<br/>")
            && xd_row.contains(">-2.000</td>")
            && xd_row.contains(">0.8600</td>"),
        "{xd_row}"
    );
}

/// Checks that every element of `html` is closed in order (void elements,
/// `<.../>` and the contents of `<script>` and `<style>` aside).
fn check_balanced(html: &str) {
    const VOID: [&str; 6] = ["meta", "br", "link", "img", "input", "hr"];
    let mut open: Vec<String> = Vec::new();
    let mut rest = html;
    while let Some(at) = rest.find('<') {
        rest = &rest[at + 1..];
        let end = rest.find('>').expect("an unterminated tag");
        let tag = &rest[..end];
        rest = &rest[end + 1..];
        if tag.starts_with('!') {
            continue;
        }
        if let Some(name) = tag.strip_prefix('/') {
            let top = open
                .pop()
                .unwrap_or_else(|| panic!("</{name}> closes nothing"));
            assert_eq!(top, name.trim(), "</{name}> closes <{top}>");
            continue;
        }
        let name = tag
            .split(|c: char| c.is_whitespace() || c == '/')
            .next()
            .unwrap()
            .to_string();
        if tag.ends_with('/') || VOID.contains(&name.as_str()) {
            continue;
        }
        if name == "script" || name == "style" {
            let close = format!("</{name}>");
            let end = rest.find(&close).unwrap_or_else(|| panic!("no {close}"));
            rest = &rest[end + close.len()..];
            continue;
        }
        open.push(name);
    }
    assert!(open.is_empty(), "unclosed: {open:?}");
}

#[test]
fn bad_samples_and_models_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let model = repo("test/onnx/models/quant_qdq/model.onnx");
    let empty = dir.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let out = dir.path().join("p.json");
    let run = |inputs: &Path, model: &Path| {
        profile(
            dir.path(),
            &[
                model.to_str().unwrap(),
                &format!("--inputs={}", inputs.display()),
                &format!("-o={}", out.display()),
            ],
        )
    };
    let o = run(&empty, &model);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("holds no samples"), "{}", stderr(&o));
    let partial = dir.path().join("partial");
    std::fs::create_dir_all(partial.join("s0")).unwrap();
    let o = run(&partial, &model);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("x.npy"), "{}", stderr(&o));
    let mlir = repo("lit/phases/Inputs/mlp.mlir");
    let o = run(&empty, &mlir);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("takes an ONNX model"), "{}", stderr(&o));
    assert!(!out.exists(), "a failed profile wrote {}", out.display());
}
