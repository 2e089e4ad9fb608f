#!/usr/bin/env python3
"""DLPack exchange with torch.cuda tensors on the CUDA backend (issue 35
item 5), checked on the GPU machine in one run.

For each model of the bundle (scripts/bench/build-dlpack-bundle.sh:
test/models compiled with --target=nvidia), loaded with
tcc.load(path, backend="cuda"), on seeded random inputs:
  - the host path (numpy in, numpy out) and the device path (torch.cuda
    tensors in, tcc.CudaArray out, torch.from_dlpack) give the same values
    (exactly: the same kernels on the same device);
  - torch.from_dlpack(out) shares the output's memory (data_ptr equal: no
    copy), and keeps it alive after the CudaArray is gone (values read back
    after other allocations);
  - an output goes back in (model.run(out)) and a torch tensor produced on
    a side stream is waited for (__dlpack__(stream=1));
  - a non-contiguous tensor, a wrong dtype, a tensor on another device (if
    there are two) raise ValueError;
  - CuPy, if installed, round-trips the same way;
and times both paths (median of --iterations calls, synchronized), which
shows the host copies the device path saves.

Usage: dlpack-cuda-device.py BUNDLE [--device=N] [--iterations=N]
Exit status 0 when every check passes; each failure is printed."""
import os
import statistics
import sys
import time

import numpy as np


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    opts = dict(a[2:].split("=", 1) for a in sys.argv[1:] if a.startswith("--") and "=" in a)
    if len(args) != 1:
        print(__doc__)
        return 2
    bundle = args[0]
    ordinal = int(opts.get("device", "0"))
    iterations = int(opts.get("iterations", "50"))
    sys.path.insert(0, os.path.join(bundle, "python"))
    import tcc
    import torch

    try:
        import cupy
    except ImportError:
        cupy = None
    device = torch.device("cuda", ordinal)
    torch.cuda.set_device(device)
    failures = []

    def check(ok, what):
        print(("ok    " if ok else "FAIL  ") + what)
        if not ok:
            failures.append(what)

    def timed(fn):
        samples = []
        for _ in range(iterations):
            torch.cuda.synchronize()
            started = time.perf_counter()
            fn()
            torch.cuda.synchronize()
            samples.append(time.perf_counter() - started)
        return statistics.median(samples) * 1e6

    print(f"tcc {tcc.__version__}, torch {torch.__version__}, cupy {cupy.__version__ if cupy else 'not installed'}")
    print(f"{'model':<20} {'host path us':>13} {'device path us':>15}")
    rng = np.random.default_rng(0)
    models = sorted(f for f in os.listdir(os.path.join(bundle, "models")) if f.endswith(".so"))
    for file in models:
        name = file[:-3]
        model = tcc.load(os.path.join(bundle, "models", file), device=str(ordinal), backend="cuda")
        check(model.backend == "cuda", f"{name}: loaded on the CUDA backend ({model.device})")
        f = model.functions[0]
        host_inputs = []
        for t in f.inputs:
            dtype = np.dtype(t.dtype)
            if dtype.kind == "f":
                host_inputs.append(rng.uniform(-1, 1, t.shape).astype(dtype))
            elif dtype.kind == "b":
                host_inputs.append(rng.integers(0, 2, t.shape).astype(dtype))
            else:
                host_inputs.append(rng.integers(-8, 8, t.shape).astype(dtype))
        gpu_inputs = [torch.from_numpy(a).to(device) for a in host_inputs]
        host_out = model.run(*host_inputs, function=f.name)
        dev_out = model.run(*gpu_inputs, function=f.name)
        check(all(isinstance(o, tcc.CudaArray) for o in dev_out), f"{name}: outputs are tcc.CudaArray")
        torch_out = [torch.from_dlpack(o) for o in dev_out]
        for i, (h, o, t) in enumerate(zip(host_out, dev_out, torch_out)):
            check(t.device == device and t.data_ptr() == o.data_ptr,
                  f"{name}: output {i} taken by torch without a copy (data_ptr {t.data_ptr():#x})")
            same = np.array_equal(t.cpu().numpy(), h)
            check(same, f"{name}: output {i} equals the host path's")
        # The memory outlives the CudaArray: drop it, allocate, read again.
        expected = [t.cpu().numpy() for t in torch_out]
        del dev_out
        junk = torch.full((1 << 22,), 7.0, device=device)
        check(all(np.array_equal(t.cpu().numpy(), e) for t, e in zip(torch_out, expected)),
              f"{name}: torch's view of the outputs survives the CudaArray")
        del junk
        # An output back in, where the signature allows it.
        if len(f.inputs) == 1 and f.outputs[0].shape == f.inputs[0].shape and f.outputs[0].dtype == f.inputs[0].dtype:
            (again,) = model.run(*gpu_inputs, function=f.name)[:1]
            twice = model.run(again, function=f.name)[0].numpy()
            check(np.array_equal(twice, model.run(again.numpy(), function=f.name)[0]),
                  f"{name}: an output goes back in on the device")
        # A producer on a side stream: tcc asks for stream=1 and torch
        # makes the default stream wait.
        side = torch.cuda.Stream(device)
        with torch.cuda.stream(side):
            late = [torch.from_numpy(a).to(device, non_blocking=True) for a in host_inputs]
            if late and late[0].dtype.is_floating_point:
                for _ in range(20):
                    late[0] = late[0] * 1.0
        out = model.run(*late, function=f.name)
        check(all(np.array_equal(o.numpy(), h) for o, h in zip(out, host_out)),
              f"{name}: inputs made on a side stream are waited for")
        if cupy is not None:
            with cupy.cuda.Device(ordinal):
                cp_inputs = [cupy.asarray(a) for a in host_inputs]
                cp_out = [cupy.from_dlpack(o) for o in model.run(*cp_inputs, function=f.name)]
                check(all(np.array_equal(cupy.asnumpy(c), h) for c, h in zip(cp_out, host_out)),
                      f"{name}: CuPy in and out")
        host_us = timed(lambda: model.run(*host_inputs, function=f.name))
        dev_us = timed(lambda: model.run(*gpu_inputs, function=f.name))
        print(f"{name:<20} {host_us:>13.1f} {dev_us:>15.1f}")

    # Bad inputs.
    model = tcc.load(os.path.join(bundle, "models", "mlp.so"), device=str(ordinal), backend="cuda")
    shape = model.functions[0].inputs[0].shape
    wide = torch.zeros(shape[:-1] + [shape[-1] * 2], device=device)[..., ::2]

    def raises(what, fn, text):
        try:
            fn()
        except ValueError as e:
            check(text in str(e), f"{what}: ValueError ({e})")
        else:
            check(False, f"{what}: no error")

    raises("non-contiguous", lambda: model.run(wide), "not contiguous")
    raises("float64", lambda: model.run(torch.zeros(shape, dtype=torch.float64, device=device)), "expected")
    if torch.cuda.device_count() > 1:
        other = (ordinal + 1) % torch.cuda.device_count()
        raises("another device", lambda: model.run(torch.zeros(shape, device=torch.device("cuda", other))),
               f"CUDA device {other}")
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
