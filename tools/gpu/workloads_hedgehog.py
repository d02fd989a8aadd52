"""Hedgehog attention (examples/hedgehog.tk), causal: softmax attention
within each query's chunk of 64 rows and linear attention with learned
feature maps phi(x) = softmax(x W) over the chunks before it, normalised
together. Q, K, V, O [B, H, N, 64]; Wq, Wk [H, 64, 64].

The float64 reference weighs every pair directly (O(N^2) memory, so the
check sizes stay small). The peers are the chunked algorithm in PyTorch
(the window's weights relative to each row's largest score, the states of
the chunks before as exclusive prefix sums over chunks), eager and under
torch.compile, with bf16 products as the kernel's; and, for timing alone,
SDPA's causal attention over the same Q, K, V (the attention Hedgehog
stands in for).
"""

from workload_base import Param, Workload

D, F, CHUNK = 64, 64, 64


def _chunked():
    """The peers' forward; made here so that what torch.compile traces holds
    no import."""
    import torch

    def hedgehog(q, k, v, wq, wk):
        b, h, n, _ = q.shape
        fq = torch.softmax((q @ wq).float(), dim=-1)
        fk = torch.softmax((k @ wk).float(), dim=-1)
        pad = -n % CHUNK
        if pad:
            # Keys past the end carry zero values and come after every
            # query of their chunk: they add nothing.
            q, k, v, fq, fk = (torch.nn.functional.pad(x, (0, 0, 0, pad)) for x in (q, k, v, fq, fk))
        c = (n + pad) // CHUNK
        q, k, v, fq, fk = (x.view(b, h, c, CHUNK, x.shape[-1]) for x in (q, k, v, fq, fk))
        s = (q @ k.transpose(-1, -2)).float() / 8.0
        causal = torch.ones(CHUNK, CHUNK, dtype=torch.bool, device=q.device).tril()
        s = s.masked_fill(~causal, float("-inf"))
        m = s.amax(dim=-1, keepdim=True)
        a = torch.exp(s - m)
        kv = (fk.to(v.dtype).transpose(-1, -2) @ v).float()
        state = torch.cumsum(kv, dim=2) - kv
        zk = fk.sum(dim=3, keepdim=True)
        norm = torch.cumsum(zk, dim=2) - zk
        scale = torch.exp(-m)
        num = (a.to(v.dtype) @ v).float() + (fq.to(v.dtype) @ state.to(v.dtype)).float() * scale
        den = a.sum(dim=-1, keepdim=True) + (fq * norm).sum(dim=-1, keepdim=True) * scale
        return (num / den).to(v.dtype).view(b, h, c * CHUNK, D)[:, :, :n]
    return hedgehog


class Hedgehog(Workload):
    name = "hedgehog_fwd"
    stem = "hedgehog"
    params = [Param("Q", "bf16"), Param("K", "bf16"), Param("V", "bf16"), Param("Wq", "bf16"), Param("Wk", "bf16"),
              Param("O", "bf16", output=True)]
    main_output = "O"
    peer_names = ["eager", "compiled", "SDPA causal"]
    timing_only_peers = ["SDPA causal"]
    tolerances = {"O": 1e-2}
    # N below, at and past a chunk's multiple; heads enough for many blocks.
    check_sizes = [dict(B=1, H=1, N=n) for n in (1, 63, 64, 65)] + \
        [dict(B=2, H=3, N=n) for n in (100, 200, 1000, 1024)] + [dict(B=4, H=8, N=1027), dict(B=1, H=2, N=4097)]
    bench_sizes = [dict(B=16, H=16, N=n) for n in (1024, 2048, 4096)]
    quick_sizes = [dict(B=16, H=16, N=2048)]
    argcheck_size = dict(B=1, H=2, N=128)
    extra_arg_cases = [("V with other N", dict(B=1, H=2, N=128), {"V": (1, 2, 136, D)}, 2),
                       ("Wk for other heads", dict(B=1, H=2, N=128), {"Wk": (3, D, F)}, 2)]
    plot_xlabel = "N"

    def shapes(self, s):
        b, h, n = s["B"], s["H"], s["N"]
        return {"Q": (b, h, n, D), "K": (b, h, n, D), "V": (b, h, n, D), "Wq": (h, D, F), "Wk": (h, D, F),
                "O": (b, h, n, D)}

    def label(self, s):
        return f"B{s['B']} H{s['H']} N{s['N']}"

    def make_inputs(self, size, device="cuda"):
        """Projections x W of about unit spread, so that the feature maps are
        far from uniform; scores q.k / 8 of about unit spread."""
        import torch
        sh = self.shapes(size)
        inp = {x: torch.randn(sh[x], device=device).to(torch.bfloat16) for x in "QKV"}
        for w in ("Wq", "Wk"):
            inp[w] = (torch.randn(sh[w], device=device) / 8.0).to(torch.bfloat16)
        return inp

    def reference(self, inp, s):
        import torch
        q, k, v, wq, wk = (inp[x].double() for x in ("Q", "K", "V", "Wq", "Wk"))
        n = s["N"]
        fq, fk = torch.softmax(q @ wq, dim=-1), torch.softmax(k @ wk, dim=-1)
        i = torch.arange(n, device=q.device)
        chunk = i // CHUNK
        window = (i[:, None] >= i[None, :]) & (chunk[:, None] == chunk[None, :])
        earlier = chunk[:, None] > chunk[None, :]
        w = torch.where(window, torch.exp(q @ k.transpose(-1, -2) / 8.0),
                        torch.where(earlier, fq @ fk.transpose(-1, -2), 0.0))
        return {"O": (w @ v) / w.sum(dim=-1, keepdim=True)}

    def peers(self, s):
        import torch
        import torch.nn.functional as Fn
        hedgehog = _chunked()
        compiled = torch.compile(hedgehog)
        args = lambda inp: (inp["Q"], inp["K"], inp["V"], inp["Wq"], inp["Wk"])
        return {"eager": lambda inp: hedgehog(*args(inp)),
                "compiled": lambda inp: compiled(*args(inp)),
                "SDPA causal": lambda inp: Fn.scaled_dot_product_attention(inp["Q"], inp["K"], inp["V"],
                                                                           is_causal=True)}

    def work(self, s):
        # The chunked algorithm's products per row (chunks of 64, the mask's
        # zeros counted): the two projections, Q K^T and the weights by V
        # within the chunk, the query features by the state, and the key
        # features into it.
        per_row = 2 * (2 * D * F + CHUNK * D + CHUNK * D + F * D + F * D)
        return float(per_row) * s["B"] * s["H"] * s["N"]

    def plot_x(self, s):
        return s["N"]
