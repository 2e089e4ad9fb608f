"""Does NVIDIA's `clSetKernelAttributeNV` (cl_nv_kernel_attribute, not
documented) let a kernel use more than 48 KiB of local memory?

Read off the disassembly (nv_attr_disasm.py): the call is
`clSetKernelAttributeNV(kernel, device, attribute, size, value*)`; only
attribute 0 is accepted, its value an int of KiB (or -1), checked against
the SM's shared memory and set as the kernel's preferred shared-memory
carveout. `clGetKernelAttributeNV(kernel, device, 0, size, value*,
size_ret*)` reads back a KiB figure. This probe launches a kernel with a
__local argument of 48-200 KiB before and after setting the attribute,
from OpenCL C and from PTX, and checks that the local memory holds what
was written."""
import ctypes as C
import sys
sys.path.insert(0, __file__.rsplit("/", 1)[0])
from opencl_run import cl, device, build, session, check
import numpy as np

cl.clGetExtensionFunctionAddressForPlatform.restype = C.c_void_p
cl.clGetExtensionFunctionAddressForPlatform.argtypes = [C.c_void_p, C.c_char_p]

dev, name = device()
platform = C.c_void_p()
cl.clGetDeviceInfo(dev, C.c_uint(0x1031), C.c_size_t(8), C.byref(platform), None)
Setter = C.CFUNCTYPE(C.c_int, C.c_void_p, C.c_void_p, C.c_uint, C.c_size_t, C.c_void_p)
Getter = C.CFUNCTYPE(C.c_int, C.c_void_p, C.c_void_p, C.c_uint, C.c_size_t, C.c_void_p, C.c_void_p)
set_attr = Setter(cl.clGetExtensionFunctionAddressForPlatform(platform, b"clSetKernelAttributeNV"))
get_attr = Getter(cl.clGetExtensionFunctionAddressForPlatform(platform, b"clGetKernelAttributeNV"))
context, queue, buffer = session(dev)
err = C.c_int()

SRC = """__kernel void big(__global float* o, __local float* s, int n) {
  int t = get_local_id(0);
  for (int i = t; i < n; i += get_local_size(0)) s[i] = (float)i;
  barrier(CLK_LOCAL_MEM_FENCE);
  float acc = 0.0f;
  for (int i = t; i < n; i += get_local_size(0)) acc += s[n - 1 - i];
  o[get_group_id(0) * get_local_size(0) + t] = acc;
}"""


def reference(n, threads):
    out = np.zeros(threads, dtype=np.float64)
    for t in range(threads):
        idx = np.arange(t, n, threads)
        out[t] = (n - 1 - idx).sum()
    return out


def kernel_from(text, binary):
    prog = build(context, dev, text, binary)
    k = C.c_void_p(cl.clCreateKernel(prog, b"big", C.byref(err)))
    check(err.value, "clCreateKernel")
    return k


def try_launch(k, size, label):
    threads, groups = 256, 264
    o = buffer(4 * threads * groups)
    n = C.c_int(size // 4)
    cl.clSetKernelArg(k, 0, C.c_size_t(8), C.byref(o))
    e1 = cl.clSetKernelArg(k, 1, C.c_size_t(size), None)
    cl.clSetKernelArg(k, 2, C.c_size_t(4), C.byref(n))
    g, l = C.c_size_t(threads * groups), C.c_size_t(threads)
    e2 = cl.clEnqueueNDRangeKernel(queue, k, 1, None, C.byref(g), C.byref(l), 0, None, None)
    e3 = cl.clFinish(queue)
    ok = None
    if e1 == 0 and e2 == 0 and e3 == 0:
        out = np.zeros(threads * groups, dtype=np.float32)
        cl.clEnqueueReadBuffer(queue, o, 1, C.c_size_t(0), C.c_size_t(out.nbytes), out.ctypes.data_as(C.c_void_p), 0, None, None)
        ref = reference(size // 4, threads)
        ok = bool(np.allclose(out.reshape(groups, threads), ref[None, :], rtol=1e-5))
    print(f"{label}: __local {size // 1024} KiB: setarg {e1} enqueue {e2} finish {e3} correct {ok}")
    cl.clReleaseMemObject(o)


def attr(k):
    v, r = C.c_int(-7), C.c_size_t()
    e = get_attr(k, dev, 0, 4, C.byref(v), C.byref(r))
    return e, v.value


for form in ("opencl-c", "ptx"):
    if form == "opencl-c":
        k = kernel_from(SRC, False)
    else:
        # the PTX the driver compiled from the source, loaded as a binary
        prog = build(context, dev, SRC, False)
        size = C.c_size_t()
        cl.clGetProgramInfo(prog, C.c_uint(0x1165), C.c_size_t(8), C.byref(size), None)
        blob = C.create_string_buffer(size.value)
        ptrs = (C.c_char_p * 1)(C.cast(blob, C.c_char_p))
        cl.clGetProgramInfo(prog, C.c_uint(0x1166), C.c_size_t(8), ptrs, None)
        k = kernel_from(blob.raw[:size.value].rstrip(b"\0").decode(), True)
    print(form, "get attribute 0 before:", attr(k))
    for size in (48 * 1024 - 256, 64 * 1024, 100 * 1024):
        try_launch(k, size, form + " default")
    for kib in (-1, 100, 164, 228, 256):
        v = C.c_int(kib)
        e = set_attr(k, dev, 0, 4, C.byref(v))
        print(form, f"set attribute 0 to {kib}: {e}; get -> {attr(k)}")
        if e == 0:
            for size in (64 * 1024, 100 * 1024, 160 * 1024, 200 * 1024, 227 * 1024):
                try_launch(k, size, f"{form} carveout {kib}")
