"""Known-wrong implementations of notebook 07's pieces, run when a probe BUILDS its cases.

As in notebook 05's (n05_transformer_block/variants.py): the probe computes the reference and these variants on the same inputs
and stores their outputs as (misconception id, output) pairs; the judge names the one a
student's answer matches, without running any of this code. Every function here also has a
right mode (variant=None), written independently of reference.py (float64, functional,
from a state dict under the notebook's attribute names), so the tests can hold the two against
each other.

This file holds BPE's, RMSNorm's and RoPE's; variants_model.py SwiGLU's, attention's and
TinyLlama's; variants_generate.py sampling's and generate_cached's; variants_regex_bpe.py
RegexBPETokenizer's.
"""

import torch

# ---------------------------------------------------------------- BPE


def _pairs(ids, overlapping=True):
    """{pair: count} in order of first occurrence; without `overlapping`, a run "aaa" holds
    (a, a) once (a pair is not counted again on the position it just used)."""
    counts: dict[tuple[int, int], int] = {}
    i = 0
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
    bpe-merges-singletons (a pair that occurs once still merged), bpe-characters-not-bytes
    (the characters' code points instead of the UTF-8 bytes), bpe-one-merge-more /
    bpe-one-merge-fewer (training stops one merge late or early)."""
    if variant == "bpe-characters-not-bytes":
        ids = [ord(c) for c in text]
    else:
        ids = list(text.encode("utf-8"))
    vocab_size += {"bpe-one-merge-more": 1, "bpe-one-merge-fewer": -1}.get(variant, 0)
    merges: list[tuple[int, int]] = []
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
    ("bpe-characters-not-bytes", "bpe-characters-not-bytes"),
    ("bpe-merge-count-off-by-one", "bpe-one-merge-more"),
    ("bpe-merge-count-off-by-one", "bpe-one-merge-fewer"),
)
# mistakes a training text need not show (the draw asks it of the others): merging singletons
# shows where training stops early (another case), code points where the text holds a character
# outside ASCII often enough to merge
NOT_DRAWN_FOR = {"bpe-merges-singletons", "bpe-characters-not-bytes"}


def merge_variants(text, vocab_size):
    """(id, merges as lists) for each training mistake."""
    return [
        (id_, [list(p) for p in bpe_train(text, vocab_size, variant)])
        for id_, variant in MERGE_VARIANTS
    ]


def bpe_encode(merges, s, variant=None):
    """Encode s with the merges (right: the earliest-learned pair present, repeatedly), or:
    reverse (the latest-learned first), left-to-right (scan once, merging any known pair at
    each position), most-frequent (the pair most frequent in s first, as training does),
    characters (from the code points, not the UTF-8 bytes)."""
    merges = [tuple(m) for m in merges]
    rank = {p: i for i, p in enumerate(merges)}
    ids = [ord(c) for c in s] if variant == "characters" else list(s.encode("utf-8"))
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
            pair = max(present, key=lambda p: rank[p])
        elif variant == "most-frequent":
            counts = _pairs(ids)
            pair = max(present, key=lambda p: counts[p])
        else:
            pair = min(present, key=lambda p: rank[p])
        ids = _replace(ids, pair, 256 + rank[pair])
    return ids


def encode_variants(merges, s):
    return [
        ("bpe-encode-order", bpe_encode(merges, s, v))
        for v in ("reverse", "left-to-right", "most-frequent")
    ] + [("bpe-characters-not-bytes", bpe_encode(merges, s, "characters"))]


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
    if variant == "rmsnorm-eps-ignored-1e-5":  # layer norm's usual eps, whatever is passed
        return x / torch.sqrt(ms + 1e-5) * w
    if variant == "rmsnorm-global-mean":  # one mean over the whole tensor
        return x / torch.sqrt(x.pow(2).mean() + eps) * w
    if variant == "rmsnorm-std":  # the standard deviation: the mean subtracted inside only
        return x / torch.sqrt(x.var(-1, keepdim=True, correction=0) + eps) * w
    if variant == "rmsnorm-std-unbiased":
        return x / torch.sqrt(x.var(-1, keepdim=True) + eps) * w
    if variant == "rmsnorm-no-mean":  # the sum of squares, not their mean (the L2 norm)
        return x / torch.sqrt(x.pow(2).sum(-1, keepdim=True) + eps) * w
    if variant == "rmsnorm-no-sqrt":  # divided by the mean square itself
        return x / (ms + eps) * w
    if variant == "rmsnorm-abs-mean":  # the mean absolute value, not the root mean square
        return x / (x.abs().mean(-1, keepdim=True) + eps) * w
    if variant == "rmsnorm-abs-mean-sqrt":
        return x / torch.sqrt(x.abs().mean(-1, keepdim=True) + eps) * w
    if variant == "rmsnorm-keepdim-missing":  # (..., T) means lined up with the features
        return x / torch.sqrt(x.pow(2).mean(-1) + eps) * w
    if variant == "rmsnorm-gain-added":
        return x / torch.sqrt(ms + eps) + w
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
    "rmsnorm-no-sqrt",
    "rmsnorm-abs-mean",
    "rmsnorm-abs-mean-sqrt",
    "rmsnorm-gain-added",
    "rmsnorm-keepdim-missing",
    "rmsnorm-eps-ignored-1e-5",
)
RMS_IDS = {
    "rmsnorm-std-unbiased": "rmsnorm-std",
    "rmsnorm-abs-mean-sqrt": "rmsnorm-abs-mean",
    "rmsnorm-eps-ignored-1e-5": "rmsnorm-eps-ignored",
}


def rms_norm_variants(x, weight, eps=1e-6):
    out = []
    for v in RMS_VARIANTS:
        if (v, eps) in (("rmsnorm-eps-ignored", 1e-6), ("rmsnorm-eps-ignored-1e-5", 1e-5)):
            continue
        if v == "rmsnorm-wrong-axis" and x.ndim < 2:
            continue
        if v == "rmsnorm-keepdim-missing" and x.ndim > 1 and len(set(x.shape)) > 1:
            continue  # the means do not broadcast against x: an error, not values
        out.append((RMS_IDS.get(v, v), rms_norm(x, weight, eps, v).numpy()))
    return out


# ---------------------------------------------------------------- RoPE


def rope(x, positions, base=10000.0, variant=None):
    """RoPE in float64 by complex numbers: pair i of position m times e^{i m theta_i}; or with
    one mistake: rope-half-split (GPT-NeoX's layout: pair i is (x[i], x[i + d/2])),
    rope-wrong-frequency (theta_i = base**(-i/d), or base**(-2i/d) with i running over d),
    rope-wrong-position (positions ignored: 0..T-1), rope-rotation-reversed (turned by -angle),
    rope-cos-sin-swapped (cos and sin exchanged: turned by pi/2 - angle), rope-pairs-concatenated
    (each pair turned right, then every first feature put before every second one)."""
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
    if variant == "rope-cos-sin-swapped":  # cos where sin belongs: a turn by pi/2 - angle
        angle = torch.pi / 2 - angle
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
    ("rope-pairs-concatenated", "rope-pairs-concatenated"),
    ("rope-cos-sin-swapped", "rope-cos-sin-swapped"),
)


def rope_variants(x, positions, base=10000.0):
    return [(id_, rope(x, positions, base, v).numpy()) for id_, v in ROPE_VARIANTS]
