#!/usr/bin/env python3
"""Is NVIDIA's OpenCL's own CUDA context visible to the CUDA driver API?
(interop_fd_probe.py measured ~290 us per hand-over between OpenCL's
context and CUDA's primary one: the GPU switches contexts. A kernel
launched into OpenCL's own context would not switch.) Prints
cuCtxGetCurrent on the main thread after OpenCL calls and inside an
OpenCL event callback, and, where a context shows up, whether an OpenCL
buffer's address belongs to it."""
import ctypes as C
import numpy as np
from opencl_run import build, check, cl, device, session
from interop_probe import PTX

cu = C.CDLL("libcuda.so.1")


def main():
    print("cuInit:", cu.cuInit(0))
    dev, name = device()
    context, queue, buffer = session(dev)
    data = np.arange(1024, dtype=np.float32)
    buf = buffer(data.nbytes, data)
    out = buffer(8)
    prog = build(context, dev, PTX, True)
    err = C.c_int()
    k = C.c_void_p(cl.clCreateKernel(prog, b"addr", C.byref(err)))
    cl.clSetKernelArg(k, 0, C.c_size_t(8), C.byref(buf))
    cl.clSetKernelArg(k, 1, C.c_size_t(8), C.byref(out))
    g = C.c_size_t(1)
    event = C.c_void_p()
    seen = {}
    CB = C.CFUNCTYPE(None, C.c_void_p, C.c_int, C.c_void_p)

    def callback(ev, status, user):
        cur = C.c_void_p()
        seen["callback"] = (cu.cuCtxGetCurrent(C.byref(cur)), cur.value)

    cb = CB(callback)
    check(cl.clEnqueueNDRangeKernel(queue, k, 1, None, C.byref(g), C.byref(g), 0, None, C.byref(event)), "enqueue")
    check(cl.clSetEventCallback(event, 0, cb, None), "callback")
    address = C.c_uint64()
    check(cl.clEnqueueReadBuffer(queue, out, 1, C.c_size_t(0), C.c_size_t(8), C.byref(address), 0, None, None), "read")
    check(cl.clFinish(queue), "finish")
    import time; time.sleep(0.2)
    cur = C.c_void_p()
    print("main thread after OpenCL:", cu.cuCtxGetCurrent(C.byref(cur)), cur.value)
    print("in the event callback:", seen.get("callback"))
    print(f"buffer address {address.value:#x}")
    for label, ctx in (("main", cur.value), ("callback", (seen.get("callback") or (0, None))[1])):
        if not ctx:
            continue
        print(label, "cuCtxSetCurrent:", cu.cuCtxSetCurrent(C.c_void_p(ctx)))
        host = np.zeros(1024, dtype=np.float32)
        r = cu.cuMemcpyDtoH_v2(host.ctypes.data_as(C.c_void_p), C.c_uint64(address.value), C.c_size_t(host.nbytes))
        print(label, "cuMemcpyDtoH of the OpenCL buffer in that context:", r, "equal" if r == 0 and np.array_equal(host, data) else "")
        owner = C.c_void_p()
        print(label, "cuPointerGetAttribute(CONTEXT):", cu.cuPointerGetAttribute(C.byref(owner), C.c_int(1), C.c_uint64(address.value)), owner.value)


if __name__ == "__main__":
    main()
