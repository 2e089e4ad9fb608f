"""The tcc Python module (issue 11): compile, load, run on numpy arrays,
devices and functions, and the bad input of the issue (a truncated or
foreign artifact in memory, wrong count / dtype / shape, a closed model,
calls from several threads). Run by compiler/tests/python.rs with the
module built from runtime/python, TCC pointing at the compiler and
TCC_MODELS at test/models."""

import os
import threading

import numpy as np
import pytest

import tcc

MODELS = os.environ["TCC_MODELS"]


@pytest.fixture(scope="module")
def mlp():
    return tcc.compile(os.path.join(MODELS, "mlp.mlir"), target="generic")


def test_version_names_tcc():
    assert tcc.__version__.startswith("tcc 0.1.0 (git ")


def test_devices_are_listed():
    devices = tcc.devices()
    assert devices, "no OpenCL device"
    assert {"index", "name", "platform", "kind"} <= set(devices[0])


def test_functions_are_listed(mlp):
    (f,) = mlp.functions
    assert f.name == "mlp"
    assert f.signature == "@mlp(1x4x16xf32) -> (1x4x10xf32)"
    assert f.inputs[0].dtype == "<f4" and f.inputs[0].shape == [1, 4, 16]
    assert f.outputs[0].shape == [1, 4, 10]
    assert mlp.producer == "tcc 0.1.0"


def test_run_returns_numpy_arrays(mlp):
    x = np.linspace(-1, 1, 64, dtype=np.float32).reshape(1, 4, 16)
    (y,) = mlp.run(x)
    assert isinstance(y, np.ndarray) and y.dtype == np.float32 and y.shape == (1, 4, 10)
    np.testing.assert_allclose(y.sum(axis=-1), 1.0, rtol=1e-5)  # a softmax head
    y[0, 0, 0] = 5  # the result is the caller's (writable)
    (again,) = mlp.run(x, function="mlp")
    assert again[0, 0, 0] != 5
    # Non-contiguous inputs are taken as their values.
    wide = np.zeros((1, 4, 32), np.float32)
    wide[..., ::2] = x
    (strided,) = mlp.run(wide[..., ::2])
    np.testing.assert_array_equal(strided, again)


def test_a_symbolic_batch_takes_any_batch_in_its_range(tmp_path):
    # tcc compile --dim batch=1..8: one artifact for every batch in range,
    # each call's output of its batch; a batch outside the range is an
    # error naming the dimension, the value and the range.
    source = tmp_path / "abs.mlir"
    source.write_text(
        "func.func @abs(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {\n"
        "  %0 = tosa.abs %x : (tensor<?x4xf32>) -> tensor<?x4xf32>\n"
        "  return %0 : tensor<?x4xf32>\n"
        "}\n"
    )
    model = tcc.compile(str(source), target="generic", args=["--dim", "batch=1..8"])
    (f,) = model.functions
    assert f.signature == "@abs(batchx4xf32) -> (batchx4xf32)"
    for batch in (1, 3, 8):
        x = np.linspace(-1, 1, batch * 4, dtype=np.float32).reshape(batch, 4)
        (y,) = model.run(x)
        assert y.shape == (batch, 4)
        np.testing.assert_array_equal(y, np.abs(x))
    with pytest.raises(ValueError, match=r"'batch' = 9, outside its declared range 1\.\.8"):
        model.run(np.zeros((9, 4), np.float32))
    with pytest.raises(ValueError, match=r"expected shape"):
        model.run(np.zeros((3,), np.float32))


def test_vulkan_artifacts_run_through_the_runtime_core(mlp):
    # --target=vulkan: Shader SPIR-V, loaded on the Vulkan driver (lavapipe
    # here) without being asked, and agreeing with the OpenCL build.
    vk = tcc.compile(os.path.join(MODELS, "mlp.mlir"), target="vulkan")
    assert vk.backend == "vulkan"
    assert vk.device.startswith("Vulkan device 0: ")
    x = np.linspace(-1, 1, 64, dtype=np.float32).reshape(1, 4, 16)
    (y,) = vk.run(x)
    (want,) = mlp.run(x)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError, match=r"input 0 of @mlp: expected shape \[1, 4, 16\]"):
        vk.run(np.zeros((1, 4, 8), np.float32))
    # Its calls keep nothing in device memory: no device arrays.
    with pytest.raises(ValueError, match=r"device arrays are OpenCL's and CUDA's: a Vulkan model's"):
        vk.upload(x)
    with pytest.raises(ValueError, match=r"device arrays are OpenCL's and CUDA's"):
        vk.run_device(x)


def test_the_same_model_from_a_file_and_from_bytes_agree(tmp_path):
    so = tmp_path / "cnn.so"
    import subprocess

    subprocess.run([os.environ["TCC"], "compile", os.path.join(MODELS, "cnn.mlir"), "-o", str(so)], check=True)
    x = np.random.default_rng(0).standard_normal((1, 8, 8, 3)).astype(np.float32)
    (a,) = tcc.load(str(so)).run(x)
    (b,) = tcc.load_bytes(so.read_bytes()).run(x)
    np.testing.assert_array_equal(a, b)


def test_several_outputs():
    model = tcc.compile(os.path.join(MODELS, "activations.mlir"))
    outputs = model.run(np.linspace(-3, 3, 128, dtype=np.float32).reshape(2, 4, 16))
    assert len(outputs) == 4 and all(o.shape == (2, 4, 16) for o in outputs)


def test_wrong_inputs_raise_value_error(mlp):
    x = np.zeros((1, 4, 16), np.float32)
    with pytest.raises(ValueError, match=r"@mlp takes 1 input\(s\) \(1x4x16xf32\), got 2"):
        mlp.run(x, x)
    with pytest.raises(
        ValueError,
        match=r"input 0 of @mlp: expected 1x4x16xf32 \(numpy float32\), got int32 with shape \[1, 4, 16\]: convert it with .astype\(np.float32\)",
    ):
        mlp.run(x.astype(np.int32))
    with pytest.raises(
        ValueError, match=r"input 0 of @mlp: expected shape \[1, 4, 16\] \(1x4x16xf32\), got \[4, 16\]"
    ):
        mlp.run(x[0])
    with pytest.raises(ValueError, match=r"got float64 .*: convert it with .astype\(np.float32\)"):
        mlp.run(x.astype(np.float64))
    with pytest.raises(ValueError, match="expected a numpy array"):
        mlp.run([[0.0] * 16] * 4)
    with pytest.raises(ValueError, match="no function @nope"):
        mlp.run(x, function="nope")


def test_truncated_and_foreign_artifacts_raise(tmp_path):
    so = tmp_path / "mlp.so"
    import subprocess

    subprocess.run([os.environ["TCC"], "compile", os.path.join(MODELS, "mlp.mlir"), "-o", str(so)], check=True)
    data = so.read_bytes()
    with pytest.raises(RuntimeError, match="truncated"):
        tcc.load_bytes(data[: len(data) // 2])
    with pytest.raises(RuntimeError, match="not an ELF file"):
        tcc.load_bytes(b"GIF89a not a model")
    with pytest.raises(RuntimeError, match="cannot load artifact"):
        tcc.load(str(tmp_path / "missing.so"))
    with pytest.raises(RuntimeError, match="tcc compile .* failed"):
        tcc.compile(str(tmp_path / "missing.mlir"))
    with pytest.raises(RuntimeError, match="no OpenCL device matches"):
        tcc.load(str(so), device="no-such-device")


def test_a_closed_model_raises(mlp):
    model = tcc.compile(os.path.join(MODELS, "mlp.mlir"))
    model.close()
    with pytest.raises(ValueError, match="the model is closed"):
        model.run(np.zeros((1, 4, 16), np.float32))
    assert repr(model) == "Model(closed)"


def test_calls_from_several_threads(mlp):
    x = np.linspace(0, 1, 64, dtype=np.float32).reshape(1, 4, 16)
    (expected,) = mlp.run(x)
    errors = []

    def work():
        try:
            for _ in range(20):
                (y,) = mlp.run(x)
                np.testing.assert_array_equal(y, expected)
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_compile_takes_every_option(mlp):
    x = np.linspace(-1, 1, 64, dtype=np.float32).reshape(1, 4, 16)
    (want,) = mlp.run(x)
    host = tcc.compile(
        os.path.join(MODELS, "mlp.mlir"), target="host", max_fused_ops=2, storage="fp16"
    )
    (got,) = host.run(x)
    # fp16 storage rounds the weights and activations to half.
    np.testing.assert_allclose(got, want, rtol=1e-2, atol=1e-2)
    with pytest.raises(RuntimeError, match=r"--precision=tf32 .*needs --target=nvidia"):
        tcc.compile(os.path.join(MODELS, "mlp.mlir"), precision="tf32")
    with pytest.raises(RuntimeError, match=r"--target=tpu: unknown target"):
        tcc.compile(os.path.join(MODELS, "mlp.mlir"), target="tpu")


@pytest.fixture(scope="module")
def named(tmp_path_factory):
    """An ONNX model with named inputs and outputs: sum = a + b, prod = a * b."""
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("Add", ["a", "b"], ["sum"]), helper.make_node("Mul", ["a", "b"], ["prod"])],
        "named",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 3]) for n in ("a", "b")],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 3]) for n in ("sum", "prod")],
    )
    path = tmp_path_factory.mktemp("named") / "named.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return tcc.compile(str(path))


def test_inputs_by_name_and_position_and_outputs_by_name(named):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.full((2, 3), 2.0, np.float32)
    by_position = named.run(a, b)
    by_dict = named.run({"b": b, "a": a})
    by_keyword = named.run(b=b, a=a)
    for outputs in (by_position, by_dict, by_keyword):
        np.testing.assert_array_equal(outputs[0], a + b)
        np.testing.assert_array_equal(outputs[1], a * b)
    out = named.run_dict(a=a, b=b)
    assert list(out) == ["sum", "prod"]
    np.testing.assert_array_equal(out["prod"], a * b)


def test_named_inputs_that_are_wrong_raise_value_error(named):
    a = np.zeros((2, 3), np.float32)
    with pytest.raises(ValueError, match=r"input 'b' of @\w+ is missing: expected 2x3xf32 \(got a\)"):
        named.run(a=a)
    with pytest.raises(ValueError, match=r"has no input named 'c' \(its inputs: a: 2x3xf32, b: 2x3xf32\)"):
        named.run(a=a, b=a, c=a)
    with pytest.raises(ValueError, match=r"input 'a' of @\w+: expected 2x3xf32 \(numpy float32\), got float64"):
        named.run({"a": a.astype(np.float64), "b": a})
    with pytest.raises(ValueError, match=r"input 'b' of @\w+: expected shape \[2, 3\] \(2x3xf32\), got \[3, 2\]"):
        named.run(a=a, b=a.T.copy())
    with pytest.raises(ValueError, match="by position or by name, not both"):
        named.run(a, b=a)


def test_dlpack_exchange_with_numpy(named):
    class Producer:
        """Not a numpy array: only the DLPack protocol (as torch and CuPy
        tensors offer it)."""

        def __init__(self, array):
            self.array = array

        def __dlpack__(self, **kwargs):
            return self.array.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return self.array.__dlpack_device__()

    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    (total, _) = named.run(Producer(a), Producer(a))
    np.testing.assert_array_equal(total, a + a)
    # The outputs are numpy arrays: any DLPack consumer takes them.
    back = np.from_dlpack(total)
    assert np.shares_memory(back, total)


def test_a_model_closed_without_a_call_writes_its_program_cache_entry(tmp_path):
    """On PoCL the program cache entry of a fresh build waits for the first
    call and holds its key's lock until written; closing the model writes
    it, so another process loading the same artifact (a tcc.serve replica)
    does not wait for the lock."""
    import subprocess
    import sys

    so = tmp_path / "mlp.so"
    subprocess.run([os.environ["TCC"], "compile", os.path.join(MODELS, "mlp.mlir"), "-o", str(so)], check=True)
    cache = tmp_path / "cache"
    script = (
        "import glob, sys, tcc\n"
        "m = tcc.load(sys.argv[1])\n"
        "m.close()\n"
        "print(len(glob.glob(sys.argv[2] + '/opencl-programs/*.bin')))\n"
    )
    env = dict(os.environ, TCC_CACHE_DIR=str(cache))
    out = subprocess.run(
        [sys.executable, "-c", script, str(so), str(cache)],
        env=env, check=True, capture_output=True, text=True, timeout=300,
    )
    assert out.stdout.strip() == "1", out


DOUBLE = (
    "func.func @double(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {\n"
    "  %0 = tosa.add %x, %x : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>\n"
    "  return %0 : tensor<?x4xf32>\n"
    "}\n"
)


@pytest.fixture(scope="module")
def doubling(tmp_path_factory):
    # y = 2x on a symbolic batch (--dim batch=1..8).
    source = tmp_path_factory.mktemp("double") / "double.mlir"
    source.write_text(DOUBLE)
    return tcc.compile(str(source), target="generic", args=["--dim", "batch=1..8"])


def test_device_arrays_chain_calls_and_agree_with_the_host_round_trip(doubling):
    x = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    # The host round trip: the first call's output back to numpy and in.
    (h,) = doubling.run(x)
    (want,) = doubling.run(h)
    np.testing.assert_array_equal(want, 4 * x)
    # On the device: the first call's output is the second call's input.
    dx = doubling.upload(x)
    assert isinstance(dx, tcc.DeviceArray)
    assert dx.shape == (3, 4) and dx.dtype == "<f4" and dx.nbytes == 48
    assert dx.device == doubling.device
    assert repr(dx) == f"DeviceArray(3x4xf32 on {doubling.device})"
    (dh,) = doubling.run_device(dx)
    (dy,) = doubling.run_device(dh, function="double")
    assert isinstance(dy, tcc.DeviceArray) and dy.shape == (3, 4)
    np.testing.assert_array_equal(dy.numpy(), want)
    np.testing.assert_array_equal(np.asarray(dh), h)
    # run takes device arrays and returns numpy; run_device takes numpy
    # (uploaded); each call's outputs have its batch.
    (y,) = doubling.run(dh)
    assert isinstance(y, np.ndarray)
    np.testing.assert_array_equal(y, want)
    (d5,) = doubling.run_device(np.ones((5, 4), np.float32))
    assert d5.shape == (5, 4)
    np.testing.assert_array_equal(d5.numpy(), np.full((5, 4), 2, np.float32))
    # Other dtypes upload as they are.
    di = doubling.upload(np.arange(6, dtype=np.int64).reshape(2, 3))
    assert di.dtype == "<i8" and di.shape == (2, 3)
    np.testing.assert_array_equal(di.numpy(), np.arange(6).reshape(2, 3))


def test_device_arrays_of_another_model_or_of_the_wrong_type_raise(doubling, mlp, tmp_path):
    dx = doubling.upload(np.zeros((3, 4), np.float32))
    # Another model, even of the same artifact on the same device.
    source = tmp_path / "double.mlir"
    source.write_text(DOUBLE)
    twin = tcc.compile(str(source), target="generic", args=["--dim", "batch=1..8"])
    with pytest.raises(ValueError, match=r"input 0 of @double is a DeviceArray of another model"):
        twin.run_device(dx)
    with pytest.raises(ValueError, match=r"input 0 of @double is a DeviceArray of another model"):
        twin.run(dx)
    with pytest.raises(ValueError, match=r"input 0 of @mlp is a DeviceArray of another model"):
        mlp.run_device(dx)
    (mine,) = twin.run_device(twin.upload(np.ones((2, 4), np.float32)))
    np.testing.assert_array_equal(mine.numpy(), np.full((2, 4), 2, np.float32))
    with pytest.raises(ValueError, match=r"input 0 of @double expects batchx4xf32, got 3x4xi32"):
        doubling.run_device(doubling.upload(np.zeros((3, 4), np.int32)))
    with pytest.raises(ValueError, match=r"input 0 of @double expects shape batchx4, got 3x5 \(dimension 1 is 4, not 5\)"):
        doubling.run_device(doubling.upload(np.zeros((3, 5), np.float32)))
    with pytest.raises(ValueError, match=r"input 0 of @double expects 2 dimensions \(batchx4\), got 1"):
        doubling.run_device(np.zeros(3, np.float32))
    with pytest.raises(ValueError, match=r"'batch' = 9, outside its declared range 1\.\.8"):
        doubling.run_device(doubling.upload(np.zeros((9, 4), np.float32)))
    with pytest.raises(ValueError, match=r"@double takes 1 input\(s\)"):
        doubling.run_device(dx, dx)
    with pytest.raises(ValueError, match="is a tcc.DeviceArray already"):
        doubling.upload(dx)
    with pytest.raises(ValueError, match="expected a numpy array or a tcc.DeviceArray, got int"):
        doubling.upload(3)
    with pytest.raises(ValueError, match="copy=False refused"):
        dx.__array__(copy=False)


def test_device_arrays_outlive_their_closed_model(tmp_path):
    source = tmp_path / "double.mlir"
    source.write_text(DOUBLE)
    model = tcc.compile(str(source), target="generic", args=["--dim", "batch=1..8"])
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    (dy,) = model.run_device(model.upload(x))
    model.close()
    np.testing.assert_array_equal(dy.numpy(), 2 * x)
    with pytest.raises(ValueError, match="the model is closed"):
        model.upload(x)
    with pytest.raises(ValueError, match="the model is closed"):
        model.run_device(dy)


def test_the_generate_example_keeps_the_cache_on_the_device():
    # examples/python/generate.py: greedy decoding with a static-cache
    # GPT-2 (test/onnx/exporters-kv), the cache passed from step to step as
    # DeviceArrays; the tokens are onnxruntime's (greedy.json).
    import importlib.util
    import json

    repo = os.path.dirname(os.path.dirname(os.path.abspath(MODELS)))
    kv = os.path.join(repo, "test", "onnx", "exporters-kv")
    spec = importlib.util.spec_from_file_location("generate", os.path.join(repo, "examples", "python", "generate.py"))
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    reference = json.load(open(os.path.join(kv, "greedy.json")))
    model = tcc.compile(os.path.join(kv, "gpt2-static-kv-torchscript", "model.onnx"), target="generic",
                        args=["--dim", "batch=1..4", "--dim", "sequence=1..32"])
    prompt = np.array(reference["prompt"], dtype=np.int64)
    tokens, steps = example.generate(model, prompt, len(reference["tokens"][0]))
    assert tokens.tolist() == reference["tokens"]
    assert len(steps) == len(reference["tokens"][0]) - 1
    with pytest.raises(ValueError, match="do not fit a cache of 32 positions"):
        example.generate(model, prompt, 40)
