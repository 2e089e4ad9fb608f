"""tcc.serve on a local Ray cluster (issue 35, item 9): 1,000 requests from
8 concurrent clients to a deployment batched by rows, every answer checked
against the artifact run directly; an artifact of batch 1 answered one
request at a time; bad shapes, dtypes and names get their error (not a
hang); HTTP JSON requests; a replica whose artifact does not load fails its
health check with the loader's message. Ray is required (make deps installs
it): without it this file fails to import, which counts as a failure.

Run by compiler/tests/python.rs with test_tcc.py (TCC, TCC_MODELS)."""

import json
import os
import random
import shutil
import socket
import subprocess
import tempfile
import threading
import urllib.error
import urllib.request

import numpy as np
import pytest
import ray
from ray import serve

import tcc
import tcc.serve

MODELS = os.environ["TCC_MODELS"]
CLIENTS = 8
REQUESTS = 1000
TIMEOUT_S = 60


def compile_artifact(name, directory):
    out = os.path.join(directory, f"{name}.so")
    subprocess.run(
        [os.environ["TCC"], "compile", os.path.join(MODELS, f"{name}.mlir"), "-o", out, "--target=generic"],
        check=True,
    )
    return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def cluster():
    """A local Ray cluster (its own temporary directory) with Serve's HTTP
    proxy on a free loopback port; the artifacts it serves."""
    scratch = tempfile.mkdtemp(prefix="tcc-serve-")
    artifacts = {name: compile_artifact(name, scratch) for name in ("clamp_minmax", "mlp")}
    ray.init(
        num_cpus=6,
        include_dashboard=False,
        log_to_driver=False,
        _temp_dir=os.path.join(scratch, "ray"),
    )
    port = free_port()
    serve.start(http_options={"host": "127.0.0.1", "port": port})
    try:
        yield {"port": port, "scratch": scratch, **artifacts}
    finally:
        serve.shutdown()
        ray.shutdown()
        shutil.rmtree(scratch, ignore_errors=True)


@pytest.fixture(scope="module")
def clamp(cluster):
    """clamp_minmax (two unnamed inputs, input0 and input1, 5x12xf32; three
    outputs) on two replicas,
    batched by rows (B = 5)."""
    handle = serve.run(
        tcc.serve.application(cluster["clamp_minmax"], num_replicas=2, num_cpus=1),
        name="clamp",
        route_prefix="/clamp",
    )
    return handle


def replica_stats(handle, replicas):
    """describe() of each of `replicas` replicas (asked until each has
    answered once, at most 200 times)."""
    seen = {}
    for _ in range(200):
        info = handle.describe.remote().result(timeout_s=TIMEOUT_S)
        seen[info["pid"]] = info
        if len(seen) == replicas:
            break
    return list(seen.values())


def padded_direct_run(model, x, y, batch):
    """The artifact run directly on a request's rows padded with zeros to
    the compiled batch, cut back to the request's rows."""
    rows = x.shape[0]
    pad = np.zeros((batch - rows,) + x.shape[1:], x.dtype)
    outputs = model.run(np.concatenate([x, pad]), np.concatenate([y, pad]))
    return [o[:rows] for o in outputs]


def test_batched_deployment_answers_1000_requests_from_8_clients(cluster, clamp):
    info = clamp.describe.remote().result(timeout_s=TIMEOUT_S)
    assert info["batch"] == 5 and info["max_batch_size"] == 5
    assert info["function"] == "clamp_minmax"
    rng = np.random.default_rng(35)
    requests = []
    for _ in range(REQUESTS):
        rows = int(rng.integers(1, 4))  # 1..3 rows: several requests share a call
        x = rng.normal(size=(rows, 12)).astype(np.float32)
        y = rng.normal(size=(rows, 12)).astype(np.float32)
        requests.append((x, y))
    answers = [None] * REQUESTS
    errors = []

    def client(k):
        try:
            for i in range(k, REQUESTS, CLIENTS):
                x, y = requests[i]
                # Each client sends its inputs in one of the three spellings.
                if i % 3 == 0:
                    response = clamp.remote(x, y)
                elif i % 3 == 1:
                    response = clamp.remote({"input0": x, "input1": y})
                else:
                    response = clamp.remote(input0=x, input1=y)
                answers[i] = response.result(timeout_s=TIMEOUT_S)
        except Exception as e:  # reported below, with the client
            errors.append((k, e))

    threads = [threading.Thread(target=client, args=(k,)) for k in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors

    direct = tcc.load(cluster["clamp_minmax"])
    for i, ((x, y), answer) in enumerate(zip(requests, answers)):
        expected = padded_direct_run(direct, x, y, 5)
        assert len(answer) == 3, i
        for got, want in zip(answer, expected):
            assert got.dtype == np.float32 and got.shape == x.shape, (i, got.shape)
            np.testing.assert_array_equal(got, want, err_msg=f"request {i}")

    stats = replica_stats(clamp, 2)
    assert len(stats) == 2, "both replicas answer"
    answered = sum(s["answered"] for s in stats)
    calls = sum(s["calls"] for s in stats)
    assert answered >= REQUESTS and all(s["answered"] > 0 for s in stats), stats
    # Requests of 1-3 rows from 8 clients share calls of up to 5 rows.
    assert calls < answered, stats


def test_bad_requests_get_their_error_not_a_hang(clamp):
    x = np.zeros((2, 12), np.float32)
    cases = [
        ((np.zeros((2, 13), np.float32), x), {}, r"input 0 of @clamp_minmax: expected shape \(n, 12\) with 1 <= n <= 5.*got \(2, 13\)"),
        ((np.zeros((6, 12), np.float32), np.zeros((6, 12), np.float32)), {}, r"1 <= n <= 5.*got \(6, 12\)"),
        ((x, np.zeros((3, 12), np.float32)), {}, r"input 1 of @clamp_minmax: 3 rows, but the inputs before it have 2"),
        ((x.astype(np.float64), x), {}, r"expected 5x12xfloat32 \(numpy float32\), got float64.*astype\(np.float32\)"),
        (({"input0": x},), {}, r"input 1 of @clamp_minmax is missing"),
        ((), {"input0": x, "input1": x, "z": x}, r"has no input named 'z'"),
        ((x,), {}, r"takes 2 input\(s\).*got 1"),
    ]
    for args, kwargs, message in cases:
        with pytest.raises(ValueError, match=message):
            clamp.remote(*args, **kwargs).result(timeout_s=TIMEOUT_S)
    # The deployment still answers.
    (lo, hi, clamped) = clamp.remote(x, x + 1).result(timeout_s=TIMEOUT_S)
    assert lo.shape == (2, 12)


def test_batch_1_artifact_runs_requests_one_by_one(cluster):
    handle = serve.run(
        tcc.serve.application(cluster["mlp"], num_cpus=1), name="mlp", route_prefix="/mlp"
    )
    info = handle.describe.remote().result(timeout_s=TIMEOUT_S)
    assert info["batch"] == 0  # 1x4x16: one request per call
    rng = np.random.default_rng(7)
    inputs = [rng.normal(size=(1, 4, 16)).astype(np.float32) for _ in range(40)]
    responses = [handle.remote(x) for x in inputs]
    direct = tcc.load(cluster["mlp"])
    for x, response in zip(inputs, responses):
        (got,) = response.result(timeout_s=TIMEOUT_S)
        (want,) = direct.run(x)
        np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match=r"expected shape \(1, 4, 16\).*got \(2, 4, 16\)"):
        handle.remote(np.zeros((2, 4, 16), np.float32)).result(timeout_s=TIMEOUT_S)
    info = handle.describe.remote().result(timeout_s=TIMEOUT_S)
    assert info["calls"] == info["answered"] == 40
    serve.delete("mlp")


def post(port, path, body):
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_http_json_requests(cluster, clamp):
    x = np.linspace(-2, 2, 24, dtype=np.float32).reshape(2, 12)
    y = np.linspace(1, -1, 24, dtype=np.float32).reshape(2, 12)
    status, body = post(cluster["port"], "/clamp", {"inputs": {"input0": x.tolist(), "input1": y.tolist()}})
    assert status == 200, body
    expected = padded_direct_run(tcc.load(cluster["clamp_minmax"]), x, y, 5)
    assert list(body["outputs"]) == ["output0", "output1", "output2"]
    outputs = list(body["outputs"].values())
    for got, want in zip(outputs, expected):
        np.testing.assert_array_equal(np.asarray(got, np.float32), want)
    status, body = post(cluster["port"], "/clamp", {"inputs": {"input0": [[1.0] * 11], "input1": [[1.0] * 11]}})
    assert status == 400 and "expected shape (n, 12)" in body["error"], body
    status, body = post(cluster["port"], "/clamp", {"x": 1})
    assert status == 400 and '{"inputs"' in body["error"], body


def test_replica_of_a_bad_artifact_fails_its_health_check(cluster):
    bad = os.path.join(cluster["scratch"], "bad.so")
    with open(bad, "wb") as f:
        f.write(b"\x7fELF not really a tcc artifact" * 8)
    with pytest.raises(RuntimeError) as direct:
        tcc.load(bad)
    loader_message = str(direct.value)
    assert loader_message
    # The deployment fails: its replica's initial health check fails with
    # the loader's message (one try: no retries of the constructor), which
    # `serve status` shows.
    with pytest.raises(RuntimeError, match="Deploying application bad failed"):
        serve.run(
            tcc.serve.application(bad, num_cpus=1, max_constructor_retry_count=1),
            name="bad",
            route_prefix="/bad",
        )
    status = serve.status().applications["bad"].deployments["TccModel"]
    assert status.status == "DEPLOY_FAILED", status
    assert "health check" in status.message, status.message
    assert f"tcc.serve: cannot load {bad}: {loader_message.splitlines()[0]}" in status.message, (
        status.message
    )
    serve.delete("bad")


def test_the_app_builder_takes_serve_run_arguments(cluster):
    application = tcc.serve.app({"artifact": cluster["mlp"], "num_replicas": "2", "max_batch_size": "4"})
    deployment = application._bound_deployment
    assert deployment.num_replicas == 2
    with pytest.raises(ValueError, match="unknown argument"):
        tcc.serve.app({"artifact": cluster["mlp"], "replicas": "2"})
    with pytest.raises(ValueError, match="needs artifact="):
        tcc.serve.app({})


def test_max_batch_size_bounds_the_rows_of_a_request(tmp_path):
    """The deployment's class, constructed in this process (no Ray): a
    max_batch_size below the compiled batch bounds a request's rows, and
    one above it is the replica's error (its health check fails)."""
    cls = tcc.serve.TccModel.func_or_class
    artifact = compile_artifact("clamp_minmax", str(tmp_path))
    replica = cls(artifact, max_batch_size=3)
    replica.check_health()
    assert replica.describe()["max_batch_size"] == 3
    x = np.zeros((3, 12), np.float32)
    assert replica._validate((x, x), {}, from_json=False).rows == 3
    four = np.zeros((4, 12), np.float32)
    with pytest.raises(ValueError, match=r"1 <= n <= 3 .*got \(4, 12\)"):
        replica._validate((four, four), {}, from_json=False)
    too_big = cls(artifact, max_batch_size=6)
    with pytest.raises(RuntimeError, match="max_batch_size=6 .*between 1 and the compiled batch size 5"):
        too_big.check_health()
