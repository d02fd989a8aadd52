"""The residual add and the layer norm after it (GB/s),
examples/residual_layernorm.tk: S = bf16(X + Y), Out = layer_norm(S) * W +
Bias, forward and backward, against PyTorch's unfused `layer_norm(x + y)`,
eager and under torch.compile.

S is rounded to bf16 before its statistics are taken, as PyTorch's bf16
`x + y` rounds it, so the references start from that S and hold the
kernel's S to it exactly; everything after is float64.
"""

from workload_base import Param, Workload

EPS = 1e-5


def _add_norm(d):
    """PyTorch's unfused pair: the new residual stream and its layer norm."""
    import torch.nn.functional as F

    def fn(x, y, w, b):
        s = x + y
        return s, F.layer_norm(s, (d,), w, b, EPS)
    return fn


def _rounded_sum(x, y):
    """S as the kernel and PyTorch's bf16 `x + y` have it, in float64."""
    import torch
    return (x.float() + y.float()).to(torch.bfloat16).double()


class ResidualLayerNorm(Workload):
    """S = bf16(X + Y) written out, Out = (S - mean) * rstd * W + Bias, and
    the rows' Mean and Rstd (f32) for the backward."""
    name = "residual_layernorm"
    stem = "residual_layernorm"
    params = [Param("X", "bf16"), Param("Y", "bf16"), Param("W", "bf16"), Param("Bias", "bf16"),
              Param("S", "bf16", output=True), Param("Out", "bf16", output=True),
              Param("Mean", "f32", output=True), Param("Rstd", "f32", output=True)]
    main_output = "Out"
    peer_names = ["eager", "compiled"]
    unit = "GB/s"
    tolerances = {"S": 0.0, "Out": 1e-2, "Mean": 1e-5, "Rstd": 1e-5}
    # Row counts that leave the last block of 4 rows partly padding.
    check_sizes = [dict(R=r, D=d) for d in (384, 768, 1024, 2048, 4096) for r in (1, 37, 1001, 4099)]
    bench_sizes = [dict(R=65536, D=d) for d in (768, 1024, 2048, 4096)]
    quick_sizes = [dict(R=65536, D=d) for d in (1024, 4096)]
    argcheck_size = dict(R=4, D=1024)
    extra_arg_cases = [("unsupported D=512", dict(R=4, D=512), {}, 5),
                       ("Y with other R", dict(R=4, D=1024), {"Y": (8, 1024)}, 2),
                       ("Bias with other D", dict(R=4, D=1024), {"Bias": (1032,)}, 2)]
    plot_xlabel = "D (R = 65536)"

    def shapes(self, s):
        r, d = s["R"], s["D"]
        return {"X": (r, d), "Y": (r, d), "W": (d,), "Bias": (d,), "S": (r, d), "Out": (r, d), "Mean": (r,),
                "Rstd": (r,)}

    def label(self, s):
        return f"R{s['R']} D{s['D']}"

    def reference(self, inp, s):
        x = _rounded_sum(inp["X"], inp["Y"])
        mean = x.mean(dim=-1, keepdim=True)
        rstd = (((x - mean) ** 2).mean(dim=-1, keepdim=True) + EPS).rsqrt()
        out = (x - mean) * rstd * inp["W"].double() + inp["Bias"].double()
        return {"S": x, "Out": out, "Mean": mean.squeeze(-1), "Rstd": rstd.squeeze(-1)}

    def peers(self, s):
        import torch
        fn = _add_norm(s["D"])
        compiled = torch.compile(fn)
        return {"eager": lambda inp: fn(inp["X"], inp["Y"], inp["W"], inp["Bias"])[1],
                "compiled": lambda inp: compiled(inp["X"], inp["Y"], inp["W"], inp["Bias"])[1]}

    def work(self, s):
        # X, Y read and S, Out written (bf16), W and Bias read, Mean and Rstd written
        return 2.0 * (4 * s["R"] * s["D"] + 2 * s["D"]) + 8.0 * s["R"]

    def plot_x(self, s):
        return s["D"]


class ResidualLayerNormBwd(Workload):
    """Two launchers of residual_layernorm.tk: residual_layernorm_bwd (dS =
    dS_in + the norm's dX, the gradient of both X and Y, and the partial sums
    of dW and dBias over each block's 32 rows into dWp and dBp), then
    residual_layernorm_bwd_dwdb (their column sums). The peers time the
    backward of PyTorch's unfused pair for upstream gradients dOut (of Out)
    and dS_in (of S): dX, dY, dW and dBias."""
    name = "residual_layernorm_bwd"
    stem = "residual_layernorm"
    params = [Param("dOut", "bf16"), Param("dS_in", "bf16"), Param("S", "bf16"), Param("W", "bf16"),
              Param("Mean", "f32"), Param("Rstd", "f32"), Param("dS", "bf16", output=True),
              Param("dW", "f32", output=True), Param("dBias", "f32", output=True),
              Param("dWp", "f32", output=True, scratch=True), Param("dBp", "f32", output=True, scratch=True)]
    main_output = "dS"
    peer_names = ["eager", "compiled"]
    unit = "GB/s"
    # residual_layernorm_bwd's rows a block, one row of dWp and dBp each: the
    # kernel declares them [cdiv(R, 32), D] and the launcher checks it.
    rows_per_block = 32
    tolerances = {"dS": 1e-2, "dW": 1e-4, "dBias": 1e-4}
    # D up to 1024, as layernorm_bwd: a thread holds D / 32 elements of
    # dOut, Shat and both sums.
    check_sizes = ([dict(R=r, D=1024) for r in (1, 37, 1001, 4099, 70000)] +
                   [dict(R=r, D=d) for d in (384, 768) for r in (1, 37, 4099)])
    bench_sizes = [dict(R=65536, D=768)] + [dict(R=r, D=1024) for r in (32768, 65536)]
    quick_sizes = [dict(R=65536, D=1024)]
    argcheck_size = dict(R=4, D=1024)
    extra_arg_cases = [("unsupported D=2048", dict(R=4, D=2048), {}, 5),
                       ("dS_in with other R", dict(R=4, D=1024), {"dS_in": (8, 1024)}, 2),
                       ("dBp one row over", dict(R=4, D=1024), {"dBp": (2, 1024)}, 2),
                       ("partials one row short", dict(R=100, D=1024), {"dWp": (3, 1024), "dBp": (3, 1024)}, 2)]
    plot_xlabel = "R"

    steps = [("residual_layernorm_bwd", ["dOut", "dS_in", "S", "W", "Mean", "Rstd", "dS", "dWp", "dBp"], []),
             ("residual_layernorm_bwd_dwdb", ["dWp", "dBp", "dW", "dBias"], [])]

    def shapes(self, s):
        r, d = s["R"], s["D"]
        p = -(-r // self.rows_per_block)
        return {"dOut": (r, d), "dS_in": (r, d), "S": (r, d), "W": (d,), "Mean": (r,), "Rstd": (r,), "dS": (r, d),
                "dW": (d,), "dBias": (d,), "dWp": (p, d), "dBp": (p, d)}

    def label(self, s):
        return f"R{s['R']} D{s['D']}"

    def make_inputs(self, size, device="cuda"):
        """Fresh X, Y (for the peers), dOut, dS_in, W and Bias; S = X + Y in
        bf16, and Mean and Rstd as the forward computes them (f32, from S)."""
        import torch
        sh = self.shapes(size)
        inp = {n: torch.randn(sh["S"], device=device, dtype=torch.bfloat16) for n in ("X", "Y", "dOut", "dS_in")}
        inp["W"] = torch.randn(sh["W"], device=device, dtype=torch.bfloat16)
        inp["Bias"] = torch.randn(sh["W"], device=device, dtype=torch.bfloat16)
        inp["S"] = inp["X"] + inp["Y"]
        s = inp["S"].float()
        inp["Mean"] = s.mean(-1).contiguous()
        inp["Rstd"] = torch.rsqrt((s - inp["Mean"][:, None]).pow(2).mean(-1) + EPS).contiguous()
        return inp

    def reference(self, inp, s):
        import torch
        import torch.nn.functional as F
        x, w = inp["S"].double().requires_grad_(), inp["W"].double().requires_grad_()
        b = torch.zeros_like(w, requires_grad=True)
        out = F.layer_norm(x, (s["D"],), w, b, EPS)
        dx, dw, db = torch.autograd.grad(out, (x, w, b), inp["dOut"].double())
        return {"dS": dx + inp["dS_in"].double(), "dW": dw, "dBias": db}

    def peers(self, s):
        import torch
        fn = _add_norm(s["D"])
        compiled = torch.compile(fn)

        def peer(forward, tag):
            def run(inp):  # the graph once per input set; each call its backward
                key = "_graph_" + tag
                if key not in inp:
                    leaves = tuple(inp[n].detach().requires_grad_() for n in ("X", "Y", "W", "Bias"))
                    inp[key] = (leaves, forward(*leaves))
                leaves, outs = inp[key]
                return torch.autograd.grad(outs, leaves, (inp["dS_in"], inp["dOut"]), retain_graph=True)[0]
            return run

        return {"eager": peer(fn, "eager"), "compiled": peer(compiled, "compiled")}

    def work(self, s):
        r, d = s["R"], s["D"]
        # dOut, dS_in, S read and dS written (bf16), W, Mean and Rstd read,
        # dW and dBias written; the partials (written and read back) are not
        # counted.
        return 2.0 * 4 * r * d + 2.0 * d + 8.0 * r + 8.0 * d

    def plot_group(self, s):
        return f"{self.name} D{s['D']}"

    def plot_x(self, s):
        return s["R"]
