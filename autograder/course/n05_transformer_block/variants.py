"""Known-wrong PyTorch implementations of notebook 05 (the transformer block), run when a probe
BUILDS its cases (notebook 06's are in n06_autoregressive_lm/variants.py, built on these).

A probe draws some inputs and weights, computes the reference AND these variants on them, and
stores their outputs as plain data in the case: a list of (misconception id, output) pairs,
several pairs may share an id. The judge then names the misconception whose stored output the
student's answer matches (autograder.course.torch_shared.checks.diagnose), without running any of
this code: the student handout ships the outputs, never these functions. Nothing here reads a
student's source: a misconception is recognised by what the code does.

Weights travel as a state dict under SPEC's attribute names (q_proj.weight, ff.fc1.bias, ...);
every variant takes that dict of tensors, so the same draw feeds the harness, the reference and
the variants.
"""

import math

import torch
import torch.nn.functional as F


def np64(t):
    """A tensor (or tuple of tensors) as float64 NumPy arrays."""
    if isinstance(t, tuple | list):
        return tuple(np64(x) for x in t)
    return t.detach().to(torch.float64).numpy()


# ---------------------------------------------------------------- 05: layer norm


def layer_norm_variants(x, weight, bias, eps=1e-5):
    """(id, output) for the layer-norm mistakes, on tensors x (..., d), weight (d,), bias (d,)."""
    x = x.detach().to(torch.float64)
    w, b = weight.detach().to(torch.float64), bias.detach().to(torch.float64)
    mean = x.mean(-1, keepdim=True)
    out = []
    # unbiased variance (divide by d - 1): torch.var's default
    var_u = x.var(-1, keepdim=True, correction=1) if x.shape[-1] > 1 else None
    if var_u is not None:
        out.append(("layernorm-unbiased-variance", (x - mean) / torch.sqrt(var_u + eps) * w + b))
        out.append(
            ("layernorm-unbiased-variance", (x - mean) / (x.std(-1, keepdim=True) + eps) * w + b)
        )
    var = x.var(-1, keepdim=True, correction=0)
    out.append(("layernorm-eps-outside-sqrt", (x - mean) / (torch.sqrt(var) + eps) * w + b))
    # no eps at all: not the same mistake (a constant token divides 0 by 0); told apart from
    # eps-outside-sqrt on tokens with a tiny spread, where the two differ
    out.append(("layernorm-no-eps", (x - mean) / torch.sqrt(var) * w + b))
    std = torch.sqrt(var)
    # the lecture's misprint: divide by the square root of the standard deviation
    out.append(("layernorm-sqrt-of-std", (x - mean) / torch.sqrt(std + eps) * w + b))
    out.append(("layernorm-affine-missing", (x - mean) / torch.sqrt(var + eps)))
    if eps != 1e-5:  # the eps argument ignored: a fixed 1e-5 instead
        out.append(("layernorm-eps-ignored", (x - mean) / torch.sqrt(var + 1e-5) * w + b))
    # wrong axis: normalise over the first axis, the second-to-last, or every entry
    for dims in ((0,), (-2,), tuple(range(x.ndim))):
        if x.ndim < 2:
            break  # one vector: every axis is the last one
        m = x.mean(dims, keepdim=True)
        v = x.var(dims, keepdim=True, correction=0)
        out.append(("layernorm-wrong-axis", (x - m) / torch.sqrt(v + eps) * w + b))
    return [(i, np64(v)) for i, v in out]


# ---------------------------------------------------------------- 05: positional encoding


def _pe(n, d, base, even_fn, odd_fn, exponent, interleave=True):
    k = torch.arange(n, dtype=torch.float64)[:, None]
    cols = torch.arange(d, dtype=torch.float64)
    if exponent == "pair":  # right: 2i / d for both columns of the pair
        e = 2 * torch.div(cols, 2, rounding_mode="floor") / d
    elif exponent == "column":  # the column index j instead of 2i
        e = cols / d
    elif exponent == "i":  # i / d (the 2 dropped)
        e = torch.div(cols, 2, rounding_mode="floor") / d
    elif exponent == "double":  # 2j / d with j the column index
        e = 2 * cols / d
    elif exponent == "pair-double":  # 2 * (2i) / d: a loop over 2i = 0, 2, 4, ... doubled again
        e = 4 * torch.div(cols, 2, rounding_mode="floor") / d
    angle = k / base**e
    P = torch.empty(n, d, dtype=torch.float64)
    if interleave:
        P[:, 0::2] = even_fn(angle[:, 0::2])
        P[:, 1::2] = odd_fn(angle[:, 1::2])
    else:  # first half sines, second half cosines, with the pair frequencies
        half = (d + 1) // 2
        pair = k / base ** (2 * torch.arange(half, dtype=torch.float64) / d)
        P[:, :half] = even_fn(pair)
        P[:, half:] = odd_fn(pair[:, : d - half])
    return P


def pe_variants(n_positions, d_model, base=10000.0):
    """(id, P) for the positional-encoding mistakes."""
    n, d = n_positions, d_model
    out = [
        ("pe-sin-cos-swapped", _pe(n, d, base, torch.cos, torch.sin, "pair")),
        ("pe-wrong-exponent", _pe(n, d, base, torch.sin, torch.cos, "column")),
        ("pe-wrong-exponent", _pe(n, d, base, torch.sin, torch.cos, "i")),
        ("pe-wrong-exponent", _pe(n, d, base, torch.sin, torch.cos, "double")),
        ("pe-wrong-exponent", _pe(n, d, base, torch.sin, torch.cos, "pair-double")),
        ("pe-not-interleaved", _pe(n, d, base, torch.sin, torch.cos, "pair", interleave=False)),
        ("pe-not-interleaved", _pe(n, d, base, torch.sin, torch.cos, "column", interleave=False)),
    ]
    if base != 10000.0:  # the base argument ignored: always 10000
        out.append(("pe-base-ignored", _pe(n, d, 10000.0, torch.sin, torch.cos, "pair")))
    return [(i, np64(P)) for i, P in out]


# ---------------------------------------------------------------- 05: multi-head attention


def _linear(state, prefix, x):
    return F.linear(x, state[f"{prefix}.weight"], state.get(f"{prefix}.bias"))


def mha_forward(state, x, n_heads, mask=None, context=None, variant=None, prefix=""):
    """Multi-head attention from a state dict, right (variant=None) or with one mistake.

    Variants: missing-scale, wrong-scale-d (d_k), wrong-scale-model (sqrt(d_model)),
    mask-inverted, mask-after-softmax, transposed-scores, softmax-over-queries,
    split-no-transpose, merge-no-transpose, heads-no-transpose (both),
    missing-output-projection. Returns (y, attn) in float64.
    """
    s = {k: v.detach().to(torch.float64) for k, v in state.items()}
    x = x.detach().to(torch.float64)
    context = x if context is None else context.detach().to(torch.float64)
    p = prefix
    H = n_heads
    B, n, d = x.shape
    n_k = context.shape[-2]
    d_k = d // H

    def split(t, length):
        if variant in ("split-no-transpose", "heads-no-transpose"):
            return t.reshape(B, H, length, d_k)
        return t.reshape(B, length, H, d_k).transpose(1, 2)

    q_name = f"{p}k_proj" if variant == "query-from-k_proj" else f"{p}q_proj"
    k_name = f"{p}q_proj" if variant == "key-from-q_proj" else f"{p}k_proj"
    v_name = f"{p}k_proj" if variant == "value-from-k_proj" else f"{p}v_proj"
    q = split(_linear(s, q_name, x), n)
    k = split(_linear(s, k_name, context), n_k)
    v = split(_linear(s, v_name, context), n_k)
    scale = {
        "missing-scale": 1.0,
        "wrong-scale-d": d_k,
        "wrong-scale-model": math.sqrt(d),
    }.get(variant, math.sqrt(d_k))
    scores = q @ k.transpose(-2, -1) / scale
    if variant == "transposed-scores":
        if n != n_k:
            return None
        scores = scores.transpose(-2, -1)
    if mask is not None and variant != "mask-ignored":
        m = torch.as_tensor(mask, dtype=torch.bool)
        if variant == "mask-inverted":
            m = ~m
        if variant == "mask-fills-zero":
            scores = scores.masked_fill(~m, 0.0)
        elif variant != "mask-after-softmax":
            scores = scores.masked_fill(~m, float("-inf"))
    dim = {"softmax-over-queries": -2, "softmax-over-heads": 1}.get(variant, -1)
    attn = scores.softmax(dim=dim)
    if mask is not None and variant == "mask-after-softmax":
        attn = attn.masked_fill(~torch.as_tensor(mask, dtype=torch.bool), 0.0)
    z = attn @ v  # (B, H, n, d_k)
    if variant == "heads-averaged":  # one attention pattern, the heads' average, on all of v
        v_all = _linear(s, v_name, context)  # (B, n_k, d)
        y = _linear(s, f"{p}out_proj", attn.mean(1) @ v_all)
        return y, attn
    if variant in ("merge-no-transpose", "heads-no-transpose"):
        z = z.reshape(B, n, d)
    else:
        z = z.transpose(1, 2).reshape(B, n, d)
    y = z if variant == "missing-output-projection" else _linear(s, f"{p}out_proj", z)
    return y, attn


MHA_VARIANTS = {
    "missing-scale": "missing-scale",
    "wrong-scale-d": "wrong-scale",
    "wrong-scale-model": "wrong-scale",
    "mask-inverted": "mask-inverted",
    "mask-after-softmax": "mask-after-softmax",
    "transposed-scores": "transposed-scores",
    "softmax-over-queries": "softmax-over-queries",
    "split-no-transpose": "heads-reshape-without-transpose",
    "merge-no-transpose": "heads-reshape-without-transpose",
    "heads-no-transpose": "heads-reshape-without-transpose",
    "missing-output-projection": "missing-output-projection",
    "heads-averaged": "heads-averaged",
    "mask-ignored": "mask-ignored",
    "mask-fills-zero": "mask-fills-zero",
    "softmax-over-heads": "softmax-over-heads",
    # one projection used in place of another: said by what the numbers show, no catalogue id
    "query-from-k_proj": "query-from-k_proj",
    "key-from-q_proj": "key-from-q_proj",
    "value-from-k_proj": "value-from-k_proj",
}


def mha_variants(state, x, n_heads, mask=None, context=None):
    """(id, (y, attn)) for every attention mistake that changes something on these inputs."""
    out = []
    for variant, id_ in MHA_VARIANTS.items():
        if variant.startswith("mask") and mask is None:
            continue
        r = mha_forward(state, x, n_heads, mask, context, variant)
        if r is not None:
            out.append((id_, np64(r)))
    return out


# ---------------------------------------------------------------- 05: feed-forward, block


def ff_forward(state, x, activation="relu", variant=None, prefix=""):
    """FFN from a state dict; variants: missing-activation, other-activation, gelu-tanh."""
    s = {k: v.detach().to(torch.float64) for k, v in state.items()}
    x = x.detach().to(torch.float64)
    h = _linear(s, f"{prefix}fc1", x)
    if variant == "missing-activation":
        pass
    elif variant == "other-activation":
        h = F.gelu(h) if activation == "relu" else F.relu(h)
    elif variant == "gelu-tanh":
        h = F.gelu(h, approximate="tanh")
    elif variant == "activation-after-output":
        out = _linear(s, f"{prefix}fc2", h)
        return F.relu(out) if activation == "relu" else F.gelu(out)
    else:
        h = F.relu(h) if activation == "relu" else F.gelu(h)
    return _linear(s, f"{prefix}fc2", h)


def _ln(state, prefix, x):
    return F.layer_norm(x, x.shape[-1:], state[f"{prefix}.weight"], state[f"{prefix}.bias"], 1e-5)


def block_forward(state, x, n_heads, norm_first=True, mask=None, variant=None, attn_variant=None):
    """TransformerBlock from a state dict, right or with one mistake.

    Variants: no-attn-residual, no-ff-residual, no-residual, swapped (the other norm order),
    ln-swapped (ln1 and ln2 used the wrong way round), ln1-twice / ln2-twice (one norm for
    both sub-layers), mask-not-passed (attention without the mask), norm-inside-residual
    (x + LN(sublayer(x)): the norm on the sub-layer's output, inside the residual).
    """
    s = {k: v.detach().to(torch.float64) for k, v in state.items()}
    x = x.detach().to(torch.float64)
    if variant == "swapped":
        norm_first = not norm_first
    ln1, ln2 = {
        "ln-swapped": ("ln2", "ln1"),
        "ln1-twice": ("ln1", "ln1"),
        "ln2-twice": ("ln2", "ln2"),
    }.get(variant, ("ln1", "ln2"))
    res_a = 0.0 if variant in ("no-attn-residual", "no-residual") else 1.0
    res_f = 0.0 if variant in ("no-ff-residual", "no-residual") else 1.0
    attn_mask = None if variant == "mask-not-passed" else mask

    def attn(t):
        return mha_forward(s, t, n_heads, attn_mask, variant=attn_variant, prefix="attn.")[0]

    def ff(t):
        return ff_forward(s, t, prefix="ff.")

    if variant == "norm-inside-residual":
        h = x + _ln(s, ln1, attn(x))
        return h + _ln(s, ln2, ff(h))
    if norm_first:
        h = res_a * x + attn(_ln(s, ln1, x))
        return res_f * h + ff(_ln(s, ln2, h))
    h = _ln(s, ln1, res_a * x + attn(x))
    return _ln(s, ln2, res_f * h + ff(h))


BLOCK_VARIANTS = {
    "no-attn-residual": "missing-residual",
    "no-ff-residual": "missing-residual",
    "no-residual": "missing-residual",
    "swapped": "norm-order-swapped",
    "ln-swapped": None,
    "ln1-twice": None,
    "ln2-twice": None,
    "mask-not-passed": None,
    "norm-inside-residual": None,
}


def ff_variants(state, x, activation):
    """(id, output) for the feed-forward mistakes; gelu-tanh last (only a gelu network has it)."""
    return [
        (v, np64(ff_forward(state, x, activation, v)))
        for v in ("missing-activation", "other-activation", "gelu-tanh", "activation-after-output")
    ]


def block_variants(state, x, n_heads, norm_first=True, mask=None):
    return [
        (id_ or variant, np64(block_forward(state, x, n_heads, norm_first, mask, variant)))
        for variant, id_ in BLOCK_VARIANTS.items()
        if mask is not None or variant != "mask-not-passed"
    ]


def mha_block_variants(state, x, n_heads, mask):
    """(id, output) of a right block around a MultiHeadAttention with one mistake."""
    out = []
    for variant, id_ in MHA_VARIANTS.items():
        if variant == "transposed-scores" or (variant.startswith("mask") and mask is None):
            continue
        r = block_forward(state, x, n_heads, True, mask, attn_variant=variant)
        out.append((id_, np64(r)))
    return out
