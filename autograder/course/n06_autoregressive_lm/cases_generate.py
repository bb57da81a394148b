"""Hidden tests of notebook 06's generate (see cases.py): run against a fixed bigram model
(harness/toy.py), so that its sampling distribution is known exactly and can be tested
statistically; greedy decoding, top_k, reproducibility and the mode. top_p is in cases_top_p.py.
"""

import numpy as np
import torch

from autograder.course.n06_autoregressive_lm import variants as lmv
from autograder.course.n06_autoregressive_lm import variants_training as trv
from autograder.course.n06_autoregressive_lm.cases_top_p import _table, _toy, top_p_cases
from autograder.course.probes import Case
from autograder.course.torch_shared.tools import torch_probe
from autograder.judging import Judgement


@torch_probe("generate")
def generate_cases(rng):
    V = 6
    cases = []
    table = _table(rng, V)
    # the most likely token after t is never t itself (a derangement): greedy chains move at
    # every step, so a context cut to the OLDEST tokens (which stands still) shows
    after = rng.permutation(V)
    while np.any(after == np.arange(V)):
        after = rng.permutation(V)
    table[np.arange(V), after] = table.max(axis=1) + 1.0 + rng.random(V)
    seed = int(rng.integers(2**31))

    idx = torch.from_numpy(rng.integers(0, V, size=(3, 2))).long()
    what = "generate(model, idx of shape (3, 2), max_new_tokens=4, generator=g)"

    judge_shape = _tokens_judge(
        "generated_tokens", what, (3, 6), V, idx.numpy(), check_unchanged=True
    )
    cases.append(
        Case(
            "generate",
            "shape (B, T0 + max_new_tokens), the prompt kept, valid ids",
            1.0,
            [
                {
                    "op": "call",
                    "args": [_toy(table, 8), idx, 4],
                    "kwargs": {"generator": {"$generator": seed}},
                }
            ],
            judge_shape,
        )
    )

    greedy_idx = torch.from_numpy(rng.integers(0, V, size=(2, 2))).long()
    chain = _greedy(table, greedy_idx.numpy(), 8, 3)
    oldest = _greedy(table, greedy_idx.numpy(), 8, 3, oldest=True)
    what2 = "generate(model with block_size 3, idx (2, 2), max_new_tokens=8, top_k=1)"
    judge_greedy = _tokens_judge(
        "generate_greedy",
        what2,
        (2, 10),
        V,
        greedy_idx.numpy(),
        want=np.array(chain),
        most_likely=np.argmax(table, axis=1),
        oldest=np.array(oldest),
        first=np.array(_greedy(table, greedy_idx.numpy(), 8, 3, first=True)),
    )

    cases.append(
        Case(
            "generate",
            "top_k=1 is greedy, with the context cropped to block_size",
            1.25,
            [
                {
                    "op": "call",
                    "args": [_toy(table, 3), greedy_idx, 8],
                    "kwargs": {"top_k": 1, "generator": {"$generator": seed}},
                }
            ],
            judge_greedy,
        )
    )

    long_idx = torch.from_numpy(rng.integers(0, V, size=(2, 6))).long()
    what3 = "generate(model with block_size 4, idx (2, 6), max_new_tokens=5, top_k=1)"
    judge_crop = _tokens_judge(
        "generate_greedy",
        what3,
        (2, 11),
        V,
        long_idx.numpy(),
        want=np.array(_greedy(table, long_idx.numpy(), 5, 4)),
        most_likely=np.argmax(table, axis=1),
        oldest=np.array(_greedy(table, long_idx.numpy(), 5, 4, oldest=True)),
        first=np.array(_greedy(table, long_idx.numpy(), 5, 4, first=True)),
    )

    cases.append(
        Case(
            "generate",
            "a prompt longer than block_size is cropped",
            1.0,
            [
                {
                    "op": "call",
                    "args": [_toy(table, 4), long_idx, 5],
                    "kwargs": {"top_k": 1, "generator": {"$generator": seed + 1}},
                }
            ],
            judge_crop,
        )
    )

    B = 300
    topk_idx = torch.from_numpy(rng.integers(0, V, size=(B, 1))).long()
    top2 = np.argsort(table, axis=1)[:, -2:]
    what4 = f"generate(model, idx ({B}, 1), max_new_tokens=3, top_k=2)"

    judge_topk = _tokens_judge("generate_top_k", what4, (B, 4), V, topk_idx.numpy(), top=top2)
    cases.append(
        Case(
            "generate",
            "top_k=2 never samples outside the two most likely tokens",
            1.0,
            [
                {
                    "op": "call",
                    "args": [_toy(table, 8), topk_idx, 3],
                    "kwargs": {"top_k": 2, "generator": {"$generator": seed + 2}},
                }
            ],
            judge_topk,
        )
    )

    for temperature, top_k, pts in (
        (1.0, None, 0.75),
        (0.5, None, 1.0),
        (2.0, None, 1.0),
        (1.0, 3, 0.5),
    ):
        cases.append(_distribution_case(rng, V, temperature, top_k, pts, seed + 3))
    cases.append(reproducible_case(rng, V))
    # drawn after the cases above, which keep their inputs
    cases.append(_distribution_case(rng, V, 0.5, 3, 0.5, seed + 4))
    cases.append(mode_case(rng, V))
    return cases + top_p_cases(rng, V, seed + 5)


def _greedy(table, prompt, steps, block_size, oldest=False, first=False):
    """The greedy continuation of each row under the bigram toy model; with `oldest`, as a
    generate that crops the context to its FIRST block_size tokens computes it; with `first`,
    as one that predicts from the first position of the (right) context."""
    rows = [list(map(int, row)) for row in prompt]
    for row in rows:
        for _ in range(steps):
            context = row[:block_size] if oldest else row[-block_size:]
            row.append(int(np.argmax(table[context[0] if first else context[-1]])))
    return rows


def _tokens_judge(name, what, shape, vocab_size, prompt, **more):
    return Judgement(
        f"lm_judges.{name}",
        {"what": what, "shape": list(shape), "vocab_size": vocab_size, "prompt": prompt, **more},
    )


def _named_top_k(row, temperature, top_k):
    """[id, distribution] of top_k ignored and top_k keeping k - 1 tokens, where they differ
    from the right distribution and from each other (else none is named)."""
    if top_k is None:
        return []
    right = lmv.sampling_distribution(row, temperature, top_k)
    named = [
        ["top-k-ignored", lmv.sampling_distribution(row, temperature, None).tolist()],
        [
            "top-k-off-by-one",
            trv.top_p_distribution(row, temperature, top_k, None, "top-k-off-by-one").tolist(),
        ],
    ]
    return named if trv.distinct(right, named, margin=0.03) else []


def _distribution_case(rng, V, temperature, top_k, points, seed):
    """Sample one token B times from a fixed row of logits; Pearson's test against the truth."""
    B = 4000
    start = int(rng.integers(0, V))
    table = _table(rng, V)
    table[start] = rng.permutation(np.linspace(-1.5, 1.5, V))
    row = table[start]
    idx = torch.full((B, 1), start, dtype=torch.long)
    kwargs = {"generator": {"$generator": seed}}
    label = []
    if temperature != 1.0:
        kwargs["temperature"] = temperature
        label.append(f"temperature={temperature:g}")
    if top_k is not None:
        kwargs["top_k"] = top_k
        label.append(f"top_k={top_k}")
    what = f"generate(model, idx ({B}, 1), max_new_tokens=1{''.join(', ' + s for s in label)})"
    name = {
        (1.0, None): "samples from softmax(logits)",
        (0.5, None): "temperature=0.5 sharpens the distribution",
        (2.0, None): "temperature=2 flattens the distribution",
    }.get((temperature, top_k), f"top_k={top_k} samples from the softmax of the {top_k} largest")
    if temperature != 1.0 and top_k is not None:
        name = f"temperature={temperature:g} with top_k={top_k}: the temperature still applies"

    judge = Judgement(
        "lm_judges.generate_distribution",
        {
            "what": what,
            "samples": B,
            "vocab_size": V,
            "p": lmv.sampling_distribution(row, temperature, top_k),
            "p_multiplied": lmv.temperature_multiplied_distribution(row, temperature, top_k),
            "p_plain": lmv.sampling_distribution(row, 1.0, top_k),  # the temperature ignored
            "temperature": temperature,
            "top_k": top_k,
            "named": _named_top_k(row, temperature, top_k),
        },
    )

    return Case(
        "generate",
        name,
        points,
        [{"op": "call", "args": [_toy(table, 8), idx, 1], "kwargs": kwargs}],
        judge,
    )


def reproducible_case(rng, V):
    """Two calls with generators seeded alike must give the same tokens, and one seeded
    differently other tokens. A false failure of the second needs all B * steps draws of two
    independent streams to coincide: each coincides with probability at most c = the largest
    sum of squared probabilities over the table's rows, so at most c ** (B * steps), kept
    below 1e-20 here (c < 0.9 in any case; typically about 0.4)."""
    B, T0, steps = 16, 2, 6
    table = _table(rng, V)
    probs = np.exp(table - table.max(axis=1, keepdims=True))
    probs /= probs.sum(axis=1, keepdims=True)
    while float((probs**2).sum(axis=1).max()) ** (B * steps) > 1e-20:  # rare: a peaked row
        table = _table(rng, V)
        probs = np.exp(table - table.max(axis=1, keepdims=True))
        probs /= probs.sum(axis=1, keepdims=True)
    idx = torch.from_numpy(rng.integers(0, V, size=(B, T0))).long()
    seed = int(rng.integers(2**31))
    calls = [
        {
            "op": "call",
            "args": [_toy(table, 8), idx, steps],
            "kwargs": {"generator": {"$generator": s}},
        }
        for s in (seed, seed, seed + 1)
    ]
    what = f"generate(model, idx of shape ({B}, {T0}), max_new_tokens={steps}, generator=g)"
    judge = Judgement(
        "lm_judges.generate_reproducible",
        {
            "what": what,
            "shape": [B, T0 + steps],
            "vocab_size": V,
            "greedy": np.array(_greedy(table, idx.numpy(), steps, 8)),
        },
    )
    return Case(
        "generate", "the same seed gives the same samples, another seed others", 0.5, calls, judge
    )


# ---------------------------------------------------------------- generate: the mode (top_p: cases_top_p.py)


def mode_case(rng, V):
    """generate leaves the model in the mode it found: eval stays eval, train stays train."""
    idx = torch.from_numpy(rng.integers(0, V, size=(2, 2))).long()
    table = _table(rng, V)
    what = "generate(model in {} mode, idx (2, 2), max_new_tokens=3)"
    return Case(
        "generate",
        "the model is left in the mode generate found it in (eval or train)",
        0.5,
        [
            {"op": "call", "args": [_toy(table, 8, training=False), idx, 3]},
            {"op": "call", "args": [_toy(table, 8, training=True), idx, 3]},
        ],
        Judgement(
            "lm_judges.generate_mode",
            {"what": what, "shape": [2, 5], "vocab_size": V, "modes": [False, True]},
        ),
    )
