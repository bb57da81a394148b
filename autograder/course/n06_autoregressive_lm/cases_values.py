"""Hidden tests of notebook 06 judged by values against the reference's (see cases.py):
lm_loss (and the sliced logits a later cell hands it), and the GPT's logits on weights loaded
under the notebook's names, with its known-wrong wirings.
"""

import numpy as np
import torch
import torch.nn.functional as F

from autograder.course.n05_transformer_block import variants as tv
from autograder.course.n05_transformer_block.cases_block import block_state
from autograder.course.n06_autoregressive_lm import reference as ref
from autograder.course.n06_autoregressive_lm import variants as lmv
from autograder.course.probes import Case
from autograder.course.torch_shared.tools import (
    later,
    load,
    norm_state,
    np_,
    reference_input_grads,
    tensor,
    torch_probe,
)
from autograder.judging import Judgement

# ---------------------------------------------------------------- the GPT's sizes (cases_gpt.py too)

GPT_INIT = {"vocab_size": 11, "block_size": 8, "d_model": 32, "n_heads": 4, "n_layers": 2}


# ---------------------------------------------------------------- lm_loss


def _loss_case(name, points, logits, targets, grad_check=False):
    expected = float(F.cross_entropy(logits.detach().double().flatten(0, 1), targets.flatten()))
    variants = lmv.lm_loss_variants(logits, targets)
    B, T, V = logits.shape
    params: dict[str, object] = {
        "what": f"lm_loss(logits of shape ({B}, {T}, {V}), targets)",
        "expected": np.float64(expected),
        "variants": [(i, np.float64(v)) for i, v in variants],
        "positions": B * T,
    }
    if grad_check:
        params["inputs"] = [
            ["logits", np_(logits).astype(np.float32)],
            ["targets", targets.numpy()],
        ]
        params["input_grads"] = reference_input_grads(ref.lm_loss, [logits, targets], LOSS_COT)
    request: dict[str, object] = {"op": "call", "args": [logits, targets]}
    if grad_check:
        request["backward"] = LOSS_COT
    return Case("lm_loss", name, points, [request], Judgement("lm_judges.lm_loss", params))


LOSS_COT = torch.tensor(1.0)  # d(loss)/d(logits) itself


@torch_probe("lm_loss")
def lm_loss_cases(rng):
    V = 7
    cases = [
        _loss_case(
            "mean cross-entropy over every position",
            1.25,
            tensor(rng, 3, 5, V, scale=2.0),
            torch.from_numpy(rng.integers(0, V, size=(3, 5))).long(),
        ),
        _loss_case(
            "a batch of one sequence, 3 tokens",
            0.25,
            tensor(rng, 1, 4, 3, scale=2.0),
            torch.from_numpy(rng.integers(0, 3, size=(1, 4))).long(),
        ),
        _loss_case(
            "differentiable, and leaves its inputs unchanged",
            1.0,
            tensor(rng, 2, 6, V, scale=2.0, grad=True),
            torch.from_numpy(rng.integers(0, V, size=(2, 6))).long(),
            grad_check=True,
        ),
    ]
    return cases + [sliced_loss_case(rng)]


def sliced_loss_case(rng):
    """held_out_loss calls lm_loss(logits[:, skip:], y[:, skip:]): views, not contiguous."""
    V, skip = 7, 2
    logits = tensor(rng, 3, 6, V, scale=2.0)
    targets = torch.from_numpy(rng.integers(0, V, size=(3, 6))).long()
    expected = F.cross_entropy(logits[:, skip:].double().flatten(0, 1), targets[:, skip:].flatten())
    bounds = [[None, None], [skip, None]]
    request = {
        "op": "call",
        "args": [{"$slice": [logits, bounds]}, {"$slice": [targets, bounds]}],
    }
    judge = Judgement(
        "lm_judges.sliced_loss",
        {
            "what": f"lm_loss(logits[:, {skip}:], targets[:, {skip}:])",
            "expected": np.float64(expected),
            "positions": 3 * (6 - skip),
        },
    )
    return Case("lm_loss", "sliced logits and targets (not contiguous)", 0.5, [request], judge)


# ---------------------------------------------------------------- GPT by values

VALUES_INIT = {k: v for k, v in GPT_INIT.items() if k != "d_ff"}  # d_ff: the default, 4 * d_model


def gpt_roles(rng, V, T, d, n_layers, d_ff):
    """Weights by role (autograder/harness/roles.py), like a trained model's: embeddings of
    order 1, blocks as notebook 05's probes draw them, norms with gains around 1."""
    ln = norm_state(rng, "ln_f", d)
    return {
        "tok": tensor(rng, V, d),
        "pos": tensor(rng, T, d, scale=0.5),
        "blocks": [block_state(rng, d, d_ff) for _ in range(n_layers)],
        "ln_f.weight": ln["ln_f.weight"],
        "ln_f.bias": ln["ln_f.bias"],
        "head": tensor(rng, V, d, scale=d**-0.5),
    }


def reference_gpt(roles, init, tied=False):
    """The reference GPT with `roles` loaded (the head tied to the token table if `tied`)."""
    state = {
        "tok_emb.weight": roles["tok"],
        "pos_emb.weight": roles["pos"],
        "ln_f.weight": roles["ln_f.weight"],
        "ln_f.bias": roles["ln_f.bias"],
        "head.weight": roles["tok"] if tied else roles["head"],
    }
    for i, block in enumerate(roles["blocks"]):
        state.update({f"blocks.{i}.{k}": v for k, v in block.items()})
    return load(ref.GPT(**init), state)


def _block_variants(state, x, H, mask):
    """A pre-norm causal block's mistakes, and a right block's around a wrong attention."""
    return tv.block_variants(state, x, H, True, mask) + tv.mha_block_variants(state, x, H, mask)


def gpt_values_case(rng):
    """GPT's architecture is fixed by the text (pre-norm blocks with the causal mask, d_ff =
    4 * d_model by default, a final layer norm, a head without bias), so with the same weights
    it must give the reference's logits. The harness places the weights by role, whatever the
    attribute names (a fused qkv, nn.MultiheadAttention, a tied head...), and also runs the
    model's own blocks and final norm on one input: a wrong TransformerBlock or layer norm
    from notebook 05 is then blamed where it lives."""
    init = VALUES_INIT
    V, T, d, H, L = (
        init[k] for k in ("vocab_size", "block_size", "d_model", "n_heads", "n_layers")
    )
    roles = gpt_roles(rng, V, T, d, L, 4 * d)
    idx = torch.from_numpy(rng.integers(0, V, size=(3, T))).long()
    x = tensor(rng, 2, T, d)
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    with torch.no_grad():
        expected = np_(reference_gpt(roles, init)(idx))
        expected_tied = np_(reference_gpt(roles, init, tied=True)(idx))
    blocks = [
        {
            "expected": tv.np64(tv.block_forward(state, x, H, True, mask)),
            "post_norm": tv.np64(tv.block_forward(state, x, H, False, mask)),
            "variants": later(_block_variants, state, x, H, mask),
        }
        for state in roles["blocks"]
    ]
    ln_w, ln_b = roles["ln_f.weight"], roles["ln_f.bias"]
    final_norm = {
        "expected": np_(F.layer_norm(x, (d,), ln_w, ln_b, 1e-5)),
        "variants": later(tv.layer_norm_variants, x, ln_w, ln_b),
    }
    request = {
        "op": "module",
        "init": init,
        "roles": roles,
        "args": [idx],
        "parts": {"x": x, "mask": mask},
    }
    judge = Judgement(
        "lm_judges.gpt_values",
        {
            "what": f"GPT({V}, {T}, d_model={d}, n_heads={H}, n_layers={L})(idx)",
            "expected": expected,
            "expected_tied": expected_tied,
            "variants": later(lmv.gpt_variants, roles, idx, H),
            "blocks": blocks,
            "final_norm": final_norm,
            "sizes": {"vocab_size": V, "block_size": T, "d_model": d, "d_ff": 4 * d},
        },
    )
    return Case(
        "GPT",
        "the notebook's architecture: the same logits as its GPT with the same weights",
        1.25,
        [request],
        judge,
    )
