#!/usr/bin/env python3
"""The PyTorch/cuBLAS side of the benchmarks: the same products and row
softmax as scripts/bench/gen-bench-models.py, fp32 without TF32, timed with CUDA
events (median of repeated runs after warm-up). Prints one JSON line per
case. Runs where PyTorch and a CUDA GPU are present (the device machine)."""
import json

import torch
from cuda_timing import cuda_median_ms

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
dev = "cuda"


def bench(fn):
    """Median seconds of `fn()` over 20 runs after 5 warm-ups."""
    return cuda_median_ms(fn, warmup=5, iterations=20) * 1e-3


for n in (1024, 2048, 4096):
    a = torch.full((n, n), 0.5, device=dev)
    b = torch.full((n, n), 0.25, device=dev)
    t = bench(lambda: torch.matmul(a, b))
    print(json.dumps({"case": f"sgemm_{n}", "impl": "cublas-fp32", "seconds": t, "tflops": 2 * n**3 / t / 1e12}))

for m, k, n in ((512, 1024, 1024), (2048, 1024, 4096)):
    x = torch.full((m, k), 0.5, device=dev)
    w = torch.full((k, n), 0.25, device=dev)
    bias = torch.full((n,), 0.1, device=dev)
    t = bench(lambda: torch.relu(torch.addmm(bias, x, w)))
    print(json.dumps({"case": f"dense_{m}x{k}x{n}", "impl": "torch-addmm-relu", "seconds": t, "tflops": 2 * m * k * n / t / 1e12}))

x = torch.full((4096, 1024), 0.5, device=dev)
t = bench(lambda: torch.softmax(x, dim=-1))
print(json.dumps({"case": "softmax_4096x1024", "impl": "torch", "seconds": t, "gbps": 2 * x.numel() * 4 / t / 1e9}))
t = bench(lambda: torch.exp(x).sum(dim=-1))
print(json.dumps({"case": "rowsum_4096x1024", "impl": "torch", "seconds": t, "gbps": x.numel() * 4 / t / 1e9}))
