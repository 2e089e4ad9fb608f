#!/usr/bin/env bash
# Runs on the GPU machine, from a bundle of scripts/build-gemm-bundle.sh
# inside a checkout (it uses the checkout's scripts/): the e2e models whose
# GEMMs take the template (PTX, checked against the reference outputs),
# then, in one run, SGEMM and the dense layers (new, old, cuBLAS fp32 with
# TF32 off), ResNet-50's slow batch-1 convolution layers (new, old, and a
# check against torch), ResNet-50 at batch 1 and 32 new in turns with old,
# and, when the bundle holds one in cs/ (scripts/build-conv-shapes-bundle.sh),
# every distinct ResNet-50 convolution shape against cuDNN.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
scripts=$here/../scripts
cd "$here"
python3 -c "
import glob, lzma, os
for f in glob.glob('*/*.xz'):
    open(f[:-3], 'wb').write(lzma.open(f).read()); os.chmod(f[:-3], 0o755); os.remove(f)
"
B=bin/tcc-benchmark
builds=(new); [[ -d old ]] && builds+=(old)
echo "== e2e models with template GEMMs, PTX"
passed=0; failed=0
while read -r name tag function num_inputs num_outputs abs rel; do
  inputs=(); outputs=(); pairs=()
  for ((i = 0; i < num_inputs; i++)); do inputs+=("--input=@e2e/$tag.input$i.npy"); done
  for ((i = 0; i < num_outputs; i++)); do outputs+=("--output=@/tmp/$tag.got$i.npy"); pairs+=("/tmp/$tag.got$i.npy" "e2e/$tag.expected$i.npy"); done
  if bin/tcc-run "e2e/$name.so" --function="$function" "${inputs[@]}" "${outputs[@]}" > /tmp/$tag.log 2>&1 \
     && bin/tcc-compare --abs="$abs" --rel="$rel" "${pairs[@]}" >> /tmp/$tag.log 2>&1; then
    passed=$((passed + 1))
  else
    echo "FAIL $name @$function"; sed 's/^/    /' /tmp/$tag.log | tail -5; failed=$((failed + 1))
  fi
done < e2e/MANIFEST
echo "$passed passed, $failed failed"
# GEMM_DEVICE_QUICK=1 leaves out SGEMM, the dense layers and the five slow
# layers (a run that only re-checks convolution tiles).
if [[ ${GEMM_DEVICE_QUICK:-0} != 1 ]]; then
echo "== SGEMM and dense layers (tcc-benchmark, PTX form, device time)"
b() { local d=$1 m=$2 f=$3; shift 3; local a=(); for i in "$@"; do a+=("--input=$i"); done; r=$($B $d/$m.so "${a[@]}" --warmup=3 --iterations=20 --flops=$f --json 2>/dev/null); python3 -c "import json,sys;r=json.loads(sys.argv[1]);print('$d','$m','device_ms=%.3f'%r['device_ms_per_call'],'TF/s=%.1f'%(r['gflops']['device']/1000))" "$r"; }
for d in "${builds[@]}"; do
  b $d sgemm_1024 $((2*1024**3)) 1x1024x1024xf32=0.5 1x1024x1024xf32=0.25
  b $d sgemm_2048 $((2*2048**3)) 1x2048x2048xf32=0.5 1x2048x2048xf32=0.25
  b $d sgemm_4096 $((2*4096**3)) 1x4096x4096xf32=0.5 1x4096x4096xf32=0.25
  b $d dense_512x1024x1024 $((2*512*1024*1024)) 1x512x1024xf32=0.5 1x1024x1024xf32=0.25 1x1x1024xf32=0.1
  b $d dense_2048x1024x4096 $((2*2048*1024*4096)) 1x2048x1024xf32=0.5 1x1024x4096xf32=0.25 1x1x4096xf32=0.1
done
(cd "$scripts" && python3 torch_baseline.py 2>&1 | grep -E "sgemm|dense")
for n in 2048 4096; do
  bin/tcc-run new/sgemm_$n.so --input=1x${n}x${n}xf32=0.5 --input=1x${n}x${n}xf32=0.25 --output=@/tmp/s.npy > /dev/null 2>&1
  python3 -c "import numpy as np;y=np.load('/tmp/s.npy');print('new sgemm_$n: max |C - 0.125 K| = %g'%abs(y-0.125*$n).max())"
done
echo "== ResNet-50's slow batch-1 convolution layers (kernel mean us)"
for d in "${builds[@]}"; do
  r=$($B $d/layers.so --input=1x64x56x56xf32=0.5 --input=1x512x28x28xf32=0.5 --input=1x128x28x28xf32=0.5 --input=1x512x28x28xf32=0.5 --input=1x256x56x56xf32=0.5 --warmup=10 --iterations=50 --json 2>/dev/null)
  python3 -c "
import json,sys
r=json.loads(sys.argv[1])
ks=sorted([k for k in r['kernels'] if k['name'].startswith('conv')], key=lambda k: int(k['name'].split('_')[-1]))
print('$d', ' '.join('%.1f'%k['mean_us'] for k in ks))" "$r"
done
python3 - "$scripts" "$here" <<'PY'
import importlib.util, os, subprocess, sys
import numpy as np, onnx, torch, torch.nn.functional as F
from onnx import numpy_helper
sys.path.insert(0, sys.argv[1])
from cuda_graph_timing import graph_us
torch.backends.cudnn.allow_tf32 = False
torch.backends.cudnn.benchmark = True
spec = importlib.util.spec_from_file_location("layers", os.path.join(sys.argv[2], "gen-conv-layer-models.py"))
gen = importlib.util.module_from_spec(spec); spec.loader.exec_module(gen)
gen.main("/tmp/layers.onnx")
weights = {t.name: numpy_helper.to_array(t) for t in onnx.load("/tmp/layers.onnx").graph.initializer}
rng = np.random.default_rng(1)
xs = [rng.standard_normal((1, c, h, w)).astype(np.float32) for c, h, w, *_ in gen.LAYERS]
for i, x in enumerate(xs): np.save(f"/tmp/x{i}.npy", x)
args = ["bin/tcc-run", "new/layers.so"] + [f"--input=@/tmp/x{i}.npy" for i in range(5)] + [f"--output=@/tmp/y{i}.npy" for i in range(5)]
subprocess.run(args, check=True, capture_output=True)
cudnn, errors = [], []
for i, (c, h, w, oc, k, s, p) in enumerate(gen.LAYERS):
    wt, b = torch.from_numpy(weights[f"w{i}"]), torch.from_numpy(weights[f"b{i}"])
    ref = F.relu(F.conv2d(torch.from_numpy(xs[i]).double(), wt.double(), b.double(), s, p)).numpy()
    errors.append(np.abs(np.load(f"/tmp/y{i}.npy") - ref).max() / np.abs(ref).max())
    x, wc, bc = torch.randn(1, c, h, w, device="cuda"), wt.cuda(), b.cuda()
    cudnn.append(graph_us(lambda: F.relu(F.conv2d(x, wc, bc, s, p))))
print("cuDNN (conv2d + relu, CUDA graph)", " ".join("%.1f" % t for t in cudnn))
print("new: max error / max |reference| per layer", " ".join("%.1e" % e for e in errors))
PY
fi
echo "== ResNet-50, new in turns with old (each kernel's fastest of 10 calls, ms)"
if [[ -d old ]]; then
  for b in 1 32; do
    echo "-- batch $b"
    $B new/resnet50-b$b.so --in-turns-with=old/resnet50-b$b.so --input=${b}x3x224x224xf32=0.5 --iterations=10 2>&1 | grep -E "^  (sum|build)"
    for d in new old; do
      bin/tcc-run $d/resnet50-b$b.so --input=${b}x3x224x224xf32=0.5 --output=@/tmp/r-$d.npy > /dev/null 2>&1
    done
    python3 -c "import numpy as np;a=np.load('/tmp/r-new.npy');b=np.load('/tmp/r-old.npy');print('outputs new vs old: relative difference %.1e'%(np.linalg.norm(a-b)/np.linalg.norm(b)))"
    for d in new old; do printf "$d: "; $B $d/resnet50-b$b.so --input=${b}x3x224x224xf32=0.5 --iterations=20 2>&1 | grep -E "device time per call|latency end-to-end" | tr -s ' ' | tr '\n' ' '; echo; done
  done
fi
echo "== every distinct ResNet-50 convolution shape against cuDNN (exact matching)"
# A bundle of scripts/build-conv-shapes-bundle.sh in cs/ (its "table" is
# this bundle's new tcc, "old" the old one).
if [[ -d cs ]]; then
  python3 cs/conv-shapes-device.py cs 2>&1 | tail -32
fi
