"""Hidden tests of generate's top_p (nucleus sampling; see cases_generate.py): rows whose
nucleus is unambiguous, ties, and top_k with top_p together; and the toy bigram model
(harness/toy.py) both files sample from.
"""

import numpy as np
import torch

from autograder.course.n06_autoregressive_lm import variants as lmv
from autograder.course.n06_autoregressive_lm import variants_training as trv
from autograder.course.probes import Case
from autograder.judging import Judgement

# ---------------------------------------------------------------- the toy model (cases_generate.py too)


def _toy(table, block_size, training=True):
    toy = {"table": np.asarray(table, dtype=np.float32), "block_size": block_size}
    if not training:
        toy["training"] = False
    return {"$toy_lm": toy}


def _table(rng, V):
    return rng.normal(0.0, 1.5, size=(V, V))


NUCLEUS_MARGIN = 0.03  # top_p at least this far from every partial sum of the sorted probabilities


def _nucleus_top_p(rng, p, boundary):
    """A top_p whose nucleus has `boundary` tokens, at least NUCLEUS_MARGIN from every partial
    sum of p sorted (so float rounding never moves a token across the line); None if none."""
    sums = np.cumsum(np.sort(p)[::-1])
    low, high = sums[boundary - 2] + NUCLEUS_MARGIN, sums[boundary - 1] - NUCLEUS_MARGIN
    if high <= low:
        return None
    return float(np.round(rng.uniform(low, high), 4))


def _named_top_p(row, temperature, top_k, top_p):
    """[id, distribution] of each top_p mistake that changes the samples on this row."""
    right = trv.top_p_distribution(row, temperature, top_k, top_p)
    named = [
        [id_, trv.top_p_distribution(row, temperature, top_k, top_p, variant=key).tolist()]
        for key, id_ in trv.TOP_P_VARIANTS
    ]
    return right, [[i, q] for i, q in named if not np.allclose(q, right, atol=0.02)]


def _top_p_row(rng, V, temperature, top_k, differ_from_untempered):
    """A row of logits and a top_p with a nucleus of 3 tokens whose boundary token holds
    a large share (so dropping it shows), and, where asked, a nucleus that differs from the one
    the untempered probabilities give. Every mistake that shows differs from every other, so at
    most one is named (top_k with top_p: _top_k_top_p_case)."""
    for _ in range(20000):
        row = rng.permutation(np.linspace(-1.5, 1.5, V)) + rng.normal(0.0, 0.1, V)
        p = lmv.sampling_distribution(row, temperature, top_k)
        boundary = 3  # the set without its crossing token still holds two: never an argmax's
        top_p = _nucleus_top_p(rng, p, boundary)
        if top_p is None or np.sort(p)[::-1][boundary - 1] < 0.08:
            continue
        plain = lmv.sampling_distribution(row, 1.0, top_k)
        untempered = trv.top_p_distribution(row, 1.0, top_k, top_p)
        if differ_from_untempered and (
            min(abs(np.cumsum(np.sort(plain)[::-1]) - top_p)) < NUCLEUS_MARGIN
            or np.array_equal(
                untempered > 0, trv.top_p_distribution(row, temperature, top_k, top_p) > 0
            )
        ):
            continue
        right, named = _named_top_p(row, temperature, top_k, top_p)
        if any(max(q) > 0.999 for _, q in named):  # one token: no mistake looks like an argmax
            continue
        shown = {i for i, _ in named}
        if "top-p-excludes-boundary" not in shown or not trv.distinct(right, named, 0.03):
            continue
        return row, top_p
    raise RuntimeError("no row with a clear nucleus")  # never: one draw in a few hundred fits


TIE_V = 32  # torch's unstable sort keeps ties in order of id only up to 16 entries (CPU)
TIE_B = 4000


def _tied_row(rng):
    """A row of TIE_V logits: three clear favourites, then a group of five tokens tied at the
    edge of the top_p set (top_p needs exactly one of them), then a long tail. Drawn until
    torch's sort without stable=True, on the batch generate sees, keeps another tied token
    than the lowest id (as it does on most draws), so the mistake shows."""
    for _ in range(200):
        values = np.concatenate(
            [np.sort(rng.uniform(2.0, 3.0, 3))[::-1], np.full(5, 1.2), rng.uniform(-3, -1, 24)]
        )
        row = rng.permutation(values)
        p = lmv.sampling_distribution(row, 1.0, None)
        tied = sorted(int(i) for i in np.flatnonzero(row == 1.2))
        top3 = np.sort(p)[::-1][:3].sum()
        top_p = float(np.round(top3 + p[tied[0]] * rng.uniform(0.3, 0.7), 4))
        probs = torch.from_numpy(p).float().expand(TIE_B, -1).contiguous()
        order = probs.sort(dim=-1, descending=True).indices[0, :4].tolist()
        if order[3] != tied[0]:
            return row, top_p, tied
    raise RuntimeError("no tied row that an unstable sort reorders")


def _top_p_case(rng, V, name, points, seed, temperature=1.0, top_k=None, ties=False, top_p=None):
    B = TIE_B if ties else 4000
    if ties:
        row, top_p, tied = _tied_row(rng)
        V = TIE_V
    elif top_p is None:
        row, top_p = _top_p_row(
            rng, V, temperature, top_k, differ_from_untempered=temperature != 1.0
        )
    else:
        row = rng.permutation(np.linspace(-1.5, 1.5, V))
    start = int(rng.integers(0, V))
    table = _table(rng, V)
    table[start] = row
    idx = torch.full((B, 1), start, dtype=torch.long)
    kwargs = {"generator": {"$generator": seed}, "top_p": top_p}
    shown = [f"top_p={top_p:g}"]
    if temperature != 1.0:
        kwargs["temperature"] = temperature
        shown.insert(0, f"temperature={temperature:g}")
    if top_k is not None:
        kwargs["top_k"] = top_k
        shown.insert(0, f"top_k={top_k}")
    right, named = _named_top_p(row, temperature, top_k, top_p)
    if ties:
        for j in tied[1:]:  # another tied token kept in place of the lowest id
            swapped = right.copy()
            swapped[j], swapped[tied[0]] = right[tied[0]], 0.0
            named.append(["top-p-ties-unstable", swapped.tolist()])
    what = f"generate(model, idx ({B}, 1), max_new_tokens=1, {', '.join(shown)})"
    judge = Judgement(
        "lm_judges.generate_distribution",
        {
            "what": what,
            "samples": B,
            "vocab_size": V,
            "p": right,
            "p_multiplied": trv.top_p_distribution(row * temperature**2, temperature, top_k, top_p),
            "p_plain": lmv.sampling_distribution(row, temperature, top_k),
            "temperature": temperature,
            "top_k": top_k,
            "top_p": top_p,
            "named": named,
        },
    )
    return Case(
        "generate",
        name,
        points,
        [{"op": "call", "args": [_toy(table, 8), idx, 1], "kwargs": kwargs}],
        judge,
    )


def _sizes(p, top_p):
    """How many of the most probable tokens the nucleus of p keeps at top_p."""
    before = np.cumsum(np.sort(p)[::-1]) - np.sort(p)[::-1]
    return int(max(1, (before < top_p).sum()))


def _shaped_row(rng, V, top_k, shape, top_p=None):
    """A row and top_p where the top_p set of the whole distribution lies inside the top k and
    holds more than the top_p set of the top k alone ("inside"), or holds more than k tokens
    ("beyond"); top_p at least NUCLEUS_MARGIN from every partial sum, before and after top_k."""
    for _ in range(5000):
        spread = rng.uniform(0.3, 1.5)
        row = rng.permutation(np.linspace(-spread, spread, V)) + rng.normal(0.0, 0.2, V)
        chosen = top_p if top_p is not None else float(np.round(rng.uniform(0.3, 0.95), 4))
        whole = lmv.sampling_distribution(row, 1.0, None)
        kept = lmv.sampling_distribution(row, 1.0, top_k)
        sums = np.concatenate([np.cumsum(np.sort(whole)[::-1]), np.cumsum(np.sort(kept)[::-1])])
        if np.abs(sums - chosen).min() < NUCLEUS_MARGIN:
            continue
        r, m = _sizes(kept, chosen), _sizes(whole, chosen)
        if (shape == "inside" and r < m < top_k) or (shape == "beyond" and m > top_k):
            return row, chosen
    raise RuntimeError("no row of that shape")  # never: about one draw in twenty fits


def _parts_named(row, top_k, top_p):
    right, named = _named_top_p(row, 1.0, top_k, top_p)
    for id_, q in (
        ("top-k-ignored", trv.top_p_distribution(row, 1.0, None, top_p)),
        ("top-p-ignored", lmv.sampling_distribution(row, 1.0, top_k)),
    ):
        if not np.allclose(q, right, atol=0.02):
            named.append([id_, q.tolist()])
    return right, named


def _separated(parts):
    """Each mistake differs from the right answer on some part, and any two from each other;
    on every part, each mistake is the right answer there or clearly not (0.05)."""
    ids = sorted({i for _, named in parts for i, _ in named})

    def dist(id_, right, named):
        return next((np.asarray(q) for i, q in named if i == id_), np.asarray(right))

    for right, named in parts:
        for _, q in named:
            if np.abs(np.asarray(q) - right).max() < 0.05:
                return False
    for a in ["right", *ids]:
        for b in ids:
            if a != b and all(
                np.abs(
                    (right if a == "right" else dist(a, right, named)) - dist(b, right, named)
                ).max()
                < 0.05
                for right, named in parts
            ):
                return False
    return True


def separating_rows(rng, V, top_k, tries=200):
    """Two rows of logits, the top_p set of the first inside the top k and of the second beyond
    it, drawn until the top_k/top_p mistakes all keep other sets: [(row, top_p)] and, per row,
    (the right kept set, {mistake: its kept set}). Notebook 07's generate_cached uses them too."""
    for _ in range(tries):
        rows = [_shaped_row(rng, V, top_k, shape) for shape in ("inside", "beyond")]
        parts = [_parts_named(row, top_k, top_p) for row, top_p in rows]
        if _separated(parts):
            return rows, parts
    raise RuntimeError("no pair of rows separates the top_k/top_p mistakes")


def _top_k_top_p_case(rng, V, name, points, seed, top_k=4):
    """top_k then top_p, in two calls (4,000 samples each): in the first the top_p set of the
    whole distribution lies inside the top k, in the second it holds more. Counting the set
    before top_k then agrees with ignoring top_k in the first and with ignoring top_p in the
    second: only the two calls together tell the three apart."""
    B = 4000
    rows, parts = separating_rows(rng, V, top_k)
    requests, judged, shown = [], [], []
    for i, ((row, top_p), (right, named)) in enumerate(zip(rows, parts, strict=True)):
        start = int(rng.integers(0, V))
        table = _table(rng, V)
        table[start] = row
        kwargs = {"generator": {"$generator": seed + i}, "top_k": top_k, "top_p": top_p}
        idx = torch.full((B, 1), start, dtype=torch.long)
        requests.append({"op": "call", "args": [_toy(table, 8), idx, 1], "kwargs": kwargs})
        judged.append({"start": start, "p": right, "named": named})
        shown.append(f"top_p={top_p:g}")
    what = f"generate(model, idx ({B}, 1), max_new_tokens=1, top_k={top_k}, " + " then ".join(shown)
    judge = Judgement(
        "lm_judges.generate_distribution_parts",
        {"what": what + ")", "samples": B, "vocab_size": V, "parts": judged},
    )
    return Case("generate", name, points, requests, judge)


def top_p_cases(rng, V, seed):
    return [
        _top_p_case(
            rng, V, "top_p keeps the smallest set of likeliest tokens reaching top_p", 1.0, seed
        ),
        _top_p_case(
            rng,
            V,
            "top_p applies to the probabilities after the temperature",
            0.75,
            seed + 1,
            temperature=0.5,
        ),
        _top_k_top_p_case(rng, V, "top_p after top_k, on what top_k keeps", 0.5, seed + 2),
        _top_p_case(
            rng,
            V,
            f"a tie at the boundary keeps the token of lower id ({TIE_V} tokens)",
            0.5,
            seed + 3,
            ties=True,
        ),
        _top_p_case(rng, V, "top_p=1.0 changes nothing", 0.25, seed + 4, top_p=1.0),
    ]
