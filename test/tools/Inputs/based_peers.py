"""The based_fwd workload's PyTorch peer (the chunked algorithm, eager) and
its float64 reference (every pair summed) on the CPU: they must agree
within the harness's tolerance, at N below, at and past a chunk's multiple,
and disagree when the peer drops a chunk's states."""

import sys

import torch

sys.path.insert(0, sys.argv[1])
from workloads_based import Based, _chunked  # noqa: E402

w, based = Based(), _chunked()
torch.manual_seed(0)
for size in [dict(B=1, H=1, N=1), dict(B=1, H=1, N=64), dict(B=1, H=2, N=65), dict(B=2, H=3, N=200),
             dict(B=1, H=1, N=1000)]:
    inp = w.make_inputs(size, device="cpu")
    ref = w.reference(inp, size)["O"]
    out = based(inp["Q"], inp["K"], inp["V"])
    rel = ((out.double() - ref).norm() / ref.norm()).item()
    ok = out.shape == ref.shape and out.dtype == torch.bfloat16 and rel <= w.tolerances["O"]
    print(f"{w.label(size)}: eager peer {'within' if ok else 'NOT within'} {w.tolerances['O']:g} of the reference")
    # The same with the inputs past the first chunk's last row zeroed in the
    # peer only: the reference must tell.
    if size["N"] > 64:
        cut = {x: t.clone() for x, t in inp.items()}
        for t in cut.values():
            t[:, :, 64:] = 0
        bad = based(cut["Q"], cut["K"], cut["V"])
        rel = ((bad.double() - ref).norm() / ref.norm()).item()
        print(f"{w.label(size)}: truncated peer {'caught' if rel > w.tolerances['O'] else 'MISSED'}")
