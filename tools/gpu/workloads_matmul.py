"""Workloads of the tensor cores: the GEMMs and attention (TFLOP/s)."""

import math

from workload_base import Param, Workload

# --- gemm -------------------------------------------------------------------------


class Gemm(Workload):
    name = "gemm"
    stem = "gemm"
    params = [Param("A", "bf16"), Param("B", "bf16"), Param("C", "bf16", output=True)]
    main_output = "C"
    peer_names = ["cuBLAS"]
    tolerances = {"C": 1e-2}
    check_sizes = [dict(M=m, N=n, K=k) for m, n, k in
                   [(128, 128, 128), (1000, 1000, 1000), (257, 520, 136), (2048, 2048, 2048), (4000, 4000, 4000),
                    (4096, 4096, 4096), (8192, 8192, 8192), (8192, 8192, 1024), (4096, 4096, 16384)]] + [
        # Rows longer than the tensors: 16-byte aligned strides with ragged
        # rows (A's, and C's, whose last 16 bytes are partial: sm_80 only,
        # as the sm_90a launcher rejects rows that bulk tensor stores would
        # overrun), and C's rows only 4-byte aligned (sm_80 only: bulk
        # tensor copies need 16).
        dict(M=130, N=1000, K=129, pad=dict(A=7, B=8, C=8)),
        dict(M=130, N=1001, K=129, pad=dict(A=7, B=7, C=7), targets=("sm_80",)),
        dict(M=130, N=1000, K=136, pad=dict(C=2), targets=("sm_80",))]
    bench_sizes = [dict(M=s, N=s, K=s) for s in (2048, 4096, 8192)]
    quick_sizes = [dict(M=s, N=s, K=s) for s in (4096, 8192)]
    argcheck_size = dict(M=128, N=128, K=128)
    extra_arg_cases = [("inconsistent K", dict(M=128, N=128, K=128), {"B": (136, 128)}, 2)]
    plot_xlabel = "M = N = K"

    def shapes(self, s):
        return {"A": (s["M"], s["K"]), "B": (s["K"], s["N"]), "C": (s["M"], s["N"])}

    def label(self, s):
        return f"{s['M']}x{s['N']}x{s['K']}"

    def reference(self, inp, s):
        return {"C": inp["A"].double() @ inp["B"].double()}

    def peers(self, s):
        import torch
        return {"cuBLAS": lambda inp: torch.matmul(inp["A"], inp["B"])}

    def work(self, s):
        return 2.0 * s["M"] * s["N"] * s["K"]

    def plot_x(self, s):
        return s["M"]


class GemmTN(Gemm):
    """C = A^T @ B with A stored as [K, M] (examples/gemm_tn.tk). The TMA and
    cp.async copies need rows of a multiple of 16 bytes, so M and N are
    multiples of 8 here (K, the rows of A and B, is free)."""
    name = "gemm_tn"
    stem = "gemm_tn"
    check_sizes = [dict(M=m, N=n, K=k) for m, n, k in
                   [(128, 128, 128), (1000, 1000, 1000), (136, 520, 257), (2048, 2048, 2048), (4000, 4000, 4000),
                    (4096, 4096, 4096), (8192, 8192, 1024)]]
    bench_sizes = [dict(M=s, N=s, K=s) for s in (2048, 4096, 8192)]
    quick_sizes = [dict(M=4096, N=4096, K=4096)]
    argcheck_size = dict(M=128, N=128, K=128)
    extra_arg_cases = [("inconsistent K", dict(M=128, N=128, K=128), {"B": (136, 128)}, 2)]

    def shapes(self, s):
        return {"A": (s["K"], s["M"]), "B": (s["K"], s["N"]), "C": (s["M"], s["N"])}

    def reference(self, inp, s):
        return {"C": inp["A"].double().t() @ inp["B"].double()}

    def peers(self, s):
        import torch
        return {"cuBLAS": lambda inp: torch.matmul(inp["A"].t(), inp["B"])}


class GemmSplitK(Gemm):
    """C = A @ B into an f32 C, with K cut into slices whose partial products
    are added to C (examples/gemm_splitk.tk): a kernel that clears C, then
    the split-K product. Shapes with few output tiles and a long K, where
    one block per tile leaves most multiprocessors idle; the bulk copies on
    sm_90a need K and N multiples of 8."""
    name = "gemm_splitk"
    stem = "gemm_splitk"
    params = [Param("A", "bf16"), Param("B", "bf16"), Param("C", "f32", output=True)]
    check_sizes = [dict(M=m, N=n, K=k) for m, n, k in
                   [(128, 128, 128), (136, 200, 1000), (1000, 1000, 8192), (257, 520, 136), (1024, 1024, 65536),
                    (300, 64, 20000)]]
    bench_sizes = [dict(M=m, N=n, K=k) for m, n, k in
                   [(1024, 1024, 16384), (1024, 1024, 65536), (2048, 2048, 16384), (512, 4096, 32768)]]
    quick_sizes = [dict(M=1024, N=1024, K=65536)]
    argcheck_size = dict(M=128, N=128, K=128)
    # C: cleared in 16-byte pieces, then added to in pairs of sums (8 bytes)
    # on sm_80 and with bulk additions (16) on sm_90a.
    misaligned_outputs = ["C"]
    plot_xlabel = "M x N x K"

    steps = [("gemm_splitk_zero", ["C"], []), ("gemm_splitk", ["A", "B", "C"], [])]

    def peers(self, s):
        import torch
        return {"cuBLAS": lambda inp: torch.matmul(inp["A"], inp["B"])}

    def plot_x(self, s):
        return s["K"]


# --- attention forward ----------------------------------------------------------------


def _attn_sizes(ns, ds=(64, 128), causals=(0, 1), tokens=16384, hd=2048):
    return [dict(B=tokens // n, H=hd // d, N=n, D=d, causal=c) for d in ds for c in causals for n in ns]


class Attention(Workload):
    """What the attention forward and backward share: sizes [B, H, N, D]
    with a `causal` flag, scores and their plots."""
    const_names = ["causal"]
    peer_names = ["cuDNN", "flash"]
    bench_sizes = _attn_sizes((1024, 2048, 4096, 8192, 16384))
    quick_sizes = _attn_sizes((4096,))
    argcheck_size = dict(B=1, H=2, N=128, D=64, causal=0)
    plot_xlabel = "N (B*N = 16384, H*D = 2048)"

    def label(self, s):
        return f"B{s['B']} H{s['H']} N{s['N']} D{s['D']} {'causal' if s['causal'] else 'full'}"

    def _scores(self, q, k, s):
        """Q K^T / sqrt(D), -inf above the diagonal when causal."""
        import torch
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(s["D"])
        if s["causal"]:
            n = s["N"]
            mask = torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1)
            scores = scores.masked_fill(mask, float("-inf"))
        return scores

    def plot_group(self, s):
        return f"{self.name} D={s['D']} {'causal' if s['causal'] else 'full'}"

    def plot_x(self, s):
        return s["N"]


class AttnFwd(Attention):
    name = "attn_fwd"
    stem = "attention_fwd"
    params = [Param("Q", "bf16"), Param("K", "bf16"), Param("V", "bf16"),
              Param("O", "bf16", output=True), Param("L", "f32", output=True)]
    main_output = "O"
    tolerances = {"O": 1e-2, "L": 1e-3}
    # The last sizes give a persistent kernel's blocks some ten tiles each
    # (tiles outnumber the H200's 132 multiprocessors), where the consumer
    # warpgroups' turns run on from tile to tile; the others, one each.
    check_sizes = ([dict(B=2, H=3, N=n, D=d, causal=c) for d in (64, 128) for c in (0, 1) for n in (128, 150, 1000, 1024, 4000)]
                   + [dict(B=8, H=32, N=1000, D=d, causal=c) for d in (64, 128) for c in (0, 1)])
    extra_arg_cases = [("unsupported D=96", dict(B=1, H=2, N=128, D=96, causal=0), {}, 5),
                       ("K with other N", dict(B=1, H=2, N=128, D=64, causal=0), {"K": (1, 2, 136, 64)}, 2)]

    def shapes(self, s):
        b, h, n, d = s["B"], s["H"], s["N"], s["D"]
        return {"Q": (b, h, n, d), "K": (b, h, n, d), "V": (b, h, n, d), "O": (b, h, n, d), "L": (b, h, n)}

    def reference(self, inp, s):
        import torch
        q, k, v = (inp[x].double() for x in "QKV")
        scores = self._scores(q, k, s)
        lse = torch.logsumexp(scores, dim=-1)
        p = torch.exp(scores - lse.unsqueeze(-1))
        return {"O": p @ v, "L": lse}

    def peers(self, s):
        import torch
        import torch.nn.functional as F
        from torch.nn.attention import SDPBackend, sdpa_kernel
        causal = bool(s["causal"])

        def peer(backend):
            def run(inp):
                with sdpa_kernel([backend]):
                    return F.scaled_dot_product_attention(inp["Q"], inp["K"], inp["V"], is_causal=causal)
            return run

        return {"cuDNN": peer(SDPBackend.CUDNN_ATTENTION), "flash": peer(SDPBackend.FLASH_ATTENTION)}

    def work(self, s):
        f = 4.0 * s["B"] * s["H"] * s["N"] * s["N"] * s["D"]
        return f / 2 if s["causal"] else f


# --- attention backward ---------------------------------------------------------------


class AttnBwd(Attention):
    """Three launchers of attention_bwd.tk in a row: Delta = rowsum(dO * O),
    then dK/dV (a block per key tile), then dQ (a block per query tile).
    dQacc is the f32 buffer in which the sm_80 code adds dQ up."""
    name = "attn_bwd"
    stem = "attention_bwd"
    params = [Param("Q", "bf16"), Param("K", "bf16"), Param("V", "bf16"), Param("O", "bf16"),
              Param("dO", "bf16"), Param("L", "f32"), Param("Delta", "f32", output=True),
              Param("dQ", "bf16", output=True), Param("dK", "bf16", output=True), Param("dV", "bf16", output=True),
              Param("dQacc", "f32", output=True, scratch=True)]
    main_output = "dQ"
    tolerances = {"Delta": 1e-2, "dQ": 1e-2, "dK": 1e-2, "dV": 1e-2}
    # The last sizes give the persistent dK/dV kernel's blocks several tiles.
    check_sizes = ([dict(B=2, H=3, N=n, D=d, causal=c) for d in (64, 128) for c in (0, 1) for n in (128, 150, 1000)]
                   + [dict(B=8, H=32, N=1000, D=d, causal=c) for d in (64, 128) for c in (0, 1)])
    extra_arg_cases = [("unsupported D=96", dict(B=1, H=2, N=128, D=96, causal=0), {}, 5)]

    steps = [("attn_bwd_delta", ["O", "dO", "Delta", "dQacc"], []),
             ("attn_bwd_dkdv", ["Q", "K", "V", "dO", "L", "Delta", "dK", "dV", "dQacc"], [0]),
             ("attn_bwd_dq", ["Q", "K", "V", "dO", "L", "Delta", "dQacc", "dQ"], [0])]

    def shapes(self, s):
        b, h, n, d = s["B"], s["H"], s["N"], s["D"]
        big = {x: (b, h, n, d) for x in ("Q", "K", "V", "O", "dO", "dQ", "dK", "dV", "dQacc")}
        return {**big, "L": (b, h, n), "Delta": (b, h, n)}

    def make_inputs(self, size, device="cuda"):
        """Fresh Q, K, V, dO; O and L from a forward over them (float64 for
        small sizes, the flash forward for large ones)."""
        import torch
        sh = self.shapes(size)
        inp = {x: torch.randn(sh[x], device=device, dtype=torch.bfloat16) for x in ("Q", "K", "V", "dO")}
        b, h, n, d = sh["Q"]
        if b * h * n * n <= (1 << 26):
            scores = self._scores(inp["Q"].double(), inp["K"].double(), size)
            lse = torch.logsumexp(scores, dim=-1)
            o = torch.exp(scores - lse.unsqueeze(-1)) @ inp["V"].double()
        else:
            o, lse = torch.ops.aten._scaled_dot_product_flash_attention(
                inp["Q"], inp["K"], inp["V"], 0.0, bool(size["causal"]))[:2]
        inp["O"] = o.to(torch.bfloat16)
        inp["L"] = lse.float().contiguous()
        return {p.name: inp[p.name] for p in self.params if not p.output}

    def reference(self, inp, s):
        import torch
        q, k, v = (inp[x].double().requires_grad_() for x in "QKV")
        scores = self._scores(q, k, s)
        out = torch.softmax(scores, dim=-1) @ v
        dq, dk, dv = torch.autograd.grad(out, (q, k, v), inp["dO"].double())
        delta = (inp["dO"].double() * inp["O"].double()).sum(-1)
        return {"Delta": delta, "dQ": dq, "dK": dk, "dV": dv}

    def peers(self, s):
        import torch.nn.functional as F
        from torch.nn.attention import SDPBackend, sdpa_kernel
        causal = bool(s["causal"])

        def peer(backend, tag):
            def forward(q, k, v):
                with sdpa_kernel([backend]):
                    return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            return self.backward_peer(tag, lambda inp: (inp["Q"], inp["K"], inp["V"]), forward, "dO")

        return {"cuDNN": peer(SDPBackend.CUDNN_ATTENTION, "cudnn"), "flash": peer(SDPBackend.FLASH_ATTENTION, "flash")}

    def work(self, s):
        f = 2.5 * 4.0 * s["B"] * s["H"] * s["N"] * s["N"] * s["D"]
        return f / 2 if s["causal"] else f


# --- linear layer with GELU -------------------------------------------------------------


def _gelu(x, approx):
    """GELU in x's precision: the tanh form (approx = 1) or the exact one."""
    import torch
    if approx:
        return 0.5 * x * (1 + torch.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))


class LinearGelu(Workload):
    """Y = gelu(X W^T + Bias) and the pre-activation Pre = X W^T + Bias
    (examples/linear_gelu.tk), W a linear layer's [N, K] weight; the MLP
    shapes of GPT-2 small (768 -> 3072 -> 768) over 8192 tokens. Rows of a
    multiple of 16 bytes (N and K multiples of 8) for the bulk copies."""
    name = "linear_gelu"
    stem = "linear_gelu"
    params = [Param("X", "bf16"), Param("W", "bf16"), Param("Bias", "bf16"), Param("Y", "bf16", output=True),
              Param("Pre", "bf16", output=True)]
    const_names = ["approx"]
    main_output = "Y"
    peer_names = ["cuBLAS GEMM", "cuBLAS+torch", "torch.compile"]
    timing_only_peers = ["cuBLAS GEMM"]  # X W^T alone: what the epilogue costs beyond it
    tolerances = {"Y": 1e-2, "Pre": 1e-2}
    check_sizes = [dict(M=m, N=n, K=k, approx=a) for a in (1, 0) for m, n, k in
                   [(1001, 3072, 768), (128, 128, 64), (257, 520, 136), (1, 8, 8), (8192, 3072, 768),
                    (8192, 768, 3072)]]
    bench_sizes = [dict(M=8192, N=n, K=k, approx=a) for n, k in ((3072, 768), (768, 3072)) for a in (1, 0)]
    quick_sizes = [dict(M=8192, N=3072, K=768, approx=1)]
    argcheck_size = dict(M=128, N=128, K=64, approx=1)
    extra_arg_cases = [("Bias with other N", dict(M=128, N=128, K=64, approx=1), {"Bias": (136,)}, 2),
                       ("unsupported approx=2", dict(M=128, N=128, K=64, approx=2), {}, 5)]
    plot_xlabel = "N x K (M = 8192)"

    def shapes(self, s):
        m, n, k = s["M"], s["N"], s["K"]
        return {"X": (m, k), "W": (n, k), "Bias": (n,), "Y": (m, n), "Pre": (m, n)}

    def label(self, s):
        return f"{s['M']}x{s['N']}x{s['K']} {'tanh' if s['approx'] else 'erf'}"

    def make_inputs(self, size, device="cuda"):
        """W scaled by 1 / sqrt(K), as a linear layer's initialisation, so
        that the pre-activations are about N(0, 1): GELU's curved part."""
        import torch
        sh = self.shapes(size)
        w = torch.randn(sh["W"], device=device) / math.sqrt(size["K"])
        return {"X": torch.randn(sh["X"], device=device, dtype=torch.bfloat16), "W": w.to(torch.bfloat16),
                "Bias": torch.randn(sh["Bias"], device=device, dtype=torch.bfloat16)}

    def reference(self, inp, s):
        pre = inp["X"].double() @ inp["W"].double().t() + inp["Bias"].double()
        return {"Y": _gelu(pre, s["approx"]), "Pre": pre}

    def peers(self, s):
        import torch
        import torch.nn.functional as F
        approximate = "tanh" if s["approx"] else "none"

        def eager(x, w, b):
            return F.gelu(F.linear(x, w, b), approximate=approximate)

        if not hasattr(self, "_compiled"):
            self._compiled = {}
        compiled = self._compiled.setdefault(approximate, torch.compile(eager, fullgraph=True))
        return {"cuBLAS GEMM": lambda inp: torch.matmul(inp["X"], inp["W"].t()),
                "cuBLAS+torch": lambda inp: eager(inp["X"], inp["W"], inp["Bias"]),
                "torch.compile": lambda inp: compiled(inp["X"], inp["W"], inp["Bias"])}

    def work(self, s):
        return 2.0 * s["M"] * s["N"] * s["K"]

    def plot_group(self, s):
        return f"linear_gelu {'tanh' if s['approx'] else 'erf'}"

    def plot_x(self, s):
        return s["N"]


# --- gated MLP (SwiGLU) -----------------------------------------------------------


class SwiGlu(Workload):
    """Y = silu(X Wg^T) * (X Wu^T) (examples/swiglu.tk), Wg and Wu linear
    layers' [N, K] weights: a gated MLP's first layer, two products on one
    loop. Sizes of LLaMA-style MLPs (hidden K, intermediate N about 8K / 3)
    over 8192 tokens. Rows of a multiple of 16 bytes (N and K multiples of
    8) for the bulk copies."""
    name = "swiglu"
    stem = "swiglu"
    params = [Param("X", "bf16"), Param("Wg", "bf16"), Param("Wu", "bf16"), Param("Y", "bf16", output=True)]
    main_output = "Y"
    peer_names = ["cuBLAS GEMM", "cuBLAS+torch", "torch.compile"]
    # X [Wg; Wu]^T as one GEMM of 2N columns (a merged gate-up weight): the
    # products alone, what the activation and the product cost beyond them
    timing_only_peers = ["cuBLAS GEMM"]
    tolerances = {"Y": 1e-2}
    check_sizes = [dict(M=m, N=n, K=k) for m, n, k in
                   [(1001, 2048, 768), (128, 128, 64), (257, 520, 136), (1, 8, 8), (130, 264, 72),
                    (8192, 2048, 768), (2048, 5632, 2048)]]
    bench_sizes = [dict(M=8192, N=n, K=k) for n, k in ((2048, 768), (5632, 2048), (11008, 4096))]
    quick_sizes = [dict(M=8192, N=5632, K=2048)]
    argcheck_size = dict(M=128, N=128, K=64)
    extra_arg_cases = [("Wu with other N", dict(M=128, N=128, K=64), {"Wu": (136, 64)}, 2)]
    plot_xlabel = "N x K (M = 8192)"

    def shapes(self, s):
        m, n, k = s["M"], s["N"], s["K"]
        return {"X": (m, k), "Wg": (n, k), "Wu": (n, k), "Y": (m, n)}

    def make_inputs(self, size, device="cuda"):
        """Weights scaled by 1 / sqrt(K), as a linear layer's initialisation,
        so that the gate's pre-activations are about N(0, 1), where silu
        bends."""
        import torch
        sh = self.shapes(size)
        scale = 1 / math.sqrt(size["K"])
        return {"X": torch.randn(sh["X"], device=device, dtype=torch.bfloat16),
                "Wg": (torch.randn(sh["Wg"], device=device) * scale).to(torch.bfloat16),
                "Wu": (torch.randn(sh["Wu"], device=device) * scale).to(torch.bfloat16)}

    def reference(self, inp, s):
        x = inp["X"].double()
        gate = x @ inp["Wg"].double().t()
        up = x @ inp["Wu"].double().t()
        return {"Y": gate * (1 / (1 + (-gate).exp())) * up}

    def peers(self, s):
        import torch
        import torch.nn.functional as F

        def eager(x, wg, wu):
            return F.silu(F.linear(x, wg)) * F.linear(x, wu)

        if not hasattr(self, "_compiled"):
            self._compiled = torch.compile(eager, fullgraph=True)

        def merged(inp):
            # The merged weight is made once per input set, outside the timing.
            if "_Wgu" not in inp:
                inp["_Wgu"] = torch.cat([inp["Wg"], inp["Wu"]])
            return torch.matmul(inp["X"], inp["_Wgu"].t())

        return {"cuBLAS GEMM": merged,
                "cuBLAS+torch": lambda inp: eager(inp["X"], inp["Wg"], inp["Wu"]),
                "torch.compile": lambda inp: self._compiled(inp["X"], inp["Wg"], inp["Wu"])}

    def work(self, s):
        return 4.0 * s["M"] * s["N"] * s["K"]

    def plot_x(self, s):
        return s["N"]
