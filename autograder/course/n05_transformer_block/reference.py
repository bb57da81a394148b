"""Notebook 05: the transformer block, in PyTorch.

Only attention moves information between tokens; layer norm and the feed-forward network act on
each token's vector alone; residual connections carry the stream past both.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn


def layer_norm(x, weight, bias, eps=1e-5):
    """z-score each token over its d features (last axis), then scale by weight and shift by bias."""
    d = x.shape[-1]
    centred = x - x.sum(dim=-1, keepdim=True) / d  # minus the mean of the d features
    var = (centred * centred).sum(dim=-1, keepdim=True) / d  # biased: divide by d, not d - 1
    return centred * torch.rsqrt(var + eps) * weight + bias  # rsqrt(v) = 1 / sqrt(v)


def sinusoidal_positional_encoding(n_positions, d_model, base=10000.0):
    """P (n_positions, d_model): P[k, 2i] = sin(k / base^(2i/d)), P[k, 2i+1] = cos(same)."""
    k = torch.arange(n_positions, dtype=torch.float64)[:, None]  # (n, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (ceil(d/2),)
    angle = k / base ** (two_i / d_model)  # (n, ceil(d/2)): slower and slower towards the right
    P = torch.zeros(n_positions, d_model, dtype=torch.float64)
    P[:, 0::2] = torch.sin(angle)
    P[:, 1::2] = torch.cos(angle[:, : d_model // 2])
    return P.float()


class LayerNorm(nn.Module):
    """layer_norm with a learnable gain (weight) and shift (bias), one per feature.

    Its forward runs torch's fused kernel of the same formula, F.layer_norm (biased variance, eps
    inside the square root), which agrees with layer_norm to float32 rounding
    (tests/course/torch_shared/test_reference_torch.py) and makes the GPT's training step about 4 % faster. Notebook
    05's LayerNorm calls the student's own layer_norm; this one is not a graded name.
    """

    def __init__(self, d_model, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))
        self.bias = nn.Parameter(torch.zeros(d_model))

    def forward(self, x):
        return F.layer_norm(x, x.shape[-1:], self.weight, self.bias, self.eps)


class MultiHeadAttention(nn.Module):
    """Multi-head attention; keys and values come from `context` when given (cross-attention)."""

    def __init__(self, d_model, n_heads, bias=True):
        super().__init__()
        assert d_model % n_heads == 0, "d_model must be a multiple of n_heads"
        self.n_heads = n_heads
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)
        self.k_proj = nn.Linear(d_model, d_model, bias=bias)
        self.v_proj = nn.Linear(d_model, d_model, bias=bias)
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)

    def forward(self, x, mask=None, context=None):
        """x (B, n, d), context (B, n_k, d) or None, mask broadcastable to (B, H, n, n_k).

        Returns y (B, n, d) and the attention weights (B, H, n, n_k).
        """
        context = x if context is None else context
        H = self.n_heads
        q = self.q_proj(x).unflatten(-1, (H, -1)).transpose(-3, -2)  # (B, H, n, d_k)
        k = self.k_proj(context).unflatten(-1, (H, -1)).transpose(-3, -2)  # (B, H, n_k, d_k)
        v = self.v_proj(context).unflatten(-1, (H, -1)).transpose(-3, -2)  # (B, H, n_k, d_k)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])  # (B, H, n, n_k)
        if mask is not None:
            scores = scores + torch.where(mask, 0.0, float("-inf"))  # blocked keys: -inf
        attn = scores.softmax(dim=-1)
        z = (attn @ v).transpose(-3, -2).flatten(-2)  # (B, n, H*d_k): heads side by side
        return self.out_proj(z), attn


class FeedForward(nn.Module):
    """FFN(x) = act(x W1 + b1) W2 + b2, applied to every token on its own."""

    def __init__(self, d_model, d_ff, activation="relu"):
        super().__init__()
        if activation not in ("relu", "gelu"):
            raise ValueError(f"activation must be 'relu' or 'gelu', not {activation!r}")
        self.fc1 = nn.Linear(d_model, d_ff)
        self.fc2 = nn.Linear(d_ff, d_model)
        self.activation = F.relu if activation == "relu" else F.gelu

    def forward(self, x):
        return self.fc2(self.activation(self.fc1(x)))  # (B, n, d_ff) -> (B, n, d)


class TransformerBlock(nn.Module):
    """Attention then feed-forward, each with a residual connection and a layer norm.

    Pre-norm (norm_first=True):  h = x + attn(ln1(x));  out = h + ff(ln2(h))
    Post-norm (the 2017 paper):  h = ln1(x + attn(x));  out = ln2(h + ff(h))
    """

    def __init__(self, d_model, n_heads, d_ff, norm_first=True, dropout=0.0):
        super().__init__()
        self.norm_first = norm_first
        self.attn = MultiHeadAttention(d_model, n_heads)
        self.ff = FeedForward(d_model, d_ff)
        self.ln1 = LayerNorm(d_model)
        self.ln2 = LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x, mask=None):
        if self.norm_first:
            x = x + self.dropout(self.attn(self.ln1(x), mask)[0])
            x = x + self.dropout(self.ff(self.ln2(x)))
        else:
            x = self.ln1(x + self.dropout(self.attn(x, mask)[0]))
            x = self.ln2(x + self.dropout(self.ff(x)))
        return x
