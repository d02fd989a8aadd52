"""Ready-made operators from the example kernels, registered with torch:

    tkc.ops.attention(q, k, v, causal=False)   # [B, H, N, D] bf16, D in {64, 128}; with autograd
    tkc.ops.layernorm(x, weight, bias)         # [..., D] bf16, D in {384, 768, 1024, 2048, 4096}; autograd at D <= 1024
    tkc.ops.rms_norm(x, weight)                # [..., D] bf16, D in {384, 768, 1024, 2048, 4096}; autograd at D <= 1024

The kernels are built on first use (tkc.load). Their sources are found in
$TKC_KERNEL_DIR or the checkout's examples/.
"""

import os
from pathlib import Path

import torch

from . import load
from ._build import SOURCE_ROOT
from .errors import TkcError
from .torch import call_with_outputs

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


@torch.library.custom_op("tkc::attention_fwd", mutates_args=(), device_types="cuda")
def attention_fwd(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: int) -> tuple[torch.Tensor, torch.Tensor]:
    """O = softmax(Q K^T / sqrt(D)) V and the rows' log-sum-exp L (f32)."""
    o = torch.empty_like(q, memory_format=torch.contiguous_format)
    lse = torch.empty(q.shape[:-1], dtype=torch.float32, device=q.device)
    library("attention_fwd").attn_fwd(q, k, v, o, lse, causal)
    return o, lse


@attention_fwd.register_fake
def _(q, k, v, causal):
    return torch.empty_like(q, memory_format=torch.contiguous_format), q.new_empty(q.shape[:-1], dtype=torch.float32)


@torch.library.custom_op("tkc::attention_bwd", mutates_args=(), device_types="cuda")
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


def _attention_backward(ctx, do, dlse):
    q, k, v, o, lse = ctx.saved_tensors
    dq, dk, dv = attention_bwd(q, k, v, o, do.contiguous(), lse, ctx.causal)
    return dq, dk, dv, None


attention_fwd.register_autograd(_attention_backward, setup_context=_attention_setup)


def attention(q, k, v, causal=False):
    """softmax(q k^T / sqrt(D)) v over [B, H, N, D] bf16 tensors (D = 64 or
    128), optionally causal; differentiable in q, k and v."""
    q, k, v = (x if x.stride(-1) == 1 else x.contiguous() for x in (q, k, v))
    return attention_fwd(q, k, v, int(bool(causal)))[0]


# --- layer norm and RMS norm ------------------------------------------------------
#
# Both backwards sum dW (and dBias) over the rows in two kernels: per-block
# partials over 32 rows each, then their column sums, so that the result is
# the same on every run.

_NORM_ROWS_PER_BLOCK = 32


def _partials(x):
    return torch.empty((-(-x.shape[0] // _NORM_ROWS_PER_BLOCK), x.shape[1]), dtype=torch.float32, device=x.device)


def _rows_2d(x):
    return x.reshape(-1, x.shape[-1]).contiguous()


@torch.library.custom_op("tkc::layernorm", mutates_args=(), device_types="cuda")
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


@torch.library.custom_op("tkc::layernorm_bwd", mutates_args=(), device_types="cuda")
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


def _layernorm_backward(ctx, dy, dmean, drstd):
    x, weight, mean, rstd = ctx.saved_tensors
    dx, dw, db = layernorm_bwd(dy.contiguous(), x, weight, mean, rstd)
    return dx, dw.to(ctx.dtypes[0]), db.to(ctx.dtypes[1])


layernorm_fwd.register_autograd(_layernorm_backward, setup_context=_layernorm_setup)


def layernorm(x, weight, bias, eps=1e-5):
    """Layer normalisation over the last dim (bf16, D in {384, 768, 1024,
    2048, 4096}); the kernel's eps is 1e-5. Differentiable in x, weight and
    bias where the backward kernel is built (D in {384, 768, 1024})."""
    if eps != 1e-5:
        raise ValueError("the layernorm kernel is compiled with eps = 1e-5")
    return layernorm_fwd(_rows_2d(x), weight, bias)[0].reshape(x.shape)


@torch.library.custom_op("tkc::rms_norm", mutates_args=(), device_types="cuda")
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


@torch.library.custom_op("tkc::rms_norm_bwd", mutates_args=(), device_types="cuda")
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


def _rms_norm_backward(ctx, dy, drstd):
    x, weight, rstd = ctx.saved_tensors
    dx, dw = rms_norm_bwd(dy.contiguous(), x, weight, rstd)
    return dx, dw.to(ctx.dtype)


rms_norm_fwd.register_autograd(_rms_norm_backward, setup_context=_rms_norm_setup)


def rms_norm(x, weight, eps=1e-6):
    """RMS normalisation over the last dim (bf16, D in {384, 768, 1024, 2048,
    4096}); the kernel's eps is 1e-6. Differentiable in x and weight where
    the backward kernel is built (D in {384, 768, 1024})."""
    if eps != 1e-6:
        raise ValueError("the rmsnorm kernel is compiled with eps = 1e-6")
    return rms_norm_fwd(_rows_2d(x), weight)[0].reshape(x.shape)
