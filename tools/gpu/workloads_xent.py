"""Cross-entropy workloads (GB/s), examples/cross_entropy.tk: the forward
alone, training's forward and backward (xent_fwd then xent_bwd from the
saved Lse), and the fused xent_fwd_bwd; against F.cross_entropy, eager and
under torch.compile, forward and backward.

Targets are i32 with about one in eight ignored (-1); BV is the kernel's
chunk, 128 for small vocabularies and 1024 otherwise, as tkc.ops picks it.
X and dX rows are padded to a multiple of 8 elements, as tkc.ops pads
them: the kernels' 16-byte loads need rows that start on 16 bytes. V =
50257 (GPT-2's vocabulary) is also checked inside rows 7 elements longer.
"""

from workload_base import Param, Workload


def _rows(r, v, fill, dtype, device):
    """An [r, v] view of rows padded to a multiple of 8 elements (16 bytes
    of bf16), as tkc.ops pads them, so that any V launches."""
    import torch
    whole = torch.full((r, -(-v // 8) * 8), fill, dtype=dtype, device=device)
    return whole[:, :v]


def _loss():
    """The peers' per-row loss (0 for ignored targets); made here so that
    what torch.compile traces holds no import."""
    import torch.nn.functional as F

    def loss(x, t):
        return F.cross_entropy(x, t, ignore_index=-1, reduction="none")
    return loss


def _size(r, v, **extra):
    return dict(R=r, V=v, BV=128 if v <= 512 else 1024, **extra)


_CHECK_SIZES = [_size(1, 65), _size(37, 65), _size(1001, 65), _size(37, 1000), _size(1001, 1000),
                dict(R=37, V=1000, BV=128), dict(R=37, V=200, BV=128, pad={"X": 8}),
                _size(1001, 50257, pad={"X": 7, "dX": 7}), _size(4099, 50304)]
# GPT-2 (the padded vocabulary nanoGPT uses) and a character-level model, B * T rows.
_BENCH_SIZES = [_size(8192, 50304), _size(16384, 50304), _size(16384, 65)]


class CrossEntropy(Workload):
    """Loss and Lse per row: one read of the logits."""
    name = "xent_fwd"
    stem = "cross_entropy"
    params = [Param("X", "bf16"), Param("T", "i32"), Param("Loss", "f32", output=True),
              Param("Lse", "f32", output=True)]
    const_names = ["BV"]
    main_output = "Loss"
    peer_names = ["eager", "compiled"]
    unit = "GB/s"
    tolerances = {"Loss": 1e-5, "Lse": 1e-5, "dX": 1e-2}
    check_sizes = _CHECK_SIZES
    bench_sizes = _BENCH_SIZES
    quick_sizes = [_size(16384, 50304)]
    argcheck_size = dict(R=4, V=1000, BV=1024)
    extra_arg_cases = [("unsupported BV=256", dict(R=4, V=1000, BV=256), {}, 5),
                       ("T with other R", dict(R=4, V=1000, BV=1024), {"T": (8,)}, 2)]
    plot_xlabel = "R x V"

    def shapes(self, s):
        r, v = s["R"], s["V"]
        return {"X": (r, v), "T": (r,), "dLoss": (r,), "Loss": (r,), "Lse": (r,), "dX": (r, v)}

    def label(self, s):
        return f"R{s['R']} V{s['V']} BV{s['BV']}"

    def make_inputs(self, size, device="cuda"):
        import torch
        r, v = size["R"], size["V"]
        t = torch.randint(0, v, (r,), device=device, dtype=torch.int32)
        t[torch.rand(r, device=device) < 0.125] = -1
        x = _rows(r, v, float("nan"), torch.bfloat16, device)
        x.copy_(4 * torch.randn((r, v), device=device))
        inp = {"X": x, "T": t,
               "dLoss": torch.rand(r, device=device) / max(r, 1)}
        inp["T64"] = t.long()  # for the peers, made once
        return {n: x for n, x in inp.items() if n in self.input_names() or n == "T64"}

    def make_outputs(self, size, device="cuda"):
        import torch
        out = super().make_outputs(size, device)
        if "dX" in out:
            out["dX"] = _rows(size["R"], size["V"], float("nan"), torch.bfloat16, device)
        return out

    def input_names(self):
        return {p.name for p in self.params if not p.output}

    def reference(self, inp, s):
        import torch
        x, t = inp["X"].double(), inp["T"].long()
        valid = t >= 0
        tc = t.clamp_min(0)
        lse = torch.logsumexp(x, dim=-1)
        out = {"Lse": lse, "Loss": torch.where(valid, lse - x.gather(1, tc[:, None])[:, 0], 0.0)}
        if "dLoss" in inp:
            onehot = torch.nn.functional.one_hot(tc, s["V"]).double()
            scale = torch.where(valid, inp["dLoss"].double(), 0.0)
            out["dX"] = (torch.softmax(x, dim=-1) - onehot) * scale[:, None]
        return out

    def peers(self, s):
        import torch
        loss = _loss()
        compiled = torch.compile(loss)
        return {"eager": lambda inp: loss(inp["X"], inp["T64"]), "compiled": lambda inp: compiled(inp["X"], inp["T64"])}

    def work(self, s):
        return 2.0 * s["R"] * s["V"] + 12.0 * s["R"]  # read X; T, Loss, Lse

    def plot_x(self, s):
        return s["R"] * s["V"]


class CrossEntropyTrain(CrossEntropy):
    """Training's pair: xent_fwd (Loss, Lse), then xent_bwd (dX from X and
    the saved Lse, scaled by dLoss per row). The peers time the same:
    F.cross_entropy's forward and its backward for the upstream dLoss."""
    name = "xent_train"
    params = [Param("X", "bf16"), Param("T", "i32"), Param("dLoss", "f32"), Param("Loss", "f32", output=True),
              Param("Lse", "f32", output=True), Param("dX", "bf16", output=True)]
    steps = [("xent_fwd", ["X", "T", "Loss", "Lse"], [0]), ("xent_bwd", ["X", "T", "Lse", "dLoss", "dX"], [0])]
    main_output = "dX"
    extra_arg_cases = [("unsupported BV=256", dict(R=4, V=1000, BV=256), {}, 5),
                       ("dX with other V", dict(R=4, V=1000, BV=1024), {"dX": (4, 1008)}, 2)]

    def peers(self, s):
        import torch
        loss = _loss()
        compiled = torch.compile(loss)

        def train(fn):
            def run(inp):
                x = inp["X"].detach().requires_grad_()
                return torch.autograd.grad(fn(x, inp["T64"]), x, inp["dLoss"])[0]
            return run

        return {"eager": train(loss), "compiled": train(compiled)}

    def work(self, s):
        # X read twice, dX written; T, dLoss, Loss, Lse (Lse written and read back)
        return 3 * 2.0 * s["R"] * s["V"] + 20.0 * s["R"]


class CrossEntropyFused(CrossEntropyTrain):
    """xent_fwd_bwd: the pair's work in one kernel (dLoss known up front)."""
    name = "xent_fwd_bwd"
    params = [Param("X", "bf16"), Param("T", "i32"), Param("dLoss", "f32"), Param("Loss", "f32", output=True),
              Param("Lse", "f32", output=True), Param("dX", "bf16", output=True)]
    steps = None

    def work(self, s):
        return 3 * 2.0 * s["R"] * s["V"] + 16.0 * s["R"]
