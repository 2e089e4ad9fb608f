"""DLPack exchange on the GPU (issue 35): a model loaded with
backend="cuda" takes CUDA tensors (any DLPack producer on kDLCUDA, as
torch.cuda tensors and CuPy arrays are) without a copy and returns
tcc.CudaArray outputs, DLPack producers on the GPU whose capsules keep the
device allocation alive until the consumer deletes them.

Runs on the fake CUDA driver (runtime/tests/fixtures/fake_libcuda.c, built
by compiler/tests/python.rs: TCC_FAKE_LIBCUDA) with the runtime's C test
model (TCC_FAKE_CUDA_MODEL: @axpb(x: 1000xf32) -> y = 2x + b, b[i] = i/2).
The fake's device memory is host memory, so a numpy array's buffer stands
in for a CUDA tensor here; the driver counts memcpy calls and records the
buffer arguments of each kernel launch, which shows the caller's pointer
reaching the kernels and no host copy being made. The GPU check with torch
is scripts/bench/dlpack-cuda-check.py."""

import ctypes
import os

import numpy as np
import pytest

import tcc

FAKE = os.environ["TCC_FAKE_LIBCUDA"]
MODEL = os.environ["TCC_FAKE_CUDA_MODEL"]

KDLCUDA = 2


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class DLManagedTensor(ctypes.Structure):
    pass


DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [
    ("dl_tensor", DLTensor),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", DELETER),
]

capsule_new = ctypes.pythonapi.PyCapsule_New
capsule_new.restype = ctypes.py_object
capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
capsule_pointer.restype = ctypes.c_void_p
capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
capsule_set_name = ctypes.pythonapi.PyCapsule_SetName
capsule_set_name.restype = ctypes.c_int
capsule_set_name.argtypes = [ctypes.py_object, ctypes.c_char_p]

DTYPES = {np.dtype(np.float32): (2, 32), np.dtype(np.float64): (2, 64), np.dtype(np.int32): (0, 32)}


class FakeCudaTensor:
    """A DLPack producer on kDLCUDA, as a torch.cuda tensor is one: the
    'device' memory is `array`'s buffer (the fake driver's device memory is
    host memory). `shape`/`strides` (in elements) and `device_id` may
    differ from the array's, to test the checks."""

    def __init__(self, array, device_id=0, shape=None, strides=None):
        self.array = array
        self.device_id = device_id
        self.shape = list(array.shape if shape is None else shape)
        self.strides = strides
        self.streams = []
        self._keep = []

    def __dlpack_device__(self):
        return (KDLCUDA, self.device_id)

    def __dlpack__(self, stream=None):
        self.streams.append(stream)
        code, bits = DTYPES[self.array.dtype]
        shape = (ctypes.c_int64 * len(self.shape))(*self.shape)
        strides = None
        if self.strides is not None:
            strides = (ctypes.c_int64 * len(self.strides))(*self.strides)
        managed = DLManagedTensor()
        managed.dl_tensor.data = self.array.ctypes.data
        managed.dl_tensor.device = DLDevice(KDLCUDA, self.device_id)
        managed.dl_tensor.ndim = len(self.shape)
        managed.dl_tensor.dtype = DLDataType(code, bits, 1)
        managed.dl_tensor.shape = shape
        if strides is not None:
            managed.dl_tensor.strides = strides
        # The producer keeps the struct (and the array) alive itself.
        self._keep.append((managed, shape, strides))
        return capsule_new(ctypes.addressof(managed), b"dltensor", None)


@pytest.fixture(scope="module")
def fake():
    # Before the first use of the CUDA backend in this process: the driver
    # is opened once.
    os.environ["TCC_LIBCUDA"] = FAKE
    lib = ctypes.CDLL(FAKE)
    lib.fake_cuda_live_allocations.restype = ctypes.c_int
    lib.fake_cuda_launched_pointers.restype = ctypes.c_int
    yield lib
    del os.environ["TCC_LIBCUDA"]


def copies(lib):
    htod, dtoh = ctypes.c_uint(), ctypes.c_uint()
    lib.fake_cuda_copies(ctypes.byref(htod), ctypes.byref(dtoh))
    return htod.value, dtoh.value


def launched(lib):
    out = (ctypes.c_ulonglong * 256)()
    n = lib.fake_cuda_launched_pointers(out, 256)
    return list(out[:n])


def axpb(x):
    return 2 * x + np.arange(x.size, dtype=np.float32) / 2


@pytest.fixture(scope="module")
def model(fake):
    m = tcc.load(MODEL, backend="cuda")
    assert m.backend == "cuda"
    assert m.device == "tcc fake CUDA device"
    return m


def test_cuda_tensors_go_in_and_out_without_copies(fake, model):
    x = np.linspace(-3, 3, 1000, dtype=np.float32)
    # Host arrays work as on OpenCL (and upload the constants once).
    (host,) = model.run(x, function="axpb")
    assert isinstance(host, np.ndarray)
    np.testing.assert_allclose(host, axpb(x))
    launched(fake)
    before = copies(fake)

    producer = FakeCudaTensor(x)
    (y,) = model.run(producer, function="axpb")
    assert isinstance(y, tcc.CudaArray)
    # The producer was asked for the legacy default stream.
    assert producer.streams == [1]
    # scale(x, t), add(t, b, y): the call replays the function's CUDA graph
    # (the host call above uploaded the constants), so the caller's buffer
    # is copied device to device into the graph's memory and the output
    # out of it; nothing went through the host.
    pointers = launched(fake)
    assert len(pointers) == 5
    assert pointers[0] != x.ctypes.data
    assert pointers[4] != y.data_ptr
    assert copies(fake) == before
    assert y.shape == (1000,) and y.dtype == "<f4" and y.device == 0
    assert y.__dlpack_device__() == (KDLCUDA, 0)
    assert repr(y) == "CudaArray(1000xf32 on CUDA device 0)"

    # Outputs chain into the next call on the device (the same graph's
    # memory again).
    (z,) = model.run({"x": y}, function="axpb")
    assert launched(fake)[0] == pointers[0]
    assert copies(fake) == before

    # numpy() (and np.asarray) copy to the host: the same values as the
    # host path.
    np.testing.assert_array_equal(y.numpy(), host)
    np.testing.assert_array_equal(np.asarray(z), axpb(host))
    assert copies(fake) == (before[0], before[1] + 2)


def test_exported_capsules_keep_the_allocation_alive(fake, model):
    x = np.ones(1000, np.float32)
    (y,) = model.run(FakeCudaTensor(x), function="axpb")
    expected = y.numpy()
    data = y.data_ptr
    live = fake.fake_cuda_live_allocations()

    # A consumer takes the capsule, renames it and deletes the tensor when
    # done, after the CudaArray is gone.
    capsule = y.__dlpack__(stream=None)
    del y
    assert fake.fake_cuda_live_allocations() == live
    managed = DLManagedTensor.from_address(capsule_pointer(capsule, b"dltensor"))
    t = managed.dl_tensor
    assert (t.device.device_type, t.device.device_id) == (KDLCUDA, 0)
    assert t.data == data and t.byte_offset == 0
    assert (t.ndim, t.shape[0], bool(t.strides)) == (1, 1000, False)
    assert (t.dtype.code, t.dtype.bits, t.dtype.lanes) == (2, 32, 1)
    values = np.ctypeslib.as_array((ctypes.c_float * 1000).from_address(t.data))
    np.testing.assert_array_equal(values, expected)
    assert capsule_set_name(capsule, b"used_dltensor") == 0
    managed.deleter(ctypes.pointer(managed))
    assert fake.fake_cuda_live_allocations() == live - 1
    del capsule  # consumed: its destructor deletes nothing more
    assert fake.fake_cuda_live_allocations() == live - 1

    # An unconsumed capsule frees the tensor when it is collected.
    (y,) = model.run(FakeCudaTensor(x), function="axpb")
    live = fake.fake_cuda_live_allocations()
    capsule = y.__dlpack__()
    del y
    assert fake.fake_cuda_live_allocations() == live
    del capsule
    assert fake.fake_cuda_live_allocations() == live - 1

    # Export options a consumer may pass.
    (y,) = model.run(FakeCudaTensor(x), function="axpb")
    y.__dlpack__(stream=7, max_version=(1, 0), dl_device=(KDLCUDA, 0))
    with pytest.raises(BufferError, match="cannot be exported to CPU device 0"):
        y.__dlpack__(dl_device=(1, 0))
    with pytest.raises(BufferError, match="without a copy only"):
        y.__dlpack__(copy=True)
    with pytest.raises(ValueError, match="copy=False refused"):
        np.asarray(y, copy=False)


def test_wrong_cuda_tensors_raise_value_error(fake, model):
    x = np.zeros(1000, np.float32)

    def fails(producer, message):
        with pytest.raises(ValueError, match=message):
            model.run(producer, function="axpb")

    fails(
        FakeCudaTensor(np.zeros(1000, np.float64)),
        r"input 'x' of @axpb: expected 1000xf32 \(float32\), got float64 with shape \[1000\]",
    )
    fails(
        FakeCudaTensor(x, shape=[10, 100]),
        r"input 'x' of @axpb: expected shape \[1000\] \(1000xf32\), got \[10, 100\]",
    )
    fails(
        FakeCudaTensor(x, device_id=1),
        r"input 'x' of @axpb: the tensor is on CUDA device 1, the model on CUDA device 0",
    )
    fails(
        FakeCudaTensor(np.zeros(2000, np.float32), shape=[1000], strides=[2]),
        r"input 'x' of @axpb: the tensor is not contiguous \(strides \[2\]",
    )
    # Dense strides given explicitly are fine.
    (y,) = model.run(FakeCudaTensor(x, strides=[1]), function="axpb")
    np.testing.assert_array_equal(y.numpy(), axpb(x))


def test_cuda_tensors_on_an_opencl_model_raise_value_error(fake):
    mlp = tcc.compile(os.path.join(os.environ["TCC_MODELS"], "mlp.mlir"), target="generic")
    assert mlp.backend == "opencl"
    with pytest.raises(ValueError, match=r'input 0 of @mlp is a tensor on CUDA device 0, and this model runs on OpenCL .*backend="cuda"'):
        mlp.run(FakeCudaTensor(np.zeros((1, 4, 16), np.float32)))
    with pytest.raises(ValueError, match="backend `metal`: expected opencl, cuda or vulkan"):
        tcc.load(MODEL, backend="metal")
    # Vulkan runs the Shader SPIR-V of --target=vulkan only.
    with pytest.raises(RuntimeError, match="the Vulkan backend runs SPIR-V from `tcc compile --target=vulkan`"):
        tcc.load(MODEL, backend="vulkan")
    with pytest.raises(ValueError, match="the Vulkan backend takes a Vulkan device index"):
        tcc.load(MODEL, backend="vulkan", device="gpu")
    with pytest.raises(ValueError, match="the CUDA backend takes a CUDA device ordinal"):
        tcc.load(MODEL, backend="cuda", device="gpu")


def test_pinned_host_tensors_go_through_numpy_and_other_devices_are_refused(fake):
    class OnDevice:
        """A host array that reports DLPack device type `kind`."""

        def __init__(self, array, kind):
            self.array, self.kind = array, kind

        def __dlpack__(self, **kwargs):
            return self.array.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return (self.kind, 0)

    mlp = tcc.compile(os.path.join(os.environ["TCC_MODELS"], "mlp.mlir"), target="generic")
    x = np.linspace(-1, 1, 64, dtype=np.float32).reshape(1, 4, 16)
    (expected,) = mlp.run(x)
    (pinned,) = mlp.run(OnDevice(x, 3))  # kDLCUDAHost: host memory numpy reads
    np.testing.assert_array_equal(pinned, expected)
    with pytest.raises(ValueError, match="input 0 of @mlp is a tensor on a ROCm device"):
        mlp.run(OnDevice(x, 10))


def test_functions_placed_on_two_devices_run_a_pipeline(fake):
    # Two fake devices (the driver reads FAKE_CUDA_DEVICES on each call):
    # @axpb on device 0, @axpb_arena on device 1, the value between them
    # copied device to device (cuMemcpyPeerAsync, over peer access).
    os.environ["FAKE_CUDA_DEVICES"] = "2"
    fake.fake_cuda_peer_copies.restype = ctypes.c_uint
    try:
        m = tcc.load_placed(MODEL, "axpb=0,axpb_arena=1", ["0", "cuda:1"], backend="cuda")
        assert m.device_of("axpb_arena") == 1
        x = np.linspace(-3, 3, 1000, dtype=np.float32)
        before = fake.fake_cuda_peer_copies()
        (y,) = m.run_pipeline(["axpb", "axpb_arena"], x)
        np.testing.assert_array_equal(y, axpb(axpb(x)))
        assert fake.fake_cuda_peer_copies() - before == 1
        assert m.copies() == {"device_to_device": 1, "peer": 1, "through_host": 0, "bytes": 4000}
        (y,) = m.run("axpb_arena", x)
        np.testing.assert_array_equal(y, axpb(x))
        with pytest.raises(ValueError, match="axpb=2: there are 2 devices"):
            tcc.load_placed(MODEL, {"axpb": 2}, ["0", "1"], backend="cuda")
        with pytest.raises(ValueError, match="input 0 of @addk is 4xi32"):
            m.run_pipeline(["axpb", "addk"], x)
        with pytest.raises(ValueError, match="input 0 of @axpb: expected 1000xf32"):
            m.run_pipeline(["axpb"], x[:10])
    finally:
        del os.environ["FAKE_CUDA_DEVICES"]


def test_device_arrays_chain_calls_without_host_copies(fake, model):
    # model.upload / model.run_device on the CUDA backend: the chain of two
    # calls copies nothing to or from the host (the fake driver counts
    # cuMemcpyHtoD and cuMemcpyDtoH), and equals the host round trip.
    x = np.linspace(-3, 3, 1000, dtype=np.float32)
    (h,) = model.run(x, function="axpb")
    (want,) = model.run(h, function="axpb")
    dx = model.upload(x)
    assert isinstance(dx, tcc.DeviceArray) and dx.shape == (1000,)
    before = copies(fake)
    (dh,) = model.run_device(dx, function="axpb")
    (dy,) = model.run_device(dh, function="axpb")
    assert copies(fake) == before
    assert isinstance(dy, tcc.DeviceArray)
    np.testing.assert_array_equal(dy.numpy(), want)
    assert copies(fake) == (before[0], before[1] + 1)
    np.testing.assert_array_equal(dh.numpy(), h)
    other = tcc.load(MODEL, backend="cuda")
    with pytest.raises(ValueError, match=r"input 'x' of @axpb is a DeviceArray of another model"):
        other.run_device(dx, function="axpb")
    # A CUDA tensor is not uploaded through the host.
    with pytest.raises(ValueError, match=r"the array is a tensor on a CUDA device"):
        model.upload(FakeCudaTensor(x))
