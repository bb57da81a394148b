"""Hidden tests of notebook 05's MultiHeadAttention (see cases.py for how they are built and
judged), and what the other probes of the notebook share: a causal mask, the gradients' judgement.
"""

import torch

from autograder.course.n05_transformer_block import reference as ref
from autograder.course.n05_transformer_block import variants as tv
from autograder.course.probes import Case
from autograder.course.torch_shared.tools import (
    later,
    linear_state,
    load,
    np_,
    reference_grads,
    tensor,
    torch_probe,
)
from autograder.judging import Judgement


def _causal(n):
    return torch.ones(n, n, dtype=torch.bool).tril()


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
            "variants": later(tv.mha_variants, state, x, H, mask, context),
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


def _gradients_judge(cls_name, what, reference):
    return Judgement(
        "block_judges.module_gradients",
        {"cls_name": cls_name, "what": what, "reference": reference},
    )
