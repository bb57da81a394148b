"""The judges of notebook 06 by values against the reference's, worked out when the case was
built (registered as "lm_judges.<name>", like judges.py's): lm_loss, the loss of sliced logits,
and the GPT's logits on loaded weights, with the known-wrong wirings and what notebook 05's
pieces contribute to a wrong answer. Plain data only.
"""

import numpy as np

from autograder.course.misconceptions import CATALOGUE
from autograder.course.torch_shared.checks import (
    close_or_diagnose,
    explain,
    hint_for,
    one_diagnosis,
)
from autograder.course.torch_shared.checks_modules import (
    differentiable_and_unchanged,
    gpt_error,
    gpt_logits,
)
from autograder.judging import compare, judge
from autograder.judging.base import Fail
from autograder.judging.compare import FLOAT32
from autograder.results import NOT_IMPLEMENTED


@judge
def lm_loss(responses, *, what, expected, variants, positions, inputs=None, input_grads=None):
    """The loss against the reference's; with `inputs` ([name, value before]), also
    differentiable (gradients against the reference's `input_grads`) and the inputs left
    unchanged."""
    r = responses[0]
    if r.error and "target size" in r.error["message"]:
        raise Fail(
            compare.error_message(r, what).rstrip(".") + ". F.cross_entropy takes logits of "
            "shape (N, V) and targets of shape (N,): flatten the logits to (B*T, V) and the "
            "targets to (B*T,) first."
        )
    got = compare.returned(r, what, framework="torch")
    if got.size != 1:
        raise Fail(
            f"{what} has shape {tuple(got.shape)}: the loss is one number (shape ()), the mean over all {positions} positions."
        )
    got = got.reshape(())
    if inputs is None:
        close_or_diagnose(got, expected, variants, what)
        return
    differentiable_and_unchanged(r, what, got, expected, inputs, input_grads)


@judge
def gpt_values(responses, *, what, expected, expected_tied, variants, blocks, final_norm, sizes):
    """The logits of the student's GPT with the reference's weights placed by role
    (harness/roles.py) against the reference's (`expected_tied` for a model whose head reuses
    the token table). Parameters that do not fit the notebook's architecture are said from the
    facts the harness answered; wrong logits are blamed on notebook 05's block or layer norm
    when the model's own blocks or final norm, run alone on one input (`blocks`,
    `final_norm`: their expected outputs and variants), are wrong; else on GPT's wiring."""
    r = responses[0]
    if r.error:
        raise gpt_error(r, what)
    if "role_mismatch" in r.raw:
        if not r.decode(r.raw.get("state_names")):
            raise Fail(
                "GPT is not implemented yet: it creates no parameters.", reason=NOT_IMPLEMENTED
            )
        facts = r.decode(r.raw["role_mismatch"])
        message, ids = _architecture_message(facts if isinstance(facts, dict) else {}, sizes)
        raise Fail(message, ids)
    distinct = r.raw.get("distinct_blocks")
    if isinstance(distinct, int) and distinct < len(blocks):
        raise Fail(
            f"{what}: your GPT's {len(blocks)} blocks are {distinct} block object(s) repeated "
            "(as nn.ModuleList([block] * n_layers) makes them), so the layers share one set "
            "of weights: build a new TransformerBlock for each layer."
        )
    logits = gpt_logits(r, what, tuple(np.shape(expected)))
    want = np.asarray(expected_tied if r.raw.get("tied") is True else expected)
    if compare.is_close(logits, want, **FLOAT32):
        return
    seen = compare.difference_summary(logits, want, **FLOAT32)
    lead = f"with the notebook's GPT's weights, your GPT's logits differ ({seen})"
    blamed = _blame_notebook_05(r, blocks, final_norm)
    if blamed:
        raise Fail(f"{lead}. {blamed[0]}", blamed[1])
    label = one_diagnosis(logits, variants, **FLOAT32)
    if label is not None:
        raise Fail(f"{lead}. {hint_for(label)}", [label] if label in CATALOGUE else [])
    raise Fail(
        f"{lead}. Its blocks and final layer norm are right on their own, so look at how GPT "
        "puts them together: tok_emb(idx) + pos_emb(positions), every block in order with the "
        "causal mask, then ln_f, then head."
    )


def _blame_notebook_05(r, blocks, final_norm):
    """(sentence, ids) when the model's own blocks or final norm give wrong values alone."""
    parts = r.decode(r.raw.get("parts")) if isinstance(r.raw.get("parts"), dict) else None
    if not isinstance(parts, dict):
        return None
    ln_f = _norm_at_fault(r, parts, final_norm)
    if ln_f and ln_f[1]:  # a known layer-norm mistake: the blocks' norms have it too
        return ln_f
    outs = parts.get("blocks") or []
    flags = parts.get("norm_first") or []
    for i, (out, want) in enumerate(zip(outs, blocks, strict=False)):
        got = _part_value(r, out)
        if got is None or compare.is_close(got, want["expected"], **FLOAT32):
            continue
        if compare.is_close(got, want["post_norm"], **FLOAT32):
            if i < len(flags) and flags[i] is False:
                return (
                    "Your GPT builds its blocks as post-norm (norm_first=False); the notebook's "
                    "GPT stacks pre-norm blocks: TransformerBlock(..., norm_first=True). "
                    + explain(["norm-order-swapped"]),
                    ["norm-order-swapped"],
                )
            return (
                "Block "
                f"{i} computes post-norm although it was built with norm_first=True: your "
                "TransformerBlock from notebook 05 mixes up the two orders. Fix it there "
                "(its checks in notebook 05 say more), then run this notebook again. "
                + explain(["norm-order-swapped"]),
                ["norm-order-swapped"],
            )
        label = one_diagnosis(got, want["variants"], **FLOAT32)
        return (
            f"Run alone on one input, block {i} of your GPT already gives other values than the "
            "notebook's block with the same weights: your TransformerBlock from notebook 05 is "
            "wrong, and GPT inherits it. Fix it there (its checks in notebook 05 say more), "
            "then run this notebook again." + (" " + hint_for(label) if label else ""),
            [label] if label in CATALOGUE else [],
        )
    return ln_f


def _norm_at_fault(r, parts, final_norm):
    """(sentence, ids) when the model's final norm, run alone, is not layer norm."""
    got = _part_value(r, parts.get("ln_f"))
    if got is None or compare.is_close(got, final_norm["expected"], **FLOAT32):
        return None
    label = one_diagnosis(got, final_norm["variants"], **FLOAT32)
    return (
        "Run alone on one input, its final LayerNorm gives other values than layer norm: "
        "your layer_norm (or LayerNorm) from notebook 05 is wrong, and GPT inherits it. Fix "
        "it there (its checks in notebook 05 say more), then run this notebook again."
        + (" " + hint_for(label) if label else ""),
        [label] if label in CATALOGUE else [],
    )


def _part_value(r, part):
    if not isinstance(part, dict) or "value" not in part:
        return None
    try:
        return compare.as_array(part["value"]).astype(np.float64)
    except (Fail, TypeError, ValueError):
        return None


def _architecture_message(facts, sizes):
    """What does not fit the notebook's GPT, from the harness's plain facts."""
    V, d, d_ff = sizes["vocab_size"], sizes["d_model"], sizes["d_ff"]
    if "no_blocks" in facts:
        return (
            f"the grader could not find your GPT's {facts['no_blocks']} blocks: keep them in "
            "one nn.ModuleList, blocks = nn.ModuleList(TransformerBlock(...) for _ in "
            "range(n_layers)).",
            [],
        )
    if "block" in facts:
        mine = _shapes(facts.get("block"))
        theirs = _shapes(facts.get("reference"))
        if (d, d) in mine and (d_ff, d) not in mine and (d_ff, d) in theirs:
            return (
                f"the feed-forward layers of your GPT's blocks have shapes ({d}, {d}): with "
                f"d_ff=None, d_ff should default to 4 * d_model = {d_ff}, so fc1 is "
                f"({d_ff}, {d}) and fc2 ({d}, {d_ff}). " + explain(["gpt-d-ff-default"]),
                ["gpt-d-ff-default"],
            )
        extra = sorted(set(mine) - set(theirs))
        return (
            "a block of your GPT has parameters of shapes the notebook's block does not "
            f"({', '.join(map(str, extra[:4])) or 'a different layout'}): the notebook's block "
            "has attn (four d x d projections), ff (fc1, fc2) and two layer norms.",
            [],
        )
    extra = [e for e in facts.get("extra") or [] if isinstance(e, list) and len(e) == 2]
    missing = facts.get("missing") or []
    bias = [name for name, shape in extra if list(shape) == [V]]
    if bias:
        return (
            f"your GPT has a parameter {str(bias[0])[:60]} of shape ({V},) that the notebook's "
            "GPT does not have. " + explain(["gpt-head-bias"]),
            ["gpt-head-bias"],
        )
    if "ln_f" in missing and not extra:
        return (
            "your GPT has no final layer norm: the notebook's GPT applies ln_f = "
            "LayerNorm(d_model) after the last block, before the head. "
            + explain(["gpt-final-norm-unused"]),
            ["gpt-final-norm-unused"],
        )
    if "pos" in missing:
        return (
            "your GPT has no position embedding, a table of block_size rows of width d_model "
            "(pos_emb = nn.Embedding(block_size, d_model)). " + explain(["gpt-positions-unused"]),
            ["gpt-positions-unused"],
        )
    if "head" in missing or "tok" in missing:
        return (
            f"your GPT needs a token embedding (vocab_size, d_model) and an output layer "
            f"nn.Linear(d_model, vocab_size, bias=False); the grader found {len(missing)} of "
            "them missing.",
            [],
        )
    shown = ", ".join(f"{str(n)[:40]} {tuple(s)}" for n, s in extra[:3])
    return (
        f"your GPT has parameters the notebook's GPT does not have: {shown}. Is every layer "
        "you build used, and does it follow the notebook's list (embeddings, blocks, ln_f, head)?",
        [],
    )


def _shapes(named):
    out = []
    for item in named or []:
        if isinstance(item, list) and len(item) == 2 and isinstance(item[1], list):
            out.append(tuple(int(s) for s in item[1]))
    return out


@judge
def sliced_loss(responses, *, what, expected, positions):
    """The loss of views that are not contiguous, as held_out_loss passes them."""
    r = responses[0]
    if r.error:
        view = "view" in r.error["message"]
        raise Fail(
            compare.error_message(r, what)
            + ". The notebook calls lm_loss on slices such as logits[:, 2:], which are not "
            "contiguous in memory"
            + (": .view cannot flatten them, .reshape (or .flatten) can." if view else ".")
        )
    got = compare.returned(r, what, framework="torch")
    if got.size != 1:
        raise Fail(
            f"{what} has shape {tuple(got.shape)}: the loss is one number, the mean over all "
            f"{positions} positions."
        )
    compare.assert_close(got.reshape(()), np.float64(expected), what, **FLOAT32)
