"""Hidden tests of notebook 06 (an auto-regressive language model, PyTorch).

Data preparation (make_examples, CharTokenizer, get_batch) is judged by properties that any
correct implementation has (real windows of the data, y shifted within the same window), not by
the reference's random draws. GPT is judged on its contract (shapes, ValueError, block_size),
causality under a perturbation of future tokens, gradients, and a short training run in the
harness. generate runs against a fixed bigram model (harness/toy.py) so that its sampling
distribution is known exactly and can be tested statistically.

The cases are built here; the judges (judges*.py, registered as "lm_judges.<name>" and
"training_judges.<name>") decide from plain data:
what the reference returns, the variants' outputs and the distributions sampling should follow
are all worked out now, and the training run's loss is computed by the judge from the logits
the trained model returns on inputs chosen here.

This file holds the data pieces' probes (make_examples, CharTokenizer, get_batch); the others
are in its siblings: cases_gpt.py (GPT), cases_values.py (the GPT's values, lm_loss),
cases_generate.py and cases_top_p.py (generate), cases_training.py (lr_at,
configure_optimizer, train_step).
"""

import numpy as np
import torch

from autograder.course.n06_autoregressive_lm import (  # noqa: F401 (their probes)
    cases_generate,
    cases_gpt,
    cases_top_p,
    cases_training,
    cases_values,
)
from autograder.course.probes import Case
from autograder.course.torch_shared.tools import torch_probe
from autograder.judging import Judgement

# ---------------------------------------------------------------- make_examples


def _make_examples_variants(tokens, c):
    n = len(tokens)
    right = [(list(tokens[max(0, t - c) : t]), tokens[t]) for t in range(1, n)]
    return right, [
        (
            "targets-not-shifted",
            [(list(tokens[max(0, t - c + 1) : t + 1]), tokens[t]) for t in range(1, n)],
            "each label sits inside its own context: the label is the token AFTER the context",
        ),
        (
            "targets-not-shifted",
            [(list(tokens[max(0, t - c) : t]), tokens[t - 1]) for t in range(1, n)],
            "each label is the last token of its context: the label is the token AFTER it",
        ),
        (
            None,
            [(list(tokens[:t][:c]), tokens[t]) for t in range(1, n)],
            "each context keeps the FIRST context_size tokens of the prefix; keep the latest ones",
        ),
        (
            None,
            [(list(tokens[max(0, t - c) : t]), tokens[t]) for t in range(0, n)],
            "there is an extra example with an empty context; start with the first token as "
            "the context of the second",
        ),
        (
            None,
            [(list(tokens[max(0, t - c) : t]), tokens[t]) for t in range(1, n - 1)],
            "the last example (whose label is the last token) is missing",
        ),
        (
            None,
            [(list(tokens[max(0, t - c - 1) : t]), tokens[t]) for t in range(1, n)],
            "the contexts hold context_size + 1 tokens",
        ),
        (
            None,
            [(list(tokens[max(0, t - c + 1) : t]), tokens[t]) for t in range(1, n)],
            "the contexts hold only context_size - 1 tokens",
        ),
    ]


def _make_examples_case(name, points, tokens, c):
    right, variants = _make_examples_variants(tokens, c)
    judge = Judgement(
        "lm_judges.make_examples",
        {
            "what": f"make_examples(tokens, context_size={c}) with {len(tokens)} tokens",
            "tokens": list(tokens),
            "context_size": c,
            "right": right,
            "variants": [list(v) for v in variants],
        },
    )

    return Case("make_examples", name, points, [{"op": "call", "args": [list(tokens), c]}], judge)


@torch_probe("make_examples")
def make_examples_cases(rng):
    words = "the cat sat on the mat and the dog ate the hat".split()
    start = int(rng.integers(0, 3))
    sentence = words[start : start + int(rng.integers(7, 10))]
    ints = [int(t) for t in rng.integers(0, 20, size=int(rng.integers(10, 15)))]
    c = int(rng.integers(3, 5))
    return [
        _make_examples_case("words, context_size=3", 1.0, sentence, 3),
        _make_examples_case("token ids, context_size=3 or 4", 1.0, ints, c),
        _make_examples_case("context_size longer than the list", 0.5, ints[:5], 8),
        _make_examples_case("context_size=1: bigram pairs", 0.5, ints[:6], 1),
    ]


# ---------------------------------------------------------------- CharTokenizer


def _random_text(rng, alphabet, n):
    chars = list(alphabet)
    return "".join(rng.choice(chars, size=n))


@torch_probe("CharTokenizer")
def tokenizer_cases(rng):
    alpha1 = "".join(sorted(set(rng.choice(list("abcdefghijklmnop"), size=9)))) + " .\n"
    alpha2 = "".join(rng.choice(list("QRSTUVW!?"), size=5, replace=False)) + "xyz"
    text1, text2 = _random_text(rng, alpha1, 80), _random_text(rng, alpha2, 40)
    # a lowercase letter and a later capital: sorted() puts the capital first, a sort that
    # ignores case the letter; both always occur
    pair = [str(rng.choice(list("abcdef"))), str(rng.choice(list("GHIJKLMNOP")))]
    for ch in pair:
        at = int(rng.integers(0, len(text2) + 1))
        text2 = text2[:at] + ch + text2[at:]
    chars1, chars2 = sorted(set(text1)), sorted(set(text2))
    sample = _random_text(rng, "".join(chars1), 12)
    unknown = next(ch for ch in "#@%&Z" if ch not in text1)
    cases = []

    def obj(text, steps):
        return {"op": "object", "init_args": [text], "steps": steps}

    sizes = [len(chars1), len(chars2)]
    cases.append(
        Case(
            "CharTokenizer",
            "vocab_size counts the distinct characters",
            0.5,
            [obj(text1, [{"attr": "vocab_size"}]), obj(text2, [{"attr": "vocab_size"}])],
            Judgement("lm_judges.tokenizer_vocab_size", {"sizes": sizes}),
        )
    )

    cases.append(
        Case(
            "CharTokenizer",
            "ids are the positions of the sorted distinct characters",
            1.0,
            [
                obj(
                    text1,
                    [
                        {"method": "encode", "args": ["".join(chars1)]},
                        {"method": "encode", "args": [sample]},
                    ],
                ),
                obj(text2, [{"method": "encode", "args": ["".join(chars2)]}]),
            ],
            Judgement(
                "lm_judges.tokenizer_ids",
                {
                    "sizes": sizes,
                    "sample": sample,
                    "sample_ids": [chars1.index(ch) for ch in sample],
                    "folded": [_folded_ids(chars1), _folded_ids(chars2)],
                },
            ),
        )
    )

    ids = [chars1.index(ch) for ch in sample]

    cases.append(
        Case(
            "CharTokenizer",
            "decode inverts encode",
            0.75,
            [
                obj(
                    text1,
                    [
                        {"method": "decode", "args": [ids]},
                        {"method": "decode", "args": [list(range(len(chars1)))]},
                    ],
                )
            ],
            Judgement(
                "lm_judges.tokenizer_decode", {"sample": sample, "vocabulary": "".join(chars1)}
            ),
        )
    )

    bad = sample[:2] + unknown + sample[2:4]

    cases.append(
        Case(
            "CharTokenizer",
            "an unknown character raises an error naming it",
            0.5,
            [
                obj(
                    text1,
                    [{"method": "encode", "args": [bad]}, {"method": "encode", "args": [sample]}],
                )
            ],
            Judgement(
                "lm_judges.tokenizer_unknown",
                {"bad": bad, "unknown": unknown, "sample": sample, "sample_ids": ids},
            ),
        )
    )
    return cases + tokenizer_contract_cases(text1, text2, bad, unknown, sample, ids)


def _folded_ids(chars):
    """The ids a tokenizer that sorts ignoring case gives to the sorted characters."""
    folded = sorted(chars, key=str.lower)
    return [folded.index(ch) for ch in chars]


# ---------------------------------------------------------------- get_batch


@torch_probe("get_batch")
def get_batch_cases(rng):
    cases = []
    N, B, T = 60, 16, 8
    data = torch.from_numpy(rng.permutation(N)).long()
    seed = int(rng.integers(2**31))
    what = f"get_batch(data of {N} distinct tokens, batch_size={B}, block_size={T}, generator)"

    judge_windows = _batch_judge("batch_windows", what, data, B, T, check_unchanged=True)
    cases.append(
        Case(
            "get_batch",
            "x holds windows of data and y the same windows shifted by one",
            1.5,
            [{"op": "call", "args": [data, B, T], "kwargs": {"generator": {"$generator": seed}}}],
            judge_windows,
        )
    )

    rep = _without_long_runs(rng, 5, 40, 6)
    what2 = "get_batch(data of 40 tokens with repeats, batch_size=12, block_size=6)"

    judge_repeats = _batch_judge("batch_windows", what2, rep, 12, 6, check_unchanged=False)
    cases.append(
        Case(
            "get_batch",
            "windows of a corpus with repeated tokens (no generator)",
            0.5,
            [{"op": "call", "args": [rep, 12, 6]}],
            judge_repeats,
        )
    )

    tight = torch.from_numpy(rng.permutation(50)[: T + 1]).long()
    what3 = (
        f"get_batch(data of exactly block_size + 1 = {T + 1} tokens, batch_size=3, block_size={T})"
    )

    judge_tight = _batch_judge("batch_one_window", what3, tight, 3, T)
    cases.append(
        Case(
            "get_batch",
            "data with exactly one window (block_size + 1 tokens)",
            0.5,
            [
                {
                    "op": "call",
                    "args": [tight, 3, T],
                    "kwargs": {"generator": {"$generator": seed + 1}},
                }
            ],
            judge_tight,
        )
    )

    big = torch.from_numpy(rng.permutation(300)).long()
    what4 = "get_batch(data, 8, 4, generator=g) twice with the same seed"

    judge_repro = _batch_judge("batch_reproducible", what4, big, 8, 4)
    req = {"op": "call", "args": [big, 8, 4], "kwargs": {"generator": {"$generator": seed + 2}}}
    cases.append(
        Case(
            "get_batch",
            "random windows, reproducible with the same generator",
            0.5,
            [req, dict(req)],
            judge_repro,
        )
    )
    return cases


def _without_long_runs(rng, V, N, T):
    """N tokens below V with repeats but no run of T + 1 equal tokens: every window's targets
    then differ from its inputs, so a right answer never looks like targets-not-shifted."""
    tokens = rng.integers(0, V, size=N)
    while max(len(run) for run in np.split(tokens, np.flatnonzero(np.diff(tokens)) + 1)) > T:
        tokens = rng.integers(0, V, size=N)  # rare: about one draw in 500
    return torch.from_numpy(tokens).long()


def _batch_judge(name, what, data, batch_size, block_size, **more):
    return Judgement(
        f"lm_judges.{name}",
        {
            "what": what,
            "data": data.numpy(),
            "batch_size": batch_size,
            "block_size": block_size,
            **more,
        },
    )


# ---------------------------------------------------------------- what later cells rely on
# Cases of what later cells rely on (judged in judges.py): each calls the student's code the way a
# later cell does, drawing its inputs after the cases above (which keep theirs).


def tokenizer_contract_cases(text1, text2, bad, unknown, sample, ids):
    """The cells after the exercise read tok.chars and catch ValueError for an unknown
    character."""

    def obj(text, steps):
        return {"op": "object", "init_args": [text], "steps": steps}

    chars = [{"attr": "chars"}, {"attr": "vocab_size"}]  # vocab_size: says "not implemented"
    return [
        Case(
            "CharTokenizer",
            "chars lists the sorted distinct characters",
            0.25,
            [obj(text1, chars), obj(text2, chars)],
            Judgement(
                "lm_judges.tokenizer_chars",
                {"chars": [sorted(set(text1)), sorted(set(text2))]},
            ),
        ),
        Case(
            "CharTokenizer",
            "the error for an unknown character is a ValueError",
            0.5,
            [
                obj(
                    text1,
                    [{"method": "encode", "args": [bad]}, {"method": "encode", "args": [sample]}],
                )
            ],
            Judgement(
                "lm_judges.tokenizer_value_error",
                {"bad": bad, "unknown": unknown, "sample": sample, "sample_ids": ids},
            ),
        ),
    ]
