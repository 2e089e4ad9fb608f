//! docs/passes.md lists exactly the tcc passes and pipelines that
//! tcc-opt registers (passes in `--list-passes`, passes and pipelines in
//! `--help`), with the same summaries.

use std::collections::BTreeMap;
use std::process::Command;

fn documented() -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/passes.md"))
        .expect("docs/passes.md");
    text.lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let name = cells.get(1)?.strip_prefix('`')?.strip_suffix('`')?;
            name.starts_with("tcc-")
                .then(|| (name.to_string(), cells.get(2).unwrap_or(&"").to_string()))
        })
        .collect()
}

fn registered(flag: &str) -> BTreeMap<String, String> {
    let output = Command::new(env!("CARGO_BIN_EXE_tcc-opt"))
        .arg(flag)
        .output()
        .expect("run tcc-opt");
    assert!(output.status.success());
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| {
            let line = line.trim_start();
            let rest = line.strip_prefix("--tcc-")?;
            let (name, summary) = rest.split_once(" - ")?;
            Some((format!("tcc-{}", name.trim()), summary.trim().to_string()))
        })
        .collect()
}

#[test]
fn passes_md_matches_the_registry() {
    let (docs, registry) = (documented(), registered("--help"));
    assert!(
        registry.len() >= 14,
        "expected tcc passes and pipelines in --help, got {registry:?}"
    );
    assert_eq!(
        docs, registry,
        "docs/passes.md and `tcc-opt --help` disagree"
    );
    let passes = registered("--list-passes");
    let documented_passes: BTreeMap<_, _> = docs
        .into_iter()
        .filter(|(name, _)| !name.starts_with("tcc-phase-"))
        .collect();
    assert_eq!(
        documented_passes, passes,
        "docs/passes.md and `tcc-opt --list-passes` disagree"
    );
}

/// The options `tcc-opt --help` lists under each tcc pass (the lines
/// indented deeper than the pass's own), by pass.
fn registered_options() -> BTreeMap<String, Vec<String>> {
    let output = Command::new(env!("CARGO_BIN_EXE_tcc-opt"))
        .arg("--help")
        .output()
        .expect("run tcc-opt");
    let text = String::from_utf8_lossy(&output.stdout);
    let mut options: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut current: Option<(String, usize)> = None;
    for line in text.lines() {
        let indent = line.len() - line.trim_start().len();
        let Some(flag) = line.trim_start().strip_prefix("--") else {
            current = None;
            continue;
        };
        let name: String = flag
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '-')
            .collect();
        match &current {
            Some((pass, pass_indent)) if indent > *pass_indent => {
                options.get_mut(pass).unwrap().push(name);
            }
            _ if name.starts_with("tcc-") => {
                options.insert(name.clone(), Vec::new());
                current = Some((name, indent));
            }
            _ => current = None,
        }
    }
    options
}

#[test]
fn every_pass_option_is_in_help_and_documented() {
    let options = registered_options();
    assert_eq!(
        options["tcc-configure-kernels"],
        [
            "candidate",
            "half-wgmma-tiles",
            "int8-gemm",
            "large-tf32-tiles",
            "target",
            "templates",
            "tuning",
            "windows"
        ],
        "tcc-opt --help lists tcc-configure-kernels' options"
    );
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/passes.md"))
        .expect("docs/passes.md");
    for (pass, names) in options {
        let row = text
            .lines()
            .find(|line| line.starts_with(&format!("| `{pass}` |")))
            .unwrap_or_else(|| panic!("docs/passes.md has no row for {pass}"));
        for name in names {
            assert!(
                row.contains(&format!("`{name}=")),
                "docs/passes.md does not document {pass}'s option {name}"
            );
        }
    }
}
