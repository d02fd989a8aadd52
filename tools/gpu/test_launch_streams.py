#!/usr/bin/env python3
"""GPU tests of how tkc launchers share a process: several host threads,
each launching on its own CUDA stream at once; launches captured into a
CUDA graph and replayed; and a launch while another device is current
(its tensors' device wins). Each result is compared bit for bit with the
same call made alone on the default stream, so a race on the launchers'
per-device state or a launch on the wrong stream shows as a difference.
Needs a GPU, torch, nvcc and build/tools/tkc.

    python3 tools/gpu/test_launch_streams.py [-v]
"""

import sys
import threading
import unittest
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))

import torch  # noqa: E402

import tkc  # noqa: E402
import tkc.ops  # noqa: E402

EXAMPLES = REPO / "examples"


def gemm_operands(seed, m=1000, n=776, k=520):
    g = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16, generator=g)
    b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16, generator=g)
    return a, b


class Streams(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.gemm = tkc.load(EXAMPLES / "gemm.tk").gemm

    def product(self, a, b):
        c = torch.full((a.shape[0], b.shape[1]), float("nan"), device="cuda", dtype=torch.bfloat16)
        self.gemm(a, b, c)
        return c

    def test_threads_on_their_own_streams_match_a_lone_call(self):
        # Fresh launchers: the first launch of each thread also fills the
        # per-device caches (compute capability, multiprocessors, shared
        # memory attribute) while the others launch.
        gemm = tkc.load(EXAMPLES / "gemm.tk").gemm
        operands = [gemm_operands(seed) for seed in range(8)]
        torch.cuda.synchronize()
        expected = [self.product(a, b) for a, b in operands]
        results = [None] * len(operands)
        errors = []
        start = threading.Barrier(len(operands))

        def work(i):
            try:
                stream = torch.cuda.Stream()
                a, b = operands[i]
                with torch.cuda.stream(stream):
                    start.wait()
                    outs = []
                    for _ in range(20):
                        c = torch.full((a.shape[0], b.shape[1]), float("nan"), device="cuda", dtype=torch.bfloat16)
                        gemm(a, b, c)
                        outs.append(c)
                stream.synchronize()
                results[i] = outs
            except Exception as e:  # reported on the main thread
                errors.append(e)

        threads = [threading.Thread(target=work, args=(i,)) for i in range(len(operands))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        for want, outs in zip(expected, results):
            for got in outs:
                self.assertTrue(torch.equal(got, want))

    def test_launches_follow_the_current_stream(self):
        # A long product on a side stream, then a copy of its output on
        # that stream: if the launcher ignored the current stream, the copy
        # would race it and see NaN.
        a, b = gemm_operands(1, m=4096, n=4096, k=4096)
        want = self.product(a, b)
        torch.cuda.synchronize()
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            c = torch.full_like(want, float("nan"))
            self.gemm(a, b, c)
            copy = c.clone()
        side.synchronize()
        self.assertTrue(torch.equal(copy, want))

    def test_a_captured_graph_replays_the_launches(self):
        x = torch.randn(1001, 1024, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(1024, device="cuda", dtype=torch.bfloat16)
        bias = torch.randn(1024, device="cuda", dtype=torch.bfloat16)
        a, b = gemm_operands(2)
        c = torch.empty(a.shape[0], b.shape[1], device="cuda", dtype=torch.bfloat16)
        # Warm up outside the capture (builds, caches, shared memory limits).
        y = tkc.ops.layernorm(x, w, bias)
        self.gemm(a, b, c)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            y = tkc.ops.layernorm(x, w, bias)
            self.gemm(a, b, c)
        for seed in range(3):
            torch.manual_seed(seed)
            x.copy_(torch.randn_like(x))
            a.copy_(torch.randn_like(a))
            c.fill_(float("nan"))
            graph.replay()
            torch.cuda.synchronize()
            self.assertTrue(torch.equal(y, tkc.ops.layernorm(x, w, bias)))
            self.assertTrue(torch.equal(c, self.product(a, b)))

    @unittest.skipUnless(torch.cuda.device_count() >= 2, "needs two GPUs")
    def test_tensors_on_another_device_launch_there(self):
        a, b = (t.to("cuda:1") for t in gemm_operands(3))
        c = torch.full((a.shape[0], b.shape[1]), float("nan"), device="cuda:1", dtype=torch.bfloat16)
        with torch.cuda.device(0):
            self.gemm(a, b, c)
        torch.cuda.synchronize(1)
        self.assertTrue(torch.equal(c.cpu(), self.product(a.to("cuda:0"), b.to("cuda:0")).cpu()))


if __name__ == "__main__":
    unittest.main()
