"""Workloads of 8-bit float inputs: the fp8 GEMM (examples/gemm_fp8.tk)."""

from workload_base import Param, Workload


def _scaled_mm(a, b_nk, scale_a, scale_b):
    """torch._scaled_mm (cuBLASLt fp8) of a [M, K] by b_nk^T, bf16 out; b is
    passed column-major, as cuBLASLt wants it. Before torch 2.4 the call
    returned (out, amax)."""
    import torch
    out = torch._scaled_mm(a, b_nk.t(), scale_a=scale_a, scale_b=scale_b, out_dtype=torch.bfloat16)
    return out[0] if isinstance(out, tuple) else out


class GemmFp8(Workload):
    """C = (A @ B^T) * sa[:, None] * sb[None, :] with A e4m3 [M, K], B e4m3
    [N, K], f32 row scales, bf16 C. The bulk copies on sm_90a need 16-byte
    rows: K a multiple of 16 and N of 8 (C's rows). The sm_80 code widens
    the tiles to bf16 in registers and reads A and B in 8-byte chunks (K a
    multiple of 8); M is free on both."""
    name = "gemm_fp8"
    stem = "gemm_fp8"
    params = [Param("A", "f8e4m3"), Param("B", "f8e4m3"), Param("SA", "f32"), Param("SB", "f32"),
              Param("C", "bf16", output=True)]
    main_output = "C"
    peer_names = ["cuBLASLt fp8 rowwise", "cuBLASLt fp8 tensorwise", "cuBLAS bf16"]
    # Per-tensor scaling and the bf16 GEMM compute something else on inputs
    # whose rows have scales of their own: timed beside the kernel only.
    timing_only_peers = ["cuBLASLt fp8 tensorwise", "cuBLAS bf16"]
    # bf16 output: the reference is rounded to bf16 once, 2^-9 relative.
    tolerances = {"C": 1e-2}
    check_sizes = [dict(M=m, N=n, K=k) for m, n, k in
                   [(128, 256, 128), (1000, 1000, 1008), (257, 520, 144), (130, 72, 48), (2048, 2048, 2048),
                    (4096, 4096, 4096), (8192, 8192, 1024)]] + [
        # C's rows as views of longer rows: nothing written past a row.
        dict(M=130, N=1000, K=144, pad=dict(C=8)),
        # Rows whose ends are not 16-byte aligned: sm_80 only (bulk copies
        # need 16-byte rows).
        dict(M=70, N=70, K=40, targets=("sm_80",))]
    bench_sizes = [dict(M=s, N=s, K=s) for s in (4096, 8192)]
    quick_sizes = [dict(M=8192, N=8192, K=8192)]
    argcheck_size = dict(M=128, N=128, K=128)
    extra_arg_cases = [("inconsistent K", dict(M=128, N=128, K=128), {"B": (128, 144)}, 2)]
    plot_xlabel = "M = N = K"

    def shapes(self, s):
        return {"A": (s["M"], s["K"]), "B": (s["N"], s["K"]), "SA": (s["M"],), "SB": (s["N"],),
                "C": (s["M"], s["N"])}

    def label(self, s):
        return f"{s['M']}x{s['N']}x{s['K']}"

    def make_inputs(self, size, device="cuda"):
        """Fresh random e4m3 tensors (normal values rounded to e4m3) and
        positive row scales about 1 / 16."""
        import torch
        sh = self.shapes(size)
        f8 = torch.float8_e4m3fn
        return {"A": torch.randn(sh["A"], device=device).to(f8),
                "B": torch.randn(sh["B"], device=device).to(f8),
                "SA": torch.rand(sh["SA"], device=device) * 0.1 + 0.01,
                "SB": torch.rand(sh["SB"], device=device) * 0.1 + 0.01}

    def reference(self, inp, s):
        a, b = inp["A"].float().double(), inp["B"].float().double()
        return {"C": (a @ b.t()) * inp["SA"].double()[:, None] * inp["SB"].double()[None, :]}

    def peers(self, s):
        import torch

        def rowwise(inp):
            return _scaled_mm(inp["A"], inp["B"], inp["SA"][:, None].contiguous(), inp["SB"][None, :].contiguous())

        def tensorwise(inp):
            if "_scale_a" not in inp:
                inp["_scale_a"] = inp["SA"][:1].reshape(()).contiguous()
                inp["_scale_b"] = inp["SB"][:1].reshape(()).contiguous()
            return _scaled_mm(inp["A"], inp["B"], inp["_scale_a"], inp["_scale_b"])

        def bf16(inp):
            if "_bf16_A" not in inp:
                inp["_bf16_A"] = inp["A"].to(torch.bfloat16)
                inp["_bf16_B"] = inp["B"].to(torch.bfloat16)
            return torch.matmul(inp["_bf16_A"], inp["_bf16_B"].t())

        return {"cuBLASLt fp8 rowwise": rowwise, "cuBLASLt fp8 tensorwise": tensorwise, "cuBLAS bf16": bf16}

    def work(self, s):
        return 2.0 * s["M"] * s["N"] * s["K"]

    def plot_x(self, s):
        return s["M"]
