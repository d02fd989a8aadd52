"""A GPT-2 style language model whose attention, layer norms, MLP up
projection with GELU and loss come either from tkc kernels or from PyTorch.

Blocks are pre-LN: x + attn(ln1(x)), then x + mlp(ln2(x)); positions are
learned; the output projection shares the token embedding. Parameters are
f32 (the optimizer's master copy). The PyTorch variant runs under bf16
autocast; the tkc variant runs under the same autocast for the matmuls that
have no tkc kernel and hands every tkc operator bf16 inputs explicitly
(casting f32 weights in the graph, so their gradients reach the f32
parameters through the cast).
"""

import math
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

HEAD_DIM = 64


@dataclass(frozen=True)
class GPTConfig:
    n_layer: int = 6
    n_head: int = 6
    n_embd: int = 384
    block_size: int = 256
    vocab_size: int = 128

    def __post_init__(self):
        if self.n_embd != self.n_head * HEAD_DIM:
            raise ValueError(f"n_embd ({self.n_embd}) must be n_head ({self.n_head}) x {HEAD_DIM}")


PRESETS = {
    # vocab_size comes from the corpus (rounded up to a multiple of 64).
    "char": GPTConfig(n_layer=6, n_head=6, n_embd=384, block_size=256),
    "gpt2": GPTConfig(n_layer=12, n_head=12, n_embd=768, block_size=1024, vocab_size=50304),
}


def config_for(preset, vocab_size=None, **overrides):
    cfg = PRESETS[preset]
    if vocab_size is not None:
        cfg = replace(cfg, vocab_size=-(-vocab_size // 64) * 64)
    return replace(cfg, **{k: v for k, v in overrides.items() if v is not None})


# --- the two sets of operators ------------------------------------------------------


def _masked_softmax_attention(q, k, v):
    """Causal attention spelled out, for torch without scaled_dot_product_attention."""
    n = q.shape[-2]
    scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))
    mask = torch.ones(n, n, dtype=torch.bool, device=q.device).tril()
    scores = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(scores.float(), dim=-1).to(v.dtype) @ v


class TorchKernels:
    name = "torch"

    @staticmethod
    def attention(q, k, v):
        if hasattr(F, "scaled_dot_product_attention"):
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return _masked_softmax_attention(q, k, v)

    @staticmethod
    def layernorm(x, weight, bias):
        return F.layer_norm(x, (x.shape[-1],), weight, bias, 1e-5)

    @staticmethod
    def linear_gelu(x, weight, bias):
        return F.gelu(F.linear(x, weight, bias), approximate="tanh")

    @staticmethod
    def cross_entropy(logits, targets):
        return F.cross_entropy(logits, targets)


class TkcKernels:
    """tkc.ops (bf16 CUDA kernels), imported only here: it needs
    torch.library.custom_op (torch 2.4 or later)."""

    name = "tkc"

    def __init__(self):
        try:
            import tkc.ops
        except ImportError:  # not installed: the checkout's python/ folder
            sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "python"))
            import tkc.ops
        missing = [op for op in ("attention", "layernorm", "linear_gelu", "cross_entropy") if not hasattr(tkc.ops, op)]
        if missing:
            raise RuntimeError(f"this tkc.ops lacks {', '.join(missing)}")
        self.ops = tkc.ops

    def attention(self, q, k, v):
        bf = torch.bfloat16
        # Strided views of the qkv projection's output go in as they are.
        return self.ops.attention(q.to(bf), k.to(bf), v.to(bf), causal=True)

    def layernorm(self, x, weight, bias):
        bf = torch.bfloat16
        return self.ops.layernorm(x.to(bf), weight.to(bf), bias.to(bf))

    def linear_gelu(self, x, weight, bias):
        bf = torch.bfloat16
        return self.ops.linear_gelu(x.to(bf), weight.to(bf), bias.to(bf))

    def cross_entropy(self, logits, targets):
        return self.ops.cross_entropy(logits.to(torch.bfloat16), targets)


def kernels_named(name):
    if name == "torch":
        return TorchKernels()
    if name == "tkc":
        return TkcKernels()
    raise ValueError(f"unknown kernels {name!r} (tkc or torch)")


# --- the model --------------------------------------------------------------------


class LayerNorm(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        c = cfg.n_embd
        self.n_head = cfg.n_head
        self.ln1, self.ln2 = LayerNorm(c), LayerNorm(c)
        self.qkv = nn.Linear(c, 3 * c)
        self.attn_out = nn.Linear(c, c)
        self.up = nn.Linear(c, 4 * c)
        self.down = nn.Linear(4 * c, c)

    def forward(self, x, kernels):
        b, t, c = x.shape
        h = kernels.layernorm(x, self.ln1.weight, self.ln1.bias)
        qkv = F.linear(h, self.qkv.weight, self.qkv.bias).view(b, t, 3, self.n_head, HEAD_DIM)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)  # each [B, H, T, D]
        y = kernels.attention(q, k, v).transpose(1, 2).reshape(b, t, c)
        x = x + F.linear(y, self.attn_out.weight, self.attn_out.bias)
        h = kernels.layernorm(x, self.ln2.weight, self.ln2.bias)
        h = kernels.linear_gelu(h, self.up.weight, self.up.bias)
        return x + F.linear(h, self.down.weight, self.down.bias)


class GPT(nn.Module):
    def __init__(self, cfg, kernels="torch"):
        super().__init__()
        self.cfg = cfg
        self.kernels = kernels_named(kernels) if isinstance(kernels, str) else kernels
        self.tok = nn.Embedding(cfg.vocab_size, cfg.n_embd)
        self.pos = nn.Embedding(cfg.block_size, cfg.n_embd)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        self.ln_f = LayerNorm(cfg.n_embd)
        self.reset_parameters()

    def reset_parameters(self):
        """N(0, 0.02) weights and zero biases; the projections back into the
        residual stream scaled by 1/sqrt(2 n_layer), since each block adds
        two of them to it."""
        for name, p in self.named_parameters():
            if name.endswith("bias"):
                nn.init.zeros_(p)
            elif "ln" in name.split(".")[-2]:
                nn.init.ones_(p)
            else:
                std = 0.02
                if name.endswith(("attn_out.weight", "down.weight")):
                    std /= math.sqrt(2 * self.cfg.n_layer)
                nn.init.normal_(p, 0.0, std)

    def num_parameters(self):
        return sum(p.numel() for p in self.parameters())

    def forward(self, idx, targets=None):
        t = idx.shape[1]
        pos = torch.arange(t, device=idx.device)
        x = self.tok(idx) + self.pos(pos)
        for block in self.blocks:
            x = block(x, self.kernels)
        x = self.kernels.layernorm(x, self.ln_f.weight, self.ln_f.bias)
        logits = F.linear(x, self.tok.weight)  # tied with the embedding
        if targets is None:
            return logits
        return self.kernels.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
