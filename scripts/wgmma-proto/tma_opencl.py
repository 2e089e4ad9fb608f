#!/usr/bin/env python3
"""The TMA prototype's OpenCL-launchable entries (tma.cu: `gemmt_dev`, the
tensor map built on the device, and `gemmv`, tcc's current body) from
nvcc's PTX through NVIDIA's OpenCL (clCreateProgramWithBinary, as tcc's
runtime loads PTX), at 4096^3: four sample rows against numpy's float64
product, profiling events (mean of 20 after 3).
Usage: python3 tma_opencl.py tma.ptx"""
import ctypes as C
import re
import sys
import numpy as np
from opencl_run import build, check, cl, device, session


def main():
    dev, name = device()
    print("device:", name)
    context, queue, buffer = session(dev)
    text = open(sys.argv[1]).read()
    # NVIDIA's OpenCL passes buffers only to parameters marked `.ptr .global`
    text = re.sub(r"\.param \.u64 (\w+_param_[0123])\b", r".param .u64 .ptr .global .align 4 \1", text)
    size = 4096
    rng = np.random.default_rng(1)
    a = rng.uniform(-1, 1, (size, size)).astype(np.float32)
    b = rng.uniform(-1, 1, (size, size)).astype(np.float32)
    rows = [0, 1, 777, 4095]
    ref = a[rows].astype(np.float64) @ b.astype(np.float64)
    A, B, Cb = buffer(a.nbytes, a), buffer(b.nbytes, b), buffer(a.nbytes)
    scratch = buffer(128 * (size // 64) ** 2)
    prog = build(context, dev, text, True)
    err = C.c_int()
    for entry in re.findall(r"\.entry\s+(\w+)", text):
        if "gemmt_dev" not in entry and "gemmv" not in entry:
            continue
        kern = C.c_void_p(cl.clCreateKernel(prog, entry.encode(), C.byref(err)))
        check(err.value, "clCreateKernel")
        bufs = (A, B, Cb, scratch) if "gemmt_dev" in entry else (A, B, Cb)
        for i, buf in enumerate(bufs):
            check(cl.clSetKernelArg(kern, i, C.c_size_t(8), C.byref(buf)), "arg")
        for i in range(3):
            check(cl.clSetKernelArg(kern, len(bufs) + i, C.c_size_t(4), C.byref(C.c_int(size))), "arg")
        bm, wg = map(int, re.match(r"_Z9gemmt_devILi(\d+)ELi(\d+)E", entry).groups()) if "gemmt_dev" in entry else (128, 2)
        gsz = (C.c_size_t * 2)(size // (64 * wg) * 128 * wg, (size + bm - 1) // bm)
        lsz = (C.c_size_t * 2)(128 * wg, 1)
        times = []
        for it in range(23):
            ev = C.c_void_p()
            r = cl.clEnqueueNDRangeKernel(queue, kern, 2, None, gsz, lsz, 0, None, C.byref(ev))
            if r != 0:
                print(entry, "enqueue error", r)
                return
            r = cl.clWaitForEvents(1, C.byref(ev))
            if r != 0:
                print(entry, "wait error", r)
                return
            t0, t1 = C.c_ulong(), C.c_ulong()
            cl.clGetEventProfilingInfo(ev, C.c_uint(0x1282), C.c_size_t(8), C.byref(t0), None)
            cl.clGetEventProfilingInfo(ev, C.c_uint(0x1284), C.c_size_t(8), C.byref(t1), None)
            if it >= 3:
                times.append((t1.value - t0.value) / 1e6)
        out = np.empty_like(a)
        check(cl.clEnqueueReadBuffer(queue, Cb, 1, C.c_size_t(0), C.c_size_t(out.nbytes),
                                     out.ctypes.data_as(C.c_void_p), 0, None, None), "read")
        rel = np.linalg.norm(out[rows] - ref) / np.linalg.norm(ref)
        ms = sum(times) / len(times)
        print(f"OpenCL {entry}: ms={ms:.3f} TF/s={2 * size ** 3 / ms / 1e9:.1f} rel_err={rel:.3g}")


if __name__ == "__main__":
    main()
