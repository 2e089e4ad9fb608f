"""Timing a CUDA computation with CUDA events, shared by the device
scripts that measure PyTorch (scripts/bench/torch_baseline.py,
scripts/bench/real-models-device.py): the median of repeated runs after warm-up."""
import torch


def cuda_median_ms(fn, warmup, iterations):
    """The median time of `fn()` in milliseconds, over `iterations` runs
    after `warmup` untimed ones, each timed by CUDA events."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iterations):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]
