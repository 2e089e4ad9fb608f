// A module whose tcc.target is not a #tcc.target (the string tcc wrote
// before the attribute) is refused, with the form it should take; so is a
// #tcc.target that fails the attribute's verifier.
// RUN: not tcc-opt %s --split-input-file --tcc-attach-target 2>&1 | FileCheck %s

// CHECK: the module's tcc.target is not a #tcc.target attribute
module attributes {tcc.target = "nvidia"} {
}

// -----

// CHECK: max_workgroup_size must be positive
module attributes {tcc.target = #tcc.target<name = "x", family = "nvidia", arch = "", api = "opencl", precision = "fp32", vector_width = 4, max_local_bytes = 1, max_workgroup_size = 0>} {
}
