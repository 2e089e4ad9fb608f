#!/usr/bin/env bash
# Expects DIR (the argument; default .device-int8/, git-ignored) holding tcc-run, tcc-benchmark and, for B in b1 b32, r50-f32-B.so, r50-int8-B.so (the int8 GEMM template) and
# r50-int8loops-B.so (TCC_INT8_GEMM=off: int8 contractions in loop nests, main's
# behaviour before it), each possibly .xz-compressed, compiled as docs/benchmarks.md
# "H100: int8 ResNet-50 (issue 15, session 10)" says; optional extra int8 variants
# r50-int8*-B.so are run and timed too.
# ResNet-50 on the H100, all --target=nvidia (PTX): checks that the template's int8
# outputs are bit-identical to the loop nests', reports int8 against f32, then times
# each int8 build side by side with f32 (tcc-benchmark --in-turns-with) and end to end.
# The inputs b1.npy and b32.npy are seeded standard normal batches made here.
set -uo pipefail
cd "${1:-$(dirname "$0")/../.device-int8}"
python3 -c "
import glob, lzma, os
for f in glob.glob('*.xz'):
    open(f[:-3], 'wb').write(lzma.open(f).read()); os.chmod(f[:-3], 0o755); os.remove(f)
import numpy as np
r = np.random.default_rng(15)
for b in [1, 32]:
    np.save('b%d.npy' % b, r.standard_normal((b, 3, 224, 224)).astype(np.float32))
"
for b in b1 b32; do
  for so in r50-*-$b.so; do
    v=${so%.so}
    ./tcc-run $so --input=@$b.npy --output=@/tmp/y-$v.npy >/dev/null 2>/tmp/err-$v.txt || { echo "$v run failed"; tail -5 /tmp/err-$v.txt; }
  done
done
python3 -c "
import glob, numpy as np
for b in ['b1', 'b32']:
    ref = np.load('/tmp/y-r50-f32-%s.npy' % b); n = ref.shape[0]; ref = ref.reshape(n, -1)
    loops = np.load('/tmp/y-r50-int8loops-%s.npy' % b).reshape(n, -1)
    for f in sorted(glob.glob('/tmp/y-r50-int8*-%s.npy' % b)):
        y = np.load(f).reshape(n, -1)
        rel = np.linalg.norm(y - ref) / np.linalg.norm(ref)
        print('%s: bit-identical to int8 loop nests: %s (max |diff| %.2e); vs f32: relative error %.2e, top-1 %d/%d'
              % (f[7:-4], np.array_equal(y, loops), abs(y - loops).max(), rel, (y.argmax(1) == ref.argmax(1)).sum(), n))
"
for b in b32 b1; do
  for so in r50-int8*-$b.so; do
    echo "== ${so%.so} in turns with r50-f32-$b (each kernel's fastest call, ms)"
    ./tcc-benchmark $so --in-turns-with=r50-f32-$b.so --input=@$b.npy --iterations=10 2>&1 | grep -E '^  sum|build'
  done
  for so in r50-*-$b.so; do
    printf '%s e2e: ' ${so%.so}; ./tcc-benchmark $so --input=@$b.npy --iterations=20 2>&1 | grep -E 'latency end-to-end|device time per call' | tr '\n' ' '; echo
  done
done
