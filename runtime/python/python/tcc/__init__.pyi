"""Type stubs of the tcc package (the native tcc._tcc,
runtime/python/src/lib.rs): compile a model with the tcc compiler, load an
artifact, run its functions on numpy arrays (or any DLPack producer)."""

from typing import Any, Dict, List, Mapping, Optional, Sequence

import numpy as np
import numpy.typing as npt

__version__: str

class Tensor:
    """One input or output: its name, numpy dtype string ("<f4") and shape."""

    name: str
    dtype: str
    shape: List[int]

class Function:
    """A function of a model: its name, inputs, outputs and signature."""

    name: str
    inputs: List[Tensor]
    outputs: List[Tensor]
    signature: str

class Model:
    """A model loaded on a device."""

    @property
    def functions(self) -> List[Function]: ...
    @property
    def device(self) -> str: ...
    @property
    def producer(self) -> str: ...
    def run(
        self, *arrays: Any, function: Optional[str] = None, **named: Any
    ) -> List[npt.NDArray[Any]]:
        """Runs `function` (default: the only one) on arrays by position
        (`m.run(x, y)`), by name as a dict (`m.run({"x": x})`) or as keyword
        arguments (`m.run(x=x)`). numpy arrays or DLPack producers. Raises
        ValueError naming the input, expected and got, for a missing, extra
        or unknown name, a wrong dtype (with the `.astype` to use) or shape."""
        ...
    def run_dict(
        self, *arrays: Any, function: Optional[str] = None, **named: Any
    ) -> Dict[str, npt.NDArray[Any]]:
        """As `run`, the outputs as a dict by name (`output0`, ... when unnamed)."""
        ...
    def close(self) -> None: ...

def load(path: str, device: Optional[str] = None) -> Model: ...
def load_bytes(data: bytes, device: Optional[str] = None, label: str = "model in memory") -> Model: ...
def compile(
    path: str,
    target: str = "generic",
    device: Optional[str] = None,
    tcc: Optional[str] = None,
    *,
    input_shapes: Optional[Mapping[str, Sequence[int]]] = None,
    precision: Optional[str] = None,
    storage: Optional[str] = None,
    tuning: Optional[str] = None,
    ptx: Optional[bool] = None,
    gpu_arch: Optional[str] = None,
    backend: Optional[str] = None,
    max_fused_ops: Optional[int] = None,
    quantize: Optional[str] = None,
    profile: Optional[str] = None,
    calibration: Optional[str] = None,
    calibration_inputs: Optional[str] = None,
    args: Optional[Sequence[str]] = None,
) -> Model:
    """Compiles `path` (MLIR or ONNX) with `tcc compile` and loads it.
    target: generic, nvidia, pocl-cpu, host or auto."""
    ...
def devices() -> List[Dict[str, Any]]: ...
