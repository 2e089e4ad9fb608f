#!/usr/bin/env python3
"""Holds a scoreboard run made elsewhere against test/onnx/expectations.txt.

    python3 scripts/onnx/onnx-scoreboard-check.py DIR [RESULTS...]

DIR is a `tcc onnx-test --prepare=DIR` directory: DIR/OUTCOMES lists the
cases that ended before running (the importer's refusals, compile
failures), and each RESULTS file (default DIR/RESULTS, written by
scripts/onnx/onnx-scoreboard-device.sh; give one per kernel form) the cases that
ran. A case must end as its expectation says, with the same rules as
`tcc onnx-test --expectations`: `pass` must pass, `unsupported: R` and
`fail: R` must end that way with a reason containing R; a case without an
entry must pass. Prints each mismatch and `N passed, N failed, N
unsupported; N as expected, N not`; exits 1 on any mismatch or when a
prepared case is missing from a RESULTS file.
"""
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def unescape(text):
    """A reason as written on one line (`render_expectations_with` in
    compiler/src/driver/scoreboard/mod.rs: \\n, \\r and \\\\)."""
    return re.sub(r"\\(.?)", lambda m: {"n": "\n", "r": "\r", "": "\\"}.get(m.group(1), m.group(1)), text)


def read_list(path):
    entries = {}
    with open(path) as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            name, _, outcome = line.partition(" ")
            outcome = unescape(outcome)
            kind, _, reason = outcome.partition(": ")
            if kind not in ("pass", "fail", "unsupported"):
                sys.exit(f"{path}:{number}: unknown outcome '{outcome}'")
            entries[name] = (kind, reason)
    return entries


def matches(got, want):
    if want[0] == "pass":
        return got[0] == "pass"
    return got[0] == want[0] and bool(want[1]) and want[1] in got[1]


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    directory = sys.argv[1]
    results = sys.argv[2:] or [os.path.join(directory, "RESULTS")]
    expected = read_list(os.path.join(ROOT, "test/onnx/expectations.txt"))
    ended = read_list(os.path.join(directory, "OUTCOMES"))
    prepared = set()
    with open(os.path.join(directory, "MANIFEST")) as f:
        for line in f:
            if line.strip():
                prepared.add(line.split()[0])
    bad = 0
    for path in results:
        ran = read_list(path)
        outcomes = dict(ended)
        outcomes.update(ran)
        missing = sorted(prepared - set(ran))
        for name in missing:
            print(f"{path}: {name} was prepared but has no result")
        mismatches = []
        for name, got in sorted(outcomes.items()):
            want = expected.get(name, ("pass", ""))
            if not matches(got, want):
                render = lambda o: o[0] + (f": {o[1]}" if o[1] else "")
                mismatches.append(f"{name}: expected {render(want)}, got {render(got)}")
        for line in mismatches:
            print(f"{path}: {line}")
        counts = {k: sum(1 for o in outcomes.values() if o[0] == k) for k in ("pass", "fail", "unsupported")}
        print(
            f"{path}: {counts['pass']} passed, {counts['fail']} failed, {counts['unsupported']} unsupported; "
            f"{len(outcomes) - len(mismatches)} as expected, {len(mismatches)} not"
        )
        bad += len(mismatches) + len(missing)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
