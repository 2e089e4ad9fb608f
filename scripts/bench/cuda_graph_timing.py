"""GPU time per call of a PyTorch callable, as the device scripts measure
it: `calls` calls captured in one CUDA graph (after warm-up calls on a side
stream, as capture requires), the graph replayed between two CUDA events,
the median of `replays` replays divided by `calls`. This leaves out
PyTorch's per-call CPU dispatch (at batch 1 longer than most kernels), as
tcc's profiling events do. Used by attention-device.py."""
import torch


def graph_us(run, calls=20, replays=10):
    """Microseconds of GPU time per call of `run`."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(5):
            run()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        for _ in range(calls):
            run()
    graph.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(replays):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) * 1000 / calls)
    times.sort()
    return times[len(times) // 2]
