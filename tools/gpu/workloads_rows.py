"""Memory-bound row workloads (GB/s): layer norm, bias gradient, softmax,
RMS norm and rotary embedding, forward and backward."""

from workload_base import Param, Workload


class Rows(Workload):
    """A kernel over R rows of D elements (GB/s); the forward ones are
    checked at every D they are specialised to and plotted against D."""
    unit = "GB/s"
    # 384 (chunks of 4 a lane) and 768: the widths of small GPT models.
    check_sizes = [dict(R=r, D=d) for d in (384, 768, 1024, 2048, 4096) for r in (1, 37, 1000, 4099)]
    bench_sizes = [dict(R=32768, D=d) for d in (1024, 2048, 4096)]
    quick_sizes = [dict(R=32768, D=4096)]
    argcheck_size = dict(R=4, D=1024)
    plot_xlabel = "D (R = 32768)"

    def label(self, s):
        return f"R{s['R']} D{s['D']}"

    def plot_x(self, s):
        return s["D"]


# --- layernorm --------------------------------------------------------------------------


class LayerNorm(Rows):
    """Y = (X - mean) * rstd * W + Bias with rstd = rsqrt(var + eps) per row;
    the kernel also writes Mean and Rstd (f32) for the backward."""
    name = "layernorm"
    stem = "layernorm"
    params = [Param("X", "bf16"), Param("W", "bf16"), Param("Bias", "bf16"), Param("Y", "bf16", output=True),
              Param("Mean", "f32", output=True), Param("Rstd", "f32", output=True)]
    main_output = "Y"
    peer_names = ["torch"]
    eps = 1e-5
    tolerances = {"Y": 1e-2, "Mean": 1e-5, "Rstd": 1e-5}
    check_sizes = [dict(R=r, D=d) for d in (384, 768, 1024, 2048, 4096) for r in (4, 37, 1000, 4099)]
    bench_sizes = [dict(R=65536, D=d) for d in (1024, 2048, 4096)]
    quick_sizes = [dict(R=65536, D=d) for d in (1024, 4096)]
    extra_arg_cases = [("unsupported D=512", dict(R=4, D=512), {}, 5),
                       ("W with other D", dict(R=4, D=1024), {"W": (1032,)}, 2),
                       ("Rstd with other R", dict(R=4, D=1024), {"Rstd": (8,)}, 2)]
    plot_xlabel = "D (R = 65536)"

    def shapes(self, s):
        r, d = s["R"], s["D"]
        return {"X": (r, d), "W": (d,), "Bias": (d,), "Y": (r, d), "Mean": (r,), "Rstd": (r,)}

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


class NormBwd(Rows):
    """A norm's backward as two launchers: NAME_bwd (dX, and the partial
    column sums of the weight gradients over each block's 32 rows into f32
    buffers, a row a block), then a kernel that sums the partials. The
    norms differ in the f32 statistics per row they read and the f32
    gradients per column they write."""
    row_stats = ()   # f32 [R] inputs from the forward
    col_grads = ()   # f32 [D] outputs
    partials = ()    # f32 scratch [cdiv(R, 32), D], one per gradient
    main_output = "dX"
    # The backward kernel's rows a block, one row of the partials each: the
    # kernels declare the partials [cdiv(R, 32), D] and the launchers check it.
    rows_per_block = 32
    # D up to 1024: at 2048 a thread's share of dY, Xhat and the gradients' sums spills.
    check_sizes = ([dict(R=r, D=1024) for r in (1, 37, 1000, 4099, 70000)] +
                   [dict(R=r, D=d) for d in (384, 768) for r in (1, 37, 4099)])
    bench_sizes = [dict(R=r, D=1024) for r in (32768, 65536)]
    quick_sizes = [dict(R=65536, D=1024)]
    plot_xlabel = "R (D = 1024)"

    def shapes(self, s):
        r, d = s["R"], s["D"]
        p = -(-r // self.rows_per_block)
        return {"dY": (r, d), "X": (r, d), "W": (d,), **{n: (r,) for n in self.row_stats}, "dX": (r, d),
                **{n: (d,) for n in self.col_grads}, **{n: (p, d) for n in self.partials}}

    def make_inputs(self, size, device="cuda"):
        """Fresh dY, X, W; the statistics as the forward computes them (f32, from X)."""
        import torch
        sh = self.shapes(size)
        inp = {x: torch.randn(sh[x], device=device, dtype=torch.bfloat16) for x in ("dY", "X", "W")}
        inp.update(self.stats_of(inp["X"].float()))
        return inp

    def stats_of(self, x):
        """{name: f32 [R] contiguous tensor} of each of row_stats, from f32 X."""
        raise NotImplementedError

    def work(self, s):
        r, d = s["R"], s["D"]
        # dY, X read and dX written (bf16), W and the statistics read, the
        # gradients written; the partials (written and read back) are not counted.
        return 2.0 * 3 * r * d + 2.0 * d + 4.0 * len(self.row_stats) * r + 4.0 * len(self.col_grads) * d

    def plot_x(self, s):
        return s["R"]


class LayerNormBwd(NormBwd):
    """Two launchers of layernorm.tk: layernorm_bwd (dX, and the partial sums
    of dW and dBias into dWp and dBp), then layernorm_bwd_dwdb (dW, dBias =
    the column sums of the partials)."""
    name = "layernorm_bwd"
    stem = "layernorm"
    params = [Param("dY", "bf16"), Param("X", "bf16"), Param("W", "bf16"), Param("Mean", "f32"),
              Param("Rstd", "f32"), Param("dX", "bf16", output=True), Param("dW", "f32", output=True),
              Param("dBias", "f32", output=True), Param("dWp", "f32", output=True, scratch=True),
              Param("dBp", "f32", output=True, scratch=True)]
    row_stats, col_grads, partials = ("Mean", "Rstd"), ("dW", "dBias"), ("dWp", "dBp")
    peer_names = ["torch"]
    eps = 1e-5
    tolerances = {"dX": 1e-2, "dW": 1e-4, "dBias": 1e-4}
    extra_arg_cases = [("unsupported D=2048", dict(R=4, D=2048), {}, 5),
                       ("Mean with other R", dict(R=4, D=1024), {"Mean": (8,)}, 2),
                       ("partials one row short", dict(R=100, D=1024), {"dWp": (3, 1024), "dBp": (3, 1024)}, 2)]

    steps = [("layernorm_bwd", ["dY", "X", "W", "Mean", "Rstd", "dX", "dWp", "dBp"], []),
             ("layernorm_bwd_dwdb", ["dWp", "dBp", "dW", "dBias"], [])]

    def stats_of(self, x):
        import torch
        mean = x.mean(-1)
        return {"Mean": mean.contiguous(),
                "Rstd": torch.rsqrt((x - mean[:, None]).pow(2).mean(-1) + self.eps).contiguous()}

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
        return {"torch": self.backward_peer("torch", lambda inp: (inp["X"], inp["W"], torch.zeros_like(inp["W"])),
                                            lambda x, w, b: F.layer_norm(x, (d,), w, b, eps), "dY")}


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


class Softmax(Rows):
    name = "softmax"
    stem = "softmax"
    params = [Param("X", "bf16"), Param("Y", "bf16", output=True)]
    main_output = "Y"
    peer_names = ["torch"]
    tolerances = {"Y": 1e-2}
    extra_arg_cases = [("unsupported D=512", dict(R=4, D=512), {}, 5),
                       ("Y with other R", dict(R=4, D=1024), {"Y": (8, 1024)}, 2)]

    def shapes(self, s):
        return {"X": (s["R"], s["D"]), "Y": (s["R"], s["D"])}

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


class RmsNorm(Rows):
    """Y = X * rstd * W with rstd = rsqrt(mean(X^2) + eps) per row, which the
    kernel also writes (f32) for the backward."""
    name = "rmsnorm"
    stem = "rmsnorm"
    params = [Param("X", "bf16"), Param("W", "bf16"), Param("Y", "bf16", output=True), Param("Rstd", "f32", output=True)]
    main_output = "Y"
    peer_names = ["rms_norm", "eager"]
    eps = 1e-6
    tolerances = {"Y": 1e-2, "Rstd": 1e-5}
    extra_arg_cases = [("unsupported D=512", dict(R=4, D=512), {}, 5),
                       ("W with other D", dict(R=4, D=1024), {"W": (1032,)}, 2),
                       ("Rstd with other R", dict(R=4, D=1024), {"Rstd": (8,)}, 2)]

    def shapes(self, s):
        r, d = s["R"], s["D"]
        return {"X": (r, d), "W": (d,), "Y": (r, d), "Rstd": (r,)}

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


class RmsNormBwd(NormBwd):
    """Two launchers of rmsnorm.tk: rmsnorm_bwd (dX, and dW's partial sums
    into dWp), then rmsnorm_bwd_dw (dW = the column sums of dWp)."""
    name = "rmsnorm_bwd"
    stem = "rmsnorm"
    params = [Param("dY", "bf16"), Param("X", "bf16"), Param("W", "bf16"), Param("Rstd", "f32"),
              Param("dX", "bf16", output=True), Param("dW", "f32", output=True),
              Param("dWp", "f32", output=True, scratch=True)]
    row_stats, col_grads, partials = ("Rstd",), ("dW",), ("dWp",)
    peer_names = ["rms_norm", "eager"]
    eps = 1e-6
    tolerances = {"dX": 1e-2, "dW": 1e-4}
    extra_arg_cases = [("unsupported D=2048", dict(R=4, D=2048), {}, 5),
                       ("X with other R", dict(R=4, D=1024), {"X": (8, 1024)}, 2),
                       ("dWp one row short", dict(R=100, D=1024), {"dWp": (3, 1024)}, 2),
                       ("dWp one row over", dict(R=4, D=1024), {"dWp": (2, 1024)}, 2)]

    steps = [("rmsnorm_bwd", ["dY", "X", "W", "Rstd", "dX", "dWp"], []), ("rmsnorm_bwd_dw", ["dWp", "dW"], [])]

    def stats_of(self, x):
        import torch
        return {"Rstd": torch.rsqrt(x.pow(2).mean(-1) + self.eps).contiguous()}

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
            return self.backward_peer(tag, lambda inp: (inp["X"], inp["W"]), fwd, "dY")

        return {"rms_norm": peer(lambda x, w: F.rms_norm(x, (d,), w, eps), "rms_norm"), "eager": peer(eager_fwd, "eager")}


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


# --- GELU backward with the bias gradient -------------------------------------------------


class GeluBwd(Workload):
    """Two launchers of gelu_bwd.tk: gelu_bwd (dPre = dY * gelu'(Pre), and
    the column sums of dPre over each block's 64 rows into the f32 partials
    dBp), then gelu_bwd_dbias (dBias = the partials' column sums, bf16)."""
    name = "gelu_bwd"
    stem = "gelu_bwd"
    params = [Param("dY", "bf16"), Param("Pre", "bf16"), Param("dPre", "bf16", output=True),
              Param("dBias", "bf16", output=True), Param("dBp", "f32", output=True, scratch=True)]
    const_names = ["approx"]
    main_output = "dPre"
    peer_names = ["torch"]
    unit = "GB/s"
    rows_per_block = 64  # gelu_bwd's rows a block, one row of dBp each: dBp is [cdiv(M, 64), N]
    tolerances = {"dPre": 1e-2, "dBias": 1e-2}
    check_sizes = [dict(M=m, N=n, approx=a) for a in (1, 0) for m, n in
                   [(1, 8), (1001, 3072), (513, 136), (4099, 1000), (8192, 3072)]]
    bench_sizes = [dict(M=m, N=3072, approx=a) for m in (8192, 32768) for a in (1, 0)]
    quick_sizes = [dict(M=8192, N=3072, approx=1)]
    argcheck_size = dict(M=64, N=128, approx=1)
    extra_arg_cases = [("Pre with other N", dict(M=64, N=128, approx=1), {"Pre": (64, 136)}, 2),
                       ("unsupported approx=2", dict(M=64, N=128, approx=2), {}, 5),
                       ("dBp one row short", dict(M=130, N=128, approx=1), {"dBp": (2, 128)}, 2)]
    plot_xlabel = "M (N = 3072)"

    steps = [("gelu_bwd", ["dY", "Pre", "dPre", "dBp"], [0]), ("gelu_bwd_dbias", ["dBp", "dBias"], [])]

    def shapes(self, s):
        m, n = s["M"], s["N"]
        return {"dY": (m, n), "Pre": (m, n), "dPre": (m, n), "dBias": (n,),
                "dBp": (-(-m // self.rows_per_block), n)}

    def label(self, s):
        return f"M{s['M']} N{s['N']} {'tanh' if s['approx'] else 'erf'}"

    def reference(self, inp, s):
        import torch
        import torch.nn.functional as F
        pre = inp["Pre"].double().requires_grad_()
        y = F.gelu(pre, approximate="tanh" if s["approx"] else "none")
        (dpre,) = torch.autograd.grad(y, (pre,), inp["dY"].double())
        return {"dPre": dpre, "dBias": dpre.sum(dim=0)}

    def peers(self, s):
        import torch
        approximate = "tanh" if s["approx"] else "none"

        def run(inp):
            dpre = torch.ops.aten.gelu_backward(inp["dY"], inp["Pre"], approximate=approximate)
            dpre.sum(dim=0)
            return dpre
        return {"torch": run}

    def work(self, s):
        # dY and Pre read, dPre written (bf16), dBias written; the partials
        # (written and read back) are not counted.
        return 2.0 * 3 * s["M"] * s["N"] + 2.0 * s["N"]

    def plot_group(self, s):
        return f"gelu_bwd {'tanh' if s['approx'] else 'erf'}"

    def plot_x(self, s):
        return s["M"]
