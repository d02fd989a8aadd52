"""The based_bwd workload's PyTorch peer (autograd through the chunked
algorithm, eager) and its float64 reference (autograd through every pair
summed) on the CPU: the peer's gradients must agree with the reference
within the harness's tolerance, at N below, at and past a chunk's multiple,
and disagree when dO past the first chunk is dropped in the peer only. The
peer as the harness calls it (backward_peer) must return dQ."""

import sys

import torch

sys.path.insert(0, sys.argv[1])
from workloads_based import BasedBwd, _chunked  # noqa: E402

w, based = BasedBwd(), _chunked()
torch.manual_seed(0)


def grads(inp, do):
    xs = tuple(inp[x].detach().requires_grad_() for x in "QKV")
    return dict(zip(("dQ", "dK", "dV"), torch.autograd.grad(based(*xs), xs, do)))


def rel(x, y):
    return ((x.double() - y).norm() / y.norm()).item()


for size in [dict(B=1, H=1, N=1), dict(B=1, H=1, N=64), dict(B=1, H=2, N=65), dict(B=2, H=3, N=200),
             dict(B=1, H=1, N=1000)]:
    inp = w.make_inputs(size, device="cpu")
    ref = w.reference(inp, size)
    got = grads(inp, inp["dO"])
    for g in ("dQ", "dK", "dV"):
        ok = got[g].shape == ref[g].shape and got[g].dtype == torch.bfloat16 and rel(got[g], ref[g]) <= w.tolerances[g]
        print(f"{w.label(size)}: eager {g} {'within' if ok else 'NOT within'} {w.tolerances[g]:g} of the reference")
    if size["N"] == 200:
        # peers() also makes the compiled peer, which torch 1.13 lacks.
        peer = w.backward_peer("eager", lambda inp: (inp["Q"], inp["K"], inp["V"]), based, "dO")(inp)
        print(f"{w.label(size)}: harness peer {'gives dQ' if torch.equal(peer, got['dQ']) else 'DIFFERS'}")
    if size["N"] > 64:
        do = inp["dO"].clone()
        do[:, :, 64:] = 0
        bad = grads(inp, do)
        caught = all(rel(bad[g], ref[g]) > w.tolerances[g] for g in ("dQ", "dK", "dV"))
        print(f"{w.label(size)}: truncated dO {'caught' if caught else 'MISSED'}")
