# lit configuration for tcc's FileCheck tests.
#
# Every .mlir file under lit/ is a test. RUN lines use `tcc-opt` (found in
# the directory named by the `tcc_bin_dir` lit parameter or the TCC_BIN_DIR
# environment variable) and LLVM 22's FileCheck, `not`, llvm-nm and llvm-readelf.

import os
import shutil

import lit.formats

config.name = "tcc"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.excludes = ["Inputs", "lit.cfg.py"]
config.test_source_root = os.path.dirname(__file__)

bin_dir = lit_config.params.get("tcc_bin_dir") or os.environ.get("TCC_BIN_DIR")
if not bin_dir:
    lit_config.fatal("set --param tcc_bin_dir=DIR (the directory holding tcc-opt)")
llvm_bin = lit_config.params.get("llvm_bin_dir", "/usr/lib/llvm-22/bin")

for tool, directory in [("tcc-opt", bin_dir), ("tcc", bin_dir), ("FileCheck", llvm_bin), ("not", llvm_bin),
                        ("llvm-nm", llvm_bin), ("llvm-readelf", llvm_bin)]:
    path = os.path.join(directory, tool)
    if not os.access(path, os.X_OK):
        lit_config.fatal(f"required tool {tool} not found at {path} (run `make deps` / `make build`)")

config.environment["PATH"] = os.pathsep.join([bin_dir, llvm_bin, config.environment.get("PATH", os.environ.get("PATH", ""))])
# Tests state their target (--target=pocl-cpu-avx512, a module's
# #tcc.target): nothing in the compiler reads the compiling machine unless
# --target=host asks.
# Keep diagnostics free of colour codes so CHECK lines match.
config.environment["TERM"] = "dumb"
