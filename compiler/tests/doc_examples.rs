//! Docs that cannot rot (issue 11): every shell block marked runnable
//! (fenced as ```` ```sh runnable ````) in README.md and docs/user-guide.md
//! runs, in order, as `bash -euo pipefail` in one scratch directory per
//! document (so a later block may use what an earlier one made), with the
//! repository's `test/`, `examples/`, `runtime/` and `target/` linked in
//! and the built tools first on `PATH`. A block that exits non-zero fails
//! the test; each block is one case of the summary (docs/testing.md).

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;

use support::{CaseResult, Tally};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The runnable blocks of a Markdown file: (first line number, text).
fn runnable_blocks(markdown: &str) -> Vec<(usize, String)> {
    let mut blocks = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (index, line) in markdown.lines().enumerate() {
        let trimmed = line.trim();
        match &mut current {
            None if trimmed.starts_with("```") => {
                let info: Vec<&str> = trimmed.trim_start_matches('`').split_whitespace().collect();
                if info == ["sh", "runnable"] {
                    current = Some((index + 2, String::new()));
                } else {
                    // Skip over another block (its lines may look like fences' contents).
                    current = Some((0, String::new()));
                }
            }
            None => {}
            Some((start, text)) => {
                if trimmed == "```" {
                    if *start > 0 {
                        blocks.push((*start, std::mem::take(text)));
                    }
                    current = None;
                } else {
                    text.push_str(line);
                    text.push('\n');
                }
            }
        }
    }
    blocks
}

#[test]
fn the_parser_finds_only_runnable_blocks() {
    let md = "a\n```sh runnable\necho one\n```\n```\nnot me\n```\n```sh\nnor me\n```\n```sh runnable\necho two\n```\n";
    assert_eq!(
        runnable_blocks(md),
        [
            (3, "echo one\n".to_string()),
            (12, "echo two\n".to_string())
        ]
    );
}

fn run_document(relative: &str, tally: &mut Tally) -> usize {
    let root = repo();
    let markdown = std::fs::read_to_string(root.join(relative)).unwrap();
    let blocks = runnable_blocks(&markdown);
    let bin = std::env::current_exe()
        .unwrap()
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf();
    for tool in ["tcc", "tcc-opt", "tcc-run", "tcc-benchmark"] {
        assert!(
            bin.join(tool).exists(),
            "{tool} is not built in {} (cargo build --workspace --bins)",
            bin.display()
        );
    }
    let scratch = tempfile::tempdir().unwrap();
    for link in ["test", "examples", "runtime", "target"] {
        std::os::unix::fs::symlink(root.join(link), scratch.path().join(link)).unwrap();
    }
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for (line, script) in &blocks {
        let mut command = Command::new("bash");
        command
            .args(["-euo", "pipefail", "-c", script])
            .current_dir(scratch.path())
            .env("PATH", &path)
            .env_remove("TCC_DEVICE");
        support::isolate_command(&mut command, scratch.path());
        let out = command.output().expect("run bash");
        let case = format!("{relative}:{line}");
        if out.status.success() {
            tally.add(&case, CaseResult::Passed);
        } else {
            let stderr = String::from_utf8_lossy(&out.stderr);
            eprintln!(
                "{case} failed ({}):\n{script}\n--- stderr:\n{stderr}",
                out.status
            );
            tally.add(
                &case,
                CaseResult::Failed(format!(
                    "exit {:?}: {}",
                    out.status.code(),
                    stderr
                        .lines()
                        .rev()
                        .find(|l| !l.trim().is_empty())
                        .unwrap_or("")
                )),
            );
        }
    }
    blocks.len()
}

#[test]
fn every_runnable_shell_example_in_the_docs_runs() {
    let mut tally = Tally::new("every_runnable_shell_example_in_the_docs_runs");
    let readme = run_document("README.md", &mut tally);
    let guide = run_document("docs/user-guide.md", &mut tally);
    tally.report();
    let (passed, failed, _) = tally.counts();
    assert!(
        readme >= 1 && guide >= 4,
        "too few runnable blocks: README {readme}, user guide {guide}"
    );
    assert_eq!(
        failed, 0,
        "{failed} runnable doc examples failed ({passed} passed); see above"
    );
}
