"""The kernels the GPU harness checks and benchmarks, one class each.

A workload names its launcher (`tkc_<name>`), the generated file stem
(`<stem>.<target>.cu`), its tensor parameters in launcher order, its non-dim
constants, the sizes to check and to benchmark, a float64 reference, the
peers to race, and the work per call (FLOPs or bytes). Adding a kernel means
adding a class here and listing it in WORKLOADS.

Sizes are plain dicts. torch is imported only inside methods.
"""

import math
from pathlib import Path

DTYPE_BYTES = {"bf16": 2, "f16": 2, "f32": 4}


def torch_dtype(name):
    import torch
    return {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}[name]


def numel(shape):
    n = 1
    for s in shape:
        n *= int(s)
    return n


class Param:
    """A tensor parameter; a scratch output is a work buffer that some
    targets' kernels write and others ignore, checked against nothing."""

    def __init__(self, name, dtype, output=False, scratch=False):
        self.name, self.dtype, self.output, self.scratch = name, dtype, output, scratch


class Workload:
    name = ""            # launcher: tkc_<name>
    stem = ""            # generated file: <stem>.<target>.cu
    params = []          # [Param] in launcher order
    const_names = []     # non-dim `where` constants, in declaration order
    main_output = ""     # output compared against peers in the benchmark
    peer_names = []      # the keys of peers(), for listings without torch
    unit = "TFLOP/s"     # "TFLOP/s" (work = FLOPs) or "GB/s" (work = bytes)
    tolerances = {}      # output name -> max relative error (norm-wise)
    check_sizes = []
    bench_sizes = []
    quick_sizes = []
    argcheck_size = {}
    # (label, size, {param: shape override}, expected status)
    extra_arg_cases = []
    # outputs that every target's launcher rejects one element off alignment
    misaligned_outputs = []
    source = None        # a fixed .cu (selftest) instead of <gpu_dir>/<stem>.<target>.cu

    def shapes(self, size):
        raise NotImplementedError

    def make_launcher(self, lib):
        """The callable the harness runs: `tkc_<name>` over every parameter."""
        return lib.launcher(self.name, len(self.params), len(self.const_names))

    def consts(self, size):
        return [int(size[c]) for c in self.const_names]

    def label(self, size):
        return "x".join(str(v) for v in size.values())

    def reference(self, inputs, size):
        """{output name: float64 tensor} from the (low-precision) inputs."""
        raise NotImplementedError

    def peers(self, size):
        """{peer name: callable(inputs dict) -> main output tensor}."""
        return {}

    def work(self, size):
        raise NotImplementedError

    def plot_group(self, size):
        return self.name

    def plot_x(self, size):
        return 0

    plot_xlabel = "size"

    def bytes_per_set(self, size):
        sh = self.shapes(size)
        return sum(numel(sh[p.name]) * DTYPE_BYTES[p.dtype] for p in self.params)

    def make_inputs(self, size, device="cuda"):
        import torch
        sh = self.shapes(size)
        return {p.name: torch.randn(sh[p.name], device=device, dtype=torch_dtype(p.dtype))
                for p in self.params if not p.output}

    def make_outputs(self, size, device="cuda"):
        import torch
        sh = self.shapes(size)
        return {p.name: torch.full(sh[p.name], float("nan"), device=device, dtype=torch_dtype(p.dtype))
                for p in self.params if p.output}


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

    def make_launcher(self, lib):
        from tkc_gpu import SequenceLauncher
        idx = {p.name: i for i, p in enumerate(self.params)}
        steps = [("gemm_splitk_zero", ["C"], []), ("gemm_splitk", ["A", "B", "C"], [])]
        return SequenceLauncher(self.name, [(lib.launcher(k, len(ts), len(cs)), [idx[t] for t in ts], cs)
                                            for k, ts, cs in steps])

    def peers(self, s):
        import torch
        return {"cuBLAS": lambda inp: torch.matmul(inp["A"], inp["B"])}

    def plot_x(self, s):
        return s["K"]


# --- attention forward ----------------------------------------------------------------


def _attn_sizes(ns, ds=(64, 128), causals=(0, 1), tokens=16384, hd=2048):
    return [dict(B=tokens // n, H=hd // d, N=n, D=d, causal=c) for d in ds for c in causals for n in ns]


class AttnFwd(Workload):
    name = "attn_fwd"
    stem = "attention_fwd"
    params = [Param("Q", "bf16"), Param("K", "bf16"), Param("V", "bf16"),
              Param("O", "bf16", output=True), Param("L", "f32", output=True)]
    const_names = ["causal"]
    main_output = "O"
    peer_names = ["cuDNN", "flash"]
    tolerances = {"O": 1e-2, "L": 1e-3}
    # The last sizes give a persistent kernel's blocks some ten tiles each
    # (tiles outnumber the H200's 132 multiprocessors), where the consumer
    # warpgroups' turns run on from tile to tile; the others, one each.
    check_sizes = ([dict(B=2, H=3, N=n, D=d, causal=c) for d in (64, 128) for c in (0, 1) for n in (128, 150, 1000, 1024, 4000)]
                   + [dict(B=8, H=32, N=1000, D=d, causal=c) for d in (64, 128) for c in (0, 1)])
    bench_sizes = _attn_sizes((1024, 2048, 4096, 8192, 16384))
    quick_sizes = _attn_sizes((4096,))
    argcheck_size = dict(B=1, H=2, N=128, D=64, causal=0)
    extra_arg_cases = [("unsupported D=96", dict(B=1, H=2, N=128, D=96, causal=0), {}, 5),
                       ("K with other N", dict(B=1, H=2, N=128, D=64, causal=0), {"K": (1, 2, 136, 64)}, 2)]
    plot_xlabel = "N (B*N = 16384, H*D = 2048)"

    def shapes(self, s):
        b, h, n, d = s["B"], s["H"], s["N"], s["D"]
        return {"Q": (b, h, n, d), "K": (b, h, n, d), "V": (b, h, n, d), "O": (b, h, n, d), "L": (b, h, n)}

    def label(self, s):
        return f"B{s['B']} H{s['H']} N{s['N']} D{s['D']} {'causal' if s['causal'] else 'full'}"

    def reference(self, inp, s):
        import torch
        q, k, v = (inp[x].double() for x in "QKV")
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(s["D"])
        if s["causal"]:
            n = s["N"]
            mask = torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1)
            scores = scores.masked_fill(mask, float("-inf"))
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

    def plot_group(self, s):
        return f"attn_fwd D={s['D']} {'causal' if s['causal'] else 'full'}"

    def plot_x(self, s):
        return s["N"]


# --- attention backward ---------------------------------------------------------------


class AttnBwd(Workload):
    """Three launchers of attention_bwd.tk in a row: Delta = rowsum(dO * O),
    then dK/dV (a block per key tile), then dQ (a block per query tile).
    dQacc is the f32 buffer in which the sm_80 code adds dQ up."""
    name = "attn_bwd"
    stem = "attention_bwd"
    params = [Param("Q", "bf16"), Param("K", "bf16"), Param("V", "bf16"), Param("O", "bf16"),
              Param("dO", "bf16"), Param("L", "f32"), Param("Delta", "f32", output=True),
              Param("dQ", "bf16", output=True), Param("dK", "bf16", output=True), Param("dV", "bf16", output=True),
              Param("dQacc", "f32", output=True, scratch=True)]
    const_names = ["causal"]
    main_output = "dQ"
    peer_names = ["cuDNN", "flash"]
    tolerances = {"Delta": 1e-2, "dQ": 1e-2, "dK": 1e-2, "dV": 1e-2}
    # The last sizes give the persistent dK/dV kernel's blocks several tiles.
    check_sizes = ([dict(B=2, H=3, N=n, D=d, causal=c) for d in (64, 128) for c in (0, 1) for n in (128, 150, 1000)]
                   + [dict(B=8, H=32, N=1000, D=d, causal=c) for d in (64, 128) for c in (0, 1)])
    bench_sizes = _attn_sizes((1024, 2048, 4096, 8192, 16384))
    quick_sizes = _attn_sizes((4096,))
    argcheck_size = dict(B=1, H=2, N=128, D=64, causal=0)
    extra_arg_cases = [("unsupported D=96", dict(B=1, H=2, N=128, D=96, causal=0), {}, 5)]
    plot_xlabel = "N (B*N = 16384, H*D = 2048)"

    def make_launcher(self, lib):
        from tkc_gpu import SequenceLauncher
        idx = {p.name: i for i, p in enumerate(self.params)}
        steps = [("attn_bwd_delta", ["O", "dO", "Delta", "dQacc"], []),
                 ("attn_bwd_dkdv", ["Q", "K", "V", "dO", "L", "Delta", "dK", "dV", "dQacc"], [0]),
                 ("attn_bwd_dq", ["Q", "K", "V", "dO", "L", "Delta", "dQacc", "dQ"], [0])]
        return SequenceLauncher(self.name, [(lib.launcher(k, len(ts), len(cs)), [idx[t] for t in ts], cs)
                                            for k, ts, cs in steps])

    def shapes(self, s):
        b, h, n, d = s["B"], s["H"], s["N"], s["D"]
        big = {x: (b, h, n, d) for x in ("Q", "K", "V", "O", "dO", "dQ", "dK", "dV", "dQacc")}
        return {**big, "L": (b, h, n), "Delta": (b, h, n)}

    def label(self, s):
        return f"B{s['B']} H{s['H']} N{s['N']} D{s['D']} {'causal' if s['causal'] else 'full'}"

    def _scores(self, q, k, s):
        import torch
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(s["D"])
        if s["causal"]:
            n = s["N"]
            mask = torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1)
            scores = scores.masked_fill(mask, float("-inf"))
        return scores

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
        import torch
        import torch.nn.functional as F
        from torch.nn.attention import SDPBackend, sdpa_kernel
        causal = bool(s["causal"])

        def peer(backend, tag):
            def run(inp):
                # The forward runs once per input set; each call times the backward.
                key = "_graph_" + tag
                if key not in inp:
                    q, k, v = (inp[x].detach().requires_grad_() for x in "QKV")
                    with sdpa_kernel([backend]):
                        out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                    inp[key] = (q, k, v, out)
                q, k, v, out = inp[key]
                return torch.autograd.grad(out, (q, k, v), inp["dO"], retain_graph=True)[0]
            return run

        return {"cuDNN": peer(SDPBackend.CUDNN_ATTENTION, "cudnn"), "flash": peer(SDPBackend.FLASH_ATTENTION, "flash")}

    def work(self, s):
        f = 2.5 * 4.0 * s["B"] * s["H"] * s["N"] * s["N"] * s["D"]
        return f / 2 if s["causal"] else f

    def plot_group(self, s):
        return f"attn_bwd D={s['D']} {'causal' if s['causal'] else 'full'}"

    def plot_x(self, s):
        return s["N"]


# --- layernorm --------------------------------------------------------------------------


class LayerNorm(Workload):
    """Y = (X - mean) * rstd * W + Bias with rstd = rsqrt(var + eps) per row;
    the kernel also writes Mean and Rstd (f32) for the backward."""
    name = "layernorm"
    stem = "layernorm"
    params = [Param("X", "bf16"), Param("W", "bf16"), Param("Bias", "bf16"), Param("Y", "bf16", output=True),
              Param("Mean", "f32", output=True), Param("Rstd", "f32", output=True)]
    main_output = "Y"
    peer_names = ["torch"]
    unit = "GB/s"
    eps = 1e-5
    tolerances = {"Y": 1e-2, "Mean": 1e-5, "Rstd": 1e-5}
    check_sizes = [dict(R=r, D=d) for d in (1024, 2048, 4096) for r in (4, 37, 1000, 4099)]
    bench_sizes = [dict(R=65536, D=d) for d in (1024, 2048, 4096)]
    quick_sizes = [dict(R=65536, D=d) for d in (1024, 4096)]
    argcheck_size = dict(R=4, D=1024)
    extra_arg_cases = [("unsupported D=512", dict(R=4, D=512), {}, 5),
                       ("W with other D", dict(R=4, D=1024), {"W": (1032,)}, 2),
                       ("Rstd with other R", dict(R=4, D=1024), {"Rstd": (8,)}, 2)]
    plot_xlabel = "D (R = 65536)"

    def shapes(self, s):
        r, d = s["R"], s["D"]
        return {"X": (r, d), "W": (d,), "Bias": (d,), "Y": (r, d), "Mean": (r,), "Rstd": (r,)}

    def label(self, s):
        return f"R{s['R']} D{s['D']}"

    def reference(self, inp, s):
        x = inp["X"].double()
        mean = x.mean(dim=-1, keepdim=True)
        var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
        rstd = (var + self.eps).rsqrt()
        y = (x - mean) * rstd
        return {"Y": y * inp["W"].double() + inp["Bias"].double(), "Mean": mean.squeeze(-1),
                "Rstd": rstd.squeeze(-1)}

    def peers(self, s):
        import torch.nn.functional as F
        d, eps = s["D"], self.eps
        return {"torch": lambda inp: F.layer_norm(inp["X"], (d,), inp["W"], inp["Bias"], eps)}

    def work(self, s):
        # read X + write Y + W + Bias (bf16), Mean and Rstd (f32)
        return 2.0 * (2 * s["R"] * s["D"] + 2 * s["D"]) + 8.0 * s["R"]

    def plot_x(self, s):
        return s["D"]


class LayerNormBwd(Workload):
    """Two launchers of layernorm.tk: layernorm_bwd (dX, and the partial sums
    of dW and dBias over each block's 32 rows into the f32 buffers dWp and
    dBp), then layernorm_bwd_dwdb (dW, dBias = the column sums of the
    partials)."""
    name = "layernorm_bwd"
    stem = "layernorm"
    params = [Param("dY", "bf16"), Param("X", "bf16"), Param("W", "bf16"), Param("Mean", "f32"),
              Param("Rstd", "f32"), Param("dX", "bf16", output=True), Param("dW", "f32", output=True),
              Param("dBias", "f32", output=True), Param("dWp", "f32", output=True, scratch=True),
              Param("dBp", "f32", output=True, scratch=True)]
    main_output = "dX"
    peer_names = ["torch"]
    unit = "GB/s"
    eps = 1e-5
    rows_per_block = 32  # layernorm_bwd's rows a block, one row of dWp and dBp each
    tolerances = {"dX": 1e-2, "dW": 1e-4, "dBias": 1e-4}
    # D = 1024 only: a thread holds D / 32 elements of dY, Xhat and both sums.
    check_sizes = [dict(R=r, D=1024) for r in (1, 37, 1000, 4099, 70000)]
    bench_sizes = [dict(R=r, D=1024) for r in (32768, 65536)]
    quick_sizes = [dict(R=65536, D=1024)]
    argcheck_size = dict(R=4, D=1024)
    extra_arg_cases = [("unsupported D=2048", dict(R=4, D=2048), {}, 5),
                       ("Mean with other R", dict(R=4, D=1024), {"Mean": (8,)}, 2)]
    plot_xlabel = "R (D = 1024)"

    def make_launcher(self, lib):
        from tkc_gpu import SequenceLauncher
        idx = {p.name: i for i, p in enumerate(self.params)}
        steps = [("layernorm_bwd", ["dY", "X", "W", "Mean", "Rstd", "dX", "dWp", "dBp"], []),
                 ("layernorm_bwd_dwdb", ["dWp", "dBp", "dW", "dBias"], [])]
        return SequenceLauncher(self.name, [(lib.launcher(k, len(ts), len(cs)), [idx[t] for t in ts], cs)
                                            for k, ts, cs in steps])

    def shapes(self, s):
        r, d = s["R"], s["D"]
        p = -(-r // self.rows_per_block)
        return {"dY": (r, d), "X": (r, d), "W": (d,), "Mean": (r,), "Rstd": (r,), "dX": (r, d), "dW": (d,),
                "dBias": (d,), "dWp": (p, d), "dBp": (p, d)}

    def label(self, s):
        return f"R{s['R']} D{s['D']}"

    def make_inputs(self, size, device="cuda"):
        """Fresh dY, X, W; Mean and Rstd as the forward computes them (f32, from X)."""
        import torch
        sh = self.shapes(size)
        inp = {x: torch.randn(sh[x], device=device, dtype=torch.bfloat16) for x in ("dY", "X", "W")}
        x = inp["X"].float()
        mean = x.mean(-1)
        inp["Mean"] = mean.contiguous()
        inp["Rstd"] = torch.rsqrt((x - mean[:, None]).pow(2).mean(-1) + self.eps).contiguous()
        return inp

    def reference(self, inp, s):
        import torch
        import torch.nn.functional as F
        x, w = inp["X"].double().requires_grad_(), inp["W"].double().requires_grad_()
        b = torch.zeros_like(w, requires_grad=True)
        y = F.layer_norm(x, (s["D"],), w, b, self.eps)
        dx, dw, db = torch.autograd.grad(y, (x, w, b), inp["dY"].double())
        return {"dX": dx, "dW": dw, "dBias": db}

    def peers(self, s):
        import torch
        import torch.nn.functional as F
        d, eps = s["D"], self.eps

        def run(inp):
            # The forward runs once per input set; each call times the backward.
            if "_graph" not in inp:
                x, w = inp["X"].detach().requires_grad_(), inp["W"].detach().requires_grad_()
                b = torch.zeros_like(w, requires_grad=True)
                inp["_graph"] = (x, w, b, F.layer_norm(x, (d,), w, b, eps))
            x, w, b, out = inp["_graph"]
            return torch.autograd.grad(out, (x, w, b), inp["dY"], retain_graph=True)[0]

        return {"torch": run}

    def work(self, s):
        r, d = s["R"], s["D"]
        # dY, X read and dX written (bf16), W, Mean and Rstd read, dW and
        # dBias written; the partials (written and read back) are not counted.
        return 2.0 * 3 * r * d + 2.0 * d + 8.0 * r + 8.0 * d

    def plot_x(self, s):
        return s["R"]


class BiasGrad(Workload):
    name = "bias_grad"
    stem = "bias_grad"
    params = [Param("dY", "bf16"), Param("dBias", "f32", output=True), Param("Max", "f32", output=True)]
    main_output = "dBias"
    peer_names = ["torch"]
    unit = "GB/s"
    tolerances = {"dBias": 1e-5, "Max": 1e-6}
    # Odd row counts leave padding rows in the last tile, which colmax of the
    # (all negative) inputs must not see; column counts that are not
    # multiples of 64 cut a block short (dY's rows must be 16-byte aligned).
    check_sizes = [dict(R=r, C=c) for r, c in [(1, 8), (100, 72), (64, 64), (333, 1000), (4099, 4104)]]
    bench_sizes = [dict(R=8192, C=c) for c in (1024, 8192)]
    quick_sizes = [dict(R=8192, C=8192)]
    argcheck_size = dict(R=64, C=64)
    extra_arg_cases = [("dBias with other C", dict(R=64, C=64), {"dBias": (72,)}, 2)]
    plot_xlabel = "C (R = 8192)"

    def shapes(self, s):
        return {"dY": (s["R"], s["C"]), "dBias": (s["C"],), "Max": (s["C"],)}

    def label(self, s):
        return f"R{s['R']} C{s['C']}"

    def make_inputs(self, size, device="cuda"):
        import torch
        dy = -(torch.randn(self.shapes(size)["dY"], device=device).abs() + 0.5)
        return {"dY": dy.to(torch.bfloat16)}

    def reference(self, inp, s):
        dy = inp["dY"].double()
        return {"dBias": dy.sum(dim=0), "Max": dy.amax(dim=0)}

    def peers(self, s):
        return {"torch": lambda inp: inp["dY"].float().sum(dim=0)}

    def work(self, s):
        return 2.0 * s["R"] * s["C"] + 8.0 * s["C"]  # read dY (bf16), write both f32 vectors

    def plot_x(self, s):
        return s["C"]


# --- softmax, RMS norm, rotary embedding (memory-bound rows) --------------------------------


class Softmax(Workload):
    name = "softmax"
    stem = "softmax"
    params = [Param("X", "bf16"), Param("Y", "bf16", output=True)]
    main_output = "Y"
    peer_names = ["torch"]
    unit = "GB/s"
    tolerances = {"Y": 1e-2}
    check_sizes = [dict(R=r, D=d) for d in (1024, 2048, 4096) for r in (1, 37, 1000, 4099)]
    bench_sizes = [dict(R=32768, D=d) for d in (1024, 2048, 4096)]
    quick_sizes = [dict(R=32768, D=4096)]
    argcheck_size = dict(R=4, D=1024)
    extra_arg_cases = [("unsupported D=512", dict(R=4, D=512), {}, 5),
                       ("Y with other R", dict(R=4, D=1024), {"Y": (8, 1024)}, 2)]
    plot_xlabel = "D (R = 32768)"

    def shapes(self, s):
        return {"X": (s["R"], s["D"]), "Y": (s["R"], s["D"])}

    def label(self, s):
        return f"R{s['R']} D{s['D']}"

    def make_inputs(self, size, device="cuda"):
        import torch
        # Spread wide enough that the row max matters (exp(8) ~ 3000).
        return {"X": (4 * torch.randn(self.shapes(size)["X"], device=device)).to(torch.bfloat16)}

    def reference(self, inp, s):
        import torch
        return {"Y": torch.softmax(inp["X"].double(), dim=-1)}

    def peers(self, s):
        import torch
        return {"torch": lambda inp: torch.softmax(inp["X"], dim=-1)}

    def work(self, s):
        return 2.0 * 2 * s["R"] * s["D"]  # read X, write Y (bf16)

    def plot_x(self, s):
        return s["D"]


class RmsNorm(Workload):
    """Y = X * rstd * W with rstd = rsqrt(mean(X^2) + eps) per row, which the
    kernel also writes (f32) for the backward."""
    name = "rmsnorm"
    stem = "rmsnorm"
    params = [Param("X", "bf16"), Param("W", "bf16"), Param("Y", "bf16", output=True), Param("Rstd", "f32", output=True)]
    main_output = "Y"
    peer_names = ["rms_norm", "eager"]
    unit = "GB/s"
    eps = 1e-6
    tolerances = {"Y": 1e-2, "Rstd": 1e-5}
    check_sizes = [dict(R=r, D=d) for d in (1024, 2048, 4096) for r in (1, 37, 1000, 4099)]
    bench_sizes = [dict(R=32768, D=d) for d in (1024, 2048, 4096)]
    quick_sizes = [dict(R=32768, D=4096)]
    argcheck_size = dict(R=4, D=1024)
    extra_arg_cases = [("unsupported D=512", dict(R=4, D=512), {}, 5),
                       ("W with other D", dict(R=4, D=1024), {"W": (1032,)}, 2),
                       ("Rstd with other R", dict(R=4, D=1024), {"Rstd": (8,)}, 2)]
    plot_xlabel = "D (R = 32768)"

    def shapes(self, s):
        r, d = s["R"], s["D"]
        return {"X": (r, d), "W": (d,), "Y": (r, d), "Rstd": (r,)}

    def label(self, s):
        return f"R{s['R']} D{s['D']}"

    def reference(self, inp, s):
        x = inp["X"].double()
        rstd = ((x * x).mean(dim=-1) + self.eps).rsqrt()
        return {"Y": x * rstd.unsqueeze(-1) * inp["W"].double(), "Rstd": rstd}

    def peers(self, s):
        import torch
        import torch.nn.functional as F
        d, eps = s["D"], self.eps

        def eager(inp):  # the usual module: f32 math, rounded, times the weight
            x = inp["X"].float()
            y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
            return inp["W"] * y.to(inp["X"].dtype)

        return {"rms_norm": lambda inp: F.rms_norm(inp["X"], (d,), inp["W"], eps), "eager": eager}

    def work(self, s):
        return 2.0 * (2 * s["R"] * s["D"] + s["D"]) + 4.0 * s["R"]  # X, Y, W (bf16), Rstd (f32)

    def plot_x(self, s):
        return s["D"]


class RmsNormBwd(Workload):
    """Two launchers of rmsnorm.tk: rmsnorm_bwd (dX, and dW's partial sums
    over each block's 32 rows into the f32 buffer dWp), then rmsnorm_bwd_dw
    (dW = the column sums of dWp)."""
    name = "rmsnorm_bwd"
    stem = "rmsnorm"
    params = [Param("dY", "bf16"), Param("X", "bf16"), Param("W", "bf16"), Param("Rstd", "f32"),
              Param("dX", "bf16", output=True), Param("dW", "f32", output=True),
              Param("dWp", "f32", output=True, scratch=True)]
    main_output = "dX"
    peer_names = ["rms_norm", "eager"]
    unit = "GB/s"
    eps = 1e-6
    rows_per_block = 32  # rmsnorm_bwd's rows a block, one row of dWp each
    tolerances = {"dX": 1e-2, "dW": 1e-4}
    # D = 1024 only: at 2048 a thread's share of dY, Xhat and dW's sums spills.
    check_sizes = [dict(R=r, D=1024) for r in (1, 37, 1000, 4099, 70000)]
    bench_sizes = [dict(R=r, D=1024) for r in (32768, 65536)]
    quick_sizes = [dict(R=65536, D=1024)]
    argcheck_size = dict(R=4, D=1024)
    extra_arg_cases = [("unsupported D=2048", dict(R=4, D=2048), {}, 5),
                       ("X with other R", dict(R=4, D=1024), {"X": (8, 1024)}, 2)]
    plot_xlabel = "R (D = 1024)"

    def make_launcher(self, lib):
        from tkc_gpu import SequenceLauncher
        idx = {p.name: i for i, p in enumerate(self.params)}
        steps = [("rmsnorm_bwd", ["dY", "X", "W", "Rstd", "dX", "dWp"], []), ("rmsnorm_bwd_dw", ["dWp", "dW"], [])]
        return SequenceLauncher(self.name, [(lib.launcher(k, len(ts), len(cs)), [idx[t] for t in ts], cs)
                                            for k, ts, cs in steps])

    def shapes(self, s):
        r, d = s["R"], s["D"]
        p = -(-r // self.rows_per_block)
        return {"dY": (r, d), "X": (r, d), "W": (d,), "Rstd": (r,), "dX": (r, d), "dW": (d,), "dWp": (p, d)}

    def label(self, s):
        return f"R{s['R']} D{s['D']}"

    def make_inputs(self, size, device="cuda"):
        """Fresh dY, X, W; Rstd as the forward computes it (f32, from X)."""
        import torch
        sh = self.shapes(size)
        inp = {x: torch.randn(sh[x], device=device, dtype=torch.bfloat16) for x in ("dY", "X", "W")}
        x = inp["X"].float()
        inp["Rstd"] = torch.rsqrt(x.pow(2).mean(-1) + self.eps).contiguous()
        return inp

    def reference(self, inp, s):
        import torch
        x, w = inp["X"].double().requires_grad_(), inp["W"].double().requires_grad_()
        y = x * ((x * x).mean(dim=-1, keepdim=True) + self.eps).rsqrt() * w
        dx, dw = torch.autograd.grad(y, (x, w), inp["dY"].double())
        return {"dX": dx, "dW": dw}

    def peers(self, s):
        import torch
        import torch.nn.functional as F
        d, eps = s["D"], self.eps

        def eager_fwd(x, w):
            xf = x.float()
            return w * (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)

        def peer(fwd, tag):
            def run(inp):
                # The forward runs once per input set; each call times the backward.
                key = "_graph_" + tag
                if key not in inp:
                    x, w = inp["X"].detach().requires_grad_(), inp["W"].detach().requires_grad_()
                    inp[key] = (x, w, fwd(x, w))
                x, w, out = inp[key]
                return torch.autograd.grad(out, (x, w), inp["dY"], retain_graph=True)[0]
            return run

        return {"rms_norm": peer(lambda x, w: F.rms_norm(x, (d,), w, eps), "rms_norm"), "eager": peer(eager_fwd, "eager")}

    def work(self, s):
        r, d = s["R"], s["D"]
        # dY, X read and dX written (bf16), W and Rstd read, dW written; the
        # partials (written and read back) are not counted.
        return 2.0 * 3 * r * d + 2.0 * d + 4.0 * r + 4.0 * d

    def plot_x(self, s):
        return s["R"]


class Rotary(Workload):
    """Rotary embedding in rotate-half form on X [B, T, H * Dh] with tables
    Cos, Sin [T, Dh / 2] (the angles t * 10000^(-2j / Dh))."""
    name = "rotary"
    stem = "rotary"
    params = [Param("X", "bf16"), Param("Cos", "bf16"), Param("Sin", "bf16"), Param("Y", "bf16", output=True)]
    inp_name, out_name, sign = "X", "Y", 1.0
    main_output = "Y"
    peer_names = ["eager"]
    unit = "GB/s"
    tolerances = {"Y": 1e-2}
    check_sizes = [dict(B=b, T=t, H=h, Dh=dh) for dh in (64, 128) for b, t, h in [(1, 1, 1), (2, 37, 3), (1, 1000, 5), (3, 4099, 2)]]
    bench_sizes = [dict(B=4, T=2048, H=32, Dh=dh) for dh in (64, 128)]
    quick_sizes = [dict(B=4, T=2048, H=32, Dh=128)]
    argcheck_size = dict(B=1, T=64, H=2, Dh=64)
    extra_arg_cases = [("unsupported Dh=256", dict(B=1, T=64, H=2, Dh=256), {}, 5),
                       ("Sin with other T", dict(B=1, T=64, H=2, Dh=64), {"Sin": (72, 32)}, 2)]
    plot_xlabel = "Dh (B = 4, T = 2048, H = 32)"

    def shapes(self, s):
        b, t, e, half = s["B"], s["T"], s["H"] * s["Dh"], s["Dh"] // 2
        return {self.inp_name: (b, t, e), "Cos": (t, half), "Sin": (t, half), self.out_name: (b, t, e)}

    def label(self, s):
        return f"B{s['B']} T{s['T']} H{s['H']} Dh{s['Dh']}"

    def make_inputs(self, size, device="cuda"):
        import torch
        b, t, h, dh = size["B"], size["T"], size["H"], size["Dh"]
        freq = 10000.0 ** (-torch.arange(0, dh, 2, device=device, dtype=torch.float64) / dh)
        ang = torch.arange(t, device=device, dtype=torch.float64)[:, None] * freq[None, :]
        return {self.inp_name: torch.randn((b, t, h * dh), device=device, dtype=torch.bfloat16),
                "Cos": ang.cos().to(torch.bfloat16), "Sin": ang.sin().to(torch.bfloat16)}

    def _rotate(self, x, cos, sin, s):
        """x [B, T, H * Dh] rotated by the angles (sin negated for the backward)."""
        import torch
        b, t, h, dh = s["B"], s["T"], s["H"], s["Dh"]
        x = x.view(b, t, h, dh)
        x1, x2 = x[..., :dh // 2], x[..., dh // 2:]
        c, sn = cos[:, None, :], self.sign * sin[:, None, :]
        return torch.cat([x1 * c - x2 * sn, x2 * c + x1 * sn], dim=-1).view(b, t, h * dh)

    def reference(self, inp, s):
        return {self.out_name: self._rotate(inp[self.inp_name].double(), inp["Cos"].double(), inp["Sin"].double(), s)}

    def peers(self, s):
        return {"eager": lambda inp: self._rotate(inp[self.inp_name], inp["Cos"], inp["Sin"], s)}

    def work(self, s):
        return 2.0 * 2 * s["B"] * s["T"] * s["H"] * s["Dh"] + 2.0 * 2 * s["T"] * (s["Dh"] // 2)

    def plot_x(self, s):
        return s["Dh"]


class RotaryBwd(Rotary):
    """The transpose: dX = [dY1 * cos + dY2 * sin, dY2 * cos - dY1 * sin]."""
    name = "rotary_bwd"
    params = [Param("dY", "bf16"), Param("Cos", "bf16"), Param("Sin", "bf16"), Param("dX", "bf16", output=True)]
    inp_name, out_name, sign = "dY", "dX", -1.0
    main_output = "dX"
    tolerances = {"dX": 1e-2}
    extra_arg_cases = [("unsupported Dh=256", dict(B=1, T=64, H=2, Dh=256), {}, 5),
                       ("dX with other B", dict(B=1, T=64, H=2, Dh=64), {"dX": (2, 64, 128)}, 2)]


# --- the harness's own smoke test (tools/gpu/selftest_abi.cu) -------------------------------


class SelftestAxpy(Workload):
    name = "axpy"
    stem = "selftest_abi"
    source = Path(__file__).resolve().parent / "selftest_abi.cu"
    params = [Param("x", "f32"), Param("y", "f32"), Param("out", "f32", output=True)]
    const_names = ["alpha"]
    main_output = "out"
    peer_names = ["torch"]
    unit = "GB/s"
    tolerances = {"out": 1e-6}
    check_sizes = [dict(n=n, alpha=a) for n, a in [(1, 3), (1000, -2), (4096, 5), ((1 << 20) + 3, 7)]]
    bench_sizes = [dict(n=1 << 26, alpha=3)]
    quick_sizes = bench_sizes
    argcheck_size = dict(n=1024, alpha=2)
    extra_arg_cases = [("y with other n", dict(n=1024, alpha=2), {"y": (1028,)}, 2)]
    # Its launcher checks descriptors only, not where the memory lives.
    checks_memory = False
    plot_xlabel = "n"

    def shapes(self, s):
        return {"x": (s["n"],), "y": (s["n"],), "out": (s["n"],)}

    def label(self, s):
        return f"n{s['n']} alpha{s['alpha']}"

    def reference(self, inp, s):
        return {"out": s["alpha"] * inp["x"].double() + inp["y"].double()}

    def peers(self, s):
        import torch
        a = s["alpha"]
        return {"torch": lambda inp: torch.add(inp["y"], inp["x"], alpha=a)}

    def work(self, s):
        return 3.0 * 4 * s["n"]

    def plot_x(self, s):
        return s["n"]


WORKLOADS = [Gemm(), GemmTN(), GemmSplitK(), AttnFwd(), AttnBwd(), LayerNorm(), LayerNormBwd(), BiasGrad(), Softmax(),
             RmsNorm(), RmsNormBwd(), Rotary(), RotaryBwd()]
SELFTEST = SelftestAxpy()
BY_NAME = {w.name: w for w in WORKLOADS + [SELFTEST]}
ALIASES = {"selftest": "axpy", "attention_fwd": "attn_fwd", "attn": "attn_fwd", "attention_bwd": "attn_bwd"}


def select(only, include_selftest):
    """Workloads named in `only` (comma list; None = all), plus the selftest when asked."""
    if only:
        names = [ALIASES.get(n.strip(), n.strip()) for n in only.split(",") if n.strip()]
        unknown = [n for n in names if n not in BY_NAME]
        if unknown:
            raise SystemExit(f"unknown workload(s): {', '.join(unknown)} (known: {', '.join(BY_NAME)}, selftest)")
        chosen = [BY_NAME[n] for n in names]
    else:
        chosen = list(WORKLOADS)
    if include_selftest and SELFTEST not in chosen:
        chosen = [SELFTEST] + chosen
    return chosen


def sources(workload, gpu_dir, targets=None):
    """{target: .cu path} for a workload."""
    from tkc_gpu import find_cu_files
    if workload.source is not None:
        return {"sm_80": workload.source}
    return find_cu_files(gpu_dir, workload.stem, targets)
