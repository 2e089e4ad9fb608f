#!/usr/bin/env python3
"""Probes whether NVIDIA's OpenCL driver builds and runs PTX for Hopper's
`sm_90a` target with a warpgroup `wgmma` (issue 9: the TF32 tensor-core
road past mma.sync). Runs on the GPU machine, needs only libOpenCL and
Python's ctypes.

Three programs, each loaded with clCreateProgramWithBinary (the PTX form
tcc's runtime uses) and launched as one warpgroup (128 work-items):
- `sm_90a` with `wgmma.fence` / `wgmma.mma_async` m64n8k8 TF32 /
  `commit_group` / `wait_group`, both operands from local memory through
  matrix descriptors over a zero-filled 64x8 A and 8x8 B (so D must stay 0
  plus the accumulator's initial value, 1.0 here: scale-d keeps it);
- the same text with `.target sm_90` (wgmma must be refused: shows the
  build really looks at the target);
- `sm_90a` without wgmma (does the driver take the `a` target at all).

Prints one line per program: built or the build log's first lines, and
for the wgmma one the value every work-item stored (expected 1.0).

Usage: python3 scripts/probe-wgmma-device.py"""
import ctypes as C
import sys

cl = C.CDLL("libOpenCL.so.1")
cl.clCreateContext.restype = C.c_void_p
cl.clCreateProgramWithBinary.restype = C.c_void_p
cl.clCreateKernel.restype = C.c_void_p
cl.clCreateBuffer.restype = C.c_void_p
cl.clCreateCommandQueue.restype = C.c_void_p
for f in ["clCreateContext", "clCreateProgramWithBinary", "clCreateKernel",
          "clCreateBuffer", "clCreateCommandQueue"]:
    getattr(cl, f).argtypes = None

WGMMA_BODY = r"""
.visible .entry probe(.param .u64 out)
{
  .reg .b64 %rd<4>;
  .reg .b32 %r<8>;
  .reg .f32 %f<5>;
  .reg .b64 %da, %db;
  .reg .pred %p;
  .shared .align 128 .b32 tile_a[512];
  .shared .align 128 .b32 tile_b[64];
  ld.param.u64 %rd1, [out];
  cvta.to.global.u64 %rd2, %rd1;
  mov.u32 %r1, %tid.x;
  // zero both tiles
  shl.b32 %r2, %r1, 2;
  mov.u32 %r3, tile_a;
  add.u32 %r4, %r3, %r2;
  st.shared.b32 [%r4], 0;
  add.u32 %r4, %r4, 512;
  st.shared.b32 [%r4], 0;
  add.u32 %r4, %r4, 512;
  st.shared.b32 [%r4], 0;
  add.u32 %r4, %r4, 512;
  st.shared.b32 [%r4], 0;
  setp.lt.u32 %p, %r1, 64;
  mov.u32 %r5, tile_b;
  add.u32 %r6, %r5, %r2;
  @%p st.shared.b32 [%r6], 0;
  bar.sync 0;
  fence.proxy.async.shared::cta;
  // descriptors: start address >> 4 in bits 0-13, leading and stride
  // byte offsets (>> 4) in 16-29 and 32-45, no swizzle
  shr.u32 %r3, %r3, 4;
  cvt.u64.u32 %da, %r3;
  or.b64 %da, %da, 0x0000000800080000;
  shr.u32 %r5, %r5, 4;
  cvt.u64.u32 %db, %r5;
  or.b64 %db, %db, 0x0000000800080000;
  mov.f32 %f1, 0f3F800000;
  mov.f32 %f2, 0f3F800000;
  mov.f32 %f3, 0f3F800000;
  mov.f32 %f4, 0f3F800000;
  setp.ne.u32 %p, %r1, 0xFFFFFFFF;
  wgmma.fence.sync.aligned;
  wgmma.mma_async.sync.aligned.m64n8k8.f32.tf32.tf32 {%f1, %f2, %f3, %f4}, %da, %db, %p, 1, 1;
  wgmma.commit_group.sync.aligned;
  wgmma.wait_group.sync.aligned 0;
  mul.wide.u32 %rd3, %r1, 4;
  add.u64 %rd3, %rd2, %rd3;
  st.global.f32 [%rd3], %f1;
  ret;
}
"""

PLAIN_BODY = r"""
.visible .entry probe(.param .u64 out)
{
  .reg .b64 %rd<4>;
  .reg .b32 %r<2>;
  ld.param.u64 %rd1, [out];
  cvta.to.global.u64 %rd2, %rd1;
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd3, %r1, 4;
  add.u64 %rd3, %rd2, %rd3;
  st.global.f32 [%rd3], 0f3F800000;
  ret;
}
"""


def ptx(target, body):
    return f".version 8.0\n.target {target}\n.address_size 64\n{body}"


def check(err, what):
    if err != 0:
        raise RuntimeError(f"{what}: OpenCL error {err}")


def main():
    platforms = (C.c_void_p * 8)()
    n = C.c_uint()
    check(cl.clGetPlatformIDs(8, platforms, C.byref(n)), "clGetPlatformIDs")
    device = None
    for i in range(n.value):
        devices = (C.c_void_p * 4)()
        count = C.c_uint()
        if cl.clGetDeviceIDs(C.c_void_p(platforms[i]), C.c_ulong(1 << 2), 4, devices,
                             C.byref(count)) == 0 and count.value:
            name = C.create_string_buffer(256)
            cl.clGetDeviceInfo(C.c_void_p(devices[0]), C.c_uint(0x102B), C.c_size_t(256), name, None)
            if b"NVIDIA" in name.value or b"H100" in name.value or b"H200" in name.value:
                device = C.c_void_p(devices[0])
                print("device:", name.value.decode())
                break
    if device is None:
        sys.exit("no NVIDIA OpenCL GPU")
    err = C.c_int()
    context = C.c_void_p(cl.clCreateContext(None, 1, C.byref(device), None, None, C.byref(err)))
    check(err.value, "clCreateContext")
    queue = C.c_void_p(cl.clCreateCommandQueue(context, device, C.c_ulong(0), C.byref(err)))
    check(err.value, "clCreateCommandQueue")
    for label, text, run in [
        ("sm_90a + wgmma", ptx("sm_90a", WGMMA_BODY), True),
        ("sm_90 + wgmma (must be refused)", ptx("sm_90", WGMMA_BODY), False),
        ("sm_90a, no wgmma", ptx("sm_90a", PLAIN_BODY), True),
    ]:
        data = text.encode()
        length = C.c_size_t(len(data))
        binary = C.c_char_p(data)
        status = C.c_int()
        program = C.c_void_p(cl.clCreateProgramWithBinary(
            context, 1, C.byref(device), C.byref(length), C.byref(binary),
            C.byref(status), C.byref(err)))
        if err.value != 0:
            print(f"{label}: clCreateProgramWithBinary error {err.value} (status {status.value})")
            continue
        built = cl.clBuildProgram(program, 1, C.byref(device), None, None, None)
        if built != 0:
            log = C.create_string_buffer(1 << 16)
            cl.clGetProgramBuildInfo(program, device, C.c_uint(0x1183), C.c_size_t(1 << 16), log, None)
            print(f"{label}: build error {built}: {log.value.decode(errors='replace').strip()[:400]}")
            continue
        print(f"{label}: built")
        if not run:
            continue
        kernel = C.c_void_p(cl.clCreateKernel(program, b"probe", C.byref(err)))
        check(err.value, "clCreateKernel")
        buffer = C.c_void_p(cl.clCreateBuffer(context, C.c_ulong(1), C.c_size_t(512), None, C.byref(err)))
        check(err.value, "clCreateBuffer")
        check(cl.clSetKernelArg(kernel, 0, C.c_size_t(8), C.byref(buffer)), "clSetKernelArg")
        size = C.c_size_t(128)
        check(cl.clEnqueueNDRangeKernel(queue, kernel, 1, None, C.byref(size), C.byref(size),
                                        0, None, None), "clEnqueueNDRangeKernel")
        result = (C.c_float * 128)()
        finished = cl.clEnqueueReadBuffer(queue, buffer, 1, C.c_size_t(0), C.c_size_t(512), result,
                                          0, None, None)
        if finished != 0:
            print(f"{label}: launch failed, error {finished}")
            continue
        values = sorted(set(result))
        print(f"{label}: ran, stored values {values[:4]} (expected [1.0])")


if __name__ == "__main__":
    main()
