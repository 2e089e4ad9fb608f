"""Type stubs of the tcc package (the native tcc._tcc,
runtime/python/src/lib.rs): compile a model with the tcc compiler, load an
artifact, run its functions on numpy arrays (or any DLPack producer), and
on the CUDA backend on CUDA tensors without a copy; keep arrays in device
memory between calls (DeviceArray)."""

from typing import Any, Dict, List, Literal, Mapping, Optional, Sequence, Tuple, Union

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

class CudaArray:
    """An output in CUDA device memory (a call on the CUDA backend with a CUDA
    tensor input): a DLPack producer on the GPU that torch.from_dlpack and
    cupy.from_dlpack take without a copy. The memory lives as long as this
    object or any capsule a consumer took from it."""

    @property
    def shape(self) -> Tuple[int, ...]: ...
    @property
    def dtype(self) -> str:
        """The numpy dtype string ("<f4")."""
        ...
    @property
    def device(self) -> int:
        """The CUDA device ordinal."""
        ...
    @property
    def nbytes(self) -> int: ...
    @property
    def data_ptr(self) -> int:
        """The device address (CUdeviceptr)."""
        ...
    def __dlpack_device__(self) -> Tuple[int, int]:
        """(2, ordinal): kDLCUDA."""
        ...
    def __dlpack__(
        self,
        *,
        stream: Optional[int] = None,
        max_version: Optional[Tuple[int, int]] = None,
        dl_device: Optional[Tuple[int, int]] = None,
        copy: Optional[bool] = None,
    ) -> Any:
        """A "dltensor" capsule without a copy (the data is complete: no
        stream wait is needed). BufferError for another dl_device or
        copy=True."""
        ...
    def numpy(self) -> npt.NDArray[Any]:
        """A copy on the host."""
        ...
    def __array__(self, dtype: Any = None, copy: Optional[bool] = None) -> npt.NDArray[Any]: ...

class DeviceArray:
    """An array in a model's device memory (onnxruntime's OrtValue with
    IOBinding): `Model.upload` and `Model.run_device` make them, and that
    model's `run_device` and `run` take them without a host copy. Another
    model's calls refuse it (ValueError). It keeps its device memory alive
    (after the model's `close()` too). OpenCL and CUDA models."""

    @property
    def shape(self) -> Tuple[int, ...]: ...
    @property
    def dtype(self) -> str:
        """The numpy dtype string ("<f4")."""
        ...
    @property
    def nbytes(self) -> int: ...
    @property
    def device(self) -> str:
        """The model's device."""
        ...
    def numpy(self) -> npt.NDArray[Any]:
        """A copy on the host."""
        ...
    def __array__(self, dtype: Any = None, copy: Optional[bool] = None) -> npt.NDArray[Any]: ...

class Model:
    """A model loaded on a device."""

    @property
    def functions(self) -> List[Function]: ...
    @property
    def device(self) -> str: ...
    @property
    def backend(self) -> Literal["opencl", "cuda"]: ...
    @property
    def producer(self) -> str: ...
    def run(
        self, *arrays: Any, function: Optional[str] = None, **named: Any
    ) -> List[Union[npt.NDArray[Any], CudaArray]]:
        """Runs `function` (default: the only one) on arrays by position
        (`m.run(x, y)`), by name as a dict (`m.run({"x": x})`) or as keyword
        arguments (`m.run(x=x)`). numpy arrays or DLPack producers. On the
        CUDA backend, CUDA tensors (torch.cuda, CuPy, CudaArray) are read in
        place and the outputs are CudaArrays; otherwise numpy arrays. This
        model's DeviceArrays are taken too (numpy outputs). Raises
        ValueError naming the input, expected and got, for a missing, extra
        or unknown name, a wrong dtype (with the `.astype` to use) or shape,
        a non-contiguous CUDA tensor, one on another device, or a CUDA
        tensor given to an OpenCL model."""
        ...
    def run_dict(
        self, *arrays: Any, function: Optional[str] = None, **named: Any
    ) -> Dict[str, Union[npt.NDArray[Any], CudaArray]]:
        """As `run`, the outputs as a dict by name (`output0`, ... when unnamed)."""
        ...
    def upload(self, array: npt.NDArray[Any]) -> DeviceArray:
        """A copy of a numpy array (any dtype and shape) in the model's device
        memory. ValueError on a Vulkan model or a closed one."""
        ...
    def run_device(
        self, *arrays: Any, function: Optional[str] = None, **named: Any
    ) -> List[DeviceArray]:
        """As `run` on this model's DeviceArrays (numpy arrays are uploaded
        first), the outputs left in device memory as DeviceArrays of the
        call's shapes: a chain of calls with no host copy between them.
        ValueError for another model's DeviceArray, a wrong dtype or shape,
        a Vulkan model, a closed model."""
        ...
    def close(self) -> None: ...

def load(
    path: str, device: Optional[str] = None, backend: Optional[Literal["opencl", "cuda"]] = None
) -> Model:
    """Loads an artifact. backend: "opencl" or "cuda" (default: TCC_BACKEND,
    else "cuda" for artifacts whose kernels need it, else "opencl"). device:
    an OpenCL selector as TCC_DEVICE takes, or on CUDA an ordinal ("0",
    "cuda:1")."""
    ...
def load_bytes(
    data: bytes,
    device: Optional[str] = None,
    label: str = "model in memory",
    backend: Optional[Literal["opencl", "cuda"]] = None,
) -> Model: ...
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

class PlacedModel:
    """A model whose functions run on several devices (tcc.load_placed)."""

    @property
    def devices(self) -> List[str]: ...
    def device_of(self, function: str) -> int: ...
    def copies(self) -> Dict[str, int]:
        """device_to_device, peer, through_host and bytes so far."""
    def run(self, function: str, *arrays: np.ndarray) -> List[np.ndarray]: ...
    def run_pipeline(self, functions: Sequence[str], *arrays: np.ndarray) -> List[np.ndarray]:
        """The functions in order, each one's outputs the next one's inputs,
        kept in device memory and copied device to device between devices."""

def load_placed(
    path: str,
    placement: Union[str, Dict[str, int]],
    devices: Sequence[str],
    backend: Optional[Literal["opencl", "cuda", "vulkan"]] = None,
) -> PlacedModel:
    """Loads an artifact with its functions placed on devices:
    "FUNCTION=I,..." or {function: I}, I a position in `devices`."""
