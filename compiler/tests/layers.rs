//! The layers of `compiler/src` (docs/architecture.md, "Layers"): each
//! top-level folder (or file) may import only folders of lower layers, and
//! no import circle spans two folders.
//!
//! Every `.rs` file under `compiler/src` (but `bin/`, whose programs use
//! the library from outside) is parsed with `syn`; every path in it (`use`
//! trees, types, expressions, macros' paths are not seen) that starts with
//! `crate::`, `super::` or `self::` is resolved to the file of the module it
//! names. A file's folder is the first component of its module path.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// The layers, lowest first. A folder may import folders of lower layers
/// (and itself); two folders of one layer may not import each other.
const LAYERS: &[&[&str]] = &[
    &["diagnostics"],
    &["ir"],
    &["config", "front"],
    &["patterns", "back"],
    &["passes"],
    &["phases"],
    &["driver"],
];

/// Folders that must not name the runtime crate (`tcc_runtime`): all but
/// the driver.
const RUNTIME_FREE: &[&str] = &[
    "diagnostics",
    "ir",
    "config",
    "front",
    "patterns",
    "back",
    "passes",
    "phases",
];

struct Module {
    /// The module path (`["passes", "outline_kernels", "build"]`).
    path: Vec<String>,
    file: PathBuf,
}

/// Every module file of `compiler/src` but `lib.rs` and `bin/`.
fn modules(src: &Path) -> Vec<Module> {
    let mut out = Vec::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let relative = path.strip_prefix(src).unwrap();
            if relative.starts_with("bin") {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") || relative == Path::new("lib.rs") {
                continue;
            }
            let mut components: Vec<String> = relative
                .with_extension("")
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if components.last().is_some_and(|c| c == "mod") {
                components.pop();
            }
            out.push(Module {
                path: components,
                file: path,
            });
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// The paths a file names, as written (segments), from `use` trees and
/// from paths in types and expressions (items under `#[cfg(test)]` too),
/// each with the inline modules (`mod tests { ... }`) it is written in.
#[derive(Default)]
struct Paths {
    scope: Vec<String>,
    paths: Vec<(Vec<String>, Vec<String>)>,
}

impl Paths {
    fn use_tree(&mut self, prefix: &mut Vec<String>, tree: &syn::UseTree) {
        match tree {
            syn::UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(prefix, &p.tree);
                prefix.pop();
            }
            syn::UseTree::Name(n) => {
                let mut path = prefix.clone();
                if n.ident != "self" {
                    path.push(n.ident.to_string());
                }
                self.paths.push((self.scope.clone(), path));
            }
            syn::UseTree::Rename(r) => {
                let mut path = prefix.clone();
                if r.ident != "self" {
                    path.push(r.ident.to_string());
                }
                self.paths.push((self.scope.clone(), path));
            }
            syn::UseTree::Glob(_) => self.paths.push((self.scope.clone(), prefix.clone())),
            syn::UseTree::Group(g) => {
                for item in &g.items {
                    self.use_tree(prefix, item);
                }
            }
        }
    }
}

impl<'ast> Visit<'ast> for Paths {
    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        self.use_tree(&mut Vec::new(), &item.tree);
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        self.paths.push((
            self.scope.clone(),
            path.segments.iter().map(|s| s.ident.to_string()).collect(),
        ));
        syn::visit::visit_path(self, path);
    }

    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        self.scope.push(item.ident.to_string());
        syn::visit::visit_item_mod(self, item);
        self.scope.pop();
    }
}

/// The module a path written in module `from` names, if it is one of tcc's
/// (`crate::`, `super::`, `self::`): the longest known module prefix.
fn resolve(from: &[String], path: &[String], known: &BTreeSet<Vec<String>>) -> Option<Vec<String>> {
    let mut base: Vec<String>;
    let mut rest = path;
    match path.first().map(String::as_str) {
        Some("crate") => {
            base = Vec::new();
            rest = &path[1..];
        }
        Some("super") | Some("self") => {
            base = from.to_vec();
            while let Some(first) = rest.first() {
                match first.as_str() {
                    "super" => {
                        base.pop()?;
                    }
                    "self" => {}
                    _ => break,
                }
                rest = &rest[1..];
            }
        }
        _ => return None,
    }
    let mut best = None;
    for segment in rest {
        base.push(segment.clone());
        if known.contains(&base) {
            best = Some(base.clone());
        }
    }
    best
}

fn layer_of(folder: &str) -> Option<usize> {
    LAYERS.iter().position(|layer| layer.contains(&folder))
}

/// `(from file, to file)` for every import between two module files.
fn import_graph(src: &Path) -> (Vec<Module>, BTreeSet<(usize, usize)>, Vec<String>) {
    let modules = modules(src);
    let known: BTreeSet<Vec<String>> = modules.iter().map(|m| m.path.clone()).collect();
    let index: BTreeMap<Vec<String>, usize> = modules
        .iter()
        .enumerate()
        .map(|(i, m)| (m.path.clone(), i))
        .collect();
    let mut edges = BTreeSet::new();
    let mut runtime_uses = Vec::new();
    for (i, module) in modules.iter().enumerate() {
        let text = std::fs::read_to_string(&module.file).unwrap();
        let file =
            syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", module.file.display()));
        let mut paths = Paths::default();
        paths.visit_file(&file);
        for (scope, path) in &paths.paths {
            // Written inside inline modules: `super::` climbs them first.
            let from: Vec<String> = module.path.iter().chain(scope).cloned().collect();
            if path.first().is_some_and(|s| s == "tcc_runtime")
                && RUNTIME_FREE.contains(&module.path[0].as_str())
            {
                runtime_uses.push(format!(
                    "{} names {}",
                    module.file.display(),
                    path.join("::")
                ));
            }
            if let Some(target) = resolve(&from, path, &known) {
                let j = index[&target];
                if i != j {
                    edges.insert((i, j));
                }
            }
        }
    }
    (modules, edges, runtime_uses)
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

#[test]
fn the_scanner_sees_imports_of_every_form() {
    let (modules, edges, _) = import_graph(&src());
    let file = |path: &str| {
        modules
            .iter()
            .position(|m| m.path.join("::") == path)
            .unwrap_or_else(|| panic!("no module {path}"))
    };
    let imports = |from: &str, to: &str| edges.contains(&(file(from), file(to)));
    // `use crate::ir::attr_names;`
    assert!(imports("passes::form_dispatches", "ir::attr_names"));
    // `use super::pass::{...}` from a file module.
    assert!(imports("passes::form_dispatches", "passes::pass"));
    // A path inside an expression: `crate::ir::util::string_value`.
    assert!(imports("ir::contraction", "ir::util"));
    // `crate::` from a module two folders down.
    assert!(imports("driver::scoreboard::case", "driver::pipeline"));
    assert!(modules.len() > 150, "only {} modules found", modules.len());
}

#[test]
fn no_folder_imports_a_folder_of_its_own_or_a_higher_layer() {
    let (modules, edges, runtime_uses) = import_graph(&src());
    let mut wrong = Vec::new();
    for module in &modules {
        if layer_of(&module.path[0]).is_none() {
            wrong.push(format!(
                "{} is in no layer (add its folder to LAYERS and docs/architecture.md)",
                module.path[0]
            ));
        }
    }
    for &(i, j) in &edges {
        let (from, to) = (&modules[i].path[0], &modules[j].path[0]);
        if from == to {
            continue;
        }
        let (Some(a), Some(b)) = (layer_of(from), layer_of(to)) else {
            continue;
        };
        if b >= a {
            wrong.push(format!(
                "{} imports {} ({from} may not import {to})",
                modules[i].path.join("::"),
                modules[j].path.join("::")
            ));
        }
    }
    wrong.extend(runtime_uses);
    wrong.dedup();
    assert!(wrong.is_empty(), "layer violations:\n{}", wrong.join("\n"));
}

/// Tarjan's strongly connected components of the file graph.
fn components(nodes: usize, edges: &BTreeSet<(usize, usize)>) -> Vec<Vec<usize>> {
    let mut next: Vec<Vec<usize>> = vec![Vec::new(); nodes];
    for &(a, b) in edges {
        next[a].push(b);
    }
    struct State {
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        on_stack: Vec<bool>,
        stack: Vec<usize>,
        counter: usize,
        out: Vec<Vec<usize>>,
    }
    fn visit(v: usize, next: &[Vec<usize>], s: &mut State) {
        s.index[v] = Some(s.counter);
        s.low[v] = s.counter;
        s.counter += 1;
        s.stack.push(v);
        s.on_stack[v] = true;
        for &w in &next[v] {
            match s.index[w] {
                None => {
                    visit(w, next, s);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(index) if s.on_stack[w] => s.low[v] = s.low[v].min(index),
                Some(_) => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack[w] = false;
                component.push(w);
                if w == v {
                    break;
                }
            }
            s.out.push(component);
        }
    }
    let mut state = State {
        index: vec![None; nodes],
        low: vec![0; nodes],
        on_stack: vec![false; nodes],
        stack: Vec::new(),
        counter: 0,
        out: Vec::new(),
    };
    for v in 0..nodes {
        if state.index[v].is_none() {
            visit(v, &next, &mut state);
        }
    }
    state.out
}

#[test]
fn components_are_found() {
    // 0 -> 1 -> 2 -> 0, 2 -> 3.
    let edges = BTreeSet::from([(0, 1), (1, 2), (2, 0), (2, 3)]);
    let mut found: Vec<Vec<usize>> = components(4, &edges)
        .into_iter()
        .map(|mut c| {
            c.sort();
            c
        })
        .collect();
    found.sort();
    assert_eq!(found, vec![vec![0, 1, 2], vec![3]]);
}

#[test]
fn no_import_circle_spans_two_folders() {
    let (modules, edges, _) = import_graph(&src());
    let mut wrong = Vec::new();
    for component in components(modules.len(), &edges) {
        let folders: BTreeSet<&str> = component
            .iter()
            .map(|&i| modules[i].path[0].as_str())
            .collect();
        if folders.len() > 1 {
            let mut files: Vec<String> = component
                .iter()
                .map(|&i| modules[i].path.join("::"))
                .collect();
            files.sort();
            wrong.push(format!(
                "a circle of {} files spans {:?}: {}",
                files.len(),
                folders,
                files.join(", ")
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
