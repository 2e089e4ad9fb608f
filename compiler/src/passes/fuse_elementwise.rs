//! `tcc-fuse-elementwise{max-ops=N}`: upstream's elementwise fusion
//! (`linalg-fuse-elementwise-ops`: producer-consumer fusion of generics,
//! reshape propagation, fill and constant folding) with a cap on the size
//! of a fused body.
//!
//! Fusing an N-op elementwise chain makes one kernel of N operations, and
//! a driver's first build of a kernel grows faster than linearly with its
//! size (PoCL: 48 s at N = 500, over 300 s at N = 3000). With the cap two
//! generics are fused only while the fused body stays within `max-ops`
//! operations, so a long chain becomes several kernels of bounded size
//! whose builds add up linearly; the extra kernels cost one intermediate
//! buffer each. The phase pipeline passes the target's cap
//! (`Target::max_fused_ops`); 0 means no cap, upstream's behaviour.
//!
//! It also leaves an int8 operand of a reduction unfused (the quantize
//! step in front of a `tcc-quantize-int8` matmul), so that the int8
//! templates read plain bytes instead of computing them from floats.
//! With `recompute-broadcast-math=false` (the CPU targets' choice, `auto`
//! asks the module's target: `TargetConfig::recompute_broadcast_math`) a
//! producer whose body computes transcendental math or divides stays a
//! kernel of its own when its consumer reads it broadcast over 16 or more
//! times its iterations: fused, the math runs once per element it is
//! broadcast to (a squeeze-and-excitation gate's sigmoid once per pixel).
//! On a GPU that math is cheap beside the memory traffic and the launch a
//! kernel more would cost; on a CPU it is the other way round.
//!
//! And it fuses nothing into a contraction (a matmul that reshape
//! propagation turned into a generic): its body must stay a multiply-add
//! for `tcc-collapse-contractions` to give it back its named form
//! (ResNet-50's classifier with the average pool's division fused in ran
//! as a reduction loop nest).

use melior::Context;
use melior::ir::operation::OperationLike;

use crate::config::Target;

use super::pass::{
    PassError, PassOptionInfo, PassOptionKind, PassOptions, PassResult, Root, TccPass,
};

pub struct FuseElementwise;

#[derive(Debug, Default)]
pub struct FuseElementwiseOptions {
    /// The most operations one fused body may hold (0: no cap).
    pub max_ops: i64,
    /// Whether a producer of costly math fuses into a consumer that
    /// broadcasts it; `None`: the module's target decides.
    pub recompute_broadcast_math: Option<bool>,
}

impl PassOptions for FuseElementwiseOptions {
    const OPTIONS: &'static [PassOptionInfo] = &[
        PassOptionInfo {
            name: "max-ops",
            kind: PassOptionKind::Int,
            default: "0",
            description: "The most operations one fused body may hold (0: no cap)",
        },
        PassOptionInfo {
            name: "recompute-broadcast-math",
            kind: PassOptionKind::String,
            default: "auto",
            description: "Fuse a producer of transcendental math or divisions into a consumer that reads it broadcast over 16 or more times its iterations (recomputing it per element): auto (the module's tcc.target decides: not on pocl-cpu), true or false",
        },
    ];

    fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        match key {
            "max-ops" => {
                self.max_ops = value
                    .parse::<i64>()
                    .ok()
                    .filter(|n| *n >= 0)
                    .ok_or_else(|| {
                        format!("max-ops must be a count of operations (0: no cap), not '{value}'")
                    })?;
                Ok(())
            }
            "recompute-broadcast-math" => {
                self.recompute_broadcast_math = match value {
                    "auto" => None,
                    "true" => Some(true),
                    "false" => Some(false),
                    other => {
                        return Err(format!(
                            "recompute-broadcast-math must be auto, true or false (got '{other}')"
                        ));
                    }
                };
                Ok(())
            }
            _ => Err(format!("unknown option '{key}'")),
        }
    }
}

impl TccPass for FuseElementwise {
    const ARGUMENT: &'static str = "tcc-fuse-elementwise";
    const SUMMARY: &'static str = "Fuse elementwise linalg generics (upstream's patterns) while a fused body stays within max-ops operations, and not into an int8 operand of a reduction nor into a contraction; on CPUs, a producer of transcendental math or divisions not into a consumer that reads it broadcast over 16 or more times its iterations (it would recompute the math per element)";
    const DEPENDENT_DIALECTS: &'static [&'static str] = &["linalg", "tensor", "affine", "arith"];
    type Options = FuseElementwiseOptions;

    fn run<'c>(
        &self,
        _context: &'c Context,
        root: Root<'c>,
        options: &FuseElementwiseOptions,
    ) -> PassResult<'c> {
        let recompute = options.recompute_broadcast_math.unwrap_or_else(|| {
            Target::of_module(root)
                .unwrap_or_default()
                .recompute_broadcast_math()
        });
        if !unsafe { tcc_dialects::fuse_elementwise(root.to_raw(), options.max_ops, recompute) } {
            return Err(PassError::at(
                root.location(),
                "elementwise fusion did not converge",
            ));
        }
        Ok(())
    }
}
