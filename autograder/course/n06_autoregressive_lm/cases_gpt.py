"""Hidden tests of notebook 06's GPT (see cases.py for how they are built and judged): its
contract (shapes, ValueError, block_size), causality, gradients, a short training run in the
harness, and what later cells rely on (dropout in the right places, positions that matter).
"""

import math
from typing import Any

import numpy as np
import torch

from autograder.course.n05_transformer_block.cases_block import _zeroed
from autograder.course.n06_autoregressive_lm import reference as ref
from autograder.course.n06_autoregressive_lm.cases_values import (
    GPT_INIT,
    VALUES_INIT,
    gpt_roles,
    gpt_values_case,
    reference_gpt,
)
from autograder.course.probes import Case
from autograder.course.torch_shared.tools import np_, tensor, torch_probe
from autograder.judging import Judgement

# ---------------------------------------------------------------- GPT


def _distinct_rows(rng, V, T):
    """Two rows of T token ids that differ in every position (a model that reads its input
    gives them different logits)."""
    first = rng.integers(0, V, size=T)
    return torch.from_numpy(np.stack([first, (first + rng.integers(1, V, size=T)) % V])).long()


def _dependency_request(rng, V, T):
    """Evidence for the causal case's diagnosis: a one-block GPT (where position s sees exactly
    the keys its mask allows) on a row and T copies of it, copy j with only token j changed.
    The judge reads which positions each token moves: the mask's pattern, by behaviour."""
    base = rng.integers(0, V, size=T)
    rows = [base]
    for j in range(T):
        row = base.copy()
        row[j] = (base[j] + int(rng.integers(1, V))) % V
        rows.append(row)
    idx = torch.from_numpy(np.stack(rows)).long()
    return {"op": "module", "init": {**GPT_INIT, "n_layers": 1}, "args": [idx]}


@torch_probe("GPT")
def gpt_cases(rng):
    V, T = GPT_INIT["vocab_size"], GPT_INIT["block_size"]
    cases = []
    idx = torch.from_numpy(rng.integers(0, V, size=(3, T))).long()
    short = torch.from_numpy(rng.integers(0, V, size=(2, 5))).long()

    judge_shapes = Judgement(
        "lm_judges.gpt_shapes",
        {
            "calls": [
                [f"GPT(...)(idx of shape (3, {T}))", [3, T, V]],
                ["GPT(...)(idx of shape (2, 5)), shorter than block_size", [2, 5, V]],
            ]
        },
    )
    cases.append(
        Case(
            "GPT",
            "logits of shape (B, T, vocab_size), also for T < block_size",
            0.75,
            [
                {"op": "module", "init": GPT_INIT, "args": [idx]},
                {"op": "module", "init": GPT_INIT, "args": [short]},
            ],
            judge_shapes,
        )
    )

    # causality: rows 1.. copy row 0 up to position t and differ after it
    cuts = [1, 3, 5]
    base = rng.integers(0, V, size=T)
    rows = [base]
    for t in cuts:
        row = base.copy()
        row[t + 1 :] = (base[t + 1 :] + rng.integers(1, V, size=T - t - 1)) % V
        rows.append(row)
    causal_idx = torch.from_numpy(np.stack(rows)).long()

    judge_causal = Judgement("lm_judges.gpt_causal", {"shape": [len(rows), T, V], "cuts": cuts})
    cases.append(
        Case(
            "GPT",
            "causal: the logits at position t ignore the tokens after t",
            1.25,
            [
                {"op": "module", "init": GPT_INIT, "args": [causal_idx]},
                _dependency_request(rng, V, T),
            ],
            judge_causal,
        )
    )

    too_long = torch.from_numpy(rng.integers(0, V, size=(1, T + 1))).long()

    cases.append(
        Case(
            "GPT",
            "a sequence longer than block_size raises ValueError",
            0.5,
            [
                {"op": "module", "init": GPT_INIT, "args": [too_long]},
                {"op": "module", "init": GPT_INIT, "args": [too_long[:, :T]]},
            ],
            Judgement("lm_judges.gpt_too_long", {"block_size": T, "vocab_size": V}),
        )
    )

    other = int(rng.integers(3, 8))
    cases.append(
        Case(
            "GPT",
            "block_size attribute; the default sizes and d_ff build",
            0.5,
            [
                {
                    "op": "object",
                    "init": {"vocab_size": V, "block_size": T},
                    "steps": [
                        {"attr": "block_size"},
                        {"method": "forward", "args": [_distinct_rows(rng, V, 3)]},
                    ],
                },
                {
                    "op": "object",
                    "init": {**GPT_INIT, "block_size": other, "d_ff": 48, "dropout": 0.1},
                    "steps": [{"attr": "block_size"}],
                },
            ],
            Judgement("lm_judges.gpt_block_size", {"block_sizes": [T, other], "vocab_size": V}),
        )
    )

    grad_idx = torch.from_numpy(rng.integers(0, V, size=(2, T))).long()
    cot = tensor(rng, 2, T, V)

    cases.append(
        Case(
            "GPT",
            "gradients reach every parameter",
            0.5,
            [{"op": "module", "init": GPT_INIT, "args": [grad_idx], "backward": cot}],
            Judgement("lm_judges.gpt_gradients", {"shape": [2, T, V]}),
        )
    )

    loss_idx = torch.from_numpy(rng.integers(0, V, size=(8, T))).long()
    targets = torch.from_numpy(rng.integers(0, V, size=(8, T))).long()

    cases.append(
        Case(
            "GPT",
            "the untrained loss is near ln(vocab_size)",
            0.25,
            [{"op": "module", "init": GPT_INIT, "args": [loss_idx]}],
            Judgement(
                "lm_judges.gpt_initial_loss",
                {
                    "shape": [8, T, V],
                    "targets": targets.numpy(),
                    "ln_vocab": math.log(V),
                    "spread": _initial_spread(loss_idx),
                },
            ),
        )
    )
    cases.append(_train_case(rng))
    cases.append(gpt_values_case(rng))
    cases.append(gpt_dropout_case(rng))
    cases.append(gpt_positions_case(rng))
    return cases


def _initial_spread(idx):
    """The standard deviation of the notebook's untrained GPT's logits on idx (built as the
    harness builds a module: torch seeded with 0): small, from its weights of std 0.02."""
    torch.manual_seed(0)
    with torch.no_grad():
        return float(ref.GPT(**GPT_INIT).eval()(idx).std())


TRAIN: dict[str, Any] = {
    "V": 8,
    "period": 24,
    "block": 16,
    "steps": 400,
    "batch": 16,
    "lr": 3e-3,
    "threshold": 0.5,
}
# The harness stops training once the mean loss of the last 10 batches is below half the
# threshold. Measured on 12 seeds for the reference GPT, a GPT with tied weights and a
# nn.TransformerEncoder one with PyTorch's initialisation: they stopped after 36-120 steps, with
# a held-out loss then of at most 0.244. For the reference, in process, the held-out loss was at
# most 0.323 over 63 seeds with 200 steps and at most 0.363 over 128 other seeds with 400 (this
# round, a loaded 2-core machine; the loss after a stop depends on the seed, not the load). A
# budget of 400 steps (it was 200) lets a rare slow start still reach the stop: one correct GPT
# stopped by the budget at 200 steps was at 0.513. The lowest loss possible on these windows is
# 0.07-0.09 (300 patterns: a window's first positions see too little to know its phase).
STOP = {"stop_below": TRAIN["threshold"] / 2, "stop_window": 10}


def _training_windows(rng, data, steps, batch, T):
    """Random windows of T + 1 tokens: a batch's inputs are [:, :-1], its targets [:, 1:]."""
    starts = rng.integers(0, len(data) - T, size=(steps, batch))
    return data[starts[..., None] + np.arange(T + 1)].astype(np.uint8)


def _train_case(rng):
    """The harness trains the student's GPT on a repeating text the parent drew, then returns
    the model's logits (before and after training) on windows the parent chose; the judge
    computes the loss from them. No loss the student's process reports decides anything.
    """
    V, p, T = TRAIN["V"], TRAIN["period"], TRAIN["block"]
    pattern = rng.integers(0, V, size=p)
    while bigram_entropy(pattern) < 1.5 * TRAIN["threshold"]:  # rare: a bigram must not pass
        pattern = rng.integers(0, V, size=p)
    data = np.tile(pattern, 2400 // p)
    # one window starting at every phase of the period: each transition of the text counts alike
    eval_idx = np.stack([data[s : s + T] for s in range(p)])
    targets = np.stack([data[s + 1 : s + T + 1] for s in range(p)])
    config = {
        "init": {
            "vocab_size": V,
            "block_size": T,
            "d_model": 32,
            "n_heads": 4,
            "n_layers": 2,
        },
        # every training batch, chosen here: (steps, batch, T + 1) windows of the text
        "windows": _training_windows(rng, data, TRAIN["steps"], TRAIN["batch"], T),
        "lr": TRAIN["lr"],
        "seed": int(rng.integers(2**31)),
        "eval_idx": eval_idx.astype(np.int64),
        **STOP,
    }
    judge = Judgement(
        "lm_judges.gpt_training",
        {
            "targets": targets.astype(np.int64),
            "threshold": TRAIN["threshold"],
            "steps": TRAIN["steps"],
            "period": p,
        },
    )
    return Case(
        "GPT",
        "a short training run learns a repeating text",
        1.0,
        [{"op": "train", "config": config}],
        judge,
        seconds=120.0,
    )


def bigram_entropy(pattern):
    """The conditional entropy (nats) of the next token given only the current one, over one
    period of the repeating text: the lowest loss a bigram model can reach on windows that
    start at every phase. The training threshold sits well below it."""
    pattern = np.asarray(pattern, dtype=np.int64)
    k = int(pattern.max()) + 1
    pairs = np.zeros((k, k))
    np.add.at(pairs, (pattern, np.roll(pattern, -1)), 1.0)
    firsts = pairs.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(pairs > 0, pairs * np.log(pairs / firsts), 0.0)
    return float(-terms.sum() / len(pattern))


def gpt_dropout_case(rng):
    """GPT(dropout=p): the same logits as dropout=0 in eval mode (one seed builds both), and in
    train mode two identical sequences of one batch get different logits, from dropout on the
    embeddings and in the blocks, and from nothing after the blocks."""
    p = 0.3
    V, T = GPT_INIT["vocab_size"], GPT_INIT["block_size"]
    idx = torch.from_numpy(rng.integers(0, V, size=(2, T))).long()
    twins = idx[:1].repeat(2, 1)
    requests = [
        {"op": "module", "init": {**GPT_INIT, "dropout": 0.0}, "args": [idx]},
        {"op": "module", "init": {**GPT_INIT, "dropout": p}, "args": [idx]},
        {"op": "module", "init": {**GPT_INIT, "dropout": p}, "args": [twins], "mode": "train"},
    ]
    # Where the dropout acts, by behaviour: with every block's last layers zero (each block
    # then passes its input through) only dropout on the embeddings can make two identical
    # sequences differ; with the embeddings of their tokens and of every position zero
    # (dropout of zeros is zeros) only dropout inside the blocks can.
    init = {**VALUES_INIT, "dropout": p}
    roles = gpt_roles(rng, V, T, init["d_model"], init["n_layers"], 4 * init["d_model"])
    quiet = dict(roles, blocks=[_zeroed(b, "attn.out_proj", "ff.fc2") for b in roles["blocks"]])
    tok = roles["tok"].clone()
    tok[twins[0]] = 0.0  # the rows these tokens use; the others stay, for a tied head
    blank = dict(roles, tok=tok, pos=torch.zeros_like(roles["pos"]))
    # both: nothing before the final norm is non-zero, so only dropout after the blocks (on
    # the final norm's output, or on the logits) can make the two sequences differ
    silent = dict(blank, blocks=quiet["blocks"])
    settings = (quiet, blank, silent)
    for mode in ("train", "eval"):
        for state in settings:
            requests.append(
                {"op": "module", "init": init, "roles": state, "args": [twins], "mode": mode}
            )
    with torch.no_grad():  # in eval mode the placement checks need the model right
        in_eval = [np_(reference_gpt(state, VALUES_INIT)(twins)) for state in settings]
    judge = Judgement("lm_judges.gpt_dropout", {"p": p, "shape": [2, T, V], "in_eval": in_eval})
    return Case("GPT", f"dropout={p:g}: off in eval mode, on in train mode", 0.5, requests, judge)


SWAPS = [(0, 1), (0, GPT_INIT["block_size"] - 2), (2, GPT_INIT["block_size"] - 3)]


def gpt_positions_case(rng):
    """GPT knows where each token is. With one block, the last position attends to all the
    tokens; without position information it sees them as a set, so swapping two earlier tokens
    leaves its logits unchanged (to float rounding, ~1e-6 of their spread). Every parameter gets
    N(0, 0.1^2) noise first, so a position table initialised to zero (as minGPT does) takes part:
    the reference's logits then move by at least 6e-2 of their spread (300 seeds)."""
    V, T = GPT_INIT["vocab_size"], GPT_INIT["block_size"]
    base = rng.choice(V, size=T, replace=False)
    rows = [base]
    for i, j in SWAPS:
        row = base.copy()
        row[i], row[j] = row[j], row[i]
        rows.append(row)
    idx = torch.from_numpy(np.stack(rows)).long()
    request = {
        "op": "module",
        "init": {**GPT_INIT, "n_layers": 1},
        "args": [idx],
        "jitter": {"seed": int(rng.integers(2**31)), "std": 0.1},
    }
    judge = Judgement("lm_judges.gpt_positions", {"shape": [len(rows), T, V], "swaps": SWAPS})
    return Case("GPT", "the order of the tokens matters (positions)", 0.5, [request], judge)
