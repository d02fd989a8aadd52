#!/usr/bin/env python3
"""GPU tests of examples/nanogpt: the tkc variant of the model against the
PyTorch variant from the same weights and batch (loss and every gradient,
eager, under torch.compile(fullgraph=True) and replayed as CUDA graphs),
at the char preset's width and at the gpt2 preset's width and context. Needs a GPU, torch 2.4+, nvcc
and build/tools/tkc.

    python3 tools/gpu/test_nanogpt.py [-v] [-k PATTERN]
"""

import sys
import unittest
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))
sys.path.insert(0, str(REPO / "examples" / "nanogpt"))

import torch  # noqa: E402

from model import GPT, GPTConfig  # noqa: E402


def rel(a, b):
    a, b = a.double(), b.double()
    return ((a - b).norm() / b.norm().clamp_min(1e-30)).item()


def loss_and_grads(model, idx, targets, compile_=False, fwd=None):
    fwd = fwd or (torch.compile(model, fullgraph=True) if compile_ else model)
    model.zero_grad(set_to_none=True)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = fwd(idx, targets)
    loss.backward()
    return loss.item(), {n: p.grad.detach().clone() for n, p in model.named_parameters()}


class Variants(unittest.TestCase):
    def pair(self, cfg, batch, seed=0):
        torch.manual_seed(seed)
        ref = GPT(cfg, "torch").cuda()
        tkc = GPT(cfg, "tkc").cuda()
        tkc.load_state_dict(ref.state_dict())
        g = torch.Generator().manual_seed(seed)
        idx = torch.randint(cfg.vocab_size, (batch, cfg.block_size + 1), generator=g).cuda()
        return ref, tkc, idx[:, :-1], idx[:, 1:]

    def assert_close(self, got, want, what):
        (lg, gg), (lw, gw) = got, want
        self.assertLess(abs(lg - lw), 2e-2 * abs(lw), f"{what}: loss {lg} vs {lw}")
        for name in gw:
            self.assertIsNotNone(gg[name], f"{what}: no gradient for {name}")
            # bf16 activations on both sides, rounded at different places.
            self.assertLess(rel(gg[name], gw[name]), 5e-2, f"{what}: gradient of {name}")

    def test_char_width_eager_and_compiled(self):
        cfg = GPTConfig(n_layer=2, n_head=6, n_embd=384, block_size=256, vocab_size=128)
        ref, tkc, x, y = self.pair(cfg, batch=4)
        want = loss_and_grads(ref, x, y)
        self.assert_close(loss_and_grads(tkc, x, y), want, "tkc eager")
        torch._dynamo.reset()
        self.assert_close(loss_and_grads(tkc, x, y, compile_=True), want, "tkc compiled")
        torch._dynamo.reset()
        self.assert_close(loss_and_grads(ref, x, y, compile_=True), want, "torch compiled")

    def test_char_width_cuda_graphs(self):
        # torch.compile(mode="reduce-overhead"): the kernels of the tkc
        # operators captured into CUDA graphs and replayed.
        cfg = GPTConfig(n_layer=2, n_head=6, n_embd=384, block_size=256, vocab_size=128)
        ref, tkc, x, y = self.pair(cfg, batch=4)
        want = loss_and_grads(ref, x, y)
        torch._dynamo.reset()
        graphs = torch.compile(tkc, fullgraph=True, mode="reduce-overhead")

        def step(*args):
            torch.compiler.cudagraph_mark_step_begin()
            return graphs(*args)
        for i in range(3):  # warm-up, recording, replay
            self.assert_close(loss_and_grads(tkc, x, y, fwd=step), want, f"tkc CUDA graphs, call {i}")

    def test_gpt2_width_and_context(self):
        cfg = GPTConfig(n_layer=1, n_head=12, n_embd=768, block_size=1024, vocab_size=50304)
        ref, tkc, x, y = self.pair(cfg, batch=2)
        self.assert_close(loss_and_grads(tkc, x, y), loss_and_grads(ref, x, y), "gpt2 width")


if __name__ == "__main__":
    unittest.main(verbosity=2)
