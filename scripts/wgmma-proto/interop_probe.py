#!/usr/bin/env python3
"""Can a kernel launched through the CUDA driver read an OpenCL buffer of
NVIDIA's OpenCL? (What a CUDA launch path for kernels needing more than
OpenCL's 48 KiB of local memory would rest on.) Prints the OpenCL device's
extensions, the buffer's device address (a PTX kernel writes its pointer
argument), and what the CUDA driver's primary context says about that
address: its context attribute and a cuMemcpyDtoH of the buffer.
Usage: python3 interop_probe.py"""
import ctypes as C
import numpy as np
from opencl_run import build, check, cl, device, session

PTX = """.version 8.0
.target sm_90
.address_size 64
.visible .entry addr(.param .u64 .ptr .global .align 4 p0, .param .u64 .ptr .global .align 4 p1) {
  .reg .b64 %rd<3>;
  ld.param.u64 %rd1, [p0];
  ld.param.u64 %rd2, [p1];
  st.global.u64 [%rd2], %rd1;
  ret;
}
"""


def main():
    dev, name = device()
    ext = C.create_string_buffer(8192)
    cl.clGetDeviceInfo(dev, C.c_uint(0x1030), C.c_size_t(8192), ext, None)
    print("device:", name)
    print("extensions:", ext.value.decode())
    context, queue, buffer = session(dev)
    data = np.arange(1024, dtype=np.float32)
    buf = buffer(data.nbytes, data)
    out = buffer(8)
    prog = build(context, dev, PTX, True)
    err = C.c_int()
    k = C.c_void_p(cl.clCreateKernel(prog, b"addr", C.byref(err)))
    check(err.value, "clCreateKernel")
    check(cl.clSetKernelArg(k, 0, C.c_size_t(8), C.byref(buf)), "arg")
    check(cl.clSetKernelArg(k, 1, C.c_size_t(8), C.byref(out)), "arg")
    g = C.c_size_t(1)
    check(cl.clEnqueueNDRangeKernel(queue, k, 1, None, C.byref(g), C.byref(g), 0, None, None), "enqueue")
    address = C.c_uint64()
    check(cl.clEnqueueReadBuffer(queue, out, 1, C.c_size_t(0), C.c_size_t(8), C.byref(address), 0, None, None), "read")
    check(cl.clFinish(queue), "finish")
    print(f"OpenCL buffer device address: {address.value:#x}")
    cu = C.CDLL("libcuda.so.1")
    print("cuInit:", cu.cuInit(0))
    cdev = C.c_int()
    print("cuDeviceGet:", cu.cuDeviceGet(C.byref(cdev), 0))
    current = C.c_void_p()
    print("cuCtxGetCurrent (before):", cu.cuCtxGetCurrent(C.byref(current)), current.value)
    ctx = C.c_void_p()
    print("cuDevicePrimaryCtxRetain:", cu.cuDevicePrimaryCtxRetain(C.byref(ctx), cdev), ctx.value)
    print("cuCtxSetCurrent:", cu.cuCtxSetCurrent(ctx))
    owner = C.c_void_p()
    r = cu.cuPointerGetAttribute(C.byref(owner), C.c_int(1), C.c_uint64(address.value))  # CONTEXT
    print("cuPointerGetAttribute(CONTEXT):", r, owner.value, "(primary:", ctx.value, ")")
    mtype = C.c_uint()
    r = cu.cuPointerGetAttribute(C.byref(mtype), C.c_int(2), C.c_uint64(address.value))  # MEMORY_TYPE
    print("cuPointerGetAttribute(MEMORY_TYPE):", r, mtype.value)
    host = np.zeros(1024, dtype=np.float32)
    r = cu.cuMemcpyDtoH_v2(host.ctypes.data_as(C.c_void_p), C.c_uint64(address.value), C.c_size_t(host.nbytes))
    print("cuMemcpyDtoH from the OpenCL buffer:", r, "equal" if r == 0 and np.array_equal(host, data) else "not equal")
    # the other way round: contexts the process has (cuCtxGetCurrent after OpenCL on another thread is not visible)
    count = C.c_int()
    print("cuDevicePrimaryCtxGetState:", cu.cuDevicePrimaryCtxGetState(cdev, C.byref(count), C.byref(C.c_int())), count.value)


if __name__ == "__main__":
    main()
