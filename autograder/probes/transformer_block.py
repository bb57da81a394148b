"""Hidden tests of notebook 05 (the transformer block, PyTorch).

Modules are built in the student's process from their own class; the parent says which weights
to load under SPEC's attribute names and which inputs to run (op "module"), then compares the
outputs and the gradients with the reference loaded with the same weights. A failure is
diagnosed by the known-wrong variants' outputs on the same weights (torch_variants). All of
that is computed here, when the cases are built, and handed to the judges
(autograder.judging.block_judges) as plain data in a Judgement.
"""

import numpy as np
import torch

from autograder.judging import Judgement
from autograder.misconceptions import torch_variants as tv
from autograder.probes.base import Case
from autograder.probes.torch_tools import (
    linear_state,
    load,
    norm_state,
    np_,
    reference_grads,
    reference_input_grads,
    tensor,
    torch_probe,
)
from autograder.reference import transformer_block as ref


def _causal(n):
    return torch.ones(n, n, dtype=torch.bool).tril()


# ---------------------------------------------------------------- layer_norm


@torch_probe("layer_norm")
def layer_norm_cases(rng):
    d = 8
    w, b = tensor(rng, d, scale=0.5, shift=1.0), tensor(rng, d, scale=0.5)
    setups = [
        # name, points, x, eps (None: the default)
        (
            "a batch of tokens (2, 3, 8): values",
            1.5,
            tensor(rng, 2, 3, d, scale=3.0, shift=1.0),
            None,
        ),
        (
            "tokens with a tiny spread: eps inside the square root",
            1.0,
            tensor(rng, 4, d, scale=0.004),
            None,
        ),
        ("the eps argument (eps=0.1)", 0.5, _one_row_tiny(tensor(rng, 3, d, scale=0.5)), 0.1),
        ("a single token vector of shape (8,)", 0.5, tensor(rng, d, scale=2.0), None),
    ]
    cases = [_layer_norm_values(name, pts, x, w, b, eps) for name, pts, x, eps in setups]

    x = tensor(rng, 2, 5, d, scale=2.0, grad=True)
    cot = tensor(rng, 2, 5, d)  # drawn last: the cases above keep their inputs
    judge_grad = Judgement(
        "block_judges.layer_norm",
        {
            "what": "layer_norm(x, weight, bias)",
            "expected": np_(ref.layer_norm(x, w, b)),
            "variants": tv.layer_norm_variants(x, w, b),
            "inputs": [
                [name, np_(t).astype(np.float32)]
                for name, t in zip(("x", "weight", "bias"), (x, w, b), strict=True)
            ],
            "input_grads": reference_input_grads(ref.layer_norm, [x, w, b], cot),
        },
    )

    cases.append(
        Case(
            "layer_norm",
            "differentiable, and leaves its inputs unchanged",
            1.0,
            [{"op": "call", "args": [x, w, b], "backward": cot}],
            judge_grad,
        )
    )
    return cases


def _one_row_tiny(x):
    """x with its last row's spread made tiny (x 0.01): there eps=1e-5 and no eps at all give
    different numbers, so a fixed eps and a missing eps are told apart."""
    x = x.clone()
    x[-1] *= 0.01
    return x


def _layer_norm_values(name, points, x, w, b, eps):
    kwargs = {} if eps is None else {"eps": eps}
    judge = Judgement(
        "block_judges.layer_norm",
        {
            "what": "layer_norm(x, weight, bias" + ("" if eps is None else f", eps={eps}") + ")",
            "expected": np_(ref.layer_norm(x, w, b, **kwargs)),
            "variants": tv.layer_norm_variants(x, w, b, 1e-5 if eps is None else eps),
        },
    )
    return Case(
        "layer_norm", name, points, [{"op": "call", "args": [x, w, b], "kwargs": kwargs}], judge
    )


# ---------------------------------------------------------------- positional encoding


@torch_probe("sinusoidal_positional_encoding")
def positional_encoding_cases(rng):
    n_table = int(rng.integers(5, 41))  # the lecture's 4 rows and more
    n_long = int(rng.integers(24, 65))
    odd = int(rng.choice([5, 7, 9]))
    setups = [
        ("the lecture's table: base=100, d_model=4", 0.75, (n_table, 4), {"base": 100.0}),
        ("24 to 64 positions, d_model=16, the default base", 1.0, (n_long, 16), {}),
        ("an odd d_model (5, 7 or 9), base=1000", 0.75, (10, odd), {"base": 1000.0}),
    ]
    return [_pe_case(*s) for s in setups] + [pe_float32_case(rng), pe_far_case(rng)]


def pe_far_case(rng):
    """Thousands of positions with a small base: angles of thousands of radians, where an angle
    computed in float32 (about 7 significant digits) is off by more than the tolerance; the
    notebook asks for the angles in float64."""
    n, d, base = int(rng.integers(6000, 10001)), 4, round(float(rng.uniform(8.0, 16.0)), 3)
    what = f"sinusoidal_positional_encoding({n}, {d}, base={base:g})"
    judge = Judgement(
        "block_judges.positional_encoding_far",
        {"what": what, "expected": np_(ref.sinusoidal_positional_encoding(n, d, base))},
    )
    return Case(
        "sinusoidal_positional_encoding",
        "6,000 to 10,000 positions: the angles computed in float64",
        0.5,
        [{"op": "call", "args": [n, d], "kwargs": {"base": base}}],
        judge,
    )


def _pe_case(name, points, args, kwargs):
    n, d = args
    base = kwargs.get("base", 10000.0)
    shown = ", ".join([str(n), str(d)] + [f"{k}={v:g}" for k, v in kwargs.items()])
    judge = Judgement(
        "block_judges.positional_encoding",
        {
            "what": f"sinusoidal_positional_encoding({shown})",
            "expected": np_(ref.sinusoidal_positional_encoding(n, d, base)),
            "variants": tv.pe_variants(n, d, base),
            "d_model": d,
            "lecture_table": base == 100.0,
        },
    )
    return Case(
        "sinusoidal_positional_encoding",
        name,
        points,
        [{"op": "call", "args": list(args), "kwargs": kwargs}],
        judge,
    )


# ---------------------------------------------------------------- MultiHeadAttention


def mha_state(rng, d, bias=True, prefix=""):
    state = {}
    for name in ("q_proj", "k_proj", "v_proj", "out_proj"):
        state.update(linear_state(rng, f"{prefix}{name}", d, d, bias))
    return state


def _mha_case(name, points, d, H, x, state, mask=None, context=None, bias=True):
    """One forward of the student's MultiHeadAttention against the reference and the variants."""
    module = load(ref.MultiHeadAttention(d, H, bias=bias), state)
    with torch.no_grad():
        expected = tuple(np_(t) for t in module(x, mask=mask, context=context))
    kwargs = {}
    if mask is not None:
        kwargs["mask"] = mask
    if context is not None:
        kwargs["context"] = context
    request = {
        "op": "module",
        "init": {"d_model": d, "n_heads": H, **({} if bias else {"bias": False})},
        "state": state,
        "args": [x],
        "kwargs": kwargs,
    }
    judge = Judgement(
        "block_judges.attention_module",
        {
            "call": "forward(x" + "".join(f", {k}=..." for k in kwargs) + ")",
            "expected": expected,
            "variants": tv.mha_variants(state, x, H, mask, context),
            "no_bias": not bias,
        },
    )
    return Case("MultiHeadAttention", name, points, [request], judge)


@torch_probe("MultiHeadAttention")
def mha_cases(rng):
    d, H, B, n, m = 16, 4, 2, 5, 7
    cases = []
    x = tensor(rng, B, n, d)
    cases.append(_mha_case("self-attention, no mask: y and attn", 1.5, d, H, x, mha_state(rng, d)))
    cases.append(
        _mha_case(
            "three heads of width 4 (d_model=12)",
            0.5,
            12,
            3,
            tensor(rng, B, 4, 12),
            mha_state(rng, 12),
        )
    )
    cases.append(
        _mha_case(
            "a causal mask (True = may attend)",
            1.5,
            d,
            H,
            tensor(rng, B, n, d),
            mha_state(rng, d),
            _causal(n),
        )
    )
    padding = torch.ones(B, 1, 1, n, dtype=torch.bool)
    padding[0, ..., -2:] = False  # sequence 0 has two padding tokens, sequence 1 one
    padding[1, ..., -1] = False
    cases.append(
        _mha_case(
            "a padding mask of shape (B, 1, 1, n)",
            1.0,
            d,
            H,
            tensor(rng, B, n, d),
            mha_state(rng, d),
            padding,
        )
    )
    cross_mask = torch.from_numpy(rng.random((n, m)) < 0.6)
    cross_mask[:, 0] = True  # every query sees at least one key
    cases.append(
        _mha_case(
            f"cross-attention: keys and values from a context of length {m}",
            1.5,
            d,
            H,
            tensor(rng, B, n, d),
            mha_state(rng, d),
            cross_mask,
            tensor(rng, B, m, d),
        )
    )

    cases.append(
        _mha_case(
            "bias=False",
            0.5,
            d,
            H,
            tensor(rng, B, n, d),
            mha_state(rng, d, bias=False),
            _causal(n),
            bias=False,
        )
    )
    cases.append(_mha_grad_case(rng, d, H, B, n))
    return cases


def _mha_grad_case(rng, d, H, B, n):
    state = mha_state(rng, d)
    x = tensor(rng, B, n, d, grad=True)
    mask = _causal(n)
    cot = tensor(rng, B, n, d)
    module = load(ref.MultiHeadAttention(d, H), state)
    reference = reference_grads(module, [x, mask], 0, cot)
    request = {
        "op": "module",
        "init": {"d_model": d, "n_heads": H},
        "state": state,
        "args": [x, mask],
        "backward": cot,
        "backward_output": 0,
    }

    judge = _gradients_judge("MultiHeadAttention", "MultiHeadAttention.forward(x, mask)", reference)
    return Case(
        "MultiHeadAttention",
        "gradients reach the input and every projection",
        1.0,
        [request],
        judge,
    )


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
        variants = tv.block_variants(state, x, H, nf, mask)
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


def _gradients_judge(cls_name, what, reference):
    return Judgement(
        "block_judges.module_gradients",
        {"cls_name": cls_name, "what": what, "reference": reference},
    )


# ---------------------------------------------------------------- what later cells rely on
# Cases of what later cells rely on (judged in autograder.judging.block_judges): each calls the student's code the way a
# later cell does (a float32 sum with the embeddings, one sequence without a batch axis,
# dropout in train and eval mode), drawing its inputs after the cases above.


def pe_float32_case(rng):
    """The encoding is added to float32 embeddings: it must be float32 itself."""
    n, d = int(rng.integers(6, 13)), 8
    what = f"sinusoidal_positional_encoding({n}, {d})"
    judge = Judgement(
        "block_judges.float32_encoding",
        {"what": what, "expected": np_(ref.sinusoidal_positional_encoding(n, d))},
    )
    return Case(
        "sinusoidal_positional_encoding",
        "float32, like the embeddings it is added to",
        0.5,
        [{"op": "call", "args": [n, d]}],
        judge,
    )


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
    path never is. The statistics and their false-failure bounds are in block_judges."""
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
