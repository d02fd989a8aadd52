"""Ready-made operators from the example kernels, registered with torch:

    tkc.ops.attention(q, k, v, causal=False)   # [B, H, N, D] bf16, D in {64, 128}; with autograd
    tkc.ops.layernorm(x, weight, bias)         # [..., D] bf16, D in {1024, 2048, 4096}; forward only

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


# --- layer norm ------------------------------------------------------------------


@torch.library.custom_op("tkc::layernorm", mutates_args=(), device_types="cuda")
def layernorm_fwd(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """Y = (X - mean) / sqrt(var + 1e-5) * W + Bias over the last dim of a 2-d X."""
    y = torch.empty_like(x, memory_format=torch.contiguous_format)
    call_with_outputs(library("layernorm").layernorm, (x, weight, bias), (), (y,))
    return y


@layernorm_fwd.register_fake
def _(x, weight, bias):
    return torch.empty_like(x, memory_format=torch.contiguous_format)


def _no_layernorm_backward(ctx, grad):
    raise NotImplementedError("tkc.ops.layernorm has no backward: examples/ holds no layer-norm backward kernel")


layernorm_fwd.register_autograd(_no_layernorm_backward)


def layernorm(x, weight, bias, eps=1e-5):
    """Layer normalisation over the last dim (bf16, D in {1024, 2048, 4096});
    the kernel's eps is 1e-5. Forward only."""
    if eps != 1e-5:
        raise ValueError("the layernorm kernel is compiled with eps = 1e-5")
    shape = x.shape
    x2 = x.reshape(-1, shape[-1])
    if x2.stride(-1) != 1:
        x2 = x2.contiguous()
    return layernorm_fwd(x2, weight, bias).reshape(shape)
