//! `tcc inspect model.so [--json]`: what a compiled artifact holds — its
//! functions with their inputs and outputs, its kernels (name, kind,
//! work-group size, flops per launch, the CUDA dynamic local memory of a
//! `--backend=cuda` kernel), its constants, arena sizes, target,
//! producer (tcc version and git commit) and ABI version.
//!
//! The ABI tables (functions, kernel names, flops, constants) are read by
//! the runtime's validating loader; kind, work-group size and target come
//! from the artifact's optional `tcc_metadata_v1` JSON, and are shown as
//! unknown for artifacts without it. Nothing runs but the artifact's
//! description functions; no OpenCL device is needed.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use serde_json::{Value, json};
use tcc_runtime::{Model, TensorDesc};

#[derive(Args, Debug)]
pub struct InspectArgs {
    /// The compiled model (model.so).
    pub model: PathBuf,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

fn tensor_json(t: &TensorDesc) -> Value {
    json!({"name": t.name, "dtype": t.dtype.name(), "shape": t.shape, "bytes": t.byte_size()})
}

/// The artifact as one JSON value (what `--json` prints).
pub fn describe(model: &Model) -> Value {
    let metadata: Value = model
        .metadata()
        .and_then(|m| serde_json::from_str(m).ok())
        .unwrap_or(Value::Null);
    let known = |name: &str| {
        metadata["kernels"]
            .as_array()
            .and_then(|ks| ks.iter().find(|k| k["name"] == name))
            .cloned()
            .unwrap_or(Value::Null)
    };
    let kernels: Vec<Value> = model
        .kernel_names()
        .iter()
        .zip(model.kernel_flops())
        .map(|(name, flops)| {
            let k = known(name);
            let mut kernel = json!({
                "name": name,
                "kind": k["kind"],
                "workgroup_size": k["workgroup_size"],
                "flops": flops,
            });
            // CUDA dynamic local memory its PTX needs (--backend=cuda).
            if k["dynamic_local_bytes"].is_u64() {
                kernel["dynamic_local_bytes"] = k["dynamic_local_bytes"].clone();
            }
            kernel
        })
        .collect();
    let functions: Vec<Value> = model
        .functions()
        .iter()
        .map(|f| {
            json!({
                "name": f.name,
                "inputs": f.inputs.iter().map(tensor_json).collect::<Vec<_>>(),
                "outputs": f.outputs.iter().map(tensor_json).collect::<Vec<_>>(),
                "arena_bytes": f.arena_bytes,
            })
        })
        .collect();
    let constants = model.constant_bytes();
    json!({
        "path": model.path().display().to_string(),
        "abi_version": model.abi_version(),
        "producer": metadata.get("producer").cloned().unwrap_or_else(|| json!(model.producer())),
        "target": metadata["target"],
        "host_triple": metadata["host_triple"],
        "tuning": metadata["tuning"],
        "storage": metadata.get("storage").cloned().unwrap_or_else(|| json!("fp32")),
        "quantization": metadata.get("quantization").cloned().unwrap_or(serde_json::Value::Null),
        "kernel_format": match model.source_kind() {
            tcc_runtime::SourceKind::OpenClC => "OpenCL C",
            tcc_runtime::SourceKind::SpirV => "SPIR-V",
            tcc_runtime::SourceKind::Ptx => "PTX",
        },
        "ptx": model.has_ptx(),
        "functions": functions,
        "kernels": kernels,
        "constants": {"count": constants.len(), "bytes": constants.iter().sum::<u64>()},
        "arena_bytes": model.functions().iter().map(|f| f.arena_bytes).max().unwrap_or(0),
    })
}

fn text_or_unknown(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "unknown".into(),
        other => other.to_string(),
    }
}

/// The text form.
pub fn render(d: &Value) -> String {
    let mut out = String::new();
    let (min, max) = (
        tcc_runtime::abi::TCC_ABI_VERSION_MIN,
        tcc_runtime::abi::TCC_ABI_VERSION,
    );
    out.push_str(&format!("{}\n", d["path"].as_str().unwrap_or_default()));
    out.push_str(&format!(
        "  ABI version: {} (this runtime loads {min}..={max})\n",
        d["abi_version"]
    ));
    out.push_str(&format!(
        "  producer: {}\n",
        text_or_unknown(&d["producer"])
    ));
    out.push_str(&format!("  target: {}\n", text_or_unknown(&d["target"])));
    out.push_str(&format!("  host: {}\n", text_or_unknown(&d["host_triple"])));
    if let Some(tuning) = d["tuning"].as_object() {
        let driver = tuning["driver"].as_str().unwrap_or_default();
        out.push_str(&format!(
            "  tuned on: {}{}\n",
            tuning["device"].as_str().unwrap_or("unknown"),
            if driver.is_empty() {
                String::new()
            } else {
                format!(" (driver {driver})")
            }
        ));
    }
    if d["storage"] == "fp16" {
        out.push_str("  storage: fp16 (weights and intermediates; inputs and outputs f32)\n");
    }
    if d["quantization"]["type"] == "int8" {
        out.push_str(&format!(
            "  quantization: int8 ({} convolutions/matmuls int8 x int8 -> int32, {} left f32)\n",
            d["quantization"]["int8_ops"], d["quantization"]["f32_ops"]
        ));
    }
    out.push_str(&format!(
        "  kernel format: {}{}\n",
        text_or_unknown(&d["kernel_format"]),
        if d["ptx"] == true { " and PTX" } else { "" }
    ));
    let functions = d["functions"].as_array().cloned().unwrap_or_default();
    out.push_str(&format!("functions: {}\n", functions.len()));
    let list = |ts: &Value| {
        ts.as_array()
            .into_iter()
            .flatten()
            .map(|t| {
                let shape: Vec<String> = t["shape"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|d| d.to_string())
                    .collect();
                let ty = shape
                    .iter()
                    .map(|s| format!("{s}x"))
                    .chain([t["dtype"].as_str().unwrap_or("?").to_string()])
                    .collect::<String>();
                match t["name"].as_str() {
                    Some(n) if !n.is_empty() => format!("{n}: {ty}"),
                    _ => ty,
                }
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    for f in &functions {
        out.push_str(&format!(
            "  @{}({}) -> ({})  arena {} bytes\n",
            f["name"].as_str().unwrap_or_default(),
            list(&f["inputs"]),
            list(&f["outputs"]),
            f["arena_bytes"]
        ));
    }
    let kernels = d["kernels"].as_array().cloned().unwrap_or_default();
    out.push_str(&format!("kernels: {}\n", kernels.len()));
    for k in &kernels {
        let size = match &k["workgroup_size"] {
            Value::Null => "unknown".to_string(),
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        out.push_str(&format!(
            "  {}  kind={}  workgroup_size={}  flops={}{}\n",
            k["name"].as_str().unwrap_or_default(),
            text_or_unknown(&k["kind"]),
            size,
            k["flops"],
            match &k["dynamic_local_bytes"] {
                Value::Number(bytes) => format!("  cuda_dynamic_local={bytes}"),
                _ => String::new(),
            }
        ));
    }
    out.push_str(&format!(
        "constants: {} ({} bytes)\n",
        d["constants"]["count"], d["constants"]["bytes"]
    ));
    out.push_str(&format!(
        "arena: {} bytes (largest function)\n",
        d["arena_bytes"]
    ));
    out
}

pub fn run(args: &InspectArgs) -> Result<()> {
    let model = Model::load(&args.model)?;
    let description = describe(&model);
    if args.json {
        super::write_stdout(&format!(
            "{}\n",
            serde_json::to_string_pretty(&description)?
        ))
    } else {
        super::write_stdout(&render(&description))
    }
}
