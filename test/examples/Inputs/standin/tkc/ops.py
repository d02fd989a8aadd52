"""tkc.ops's training operators as PyTorch on the CPU, for the CPU test of
examples/nanogpt: each checks what the real kernels require of their
arguments (bf16, shapes, a contiguous last dim) and computes in f32 from
the bf16 inputs, under the profiler names of the real operators. The calls are counted, into the JSON file
$TKC_STANDIN_CALLS at exit."""

import atexit
import json
import math
import os
from collections import Counter

import torch
import torch.nn.functional as F

CALLS = Counter()
if os.environ.get("TKC_STANDIN_CALLS"):
    atexit.register(lambda: open(os.environ["TKC_STANDIN_CALLS"], "w").write(json.dumps(CALLS)))


def _require(cond, what):
    if not cond:
        raise TypeError(f"stand-in tkc.ops: {what}")


def _bf16(name, *tensors):
    CALLS[name] += 1
    for t in tensors:
        _require(t.dtype == torch.bfloat16, f"{name} takes bf16, not {t.dtype}")


def _named(op):
    """Runs under the profiler name of tkc.ops's operator."""
    def wrap(fn):
        def run(*args, **kwargs):
            with torch.profiler.record_function(op):
                return fn(*args, **kwargs)
        return run
    return wrap


@_named("tkc::attention_fwd")
def attention(q, k, v, causal=False):
    _bf16("attention", q, k, v)
    _require(q.dim() == 4 and q.shape == k.shape == v.shape and q.shape[-1] in (64, 128), f"attention shapes {q.shape}")
    _require(all(t.stride(-1) == 1 for t in (q, k, v)), "attention needs a contiguous last dim")
    q, k, v = q.float(), k.float(), v.float()
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if causal:
        n = s.shape[-1]
        s = s.masked_fill(~torch.ones(n, n, dtype=torch.bool).tril(), float("-inf"))
    return (torch.softmax(s, -1) @ v).to(torch.bfloat16)


@_named("tkc::layernorm")
def layernorm(x, weight, bias, eps=1e-5):
    _bf16("layernorm", x, weight, bias)
    _require(weight.shape == bias.shape == x.shape[-1:], "layernorm weight and bias are [D]")
    return F.layer_norm(x.float(), x.shape[-1:], weight.float(), bias.float(), eps).to(torch.bfloat16)


@_named("tkc::linear_gelu")
def linear_gelu(x, weight, bias):
    _bf16("linear_gelu", x, weight, bias)
    _require(weight.dim() == 2 and weight.shape[1] == x.shape[-1] and bias.shape == weight.shape[:1],
             "linear_gelu weight is [N, K] and bias [N]")
    return F.gelu(F.linear(x.float(), weight.float(), bias.float()), approximate="tanh").to(torch.bfloat16)


@_named("tkc::cross_entropy")
def cross_entropy(logits, targets, ignore_index=-100):
    _bf16("cross_entropy", logits)
    _require(logits.dim() == 2 and targets.dim() == 1 and targets.dtype == torch.int64
             and targets.shape[0] == logits.shape[0], "cross_entropy takes [R, V] logits and int64 [R] targets")
    return F.cross_entropy(logits.float(), targets, ignore_index=ignore_index)
