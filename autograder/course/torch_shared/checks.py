"""What the PyTorch judges (notebooks 05-08) share, on plain data only: naming the mistake.

Everything here works in the parent on what the harness answered (decoded to NumPy) and on the
plain data a probe stored at build time: the reference's outputs and gradients, and the outputs
of the known-wrong variants as a list of (misconception id, output) pairs. Nothing here (nor in
checks_modules.py, checks_sampling.py) runs a model answer or a variant.

    diagnose(got, variants, rtol, atol)     # the ids whose stored output `got` matches
    close_or_diagnose(got, expected, variants, what)   # Fail naming the mistake, or pass
    module_answer(response, "FeedForward", what)       # built, loaded, ran (or a Fail): checks_modules
    grads_match(response, reference, "FeedForward")    # gradients against stored ones: checks_modules
    chi_square(counts, p), chi_square_limit(dof)       # sampling tests: checks_sampling
"""

from collections.abc import Sequence
from typing import Any

import numpy as np

from autograder.course.misconceptions import CATALOGUE
from autograder.judging import compare
from autograder.judging.base import Fail
from autograder.judging.compare import FLOAT32

# the known-wrong outputs a case stores: (misconception id or other label, output) pairs
Variants = Sequence[tuple[str, Any]]

# ---------------------------------------------------------------- diagnosis


def _close(got, expected, rtol, atol):
    """got matches a variant's output; the variant's NaN entries (e.g. a row the mistake masks
    entirely) match anything, since students' code differs there (-inf gives NaN, -1e9 not)."""
    try:
        got = np.asarray(got, dtype=float)
    except (TypeError, ValueError):
        return False
    expected = np.asarray(expected, dtype=float)
    if got.shape != expected.shape or np.isnan(expected).all():
        return False
    with np.errstate(invalid="ignore"):
        ok = np.isclose(got, expected, rtol=rtol, atol=atol, equal_nan=True) | np.isnan(expected)
    return bool(np.all(ok))


def diagnose(got: Any, variants: Variants, rtol: float = 1e-4, atol: float = 1e-5) -> list[str]:
    """The misconception ids whose variant output matches `got` (first match per id, in order).

    `variants` is a list of (id, expected) pairs computed when the case was built; expected may
    be a tuple of arrays compared item by item with the items of `got` (a tuple too). Several
    variants may share one id.
    """
    found = []
    for id_, expected in variants:
        if id_ in found or expected is None:
            continue
        if isinstance(expected, tuple | list):
            if not isinstance(got, tuple | list) or len(got) != len(expected):
                continue
            if all(
                e is None or _close(g, e, rtol, atol) for g, e in zip(got, expected, strict=True)
            ):
                found.append(id_)
        elif _close(got, expected, rtol, atol):
            found.append(id_)
    return found


def explain(ids: Sequence[str], lead: str = "This is what happens with") -> str:
    """'This is what happens with <mistake>: <hint>' for the first id (ids in SPEC's catalogue)."""
    known = [i for i in ids if i in CATALOGUE]
    if not known:
        return ""
    m = CATALOGUE[known[0]]
    return f"{lead} {m.mistake}: {m.hint}"


NON_CATALOGUE_HINTS = {
    "other-activation": "This is what the other activation gives: check which one `activation` selects.",
    "gelu-tanh": (
        "This is GELU's tanh approximation; the notebook's gelu is the exact one (F.gelu's "
        "default, as in nn.TransformerEncoderLayer)."
    ),
    "ln-swapped": "This is what happens when ln1 and ln2 are used the wrong way round: ln1 goes with attention, ln2 with the feed-forward network.",
    "ln1-twice": (
        "This is what happens when ln1 normalises the input of both sublayers and ln2 is "
        "never used: the feed-forward sublayer goes with ln2."
    ),
    "ln2-twice": (
        "This is what happens when ln2 normalises the input of both sublayers and ln1 is "
        "never used: the attention sublayer goes with ln1."
    ),
    "mask-not-passed": (
        "This is what your block gives when its attention ignores the mask: pass mask on to "
        "self.attn(..., mask)."
    ),
    "norm-inside-residual": (
        "This is what happens when the layer norm is applied to the sublayer's output before "
        "the residual addition, x + ln1(attn(x)): post-norm normalises the sum, "
        "ln1(x + attn(x)), and pre-norm the sublayer's input, x + attn(ln1(x))."
    ),
    "layernorm-no-eps": (
        "This is layer norm without eps: dividing by the plain standard deviation, which "
        "divides by zero for a token whose features are all equal. eps goes inside the square "
        "root: sqrt(var + eps)."
    ),
    "layernorm-eps-ignored": (
        "This is what eps=1e-5 gives, whatever eps was passed: use the eps argument."
    ),
    "pe-base-ignored": (
        "This is what base=10000 gives, whatever base was passed: use the base argument."
    ),
    "query-from-k_proj": (
        "This is what happens when the queries are computed with k_proj: q = q_proj(x)."
    ),
    "key-from-q_proj": (
        "This is what happens when the keys are computed with q_proj: k = k_proj(context)."
    ),
    "value-from-k_proj": (
        "This is what happens when the values are computed with k_proj: v = v_proj(context)."
    ),
    "probabilities-not-log": (
        "This is the loss of probabilities instead of log-probabilities: F.nll_loss expects "
        "log_softmax(logits), and F.cross_entropy takes the raw logits."
    ),
    "layernorm-sqrt-of-std": (
        "This is the lecture's misprint, dividing by the square root of the standard "
        "deviation: that leaves a standard deviation of sqrt(sigma). Divide by "
        "sqrt(var + eps), the standard deviation itself."
    ),
    "layernorm-affine-missing": (
        "This is the normalised x without the gain and the shift: multiply by weight, then "
        "add bias."
    ),
    "softmax-over-heads": (
        "This is a softmax over the heads axis (dim=1): each query's weights over the keys, "
        "the last axis, sum to 1."
    ),
    "activation-after-output": (
        "This is the activation applied after fc2: it goes between the two layers, "
        "fc2(act(fc1(x)))."
    ),
    "shifted-again": (
        "This is the loss with the targets shifted once more inside lm_loss: get_batch already "
        "paired position t with the token at t + 1, so compare logits[:, t] with targets[:, t]."
    ),
}


def one_diagnosis(
    got: Any, variants: Variants, rtol: float = 1e-4, atol: float = 1e-5
) -> str | None:
    """The one label whose stored output `got` matches, or None.

    A diagnosis is only specific when exactly one known mistake (catalogue id or not) gives
    this output: when two different mistakes give the same numbers on these inputs, naming
    either could send the student after the wrong bug, so neither is named.
    """
    labels = diagnose(got, variants, rtol, atol)
    return labels[0] if len(labels) == 1 else None


def hint_for(label: str | None, fallback: str = "") -> str:
    """What to tell a student whose answer matched `label`: the catalogue's explanation, the
    NON_CATALOGUE_HINTS sentence, or the fallback."""
    if label is None:
        return fallback
    return explain([label]) or NON_CATALOGUE_HINTS.get(label, "") or fallback


def close_or_diagnose(
    got: Any,
    expected: Any,
    variants: Variants,
    what: Any,
    tol: compare.Tolerance = FLOAT32,
    hint: str = "",
    fraction: float = 0.0,
) -> None:
    """Pass when got matches expected; otherwise Fail naming the misconception it matches.

    `variants` is a list of (id, expected). At most one id goes into the Fail, and only when
    that mistake alone explains the output (one_diagnosis) and it is in the catalogue; others
    (e.g. "other-activation") just explain themselves through NON_CATALOGUE_HINTS. Without a
    specific match the message says what was observed, plus `hint`.
    """
    try:
        if isinstance(expected, tuple | list):
            for g, e, w in zip(got, expected, what, strict=True):
                compare.assert_close(g, e, w, **tol)
        else:
            compare.assert_close(got, expected, what, **tol)
    except Fail as failure:
        label = one_diagnosis(got, variants, **tol)
        message = failure.message
        extra = hint_for(label, hint)
        if extra:
            message = message.rstrip(".") + ". " + extra
        ids = [label] if label in CATALOGUE else []
        raise Fail(message, ids, fraction) from None
