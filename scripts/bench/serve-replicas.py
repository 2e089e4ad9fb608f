#!/usr/bin/env python3
"""Requests per second of tcc.serve (runtime/python/python/tcc/serve.py) at
1, 2 and 4 replicas on this machine: a local Ray cluster, one deployment of
ARTIFACT per replica count, CLIENTS threads sending REQUESTS requests of
ROWS rows each through a DeploymentHandle (random float inputs), after a
warm-up round. Prints one line per replica count: requests/s, rows/s, the
median and 99th-percentile latency, and the artifact calls the replicas
made (fewer calls than requests: the batcher packed requests by rows).

The tcc package must be importable (`pip install ./runtime/python`, or the
layout compiler/tests/python.rs makes on PYTHONPATH) and Ray installed
(`make deps`). ARTIFACT is a `tcc compile` output; its first input
dimension is the batch when every input and output shares it.

Usage: scripts/bench/serve-replicas.py ARTIFACT [--replicas=1,2,4]
       [--clients=8] [--requests=1000] [--rows=1] [--seed=0] [--batch-wait-ms=MS]
"""

import argparse
import os
import shutil
import socket
import statistics
import tempfile
import threading
import time

import numpy as np
import ray
from ray import serve

import tcc
import tcc.serve


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("artifact")
    parser.add_argument("--replicas", default="1,2,4")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--rows", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--batch-wait-ms", type=float, default=None, help="default: the deployment's (measured)"
    )
    args = parser.parse_args()
    artifact = os.path.abspath(args.artifact)

    model = tcc.load(artifact)
    (function,) = model.functions
    inputs = [(np.dtype(t.dtype), tuple(t.shape)) for t in function.inputs]
    batched = all(
        s and s[0] == inputs[0][1][0] and s[0] > 1
        for s in [t.shape for t in function.inputs + function.outputs]
    )
    rows = args.rows if batched else inputs[0][1][0]
    rng = np.random.default_rng(args.seed)
    request = [
        rng.random(size=(rows,) + s[1:] if batched else s).astype(d) for d, s in inputs
    ]
    print(
        f"{function.signature} on {model.device}; "
        f"{'batched by rows' if batched else 'one request per call'}; "
        f"{args.clients} clients, {args.requests} requests of {rows} row(s)",
        flush=True,
    )
    model.close()

    scratch = tempfile.mkdtemp(prefix="tcc-serve-bench-")
    ray.init(include_dashboard=False, log_to_driver=False, _temp_dir=os.path.join(scratch, "ray"))
    with socket.socket() as s:  # a free loopback port for Serve's proxy
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    serve.start(http_options={"host": "127.0.0.1", "port": port})
    try:
        print("replicas  requests/s  rows/s  p50 ms  p99 ms  calls  batch wait ms", flush=True)
        for replicas in [int(r) for r in args.replicas.split(",")]:
            handle = serve.run(
                tcc.serve.application(
                    artifact,
                    num_replicas=replicas,
                    num_cpus=0,
                    batch_wait_timeout_s=None
                    if args.batch_wait_ms is None
                    else args.batch_wait_ms / 1e3,
                ),
                name="bench",
                route_prefix=None,
            )
            run_clients(handle, request, args.clients, args.clients * 4)  # warm-up
            before = calls(handle, replicas)
            seconds, latencies = run_clients(handle, request, args.clients, args.requests)
            made = calls(handle, replicas) - before
            wait = handle.describe.remote().result(timeout_s=60)["batch_wait_timeout_s"]
            latencies.sort()
            p99 = latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))]
            print(
                f"{replicas:8d}  {args.requests / seconds:10.1f}  "
                f"{args.requests * rows / seconds:6.0f}  "
                f"{statistics.median(latencies) * 1e3:6.1f}  {p99 * 1e3:6.1f}  {made:5d}  {wait * 1e3:13.1f}",
                flush=True,
            )
            serve.delete("bench")
    finally:
        serve.shutdown()
        ray.shutdown()
        shutil.rmtree(scratch, ignore_errors=True)


def run_clients(handle, request, clients, total):
    """`total` requests from `clients` threads; the wall time and each
    request's latency."""
    latencies = []
    lock = threading.Lock()

    def client(k):
        mine = []
        for _ in range(k, total, clients):
            start = time.perf_counter()
            handle.remote(*request).result(timeout_s=120)
            mine.append(time.perf_counter() - start)
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - start, latencies


def calls(handle, replicas):
    """The artifact calls of all replicas so far (describe() until every
    replica has answered, at most 400 asks)."""
    seen = {}
    for _ in range(400):
        info = handle.describe.remote().result(timeout_s=60)
        seen[info["pid"]] = info["calls"]
        if len(seen) == replicas:
            break
    return sum(seen.values())


if __name__ == "__main__":
    main()
