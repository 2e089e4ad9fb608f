#!/usr/bin/env python3
"""Runs the prototype's nvcc-made PTX (proto.ptx) through NVIDIA's OpenCL
(clCreateProgramWithBinary, as tcc's runtime loads PTX): every `gemm`
entry with SWAP 0 at 4096^3, checked against numpy on a sample of rows,
timed with OpenCL profiling events. Also prints CL_DEVICE_LOCAL_MEM_SIZE and
whether an OpenCL C kernel launches with a __local argument over 48 KiB.
Usage: python3 opencl_run.py proto.ptx
Its device, build, session and nvcc_ptx helpers serve packed_opencl.py too."""
import ctypes as C
import re
import sys
import numpy as np

cl = C.CDLL("libOpenCL.so.1")
for f in ["clCreateContext", "clCreateProgramWithBinary", "clCreateProgramWithSource", "clCreateKernel",
          "clCreateBuffer", "clCreateCommandQueue"]:
    getattr(cl, f).restype = C.c_void_p
    getattr(cl, f).argtypes = None


def check(err, what):
    if err != 0:
        raise RuntimeError(f"{what}: OpenCL error {err}")


def device():
    platforms = (C.c_void_p * 8)()
    n = C.c_uint()
    check(cl.clGetPlatformIDs(8, platforms, C.byref(n)), "clGetPlatformIDs")
    for i in range(n.value):
        devices = (C.c_void_p * 4)()
        count = C.c_uint()
        if cl.clGetDeviceIDs(C.c_void_p(platforms[i]), C.c_ulong(1 << 2), 4, devices, C.byref(count)) == 0 and count.value:
            name = C.create_string_buffer(256)
            cl.clGetDeviceInfo(C.c_void_p(devices[0]), C.c_uint(0x102B), C.c_size_t(256), name, None)
            if b"NVIDIA" in name.value or b"H100" in name.value or b"H200" in name.value:
                return C.c_void_p(devices[0]), name.value.decode()
    sys.exit("no NVIDIA OpenCL GPU")


def build(context, dev, text, binary):
    err = C.c_int()
    data = text.encode()
    length = C.c_size_t(len(data))
    ptr = C.c_char_p(data)
    if binary:
        status = C.c_int()
        program = C.c_void_p(cl.clCreateProgramWithBinary(context, 1, C.byref(dev), C.byref(length), C.byref(ptr),
                                                          C.byref(status), C.byref(err)))
    else:
        program = C.c_void_p(cl.clCreateProgramWithSource(context, 1, C.byref(ptr), C.byref(length), C.byref(err)))
    check(err.value, "create program")
    built = cl.clBuildProgram(program, 1, C.byref(dev), None, None, None)
    if built != 0:
        log = C.create_string_buffer(1 << 16)
        cl.clGetProgramBuildInfo(program, dev, C.c_uint(0x1183), C.c_size_t(1 << 16), log, None)
        raise RuntimeError(f"build error {built}: {log.value.decode(errors='replace')[:600]}")
    return program


def session(dev):
    """A context and a profiling queue on `dev`, and a buffer maker
    (`buffer(nbytes, host_array=None)`)."""
    err = C.c_int()
    context = C.c_void_p(cl.clCreateContext(None, 1, C.byref(dev), None, None, C.byref(err)))
    check(err.value, "clCreateContext")
    queue = C.c_void_p(cl.clCreateCommandQueue(context, dev, C.c_ulong(2), C.byref(err)))  # profiling
    check(err.value, "clCreateCommandQueue")

    def buffer(nbytes, host=None):
        flags = 1 | (32 if host is not None else 0)  # READ_WRITE | COPY_HOST_PTR
        b = C.c_void_p(cl.clCreateBuffer(context, C.c_ulong(flags), C.c_size_t(nbytes),
                                         None if host is None else host.ctypes.data_as(C.c_void_p), C.byref(err)))
        check(err.value, "clCreateBuffer")
        return b

    return context, queue, buffer


def nvcc_ptx(path):
    """nvcc's PTX text with the pointer parameters (0-2) marked: NVIDIA's
    OpenCL passes a buffer argument only to a pointer parameter marked
    `.ptr .global` (clang's OpenCL PTX has it, nvcc's has not)."""
    return re.sub(r"\.param \.u64 (\w+_param_[012])\b", r".param .u64 .ptr .global .align 4 \1", open(path).read())


def main():
    dev, name = device()
    print("device:", name)
    local = C.c_ulong()
    cl.clGetDeviceInfo(dev, C.c_uint(0x1023), C.c_size_t(8), C.byref(local), None)
    print("CL_DEVICE_LOCAL_MEM_SIZE:", local.value)
    err = C.c_int()
    context, queue, buffer = session(dev)
    text = nvcc_ptx(sys.argv[1])
    size = 4096
    rng = np.random.default_rng(1)
    a = rng.uniform(-1, 1, (size, size)).astype(np.float32)
    b = rng.uniform(-1, 1, (size, size)).astype(np.float32)
    ref_rows = [0, 1, 777, 4095]
    ref = a[ref_rows] @ b
    A, B, Cb = buffer(a.nbytes, a), buffer(b.nbytes, b), buffer(a.nbytes)
    prog = build(context, dev, text, True)
    for entry in sorted(re.findall(r"\.entry\s+(\w+)", text), key=len):
        m = re.match(r"_Z4gemmILi(\d+)ELi(\d+)ELi(\d+)ELi(\d+)ELi(\d+)ELi(\d+)ELi(\d+)E", entry)
        h = re.match(r"_Z5gemmhILi(\d+)ELi(\d+)ELi(\d+)ELi(\d+)ELi(\d+)ELi(\d+)ELi(\d+)ELi(\d+)E", entry)
        if len(sys.argv) > 2 and not re.search(sys.argv[2], entry):
            continue
        if entry == "batch_matmul_0":
            bm, wg, nr, ks, st, sw, wt, smem = 128, 1, 2, 0, 0, 0, 0, 0
        elif entry.startswith("_Z9reference"):
            bm, wg, nr, ks, st, sw, wt, smem = 1, 2, 2, 0, 0, 0, 0, 0
        elif h:
            bm, wg, nr, ks, st, fd, wt, swz = map(int, h.groups())
            sw, smem = 0, 4 * st * bm * ks
        elif m:
            bm, wg, nr, ks, st, sw, wt = map(int, m.groups())
            smem = 4 * st * (bm * ks + ks * 64 * wg * nr)
        else:
            continue
        if sw or smem > 48 * 1024:
            continue
        kern = C.c_void_p(cl.clCreateKernel(prog, entry.encode(), C.byref(err)))
        check(err.value, "clCreateKernel")
        for i, buf in enumerate((Cb, A, B) if entry == "batch_matmul_0" else (A, B, Cb)):
            check(cl.clSetKernelArg(kern, i, C.c_size_t(8), C.byref(buf)), "arg")
        for i in range(0 if entry == "batch_matmul_0" else 3):
            check(cl.clSetKernelArg(kern, 3 + i, C.c_size_t(4), C.byref(C.c_int(size))), "arg")
        threads = wg * 128
        gsz = (C.c_size_t * 2)(size // (64 * wg * nr) * threads, size // bm)
        if bm == 1:
            gsz = (C.c_size_t * 2)(size, size)
        lsz = (C.c_size_t * 2)(threads, 1)
        if entry == "batch_matmul_0":
            gsz = (C.c_size_t * 2)(size // 128 * 16, size // 128 * 16)
            lsz = (C.c_size_t * 2)(16, 16)
        times = []
        for it in range(3 if bm == 1 else 23):
            ev = C.c_void_p()
            r = cl.clEnqueueNDRangeKernel(queue, kern, 2, None, gsz, lsz, 0, None, C.byref(ev))
            if r != 0:
                print(entry, "enqueue error", r)
                break
            r = cl.clWaitForEvents(1, C.byref(ev))
            if r != 0:
                print(entry, "wait error", r)
                return
            t0, t1 = C.c_ulong(), C.c_ulong()
            cl.clGetEventProfilingInfo(ev, C.c_uint(0x1282), C.c_size_t(8), C.byref(t0), None)
            cl.clGetEventProfilingInfo(ev, C.c_uint(0x1284), C.c_size_t(8), C.byref(t1), None)
            if it >= 3 or bm == 1:
                times.append((t1.value - t0.value) / 1e6)
        else:
            out = np.empty_like(a)
            check(cl.clEnqueueReadBuffer(queue, Cb, 1, C.c_size_t(0), C.c_size_t(out.nbytes), out.ctypes.data_as(C.c_void_p), 0, None, None), "read")
            e = np.abs(out[ref_rows] - ref).max()
            ms = sum(times) / len(times)
            print(f"OpenCL {entry[:9]} {bm}x{wg}x{nr} ks{ks} st{st} wait{wt} smem={smem}: ms={ms:.3f} TF/s={2 * size ** 3 / ms / 1e9:.1f} max_err={e:.3g}")

    # dynamic local memory over 48 KiB through a __local argument
    src = "__kernel void big(__global float* o, __local float* s) { s[get_local_id(0) * 64 + 20000] = 1.0f; barrier(CLK_LOCAL_MEM_FENCE); o[get_local_id(0)] = s[get_local_id(0) * 64 + 20000]; }"
    prog = build(context, dev, src, False)
    k = C.c_void_p(cl.clCreateKernel(prog, b"big", C.byref(err)))
    o = buffer(4096)
    for size in (48 * 1024, 64 * 1024, 100 * 1024, 200 * 1024):
        cl.clSetKernelArg(k, 0, C.c_size_t(8), C.byref(o))
        e1 = cl.clSetKernelArg(k, 1, C.c_size_t(size), None)
        g = C.c_size_t(128)
        e2 = cl.clEnqueueNDRangeKernel(queue, k, 1, None, C.byref(g), C.byref(g), 0, None, None)
        e3 = cl.clFinish(queue)
        print(f"__local argument of {size} bytes: setarg {e1}, enqueue {e2}, finish {e3}")



if __name__ == "__main__":
    main()
