"""Hidden tests of notebook 05 (the transformer block, PyTorch).

Modules are built in the student's process from their own class; the parent says which weights
to load under SPEC's attribute names and which inputs to run (op "module"), then compares the
outputs and the gradients with the reference loaded with the same weights. A failure is
diagnosed by the known-wrong variants' outputs on the same weights (variants.py). All of
that is computed here, when the cases are built, and handed to the judges
(judges.py, registered as "block_judges.<name>") as plain data in a Judgement.

This file holds layer_norm's and the positional encoding's probes; cases_attention.py holds
MultiHeadAttention's, cases_block.py FeedForward's and TransformerBlock's.
"""

import numpy as np

from autograder.course.n05_transformer_block import cases_attention, cases_block  # noqa: F401 (their probes)
from autograder.course.n05_transformer_block import reference as ref
from autograder.course.n05_transformer_block import variants as tv
from autograder.course.probes import Case
from autograder.course.torch_shared.tools import np_, reference_input_grads, tensor, torch_probe
from autograder.judging import Judgement

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


# ---------------------------------------------------------------- what later cells rely on
# Cases of what later cells rely on (judged in judges.py): each calls the student's code the way a
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
