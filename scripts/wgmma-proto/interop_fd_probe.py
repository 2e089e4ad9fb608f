#!/usr/bin/env python3
"""Memory and semaphores shared between NVIDIA's OpenCL and the CUDA driver
(what a CUDA launch path for kernels needing more than OpenCL's 48 KiB of
local memory would rest on; interop_probe.py found that an OpenCL buffer's
address means nothing to CUDA).

1. Memory: CUDA allocates (cuMemCreate, exportable as a POSIX file
   descriptor), maps it, exports the descriptor; OpenCL imports it
   (clCreateBufferWithProperties, CL_EXTERNAL_MEMORY_HANDLE_OPAQUE_FD_KHR).
   An OpenCL kernel writes, CUDA reads, and the other way round.
2. Semaphores: OpenCL creates two binary semaphores exportable as file
   descriptors, CUDA imports them (cuImportExternalSemaphore). OpenCL
   kernel -> signal -> CUDA waits, copies, sets -> signal -> OpenCL waits
   and reads, with no host wait in between; then the round trip's cost.
Usage: python3 interop_fd_probe.py"""
import ctypes as C
import time
import numpy as np
from opencl_run import build, check, cl, device, session

cl.clGetExtensionFunctionAddressForPlatform.restype = C.c_void_p
cl.clGetExtensionFunctionAddressForPlatform.argtypes = [C.c_void_p, C.c_char_p]
cl.clCreateBufferWithProperties.restype = C.c_void_p
cu = C.CDLL("libcuda.so.1")


def cucheck(r, what):
    if r != 0:
        name = C.c_char_p()
        cu.cuGetErrorName(r, C.byref(name))
        raise RuntimeError(f"{what}: CUDA error {r} {name.value}")


def info_list(dev, param):
    size = C.c_size_t()
    r = cl.clGetDeviceInfo(dev, C.c_uint(param), C.c_size_t(0), None, C.byref(size))
    if r != 0:
        return f"error {r}"
    vals = (C.c_uint * max(1, size.value // 4))()
    cl.clGetDeviceInfo(dev, C.c_uint(param), size, vals, None)
    return [hex(v) for v in vals[: size.value // 4]]


SRC = """__kernel void fill(__global int* p, int v, int n) {
  int i = get_global_id(0);
  int x = v;
  for (int r = 0; r < 2000; ++r) x = (x * 3 + r) & 0xffff;  /* slow enough that a race would show */
  if (i < n) p[i] = v + (x & 0);
}"""


def main():
    dev, name = device()
    print("device:", name)
    platform = C.c_void_p()
    cl.clGetDeviceInfo(dev, C.c_uint(0x1031), C.c_size_t(8), C.byref(platform), None)
    print("memory import handle types:", info_list(dev, 0x204F))
    print("semaphore types:", info_list(dev, 0x204C))
    print("semaphore import handle types:", info_list(dev, 0x204D))
    print("semaphore export handle types:", info_list(dev, 0x204E))
    context, queue, buffer = session(dev)
    err = C.c_int()

    cucheck(cu.cuInit(0), "cuInit")
    cdev = C.c_int()
    cucheck(cu.cuDeviceGet(C.byref(cdev), 0), "cuDeviceGet")
    ctx = C.c_void_p()
    cucheck(cu.cuDevicePrimaryCtxRetain(C.byref(ctx), cdev), "retain")
    cucheck(cu.cuCtxSetCurrent(ctx), "set current")

    # --- memory ---
    prop = (C.c_ubyte * 64)()
    C.memmove(prop, (C.c_int * 4)(1, 1, 1, cdev.value), 16)  # PINNED, POSIX_FD, DEVICE, id
    gran = C.c_size_t()
    cucheck(cu.cuMemGetAllocationGranularity(C.byref(gran), prop, 0), "granularity")
    n = 1 << 20
    size = ((n * 4 + gran.value - 1) // gran.value) * gran.value
    handle = C.c_uint64()
    cucheck(cu.cuMemCreate(C.byref(handle), C.c_size_t(size), prop, C.c_ulonglong(0)), "cuMemCreate")
    ptr = C.c_uint64()
    cucheck(cu.cuMemAddressReserve(C.byref(ptr), C.c_size_t(size), C.c_size_t(0), C.c_uint64(0), C.c_ulonglong(0)), "reserve")
    cucheck(cu.cuMemMap(ptr, C.c_size_t(size), C.c_size_t(0), handle, C.c_ulonglong(0)), "map")
    access = (C.c_int * 3)(1, cdev.value, 3)  # DEVICE, id, READWRITE
    cucheck(cu.cuMemSetAccess(ptr, C.c_size_t(size), access, C.c_size_t(1)), "access")
    fd = C.c_int(-1)
    cucheck(cu.cuMemExportToShareableHandle(C.byref(fd), handle, C.c_int(1), C.c_ulonglong(0)), "export")
    print(f"CUDA allocation: {size} bytes at {ptr.value:#x}, granularity {gran.value}, fd {fd.value}")
    props = (C.c_uint64 * 6)(0x2060, fd.value, 0x2051, dev.value, 0, 0)
    imported = C.c_void_p(cl.clCreateBufferWithProperties(context, props, C.c_uint64(1), C.c_size_t(size), None, C.byref(err)))
    print("clCreateBufferWithProperties (opaque fd):", err.value)
    check(err.value, "import")
    acquire = C.CFUNCTYPE(C.c_int, C.c_void_p, C.c_uint, C.c_void_p, C.c_uint, C.c_void_p, C.c_void_p)(
        cl.clGetExtensionFunctionAddressForPlatform(platform, b"clEnqueueAcquireExternalMemObjectsKHR"))
    release = C.CFUNCTYPE(C.c_int, C.c_void_p, C.c_uint, C.c_void_p, C.c_uint, C.c_void_p, C.c_void_p)(
        cl.clGetExtensionFunctionAddressForPlatform(platform, b"clEnqueueReleaseExternalMemObjectsKHR"))
    prog = build(context, dev, SRC, False)
    k = C.c_void_p(cl.clCreateKernel(prog, b"fill", C.byref(err)))
    check(err.value, "kernel")

    def fill(v):
        cl.clSetKernelArg(k, 0, C.c_size_t(8), C.byref(imported))
        cl.clSetKernelArg(k, 1, C.c_size_t(4), C.byref(C.c_int(v)))
        cl.clSetKernelArg(k, 2, C.c_size_t(4), C.byref(C.c_int(n)))
        g, l = C.c_size_t(n), C.c_size_t(256)
        check(cl.clEnqueueNDRangeKernel(queue, k, 1, None, C.byref(g), C.byref(l), 0, None, None), "enqueue")

    mems = (C.c_void_p * 1)(imported.value)
    print("acquire:", acquire(queue, 1, mems, 0, None, None))
    fill(41)
    print("release:", release(queue, 1, mems, 0, None, None))
    check(cl.clFinish(queue), "finish")
    host = np.zeros(n, dtype=np.int32)
    cucheck(cu.cuMemcpyDtoH_v2(host.ctypes.data_as(C.c_void_p), ptr, C.c_size_t(n * 4)), "DtoH")
    print("OpenCL wrote 41, CUDA reads:", np.unique(host)[:4], "OK" if (host == 41).all() else "WRONG")
    cucheck(cu.cuMemsetD32_v2(ptr, C.c_uint(99), C.c_size_t(n)), "memset")
    cucheck(cu.cuCtxSynchronize(), "sync")
    acquire(queue, 1, mems, 0, None, None)
    cl.clEnqueueReadBuffer(queue, imported, 1, C.c_size_t(0), C.c_size_t(n * 4), host.ctypes.data_as(C.c_void_p), 0, None, None)
    release(queue, 1, mems, 0, None, None)
    print("CUDA wrote 99, OpenCL reads:", np.unique(host)[:4], "OK" if (host == 99).all() else "WRONG")

    # --- host-synchronised hand-over (no semaphores) ---
    hstream = C.c_void_p()
    cucheck(cu.cuStreamCreate(C.byref(hstream), C.c_uint(1)), "stream")
    def host_round_trip(v):
        acquire(queue, 1, mems, 0, None, None)
        fill(v)
        release(queue, 1, mems, 0, None, None)
        check(cl.clFinish(queue), "finish")
        cucheck(cu.cuMemsetD32Async(ptr, C.c_uint(v + 1), C.c_size_t(n), hstream), "memset")
        cucheck(cu.cuStreamSynchronize(hstream), "sync")
    host_round_trip(5)
    acquire(queue, 1, mems, 0, None, None)
    cl.clEnqueueReadBuffer(queue, imported, 1, C.c_size_t(0), C.c_size_t(n * 4), host.ctypes.data_as(C.c_void_p), 0, None, None)
    release(queue, 1, mems, 0, None, None)
    print("host-synchronised hand-over:", "OK" if (host == 6).all() else "WRONG")
    for reps in (1, 50):
        t0 = time.perf_counter()
        for i in range(reps):
            host_round_trip(i)
        print(f"{reps} host-synchronised round trips (OpenCL fill, clFinish, CUDA memset, cuStreamSynchronize): {(time.perf_counter() - t0) / reps * 1e6:.1f} us each")
    def timed(label, body, reps=50):
        body(0)
        t0 = time.perf_counter()
        for i in range(reps):
            body(i)
        print(f"{label}: {(time.perf_counter() - t0) / reps * 1e6:.1f} us each")

    def no_acquire(v):
        fill(v)
        check(cl.clFinish(queue), "finish")
        cucheck(cu.cuMemsetD32Async(ptr, C.c_uint(v + 1), C.c_size_t(n), hstream), "memset")
        cucheck(cu.cuStreamSynchronize(hstream), "sync")

    def cuda_only(v):
        cucheck(cu.cuMemsetD32Async(ptr, C.c_uint(v + 1), C.c_size_t(n), hstream), "memset")
        cucheck(cu.cuStreamSynchronize(hstream), "sync")

    def cuda_other_buffer(v):
        cucheck(cu.cuMemsetD32Async(scratch, C.c_uint(v + 1), C.c_size_t(n), hstream), "memset")
        cucheck(cu.cuStreamSynchronize(hstream), "sync")

    def alternate_unrelated(v):
        fill(v)
        check(cl.clFinish(queue), "finish")
        cuda_other_buffer(v)

    def acquire_release_only(v):
        acquire(queue, 1, mems, 0, None, None)
        release(queue, 1, mems, 0, None, None)
        check(cl.clFinish(queue), "finish")

    scratch = C.c_uint64()
    cucheck(cu.cuMemAlloc_v2(C.byref(scratch), C.c_size_t(n * 4)), "alloc")
    timed("round trip without acquire/release", no_acquire)
    timed("CUDA memset + sync alone (imported memory)", cuda_only)
    timed("CUDA memset + sync alone (cuMemAlloc memory)", cuda_other_buffer)
    timed("OpenCL fill + clFinish, then CUDA memset of another buffer + sync", alternate_unrelated)
    timed("acquire + release + clFinish", acquire_release_only)
    t0 = time.perf_counter()
    for i in range(50):
        fill(i)
    check(cl.clFinish(queue), "finish")
    print(f"the OpenCL fill alone, queued: {(time.perf_counter() - t0) / 50 * 1e6:.1f} us each")
    t0 = time.perf_counter()
    for i in range(50):
        fill(i)
        check(cl.clFinish(queue), "finish")
    print(f"the OpenCL fill alone, clFinish after each: {(time.perf_counter() - t0) / 50 * 1e6:.1f} us each")

    # --- semaphores ---
    create = C.CFUNCTYPE(C.c_void_p, C.c_void_p, C.c_void_p, C.POINTER(C.c_int))(
        cl.clGetExtensionFunctionAddressForPlatform(platform, b"clCreateSemaphoreWithPropertiesKHR"))
    get_handle = C.CFUNCTYPE(C.c_int, C.c_void_p, C.c_void_p, C.c_uint, C.c_size_t, C.c_void_p, C.c_void_p)(
        cl.clGetExtensionFunctionAddressForPlatform(platform, b"clGetSemaphoreHandleForTypeKHR"))
    signal = C.CFUNCTYPE(C.c_int, C.c_void_p, C.c_uint, C.c_void_p, C.c_void_p, C.c_uint, C.c_void_p, C.c_void_p)(
        cl.clGetExtensionFunctionAddressForPlatform(platform, b"clEnqueueSignalSemaphoresKHR"))
    wait = C.CFUNCTYPE(C.c_int, C.c_void_p, C.c_uint, C.c_void_p, C.c_void_p, C.c_uint, C.c_void_p, C.c_void_p)(
        cl.clGetExtensionFunctionAddressForPlatform(platform, b"clEnqueueWaitSemaphoresKHR"))
    sems, cusems = [], []
    for i in range(2):
        sp = (C.c_uint64 * 6)(0x203D, 1, 0x203F, 0x2055, 0, 0)
        e = C.c_int()
        s = create(context, sp, C.byref(e))
        print(f"clCreateSemaphoreWithPropertiesKHR (exportable opaque fd) {i}:", e.value)
        if e.value != 0:
            return
        sfd = C.c_int(-1)
        r = get_handle(s, dev, 0x2055, 4, C.byref(sfd), None)
        print(f"clGetSemaphoreHandleForTypeKHR {i}:", r, "fd", sfd.value)
        if r != 0:
            return
        desc = (C.c_ubyte * 128)()
        C.memmove(desc, (C.c_int * 1)(1), 4)          # CU_EXTERNAL_SEMAPHORE_HANDLE_TYPE_OPAQUE_FD
        C.memmove(C.byref(desc, 8), (C.c_int * 1)(sfd.value), 4)
        ext = C.c_void_p()
        cucheck(cu.cuImportExternalSemaphore(C.byref(ext), desc), "cuImportExternalSemaphore")
        sems.append(C.c_void_p(s))
        cusems.append(ext)
    stream = C.c_void_p()
    cucheck(cu.cuStreamCreate(C.byref(stream), C.c_uint(1)), "stream")
    other = C.c_uint64()
    cucheck(cu.cuMemAlloc_v2(C.byref(other), C.c_size_t(n * 4)), "alloc")
    params = (C.c_ubyte * 256)()

    def round_trip(v, check_values):
        acquire(queue, 1, mems, 0, None, None)
        fill(v)
        release(queue, 1, mems, 0, None, None)
        s0 = (C.c_void_p * 1)(sems[0].value)
        check(signal(queue, 1, s0, None, 0, None, None), "signal")
        cl.clFlush(queue)
        cucheck(cu.cuWaitExternalSemaphoresAsync(C.byref(cusems[0]), params, C.c_uint(1), stream), "cu wait")
        cucheck(cu.cuMemcpyDtoDAsync_v2(other, ptr, C.c_size_t(n * 4), stream), "copy")
        cucheck(cu.cuMemsetD32Async(ptr, C.c_uint(v + 1), C.c_size_t(n), stream), "memset")
        cucheck(cu.cuSignalExternalSemaphoresAsync(C.byref(cusems[1]), params, C.c_uint(1), stream), "cu signal")
        s1 = (C.c_void_p * 1)(sems[1].value)
        check(wait(queue, 1, s1, None, 0, None, None), "wait")
        if check_values:
            acquire(queue, 1, mems, 0, None, None)
            cl.clEnqueueReadBuffer(queue, imported, 1, C.c_size_t(0), C.c_size_t(n * 4), host.ctypes.data_as(C.c_void_p), 0, None, None)
            release(queue, 1, mems, 0, None, None)
            copied = np.zeros(n, dtype=np.int32)
            cucheck(cu.cuStreamSynchronize(stream), "sync")
            cucheck(cu.cuMemcpyDtoH_v2(copied.ctypes.data_as(C.c_void_p), other, C.c_size_t(n * 4)), "DtoH")
            return (copied == v).all() and (host == v + 1).all()
        return True

    ok = all(round_trip(1000 + i, True) for i in range(5))
    print("semaphore round trips (OpenCL fill -> CUDA copy + set -> OpenCL read):", "OK" if ok else "WRONG")
    for reps in (1, 50):
        t0 = time.perf_counter()
        for i in range(reps):
            round_trip(i, False)
        check(cl.clFinish(queue), "finish")
        cucheck(cu.cuStreamSynchronize(stream), "sync")
        print(f"{reps} round trips: {(time.perf_counter() - t0) / reps * 1e6:.1f} us each")
    t0 = time.perf_counter()
    for i in range(50):
        acquire(queue, 1, mems, 0, None, None)
        fill(i)
        release(queue, 1, mems, 0, None, None)
    check(cl.clFinish(queue), "finish")
    print(f"the OpenCL part alone: {(time.perf_counter() - t0) / 50 * 1e6:.1f} us each")


if __name__ == "__main__":
    main()
