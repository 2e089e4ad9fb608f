/* Does PoCL compile two programs at once when they are in two OpenCL contexts?
 * Builds the OpenCL C in FILE and asks for its binary (CL_PROGRAM_BINARIES,
 * which makes PoCL compile every kernel), in one context, or with a second
 * argument in two contexts on two threads (the source is salted per thread
 * so PoCL's kernel cache cannot share the work). Used for docs/benchmarks.md.
 *
 *   tcc compile model.onnx --target=pocl-cpu --emit=opencl-c > /tmp/m.cl
 *   cc -O1 scripts/pocl-context-overlap.c -lOpenCL -lpthread -o /tmp/ctxtest
 *   POCL_CACHE_DIR=$(mktemp -d) /tmp/ctxtest /tmp/m.cl      # one context
 *   POCL_CACHE_DIR=$(mktemp -d) /tmp/ctxtest /tmp/m.cl 2    # two at once */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static char *src; static cl_device_id dev;
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static void *work(void *arg){
  const char *tag=arg; cl_int e; double t0=now();
  cl_context c=clCreateContext(0,1,&dev,0,0,&e);
  char *s2=malloc(strlen(src)+64); sprintf(s2,"%s\n// %s %f\n",src,tag,now()); cl_program p=clCreateProgramWithSource(c,1,(const char**)&s2,0,&e);
  e=clBuildProgram(p,1,&dev,"",0,0); double t1=now();
  size_t sz; e=clGetProgramInfo(p,CL_PROGRAM_BINARY_SIZES,sizeof sz,&sz,0);
  unsigned char *b=malloc(sz); e=clGetProgramInfo(p,CL_PROGRAM_BINARIES,sizeof b,&b,0);
  fprintf(stderr,"%s: build %.2f s, binaries %.2f s (%zu B) e=%d\n",tag,t1-t0,now()-t1,sz,e);
  return 0;}
int main(int argc,char**argv){
  FILE*f=fopen(argv[1],"rb");fseek(f,0,2);long n=ftell(f);rewind(f);src=calloc(n+1,1);fread(src,1,n,f);fclose(f);
  cl_platform_id pl; clGetPlatformIDs(1,&pl,0); clGetDeviceIDs(pl,CL_DEVICE_TYPE_ALL,1,&dev,0);
  double t=now();
  if(argc>2){pthread_t a,b;pthread_create(&a,0,work,"A");pthread_create(&b,0,work,"B");pthread_join(a,0);pthread_join(b,0);}
  else work("serial");
  fprintf(stderr,"total %.2f s\n",now()-t);}
