"""Ready-made operators from the example kernels, registered with torch:

    tkc.ops.attention(q, k, v, causal=False)   # [B, H, N, D] bf16, D in {64, 128}; with autograd
    tkc.ops.layernorm(x, weight, bias)         # [..., D] bf16, D in {384, 768, 1024, 2048, 4096}; autograd at D <= 1024
    tkc.ops.rms_norm(x, weight)                # [..., D] bf16, D in {384, 768, 1024, 2048, 4096}; autograd at D <= 1024
    tkc.ops.add_layernorm(x, y, weight, bias)  # (x + y, layernorm(x + y)), bf16, D as layernorm's; autograd at D <= 1024
    tkc.ops.cross_entropy(logits, targets)     # [..., V] bf16, any V; mean over targets != ignore_index; autograd
    tkc.ops.linear_gelu(x, weight, bias)       # gelu(x @ weight^T + bias), [..., K] bf16, K and N % 8 == 0; with autograd
    tkc.ops.swiglu(x, w_gate, w_up)            # silu(x @ w_gate^T) * (x @ w_up^T), bf16, K and N % 8 == 0; forward only

The kernels are built on first use (tkc.load). Their sources are found in
$TKC_KERNEL_DIR or the checkout's examples/.
"""

import os
from pathlib import Path

import torch

from . import load
from ._build import SOURCE_ROOT
from .errors import TkcError
from .torch import _compiling, operator

_libraries = {}


def kernel_source(stem):
    for folder in (os.environ.get("TKC_KERNEL_DIR"), SOURCE_ROOT / "examples"):
        if folder and (Path(folder) / f"{stem}.tk").exists():
            return Path(folder) / f"{stem}.tk"
    raise TkcError(f"cannot find {stem}.tk (set TKC_KERNEL_DIR to the folder of the example kernels)")


def library(stem):
    if stem not in _libraries:
        _libraries[stem] = load(kernel_source(stem))
    return _libraries[stem]


# --- attention -------------------------------------------------------------------


def _vector_rows(x):
    """x, or a contiguous copy of it where the kernels' 16-byte vector loads
    could not read it in place (their launchers take any strides that keep
    the rows 16-byte aligned)."""
    if x.stride(-1) != 1:
        return x.contiguous()
    if _compiling():  # the compiled graph picks its own layouts
        return x
    aligned = x.storage_offset() % 8 == 0 and all(s % 8 == 0 for s in x.stride()[:-1])
    return x if aligned else x.contiguous()


def _heads_interleaved(q):
    """An output like q [B, H, N, D] laid out as [B, N, H, D], so that
    o.transpose(1, 2).reshape(B, N, H * D), the heads side by side as the
    next projection reads them, is a view rather than a copy."""
    b, h, n, d = q.shape
    return q.new_empty((b, n, h, d)).transpose(1, 2)


@operator("tkc::attention_fwd")
def attention_fwd(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: int) -> tuple[torch.Tensor, torch.Tensor]:
    """O = softmax(Q K^T / sqrt(D)) V (heads interleaved in memory, see
    _heads_interleaved) and the rows' log-sum-exp L (f32)."""
    o = _heads_interleaved(q)
    lse = torch.empty(q.shape[:-1], dtype=torch.float32, device=q.device)
    library("attention_fwd").attn_fwd(q, k, v, o, lse, causal)
    return o, lse


@attention_fwd.register_fake
def _(q, k, v, causal):
    return _heads_interleaved(q), q.new_empty(q.shape[:-1], dtype=torch.float32)


@operator("tkc::attention_bwd")
def attention_bwd(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, o: torch.Tensor, do: torch.Tensor,
                  lse: torch.Tensor, causal: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """dQ, dK, dV from the forward's inputs, output, log-sum-exp and dO:
    three kernels (Delta = rowsum(dO * O), dK and dV, dQ)."""
    lib = library("attention_bwd")
    delta = torch.empty(q.shape[:-1], dtype=torch.float32, device=q.device)
    dq_acc = torch.empty(q.shape, dtype=torch.float32, device=q.device)
    dq, dk, dv = (torch.empty_like(x, memory_format=torch.contiguous_format) for x in (q, k, v))
    lib.attn_bwd_delta(o, do, delta, dq_acc)
    lib.attn_bwd_dkdv(q, k, v, do, lse, delta, dk, dv, dq_acc, causal)
    lib.attn_bwd_dq(q, k, v, do, lse, delta, dq_acc, dq, causal)
    return dq, dk, dv


@attention_bwd.register_fake
def _(q, k, v, o, do, lse, causal):
    return tuple(torch.empty_like(x, memory_format=torch.contiguous_format) for x in (q, k, v))


def _attention_setup(ctx, inputs, output):
    q, k, v, causal = inputs
    o, lse = output
    ctx.save_for_backward(q, k, v, o, lse)
    ctx.causal = causal


def _attention_backward(bwd):
    def backward(ctx, do, dlse):
        q, k, v, o, lse = ctx.saved_tensors
        dq, dk, dv = bwd(q, k, v, o, _vector_rows(do), lse, ctx.causal)
        return dq, dk, dv, None
    return backward


attention_fwd.differentiable(_attention_setup, _attention_backward, attention_bwd)


def attention(q, k, v, causal=False):
    """softmax(q k^T / sqrt(D)) v over [B, H, N, D] bf16 tensors (D = 64 or
    128), optionally causal; differentiable in q, k and v. The inputs may
    be strided views (heads split from one projection's output); the
    output's memory holds the heads side by side ([B, N, H, D])."""
    q, k, v = (_vector_rows(x) for x in (q, k, v))
    return attention_fwd(q, k, v, int(bool(causal)))[0]


# --- layer norm and RMS norm ------------------------------------------------------
#
# Both backwards sum dW (and dBias) over the rows in two kernels: per-block
# partials over 32 rows each, then their column sums, so that the result is
# the same on every run. The kernels declare the partials [cdiv(R, 32), D]
# and their launchers refuse any other row count, so a change of the rows a
# block there cannot go unnoticed here; sizing them without output_shapes
# keeps the derived dim's parsing off each eager call.

_NORM_ROWS_PER_BLOCK = 32


def _partials(x):
    return torch.empty((-(-x.shape[0] // _NORM_ROWS_PER_BLOCK), x.shape[1]), dtype=torch.float32, device=x.device)


def _rows_2d(x):
    return x.reshape(-1, x.shape[-1]).contiguous()


@operator("tkc::layernorm")
def layernorm_fwd(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor,
                                                                                        torch.Tensor]:
    """Y = (X - mean) * rstd * W + Bias over the last dim of a 2-d X, with
    rstd = 1 / sqrt(var + 1e-5); also the rows' mean and rstd (f32)."""
    y = torch.empty_like(x, memory_format=torch.contiguous_format)
    mean = torch.empty(x.shape[0], dtype=torch.float32, device=x.device)
    rstd = torch.empty_like(mean)
    library("layernorm").layernorm(x, weight, bias, y, mean, rstd)
    return y, mean, rstd


@layernorm_fwd.register_fake
def _(x, weight, bias):
    stats = x.new_empty(x.shape[:1], dtype=torch.float32)
    return torch.empty_like(x, memory_format=torch.contiguous_format), stats, torch.empty_like(stats)


@operator("tkc::layernorm_bwd")
def layernorm_bwd(dy: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, mean: torch.Tensor,
                  rstd: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """dX, dW, dBias (dW and dBias f32) from dY, X, W and the forward's mean
    and rstd: two kernels (dX with per-block partials, their column sums)."""
    lib = library("layernorm")
    dx = torch.empty_like(x, memory_format=torch.contiguous_format)
    dwp, dbp = _partials(x), _partials(x)
    dw = torch.empty(x.shape[1], dtype=torch.float32, device=x.device)
    db = torch.empty_like(dw)
    lib.layernorm_bwd(dy, x, weight, mean, rstd, dx, dwp, dbp)
    lib.layernorm_bwd_dwdb(dwp, dbp, dw, db)
    return dx, dw, db


@layernorm_bwd.register_fake
def _(dy, x, weight, mean, rstd):
    dw = x.new_empty(x.shape[1:], dtype=torch.float32)
    return torch.empty_like(x, memory_format=torch.contiguous_format), dw, torch.empty_like(dw)


def _layernorm_setup(ctx, inputs, output):
    x, weight, bias = inputs
    _, mean, rstd = output
    ctx.save_for_backward(x, weight, mean, rstd)
    ctx.dtypes = (weight.dtype, bias.dtype)


def _layernorm_backward(bwd):
    def backward(ctx, dy, dmean, drstd):
        x, weight, mean, rstd = ctx.saved_tensors
        dx, dw, db = bwd(dy.contiguous(), x, weight, mean, rstd)
        return dx, dw.to(ctx.dtypes[0]), db.to(ctx.dtypes[1])
    return backward


layernorm_fwd.differentiable(_layernorm_setup, _layernorm_backward, layernorm_bwd)


def layernorm(x, weight, bias, eps=1e-5):
    """Layer normalisation over the last dim (bf16, D in {384, 768, 1024,
    2048, 4096}); the kernel's eps is 1e-5. Differentiable in x, weight and
    bias where the backward kernel is built (D in {384, 768, 1024})."""
    if eps != 1e-5:
        raise ValueError("the layernorm kernel is compiled with eps = 1e-5")
    return layernorm_fwd(_rows_2d(x), weight, bias)[0].reshape(x.shape)


@operator("tkc::add_layernorm")
def add_layernorm_fwd(x: torch.Tensor, y: torch.Tensor, weight: torch.Tensor,
                      bias: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """S = X + Y (bf16) and Out = layernorm(S) * W + Bias over the last dim
    of 2-d X and Y, with S's mean and rstd (f32): one pass
    (residual_layernorm.tk)."""
    s, out = torch.empty_like(x, memory_format=torch.contiguous_format), torch.empty_like(x)
    mean = torch.empty(x.shape[0], dtype=torch.float32, device=x.device)
    rstd = torch.empty_like(mean)
    library("residual_layernorm").residual_layernorm(x, y, weight, bias, s, out, mean, rstd)
    return s, out, mean, rstd


@add_layernorm_fwd.register_fake
def _(x, y, weight, bias):
    stats = x.new_empty(x.shape[:1], dtype=torch.float32)
    return (torch.empty_like(x, memory_format=torch.contiguous_format),
            torch.empty_like(x, memory_format=torch.contiguous_format), stats, torch.empty_like(stats))


@operator("tkc::add_layernorm_bwd")
def add_layernorm_bwd(dout: torch.Tensor, ds_in: torch.Tensor, s: torch.Tensor, weight: torch.Tensor,
                      mean: torch.Tensor, rstd: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """dS (= dX = dY: the gradient reaching S from later layers plus the
    norm's), dW and dBias (f32): two kernels."""
    lib = library("residual_layernorm")
    ds = torch.empty_like(s, memory_format=torch.contiguous_format)
    dwp, dbp = _partials(s), _partials(s)
    dw = torch.empty(s.shape[1], dtype=torch.float32, device=s.device)
    db = torch.empty_like(dw)
    lib.residual_layernorm_bwd(dout, ds_in, s, weight, mean, rstd, ds, dwp, dbp)
    lib.residual_layernorm_bwd_dwdb(dwp, dbp, dw, db)
    return ds, dw, db


@add_layernorm_bwd.register_fake
def _(dout, ds_in, s, weight, mean, rstd):
    dw = s.new_empty(s.shape[1:], dtype=torch.float32)
    return torch.empty_like(s, memory_format=torch.contiguous_format), dw, torch.empty_like(dw)


def _add_layernorm_setup(ctx, inputs, output):
    _, _, weight, bias = inputs
    s, _, mean, rstd = output
    ctx.save_for_backward(s, weight, mean, rstd)
    ctx.dtypes = (weight.dtype, bias.dtype)


def _add_layernorm_backward(bwd, norm_bwd):
    def backward(ctx, ds_in, dout, dmean, drstd):
        s, weight, mean, rstd = ctx.saved_tensors
        if dout is None:  # only S is used further
            return ds_in, ds_in, None, None
        if ds_in is None:  # S is used by the norm alone
            ds, dw, db = norm_bwd(dout.contiguous(), s, weight, mean, rstd)
        else:
            ds, dw, db = bwd(dout.contiguous(), ds_in.contiguous(), s, weight, mean, rstd)
        return ds, ds, dw.to(ctx.dtypes[0]), db.to(ctx.dtypes[1])
    return backward


add_layernorm_fwd.differentiable(_add_layernorm_setup, _add_layernorm_backward, add_layernorm_bwd, layernorm_bwd)


def add_layernorm(x, y, weight, bias, eps=1e-5):
    """(s, layernorm(s)) with s = x + y, a pre-LN transformer's residual add
    and the norm after it in one pass: x and y [..., D] bf16 (D as
    layernorm's), s rounded to bf16 before its statistics, as torch's
    `layer_norm(x + y)` on bf16 tensors rounds it. Differentiable in x, y,
    weight and bias where the backward kernels are built (D in {384, 768,
    1024})."""
    if eps != 1e-5:
        raise ValueError("the residual_layernorm kernel is compiled with eps = 1e-5")
    if x.shape != y.shape:
        raise ValueError(f"x {tuple(x.shape)} and y {tuple(y.shape)} differ in shape")
    s, out, _, _ = add_layernorm_fwd(_rows_2d(x), _rows_2d(y), weight, bias)
    return s.reshape(x.shape), out.reshape(x.shape)


@operator("tkc::rms_norm")
def rms_norm_fwd(x: torch.Tensor, weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Y = X * rstd * W over the last dim of a 2-d X, rstd = 1 / sqrt(mean(X^2)
    + 1e-6); also the rows' rstd (f32)."""
    y = torch.empty_like(x, memory_format=torch.contiguous_format)
    rstd = torch.empty(x.shape[0], dtype=torch.float32, device=x.device)
    library("rmsnorm").rmsnorm(x, weight, y, rstd)
    return y, rstd


@rms_norm_fwd.register_fake
def _(x, weight):
    return torch.empty_like(x, memory_format=torch.contiguous_format), x.new_empty(x.shape[:1], dtype=torch.float32)


@operator("tkc::rms_norm_bwd")
def rms_norm_bwd(dy: torch.Tensor, x: torch.Tensor, weight: torch.Tensor,
                 rstd: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """dX and dW (f32) from dY, X, W and the forward's rstd: two kernels."""
    lib = library("rmsnorm")
    dx = torch.empty_like(x, memory_format=torch.contiguous_format)
    dwp = _partials(x)
    dw = torch.empty(x.shape[1], dtype=torch.float32, device=x.device)
    lib.rmsnorm_bwd(dy, x, weight, rstd, dx, dwp)
    lib.rmsnorm_bwd_dw(dwp, dw)
    return dx, dw


@rms_norm_bwd.register_fake
def _(dy, x, weight, rstd):
    return torch.empty_like(x, memory_format=torch.contiguous_format), x.new_empty(x.shape[1:], dtype=torch.float32)


def _rms_norm_setup(ctx, inputs, output):
    x, weight = inputs
    ctx.save_for_backward(x, weight, output[1])
    ctx.dtype = weight.dtype


def _rms_norm_backward(bwd):
    def backward(ctx, dy, drstd):
        x, weight, rstd = ctx.saved_tensors
        dx, dw = bwd(dy.contiguous(), x, weight, rstd)
        return dx, dw.to(ctx.dtype)
    return backward


rms_norm_fwd.differentiable(_rms_norm_setup, _rms_norm_backward, rms_norm_bwd)


def rms_norm(x, weight, eps=1e-6):
    """RMS normalisation over the last dim (bf16, D in {384, 768, 1024, 2048,
    4096}); the kernel's eps is 1e-6. Differentiable in x and weight where
    the backward kernel is built (D in {384, 768, 1024})."""
    if eps != 1e-6:
        raise ValueError("the rmsnorm kernel is compiled with eps = 1e-6")
    return rms_norm_fwd(_rows_2d(x), weight)[0].reshape(x.shape)


# --- cross-entropy -----------------------------------------------------------------
#
# The forward writes each row's loss and log-sum-exp; the mean over the rows
# whose target is not ignored is taken here, in torch, so that autograd
# hands the backward its per-row dLoss (upstream gradient / count, zero on
# ignored rows). The backward reads the logits once more and writes dX from
# the saved log-sum-exp.


def _xent_chunk(vocab):
    """The kernel's columns a step: 128 (two rows a warp) for small
    vocabularies, 1024 otherwise."""
    return 128 if vocab <= 512 else 1024


def _xent_aligned(x):
    """x, or a copy in rows padded to 16 bytes where its rows do not start on
    16 bytes (V = 50257), as the kernels' vector loads need; the copy costs
    a pass over the logits."""
    if x.stride(1) == 1 and x.stride(0) % 8 == 0 and x.data_ptr() % 16 == 0:
        return x
    padded = torch.empty((x.shape[0], -(-x.shape[1] // 8) * 8), dtype=x.dtype, device=x.device)[:, :x.shape[1]]
    return padded.copy_(x)


@operator("tkc::cross_entropy")
def cross_entropy_fwd(x: torch.Tensor, t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-row loss and log-sum-exp (f32) of logits x [R, V] bf16 for targets
    t [R] i32, negative = ignored (loss 0)."""
    loss = torch.empty(x.shape[0], dtype=torch.float32, device=x.device)
    lse = torch.empty_like(loss)
    if x.shape[0] > 0:
        library("cross_entropy").xent_fwd(_xent_aligned(x), t, loss, lse, _xent_chunk(x.shape[1]))
    return loss, lse


@cross_entropy_fwd.register_fake
def _(x, t):
    loss = x.new_empty(x.shape[:1], dtype=torch.float32)
    return loss, torch.empty_like(loss)


@operator("tkc::cross_entropy_bwd")
def cross_entropy_bwd(x: torch.Tensor, t: torch.Tensor, lse: torch.Tensor, dloss: torch.Tensor) -> torch.Tensor:
    """dX = (softmax(x) - onehot(t)) * dloss per row (zero where t < 0),
    contiguous."""
    dx = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    if x.shape[0] > 0:
        x = _xent_aligned(x)
        out = dx if x.shape[1] % 8 == 0 else _xent_aligned(dx)  # padded rows where V is not a multiple of 8
        library("cross_entropy").xent_bwd(x, t, lse, dloss, out, _xent_chunk(x.shape[1]))
        if out is not dx:
            dx.copy_(out)
    return dx


@cross_entropy_bwd.register_fake
def _(x, t, lse, dloss):
    return x.new_empty(x.shape)


def _cross_entropy_setup(ctx, inputs, output):
    x, t = inputs
    ctx.save_for_backward(x, t, output[1])


def _cross_entropy_backward(bwd):
    def backward(ctx, dloss, dlse):
        # Lse is the backward's input, not differentiated through.
        x, t, lse = ctx.saved_tensors
        dloss = torch.zeros_like(lse) if dloss is None else dloss.float().contiguous()
        return bwd(x, t, lse, dloss), None
    return backward


cross_entropy_fwd.differentiable(_cross_entropy_setup, _cross_entropy_backward, cross_entropy_bwd)


def cross_entropy(logits, targets, ignore_index=-100):
    """Mean cross-entropy of logits [..., V] (bf16, any V) against integer
    targets (< V) of shape logits.shape[:-1], over the targets that are not
    ignore_index (any other negative target is ignored too); an f32 scalar,
    differentiable in the logits. As torch's, it is NaN when every target is
    ignored. Rows of a V that is not a multiple of 8 (GPT-2's 50257) are
    copied into 16-byte-aligned rows each way; 50304 needs no copy."""
    if targets.shape != logits.shape[:-1]:
        raise ValueError(f"targets of shape {tuple(targets.shape)} do not match logits {tuple(logits.shape)}")
    t = targets.reshape(-1)
    t = torch.where(t == ignore_index, -1, t).to(torch.int32)
    loss, _ = cross_entropy_fwd(logits.reshape(-1, logits.shape[-1]), t)
    return loss.sum() / (t >= 0).sum()


# --- linear layer with GELU -------------------------------------------------------
#
# The forward is one kernel (linear_gelu.tk) that also keeps the
# pre-activation. The backward is gelu_bwd.tk's two kernels (dPre with
# per-block bias-gradient partials over 64 rows, [cdiv(M, 64), N] as the
# kernel declares and its launcher checks, then their column sums) and
# dX = dPre W, dW = dPre^T X through torch.matmul: at a transformer MLP's
# shapes (dW is [N, K] = [3072, 768] from 8192 rows) a 128 x 256 output tile
# per multiprocessor leaves most of an H100 idle, where cuBLAS splits K.

_GELU_APPROXIMATIONS = {"tanh": 1, "none": 0}
_GELU_ROWS_PER_BLOCK = 64


@operator("tkc::linear_gelu")
def linear_gelu_fwd(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor,
                    approx: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Y = gelu(X W^T + Bias) for a 2-d X and the pre-activation X W^T + Bias,
    both bf16; approx = 1 is GELU's tanh form, 0 the exact (erf) one."""
    y = x.new_empty((x.shape[0], weight.shape[0]))
    pre = torch.empty_like(y)
    library("linear_gelu").linear_gelu(x, weight, bias, y, pre, approx)
    return y, pre


@linear_gelu_fwd.register_fake
def _(x, weight, bias, approx):
    return x.new_empty((x.shape[0], weight.shape[0])), x.new_empty((x.shape[0], weight.shape[0]))


@operator("tkc::linear_gelu_bwd")
def linear_gelu_bwd(dy: torch.Tensor, x: torch.Tensor, weight: torch.Tensor, pre: torch.Tensor,
                    approx: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """dX, dW and dBias (all bf16) from dY, the forward's X, W and
    pre-activation."""
    lib = library("gelu_bwd")
    dpre = torch.empty_like(pre)
    partials = torch.empty((-(-pre.shape[0] // _GELU_ROWS_PER_BLOCK), pre.shape[1]), dtype=torch.float32,
                           device=pre.device)
    dbias = pre.new_empty(pre.shape[1:])
    lib.gelu_bwd(dy, pre, dpre, partials, approx)
    lib.gelu_bwd_dbias(partials, dbias)
    return torch.matmul(dpre, weight), torch.matmul(dpre.t(), x), dbias


@linear_gelu_bwd.register_fake
def _(dy, x, weight, pre, approx):
    return torch.empty_like(x), torch.empty_like(weight), pre.new_empty(pre.shape[1:])


def _linear_gelu_setup(ctx, inputs, output):
    x, weight, _, approx = inputs
    ctx.save_for_backward(x, weight, output[1])
    # The pre-activation is the backward's input, not a result to train.
    ctx.mark_non_differentiable(output[1])
    ctx.approx = approx


def _linear_gelu_backward(bwd):
    def backward(ctx, dy, dpre):
        x, weight, pre = ctx.saved_tensors
        dx, dw, dbias = bwd(dy.contiguous(), x, weight, pre, ctx.approx)
        return dx, dw, dbias, None
    return backward


linear_gelu_fwd.differentiable(_linear_gelu_setup, _linear_gelu_backward, linear_gelu_bwd)


def linear_gelu(x, weight, bias, approximate="tanh"):
    """gelu(x @ weight^T + bias), as F.gelu(F.linear(x, weight, bias),
    approximate=approximate): x [..., K], weight [N, K] (a linear layer's
    [out, in]), bias [N], all bf16, with K and N multiples of 8 (the bulk
    tensor copies' 16-byte rows); differentiable in x, weight and bias."""
    if approximate not in _GELU_APPROXIMATIONS:
        raise ValueError(f"approximate must be 'tanh' or 'none', not {approximate!r}")
    y, _ = linear_gelu_fwd(_rows_2d(x), weight.contiguous(), bias.contiguous(), _GELU_APPROXIMATIONS[approximate])
    return y.reshape(*x.shape[:-1], weight.shape[0])


# --- SwiGLU ------------------------------------------------------------------------
#
# Forward only (inference): one kernel runs both products and applies the
# gate where the accumulators lie; training would also need the two
# pre-activations, which this kernel does not write.


@operator("tkc::swiglu")
def swiglu_fwd(x: torch.Tensor, w_gate: torch.Tensor, w_up: torch.Tensor) -> torch.Tensor:
    """Y = silu(X Wg^T) * (X Wu^T) for a 2-d X, bf16."""
    y = x.new_empty((x.shape[0], w_gate.shape[0]))
    library("swiglu").swiglu(x, w_gate, w_up, y)
    return y


@swiglu_fwd.register_fake
def _(x, w_gate, w_up):
    return x.new_empty((x.shape[0], w_gate.shape[0]))


def swiglu(x, w_gate, w_up):
    """silu(x @ w_gate^T) * (x @ w_up^T), a gated MLP's first layer: x [..., K],
    w_gate and w_up [N, K] (linear layers' [out, in] weights), all bf16, K
    and N multiples of 8. Forward only: it raises on inputs that require
    gradients."""
    if w_gate.shape != w_up.shape:
        raise ValueError(f"w_gate {tuple(w_gate.shape)} and w_up {tuple(w_up.shape)} differ in shape")
    y = swiglu_fwd(_rows_2d(x), w_gate.contiguous(), w_up.contiguous())
    return y.reshape(*x.shape[:-1], w_gate.shape[0])
