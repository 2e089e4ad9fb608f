"""tcc for Python: compile a model with the tcc compiler, load an artifact
from a file or from bytes, list devices and functions, and run functions on
numpy arrays, or on CUDA tensors without a copy (DLPack: a model loaded
with ``backend="cuda"`` takes torch.cuda tensors and CuPy arrays and
returns ``CudaArray`` outputs on the GPU). Arrays can stay in a model's
device memory between calls (onnxruntime's IOBinding): ``model.upload(x)``
gives a ``DeviceArray``, ``model.run_device(...)`` takes and returns them,
and ``DeviceArray.numpy()`` copies one back.

The functions and classes come from the native module ``tcc._tcc``
(runtime/python/src/lib.rs); ``tcc.serve`` serves an artifact with Ray
Serve (it imports Ray only when it is imported itself).
"""

from ._tcc import (  # noqa: F401
    CudaArray,
    DeviceArray,
    Function,
    Model,
    PlacedModel,
    Tensor,
    __version__,
    compile,
    devices,
    load,
    load_bytes,
    load_placed,
)

__all__ = [
    "CudaArray",
    "DeviceArray",
    "Function",
    "Model",
    "PlacedModel",
    "Tensor",
    "__version__",
    "compile",
    "devices",
    "load",
    "load_bytes",
    "load_placed",
]
