//! The tree ensembles of `ai.onnx.ml` (`TreeEnsembleRegressor` 1/3 and
//! `TreeEnsemble` 5: gradient-boosted trees and random forests exported
//! by skl2onnx, onnxmltools and hummingbird) as a few dense kernels, not a
//! walk per row: every split's test is evaluated at once (a gather of its
//! feature, compared with its threshold: `[N, splits]` of 0/1), then per
//! tree a matmul with a constant `[splits, leaves]` matrix (+1 where the
//! leaf lies under the split's true branch, -1 under its false branch)
//! gives each leaf the count that equals its number of true-branch
//! ancestors exactly when the row reaches it, and the reached leaves'
//! weights are summed (or their minimum or maximum taken) into the
//! targets. The trees are padded to the largest one's splits and leaves,
//! so the work is `trees x splits x leaves` per row: meant for the small
//! and medium ensembles of tabular models.

use super::super::dtype::DType;
use super::super::error::{ImportError, Result, bail};
use super::super::importer::Importer;
use super::super::node::{Node, Value};
use super::super::tensor::{self, Const};
use super::shape::{reshape_value, transpose_value};
use super::{int_attr, one, synthetic};

/// The most elements a tree-path matrix (`trees x splits x leaves`) or a
/// leaf-weight matrix may have.
const MAX_MATRIX: usize = 1 << 26;

/// A branch of a split: another split or a leaf (indices within the tree).
#[derive(Clone, Copy, Debug)]
enum Ref {
    Split(usize),
    Leaf(usize),
}

/// A comparison `x OP value` as the three outcomes it accepts: below,
/// equal, above.
#[derive(Clone, Copy, Debug)]
struct Test {
    below: bool,
    equal: bool,
    above: bool,
    value: f64,
}

#[derive(Clone, Debug)]
struct Split {
    feature: i64,
    /// Any of these holds (one test, or a set membership's equalities).
    tests: Vec<Test>,
    /// A NaN feature takes the true branch (else the false one).
    nan_true: bool,
    on_true: Ref,
    on_false: Ref,
}

#[derive(Clone, Debug, Default)]
struct Tree {
    splits: Vec<Split>,
    /// Each leaf's `(target, weight)` contributions.
    leaves: Vec<Vec<(usize, f64)>>,
    root: Option<Ref>,
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Aggregate {
    Sum,
    Average,
    Min,
    Max,
}

/// The comparison a mode names (BRANCH_LEQ, ...; opset 5's codes 0-5).
fn test(mode: &str, value: f64) -> Option<Test> {
    let (below, equal, above) = match mode {
        "BRANCH_LEQ" | "0" => (true, true, false),
        "BRANCH_LT" | "1" => (true, false, false),
        "BRANCH_GTE" | "2" => (false, true, true),
        "BRANCH_GT" | "3" => (false, false, true),
        "BRANCH_EQ" | "4" => (false, true, false),
        "BRANCH_NEQ" | "5" => (true, false, true),
        _ => return None,
    };
    Some(Test {
        below,
        equal,
        above,
        value,
    })
}

/// The floats of attribute `name`, or of its `_as_tensor` form.
fn floats_or_tensor(node: &Node, name: &str) -> Result<Option<Vec<f64>>> {
    if let Some(t) = node.tensor(&format!("{name}_as_tensor"))? {
        return Ok(Some(tensor::decode(t, None, name)?.f64s()));
    }
    Ok(node
        .floats(name)?
        .map(|v| v.iter().map(|&f| f as f64).collect()))
}

fn strings(node: &Node, name: &str) -> Result<Vec<String>> {
    let Some(a) = node.proto.attribute.iter().find(|a| a.name == name) else {
        return Ok(Vec::new());
    };
    a.strings
        .iter()
        .map(|s| {
            String::from_utf8(s.clone())
                .map_err(|_| ImportError::new(format!("attribute '{name}' is not UTF-8")))
        })
        .collect()
}

fn post_transform_name(node: &Node) -> Result<String> {
    // Opset 5 codes it as an integer, the older ops as a string.
    Ok(match node.int_opt("post_transform") {
        Ok(Some(code)) => match code {
            0 => "NONE",
            1 => "SOFTMAX",
            2 => "LOGISTIC",
            3 => "SOFTMAX_ZERO",
            4 => "PROBIT",
            other => bail!("post_transform {other} is not one of 0 to 4"),
        }
        .to_string(),
        Ok(None) => "NONE".to_string(),
        Err(_) => node.string("post_transform", "NONE")?,
    })
}

/// `TreeEnsembleRegressor` (ai.onnx.ml 1 and 3): the nodes listed with
/// their tree and node ids, the leaves' weights in the `target_*` lists.
pub fn tree_ensemble_regressor(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let ints = |name: &str| -> Result<Vec<i64>> { Ok(node.ints(name)?.unwrap_or_default()) };
    let tree_ids = ints("nodes_treeids")?;
    let node_ids = ints("nodes_nodeids")?;
    let features = ints("nodes_featureids")?;
    let true_ids = ints("nodes_truenodeids")?;
    let false_ids = ints("nodes_falsenodeids")?;
    let tracks = ints("nodes_missing_value_tracks_true")?;
    let modes = strings(node, "nodes_modes")?;
    let values = floats_or_tensor(node, "nodes_values")?.unwrap_or_default();
    let count = tree_ids.len();
    for (name, len) in [
        ("nodes_nodeids", node_ids.len()),
        ("nodes_featureids", features.len()),
        ("nodes_modes", modes.len()),
        ("nodes_truenodeids", true_ids.len()),
        ("nodes_falsenodeids", false_ids.len()),
    ] {
        if len != count {
            bail!("{name} has {len} values for the {count} nodes of nodes_treeids");
        }
    }
    if !values.is_empty() && values.len() != count {
        bail!("nodes_values has {} values for {count} nodes", values.len());
    }
    if !tracks.is_empty() && tracks.len() != count {
        bail!(
            "nodes_missing_value_tracks_true has {} values for {count} nodes",
            tracks.len()
        );
    }
    let target_trees = ints("target_treeids")?;
    let target_nodes = ints("target_nodeids")?;
    let target_ids = ints("target_ids")?;
    let target_weights = floats_or_tensor(node, "target_weights")?.unwrap_or_default();
    let targets = node.int("n_targets", 1)?;
    if !(1..=1 << 20).contains(&targets) {
        bail!("n_targets {targets} is out of range");
    }
    let n = target_trees.len();
    if target_nodes.len() != n || target_ids.len() != n || target_weights.len() != n {
        bail!(
            "target_treeids, target_nodeids, target_ids and target_weights must have one value per leaf weight ({n}, {}, {}, {})",
            target_nodes.len(),
            target_ids.len(),
            target_weights.len()
        );
    }
    // Trees in the order of their ids, each root its first node.
    let mut ids: Vec<i64> = tree_ids.clone();
    ids.sort_unstable();
    ids.dedup();
    let mut trees = Vec::with_capacity(ids.len());
    for &tree in &ids {
        let members: Vec<usize> = (0..count).filter(|&i| tree_ids[i] == tree).collect();
        let mut slot = std::collections::HashMap::new();
        let (mut splits, mut leaves) = (0usize, 0usize);
        for &i in &members {
            let r = if modes[i] == "LEAF" {
                leaves += 1;
                Ref::Leaf(leaves - 1)
            } else {
                splits += 1;
                Ref::Split(splits - 1)
            };
            if slot.insert(node_ids[i], r).is_some() {
                bail!("tree {tree} has two nodes of id {}", node_ids[i]);
            }
        }
        let find = |id: i64| -> Result<Ref> {
            slot.get(&id)
                .copied()
                .ok_or_else(|| ImportError::new(format!("tree {tree} has no node of id {id}")))
        };
        let mut t = Tree {
            root: Some(find(node_ids[members[0]])?),
            leaves: vec![Vec::new(); leaves],
            ..Tree::default()
        };
        for &i in &members {
            if modes[i] == "LEAF" {
                continue;
            }
            let value = values.get(i).copied().unwrap_or(0.0);
            let Some(test) = test(&modes[i], value) else {
                bail!(
                    "nodes_modes '{}' is not one of BRANCH_LEQ, BRANCH_LT, BRANCH_GTE, BRANCH_GT, BRANCH_EQ, BRANCH_NEQ, LEAF",
                    modes[i]
                )
            };
            t.splits.push(Split {
                feature: features[i],
                tests: vec![test],
                nan_true: tracks.get(i).is_some_and(|&v| v != 0),
                on_true: find(true_ids[i])?,
                on_false: find(false_ids[i])?,
            });
        }
        for k in 0..n {
            if target_trees[k] != tree {
                continue;
            }
            let Ref::Leaf(leaf) = find(target_nodes[k])? else {
                bail!(
                    "target_nodeids names node {} of tree {tree}, which is not a LEAF",
                    target_nodes[k]
                )
            };
            if !(0..targets).contains(&target_ids[k]) {
                bail!(
                    "target_ids {} is out of range for n_targets {targets}",
                    target_ids[k]
                );
            }
            t.leaves[leaf].push((target_ids[k] as usize, target_weights[k]));
        }
        trees.push(t);
    }
    if let Some(k) = target_trees.iter().find(|t| !ids.contains(t)) {
        bail!("target_treeids names tree {k}, which has no nodes");
    }
    let aggregate = match node.string("aggregate_function", "SUM")?.as_str() {
        "SUM" => Aggregate::Sum,
        "AVERAGE" => Aggregate::Average,
        "MIN" => Aggregate::Min,
        "MAX" => Aggregate::Max,
        other => bail!("aggregate_function '{other}' is not one of SUM, AVERAGE, MIN, MAX"),
    };
    let base = floats_or_tensor(node, "base_values")?;
    let x = node.input(0)?.clone();
    let y = lower(
        imp,
        &x,
        &trees,
        targets as usize,
        aggregate,
        base.as_deref(),
        &post_transform_name(node)?,
        DType::F32,
    )?;
    one(y)
}

/// `TreeEnsemble` (ai.onnx.ml 5): splits and leaves in their own lists,
/// trees by their roots; set membership splits.
pub fn tree_ensemble(imp: &mut Importer, node: &Node) -> Result<Vec<Value>> {
    let ints = |name: &str| -> Result<Vec<i64>> { Ok(node.ints(name)?.unwrap_or_default()) };
    let tensor_values = |name: &str| -> Result<Vec<f64>> {
        match node.tensor(name)? {
            Some(t) => Ok(tensor::decode(t, None, name)?.f64s()),
            None => Ok(Vec::new()),
        }
    };
    let features = ints("nodes_featureids")?;
    let true_ids = ints("nodes_truenodeids")?;
    let false_ids = ints("nodes_falsenodeids")?;
    let true_leaf = ints("nodes_trueleafs")?;
    let false_leaf = ints("nodes_falseleafs")?;
    let tracks = ints("nodes_missing_value_tracks_true")?;
    let roots = ints("tree_roots")?;
    let leaf_targets = ints("leaf_targetids")?;
    let leaf_weights = tensor_values("leaf_weights")?;
    let splits = tensor_values("nodes_splits")?;
    let modes: Vec<i64> = match node.tensor("nodes_modes")? {
        Some(t) => tensor::decode(t, None, "nodes_modes")?.i64s(),
        None => Vec::new(),
    };
    let members = tensor_values("membership_values")?;
    let count = features.len();
    for (name, len) in [
        ("nodes_truenodeids", true_ids.len()),
        ("nodes_falsenodeids", false_ids.len()),
        ("nodes_trueleafs", true_leaf.len()),
        ("nodes_falseleafs", false_leaf.len()),
        ("nodes_modes", modes.len()),
        ("nodes_splits", splits.len()),
    ] {
        if len != count {
            bail!("{name} has {len} values for the {count} nodes of nodes_featureids");
        }
    }
    if !tracks.is_empty() && tracks.len() != count {
        bail!(
            "nodes_missing_value_tracks_true has {} values for {count} nodes",
            tracks.len()
        );
    }
    if leaf_targets.len() != leaf_weights.len() {
        bail!(
            "leaf_targetids has {} values, leaf_weights {}",
            leaf_targets.len(),
            leaf_weights.len()
        );
    }
    let targets = node.int("n_targets", 0)?;
    if !(1..=1 << 20).contains(&targets) {
        bail!("n_targets {targets} is out of range (it is required)");
    }
    // Each MEMBER split's values, in node order, each set ended by a NaN.
    let mut sets = members.split(|v| v.is_nan());
    let mut member_sets: Vec<Option<Vec<f64>>> = vec![None; count];
    for i in 0..count {
        if modes[i] == 6 {
            let Some(set) = sets.next() else {
                bail!("membership_values has no set for MEMBER node {i}")
            };
            member_sets[i] = Some(set.to_vec());
        }
    }
    let mut trees = Vec::with_capacity(roots.len());
    for &root in &roots {
        // Walk from the root, renumbering this tree's splits and leaves.
        let mut t = Tree::default();
        let mut seen = std::collections::HashMap::new();
        let mut leaf_slot = std::collections::HashMap::new();
        let mut stack = Vec::new();
        // A root that is a leaf: both branches the same leaf.
        let root_is_leaf = usize::try_from(root)
            .ok()
            .filter(|&r| r < count)
            .is_some_and(|r| {
                true_leaf[r] != 0 && false_leaf[r] != 0 && true_ids[r] == false_ids[r]
            });
        let mut resolve =
            |id: i64, leaf: bool, t: &mut Tree, stack: &mut Vec<(usize, usize)>| -> Result<Ref> {
                if leaf {
                    let Some(&target) = usize::try_from(id).ok().and_then(|i| leaf_targets.get(i))
                    else {
                        bail!(
                            "leaf {id} is out of range for the {} leaves",
                            leaf_targets.len()
                        )
                    };
                    if !(0..targets).contains(&target) {
                        bail!("leaf_targetids {target} is out of range for n_targets {targets}");
                    }
                    let next = t.leaves.len();
                    let slot = *leaf_slot.entry(id).or_insert(next);
                    if slot == next {
                        t.leaves
                            .push(vec![(target as usize, leaf_weights[id as usize])]);
                    }
                    return Ok(Ref::Leaf(slot));
                }
                let Some(index) = usize::try_from(id).ok().filter(|&i| i < count) else {
                    bail!("node {id} is out of range for the {count} nodes")
                };
                if seen.contains_key(&index) {
                    bail!("node {index} is reached twice: the nodes do not form trees");
                }
                let slot = seen.len();
                seen.insert(index, slot);
                stack.push((index, slot));
                Ok(Ref::Split(slot))
            };
        if root_is_leaf {
            t.root = Some(resolve(true_ids[root as usize], true, &mut t, &mut stack)?);
            trees.push(t);
            continue;
        }
        t.root = Some(resolve(root, false, &mut t, &mut stack)?);
        // Splits are numbered in the order they are reached (a stack, so
        // the numbering is fixed by the walk); fill them in that order.
        let mut pending: Vec<(usize, Split)> = Vec::new();
        while let Some((index, slot)) = stack.pop() {
            let tests = match &member_sets[index] {
                Some(set) => set
                    .iter()
                    .map(|&v| Test {
                        below: false,
                        equal: true,
                        above: false,
                        value: v,
                    })
                    .collect(),
                None => match test(&modes[index].to_string(), splits[index]) {
                    Some(test) => vec![test],
                    None => bail!(
                        "nodes_modes {} of node {index} is not one of 0 to 6",
                        modes[index]
                    ),
                },
            };
            let on_true = resolve(true_ids[index], true_leaf[index] != 0, &mut t, &mut stack)?;
            let on_false = resolve(false_ids[index], false_leaf[index] != 0, &mut t, &mut stack)?;
            pending.push((
                slot,
                Split {
                    feature: features[index],
                    tests,
                    nan_true: tracks.get(index).is_some_and(|&v| v != 0),
                    on_true,
                    on_false,
                },
            ));
        }
        pending.sort_by_key(|(slot, _)| *slot);
        t.splits = pending.into_iter().map(|(_, s)| s).collect();
        trees.push(t);
    }
    let aggregate = match node.int("aggregate_function", 1)? {
        0 => Aggregate::Average,
        1 => Aggregate::Sum,
        2 => Aggregate::Min,
        3 => Aggregate::Max,
        other => bail!("aggregate_function {other} is not one of 0 (AVERAGE) to 3 (MAX)"),
    };
    let x = node.input(0)?.clone();
    let out = match x.dtype() {
        DType::F64 => DType::F64,
        DType::F16 | DType::BF16 | DType::F32 => x.dtype(),
        other => bail!("TreeEnsemble's input must be float, double or float16, not {other}"),
    };
    let y = lower(
        imp,
        &x,
        &trees,
        targets as usize,
        aggregate,
        None,
        &post_transform_name(node)?,
        out,
    )?;
    one(y)
}

fn cast(imp: &mut Importer, v: Value, to: DType) -> Result<Value> {
    if v.dtype() == to {
        return Ok(v);
    }
    synthetic(
        imp,
        "Cast",
        vec![v],
        vec![int_attr("to", to.onnx_code() as i64)],
    )
}

/// The ensemble on X (`[N, F]`, or `[F]` for one row), as `[N, targets]`
/// of type `out`.
#[allow(clippy::too_many_arguments)]
fn lower(
    imp: &mut Importer,
    x: &Value,
    trees: &[Tree],
    targets: usize,
    aggregate: Aggregate,
    base: Option<&[f64]>,
    post: &str,
    out: DType,
) -> Result<Value> {
    if trees.is_empty() {
        bail!("the ensemble has no trees");
    }
    let (rows, features) = match x.shape().as_slice() {
        [f] => (1, *f),
        [n, f] => (*n, *f),
        shape => bail!("the input must be [N, F] or [F], not {shape:?}"),
    };
    if !matches!(
        x.dtype(),
        DType::F32 | DType::F64 | DType::F16 | DType::BF16 | DType::I32 | DType::I64
    ) {
        bail!(
            "the input must be float, double or integer, not {}",
            x.dtype()
        );
    }
    if let Some(b) = base
        && !b.is_empty()
        && b.len() != targets
    {
        bail!("base_values has {} values for {targets} targets", b.len());
    }
    // Comparisons in double for double inputs, else in float.
    let compute = if x.dtype() == DType::F64 {
        DType::F64
    } else {
        DType::F32
    };
    let x = cast(imp, x.clone(), compute)?;
    let x = reshape_value(imp, &x, &[rows, features])?;
    let t_count = trees.len();
    let width = trees
        .iter()
        .map(|t| t.splits.len())
        .max()
        .unwrap_or(0)
        .max(1);
    let leaves = trees
        .iter()
        .map(|t| t.leaves.len())
        .max()
        .unwrap_or(0)
        .max(1);
    if t_count.saturating_mul(width).saturating_mul(leaves) > MAX_MATRIX
        || t_count.saturating_mul(leaves).saturating_mul(targets) > MAX_MATRIX
    {
        bail!(
            "the ensemble of {t_count} trees (up to {width} splits and {leaves} leaves each) is larger than tcc's dense tree lowering takes ({MAX_MATRIX} elements per matrix)"
        );
    }
    // Every test of every (padded) split, in tree-major order.
    let (mut feature, mut value, mut masks, mut nan, mut owner) = (
        Vec::new(),
        Vec::new(),
        [Vec::new(), Vec::new(), Vec::new()],
        Vec::new(),
        Vec::new(),
    );
    for (ti, tree) in trees.iter().enumerate() {
        for si in 0..width {
            let slot = (ti * width + si) as i64;
            match tree.splits.get(si) {
                Some(split) => {
                    if !(0..features).contains(&split.feature) {
                        bail!(
                            "a split reads feature {} of an input of {features} features",
                            split.feature
                        );
                    }
                    for (k, test) in split.tests.iter().enumerate() {
                        feature.push(split.feature);
                        value.push(test.value);
                        masks[0].push(f64::from(u8::from(test.below)));
                        masks[1].push(f64::from(u8::from(test.equal)));
                        masks[2].push(f64::from(u8::from(test.above)));
                        // The NaN rule once per split.
                        nan.push(f64::from(u8::from(split.nan_true && k == 0)));
                        owner.push(slot);
                    }
                    if split.tests.is_empty() {
                        // An empty membership set: never true (but NaN's rule).
                        feature.push(split.feature);
                        value.push(0.0);
                        masks.iter_mut().for_each(|m| m.push(0.0));
                        nan.push(f64::from(u8::from(split.nan_true)));
                        owner.push(slot);
                    }
                }
                None => {
                    feature.push(0);
                    value.push(0.0);
                    masks.iter_mut().for_each(|m| m.push(0.0));
                    nan.push(0.0);
                    owner.push(slot);
                }
            }
        }
    }
    let entries = feature.len() as i64;
    let row = |values: &[f64], dtype: DType| {
        Value::constant(Const::from_f64(dtype, vec![1, values.len() as i64], values))
    };
    let taken = synthetic(
        imp,
        "Gather",
        vec![
            x,
            Value::constant(Const::from_i64(DType::I64, vec![entries], &feature)),
        ],
        vec![int_attr("axis", 1)],
    )?;
    let thresholds = row(&value, compute);
    let mut cond: Option<Value> = None;
    for (op, mask) in ["Less", "Equal", "Greater"].into_iter().zip(&masks) {
        if mask.iter().all(|&m| m == 0.0) {
            continue;
        }
        let hit = synthetic(imp, op, vec![taken.clone(), thresholds.clone()], vec![])?;
        let hit = cast(imp, hit, DType::F32)?;
        let hit = synthetic(imp, "Mul", vec![hit, row(mask, DType::F32)], vec![])?;
        cond = Some(match cond {
            None => hit,
            Some(c) => synthetic(imp, "Add", vec![c, hit], vec![])?,
        });
    }
    if nan.iter().any(|&v| v != 0.0) {
        let is_nan = synthetic(imp, "IsNaN", vec![taken.clone()], vec![])?;
        let is_nan = cast(imp, is_nan, DType::F32)?;
        let hit = synthetic(imp, "Mul", vec![is_nan, row(&nan, DType::F32)], vec![])?;
        cond = Some(match cond {
            None => hit,
            Some(c) => synthetic(imp, "Add", vec![c, hit], vec![])?,
        });
    }
    let splits_total = (t_count * width) as i64;
    let cond = match cond {
        Some(c) => c,
        None => Value::constant(Const::splat_f64(DType::F32, vec![rows, entries], 0.0)),
    };
    // Membership sets: a split holds when any of its tests does.
    let cond = if entries != splits_total {
        let mut gather = vec![0.0; (entries * splits_total) as usize];
        for (e, &o) in owner.iter().enumerate() {
            gather[e * splits_total as usize + o as usize] = 1.0;
        }
        let any = synthetic(
            imp,
            "MatMul",
            vec![
                cond,
                Value::constant(Const::from_f64(
                    DType::F32,
                    vec![entries, splits_total],
                    &gather,
                )),
            ],
            vec![],
        )?;
        synthetic(
            imp,
            "Min",
            vec![
                any,
                Value::constant(Const::from_f64(DType::F32, vec![1, 1], &[1.0])),
            ],
            vec![],
        )?
    } else {
        cond
    };
    // Per tree: +1/-1 for the leaves under each split's true/false branch,
    // and each leaf's count of true-branch ancestors (padding: unreachable).
    let mut paths = vec![0.0; t_count * width * leaves];
    let mut wanted = vec![f64::from(u32::MAX); t_count * leaves];
    for (ti, tree) in trees.iter().enumerate() {
        let Some(root) = tree.root else { continue };
        let mut stack: Vec<(Ref, Vec<(usize, bool)>)> = vec![(root, Vec::new())];
        let mut visited = 0usize;
        while let Some((at, path)) = stack.pop() {
            visited += 1;
            if visited > tree.splits.len() + tree.leaves.len() + 1 || path.len() > tree.splits.len()
            {
                bail!("tree {ti} has a cycle: its nodes do not form a tree");
            }
            match at {
                Ref::Leaf(leaf) => {
                    if wanted[ti * leaves + leaf] != f64::from(u32::MAX) {
                        bail!(
                            "tree {ti} reaches a leaf by two paths: its nodes do not form a tree"
                        );
                    }
                    for &(split, branch) in &path {
                        paths[(ti * width + split) * leaves + leaf] =
                            if branch { 1.0 } else { -1.0 };
                    }
                    wanted[ti * leaves + leaf] = path.iter().filter(|(_, b)| *b).count() as f64;
                }
                Ref::Split(split) => {
                    let Some(s) = tree.splits.get(split) else {
                        bail!("tree {ti} names split {split}, which it does not have")
                    };
                    let mut on_true = path.clone();
                    on_true.push((split, true));
                    let mut on_false = path;
                    on_false.push((split, false));
                    stack.push((s.on_true, on_true));
                    stack.push((s.on_false, on_false));
                }
            }
        }
    }
    let cond = reshape_value(imp, &cond, &[rows, t_count as i64, width as i64])?;
    let cond = transpose_value(imp, &cond, &[1, 0, 2])?;
    let counts = synthetic(
        imp,
        "MatMul",
        vec![
            cond,
            Value::constant(Const::from_f64(
                DType::F32,
                vec![t_count as i64, width as i64, leaves as i64],
                &paths,
            )),
        ],
        vec![],
    )?;
    let reached = synthetic(
        imp,
        "Equal",
        vec![
            counts,
            Value::constant(Const::from_f64(
                DType::F32,
                vec![t_count as i64, 1, leaves as i64],
                &wanted,
            )),
        ],
        vec![],
    )?;
    // The leaves' weights per target, [trees, leaves, targets], the
    // aggregate's identity where a leaf gives a target nothing.
    let identity = match aggregate {
        Aggregate::Sum | Aggregate::Average => 0.0,
        Aggregate::Min => f64::INFINITY,
        Aggregate::Max => f64::NEG_INFINITY,
    };
    let mut weights = vec![identity; t_count * leaves * targets];
    for (ti, tree) in trees.iter().enumerate() {
        for (li, leaf) in tree.leaves.iter().enumerate() {
            for &(target, w) in leaf {
                let at = &mut weights[(ti * leaves + li) * targets + target];
                *at = match aggregate {
                    Aggregate::Sum | Aggregate::Average => *at + w,
                    Aggregate::Min => at.min(w),
                    Aggregate::Max => at.max(w),
                };
            }
        }
    }
    // Which targets a reached leaf gives a weight: onnxruntime outputs 0
    // (before the post transform, base_values not added) for the others.
    let mut gives = vec![0.0; t_count * leaves * targets];
    for (ti, tree) in trees.iter().enumerate() {
        for (li, leaf) in tree.leaves.iter().enumerate() {
            for &(target, _) in leaf {
                gives[(ti * leaves + li) * targets + target] = 1.0;
            }
        }
    }
    let reached_f32 = cast(imp, reached.clone(), DType::F32)?;
    let given = synthetic(
        imp,
        "MatMul",
        vec![
            reached_f32.clone(),
            Value::constant(Const::from_f64(
                DType::F32,
                vec![t_count as i64, leaves as i64, targets as i64],
                &gives,
            )),
        ],
        vec![],
    )?;
    let given = synthetic(
        imp,
        "ReduceMax",
        vec![given, Value::constant(Const::i64_vector(&[0]))],
        vec![int_attr("keepdims", 0)],
    )?;
    let given = synthetic(
        imp,
        "Greater",
        vec![
            given,
            Value::constant(Const::from_f64(DType::F32, vec![1, 1], &[0.0])),
        ],
        vec![],
    )?;
    let scores =
        if compute == DType::F32 && matches!(aggregate, Aggregate::Sum | Aggregate::Average) {
            // One batched matmul of the reached leaves (0/1) with the weights.
            let reached = reached_f32;
            let per_tree = synthetic(
                imp,
                "MatMul",
                vec![
                    reached,
                    Value::constant(Const::from_f64(
                        DType::F32,
                        vec![t_count as i64, leaves as i64, targets as i64],
                        &weights,
                    )),
                ],
                vec![],
            )?;
            synthetic(
                imp,
                "ReduceSum",
                vec![per_tree, Value::constant(Const::i64_vector(&[0]))],
                vec![int_attr("keepdims", 0)],
            )?
        } else {
            // The reached leaf's weights selected (NaN-free), then aggregated
            // over trees and leaves.
            let reached = reshape_value(imp, &reached, &[t_count as i64, rows, leaves as i64, 1])?;
            let selected = synthetic(
                imp,
                "Where",
                vec![
                    reached,
                    Value::constant(Const::from_f64(
                        compute,
                        vec![t_count as i64, 1, leaves as i64, targets as i64],
                        &weights,
                    )),
                    Value::constant(Const::from_f64(compute, vec![1, 1, 1, 1], &[identity])),
                ],
                vec![],
            )?;
            let reduce = match aggregate {
                Aggregate::Sum | Aggregate::Average => "ReduceSum",
                Aggregate::Min => "ReduceMin",
                Aggregate::Max => "ReduceMax",
            };
            synthetic(
                imp,
                reduce,
                vec![selected, Value::constant(Const::i64_vector(&[0, 2]))],
                vec![int_attr("keepdims", 0)],
            )?
        };
    let scores = cast(imp, scores, compute)?;
    let mut y = if aggregate == Aggregate::Average {
        synthetic(
            imp,
            "Div",
            vec![
                scores,
                Value::constant(Const::from_f64(compute, vec![1, 1], &[t_count as f64])),
            ],
            vec![],
        )?
    } else {
        scores
    };
    if let Some(b) = base.filter(|b| !b.is_empty()) {
        y = synthetic(
            imp,
            "Add",
            vec![
                y,
                Value::constant(Const::from_f64(compute, vec![1, targets as i64], b)),
            ],
            vec![],
        )?;
    }
    y = synthetic(
        imp,
        "Where",
        vec![
            given,
            y,
            Value::constant(Const::from_f64(compute, vec![1, 1], &[0.0])),
        ],
        vec![],
    )?;
    y = match post {
        "NONE" => y,
        "LOGISTIC" => synthetic(imp, "Sigmoid", vec![y], vec![])?,
        "SOFTMAX" => synthetic(imp, "Softmax", vec![y], vec![int_attr("axis", -1)])?,
        other => {
            bail!("post_transform {other} is not supported (tcc takes NONE, LOGISTIC and SOFTMAX)")
        }
    };
    cast(imp, y, out)
}
