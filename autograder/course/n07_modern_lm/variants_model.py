"""Known-wrong versions of notebook 07's model (SwiGLU, attention with a cache, TinyLlama),
each with its right mode (variant=None), run when a probe BUILDS its cases: see variants.py.
"""

import math

import numpy as np
import torch
import torch.nn.functional as F

from autograder.course.n07_modern_lm.variants import _f64, rms_norm, rope

# ---------------------------------------------------------------- SwiGLU


def swiglu(state, x, variant=None, prefix=""):
    w1, w2, w3 = (_f64(state[f"{prefix}{n}.weight"]) for n in ("w1", "w2", "w3"))
    x = _f64(x)
    a, b = x @ w1.T, x @ w3.T
    if variant == "swiglu-gate-swapped":  # silu on w3's branch
        a, b = b, a
    if variant == "swiglu-other-activation":
        return (F.gelu(a) * b) @ w2.T
    if variant == "swiglu-no-gate":
        return F.silu(a) @ w2.T
    if variant == "swiglu-sigmoid-gate":  # GLU's sigmoid, not silu (x * sigmoid(x))
        return (torch.sigmoid(a) * b) @ w2.T
    if variant == "swiglu-relu-gate":
        return (F.relu(a) * b) @ w2.T
    if variant == "swiglu-silu-after-product":
        return F.silu(a * b) @ w2.T
    if variant == "swiglu-sum-not-product":
        return (F.silu(a) + b) @ w2.T
    return (F.silu(a) * b) @ w2.T


SWIGLU_VARIANTS = (
    ("swiglu-gate-swapped", "swiglu-gate-swapped"),
    ("swiglu-other-activation", "swiglu-other-activation"),
    ("swiglu-other-activation", "swiglu-sigmoid-gate"),
    ("swiglu-other-activation", "swiglu-relu-gate"),
    ("swiglu-no-gate", "swiglu-no-gate"),
    ("swiglu-silu-after-product", "swiglu-silu-after-product"),
    ("swiglu-sum-not-product", "swiglu-sum-not-product"),
)


def swiglu_variants(state, x, prefix=""):
    return [(id_, swiglu(state, x, v, prefix).numpy()) for id_, v in SWIGLU_VARIANTS]


# ---------------------------------------------------------------- attention with a cache

ROPE_OF = {"rope-half-split": "rope-half-split", "rope-wrong-frequency": "rope-wrong-frequency"}


def attention(state, x, n_heads, cache=None, variant=None, prefix=""):
    """CausalSelfAttention in float64 from a state dict: (y, (k, v)); or with one mistake:
    cache-positions-restart (the new tokens rotated at 0..T-1 whatever the cache holds),
    cache-not-appended (the cache returned holds only the new positions),
    cache-not-used (attention over the new positions only, as if there were no cache),
    no-causal-mask, cache-mask-not-offset (a (T, T_past + T) mask whose diagonal starts at 0),
    missing-scale, rope-half-split / rope-wrong-frequency (inside attention), rope-on-values
    (the values rotated too), rope-queries-only, softmax-over-queries, rope-after-cache (the
    keys turned after joining the cache, all from position 0; -raw-kept: the cache returned
    holds them unturned)."""
    wq, wk, wv, wo = (_f64(state[f"{prefix}{n}.weight"]) for n in ("wq", "wk", "wv", "wo"))
    x = _f64(x)
    B, T, d = x.shape
    H = n_heads

    def heads(t):
        if variant in ("heads-split-without-transpose", "heads-without-transpose"):
            # (B, T, d) viewed as (B, H, T, d_head)
            return t.reshape(B, H, T, d // H)
        return t.reshape(B, T, H, d // H).transpose(1, 2)

    q, k, v = heads(x @ wq.T), heads(x @ wk.T), heads(x @ wv.T)
    T_past = 0 if cache is None else cache[0].shape[2]
    start = 0 if variant == "cache-positions-restart" else T_past
    if variant == "rope-position-after-cache":  # the new tokens one position too far
        start = T_past + 1
    positions = torch.arange(start, start + T)
    rv = ROPE_OF.get(variant)
    q = q if variant == "rope-keys-only" else rope(q, positions, variant=rv)
    after_cache = variant in ("rope-after-cache", "rope-after-cache-raw-kept")
    raw_k = k
    if not after_cache:
        k = k if variant == "rope-queries-only" else rope(k, positions, variant=rv)
    if variant == "rope-on-values":
        v = rope(v, positions)
    new_k, new_v = k, v
    if cache is not None and variant != "cache-not-used":
        raw_k = torch.cat([_f64(cache[0]), raw_k], dim=2)
        k = torch.cat([_f64(cache[0]), k], dim=2)
        v = torch.cat([_f64(cache[1]), v], dim=2)
    n_k = k.shape[2]
    if after_cache:  # every key, the cached ones too, turned at 0 .. n_k - 1
        k = rope(raw_k, torch.arange(n_k))
    scores = q @ k.transpose(-2, -1)
    if variant == "attention-scale-d-model":
        scores = scores / math.sqrt(d)
    elif variant != "missing-scale":
        scores = scores / math.sqrt(d // H)
    if variant != "no-causal-mask":
        offset = 0 if variant == "cache-mask-not-offset" else n_k - T
        mask = torch.ones(T, n_k, dtype=torch.bool).tril(diagonal=offset)
        scores = scores.masked_fill(~mask, float("-inf"))
    y = scores.softmax(-2 if variant == "softmax-over-queries" else -1) @ v
    if variant in ("heads-merged-without-transpose", "heads-without-transpose"):
        # (B, H, T, d_head) read as (B, T, d)
        y = y.reshape(B, T, d) @ wo.T
    else:
        y = y.transpose(1, 2).reshape(B, T, d) @ wo.T
    if variant == "cache-not-appended":
        return y, (new_k, new_v)
    if variant == "rope-after-cache-raw-kept":  # the cache keeps the keys unturned
        return y, (raw_k, v)
    return y, (k, v)


ATTENTION_VARIANTS = (
    "cache-positions-restart",
    "cache-not-appended",
    "cache-not-used",
    "no-causal-mask",
    "cache-mask-not-offset",
    "missing-scale",
    "attention-scale-d-model",
    "heads-split-without-transpose",
    "heads-merged-without-transpose",
    "heads-without-transpose",
    "rope-position-after-cache",
    "rope-half-split",
    "rope-wrong-frequency",
    "rope-on-values",
    "rope-queries-only",
    "rope-keys-only",
    "softmax-over-queries",
    "rope-after-cache",
    "rope-after-cache-raw-kept",
)
ATTENTION_IDS = {
    "rope-after-cache-raw-kept": "rope-after-cache",
    "rope-keys-only": "rope-queries-only",  # one id: RoPE on only one of the two
    "heads-split-without-transpose": "heads-reshape-without-transpose",
    "heads-merged-without-transpose": "heads-reshape-without-transpose",
    "heads-without-transpose": "heads-reshape-without-transpose",
    "rope-position-after-cache": "rope-position-off-by-one",
}


def _plain_out(y, cache):
    return (y.numpy(), cache[0].numpy(), cache[1].numpy())


def attention_variants(state, x, n_heads, cache=None, prefix=""):
    """(id, (y, k, v)) for each mistake, those that change nothing on these inputs left out."""
    right = _plain_out(*attention(state, x, n_heads, cache, prefix=prefix))
    out = []
    for v in ATTENTION_VARIANTS:
        got = _plain_out(*attention(state, x, n_heads, cache, v, prefix))
        if any(
            g.shape != r.shape or not np.allclose(g, r, 1e-6, 1e-8)
            for g, r in zip(got, right, strict=True)
        ):
            out.append((ATTENTION_IDS.get(v, v), got))
    return out


# ---------------------------------------------------------------- TinyLlama


def llama(state, idx, n_heads, n_layers, cache=None, variant=None, eps=1e-6):
    """TinyLlama's logits (float64) and caches from a state dict under the notebook's names
    (tok_emb, blocks.i.{norm1,attn,norm2,ffn}, norm; the head is tok_emb.weight). Mistakes:
    post-norm, no-final-norm, missing-residual (around attention), rmsnorm-mean-subtracted,
    swiglu-gate-swapped, and the attention ones (cache-positions-restart, no-causal-mask,
    rope-half-split); llama-cache-first-block (every block given cache[0]),
    llama-ffn-reads-block-input (h + ffn(norm2(x))). `eps` is every norm's."""
    emb = _f64(state["tok_emb.weight"])
    x = emb[torch.as_tensor(idx)]
    caches = []
    norm_v = variant if variant == "rmsnorm-mean-subtracted" else None
    attn_v = variant if variant in ATTENTION_VARIANTS else None
    ffn_v = variant if variant == "swiglu-gate-swapped" else None
    for i in range(n_layers):
        p = f"blocks.{i}."

        def norm(t, name, p=p):
            return rms_norm(t, state[f"{p}{name}.weight"], eps, norm_v)

        c = None if cache is None else cache[0 if variant == "llama-cache-first-block" else i]
        if variant == "post-norm":
            a, c = attention(state, x, n_heads, c, attn_v, p + "attn.")
            h = norm(x + a, "norm1")
            x = norm(h + swiglu(state, h, ffn_v, p + "ffn."), "norm2")
        else:
            a, c = attention(state, norm(x, "norm1"), n_heads, c, attn_v, p + "attn.")
            h = a if variant == "missing-residual" else x + a
            into_ffn = x if variant == "llama-ffn-reads-block-input" else h
            x = h + swiglu(state, norm(into_ffn, "norm2"), ffn_v, p + "ffn.")
        caches.append(c)
    if variant != "no-final-norm":
        x = rms_norm(x, state["norm.weight"], eps, norm_v)
    return x @ emb.T, caches


LLAMA_VARIANTS = (
    "post-norm",
    "no-final-norm",
    "missing-residual",
    "rmsnorm-mean-subtracted",
    "swiglu-gate-swapped",
    "cache-positions-restart",
    "no-causal-mask",
    "rope-half-split",
    "llama-cache-first-block",
    "llama-ffn-reads-block-input",
)
LLAMA_IDS = {"post-norm": "norm-order-swapped", "no-final-norm": "llama-no-final-norm"}


def llama_variants(state, idx, n_heads, n_layers, cache=None):
    return [
        (LLAMA_IDS.get(v, v), llama(state, idx, n_heads, n_layers, cache, v)[0].numpy())
        for v in LLAMA_VARIANTS
    ]
