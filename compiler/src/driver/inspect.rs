//! `tcc inspect model.so [--json]`: what a compiled artifact holds — its
//! functions with their inputs and outputs, its kernels (name, kind,
//! work-group size, flops per launch, the CUDA dynamic local memory of a
//! `--backend=cuda` kernel), its constants, arena sizes, target,
//! producer (tcc version and git commit) and ABI version.
//!
//! Nothing of the artifact runs: its checksummed description
//! (`tcc_description_v1`, a data symbol) is read from the ELF file with the
//! `object` crate, never through the dynamic loader (which would run the
//! library's initializers). The description's own checksum is always
//! checked; `--verify` (the default) also hashes the constants, found in
//! the file through the descriptors `tcc_constants_v1` and their
//! relocations, and compares them with the checksum the compiler stored.
//! Kind, work-group size and target come from the compiler's metadata
//! inside the description. No OpenCL device is needed.

use std::path::PathBuf;

use anyhow::{Result, anyhow};
use clap::Args;
use serde_json::{Value, json};
use tcc_runtime::artifact::description::{ArtifactFile, Description, TensorEntry};
use tcc_runtime::tensor::DType;

#[derive(Args, Debug)]
pub struct InspectArgs {
    /// The compiled model (model.so).
    pub model: PathBuf,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
    /// Hash the constants and compare them with the artifact's checksum
    /// (the default; the description's own checksum is always checked).
    #[arg(long)]
    pub verify: bool,
    /// Skip hashing the constants (one pass over the weights).
    #[arg(long, conflicts_with = "verify")]
    pub no_verify: bool,
}

fn tensor_json(t: &TensorEntry) -> Value {
    let dtype = DType::from_abi(t.dtype);
    // A symbolic extent (`--dim`) by its dimension's name; such a
    // tensor's size depends on the call.
    let symbolic = t.shape.contains(&tcc_abi::symbolic::SYMBOLIC);
    let shape: Vec<Value> = t
        .shape
        .iter()
        .enumerate()
        .map(|(axis, &d)| {
            if d == tcc_abi::symbolic::SYMBOLIC {
                json!(t.dims.get(axis).cloned().unwrap_or_else(|| "?".into()))
            } else {
                json!(d)
            }
        })
        .collect();
    let bytes = dtype
        .filter(|_| !symbolic)
        .map(|d| t.shape.iter().map(|&x| x.max(0) as u64).product::<u64>() * d.size() as u64);
    json!({
        "name": t.name,
        "dtype": dtype.map_or_else(|| format!("dtype {}", t.dtype), |d| d.name().to_string()),
        "shape": shape,
        "bytes": bytes,
    })
}

/// The artifact at `path` as one JSON value (what `--json` prints), from
/// its description.
pub fn describe(path: &std::path::Path, description: &Description, verified: bool) -> Value {
    let metadata: Value = description
        .metadata
        .as_deref()
        .and_then(|m| serde_json::from_str(m).ok())
        .unwrap_or(Value::Null);
    let known = |name: &str| {
        metadata["kernels"]
            .as_array()
            .and_then(|ks| ks.iter().find(|k| k["name"] == name))
            .cloned()
            .unwrap_or(Value::Null)
    };
    let kernels: Vec<Value> = description
        .kernels
        .iter()
        .map(|kernel| {
            let k = known(&kernel.name);
            let mut out = json!({
                "name": kernel.name,
                "kind": k["kind"],
                "workgroup_size": k["workgroup_size"],
                "flops": kernel.flops,
            });
            // CUDA dynamic local memory its PTX needs (--backend=cuda), as
            // its launch record says.
            if kernel.dynamic_local_bytes > 0 {
                out["dynamic_local_bytes"] = json!(kernel.dynamic_local_bytes);
            }
            out
        })
        .collect();
    let functions: Vec<Value> = description
        .functions
        .iter()
        .map(|f| {
            json!({
                "name": f.name,
                "inputs": f.inputs.iter().map(tensor_json).collect::<Vec<_>>(),
                "outputs": f.outputs.iter().map(tensor_json).collect::<Vec<_>>(),
                "arena_bytes": f.arena_bytes,
                "dims": f.dims.iter().map(|d| json!({"name": d.name, "min": d.min, "max": d.max})).collect::<Vec<_>>(),
                "specializations": f.specializations,
            })
        })
        .collect();
    let constants = &description.constant_bytes;
    json!({
        "path": path.display().to_string(),
        "abi_version": description.abi_version,
        "producer": metadata.get("producer").cloned().unwrap_or_else(|| json!(description.producer)),
        "target": metadata["target"],
        "target_name": metadata["target_name"],
        "cpu_arch": metadata["cpu_arch"],
        "host_triple": metadata["host_triple"],
        "tuning": metadata["tuning"],
        "storage": metadata.get("storage").cloned().unwrap_or_else(|| json!("fp32")),
        "quantization": metadata.get("quantization").cloned().unwrap_or(serde_json::Value::Null),
        "given_inputs": metadata.get("given_inputs").cloned().unwrap_or_else(|| json!([])),
        "kernel_format": match description.source_kind {
            tcc_abi::SOURCE_SPIRV => "SPIR-V",
            tcc_abi::SOURCE_PTX => "PTX",
            _ => "OpenCL C",
        },
        "ptx": description.ptx_sha256.is_some(),
        "functions": functions,
        "kernels": kernels,
        "constants": {"count": constants.len(), "bytes": constants.iter().sum::<u64>()},
        "arena_bytes": description.functions.iter().map(|f| f.arena_bytes).max().unwrap_or(0),
        "checksum": if verified { "description and constants verified" } else { "description verified, constants not checked (--no-verify)" },
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
    let level = match (d["target_name"].as_str(), d["cpu_arch"].as_str()) {
        // A CPU target and the instruction set the runtime checks at load.
        (Some(name), Some(arch)) => format!(" ({name}, {arch})"),
        _ => String::new(),
    };
    out.push_str(&format!(
        "  target: {}{level}\n",
        text_or_unknown(&d["target"])
    ));
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
    if let Some(storage @ ("fp16" | "bf16")) = d["storage"].as_str() {
        out.push_str(&format!(
            "  storage: {storage} (weights and intermediates; inputs and outputs as the model declares them)\n"
        ));
    }
    if d["quantization"]["type"] == "int8" {
        out.push_str(&format!(
            "  quantization: int8 ({} convolutions/matmuls int8 x int8 -> int32, {} left f32)\n",
            d["quantization"]["int8_ops"], d["quantization"]["f32_ops"]
        ));
    }
    for given in d["given_inputs"].as_array().into_iter().flatten() {
        out.push_str(&format!(
            "  input given at compile time (--input-value): {}\n",
            given.as_str().unwrap_or_default()
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
                    .map(|d| match d {
                        Value::String(name) => name.clone(),
                        other => other.to_string(),
                    })
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
        let dims: Vec<String> = f["dims"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|d| {
                format!(
                    "{}={}..{}",
                    d["name"].as_str().unwrap_or("?"),
                    d["min"],
                    d["max"]
                )
            })
            .collect();
        // `--specialize`'s buckets: [[["batch", 8]], ...].
        let buckets: Vec<String> = f["specializations"]
            .as_array()
            .map(|list| {
                list.iter()
                    .map(|bucket| {
                        bucket
                            .as_array()
                            .map(|pairs| {
                                pairs
                                    .iter()
                                    .map(|p| format!("{}={}", p[0].as_str().unwrap_or("?"), p[1]))
                                    .collect::<Vec<_>>()
                                    .join(",")
                            })
                            .unwrap_or_default()
                    })
                    .collect()
            })
            .unwrap_or_default();
        out.push_str(&format!(
            "  @{}({}) -> ({})  arena {} bytes{}{}\n",
            f["name"].as_str().unwrap_or_default(),
            list(&f["inputs"]),
            list(&f["outputs"]),
            f["arena_bytes"],
            if dims.is_empty() {
                String::new()
            } else {
                format!(" (at the maximum)  dims {}", dims.join(", "))
            },
            if buckets.is_empty() {
                String::new()
            } else {
                format!("  specialized {}", buckets.join(" "))
            }
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
    out.push_str(&format!(
        "checksum: {}\n",
        d["checksum"].as_str().unwrap_or_default()
    ));
    out
}

pub fn run(args: &InspectArgs) -> Result<()> {
    let path = &args.model;
    let damaged = |why: String| anyhow!("malformed artifact {}: {why}", path.display());
    let file = ArtifactFile::open(path)
        .map_err(|why| anyhow!("cannot inspect {}: {why}", path.display()))?;
    let description = file.description().map_err(damaged)?;
    let verify = !args.no_verify;
    if verify {
        let digest = file
            .constants_digest(description.constant_bytes.len())
            .map_err(damaged)?;
        if digest != description.constants_sha256 {
            return Err(damaged(
                "its constants do not match their checksum: the artifact is damaged".into(),
            ));
        }
    }
    let value = describe(path, &description, verify);
    if args.json {
        super::write_stdout(&format!("{}\n", serde_json::to_string_pretty(&value)?))
    } else {
        super::write_stdout(&render(&value))
    }
}
