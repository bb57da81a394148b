"""Hidden tests of notebook 05's FeedForward and TransformerBlock (see cases.py for how they
are built and judged), with what later cells rely on (one sequence without a batch axis, dropout
in train and eval mode).
"""

import torch

from autograder.course.n05_transformer_block import reference as ref
from autograder.course.n05_transformer_block import variants as tv
from autograder.course.n05_transformer_block.cases_attention import (
    _causal,
    _gradients_judge,
    mha_state,
)
from autograder.course.probes import Case
from autograder.course.torch_shared.tools import (
    later,
    linear_state,
    load,
    norm_state,
    np_,
    reference_grads,
    tensor,
    torch_probe,
)
from autograder.judging import Judgement

# ---------------------------------------------------------------- FeedForward


def ff_state(rng, d, d_ff, prefix=""):
    return {
        **linear_state(rng, f"{prefix}fc1", d, d_ff),
        **linear_state(rng, f"{prefix}fc2", d_ff, d),
    }


@torch_probe("FeedForward")
def ff_cases(rng):
    d, d_ff = 16, 32
    cases = []
    for name, pts, activation in (
        ("activation='relu': values", 1.25, "relu"),
        ("activation='gelu': values", 1.25, "gelu"),
        ("the default activation is relu", 0.5, None),
    ):
        state, x = ff_state(rng, d, d_ff), tensor(rng, 2, 5, d)
        act = activation or "relu"
        module = load(ref.FeedForward(d, d_ff, act), state)
        with torch.no_grad():
            expected = np_(module(x))
        variants = tv.ff_variants(state, x, act)
        init = {"d_model": d, "d_ff": d_ff, **({"activation": activation} if activation else {})}
        cases.append(_ff_case(name, pts, init, state, x, expected, variants))

    state, x, cot = ff_state(rng, d, d_ff), tensor(rng, 2, 5, d, grad=True), tensor(rng, 2, 5, d)
    module = load(ref.FeedForward(d, d_ff, "gelu"), state)
    reference = reference_grads(module, [x], None, cot)
    request = {
        "op": "module",
        "init": {"d_model": d, "d_ff": d_ff, "activation": "gelu"},
        "state": state,
        "args": [x],
        "backward": cot,
    }

    judge = _gradients_judge("FeedForward", "FeedForward.forward(x)", reference)
    cases.append(
        Case("FeedForward", "gradients reach the input and both layers", 1.0, [request], judge)
    )
    cases.append(ff_unbatched_case(rng))
    return cases


def _ff_case(name, points, init, state, x, expected, variants):
    request = {"op": "module", "init": init, "state": state, "args": [x]}
    judge = Judgement(
        "block_judges.feed_forward",
        {
            "shown": ", ".join(f"{k}={v!r}" for k, v in init.items()),
            "activation": init.get("activation"),
            "expected": expected,
            "variants": variants,
        },
    )
    return Case("FeedForward", name, points, [request], judge)


# ---------------------------------------------------------------- TransformerBlock


def block_state(rng, d, d_ff):
    return {
        **mha_state(rng, d, prefix="attn."),
        **ff_state(rng, d, d_ff, prefix="ff."),
        **norm_state(rng, "ln1", d),
        **norm_state(rng, "ln2", d),
    }


@torch_probe("TransformerBlock")
def block_cases(rng):
    d, H, d_ff, B, n = 16, 4, 32, 2, 6
    cases = []
    for name, pts, norm_first, masked in (
        ("pre-norm (norm_first=True) with a causal mask", 1.5, True, True),
        ("post-norm (norm_first=False) with a causal mask", 1.5, False, True),
        ("the default is pre-norm; no mask", 0.5, None, False),
    ):
        state, x = block_state(rng, d, d_ff), tensor(rng, B, n, d)
        mask = _causal(n) if masked else None
        nf = True if norm_first is None else norm_first
        module = load(ref.TransformerBlock(d, H, d_ff, norm_first=nf), state)
        with torch.no_grad():
            expected = np_(module(x, mask))
        variants = later(tv.block_variants, state, x, H, nf, mask)
        init = {"d_model": d, "n_heads": H, "d_ff": d_ff}
        if norm_first is not None:
            init["norm_first"] = norm_first
        cases.append(_block_case(name, pts, init, state, x, mask, expected, variants))

    state = block_state(rng, d, d_ff)
    x, cot, mask = tensor(rng, B, n, d, grad=True), tensor(rng, B, n, d), _causal(n)
    module = load(ref.TransformerBlock(d, H, d_ff), state)
    reference = reference_grads(module, [x, mask], None, cot)
    request = {
        "op": "module",
        "init": {"d_model": d, "n_heads": H, "d_ff": d_ff},
        "state": state,
        "args": [x, mask],
        "backward": cot,
    }

    judge = _gradients_judge("TransformerBlock", "TransformerBlock.forward(x, mask)", reference)
    cases.append(
        Case(
            "TransformerBlock",
            "gradients reach the input and every parameter",
            1.0,
            [request],
            judge,
        )
    )
    return cases + block_dropout_cases(rng)


def _block_case(name, points, init, state, x, mask, expected, variants):
    request = {
        "op": "module",
        "init": init,
        "state": state,
        "args": [x] + ([mask] if mask is not None else []),
    }
    shown = ", ".join(f"{k}={v!r}" for k, v in init.items())
    what = f"TransformerBlock({shown}).forward(x{', mask' if mask is not None else ''})"
    halves, switched = _block_halves(init, state, x, mask)
    judge = Judgement(
        "block_judges.transformer_block",
        {"what": what, "expected": expected, "variants": variants, "halves": halves},
    )
    requests = [request] + [{**request, "state": st} for st in switched]
    return Case("TransformerBlock", name, points, requests, judge)


# Which layer switches a sub-layer off: set to zero, it makes the sub-layer add nothing.
BLOCK_HALVES = {"attention": "attn.out_proj", "feed-forward": "ff.fc2"}


def _block_halves(init, state, x, mask):
    """Evidence that locates a faulty half of the block by behaviour: the reference's output
    with the attention sub-layer switched off, and with the feed-forward one switched off
    (their last linear layer's weight and bias set to zero), and those two states."""
    halves, states = [], []
    for off, layer in BLOCK_HALVES.items():
        st = {
            k: (torch.zeros_like(v) if k.startswith(layer + ".") else v) for k, v in state.items()
        }
        module = load(
            ref.TransformerBlock(
                init["d_model"],
                init["n_heads"],
                init["d_ff"],
                norm_first=init.get("norm_first", True),
            ),
            st,
        )
        with torch.no_grad():
            halves.append([off, np_(module(x, mask))])
        states.append(st)
    return halves, states


def ff_unbatched_case(rng):
    """Notebook 05 calls FeedForward on one sequence (n, d), without a batch axis."""
    d, d_ff, n = 16, 32, 5
    state, x = ff_state(rng, d, d_ff), tensor(rng, n, d)
    with torch.no_grad():
        expected = np_(load(ref.FeedForward(d, d_ff), state)(x))
    judge = Judgement(
        "block_judges.module_values",
        {
            "cls_name": "FeedForward",
            "what": f"FeedForward({d}, {d_ff}).forward(x) for one sequence x of shape ({n}, {d})",
            "expected": expected,
            "hint": (
                "FeedForward acts on each token's vector (the last axis), so x may have any "
                "leading axes: the notebook also calls it on one sequence of shape (n, d)"
            ),
        },
    )
    request = {"op": "module", "init": {"d_model": d, "d_ff": d_ff}, "state": state, "args": [x]}
    return Case("FeedForward", "one sequence (n, d), without a batch axis", 0.5, [request], judge)


DROPOUT = {"p": 0.25, "p_residual": 0.5, "copies": 2000}


def _zeroed(state, *layers):
    """state with the weights and biases of `layers` (e.g. "ff.fc2") set to zero."""
    out = dict(state)
    for layer in layers:
        for kind in ("weight", "bias"):
            out[f"{layer}.{kind}"] = torch.zeros_like(state[f"{layer}.{kind}"])
    return out


def block_dropout_cases(rng):
    """Dropout (SPEC's TransformerBlock): nothing in eval mode; in train mode each sub-layer's
    output is dropped with probability p and the rest scaled by 1 / (1 - p), and the residual
    path never is. The statistics and their false-failure bounds are in judges.py."""
    d, H, d_ff, n = 16, 4, 32, 5
    p, p_residual, copies = DROPOUT["p"], DROPOUT["p_residual"], DROPOUT["copies"]
    mask = _causal(n)

    def request(state, x, norm_first=True, dropout=p, mode="eval", seed=0):
        init = {"d_model": d, "n_heads": H, "d_ff": d_ff, "norm_first": norm_first}
        return {
            "op": "module",
            "init": {**init, "dropout": dropout},
            "state": state,
            "args": [x, mask],
            "mode": mode,
            "seed": seed,
        }

    requests, expected = [], []
    for norm_first in (True, False):
        state, x = block_state(rng, d, d_ff), tensor(rng, 2, n, d)
        with torch.no_grad():
            module = load(ref.TransformerBlock(d, H, d_ff, norm_first=norm_first), state)
            expected.append(np_(module(x, mask)))
        requests += [request(state, x, norm_first, dropout) for dropout in (0.0, p)]
    eval_case = Case(
        "TransformerBlock",
        f"dropout={p:g} changes nothing in eval mode",
        0.5,
        requests,
        Judgement(
            "block_judges.block_dropout_eval",
            {"p": p, "expected": expected, "labels": ["pre-norm", "post-norm"]},
        ),
    )

    state, x = block_state(rng, d, d_ff), tensor(rng, 1, n, d)
    seed = int(rng.integers(2**31))
    with torch.no_grad():
        module = load(ref.TransformerBlock(d, H, d_ff), state)
        sublayers = [
            ["attention sublayer", np_(module.attn(module.ln1(x), mask)[0][0])],
            ["feed-forward sublayer", np_(module.ff(module.ln2(x))[0])],
        ]
    copied = {"$repeat": [x, copies]}
    both = _zeroed(state, "attn.out_proj", "ff.fc2")
    batch = tensor(rng, 4, n, d)
    requests = [
        request(_zeroed(state, "ff.fc2"), copied, mode="train", seed=seed),
        request(_zeroed(state, "attn.out_proj"), copied, mode="train", seed=seed + 1),
        request(both, batch, True, p_residual),
        request(both, batch, True, p_residual, "train", seed + 2),
        request(both, batch, False, p_residual),
        request(both, batch, False, p_residual, "train", seed + 3),
        request(state, batch, mode="train", seed=seed + 4),
        request(state, batch, mode="train", seed=seed + 5),
    ]
    train_case = Case(
        "TransformerBlock",
        f"dropout={p:g} in train mode drops each sublayer's output, never the residual path",
        1.0,
        requests,
        Judgement(
            "block_judges.block_dropout_train",
            {"p": p, "p_residual": p_residual, "x": np_(x[0]), "sublayers": sublayers},
        ),
    )
    return [eval_case, train_case]
