//! Bounded mutation fuzzing of `tcc compile`: the end-to-end models with
//! lines deleted, duplicated or swapped, numbers changed and text
//! truncated. Each mutant must compile (exit 0) or be rejected with a
//! message (exit 1) — never crash (a signal, an abort) or exit otherwise.
//! Deterministic: a fixed seed, a fixed number of mutants.

use std::path::Path;
use std::process::Command;

/// xorshift64*: small, deterministic, good enough to pick mutations.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn mutate(text: &str, rng: &mut Rng) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let n = lines.len();
    match rng.below(5) {
        0 => {
            lines.remove(rng.below(n));
        }
        1 => {
            let line = lines[rng.below(n)].clone();
            lines.insert(rng.below(n), line);
        }
        2 => {
            let (a, b) = (rng.below(n), rng.below(n));
            lines.swap(a, b);
        }
        3 => {
            // Change one number (a shape, an axis, a constant).
            let index = rng.below(n);
            let line = &lines[index];
            let digits: Vec<usize> = line
                .char_indices()
                .filter(|(_, c)| c.is_ascii_digit())
                .map(|(i, _)| i)
                .collect();
            if !digits.is_empty() {
                let at = digits[rng.below(digits.len())];
                let replacement = char::from(b'0' + rng.below(10) as u8);
                let mut changed = line.clone();
                changed.replace_range(at..at + 1, &replacement.to_string());
                lines[index] = changed;
            }
        }
        _ => {
            let joined = lines.join("\n");
            let cut = rng.below(joined.len());
            let cut = (0..=cut)
                .rev()
                .find(|i| joined.is_char_boundary(*i))
                .unwrap_or(0);
            return joined[..cut].to_string();
        }
    }
    lines.join("\n")
}

#[test]
fn mutated_models_never_crash_the_compiler() {
    let models = Path::new(env!("CARGO_MANIFEST_DIR")).join("../test/models");
    let mut sources: Vec<(String, String)> = std::fs::read_dir(&models)
        .expect("test/models")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().and_then(|e| e.to_str()) == Some("mlir"))
        // Keep the mutants quick to compile: skip the models with big weights.
        .filter(|p| {
            std::fs::metadata(p)
                .map(|m| m.len() < 20_000)
                .unwrap_or(false)
        })
        .map(|p| {
            (
                p.display().to_string(),
                std::fs::read_to_string(&p).expect("model text"),
            )
        })
        .collect();
    sources.sort();
    assert!(
        sources.len() >= 10,
        "expected the end-to-end models, found {}",
        sources.len()
    );
    let directory = tempfile::tempdir().expect("temp dir");
    let mut rng = Rng(0x7cc0_ffee_1234_5678);
    let (mut accepted, mut rejected) = (0, 0);
    for round in 0..300 {
        let (name, text) = &sources[rng.below(sources.len())];
        let mutant = mutate(text, &mut rng);
        let path = directory.path().join(format!("mutant{round}.mlir"));
        std::fs::write(&path, &mutant).expect("write mutant");
        let output = Command::new(env!("CARGO_BIN_EXE_tcc"))
            .args(["compile", "--emit=opencl-c"])
            .arg(&path)
            .output()
            .expect("run tcc");
        match output.status.code() {
            Some(0) => accepted += 1,
            Some(1) => {
                let stderr = String::from_utf8_lossy(&output.stderr);
                assert!(
                    !stderr.trim().is_empty(),
                    "mutant {round} of {name} was rejected without a message:\n{mutant}"
                );
                assert!(
                    !stderr.contains("panicked"),
                    "mutant {round} of {name} panicked:\n{stderr}\n{mutant}"
                );
                rejected += 1;
            }
            other => panic!(
                "mutant {round} of {name} crashed the compiler ({other:?}):\n{}\n--- mutant ---\n{mutant}",
                String::from_utf8_lossy(&output.stderr)
            ),
        }
    }
    eprintln!("mutants: {accepted} compiled, {rejected} rejected with a message");
    assert!(rejected > 0 && accepted > 0);
}
