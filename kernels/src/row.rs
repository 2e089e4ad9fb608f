//! Pieces shared by the one-work-group-per-row templates (softmax, row
//! reductions): the kernel prologue and the local-memory tree reduction.

use std::fmt::Write as _;

/// Writes the kernel header, the `scratch` array of `w` floats, `row` (the
/// work-group's row), `lid`, and the per-row `setup` statements.
pub(crate) fn row_kernel_prologue(
    out: &mut String,
    comment: &str,
    name: &str,
    parameters: &str,
    w: u32,
    setup: &str,
) {
    let _ = writeln!(out, "{comment}");
    let _ = writeln!(
        out,
        "__kernel __attribute__((reqd_work_group_size({w}, 1, 1)))"
    );
    let _ = writeln!(out, "void {name}({parameters}) {{");
    let _ = writeln!(out, "  __local float scratch[{w}];");
    let _ = writeln!(out, "  const tcc_index row = (tcc_index)get_group_id(0);");
    let _ = writeln!(out, "  const int lid = (int)get_local_id(0);");
    for line in setup.lines() {
        let _ = writeln!(out, "  {line}");
    }
}

/// Writes the reduction of each work-item's `partial` into `scratch[0]`:
/// halving steps that fold `scratch[lid + step]` in with `combined` (an
/// expression of `scratch[lid]` and `scratch[lid + step]`).
pub(crate) fn tree_reduce(out: &mut String, w: u32, partial: &str, combined: &str) {
    let _ = writeln!(
        out,
        "  scratch[lid] = {partial};\n  barrier(CLK_LOCAL_MEM_FENCE);"
    );
    let _ = writeln!(out, "  for (int step = {}; step > 0; step >>= 1) {{", w / 2);
    let _ = writeln!(out, "    if (lid < step) scratch[lid] = {combined};");
    let _ = writeln!(out, "    barrier(CLK_LOCAL_MEM_FENCE);\n  }}");
}
