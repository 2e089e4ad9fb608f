"""Checks what tcc's phases make of a dynamic batch by running it: the model
compiled by tcc with `--dim batch=1..64` up to a phase (`--compile-to`),
then lowered by upstream MLIR's passes alone (one-shot bufferization,
loops, LLVM: run by tcc-opt, beside TCC, which is mlir-opt with the tcc
dialect registered, as the dispatch phase's `tcc.conv` needs; then the
toolchain's mlir-translate and clang) to a shared object,
which runs at several batches and is compared with onnxruntime. Until the
tile, gpu and host phases compile a symbolic dimension (issue 33), this is
how the phases that do are held to the model's numbers at every batch.

    python3 run_lowered.py TCC MODEL PHASE INNER_SHAPES BATCH...

INNER_SHAPES: each input's dimensions after the batch, comma-separated
(`3x16x16`; `16,16` for two inputs). The model has f32 inputs and one f32
output, each with the batch leading. Prints
one line per batch; exits 1 on a mismatch (rtol 1e-4, atol 1e-5).
"""

import ctypes
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import onnxruntime as ort

LLVM = os.environ.get("TCC_LLVM_BIN", "/usr/lib/llvm-22/bin")
LLVM_LIB = os.path.join(os.path.dirname(LLVM), "lib")

# linalg.softmax has no upstream lowering pass of its own: decompose it
# (max, sub/exp, sum, div generics) through its AggregatedOpInterface.
DECOMPOSE = """
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %s = transform.structured.match ops{["linalg.softmax"]} in %root : (!transform.any_op) -> !transform.any_op
    %d = transform.structured.decompose_interface %s : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}
"""

LOWERING = [
    # The kernel boundary (`tcc.dispatch`) is tcc's: its ops go back into
    # the function body first.
    "--tcc-inline-dispatches",
    "--one-shot-bufferize=bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map",
    "--buffer-results-to-out-params",
    "--convert-linalg-to-loops",
    "--expand-strided-metadata",
    "--lower-affine",
    "--convert-scf-to-cf",
    "--convert-math-to-llvm",
    "--convert-arith-to-llvm",
    "--finalize-memref-to-llvm",
    "--convert-func-to-llvm",
    "--convert-cf-to-llvm",
    "--reconcile-unrealized-casts",
]


def run(args):
    result = subprocess.run(args, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit(f"{' '.join(args[:2])} failed ({result.returncode}): {result.stderr[-4000:]}")
    return result.stdout


def descriptor(rank):
    class Descriptor(ctypes.Structure):
        _fields_ = [
            ("allocated", ctypes.c_void_p),
            ("aligned", ctypes.c_void_p),
            ("offset", ctypes.c_int64),
            ("sizes", ctypes.c_int64 * rank),
            ("strides", ctypes.c_int64 * rank),
        ]

    return Descriptor


def main():
    tcc, model, phase, inner = sys.argv[1:5]
    tcc_opt = os.path.join(os.path.dirname(os.path.abspath(tcc)), "tcc-opt")
    if not os.access(tcc_opt, os.X_OK):
        sys.exit(f"no tcc-opt beside {tcc}")
    batches = [int(b) for b in sys.argv[5:]] or [1, 5, 64]
    inners = [[int(d) for d in shape.split("x")] for shape in inner.split(",")]
    work = tempfile.mkdtemp(prefix="tcc-lowered-")
    ir = run([tcc, "compile", model, "--dim", "batch=1..64", "--compile-to", phase])
    # The module's target and dimensions mean nothing to the upstream
    # lowering: they go, and the function's interface becomes a C interface.
    ir = re.sub(r"tcc\.(dims|target) = #tcc\.\w+<[^>]*>,?\s*", "", ir)
    ir = ir.replace("module attributes {} {", "module {")
    ir = re.sub(r"attributes \{tcc\.io_names = [^}]*\}", "attributes {llvm.emit_c_interface}", ir)
    if "llvm.emit_c_interface" not in ir:
        sys.exit("no function interface found in tcc's output")
    source = os.path.join(work, "model.mlir")
    with open(source, "w") as f:
        f.write(ir)
    library = os.path.join(work, "decompose.mlir")
    with open(library, "w") as f:
        f.write(DECOMPOSE)
    lowered = os.path.join(work, "lowered.mlir")
    run(
        [
            tcc_opt,
            source,
            f"--transform-preload-library=transform-library-paths={library}",
            "--transform-interpreter",
            *LOWERING,
            "-o",
            lowered,
        ]
    )
    llvm_ir = os.path.join(work, "model.ll")
    run([os.path.join(LLVM, "mlir-translate"), "--mlir-to-llvmir", lowered, "-o", llvm_ir])
    shared = os.path.join(work, "model.so")
    run(
        [
            os.path.join(LLVM, "clang"),
            "-Wno-override-module",
            "-shared",
            "-fPIC",
            "-O1",
            llvm_ir,
            "-o",
            shared,
            f"-L{LLVM_LIB}",
            "-lmlir_c_runner_utils",
            f"-Wl,-rpath,{LLVM_LIB}",
        ]
    )
    lib = ctypes.CDLL(shared)
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    failed = False
    for batch in batches:
        rng = np.random.default_rng(batch)
        xs = [
            np.ascontiguousarray(rng.uniform(-1, 1, size=[batch] + shape).astype(np.float32))
            for shape in inners
        ]
        names = [i.name for i in session.get_inputs()]
        expected = session.run(None, dict(zip(names, xs)))[0]
        arguments = []
        for x in xs:
            argument = descriptor(x.ndim)()
            argument.allocated = argument.aligned = x.ctypes.data
            argument.offset = 0
            for i, extent in enumerate(x.shape):
                argument.sizes[i] = extent
                argument.strides[i] = x.strides[i] // x.itemsize
            arguments.append(argument)
        result = descriptor(expected.ndim)()
        lib._mlir_ciface_main(ctypes.byref(result), *[ctypes.byref(a) for a in arguments])
        shape = [result.sizes[i] for i in range(expected.ndim)]
        ok = shape == list(expected.shape)
        if ok:
            strides = [result.strides[i] for i in range(expected.ndim)]
            span = 1 + sum((n - 1) * s for n, s in zip(shape, strides))
            pointer = ctypes.cast(result.aligned, ctypes.POINTER(ctypes.c_float))
            flat = np.ctypeslib.as_array(pointer, shape=(result.offset + span,))[result.offset :]
            y = np.lib.stride_tricks.as_strided(flat, shape=shape, strides=[s * 4 for s in strides]).copy()
            error = float(np.max(np.abs(y - expected)))
            ok = bool(np.allclose(y, expected, rtol=1e-4, atol=1e-5))
        else:
            error = float("nan")
        failed |= not ok
        print(f"batch {batch}: shape {shape} (onnxruntime {list(expected.shape)}), max abs error {error:.3g}: {'ok' if ok else 'MISMATCH'}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
