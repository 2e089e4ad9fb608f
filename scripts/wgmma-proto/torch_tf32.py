#!/usr/bin/env python3
"""torch's TF32 matmul (cuBLAS) at 2048^3 and 4096^3, the prototypes'
reference in the same device run: inputs uniform in [-0.5, 0.5), 3
warm-up products, then REPEATS timings of 20 products each (CUDA events).
Usage: python3 torch_tf32.py [REPEATS]"""
import sys
import torch

torch.backends.cuda.matmul.allow_tf32 = True
repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 1
for n in (2048, 4096):
    a = torch.rand(n, n, device="cuda") - 0.5
    b = torch.rand(n, n, device="cuda") - 0.5
    for _ in range(3):
        a @ b
    for _ in range(repeats):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        s.record()
        for _ in range(20):
            a @ b
        e.record()
        torch.cuda.synchronize()
        ms = s.elapsed_time(e) / 20
        print(f"torch tf32 {n}: ms={ms:.3f} TF/s={2*n**3/ms/1e9:.1f}")
