#!/usr/bin/env python3
"""Runs tcc's TF32 SGEMM kernel (its PTX, `tcc compile --emit=ptx`) through
the CUDA driver API instead of OpenCL, so that Nsight Compute can profile
it (ncu does not see OpenCL launches): batch_matmul_0 on SIZE^3, 128x128
tiles of 16x16 work-items, C = A B with A, B uniform [-1, 1), a few rows
checked against numpy, timed with CUDA events.
Usage: python3 cuda_run.py KERNEL.ptx [SIZE] [ITERATIONS]
Profile: ncu -k batch_matmul_0 -c 1 --section ... python3 cuda_run.py KERNEL.ptx 4096 1"""
import ctypes as C
import sys
import numpy as np

cu = C.CDLL("libcuda.so.1")


def check(r, what):
    if r != 0:
        raise RuntimeError(f"{what}: CUDA error {r}")


def main():
    ptx = open(sys.argv[1], "rb").read() + b"\0"
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 4096
    iters = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    check(cu.cuInit(0), "cuInit")
    dev, ctx, mod, fn = C.c_int(), C.c_void_p(), C.c_void_p(), C.c_void_p()
    check(cu.cuDeviceGet(C.byref(dev), 0), "cuDeviceGet")
    check(cu.cuDevicePrimaryCtxRetain(C.byref(ctx), dev), "ctx")
    check(cu.cuCtxSetCurrent(ctx), "ctx current")
    check(cu.cuModuleLoadData(C.byref(mod), C.c_char_p(ptx)), "cuModuleLoadData")
    check(cu.cuModuleGetFunction(C.byref(fn), mod, b"batch_matmul_0"), "cuModuleGetFunction")
    rng = np.random.default_rng(1)
    a = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    b = rng.uniform(-1, 1, (n, n)).astype(np.float32)
    ptrs = []
    for host in (None, a, b):  # param 0 is the output
        p = C.c_uint64()
        check(cu.cuMemAlloc_v2(C.byref(p), C.c_size_t(a.nbytes)), "cuMemAlloc")
        if host is not None:
            check(cu.cuMemcpyHtoD_v2(p, host.ctypes.data_as(C.c_void_p), C.c_size_t(a.nbytes)), "HtoD")
        ptrs.append(p)
    params = (C.c_void_p * 3)(*[C.cast(C.byref(p), C.c_void_p) for p in ptrs])

    def launch():
        check(cu.cuLaunchKernel(fn, n // 128, n // 128, 1, 16, 16, 1, 0, None, params, None), "launch")

    launch()
    check(cu.cuCtxSynchronize(), "sync")
    out = np.empty_like(a)
    check(cu.cuMemcpyDtoH_v2(out.ctypes.data_as(C.c_void_p), ptrs[0], C.c_size_t(a.nbytes)), "DtoH")
    rows = [0, 1, 777, n - 1]
    err = np.abs(out[rows] - a[rows] @ b).max()
    e0, e1 = C.c_void_p(), C.c_void_p()
    cu.cuEventCreate(C.byref(e0), 0)
    cu.cuEventCreate(C.byref(e1), 0)
    cu.cuEventRecord(e0, None)
    for _ in range(iters):
        launch()
    cu.cuEventRecord(e1, None)
    cu.cuEventSynchronize(e1)
    ms = C.c_float()
    cu.cuEventElapsedTime(C.byref(ms), e0, e1)
    ms = ms.value / iters
    print(f"CUDA {sys.argv[1]} {n}^3: ms={ms:.3f} TF/s={2 * n ** 3 / ms / 1e9:.1f} max_err={err:.3g}")


if __name__ == "__main__":
    main()
