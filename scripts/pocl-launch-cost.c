// What one kernel launch costs on an OpenCL device (docs/benchmarks.md,
// "CPU: ShuffleNet's channel-shuffle pads folded (session 13)"): N
// launches of a tiny kernel (G work-groups of 64) queued back to back with
// no event returned, with an event returned and released, and with a
// clFinish after each; the best of 5 repeats, in microseconds per launch.
//
//   cc -O2 scripts/pocl-launch-cost.c -o /tmp/pocl-launch-cost -lOpenCL
//   /tmp/pocl-launch-cost [DEVICE_NAME_SUBSTRING]   (default: pthread, PoCL's CPU device)
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e3 + t.tv_nsec / 1e6; }
int main(int argc, char** argv) {
  const char* want = argc > 1 ? argv[1] : "pthread";
  cl_platform_id ps[8]; cl_uint np; clGetPlatformIDs(8, ps, &np);
  cl_device_id dev = 0;
  for (cl_uint i = 0; i < np && !dev; ++i) {
    cl_device_id ds[8]; cl_uint nd;
    if (clGetDeviceIDs(ps[i], CL_DEVICE_TYPE_ALL, 8, ds, &nd)) continue;
    for (cl_uint j = 0; j < nd; ++j) { char name[256]; clGetDeviceInfo(ds[j], CL_DEVICE_NAME, 256, name, 0); if (strstr(name, want)) { dev = ds[j]; break; } }
  }
  if (!dev) { printf("no device\n"); return 1; }
  cl_int err;
  cl_context ctx = clCreateContext(0, 1, &dev, 0, 0, &err);
  cl_command_queue q = clCreateCommandQueueWithProperties(ctx, dev, 0, &err);
  const char* src = "__kernel void k(__global float* a, __global const float* b) { size_t i = get_global_id(0); a[i] = b[i] * 2.0f + 1.0f; }";
  cl_program p = clCreateProgramWithSource(ctx, 1, &src, 0, &err);
  clBuildProgram(p, 1, &dev, "", 0, 0);
  cl_kernel k = clCreateKernel(p, "k", &err);
  cl_mem a = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 1 << 22, 0, &err), b = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 1 << 22, 0, &err);
  for (int groups = 1; groups <= 256; groups *= 16) {
    size_t g = 64 * groups, l = 64;
    for (int mode = 0; mode < 3; ++mode) {
      const int n = 400;
      double best = 1e9;
      for (int rep = 0; rep < 5; ++rep) {
        clFinish(q);
        double t0 = now();
        for (int i = 0; i < n; ++i) {
          clSetKernelArg(k, 0, sizeof a, &a); clSetKernelArg(k, 1, sizeof b, &b);
          cl_event ev;
          clEnqueueNDRangeKernel(q, k, 1, 0, &g, &l, 0, 0, mode == 1 ? &ev : 0);
          if (mode == 1) clReleaseEvent(ev);
          if (mode == 2) clFinish(q);
        }
        clFinish(q);
        double t = (now() - t0) / n * 1e3;
        if (t < best) best = t;
      }
      printf("%3d work-groups, %-22s %7.1f us per launch\n", groups, mode == 0 ? "no event" : mode == 1 ? "event released" : "finish after each", best);
    }
  }
  return 0;
}
