#!/usr/bin/env python3
"""GPU tests of the tkc Python package (python/tkc): loading and calling
kernels, typed errors that leave the CUDA context usable, the torch
operators (opcheck, torch.compile fullgraph), and the gradients of
attention, layer norm, RMS norm, cross-entropy and the linear layer
with GELU against float64 PyTorch. Needs a GPU, torch, nvcc and
build/tools/tkc.

    python3 tools/gpu/test_python_package.py [-v] [-k PATTERN]
"""

import math
import os
import subprocess
import sys
import unittest
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import tkc  # noqa: E402
import tkc.bench  # noqa: E402
import tkc.ops  # noqa: E402
import tkc.torch  # noqa: E402

EXAMPLES = REPO / "examples"


def rel(a, b):
    a, b = a.double(), b.double()
    return ((a - b).norm() / b.norm().clamp_min(1e-30)).item()


def context_usable():
    torch.cuda.synchronize()
    return torch.ones(4, device="cuda").add_(1).sum().item() == 8.0


class LoadAndCall(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.lib = tkc.load(EXAMPLES / "gemm.tk")

    def operands(self, m=257, n=520, k=136, dtype=torch.bfloat16, device="cuda"):
        a = torch.randn(m, k, device=device, dtype=dtype)
        b = torch.randn(k, n, device=device, dtype=dtype)
        c = torch.full((m, n), float("nan"), device=device, dtype=dtype)
        return a, b, c

    def test_gemm_matches_matmul(self):
        a, b, c = self.operands()
        self.lib.gemm(a, b, c)
        self.assertLess(rel(c, a.double() @ b.double()), 1e-2)

    def test_per_target_launchers_on_this_device(self):
        major, minor = torch.cuda.get_device_capability()
        for target in self.lib.gemm.info.targets:
            a, b, c = self.operands()
            launcher = self.lib.launcher("gemm", target)
            if target == "sm_90a" and (major, minor) != (9, 0):
                with self.assertRaises(tkc.NoTargetError):
                    launcher(a, b, c)
                continue
            launcher(a, b, c)
            self.assertLess(rel(c, a.double() @ b.double()), 1e-2, target)

    def test_errors_raise_and_leave_the_context_usable(self):
        a, b, c = self.operands()
        with self.assertRaisesRegex(tkc.DTypeError, "A must be bf16, not f16"):
            self.lib.gemm(a.half(), b, c)
        with self.assertRaisesRegex(tkc.DeviceError, "not device memory"):
            self.lib.gemm(a.cpu(), b, c)
        with self.assertRaisesRegex(tkc.ShapeError, "B.sizes\\[0\\]"):
            self.lib.gemm(a, torch.randn(140, 520, device="cuda", dtype=torch.bfloat16), c)
        with self.assertRaises(tkc.StrideError):
            self.lib.gemm(a.t().contiguous().t(), b, c)
        if torch.cuda.device_count() > 1:
            with self.assertRaisesRegex(tkc.DeviceError, "device"):
                self.lib.gemm(a, b.to("cuda:1"), c)
        self.assertTrue(context_usable())
        self.lib.gemm(a, b, c)
        self.assertLess(rel(c, a.double() @ b.double()), 1e-2)

    def test_user_script(self):
        # As after `pip install python/`: the package on the path, nothing else.
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO / "python"),
                                                                        os.environ.get("PYTHONPATH")])))
        out = subprocess.run([sys.executable, str(REPO / "python" / "examples" / "quickstart.py")],
                             capture_output=True, text=True, env=env)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertIn("under torch.compile", out.stdout)
        self.assertLess(len((REPO / "python" / "examples" / "quickstart.py").read_text().splitlines()), 15)

    def test_register_a_kernel_as_an_operator(self):
        op = tkc.torch.register(self.lib.gemm, name="gemm_test")
        a, b, _ = self.operands()
        self.assertLess(rel(op(a, b), a.double() @ b.double()), 1e-2)
        torch.library.opcheck(op, (a, b))
        compiled = torch.compile(lambda x, y: op(x, y) * 2, fullgraph=True)
        self.assertLess(rel(compiled(a, b), 2 * (a.double() @ b.double())), 1e-2)


class DerivedDims(unittest.TestCase):
    def test_an_operator_allocates_derived_outputs(self):
        """layernorm_bwd's partials are [cdiv(R, 32), D]: register() sizes
        them from the inputs, and the launcher names a wrong size."""
        lib = tkc.load(EXAMPLES / "layernorm.tk")
        op = tkc.torch.register(lib.layernorm_bwd, name="layernorm_bwd_derived_test")
        r, d = 1000, 768
        x = torch.randn(r, d, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(d, device="cuda", dtype=torch.bfloat16)
        dy = torch.randn(r, d, device="cuda", dtype=torch.bfloat16)
        xf = x.double()
        mean, rstd = xf.mean(-1), torch.rsqrt(xf.var(-1, unbiased=False) + 1e-5)
        dx, dwp, dbp = op(dy, x, w, mean.float(), rstd.float())
        self.assertEqual(tuple(dwp.shape), (32, d))
        self.assertEqual(tuple(dbp.shape), (32, d))
        xhat = (xf - mean[:, None]) * rstd[:, None]
        self.assertLess(rel(dwp.sum(0), (dy.double() * xhat).sum(0)), 1e-3)
        self.assertLess(rel(dbp.sum(0), dy.double().sum(0)), 1e-3)
        with self.assertRaises(tkc.ShapeError) as caught:
            lib.layernorm_bwd(dy, x, w, mean.float(), rstd.float(), torch.empty_like(x), dwp[:31], dbp)
        self.assertIn("dWp.sizes[0] is 31 but cdiv(R, 32) is 32", str(caught.exception))
        self.assertTrue(context_usable())

    def check_partials(self, launcher, inputs, constants, sums, expression, per_block):
        """Registers `launcher`, a backward that writes a row of partials per
        `per_block` rows: the operator sizes each partials buffer, whose
        column sums are `sums[name]` (float64), and the launcher refuses the
        buffers a row short, naming `expression`; the context stays usable."""
        op = tkc.torch.register(launcher, name=f"{launcher.info.name}_derived_test")
        outputs = dict(zip((p.name for p in launcher.info.outputs), op(*inputs, *constants)))
        rows = -(-inputs[0].shape[0] // per_block)
        for name, want in sums.items():
            self.assertEqual(tuple(outputs[name].shape), (rows, inputs[0].shape[1]), name)
            self.assertLess(rel(outputs[name].sum(0), want), 1e-3, name)
        short = [outputs[p.name][:rows - 1] if p.name in sums else outputs[p.name] for p in launcher.info.outputs]
        with self.assertRaises(tkc.ShapeError) as caught:
            tkc.torch.call_with_outputs(launcher, inputs, constants, short)
        self.assertIn(f"{next(iter(sums))}.sizes[0] is {rows - 1} but {expression} is {rows}", str(caught.exception))
        self.assertTrue(context_usable())

    def test_the_other_backwards_partials(self):
        """rmsnorm_bwd's and residual_layernorm_bwd's partials are
        [cdiv(R, 32), D], gelu_bwd's [cdiv(M, 64), N]."""
        r, d = 1000, 768
        bf16 = dict(device="cuda", dtype=torch.bfloat16)
        x, dy, ds_in = (torch.randn(r, d, **bf16) for _ in range(3))
        w = torch.randn(d, **bf16)
        xf, dyf = x.double(), dy.double()
        rstd = torch.rsqrt(xf.pow(2).mean(-1) + 1e-6)
        self.check_partials(tkc.load(EXAMPLES / "rmsnorm.tk").rmsnorm_bwd, (dy, x, w, rstd.float()), (),
                            {"dWp": (dyf * xf * rstd[:, None]).sum(0)}, "cdiv(R, 32)", 32)
        mean, rstd = xf.mean(-1), torch.rsqrt(xf.var(-1, unbiased=False) + 1e-5)
        shat = (xf - mean[:, None]) * rstd[:, None]
        self.check_partials(tkc.load(EXAMPLES / "residual_layernorm.tk").residual_layernorm_bwd,
                            (dy, ds_in, x, w, mean.float(), rstd.float()), (),
                            {"dWp": (dyf * shat).sum(0), "dBp": dyf.sum(0)}, "cdiv(R, 32)", 32)
        m, n = 1001, 3072
        pre, dy = torch.randn(m, n, **bf16), torch.randn(m, n, **bf16)
        pref = pre.double().requires_grad_()
        (dpre,) = torch.autograd.grad(F.gelu(pref, approximate="tanh"), (pref,), dy.double())
        self.check_partials(tkc.load(EXAMPLES / "gelu_bwd.tk").gelu_bwd, (dy, pre), (1,), {"dBp": dpre.sum(0)},
                            "cdiv(M, 64)", 64)


class Fp8Gemm(unittest.TestCase):
    """examples/gemm_fp8.tk through the package: torch's float8 tensors go in
    as they are, and the other 8-bit type is refused by name."""

    @classmethod
    def setUpClass(cls):
        cls.lib = tkc.load(EXAMPLES / "gemm_fp8.tk")

    def test_matches_dequantised_float64(self):
        m, n, k = 257, 520, 144
        a = torch.randn(m, k, device="cuda").to(torch.float8_e4m3fn)
        b = torch.randn(n, k, device="cuda").to(torch.float8_e4m3fn)
        sa, sb = torch.rand(m, device="cuda") + 0.5, torch.rand(n, device="cuda") + 0.5
        c = torch.full((m, n), float("nan"), device="cuda", dtype=torch.bfloat16)
        self.lib.gemm_fp8(a, b, sa, sb, c)
        ref = (a.float().double() @ b.float().double().t()) * sa.double()[:, None] * sb.double()[None, :]
        self.assertLess(rel(c, ref), 1e-2)

    def test_the_other_fp8_type_is_refused(self):
        a = torch.randn(128, 128, device="cuda").to(torch.float8_e5m2)
        b = torch.randn(128, 128, device="cuda").to(torch.float8_e4m3fn)
        s = torch.ones(128, device="cuda")
        c = torch.empty(128, 128, device="cuda", dtype=torch.bfloat16)
        with self.assertRaisesRegex(tkc.DTypeError, "A must be f8e4m3, not f8e5m2"):
            self.lib.gemm_fp8(a, b, s, s, c)
        self.assertTrue(context_usable())


def attention_inputs(b=2, h=3, n=150, d=64, requires_grad=False):
    return [torch.randn(b, h, n, d, device="cuda", dtype=torch.bfloat16, requires_grad=requires_grad)
            for _ in range(3)]


class Operators(unittest.TestCase):
    def test_attention_matches_sdpa(self):
        for d in (64, 128):
            for causal in (False, True):
                q, k, v = attention_inputs(d=d)
                ref = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=causal)
                self.assertLess(rel(tkc.ops.attention(q, k, v, causal=causal), ref), 1e-2, (d, causal))

    def test_attention_gradients_match_float64_sdpa(self):
        for d in (64, 128):
            for causal in (False, True):
                q, k, v = attention_inputs(d=d, requires_grad=True)
                do = torch.randn_like(q)
                out = tkc.ops.attention(q, k, v, causal=causal)
                grads = torch.autograd.grad(out, (q, k, v), do)
                q64, k64, v64 = (x.detach().double().requires_grad_() for x in (q, k, v))
                ref = F.scaled_dot_product_attention(q64, k64, v64, is_causal=causal)
                ref_grads = torch.autograd.grad(ref, (q64, k64, v64), do.double())
                for name, g, r in zip("qkv", grads, ref_grads):
                    self.assertLess(rel(g, r), 2e-2, f"d{name} at D={d} causal={causal}")

    def test_opcheck(self):
        q, k, v = attention_inputs(requires_grad=True)
        for causal in (0, 1):
            torch.library.opcheck(torch.ops.tkc.attention_fwd.default, (q, k, v, causal))
        o, lse = torch.ops.tkc.attention_fwd(q.detach(), k.detach(), v.detach(), 0)
        torch.library.opcheck(torch.ops.tkc.attention_bwd.default,
                              (q.detach(), k.detach(), v.detach(), o, torch.randn_like(o), lse, 0))
        x = torch.randn(37, 1024, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        w, bias = (torch.randn(1024, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(2))
        torch.library.opcheck(torch.ops.tkc.layernorm.default, (x, w, bias))
        torch.library.opcheck(torch.ops.tkc.rms_norm.default, (x, w))
        x0, w0, dy = x.detach(), w.detach(), torch.randn_like(x.detach())
        _, mean, rstd = torch.ops.tkc.layernorm(x0, w0, bias.detach())
        torch.library.opcheck(torch.ops.tkc.layernorm_bwd.default, (dy, x0, w0, mean, rstd))
        _, rrstd = torch.ops.tkc.rms_norm(x0, w0)
        torch.library.opcheck(torch.ops.tkc.rms_norm_bwd.default, (dy, x0, w0, rrstd))

    def test_torch_compile_fullgraph(self):
        q, k, v = attention_inputs(n=32, d=64)
        w, bias = (torch.randn(32 * 64, device="cuda", dtype=torch.bfloat16) for _ in range(2))

        def block(q, k, v):
            o = tkc.ops.attention(q, k, v, causal=True)
            return tkc.ops.layernorm(o.reshape(q.shape[0] * q.shape[1], -1) * 2, w, bias)

        torch._dynamo.reset()
        compiled = torch.compile(block, fullgraph=True)
        self.assertLess(rel(compiled(q, k, v), block(q, k, v)), 1e-3)

    def test_norms_under_torch_compile_with_gradients(self):
        x = torch.randn(37, 1024, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        w, bias = (torch.randn(1024, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(2))

        def block(x, w, bias):
            return tkc.ops.rms_norm(tkc.ops.layernorm(x, w, bias) * 2, w).float().square().sum()

        torch._dynamo.reset()
        compiled = torch.compile(block, fullgraph=True)
        got = torch.autograd.grad(compiled(x, w, bias), (x, w, bias))
        want = torch.autograd.grad(block(x, w, bias), (x, w, bias))
        # Inductor fuses the bf16 `* 2` and the loss around the operators in
        # f32, so the gradients reaching them differ from eager's by bf16
        # rounding (2^-8); w sums two such paths.
        for name, g, r in zip(("x", "w", "bias"), got, want):
            self.assertLess(rel(g, r), 1e-2, name)

    def test_norm_gradients_match_float64(self):
        for rows in (1, 37, 1001):
            x = torch.randn(rows, 1024, device="cuda", dtype=torch.bfloat16, requires_grad=True)
            w, bias = (torch.randn(1024, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(2))
            dy = torch.randn(rows, 1024, device="cuda", dtype=torch.bfloat16)
            x64, w64, b64 = (t.detach().double().requires_grad_() for t in (x, w, bias))
            grads = torch.autograd.grad(tkc.ops.layernorm(x, w, bias), (x, w, bias), dy)
            ref = torch.autograd.grad(F.layer_norm(x64, (1024,), w64, b64, eps=1e-5), (x64, w64, b64), dy.double())
            for name, g, r in zip(("dX", "dW", "dBias"), grads, ref):
                self.assertEqual(g.dtype, torch.bfloat16, name)
                self.assertLess(rel(g, r), 1e-2, f"layernorm {name} at R={rows}")
            grads = torch.autograd.grad(tkc.ops.rms_norm(x, w), (x, w), dy)
            ref = torch.autograd.grad(F.rms_norm(x64, (1024,), w64, eps=1e-6), (x64, w64), dy.double())
            for name, g, r in zip(("dX", "dW"), grads, ref):
                self.assertLess(rel(g, r), 1e-2, f"rms_norm {name} at R={rows}")

    def test_rms_norm_matches_torch(self):
        x = torch.randn(3, 37, 4096, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(4096, device="cuda", dtype=torch.bfloat16)
        ref = F.rms_norm(x.double(), (4096,), w.double(), eps=1e-6)
        self.assertLess(rel(tkc.ops.rms_norm(x, w), ref), 1e-2)

    def test_layernorm_matches_torch(self):
        x = torch.randn(3, 37, 2048, device="cuda", dtype=torch.bfloat16)
        w, bias = (torch.randn(2048, device="cuda", dtype=torch.bfloat16) for _ in range(2))
        ref = F.layer_norm(x.double(), (2048,), w.double(), bias.double(), eps=1e-5)
        self.assertLess(rel(tkc.ops.layernorm(x, w, bias), ref), 1e-2)

    def test_operator_errors_leave_the_context_usable(self):
        q, k, v = attention_inputs(d=96)
        with self.assertRaisesRegex(tkc.NoSpecializationError, "D = 96"):
            tkc.ops.attention(q, k, v)
        q, k, v = attention_inputs()
        with self.assertRaises(tkc.DTypeError):
            tkc.ops.attention(q.half(), k.half(), v.half())
        self.assertTrue(context_usable())


class CrossEntropy(unittest.TestCase):
    """tkc.ops.cross_entropy against F.cross_entropy in float64: the mean over
    the targets that are not ignored, and its gradient for an upstream
    gradient other than 1."""

    def problem(self, shape, v, ignore_index=-100, dtype=torch.int64):
        x = (4 * torch.randn(*shape, v, device="cuda")).to(torch.bfloat16).requires_grad_()
        t = torch.randint(0, v, shape, device="cuda", dtype=dtype)
        t.view(-1)[::5] = ignore_index
        return x, t

    def assert_matches_float64(self, x, t, ignore_index=-100, what=""):
        loss = tkc.ops.cross_entropy(x, t, ignore_index=ignore_index)
        self.assertEqual((loss.dtype, loss.shape), (torch.float32, torch.Size([])), what)
        (dx,) = torch.autograd.grad(loss * 0.7, x)
        x64 = x.detach().double().requires_grad_()
        ref = F.cross_entropy(x64.reshape(-1, x.shape[-1]), t.reshape(-1).long(), ignore_index=ignore_index)
        (ref_dx,) = torch.autograd.grad(ref * 0.7, x64)
        self.assertLess(abs(loss.item() - ref.item()) / max(1.0, abs(ref.item())), 1e-5, what)
        self.assertEqual((dx.dtype, dx.shape), (torch.bfloat16, x.shape), what)
        self.assertLess(rel(dx, ref_dx), 1e-2, what)
        ignored = t == ignore_index
        self.assertTrue(ignored.any().item(), what)
        self.assertEqual(dx[ignored].abs().max().item(), 0.0, what)

    def test_matches_float64_at_odd_sizes(self):
        for shape, v in [((1001,), 50257), ((3, 37), 50304), ((1001,), 65), ((2, 37), 1000), ((6,), 2)]:
            x, t = self.problem(shape, v)
            self.assert_matches_float64(x, t, what=f"{shape} V={v}")

    def test_int32_targets_and_another_ignore_index(self):
        x, t = self.problem((37,), 200, ignore_index=0, dtype=torch.int32)
        self.assert_matches_float64(x, t, ignore_index=0, what="ignore_index=0")

    def test_logits_that_are_a_view(self):
        whole = (4 * torch.randn(37, 1003, device="cuda")).to(torch.bfloat16)
        x = whole[:, 2:1002].detach().requires_grad_()  # rows 1003 apart, 2 elements in
        t = torch.randint(0, 1000, (37,), device="cuda")
        t[::5] = -100
        self.assert_matches_float64(x, t, what="view")

    def test_every_target_ignored_gives_nan_as_torch_does(self):
        x, t = self.problem((8,), 65)
        t.fill_(-100)
        self.assertTrue(math.isnan(tkc.ops.cross_entropy(x, t).item()))
        self.assertTrue(math.isnan(F.cross_entropy(x.float(), t).item()))

    def test_opcheck(self):
        x, t = self.problem((37,), 1000)
        t32 = torch.where(t < 0, -1, t).to(torch.int32)
        torch.library.opcheck(torch.ops.tkc.cross_entropy.default, (x, t32))
        loss, lse = torch.ops.tkc.cross_entropy(x.detach(), t32)
        torch.library.opcheck(torch.ops.tkc.cross_entropy_bwd.default,
                              (x.detach(), t32, lse, torch.rand(37, device="cuda")))

    def test_torch_compile_fullgraph_with_gradients(self):
        h = torch.randn(2, 37, 64, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        w = torch.randn(64, 50304, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        t = torch.randint(0, 50304, (2, 37), device="cuda")
        t[:, -3:] = -100

        def step(h, w):
            return tkc.ops.cross_entropy(h @ w, t) / 4

        torch._dynamo.reset()
        compiled = torch.compile(step, fullgraph=True)
        got_loss = compiled(h, w)
        got = torch.autograd.grad(got_loss, (h, w))
        want_loss = step(h, w)
        want = torch.autograd.grad(want_loss, (h, w))
        self.assertLess(abs(got_loss.item() - want_loss.item()) / abs(want_loss.item()), 1e-5)
        for name, g, r in zip(("h", "w"), got, want):
            self.assertLess(rel(g, r), 1e-2, name)


def linear_inputs(rows, n, k, requires_grad=False):
    """x [rows, k], a linear layer's weight [n, k] (scaled by 1 / sqrt(k), so
    that the pre-activations are about N(0, 1)) and bias [n], bf16."""
    x = torch.randn(rows, k, device="cuda", dtype=torch.bfloat16)
    w = (torch.randn(n, k, device="cuda") / math.sqrt(k)).to(torch.bfloat16)
    bias = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    return [t.requires_grad_(requires_grad) for t in (x, w, bias)]


class LinearGelu(unittest.TestCase):
    SHAPES = [(1, 8, 8), (37, 520, 136), (1001, 3072, 768)]  # rows, N, K

    def test_linear_gelu_matches_float64(self):
        for approximate in ("tanh", "none"):
            for rows, n, k in self.SHAPES:
                x, w, bias = linear_inputs(rows, n, k)
                ref = F.gelu(F.linear(x.double(), w.double(), bias.double()), approximate=approximate)
                y = tkc.ops.linear_gelu(x.reshape(1, rows, k), w, bias, approximate=approximate)
                self.assertEqual(y.shape, (1, rows, n))
                self.assertLess(rel(y.reshape(rows, n), ref), 1e-2, (approximate, rows, n, k))
        with self.assertRaisesRegex(ValueError, "approximate"):
            tkc.ops.linear_gelu(x, w, bias, approximate="sigmoid")

    def test_linear_gelu_gradients_match_float64(self):
        for approximate in ("tanh", "none"):
            for rows, n, k in self.SHAPES:
                x, w, bias = linear_inputs(rows, n, k, requires_grad=True)
                dy = torch.randn(rows, n, device="cuda", dtype=torch.bfloat16)
                grads = torch.autograd.grad(tkc.ops.linear_gelu(x, w, bias, approximate), (x, w, bias), dy)
                x64, w64, b64 = (t.detach().double().requires_grad_() for t in (x, w, bias))
                out = F.gelu(F.linear(x64, w64, b64), approximate=approximate)
                ref = torch.autograd.grad(out, (x64, w64, b64), dy.double())
                for name, g, r in zip(("dX", "dW", "dBias"), grads, ref):
                    self.assertEqual(g.dtype, torch.bfloat16, name)
                    self.assertLess(rel(g, r), 1e-2, f"{name} {approximate} at {rows}x{n}x{k}")

    def test_linear_gelu_opcheck(self):
        x, w, bias = linear_inputs(37, 136, 64, requires_grad=True)
        for approx in (1, 0):
            torch.library.opcheck(torch.ops.tkc.linear_gelu.default, (x, w, bias, approx))
            x0, w0 = x.detach(), w.detach()
            _, pre = torch.ops.tkc.linear_gelu(x0, w0, bias.detach(), approx)
            torch.library.opcheck(torch.ops.tkc.linear_gelu_bwd.default,
                                  (torch.randn_like(pre), x0, w0, pre, approx))

    def test_linear_gelu_under_torch_compile_with_gradients(self):
        x, w1, b1 = linear_inputs(75, 512, 128, requires_grad=True)
        w2 = (torch.randn(128, 512, device="cuda") / math.sqrt(512)).to(torch.bfloat16).requires_grad_()

        def mlp(x, w1, b1, w2):
            return F.linear(tkc.ops.linear_gelu(x, w1, b1), w2).float().square().sum()

        torch._dynamo.reset()
        compiled = torch.compile(mlp, fullgraph=True)
        got = torch.autograd.grad(compiled(x, w1, b1, w2), (x, w1, b1, w2))
        want = torch.autograd.grad(mlp(x, w1, b1, w2), (x, w1, b1, w2))
        for name, g, r in zip(("x", "w1", "b1", "w2"), got, want):
            self.assertLess(rel(g, r), 1e-2, name)


class AddLayerNorm(unittest.TestCase):
    def inputs(self, rows, d, requires_grad=True):
        bf16 = dict(device="cuda", dtype=torch.bfloat16, requires_grad=requires_grad)
        return (torch.randn(rows, d, **bf16), torch.randn(rows, d, **bf16), torch.randn(d, **bf16),
                torch.randn(d, **bf16))

    def test_matches_float64_with_gradients(self):
        for rows, d in [(1, 384), (37, 768), (1001, 1024)]:
            x, y, w, b = self.inputs(rows, d)
            s, out = tkc.ops.add_layernorm(x.reshape(1, rows, d), y.reshape(1, rows, d), w, b)
            s64 = (x.double() + y.double()).to(torch.bfloat16).double().detach()  # torch rounds x + y to bf16
            self.assertTrue(torch.equal(s.reshape(rows, d), (x + y).detach()), (rows, d))
            leaves = [t.detach().double().requires_grad_() for t in (x, y, w, b)]
            s_ref = leaves[0] + leaves[1]
            out_ref = F.layer_norm(s64 + (s_ref - s_ref.detach()), (d,), leaves[2], leaves[3], eps=1e-5)
            self.assertLess(rel(out.reshape(rows, d), out_ref), 1e-2, (rows, d))
            ds_in, dout = torch.randn_like(x), torch.randn_like(x)
            grads = torch.autograd.grad((s, out), (x, y, w, b), (ds_in.reshape(s.shape), dout.reshape(s.shape)))
            refs = torch.autograd.grad((s_ref, out_ref), leaves, (ds_in.double(), dout.double()))
            for name, g, r in zip(("dX", "dY", "dW", "dBias"), grads, refs):
                self.assertLess(rel(g, r), 1e-2, f"{name} at R={rows} D={d}")

    def test_only_the_norm_used(self):
        x, y, w, b = self.inputs(37, 768)
        _, out = tkc.ops.add_layernorm(x, y, w, b)
        dout = torch.randn_like(out)
        got = torch.autograd.grad(out, (x, y, w, b), dout)
        want = torch.autograd.grad(tkc.ops.layernorm(x + y, w, b), (x, y, w, b), dout)
        for name, g, r in zip(("dX", "dY", "dW", "dBias"), got, want):
            self.assertLess(rel(g, r), 1e-3, name)

    def test_opcheck_and_compile(self):
        x, y, w, b = self.inputs(37, 768)
        torch.library.opcheck(torch.ops.tkc.add_layernorm.default, (x, y, w, b))
        s, _, mean, rstd = torch.ops.tkc.add_layernorm(x.detach(), y.detach(), w.detach(), b.detach())
        torch.library.opcheck(torch.ops.tkc.add_layernorm_bwd.default,
                              (torch.randn_like(s), torch.randn_like(s), s, w.detach(), mean, rstd))

        def block(x, y):
            s, out = tkc.ops.add_layernorm(x * 2, y, w, b)
            return (s.float() * out.float()).sum()

        torch._dynamo.reset()
        compiled = torch.compile(block, fullgraph=True)
        got = torch.autograd.grad(compiled(x, y), (x, y))
        want = torch.autograd.grad(block(x, y), (x, y))
        for name, g, r in zip("xy", got, want):
            self.assertLess(rel(g, r), 1e-2, name)


class SwiGLU(unittest.TestCase):
    def test_matches_float64(self):
        for rows, n, k in [(1, 8, 8), (129, 264, 200), (3 * 333, 1000, 520)]:
            x, wg, _ = linear_inputs(rows, n, k)
            wu = (torch.randn(n, k, device="cuda") / math.sqrt(k)).to(torch.bfloat16)
            ref = F.silu(x.double() @ wg.double().t()) * (x.double() @ wu.double().t())
            y = tkc.ops.swiglu(x.reshape(1, rows, k), wg, wu)
            self.assertEqual(y.shape, (1, rows, n))
            self.assertLess(rel(y.reshape(rows, n), ref), 1e-2, (rows, n, k))

    def test_opcheck_and_compile(self):
        x, wg, wu = linear_inputs(37, 64, 128)[:2] + [linear_inputs(1, 64, 128)[1]]
        torch.library.opcheck(torch.ops.tkc.swiglu.default, (x, wg, wu))
        torch._dynamo.reset()
        compiled = torch.compile(lambda x: tkc.ops.swiglu(x * 2, wg, wu), fullgraph=True)
        self.assertLess(rel(compiled(x), tkc.ops.swiglu(x * 2, wg, wu)), 1e-3)

    def test_refuses_to_train(self):
        x, wg, wu = linear_inputs(8, 64, 64, requires_grad=True)[:2] + [linear_inputs(1, 64, 64)[1]]
        with self.assertRaisesRegex(RuntimeError, "no backward"):
            tkc.ops.swiglu(x, wg, wu)
        with torch.no_grad():
            self.assertEqual(tkc.ops.swiglu(x, wg, wu).shape, (8, 64))


class EagerAndTracedPaths(unittest.TestCase):
    """Each tkc.ops operator runs eagerly as a direct call (autograd through
    an autograd.Function) and, under torch.compile, as its custom_op: both
    paths give the same values and gradients."""

    @staticmethod
    def graph_nodes(out):
        seen, todo = set(), [out.grad_fn]
        while todo:
            node = todo.pop()
            if node is not None and node not in seen:
                seen.add(node)
                todo.extend(n for n, _ in node.next_functions)
        return {type(n).__name__ for n in seen}

    def both_paths(self, op, public, custom, inputs, extra=()):
        """Gradients of sum(out * g) through the eager path (`public`, whose
        graph must hold op's autograd.Function) and through the custom_op's
        registered autograd (`custom`)."""
        leaves = [t.detach().requires_grad_() for t in inputs]
        out = public(*leaves, *extra)
        self.assertIn(op.function.__name__ + "Backward", self.graph_nodes(out))
        g = torch.randn_like(out)
        eager = (out, *torch.autograd.grad(out, leaves, g))
        leaves = [t.detach().requires_grad_() for t in inputs]
        out = custom(*leaves, *extra)
        traced = (out, *torch.autograd.grad(out, leaves, g))
        return eager, traced

    def assert_same(self, eager, traced, what, tol=0.0):
        for i, (a, b) in enumerate(zip(eager, traced)):
            if tol == 0.0:
                self.assertTrue(torch.equal(a, b), f"{what}: result {i}")
            else:
                self.assertLess(rel(a, b), tol, f"{what}: result {i}")

    def test_norms_and_linear_gelu(self):
        x = torch.randn(37, 768, device="cuda", dtype=torch.bfloat16)
        w, bias = (torch.randn(768, device="cuda", dtype=torch.bfloat16) for _ in range(2))
        self.assert_same(*self.both_paths(tkc.ops.layernorm_fwd, tkc.ops.layernorm,
                                          lambda *a: torch.ops.tkc.layernorm(*a)[0], (x, w, bias)), "layernorm")
        self.assert_same(*self.both_paths(tkc.ops.rms_norm_fwd, tkc.ops.rms_norm,
                                          lambda *a: torch.ops.tkc.rms_norm(*a)[0], (x, w)), "rms_norm")
        ax, ay, aw, ab = AddLayerNorm.inputs(None, 37, 768, requires_grad=False)
        self.assert_same(*self.both_paths(tkc.ops.add_layernorm_fwd, lambda *a: tkc.ops.add_layernorm(*a)[1],
                                          lambda *a: torch.ops.tkc.add_layernorm(*a)[1], (ax, ay, aw, ab)),
                         "add_layernorm", tol=1e-3)  # the custom_op may get zeros for dS, the eager path None
        lx, lw, lb = linear_inputs(37, 256, 768)
        self.assert_same(*self.both_paths(tkc.ops.linear_gelu_fwd, tkc.ops.linear_gelu,
                                          lambda x, w, b: torch.ops.tkc.linear_gelu(x, w, b, 1)[0], (lx, lw, lb)),
                         "linear_gelu")

    def test_attention(self):
        # dQ sums over key blocks in whatever order they finish: not bitwise.
        q, k, v = attention_inputs()
        self.assert_same(*self.both_paths(tkc.ops.attention_fwd, tkc.ops.attention,
                                          lambda *a: torch.ops.tkc.attention_fwd(*a, 0)[0], (q, k, v)),
                         "attention", tol=1e-5)

    def test_cross_entropy(self):
        x = (4 * torch.randn(37, 1000, device="cuda")).to(torch.bfloat16)
        t = torch.randint(0, 1000, (37,), device="cuda", dtype=torch.int32)

        def custom(x):
            loss, _ = torch.ops.tkc.cross_entropy(x, t)
            return loss.sum() / 37

        self.assert_same(*self.both_paths(tkc.ops.cross_entropy_fwd, lambda x: tkc.ops.cross_entropy(x, t), custom,
                                          (x,)), "cross_entropy", tol=1e-6)

    def test_no_grad_calls_build_no_graph(self):
        x = torch.randn(4, 768, device="cuda", dtype=torch.bfloat16, requires_grad=True)
        w, bias = (torch.randn(768, device="cuda", dtype=torch.bfloat16) for _ in range(2))
        with torch.no_grad():
            self.assertIsNone(tkc.ops.layernorm(x, w, bias).grad_fn)


class Bench(unittest.TestCase):
    def test_interleaved_timer(self):
        x = torch.randn(1 << 20, device="cuda")
        times = tkc.bench.median_time_interleaved({"small": lambda _: x[:1024].add_(1), "big": lambda _: x.add_(1)},
                                                  iters=10, warmup=2)
        self.assertEqual(set(times), {"small", "big"})
        self.assertTrue(all(t.n == 10 and math.isfinite(t.median_ms) for t in times.values()))


if __name__ == "__main__":
    unittest.main(verbosity=2)
