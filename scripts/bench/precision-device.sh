#!/usr/bin/env bash
# Expects .device-prec/ (git-ignored) holding tcc-run, tcc-benchmark, b32.npy(.xz) and
# r50-{fp32,tf32,fp16,fp16s}.so(.xz) compiled as docs/benchmarks.md says.
# ResNet-50 at batch 32 (shared weights) on the H100: fp32, --precision=tf32,
# --precision=fp16 --storage=fp16 and --storage=fp16 alone, side by side.
set -uo pipefail
cd "$(dirname "$0")/../../.device-prec"
python3 -c "
import glob, lzma, os
for f in glob.glob('*.xz'):
    open(f[:-3], 'wb').write(lzma.open(f).read()); os.chmod(f[:-3], 0o755)
"
for v in fp32 tf32 fp16 fp16s; do
  ./tcc-run r50-$v.so --input=@b32.npy --output=@/tmp/y-$v.npy >/dev/null 2>&1 || echo "$v run failed"
done
python3 -c "
import numpy as np
ref = np.load('/tmp/y-fp32.npy').reshape(32, -1)
for v in ['tf32', 'fp16', 'fp16s']:
    y = np.load('/tmp/y-%s.npy' % v).reshape(32, -1)
    rel = np.linalg.norm(y - ref) / np.linalg.norm(ref)
    top = (y.argmax(1) == ref.argmax(1)).sum()
    print('%s vs fp32: relative error %.2e, top-1 %d/32, max |diff| %.2e' % (v, rel, top, abs(y - ref).max()))
"
for v in tf32 fp16 fp16s; do
  echo "== r50-$v in turns with r50-fp32 (each kernel's fastest call, ms)"
  ./tcc-benchmark r50-$v.so --in-turns-with=r50-fp32.so --input=@b32.npy --iterations=10 2>&1 | grep -E '^  sum|build'
done
for v in fp32 tf32 fp16 fp16s; do
  printf 'r50-%s e2e: ' $v; ./tcc-benchmark r50-$v.so --input=@b32.npy --iterations=20 2>&1 | grep -E 'latency end-to-end|device time per call' | tr '\n' ' '; echo
done
