#!/usr/bin/env python3
"""Groups the outcomes of the ONNX node suite by reason.

Reads an expectation list as `tcc onnx-test --write-expectations` writes it
(`case pass | pass with --input-value NAMES | unsupported: REASON | fail:
REASON`) and prints a Markdown
table: how many cases pass, and how many end for each kind of reason
(opset refused, element type, unsupported op by op type, a value the
importer needs at import time computed at run time, attribute or mode,
training op, wrong numbers, ...), with the training-only cases (the
generator's TRAINING list, when given) counted apart.

Usage: python3 test/onnx/node_report.py OUTCOMES [TRAINING]
e.g.   python3 test/onnx/node_report.py test/onnx/node-expectations.txt target/onnx-node-suite/TRAINING
"""

from __future__ import annotations

import collections
import re
import sys

PATTERNS = [
    (r"imports opset \d+ of the default ONNX domain", "opset refused (above the importer's newest)"),
    (r"training op", "training op (clear error)"),
    (r"unsupported op '(\w+)'", "unsupported op: {0}"),
    (r"element type (data type \d+|\w+)", "element type {0}"),
    (r"Cast to (data type \d+|\w+) is not supported", "element type {0}"),
    (r"does not compute in (f16|bf16|f64)", "element type {0} (compiler)"),
    (r"not a tensor", "sequence/map/optional value"),
    (r"does not import the default ONNX domain", "other domain only (ai.onnx.ml, preview)"),
    (r"computed at run time", "value computed at run time (shape, axes, pads, bounds...)"),
    (r"is used but the importer does not produce it", "extra output not produced"),
    (r"elements differ", "wrong numbers"),
    (r"has shape|has element type", "wrong output shape/type"),
    (r"^\(?(\w+) with ([\w_]+)", "attribute: {0} {1}"),
]


def group(reason: str) -> str:
    body = re.sub(r"^node( '[^']*')? \([^)]*\): ", "", reason)
    for pattern, label in PATTERNS:
        m = re.search(pattern, body)
        if m:
            return label.format(*m.groups())
    return "other: " + re.sub(r"'[^']*'", "'…'", body)[:90]


def main() -> int:
    if len(sys.argv) not in (2, 3):
        print(__doc__, file=sys.stderr)
        return 2
    training = set()
    if len(sys.argv) == 3:
        training = set(open(sys.argv[2]).read().split())
    rows = collections.Counter()
    totals = collections.Counter()
    for line in open(sys.argv[1]):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, outcome = line.split(" ", 1)
        part = "training" if name in training else "inference"
        if outcome.startswith("pass"):
            # `pass`, or `pass with --input-value NAMES` (inputs given at
            # compile time), counted apart.
            kind = "pass"
            label = "pass" if outcome == "pass" else "pass with inputs given at compile time"
            if outcome != "pass":
                totals[(part, "given")] += 1
        else:
            kind = outcome.split(":", 1)[0]
            label = f"{kind}: {group(outcome.split(':', 1)[1].strip())}"
        totals[(part, kind)] += 1
        rows[(label, part)] += 1
    labels = sorted({label for label, _ in rows}, key=lambda l: (-(rows[(l, 'inference')] + rows[(l, 'training')]), l))
    print("| outcome | non-training | training |")
    print("|---|---|---|")
    for label in labels:
        print(f"| {label} | {rows[(label, 'inference')]} | {rows[(label, 'training')]} |")
    for part in ("inference", "training"):
        n = sum(v for (p, kind), v in totals.items() if p == part and kind != "given")
        if n:
            print(
                f"{part}: {n} cases, {totals[(part, 'pass')]} passed ({100 * totals[(part, 'pass')] / n:.1f}%; "
                f"{totals[(part, 'given')]} of them with inputs given at compile time), "
                f"{totals[(part, 'fail')]} failed, {totals[(part, 'unsupported')]} unsupported"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
