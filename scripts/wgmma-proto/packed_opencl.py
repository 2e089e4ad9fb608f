#!/usr/bin/env python3
"""Runs packed.cu's kernels from nvcc's PTX (packed.ptx) through NVIDIA's
OpenCL (clCreateProgramWithBinary, as tcc's runtime loads PTX): the packing
kernels of A (`pack`) and B (`pack_tiled`), then one `gemm_packed` entry, at SIZE^3 (4096), checked
against numpy on a sample of rows, timed with OpenCL profiling events
(mean of 20 after 3 warm-up launches). Pointer parameters are marked
`.ptr .global` first (NVIDIA's OpenCL faults on nvcc's plain `.u64`).
Usage: python3 packed_opencl.py packed.ptx ENTRY_REGEX [SIZE]"""
import ctypes as C
import re
import sys
import numpy as np
from opencl_run import cl, check, device, build, session, nvcc_ptx


def main():
    dev, name = device()
    print("device:", name)
    err = C.c_int()
    context, queue, buffer = session(dev)
    text = nvcc_ptx(sys.argv[1])
    size = int(sys.argv[3]) if len(sys.argv) > 3 else 4096
    entries = [e for e in re.findall(r"\.entry\s+(\w+)", text) if e.startswith("_Z11gemm_packed") and re.search(sys.argv[2], e)]
    if not entries:
        sys.exit("no such entry")
    entry = entries[0]
    bm, bn, wgn, ks, st, pw, minb, dyn, w = map(int, re.match(
        r"_Z11gemm_packedILi(\d+)ELi(\d+)ELi(\d+)ELi(\d+)ELi(\d+)ELi(\d+)ELi(\d+)ELi(\d+)ELi(\d+)E", entry).groups())
    threads = (bm // 64) * wgn * 128 + 32 * pw
    rng = np.random.default_rng(1)
    a = rng.uniform(-1, 1, (size, size)).astype(np.float32)
    b = rng.uniform(-1, 1, (size, size)).astype(np.float32)
    rows = [0, 1, 777, size - 1]
    ref = a[rows].astype(np.float64) @ b.astype(np.float64)
    A, B, Ap, Bp, Cb = buffer(a.nbytes, a), buffer(b.nbytes, b), buffer(a.nbytes), buffer(b.nbytes), buffer(a.nbytes)
    prog = build(context, dev, text, True)

    def kernel(name, args):
        k = C.c_void_p(cl.clCreateKernel(prog, name.encode(), C.byref(err)))
        check(err.value, f"clCreateKernel {name}")
        for i, v in enumerate(args):
            if isinstance(v, int):
                check(cl.clSetKernelArg(k, i, C.c_size_t(4), C.byref(C.c_int(v))), "arg")
            else:
                check(cl.clSetKernelArg(k, i, C.c_size_t(8), C.byref(v)), "arg")
        return k

    def run(k, gsz, lsz, iters):
        times = []
        g, l = (C.c_size_t * 2)(*gsz), (C.c_size_t * 2)(*lsz)
        for it in range(iters + 3):
            ev = C.c_void_p()
            check(cl.clEnqueueNDRangeKernel(queue, k, 2, None, g, l, 0, None, C.byref(ev)), "enqueue")
            check(cl.clWaitForEvents(1, C.byref(ev)), "wait")
            t0, t1 = C.c_ulong(), C.c_ulong()
            cl.clGetEventProfilingInfo(ev, C.c_uint(0x1282), C.c_size_t(8), C.byref(t0), None)
            cl.clGetEventProfilingInfo(ev, C.c_uint(0x1284), C.c_size_t(8), C.byref(t1), None)
            if it >= 3:
                times.append((t1.value - t0.value) / 1e6)
        return sum(times) / len(times)

    chunks = size * size // 4
    pack_a = kernel(f"_Z4packILi{bm}ELi{ks}ELi0EEvPKfPfiii", [A, Ap, size, size, size])
    pack_b = kernel(f"_Z10pack_tiledILi{bn}ELi{ks}EEvPKfPfiii", [B, Bp, size, size, size])
    ms_a = run(pack_a, ((chunks + 255) // 256 * 256, 1), (256, 1), 20)
    ms_b = run(pack_b, (size // 64 * 256, size // 32), (256, 1), 20)
    gemm = kernel(entry, [Ap, Bp, Cb, size, size, size])
    ms = run(gemm, (size // bn * threads, size // bm), (threads, 1), 20)
    out = np.empty_like(a)
    check(cl.clEnqueueReadBuffer(queue, Cb, 1, C.c_size_t(0), C.c_size_t(out.nbytes), out.ctypes.data_as(C.c_void_p),
                                 0, None, None), "read")
    e = np.abs(out[rows] - ref).max()
    rel = np.linalg.norm(out[rows] - ref) / np.linalg.norm(ref)
    flop = 2 * size ** 3
    print(f"OpenCL {size}^3 {bm}x{bn} wgn{wgn} ks{ks} st{st} pw{pw} minb{minb} w{w}: gemm ms={ms:.3f} TF/s={flop / ms / 1e9:.1f}"
          f" | pack A ms={ms_a:.3f} B ms={ms_b:.3f} | sum TF/s={flop / (ms + ms_a + ms_b) / 1e9:.1f}"
          f" | max_err={e:.3g} rel_frob={rel:.3g} (sample rows)")


if __name__ == "__main__":
    main()
