#!/usr/bin/env bash
# The closing line of `make test`: "N passed, N failed, N skipped", counted
# case by case from cargo test's log (docs/testing.md, "The summary line").
#
#   scripts/summarize-tests.sh LOG STATUS [SENTINEL_CACHE_DIR]
#
# - Every libtest test counts once ("test NAME ... ok|FAILED|ignored"),
#   also where the line arrives glued behind another test's stderr
#   written at the same moment ("error: ... positivetest NAME ... ok").
# - A test that runs many cases (lit, the ONNX scoreboard, an expected
#   failure) prints `TCC-TALLY NAME PASSED FAILED SKIPPED` (test/support):
#   its cases are counted instead of the test (NAME is the test function:
#   it also matches libtest's `module::NAME` of a test file that is a module
#   of one binary); if the test itself failed with no failing case, that
#   counts as one failure.
# - A test binary that started and printed no `test result:` line (a crash,
#   a signal, a timeout) counts as one failure; so does a crate that did not
#   build ("error: could not compile").
# - A log in which no test binary ran is a failure (nothing was tested).
# - STATUS is cargo test's exit status: a non-zero status with no failure
#   counted adds one failure, so the line always agrees with the exit code.
# - SENTINEL_CACHE_DIR is the XDG_CACHE_HOME `make test` gives cargo: a
#   test that wrote to the default cache directory (not its own) put files
#   there, and that is a failure too.
# Skips and failures are listed with their reasons before the line. Exits 1
# when anything failed.
set -uo pipefail
log=${1:?usage: summarize-tests.sh LOG STATUS [SENTINEL_CACHE_DIR]}
status=${2:?usage: summarize-tests.sh LOG STATUS [SENTINEL_CACHE_DIR]}
sentinel=${3:-}
exec python3 - "$log" "$status" "$sentinel" <<'EOF'
import os
import re
import sys

log, status, sentinel = sys.argv[1], int(sys.argv[2]), sys.argv[3]
try:
    lines = open(log, encoding="utf-8", errors="replace").read().splitlines()
except OSError as e:
    lines = []
    print(f"cannot read {log}: {e}")

passed = failed = skipped = 0
failures, skips = [], []


class Section:
    def __init__(self, name):
        self.name = name
        self.short = re.sub(r" \(.*\)$", "", name)
        self.results = {}  # test -> ok | FAILED | ignored
        self.tallies = {}  # test -> (p, f, s)
        self.finished = False


sections, current = [], None
result_re = re.compile(r"^test (\S+) \.\.\. (ok|FAILED|ignored)\b(.*)$")
# The same result behind text another test wrote without a line break:
# names are Rust paths, so the glued name starts after the last "test ".
glued_re = re.compile(r"test ([A-Za-z_][\w:]*) \.\.\. (ok|FAILED|ignored)\b(.*)$")
for line in lines:
    m = re.match(r"^\s+(Running|Doc-tests) (.*)$", line)
    if m:
        current = Section(m.group(2))
        sections.append(current)
        continue
    m = re.match(r"^error: could not compile `([^`]+)`", line)
    if m:
        failed += 1
        failures.append(f"build: {m.group(1)} did not compile")
        continue
    # Tally lines may arrive glued to a libtest line written at the same
    # moment; find them anywhere in the line.
    t = re.search(r"TCC-TALLY (\S+) (\d+) (\d+) (\d+)\s*$", line)
    if t and current is not None:
        current.tallies[t.group(1)] = tuple(int(t.group(i)) for i in (2, 3, 4))
        continue
    t = re.search(r"TCC-TALLY-(SKIP|FAIL) (\S+) (.*)$", line)
    if t and current is not None:
        (skips if t.group(1) == "SKIP" else failures).append(f"{current.short}: {t.group(3)}")
        continue
    m = result_re.match(line) or glued_re.search(line)
    if m and current is not None:
        current.results[m.group(1)] = m.group(2)
        if m.group(2) == "ignored":
            skips.append(f"{current.short}: {m.group(1)}: ignored{m.group(3)}")
        elif m.group(2) == "FAILED":
            failures.append(f"{current.short}: {m.group(1)}")
        continue
    if line.startswith("test result:") and current is not None:
        current.finished = True

def tally_of(section, test):
    # A tally names the test function; libtest names it with its module
    # path when test files are modules of one binary (`onnx_scoreboard::X`).
    for name in (test, test.rsplit("::", 1)[-1]):
        if name in section.tallies:
            return name
    return None


for s in sections:
    if not s.finished:
        failed += 1
        failures.append(f"{s.name}: the test binary ended without a result (crashed or killed)")
    claimed = set()
    for test, outcome in s.results.items():
        name = tally_of(s, test)
        if name is not None and name not in claimed:
            claimed.add(name)
            p, f, k = s.tallies[name]
            passed, failed, skipped = passed + p, failed + f, skipped + k
            if outcome == "FAILED" and f == 0:
                failed += 1  # the test's own assertion, beyond its cases
            continue
        if outcome == "ok":
            passed += 1
        elif outcome == "FAILED":
            failed += 1
        else:
            skipped += 1
    for test in s.tallies:
        if test not in claimed:
            failed += 1
            failures.append(f"{s.name}: {test} printed a tally but no result")

if sentinel and os.path.isdir(sentinel):
    written = []
    for root, _, files in os.walk(sentinel):
        written += [os.path.join(root, f) for f in files]
    if written:
        failed += 1
        failures.append(
            f"a test wrote to the default cache directory ({sentinel}, standing in for ~/.cache): "
            + ", ".join(sorted(written)[:5])
        )

if not sections and failed == 0:
    failed += 1
    failures.append(f"{log} shows no test binary running: nothing was tested")

if status != 0 and failed == 0:
    failed += 1
    failures.append(f"cargo test exited with status {status} without a failing test in the log")

if skips:
    print(f"skipped ({len(skips)}):")
    for s in skips:
        print(f"  {s}")
if failures:
    print("failed:")
    for f in failures:
        print(f"  {f}")
print(f"{passed} passed, {failed} failed, {skipped} skipped")
sys.exit(1 if failed else 0)
EOF
