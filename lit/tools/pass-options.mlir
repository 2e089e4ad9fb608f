// tcc-opt and the options of tcc's Rust passes: `--help` lists them with
// their kinds and descriptions, a printed pipeline carries their values
// (and parses back), and a bad value is reported as tcc-opt's own error
// naming the pass and pointing at where it was written (the column in
// --pass-pipeline, or the flag), never at `<unknown>:0`.

// RUN: tcc-opt --help | FileCheck %s --check-prefix=HELP
// HELP:      --tcc-configure-kernels
// HELP-NEXT:   --candidate=<string> {{.*}}- Take every GEMM's N-th candidate
// HELP-NEXT:   --half-wgmma-tiles {{.*}}- On nvidia, matmuls whose sizes fit take a 128-row tile of the FP16/BF16 wgmma body
// HELP-NEXT:   --int8-gemm=<string> {{.*}}- int8 contractions on the GEMM template
// HELP-NEXT:   --large-tf32-tiles {{.*}}- On nvidia, matmuls the table gives 128x128 tiles take 256x128 tiles
// HELP-NEXT:   --target=<string> {{.*}}- A known target {{.*}}for a module without #tcc.target
// HELP-NEXT:   --templates {{.*}}- Allow kernel templates
// HELP-NEXT:   --tuning=<string> {{.*}}- A tuning record
// HELP:      --tcc-fuse-elementwise
// HELP-NEXT:   --max-ops=<long> {{.*}}- The most operations one fused body may hold
// HELP:      --tcc-plan-memory
// HELP-NEXT:   --alignment=<long>

// RUN: tcc-opt %s --dump-pass-pipeline --pass-pipeline='builtin.module(tcc-fuse-elementwise{max-ops=7},tcc-configure-kernels{target=nvidia},tcc-decompose-composites{ops={softmax,gelu}})' -o /dev/null 2>&1 | FileCheck %s --check-prefix=DUMP
// DUMP:      tcc-fuse-elementwise{max-ops=7 recompute-broadcast-math=auto},
// DUMP-NEXT: tcc-configure-kernels{candidate= half-wgmma-tiles=false int8-gemm=on large-tf32-tiles=false target=nvidia templates=true tuning= windows=auto},
// DUMP-NEXT: tcc-decompose-composites{ops={softmax,gelu}}

// The printed pipeline is a valid one.
// RUN: tcc-opt %s --pass-pipeline='builtin.module(tcc-configure-kernels{candidate= target=nvidia templates=true tuning=})' | FileCheck %s --check-prefix=REPARSE
// REPARSE: module attributes {tcc.target = #tcc.target<name = "nvidia-sm90", family = "nvidia", arch = "sm_90", api = "opencl", precision = "fp32", vector_width = 4, max_local_bytes = 49152, max_workgroup_size = 1024>}

// RUN: not tcc-opt %s --pass-pipeline='builtin.module(tcc-configure-kernels{target=bogus})' 2>&1 | FileCheck %s --check-prefix=BADPIPE
// BADPIPE-NOT: <unknown>
// BADPIPE: tcc-opt: error: --pass-pipeline:1:38: tcc-configure-kernels: unknown target 'bogus' (targets: opencl-generic, nvidia-sm90, nvidia-sm80, pocl-cpu-avx2, pocl-cpu-avx512, host, generic, nvidia, pocl-cpu)
// BADPIPE-NEXT: {{^}}  builtin.module(tcc-configure-kernels{target=bogus})
// BADPIPE-NEXT: {{^}}                                       ^
// BADPIPE-NOT: <unknown>

// RUN: not tcc-opt %s --tcc-plan-memory=alignment=3 2>&1 | FileCheck %s --check-prefix=BADFLAG
// BADFLAG-NOT: <unknown>
// BADFLAG: tcc-opt: error: in '--tcc-plan-memory=alignment=3': tcc-plan-memory: alignment must be a power of two up to 1048576, got '3'

// RUN: not tcc-opt %s --tcc-fuse-elementwise=max-op=3 2>&1 | FileCheck %s --check-prefix=UNKNOWNKEY
// UNKNOWNKEY: tcc-opt: error: in '--tcc-fuse-elementwise=max-op=3': tcc-fuse-elementwise: unknown option 'max-op'; known options: max-ops, recompute-broadcast-math

func.func @f() {
  return
}
