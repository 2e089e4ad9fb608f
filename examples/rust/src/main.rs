//! Calls two models compiled at build time through the typed bindings
//! tcc-build generated: `mlp` (embedded bytes) and `cnn` (a linked static
//! library). Neither reads a file at run time. Prints each result and
//! checks a few properties (softmax rows sum to 1; a wrong-length input is
//! refused with a message).

include!(concat!(env!("OUT_DIR"), "/tcc_models.rs"));

use tcc_runtime::{DeviceSelector, Runtime};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runtime = Runtime::new(DeviceSelector::from_flag_or_env(None))?;
    println!("device: {}", runtime.device().name);

    let mut mlp = mlp::Mlp::new(&runtime)?;
    let x: Vec<mlp::mlp_io::Input0> = (0..mlp::mlp_io::INPUT0_LEN).map(|i| (i % 7) as f32 * 0.1).collect();
    let y = mlp.mlp(&x)?;
    assert_eq!(y.len(), mlp::mlp_io::OUTPUT0_LEN);
    println!("mlp {:?} -> {:?}: {:?}", mlp::mlp_io::INPUT0_SHAPE, mlp::mlp_io::OUTPUT0_SHAPE, &y[..4]);
    // The head is a softmax over the last axis: every row sums to 1.
    let row = mlp::mlp_io::OUTPUT0_SHAPE[2];
    for (r, chunk) in y.chunks(row).enumerate() {
        let sum: f32 = chunk.iter().sum();
        assert!((sum - 1.0).abs() < 1e-4, "row {r} sums to {sum}");
    }
    // A slice of the wrong length is an error, not a crash.
    let e = mlp.mlp(&x[1..]).unwrap_err().to_string();
    assert!(e.contains("input 0 (input0) of @mlp: 1x4x16xf32 needs 64 elements, got 63"), "{e}");

    let mut cnn = cnn::Cnn::new(&runtime)?;
    let image = vec![0.5f32; cnn::cnn_io::INPUT0_LEN];
    let logits = cnn.cnn(&image)?;
    println!("cnn {:?} -> {:?}: {:?}", cnn::cnn_io::INPUT0_SHAPE, cnn::cnn_io::OUTPUT0_SHAPE, &logits[..4]);
    assert!(logits.iter().all(|v| v.is_finite()));
    println!("ok");
    Ok(())
}
