"""Based linear attention (examples/based.tk and based_bwd.tk): causal,
numerator only, O[i] = sum over j <= i of (1 + q_i.k_j + (q_i.k_j)^2 / 2) v_j
with Q, K [B, H, N, 16] and V, O [B, H, N, 64]; the backward gives dQ, dK
and dV from dO.

The float64 references sum the weights over every pair (O(N^2) memory, so
the check sizes stay small; the backward's by autograd through it). The
peers are the chunked algorithm in PyTorch (chunks of 64 rows: the weights
within a chunk, and the states of the chunks before it as exclusive prefix
sums over chunks), eager and under torch.compile, with bf16 products as the
kernel's; the backward's peers take autograd's gradients through it.
"""

from workload_base import Param, Workload

F, D, CHUNK = 16, 64, 64


def _chunked():
    """The peers' forward; made here so that what torch.compile traces holds
    no import."""
    import torch

    def based(q, k, v):
        b, h, n, _ = q.shape
        pad = -n % CHUNK
        if pad:
            # Zero keys past the end weigh their zero values by 1: nothing.
            q, k, v = (torch.nn.functional.pad(x, (0, 0, 0, pad)) for x in (q, k, v))
        c = (n + pad) // CHUNK
        q, k, v = (x.view(b, h, c, CHUNK, x.shape[-1]) for x in (q, k, v))
        a = (q @ k.transpose(-1, -2)).float()
        causal = torch.ones(CHUNK, CHUNK, dtype=torch.bool, device=q.device).tril()
        w = torch.where(causal, 1.0 + a + 0.5 * a * a, 0.0)
        y = (w.to(v.dtype) @ v).float()

        def before(x):
            """The sum over the chunks before each one."""
            return torch.cumsum(x, dim=2) - x

        s0 = before(v.float().sum(dim=3, keepdim=True))
        s1 = before((k.transpose(-1, -2) @ v).float())
        kk = (k.unsqueeze(-1) * k.unsqueeze(-2)).flatten(-2)
        qq = (q.unsqueeze(-1) * q.unsqueeze(-2)).flatten(-2)
        s2 = before((kk.transpose(-1, -2) @ v).float())
        y = y + s0 + (q @ s1.to(q.dtype)).float() + 0.5 * (qq @ s2.to(q.dtype)).float()
        return y.to(v.dtype).view(b, h, c * CHUNK, D)[:, :, :n]
    return based


class Based(Workload):
    name = "based_fwd"
    stem = "based"
    params = [Param("Q", "bf16"), Param("K", "bf16"), Param("V", "bf16"), Param("O", "bf16", output=True)]
    main_output = "O"
    peer_names = ["eager", "compiled"]
    tolerances = {"O": 1e-2}
    # N below, at and past a chunk's multiple; heads enough for many blocks.
    check_sizes = [dict(B=1, H=1, N=n) for n in (1, 63, 64, 65)] + \
        [dict(B=2, H=3, N=n) for n in (100, 200, 1000, 1024)] + [dict(B=4, H=8, N=1027), dict(B=1, H=2, N=4097)]
    bench_sizes = [dict(B=16, H=16, N=n) for n in (1024, 2048, 4096)]
    quick_sizes = [dict(B=16, H=16, N=2048)]
    argcheck_size = dict(B=1, H=2, N=128)
    extra_arg_cases = [("V with other N", dict(B=1, H=2, N=128), {"V": (1, 2, 136, D)}, 2),
                       ("K with 32 features", dict(B=1, H=2, N=128), {"K": (1, 2, 128, 32)}, 5)]
    plot_xlabel = "N"

    def shapes(self, s):
        b, h, n = s["B"], s["H"], s["N"]
        return {"Q": (b, h, n, F), "K": (b, h, n, F), "V": (b, h, n, D), "O": (b, h, n, D)}

    def label(self, s):
        return f"B{s['B']} H{s['H']} N{s['N']}"

    def make_inputs(self, size, device="cuda"):
        """q.k spread over about -2 .. 2, so that each of the weight's three
        terms matters."""
        import torch
        sh = self.shapes(size)
        return {x: (torch.randn(sh[x], device=device) * (0.5 if x != "V" else 1.0)).to(torch.bfloat16)
                for x in "QKV"}

    def reference(self, inp, s):
        import torch
        q, k, v = (inp[x].double() for x in "QKV")
        a = q @ k.transpose(-1, -2)
        n = s["N"]
        causal = torch.ones(n, n, dtype=torch.bool, device=a.device).tril()
        return {"O": torch.where(causal, 1.0 + a + 0.5 * a * a, 0.0) @ v}

    def peers(self, s):
        import torch
        based = _chunked()
        compiled = torch.compile(based)
        return {"eager": lambda inp: based(inp["Q"], inp["K"], inp["V"]),
                "compiled": lambda inp: compiled(inp["Q"], inp["K"], inp["V"])}

    def work(self, s):
        # The chunked algorithm's products per row (chunks of 64, the mask's
        # zeros counted): Q K^T and the weights by V within the chunk, Q by
        # the linear state and the expanded Q (256 features) by the
        # quadratic one, and K and its expansion into the two states.
        per_row = 2 * (CHUNK * F + CHUNK * D + F * D + F * F * D + F * D + F * F * D)
        return float(per_row) * s["B"] * s["H"] * s["N"]

    def plot_x(self, s):
        return s["N"]


class BasedBwd(Based):
    """Two launchers of based_bwd.tk in a row: dQ (walking the chunks
    forward), then dK and dV (walking them backward)."""
    name = "based_bwd"
    stem = "based_bwd"
    params = [Param("Q", "bf16"), Param("K", "bf16"), Param("V", "bf16"), Param("dO", "bf16"),
              Param("dQ", "bf16", output=True), Param("dK", "bf16", output=True), Param("dV", "bf16", output=True)]
    main_output = "dQ"
    tolerances = {"dQ": 1e-2, "dK": 1e-2, "dV": 1e-2}
    steps = [("based_bwd_dq", ["Q", "K", "V", "dO", "dQ"], []),
             ("based_bwd_dkdv", ["Q", "K", "V", "dO", "dK", "dV"], [])]
    extra_arg_cases = [("dO with other N", dict(B=1, H=2, N=128), {"dO": (1, 2, 136, D)}, 2),
                       ("K with 32 features", dict(B=1, H=2, N=128), {"K": (1, 2, 128, 32)}, 5)]

    def shapes(self, s):
        b, h, n = s["B"], s["H"], s["N"]
        return {"Q": (b, h, n, F), "K": (b, h, n, F), "V": (b, h, n, D), "dO": (b, h, n, D),
                "dQ": (b, h, n, F), "dK": (b, h, n, F), "dV": (b, h, n, D)}

    def make_inputs(self, size, device="cuda"):
        """Q, K and V as for the forward, and dO of unit scale."""
        import torch
        inp = super().make_inputs(size, device)
        inp["dO"] = torch.randn(self.shapes(size)["dO"], device=device).to(torch.bfloat16)
        return inp

    def reference(self, inp, s):
        import torch
        q, k, v = (inp[x].double().requires_grad_() for x in "QKV")
        out = super().reference({"Q": q, "K": k, "V": v}, s)["O"]
        dq, dk, dv = torch.autograd.grad(out, (q, k, v), inp["dO"].double())
        return {"dQ": dq, "dK": dk, "dV": dv}

    def peers(self, s):
        import torch
        based = _chunked()
        compiled = torch.compile(based)
        leaves = lambda inp: (inp["Q"], inp["K"], inp["V"])
        return {"eager": self.backward_peer("eager", leaves, based, "dO"),
                "compiled": self.backward_peer("compiled", leaves, compiled, "dO")}

    def work(self, s):
        # The products per row of the two kernels (chunks of 64, the mask's
        # zeros counted; not the products by 0/1 matrices that expand the
        # features or contract them back). dQ: Q K^T, dO V^T and dA K within
        # the chunk, dO by the linear state and by the quadratic one (256
        # features), and K and its expansion into the two states. dK and dV:
        # K Q^T, W^T dO, dO V^T (as V dO^T) and dA^T Q within the chunk, K
        # and V each by the linear state and the quadratic one, and Q and its
        # expansion into the two states.
        dq = CHUNK * F + CHUNK * D + CHUNK * F + D * F + F * F * D + F * D + F * F * D
        dkdv = CHUNK * F + CHUNK * D + CHUNK * D + CHUNK * F + 2 * (F * D + F * F * D) + F * D + F * F * D
        return 2.0 * (dq + dkdv) * s["B"] * s["H"] * s["N"]
