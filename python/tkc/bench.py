"""Timing GPU work: the median of CUDA-event timings, the candidates called
in a fresh random order every round. torch is imported when timing."""

import math
import random
import statistics


class Timing:
    def __init__(self, times_ms):
        self.times_ms = list(times_ms)
        self.median_ms = statistics.median(self.times_ms) if self.times_ms else float("nan")
        self.min_ms = min(self.times_ms) if self.times_ms else float("nan")
        self.max_ms = max(self.times_ms) if self.times_ms else float("nan")
        self.n = len(self.times_ms)

    def __repr__(self):
        return f"Timing(median={self.median_ms:.4f} ms, min={self.min_ms:.4f}, n={self.n})"


def sets_for_l2(bytes_per_set, l2_bytes=60 << 20, max_sets=16, factor=2.0):
    """How many input sets to rotate so that the working set exceeds `factor` x L2."""
    if bytes_per_set <= 0:
        return 1
    return int(max(1, min(max_sets, math.ceil(factor * l2_bytes / bytes_per_set))))


def l2_bytes_of_device(default=60 << 20):
    try:
        import torch
        v = getattr(torch.cuda.get_device_properties(torch.cuda.current_device()), "L2_cache_size", 0)
        return int(v) if v else default
    except Exception:
        return default


def interleaved_order(names, rounds, seed=0):
    """The call order of each round: every name once, freshly shuffled."""
    rng = random.Random(seed)
    return [rng.sample(list(names), len(names)) for _ in range(rounds)]


def median_time_interleaved(fns, iters=30, warmup=5, n_sets=1, lead_us=300.0):
    """Median GPU time (ms) per candidate, timed call by call with CUDA events.

    fns: {name: callable(set_index)}; set_index runs over range(n_sets) so the
    caller can rotate input sets (use sets_for_l2 to defeat the L2 cache).
    Every round calls each candidate once, in a fresh random order (fixed
    seed), so clock and thermal drift hit all candidates alike and none
    always follows the same neighbour: with a fixed cyclic order, of two
    near-identical kernels the one called second ran 0.5-1.5% faster in
    every size of the attention forward (H200), whichever it was. Every call
    takes the next input set. Before each round a short device-side spin
    lets the CPU enqueue the round ahead of the GPU, so host launch overhead
    (ctypes, Python) does not appear inside the timed intervals.
    Returns {name: Timing}.
    """
    import torch

    names = list(fns)
    if not names:
        return {}
    n_sets = max(1, int(n_sets))
    sleep = getattr(torch.cuda, "_sleep", None)
    cycles = int(lead_us * 2000)  # about 2 GHz
    call = 0
    for _ in range(max(0, warmup)):
        for name in names:
            fns[name](call % n_sets)
            call += 1
    torch.cuda.synchronize()
    marks = {name: [] for name in names}
    for order in interleaved_order(names, iters):
        if sleep is not None and lead_us > 0:
            sleep(cycles)
        for name in order:
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            fns[name](call % n_sets)
            end.record()
            call += 1
            marks[name].append((start, end))
    torch.cuda.synchronize()
    return {name: Timing([s.elapsed_time(e) for s, e in marks[name]]) for name in names}


def time_it(fn, iters=30, warmup=5):
    """The median time (ms) of `fn()` alone."""
    return median_time_interleaved({"fn": lambda _: fn()}, iters=iters, warmup=warmup)["fn"].median_ms
