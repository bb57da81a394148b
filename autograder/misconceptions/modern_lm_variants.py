"""Known-wrong implementations of notebook 07's pieces, run when a probe BUILDS its cases.

As in torch_variants.py: the probe computes the reference and these variants on the same inputs
and stores their outputs as (misconception id, output) pairs; the judge names the one a
student's answer matches, without running any of this code. Every function here also has a
right mode (variant=None), written independently of autograder.reference (float64, functional,
from a state dict under the notebook's attribute names), so the tests can hold the two against
each other.
"""

import math

import numpy as np
import torch
import torch.nn.functional as F

# ---------------------------------------------------------------- BPE


def _pairs(ids, overlapping=True):
    """{pair: count} in order of first occurrence; without `overlapping`, a run "aaa" holds
    (a, a) once (a pair is not counted again on the position it just used)."""
    counts, i = {}, 0
    while i + 1 < len(ids):
        pair = (ids[i], ids[i + 1])
        counts[pair] = counts.get(pair, 0) + 1
        i += 2 if (not overlapping and ids[i] == ids[i + 1]) else 1
    return counts


def _replace(ids, pair, new):
    out, i = [], 0
    while i < len(ids):
        if i + 1 < len(ids) and (ids[i], ids[i + 1]) == pair:
            out.append(new)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out


def bpe_train(text, vocab_size, variant=None):
    """The merges BPE learns (right: variant None) or with one mistake:
    bpe-tie-order-smallest / -largest / -last (ties to the smallest or largest pair, or to the
    latest first occurrence), bpe-overlapping-count (a run counted without overlap),
    bpe-merges-singletons (a pair that occurs once still merged)."""
    ids = list(text.encode("utf-8"))
    merges = []
    while 256 + len(merges) < vocab_size:
        counts = _pairs(ids, overlapping=variant != "bpe-overlapping-count")
        if not counts:
            break
        best = max(counts.values())
        tied = [p for p, c in counts.items() if c == best]  # in order of first occurrence
        pair = {
            "bpe-tie-order-smallest": min(tied),
            "bpe-tie-order-largest": max(tied),
            "bpe-tie-order-last": tied[-1],
        }.get(variant, tied[0])
        if best < 2 and variant != "bpe-merges-singletons":
            break
        ids = _replace(ids, pair, 256 + len(merges))
        merges.append(pair)
    return merges


MERGE_VARIANTS = (
    ("bpe-tie-order", "bpe-tie-order-smallest"),
    ("bpe-tie-order", "bpe-tie-order-largest"),
    ("bpe-tie-order", "bpe-tie-order-last"),
    ("bpe-overlapping-count", "bpe-overlapping-count"),
    ("bpe-merges-singletons", "bpe-merges-singletons"),
)


def merge_variants(text, vocab_size):
    """(id, merges as lists) for each training mistake."""
    return [
        (id_, [list(p) for p in bpe_train(text, vocab_size, variant)])
        for id_, variant in MERGE_VARIANTS
    ]


def bpe_encode(merges, s, variant=None):
    """Encode s with the merges (right: the earliest-learned pair present, repeatedly), or:
    reverse (the latest-learned first), left-to-right (scan once, merging any known pair at
    each position), most-frequent (the pair most frequent in s first, as training does)."""
    merges = [tuple(m) for m in merges]
    rank = {p: i for i, p in enumerate(merges)}
    ids = list(s.encode("utf-8"))
    if variant == "left-to-right":
        changed = True
        while changed:
            changed, out, i = False, [], 0
            while i < len(ids):
                if i + 1 < len(ids) and (ids[i], ids[i + 1]) in rank:
                    out.append(256 + rank[(ids[i], ids[i + 1])])
                    i += 2
                    changed = True
                else:
                    out.append(ids[i])
                    i += 1
            ids = out
        return ids
    while len(ids) >= 2:
        present = [p for p in _pairs(ids) if p in rank]
        if not present:
            break
        if variant == "reverse":
            pair = max(present, key=rank.get)
        elif variant == "most-frequent":
            counts = _pairs(ids)
            pair = max(present, key=lambda p: counts[p])
        else:
            pair = min(present, key=rank.get)
        ids = _replace(ids, pair, 256 + rank[pair])
    return ids


def encode_variants(merges, s):
    return [
        ("bpe-encode-order", bpe_encode(merges, s, v))
        for v in ("reverse", "left-to-right", "most-frequent")
    ]


# ---------------------------------------------------------------- RMSNorm


def _f64(t):
    return t.detach().to(torch.float64)


def rms_norm(x, weight, eps=1e-6, variant=None):
    x, w = _f64(x), _f64(weight)
    ms = x.pow(2).mean(-1, keepdim=True)
    if variant == "rmsnorm-mean-subtracted":  # layer norm without its bias
        return (
            (x - x.mean(-1, keepdim=True))
            / torch.sqrt(x.var(-1, keepdim=True, correction=0) + eps)
            * w
        )
    if variant == "rmsnorm-eps-outside-sqrt":
        return x / (torch.sqrt(ms) + eps) * w
    if variant == "rmsnorm-no-gain":
        return x / torch.sqrt(ms + eps)
    if variant == "rmsnorm-wrong-axis":
        return x / torch.sqrt(x.pow(2).mean(0, keepdim=True) + eps) * w
    if variant == "rmsnorm-eps-ignored":
        return x / torch.sqrt(ms + 1e-6) * w
    if variant == "rmsnorm-global-mean":  # one mean over the whole tensor
        return x / torch.sqrt(x.pow(2).mean() + eps) * w
    if variant == "rmsnorm-std":  # the standard deviation: the mean subtracted inside only
        return x / torch.sqrt(x.var(-1, keepdim=True, correction=0) + eps) * w
    if variant == "rmsnorm-std-unbiased":
        return x / torch.sqrt(x.var(-1, keepdim=True) + eps) * w
    if variant == "rmsnorm-no-mean":  # the sum of squares, not their mean (the L2 norm)
        return x / torch.sqrt(x.pow(2).sum(-1, keepdim=True) + eps) * w
    return x / torch.sqrt(ms + eps) * w


RMS_VARIANTS = (
    "rmsnorm-mean-subtracted",
    "rmsnorm-eps-outside-sqrt",
    "rmsnorm-no-gain",
    "rmsnorm-wrong-axis",
    "rmsnorm-eps-ignored",
    "rmsnorm-no-mean",
    "rmsnorm-global-mean",
    "rmsnorm-std",
    "rmsnorm-std-unbiased",
)
RMS_IDS = {"rmsnorm-std-unbiased": "rmsnorm-std"}


def rms_norm_variants(x, weight, eps=1e-6):
    out = []
    for v in RMS_VARIANTS:
        if v == "rmsnorm-eps-ignored" and eps == 1e-6:
            continue
        if v == "rmsnorm-wrong-axis" and x.ndim < 2:
            continue
        out.append((RMS_IDS.get(v, v), rms_norm(x, weight, eps, v).numpy()))
    return out


# ---------------------------------------------------------------- RoPE


def rope(x, positions, base=10000.0, variant=None):
    """RoPE in float64 by complex numbers: pair i of position m times e^{i m theta_i}; or with
    one mistake: rope-half-split (GPT-NeoX's layout: pair i is (x[i], x[i + d/2])),
    rope-wrong-frequency (theta_i = base**(-i/d), or base**(-2i/d) with i running over d),
    rope-wrong-position (positions ignored: 0..T-1), rope-rotation-reversed (turned by -angle)."""
    x = _f64(x)
    d = x.shape[-1]
    i = torch.arange(d // 2, dtype=torch.float64)
    theta = base ** (-2 * i / d)
    if variant == "rope-wrong-frequency":
        theta = base ** (-i / d)
    elif variant == "rope-wrong-frequency-2":
        theta = base ** (-2 * i / (d // 2))
    elif variant == "rope-frequency-sign":
        theta = base ** (2 * i / d)
    m = positions.to(torch.float64)
    if variant == "rope-position-plus-one":
        m = m + 1
    elif variant == "rope-position-minus-one":
        m = m - 1
    if variant == "rope-wrong-position":
        m = torch.arange(x.shape[-2], dtype=torch.float64)
    angle = m[:, None] * theta  # (T, d/2)
    if variant == "rope-rotation-reversed":
        angle = -angle
    turn = torch.polar(torch.ones_like(angle), angle)
    if variant == "rope-half-split":
        z = torch.complex(x[..., : d // 2], x[..., d // 2 :]) * turn
        return torch.cat([z.real, z.imag], dim=-1)
    z = torch.view_as_complex(x.reshape(*x.shape[:-1], d // 2, 2).contiguous()) * turn
    if variant == "rope-pairs-concatenated":  # rotated right, put back evens then odds
        return torch.cat([z.real, z.imag], dim=-1)
    return torch.view_as_real(z).flatten(-2)


ROPE_VARIANTS = (
    ("rope-half-split", "rope-half-split"),
    ("rope-wrong-frequency", "rope-wrong-frequency"),
    ("rope-wrong-frequency", "rope-wrong-frequency-2"),
    ("rope-wrong-position", "rope-wrong-position"),
    ("rope-rotation-reversed", "rope-rotation-reversed"),
    ("rope-frequency-sign", "rope-frequency-sign"),
    ("rope-position-off-by-one", "rope-position-plus-one"),
    ("rope-position-off-by-one", "rope-position-minus-one"),
    ("rope-pairs-concatenated", "rope-pairs-concatenated"),  # not in the catalogue: a hint
)


def rope_variants(x, positions, base=10000.0):
    return [(id_, rope(x, positions, base, v).numpy()) for id_, v in ROPE_VARIANTS]


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
    return (F.silu(a) * b) @ w2.T


SWIGLU_VARIANTS = (
    ("swiglu-gate-swapped", "swiglu-gate-swapped"),
    ("swiglu-other-activation", "swiglu-other-activation"),
    ("swiglu-other-activation", "swiglu-sigmoid-gate"),
    ("swiglu-other-activation", "swiglu-relu-gate"),
    ("swiglu-no-gate", "swiglu-no-gate"),
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
    (the values rotated too), rope-queries-only."""
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
    k = k if variant == "rope-queries-only" else rope(k, positions, variant=rv)
    if variant == "rope-on-values":
        v = rope(v, positions)
    new_k, new_v = k, v
    if cache is not None and variant != "cache-not-used":
        k = torch.cat([_f64(cache[0]), k], dim=2)
        v = torch.cat([_f64(cache[1]), v], dim=2)
    n_k = k.shape[2]
    scores = q @ k.transpose(-2, -1)
    if variant == "attention-scale-d-model":
        scores = scores / math.sqrt(d)
    elif variant != "missing-scale":
        scores = scores / math.sqrt(d // H)
    if variant != "no-causal-mask":
        offset = 0 if variant == "cache-mask-not-offset" else n_k - T
        mask = torch.ones(T, n_k, dtype=torch.bool).tril(diagonal=offset)
        scores = scores.masked_fill(~mask, float("-inf"))
    y = scores.softmax(-1) @ v
    if variant in ("heads-merged-without-transpose", "heads-without-transpose"):
        # (B, H, T, d_head) read as (B, T, d)
        y = y.reshape(B, T, d) @ wo.T
    else:
        y = y.transpose(1, 2).reshape(B, T, d) @ wo.T
    if variant == "cache-not-appended":
        return y, (new_k, new_v)
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
)
ATTENTION_IDS = {
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
    rope-half-split)."""
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

        c = None if cache is None else cache[i]
        if variant == "post-norm":
            a, c = attention(state, x, n_heads, c, attn_v, p + "attn.")
            h = norm(x + a, "norm1")
            x = norm(h + swiglu(state, h, ffn_v, p + "ffn."), "norm2")
        else:
            a, c = attention(state, norm(x, "norm1"), n_heads, c, attn_v, p + "attn.")
            h = a if variant == "missing-residual" else x + a
            x = h + swiglu(state, norm(h, "norm2"), ffn_v, p + "ffn.")
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
)
LLAMA_IDS = {"post-norm": "norm-order-swapped", "no-final-norm": "llama-no-final-norm"}


def llama_variants(state, idx, n_heads, n_layers, cache=None):
    return [
        (LLAMA_IDS.get(v, v), llama(state, idx, n_heads, n_layers, cache, v)[0].numpy())
        for v in LLAMA_VARIANTS
    ]


# ---------------------------------------------------------------- sampling (generate_cached)


def sampling_distribution(row, temperature=1.0, top_k=None, top_p=None, variant=None):
    """The distribution of the next token given one row of logits (float64), as notebook 06's
    generate samples; variants: temperature-multiplied, top-p-excludes-boundary (the token that
    crosses top_p dropped), top-p-ignored, top-k-ignored."""
    z = np.asarray(row, dtype=float)
    z = z * temperature if variant == "temperature-multiplied" else z / temperature
    untopped = z
    if variant == "top-k-off-by-one" and top_k is not None:
        top_k -= 1
    if top_k is not None and top_k > 0 and variant != "top-k-ignored":
        kth = np.sort(z)[-min(top_k, z.size)]
        z = np.where(z < kth, -np.inf, z)
    p = np.exp(z - z.max())
    p /= p.sum()
    if top_p is not None and top_p < 1.0 and variant != "top-p-ignored":
        if variant == "top-p-before-top-k":  # the set counted before top_k cut the row
            whole = np.exp(untopped - untopped.max())
            order = np.argsort(-whole / whole.sum(), kind="stable")
            sorted_w = (whole / whole.sum())[order]
            kept = np.zeros_like(p, dtype=bool)
            kept[order[np.cumsum(sorted_w) - sorted_w < top_p]] = True
            p = np.where(kept, p, 0.0)
            return p / p.sum()
        order = np.argsort(-p, kind="stable")
        before = np.cumsum(p[order]) - p[order]
        keep = before < top_p
        if variant == "top-p-excludes-boundary":
            keep = np.cumsum(p[order]) <= top_p
            keep[0] = True
        kept = np.zeros_like(p, dtype=bool)
        kept[order[keep]] = True
        p = np.where(kept, p, 0.0)
        p /= p.sum()
    return p


def cached_greedy(table, positions, prompt, steps, variant=None):
    """Greedy chains under the harness's cached toy model (logits of token w at position m:
    table[w] + positions[m]); variants: cache-positions-restart (each new token fed without the
    cache: position 0), cache-not-updated (the prompt's cache passed at every step: position T0)."""
    table, positions = np.asarray(table), np.asarray(positions)
    rows = [list(map(int, r)) for r in np.asarray(prompt)]
    T0 = len(rows[0])
    for row in rows:
        for step in range(steps):
            m = len(row) - 1
            if step > 0 and variant == "cache-positions-restart":
                m = 0
            elif step > 0 and variant == "cache-not-updated":
                m = T0
            row.append(int(np.argmax(table[row[-1]] + positions[m])))
    return rows
