"""Hidden tests of notebook 07's generate_cached (see cases.py): run against a toy model
whose logits depend on the absolute position (harness/toy_cached.py), so that tokens fed at the
wrong positions show in the tokens; ties, reproducibility and the sampled distribution.
"""

import numpy as np
import torch

from autograder.course.n06_autoregressive_lm import variants_training as trv
from autograder.course.n07_modern_lm.variants_generate import cached_greedy, sampling_distribution
from autograder.course.probes import Case
from autograder.course.torch_shared.tools import torch_probe
from autograder.judging import Judgement

TRIES = 200  # redraws until every mistake changes the answer (a draw rarely needs more than 5)


# ---------------------------------------------------------------- generate_cached

TOY_V, TOY_BLOCK = 6, 12


def _toy(rng):
    table = rng.normal(0.0, 1.5, size=(TOY_V, TOY_V))
    positions = rng.normal(0.0, 1.5, size=(TOY_BLOCK, TOY_V))
    return table, positions


def _toy_value(table, positions):
    return {
        "$toy_cached_lm": {
            "table": np.asarray(table, dtype=np.float32),
            "positions": np.asarray(positions, dtype=np.float32),
            "block_size": TOY_BLOCK,
        }
    }


CACHED_VARIANTS = (
    "cache-positions-restart",
    "cache-not-updated",
    "sampled-from-first-position",
    "cache-last-token-fed-again",
)


@torch_probe("generate_cached")
def generate_cached_cases(rng):
    cases = []
    for _ in range(TRIES):  # a toy model under which each cache mistake picks other tokens
        table, positions = _toy(rng)
        prompt = rng.integers(0, TOY_V, size=(2, 3))
        steps = 7
        want = cached_greedy(table, positions, prompt, steps)
        variants = [(v, cached_greedy(table, positions, prompt, steps, v)) for v in CACHED_VARIANTS]
        chains = [want] + [chain for _, chain in variants]
        if all(a != b for i, a in enumerate(chains) for b in chains[i + 1 :]):
            break
    seed = int(rng.integers(2**31))
    idx = torch.from_numpy(prompt).long()
    what = f"generate_cached(model, idx (2, 3), {steps}, top_k=1)"
    cases.append(
        Case(
            "generate_cached",
            "top_k=1 is greedy: each token at its position through the cache",
            1.5,
            [
                {
                    "op": "call",
                    "args": [_toy_value(table, positions), idx, steps],
                    "kwargs": {"top_k": 1, "generator": {"$generator": seed}},
                }
            ],
            Judgement(
                "modern_lm.cached_greedy",
                {
                    "what": what,
                    "shape": [2, 3 + steps],
                    "vocab_size": TOY_V,
                    "prompt": prompt,
                    "want": np.array(want),
                    "variants": [(i, np.array(c)) for i, c in variants],
                },
            ),
        )
    )
    small = torch.from_numpy(rng.integers(0, TOY_V, size=(3, 2))).long()
    cases.append(
        Case(
            "generate_cached",
            "shape (B, T0 + max_new_tokens), the prompt kept, valid ids",
            0.5,
            [
                {
                    "op": "call",
                    "args": [_toy_value(table, positions), small, 5],
                    "kwargs": {"generator": {"$generator": seed}},
                },
                {
                    "op": "call",
                    "args": [_toy_value(table, positions), small, 0],
                    "kwargs": {"generator": {"$generator": seed}},
                },
            ],
            Judgement(
                "modern_lm.cached_tokens",
                {
                    "what": "generate_cached(model, idx (3, 2), 5, generator=g)",
                    "shape": [3, 7],
                    "vocab_size": TOY_V,
                    "prompt": small.numpy(),
                    "also": ["generate_cached(model, idx (3, 2), 0, generator=g)"],
                    "also_shape": [3, 2],
                },
            ),
        )
    )
    for label, kwargs, variant_ids in (
        (
            "temperature=0.7 and top_p=0.8",
            {"temperature": 0.7, "top_p": 0.8},
            ("temperature-multiplied", "top-p-ignored", "top-p-excludes-boundary"),
        ),
        ("top_k=3", {"top_k": 3}, ("top-k-ignored", "top-k-off-by-one")),
        (
            "top_p=0.6, the token that reaches it kept",
            {"top_p": 0.6},
            ("top-p-excludes-boundary", "top-p-ignored"),
        ),
    ):
        cases.append(_distribution_case(rng, label, kwargs, variant_ids, seed))
    cases.append(_top_k_then_top_p_case(rng, seed))
    cases.append(_tie_case(rng, seed))
    cases.append(_reproducible_case(rng, table, positions))
    full = torch.from_numpy(rng.integers(0, TOY_V, size=(1, 4))).long()
    cases.append(
        Case(
            "generate_cached",
            "a request that fills block_size exactly fits",
            0.5,
            [
                {
                    "op": "call",
                    "args": [_toy_value(table, positions), full, TOY_BLOCK - 4],
                    "kwargs": {"generator": {"$generator": seed + 2}},
                }
            ],
            Judgement(
                "modern_lm.cached_tokens",
                {
                    "what": f"generate_cached(model with block_size {TOY_BLOCK}, idx (1, 4), "
                    f"{TOY_BLOCK - 4}, generator=g)",
                    "shape": [1, TOY_BLOCK],
                    "vocab_size": TOY_V,
                    "prompt": full.numpy(),
                    "fills_block": TOY_BLOCK,
                },
            ),
        )
    )
    too_long = torch.from_numpy(rng.integers(0, TOY_V, size=(1, 4))).long()
    cases.append(
        Case(
            "generate_cached",
            "more tokens than block_size raise ValueError",
            0.5,
            [{"op": "call", "args": [_toy_value(table, positions), too_long, TOY_BLOCK - 3]}],
            Judgement(
                "modern_lm.raises_value_error",
                {
                    "what": f"generate_cached(model with block_size {TOY_BLOCK}, idx (1, 4), {TOY_BLOCK - 3})",
                    "because": "4 + max_new_tokens positions do not fit in block_size",
                    "named": ["block-size-not-checked"],
                },
            ),
        )
    )
    return cases


def _tie_case(rng, seed):
    """top_p with five tokens tied at the edge of the set, on 32 tokens: the lowest id of them
    is kept. torch's sort without stable=True reorders ties beyond 16 entries (the row is drawn
    until it does, as notebook 06's tie case is)."""
    from autograder.course.n06_autoregressive_lm.cases_top_p import TIE_B, TIE_V, _tied_row

    row, top_p, tied = _tied_row(rng)
    start = int(rng.integers(0, TIE_V))
    table = rng.normal(0.0, 1.5, size=(TIE_V, TIE_V))
    table[start] = row
    positions = np.zeros((TOY_BLOCK, TIE_V))
    p = trv.top_p_distribution(row, 1.0, None, top_p)
    variants = []
    for j in tied[1:]:  # another tied token kept in place of the lowest id
        q = p.copy()
        q[j], q[tied[0]] = p[tied[0]], 0.0
        variants.append(("top-p-ties-unstable", q))
    prompt = np.tile(np.array([[int(rng.integers(0, TIE_V)), start]]), (TIE_B, 1))
    return Case(
        "generate_cached",
        f"a tie at the edge of the top_p set keeps the token of lower id ({TIE_V} tokens)",
        0.5,
        [
            {
                "op": "call",
                "args": [_toy_value(table, positions), torch.from_numpy(prompt).long(), 1],
                "kwargs": {"top_p": top_p, "generator": {"$generator": seed + 3}},
            }
        ],
        Judgement(
            "modern_lm.cached_distribution",
            {
                "what": f"generate_cached(model, idx ({TIE_B}, 2), 1, top_p={top_p:g})",
                "samples": TIE_B,
                "vocab_size": TIE_V,
                "prompt": prompt[:1],
                "p": p,
                "variants": variants,
            },
        ),
    )


def _reproducible_case(rng, table, positions):
    """Generators seeded alike give the same tokens, seeded differently others (notebook 06's
    judge; its bound on a false failure holds for any table: see reproducible_case there)."""
    B, T0, steps = 16, 2, 6
    flat = np.zeros_like(table)  # every next token equally likely: 6 ** -96 for a coincidence
    idx = torch.from_numpy(rng.integers(0, TOY_V, size=(B, T0))).long()
    seed = int(rng.integers(2**31))
    return Case(
        "generate_cached",
        "the same seed gives the same samples, another seed others",
        0.5,
        [
            {
                "op": "call",
                "args": [_toy_value(flat, np.zeros_like(positions)), idx, steps],
                "kwargs": {"generator": {"$generator": s}},
            }
            for s in (seed, seed, seed + 1)
        ],
        Judgement(
            "lm_judges.generate_reproducible",
            {
                "what": f"generate_cached(model, idx ({B}, {T0}), {steps}, generator=g)",
                "shape": [B, T0 + steps],
                "vocab_size": TOY_V,
                # every row of the flat table ties: an argmax takes the first, token 0
                "greedy": np.concatenate(
                    [idx.numpy(), np.zeros((B, steps), dtype=np.int64)], axis=1
                ),
            },
        ),
    )


SAMPLES = 3000


def _top_k_then_top_p_case(rng, seed, top_k=4):
    """top_k then top_p in two calls, as notebook 06's case does (cases_top_p.py there): in the
    first the top_p set of the whole distribution lies inside the top k, in the second it holds
    more than k tokens. Counting the set before top_k agrees with ignoring top_k in the first
    and with ignoring top_p in the second, so only both calls together name it. The prompt is
    one token, whose logits are table[start] + positions[0]."""
    from autograder.course.n06_autoregressive_lm.cases_top_p import separating_rows

    rows, parts = separating_rows(rng, TOY_V, top_k, TRIES)
    requests, judged, shown = [], [], []
    for i, ((row, top_p), (right, named)) in enumerate(zip(rows, parts, strict=True)):
        table, positions = _toy(rng)
        start = int(rng.integers(0, TOY_V))
        table[start] = row - positions[0]
        idx = torch.full((PARTS_SAMPLES, 1), start, dtype=torch.long)
        kwargs = {"top_k": top_k, "top_p": top_p, "generator": {"$generator": seed + 4 + i}}
        requests.append(
            {"op": "call", "args": [_toy_value(table, positions), idx, 1], "kwargs": kwargs}
        )
        judged.append({"start": start, "p": right, "named": named})
        shown.append(f"top_p={top_p:g}")
    what = f"generate_cached(model, idx ({PARTS_SAMPLES}, 1), 1, top_k={top_k}, " + " then ".join(
        shown
    )
    return Case(
        "generate_cached",
        "samples as notebook 06 does: top_k=4, then top_p on what top_k keeps (two calls)",
        0.5,
        requests,
        Judgement(
            "lm_judges.generate_distribution_parts",
            {"what": what + ")", "samples": PARTS_SAMPLES, "vocab_size": TOY_V, "parts": judged},
        ),
    )


PARTS_SAMPLES = 4000


def _distribution_case(rng, label, kwargs, variant_ids, seed):
    """One token sampled SAMPLES times after a 2-token prompt: its logits are
    table[last] + positions[1]; spread so that top-k and top-p cut inside the distribution."""
    table, positions = _toy(rng)
    start = int(rng.integers(0, TOY_V))
    # distinct probabilities, none above 0.4: top-p at 0.6 or 0.8 keeps 3 or 4 tokens and the
    # boundary mistake one fewer, so chi-square tells them apart
    row = rng.permutation(np.linspace(-0.8, 0.8, TOY_V))
    table[start] = row - positions[1]
    prompt = np.tile(np.array([[int(rng.integers(0, TOY_V)), start]]), (SAMPLES, 1))
    p = sampling_distribution(row, **kwargs)
    variants = [(v, sampling_distribution(row, **kwargs, variant=v)) for v in variant_ids]
    variants = [(v, q) for v, q in variants if not np.allclose(q, p, atol=0.02)]
    if not trv.distinct(p, variants, margin=0.03):  # two mistakes alike here: name neither
        variants = []
    requests = [
        {
            "op": "call",
            "args": [_toy_value(table, positions), torch.from_numpy(prompt).long(), 1],
            "kwargs": {**kwargs, "generator": {"$generator": seed + 1}},
        }
    ]
    if "top_p" not in kwargs:  # top_p alone, a few rows: says whether the arguments are in order
        requests.append(
            {
                "op": "call",
                "args": [_toy_value(table, positions), torch.from_numpy(prompt[:4]).long(), 1],
                "kwargs": {"top_p": 0.9, "generator": {"$generator": seed + 2}},
            }
        )
    return Case(
        "generate_cached",
        f"samples as notebook 06 does: {label}",
        0.5,
        requests,
        Judgement(
            "modern_lm.cached_distribution",
            {
                "what": f"generate_cached(model, idx ({SAMPLES}, 2), 1, "
                + ", ".join(f"{k}={v:g}" for k, v in kwargs.items())
                + ")",
                "samples": SAMPLES,
                "vocab_size": TOY_V,
                "prompt": prompt[:1],
                "p": p,
                "variants": variants,
                "argmax_named": "top_p" not in kwargs,
            },
        ),
    )
