//! The TMA stage copy shared by the Hopper `wgmma` bodies (TF32
//! `wgmma_large`, FP16/BF16 `wgmma_half`): work-item 0 arms a stage's
//! mbarrier with the stage's bytes and issues one bulk tensor copy of A's
//! tile and one per box of B's columns, all completing on that mbarrier
//! (only B's where the work-items copy A themselves: the FP16/BF16 body's
//! implicit-GEMM convolutions).

use std::fmt::Write as _;

/// A body's stage geometry (bytes and elements as its tiles lay them out).
#[derive(Clone, Copy)]
pub(super) struct TmaStage {
    pub stages: u32,
    pub stage_bytes: u32,
    pub stage_k: u32,
    pub a_tile_bytes: u32,
    pub b_box_bytes: u32,
    pub b_box_columns: u32,
    /// B boxes per stage (the tile's columns / `b_box_columns`).
    pub boxes: u32,
    /// Whether the TMA copies A's tile too (else the work-items do, and
    /// the mbarrier counts B's bytes only).
    pub a_by_tma: bool,
}

/// Work-item 0's copy of k tile `unit` into its stage (`unit % stages`):
/// one bulk tensor copy of A (box origin k `stage_k unit`, row `row0`)
/// and `boxes` of B (column `col0 + b_box_columns box`, k `stage_k unit`).
pub(super) fn copy_stage(out: &mut String, unit: &str, s: &TmaStage) {
    copy_stage_from(out, unit, None, s);
}

/// [`copy_stage`] of a work-group whose k tiles start at element
/// `k_origin` of K (a split-K slice): the stage is still `unit % stages`,
/// the boxes' k origin `stage_k unit + k_origin`.
pub(super) fn copy_stage_from(out: &mut String, unit: &str, k_origin: Option<&str>, s: &TmaStage) {
    let TmaStage {
        stages,
        stage_bytes,
        stage_k,
        a_tile_bytes,
        b_box_bytes,
        b_box_columns,
        boxes,
        a_by_tma,
    } = *s;
    let k = match k_origin {
        Some(origin) => format!("(int)({unit}) * {stage_k} + {origin}"),
        None => format!("(int)({unit}) * {stage_k}"),
    };
    let (expected, a_copy) = if a_by_tma {
        (
            stage_bytes,
            format!(
                "\n      __asm__ volatile(\"cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {{%2, %3}}], [%4];\"
                       :: \"r\"(st), \"l\"(a_map), \"r\"({k}), \"r\"((int)row0), \"r\"(full) : \"memory\");"
            ),
        )
    } else {
        (boxes * b_box_bytes, String::new())
    };
    let _ = writeln!(
        out,
        "    {{
      const uint slot = (uint)({unit}) % {stages}u;
      const uint st = stages + slot * {stage_bytes}u;
      const uint full = (uint)(ulong)&tile_full[slot];
      __asm__ volatile(\"mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], {expected};\" :: \"r\"(full) : \"memory\");{a_copy}
      #pragma unroll
      for (int box = 0; box < {boxes}; ++box)
        __asm__ volatile(\"cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {{%2, %3}}], [%4];\"
                         :: \"r\"(st + {a_tile_bytes}u + (uint)box * {b_box_bytes}u), \"l\"(b_map), \"r\"((int)col0 + {b_box_columns} * box),
                            \"r\"({k}), \"r\"(full) : \"memory\");
    }}",
    );
}
