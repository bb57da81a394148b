"""The judges of notebook 03 (attention in matrix form): the causal mask, and the properties of
self-attention (permutation equivariance, causality).

Registered under their stored names, "numpy_judges.<name>" (autograder.judging.LEGACY_PREFIXES);
the value and input cases of its functions are judged by numpy_shared/judges.py. Shipped in the
student handout: imports no reference, cases or variants.
"""

from typing import Any

import numpy as np

from autograder.course.numpy_shared.judges_calls import (
    Mismatch,
    got_of,
    same_outputs,
    well_formed,
)
from autograder.course.numpy_shared.signatures import diagnose_from, explain, weights_signature
from autograder.judging import compare, judge
from autograder.judging.base import Fail, Response
from autograder.judging.compare import is_close


def mask_values(response: Response, mask: dict[str, Any]) -> np.ndarray:
    """The student's causal_mask(n) as booleans (0/1 numbers accepted; dtype is its own case).

    mask: {"n", "where", "expected", "variants"}.
    """
    n, expected = mask["n"], mask["expected"]
    got = got_of(response, "causal_mask", mask["where"])
    compare.assert_shape(got, expected.shape, f"causal_mask({n})")
    if got.dtype != bool:
        with np.errstate(all="ignore"):
            if got.dtype.kind not in "biuf" or not np.all((got == 0) | (got == 1)):
                raise Fail(
                    f"causal_mask({n}) holds values other than True/False (or 0/1): a mask says "
                    "only 'may attend' (True) or 'may not' (False)."
                )
        got = got != 0
    try:
        compare.assert_close(got, expected, f"causal_mask({n})")
    except Fail as failure:
        ids = diagnose_from(got, expected, mask["variants"])
        diagonal = np.eye(n, dtype=bool)
        below, above = expected & ~diagonal, ~expected  # the past, the future
        hint = ""
        if not got[diagonal].all() and got[below].all():
            hint = " The diagonal is False: may a token attend to itself?"
        elif got[above].any() and not got[below].any():
            hint = " True above the diagonal lets a query see later keys (the future)."
        raise Mismatch(failure.message + hint, "", ids, failure.fraction) from None
    return got


@judge
def causal_masks(responses: list[Response], *, masks: list[dict[str, Any]]) -> None:
    """Each response is the right causal mask (one mask dict per response, see mask_values).

    A failure names a mistake only when every wrong mask of the case shows the same one (for
    n = 2, say, a mask shifted up by one diagonal is all True, as a mask of all True is)."""
    failures = []
    for response, mask in zip(responses, masks, strict=False):
        try:
            mask_values(response, mask)
        except Fail as failure:
            failures.append(failure)
    if failures:
        first = failures[0]
        if isinstance(first, Mismatch) and any(
            f.misconceptions != first.misconceptions for f in failures
        ):
            raise first.without_id()
        raise first


@judge
def boolean_mask(responses: list[Response], *, mask: dict[str, Any]) -> None:
    """The causal mask has dtype bool, and is right."""
    got = got_of(responses[0], "causal_mask", mask["where"])
    if got.dtype != bool:
        raise Fail(
            f"causal_mask({mask['n']}) has dtype {got.dtype}; a mask is boolean (dtype=bool), "
            "so that np.where(mask, ...) and ~mask mean what they say."
            + explain(["mask-not-boolean"]),
            ["mask-not-boolean"],
        )
    mask_values(responses[0], mask)


def attends_to_every_allowed_key(A: Any, mask: np.ndarray | None, what: str) -> None:
    """Fail when A gives weight exactly 0 to a key the mask allows. Softmax of finite scores
    never does, while degenerate answers (A = the identity: every token "attends" only to
    itself, Z = V) have the properties the property cases check without any attention."""
    A = np.asarray(A, dtype=float)
    allowed = np.ones(A.shape[-2:], dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    with np.errstate(invalid="ignore"):
        zero = (A == 0) & np.broadcast_to(allowed, A.shape)
    if zero.any():
        raise Fail(
            f"{what}: {int(zero.sum())} weights are exactly 0 where the query may attend to the "
            "key; softmax gives every allowed key some weight, so this is not attention yet."
        )


def real_attention(
    Z: Any, A: Any, call: dict[str, Any], mask: np.ndarray | None, what: str
) -> None:
    """Fail unless (Z, A) is a real answer: right for this call, or at least depending on the
    inputs (the weights of a query are not the same for every key it may attend to, and the rows
    of Z differ). Zeros, uniform weights or no computation at all have the properties the
    property cases check (permutation, causality) without any attention, and earn nothing."""
    expected = call["expected"]
    if is_close(Z, expected[0]) and is_close(A, expected[1]):
        return
    A = np.asarray(A, dtype=float)
    allowed = np.ones(A.shape[-2:], dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    allowed = np.broadcast_to(allowed, A.shape)
    several = allowed.sum(axis=-1) >= 2
    with np.errstate(invalid="ignore"):
        top = np.where(allowed, A, -np.inf).max(axis=-1)
        low = np.where(allowed, A, np.inf).min(axis=-1)
        uniform = np.abs(top - low) <= 1e-12
    if several.any() and np.all(uniform[several]):
        raise Fail(
            f"{what}: each query gives the same weight to every key it may attend to, whatever "
            "the queries and keys are: the weights must come from the scores (softmax of "
            "Q K^T / sqrt(d_k)), so this property cannot be checked yet."
        )
    Z = np.asarray(Z, dtype=float)
    if Z.ndim >= 2 and Z.shape[-2] > 1 and np.all(np.abs(Z - Z[..., :1, :]) <= 1e-12):
        raise Fail(
            f"{what}: every row of Z is the same, so the outputs do not depend on the tokens: "
            "this property cannot be checked yet."
        )


@judge
def permutation_equivariant(
    responses: list[Response],
    *,
    function: str,
    call: dict[str, Any],
    permuted_where: str,
    perm: np.ndarray,
) -> None:
    """Permuting the tokens permutes the rows of Z and the rows and columns of A the same way."""
    Z, A = got_of(responses[0], function, call["where"])
    Zp, Ap = got_of(responses[1], function, permuted_where)
    for k, out in enumerate((Z, A)):
        well_formed(out, function, call, output=k)
    attends_to_every_allowed_key(A, None, f"A returned by {call['where']}")
    real_attention(Z, A, call, None, f"(Z, A) returned by {call['where']}")
    same_outputs(Zp, Z[perm], "permuting the tokens should permute the rows of Z the same way")
    same_outputs(
        Ap,
        A[perm][:, perm],
        "permuting the tokens should permute the rows and columns of A the same way",
    )


@judge
def causal_prefix(
    responses: list[Response],
    *,
    function: str,
    call: dict[str, Any],
    t: int,
    mask: np.ndarray | None,
    changed_expected: tuple[np.ndarray, np.ndarray] | None = None,
) -> None:
    """With a causal mask, changing tokens t+1.. leaves the outputs of tokens 0..t unchanged.

    The changed tokens must change their own outputs, or a function that ignores its input would
    pass; but a right answer can leave them all but unchanged (a saturated softmax puts the
    changed tokens' weight on the same earlier token both times), so an answer that is right on
    both calls is never held to that."""
    Z, A = got_of(responses[0], function, call["where"])
    Z2, A2 = got_of(responses[1], function, call["where"])
    for k, out in enumerate((Z, A, Z2, A2)):
        well_formed(out, function, call, output=k % 2)
    attends_to_every_allowed_key(A, mask, f"A returned by {call['where']}")
    real_attention(Z, A, call, mask, f"(Z, A) returned by {call['where']}")
    right_both_times = (
        changed_expected is not None
        and is_close(Z, call["expected"][0])
        and is_close(A, call["expected"][1])
        and is_close(Z2, changed_expected[0])
        and is_close(A2, changed_expected[1])
    )
    if not right_both_times and not compare.difference_summary(
        Z2[t + 1 :], Z[t + 1 :], rtol=1e-7, atol=1e-9
    ):
        raise Fail(
            f"changing tokens {t + 1}.. did not change their own outputs: the outputs should "
            "depend on the tokens, so this property cannot be checked yet."
        )
    try:
        same_outputs(
            Z2[: t + 1],
            Z[: t + 1],
            f"with a causal mask, changing tokens {t + 1}.. changed the outputs of tokens 0..{t}",
        )
    except Fail as failure:
        ids, sentence = weights_signature(A, mask=mask)
        raise Fail(f"{failure.message} {sentence}".rstrip() + explain(ids), ids) from None
