#!/usr/bin/env python3
"""Runs tcc's TF32 GEMM kernels (their PTX, `tcc compile --emit=ptx
--precision=tf32 [--backend=cuda]` of scripts/gen-bench-models.py's
sgemm_N) through the CUDA driver API, beside torch's TF32 matmul (cuBLAS),
in one run: C = A B for A, B uniform [-1, 1), checked on a few rows against
float64, timed with CUDA events (mean of ITERATIONS after a warm-up).

A kernel whose PTX carries `// tcc-dynamic-local: KERNEL BYTES` (the
large-tile wgmma body of --backend=cuda) gets that much dynamic shared
memory (cuFuncSetAttribute + cuLaunchKernel), as the runtime's CUDA
backend gives it. The grid follows the kernel's tile comment in the PTX
file name: LABEL:TILE_M:TILE_N:PATH.

Usage: python3 large_tile_run.py N ITERATIONS LABEL:TM:TN:KERNEL.ptx ...
"""
import ctypes as C
import sys

import numpy as np

cu = C.CDLL("libcuda.so.1")


def check(r, what):
    if r != 0:
        name = C.c_char_p()
        cu.cuGetErrorName(r, C.byref(name))
        raise RuntimeError(f"{what}: CUDA error {r} ({name.value})")


def dynamic_local(ptx: bytes):
    for line in ptx.decode().splitlines():
        if line.startswith("// tcc-dynamic-local:"):
            return int(line.split()[-1])
    return 0


def main():
    n = int(sys.argv[1])
    iters = int(sys.argv[2])
    check(cu.cuInit(0), "cuInit")
    dev, ctx = C.c_int(), C.c_void_p()
    check(cu.cuDeviceGet(C.byref(dev), 0), "cuDeviceGet")
    check(cu.cuDevicePrimaryCtxRetain(C.byref(ctx), dev), "ctx")
    check(cu.cuCtxSetCurrent(ctx), "ctx current")
    rng = np.random.default_rng(1)
    a = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    b = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    rows = [0, 1, 777 % n, n - 1]
    exact = a[rows].astype(np.float64) @ b.astype(np.float64)
    ptrs = []
    for host in (None, a, b):
        p = C.c_uint64()
        check(cu.cuMemAlloc_v2(C.byref(p), C.c_size_t(a.nbytes)), "cuMemAlloc")
        if host is not None:
            check(cu.cuMemcpyHtoD_v2(p, host.ctypes.data_as(C.c_void_p), C.c_size_t(a.nbytes)), "HtoD")
        ptrs.append(p)
    slots = C.c_uint64()
    check(cu.cuMemAlloc_v2(C.byref(slots), C.c_size_t(n * n)), "slots")  # ample: 256 B per 128x128
    ptrs.append(slots)
    params = (C.c_void_p * 4)(*[C.cast(C.byref(p), C.c_void_p) for p in ptrs])
    for spec in sys.argv[3:]:
        label, tm, tn, path = spec.split(":", 3)
        tm, tn = int(tm), int(tn)
        ptx = open(path, "rb").read()
        shared = dynamic_local(ptx)
        mod, fn = C.c_void_p(), C.c_void_p()
        log = C.create_string_buffer(16384)
        opts = (C.c_int * 2)(5, 6)  # CU_JIT_ERROR_LOG_BUFFER, _SIZE_BYTES
        vals = (C.c_void_p * 2)(C.cast(log, C.c_void_p), C.c_void_p(16384))
        r = cu.cuModuleLoadDataEx(C.byref(mod), C.c_char_p(ptx + b"\0"), 2, opts, vals)
        if r != 0:
            print(f"{label}: cuModuleLoadDataEx error {r}: {log.value.decode(errors='replace')}")
            continue
        check(cu.cuModuleGetFunction(C.byref(fn), mod, b"batch_matmul_0"), "cuModuleGetFunction")
        if shared:
            check(cu.cuFuncSetAttribute(fn, 8, shared), "cuFuncSetAttribute(max dynamic shared)")
        regs = C.c_int()
        cu.cuFuncGetAttribute(C.byref(regs), 4, fn)  # CU_FUNC_ATTRIBUTE_NUM_REGS

        def launch():
            check(cu.cuLaunchKernel(fn, n // tn, n // tm, 1, 16, 16, 1, shared, None, params, None), "launch")

        check(cu.cuMemsetD8_v2(ptrs[0], 0, C.c_size_t(a.nbytes)), "memset")
        launch()
        check(cu.cuCtxSynchronize(), f"{label}: sync")
        out = np.empty_like(a)
        check(cu.cuMemcpyDtoH_v2(out.ctypes.data_as(C.c_void_p), ptrs[0], C.c_size_t(a.nbytes)), "DtoH")
        err = np.abs(out[rows] - exact).max()
        e0, e1 = C.c_void_p(), C.c_void_p()
        cu.cuEventCreate(C.byref(e0), 0)
        cu.cuEventCreate(C.byref(e1), 0)
        cu.cuEventRecord(e0, None)
        for _ in range(iters):
            launch()
        cu.cuEventRecord(e1, None)
        check(cu.cuEventSynchronize(e1), f"{label}: timed runs")
        ms = C.c_float()
        cu.cuEventElapsedTime(C.byref(ms), e0, e1)
        ms = ms.value / iters
        print(f"{label} {n}^3: dynamic shared {shared} B, {regs.value} registers, "
              f"{ms:.4f} ms, {2 * n ** 3 / ms / 1e9:.1f} TF/s, max |err| vs float64 {err:.3g}")
    try:
        import torch
        torch.backends.cuda.matmul.allow_tf32 = True
        ta = torch.from_numpy(a).cuda()
        tb = torch.from_numpy(b).cuda()
        for _ in range(3):
            tc = ta @ tb
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        s.record()
        for _ in range(iters):
            tc = ta @ tb
        e.record()
        torch.cuda.synchronize()
        ms = s.elapsed_time(e) / iters
        err = np.abs(tc.cpu().numpy()[rows] - exact).max()
        print(f"torch TF32 (cuBLAS) {n}^3: {ms:.4f} ms, {2 * n ** 3 / ms / 1e9:.1f} TF/s, max |err| {err:.3g}")
    except ImportError:
        print("torch: not installed")


if __name__ == "__main__":
    main()
