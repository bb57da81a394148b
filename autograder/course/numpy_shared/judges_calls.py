"""Reading and checking one call of a NumPy answer (notebooks 01-04), for the judges.

A notebook's cases.py (autograder/course/n0[1-4]_*/) builds each case with the model answers and
the known-wrong variants, and stores what they return as plain data; a judge decides from that
data alone. The data of one call (a "call" below) is a dict:

    where     'attention_scores(Q (4, 8), K (6, 8))': the call, by shapes, for messages
    expected  the right output (a tuple for pair-returning functions)
    variants  [[id, output], ...]: what each known-wrong variant returns on the same inputs
    d_k       the scores' d_k (functions that return scores: the scale hints)
    mask      the mask the call passes, or None (functions that return weights)

got_of reads the student's outputs, check_call compares them with the expected ones and names
the one mistake they show (a Mismatch), well_formed checks shapes, dtypes and finiteness only.
Shipped in the student handout with the judges: imports no reference, cases or variants.
"""

from typing import Any

import numpy as np

from autograder.course.numpy_shared.signatures import (
    error_signature,
    explain,
    matching_variants,
    nonfinite_rows_message,
    one_id,
    scale_signature,
    weights_signature,
)
from autograder.judging import compare
from autograder.judging.base import Fail, Response

# What each pair-returning function returns, in order, as the messages name it.
OUTPUTS = {
    "soft_lookup": ("the weights", "the output"),
    "attend": ("the weights", "the output"),
    "scaled_dot_product_attention": ("Z", "A"),
    "self_attention": ("Z", "A"),
    "multi_head_attention": ("Y", "A"),
}
# Which of those outputs are attention weights (rows sum to 1).
WEIGHTS = {
    "soft_lookup": 0,
    "attend": 0,
    "scaled_dot_product_attention": 1,
    "self_attention": 1,
    "multi_head_attention": 1,
}
SCORES = {"scaled_scores", "attention_scores"}  # outputs that are scores: scale ratio hints


# ---------------------------------------------------------------- reading and checking one call


def got_of(response: Response, function: str, where: str) -> Any:
    """The student's outputs as plain arrays (a tuple for pair-returning functions)."""
    if response.error:
        ids, sentence = error_signature(response.error, function=function)
        raise Fail(
            compare.error_message(response, where)
            + "."
            + (f" {sentence[0].upper()}{sentence[1:]}" if sentence else ""),
            ids,
        )
    names = OUTPUTS.get(function)
    if names is None:
        return compare.returned(response, where)
    what = [f"{n} returned by {where}" for n in names]
    return compare.returned(response, where, count=len(names), names=what)


class Mismatch(Fail):
    """A value that differs from the expected one, with its diagnosis kept apart, so that a judge
    can withdraw an id that the other calls of the case contradict (see `value`).

    basis: the variant indices the id rests on (None when a property signature gave it).
    """

    def __init__(
        self,
        observed: str,
        sentence: str,
        ids: list[str],
        fraction: float,
        basis: list[int] | None = None,
    ) -> None:
        self.observed, self.sentence, self.basis = observed, sentence, basis
        text = observed + (f" {sentence[0].upper()}{sentence[1:]}" if sentence else "")
        super().__init__(text + explain(ids), ids, fraction)

    def without_id(self) -> "Mismatch":
        return Mismatch(self.observed, self.sentence, [], self.fraction)


def check_output(
    function: str, got: Any, call: dict[str, Any], output: int | None = None, large: bool = False
) -> None:
    """Compare one output with the expected one; on failure name the one mistake it shows."""
    expected = call["expected"]
    if output is not None:
        expected = expected[output]
    names = OUTPUTS.get(function)
    where = call["where"]
    what = where if output is None or names is None else f"{names[output]} returned by {where}"
    try:
        compare.assert_close(got, expected, what=what)
    except Fail as failure:
        try:
            ids, sentence, basis = _diagnosis(function, got, expected, call, output, large)
        except Exception:  # noqa: BLE001 - a diagnosis must never hide the failure itself
            ids, sentence, basis = [], "", None
        raise Mismatch(failure.message, sentence, ids, failure.fraction, basis) from None


def _diagnosis(
    function: str, got: Any, expected: Any, call: dict[str, Any], output: int | None, large: bool
) -> tuple[list[str], str, list[int] | None]:
    """(ids, sentence, basis) explaining a mismatch: at most one id, and only on evidence
    specific to it (a stored variant reproduced, and no variant of another id; else a property
    signature); the sentence says what was observed. basis: the matching variants' indices."""
    matched = matching_variants(got, expected, call["variants"], output)
    ids = one_id(id_ for _, id_ in matched)
    basis = [index for index, _ in matched] if ids else None
    sentence = ""
    same_shape = np.shape(got) == np.shape(expected)
    signature_ids: list[str] = []
    if function in SCORES:
        signature_ids, sentence = scale_signature(got, expected, call["d_k"])
    is_weights = WEIGHTS.get(function, -1) == output
    if is_weights and same_shape and not signature_ids:
        signature_ids, sentence = weights_signature(got, mask=call.get("mask"), large=large)
    if not matched:
        ids = signature_ids
    elif signature_ids and signature_ids != ids:
        sentence = ""  # the variants' evidence wins; a sentence for another id would contradict
    if not sentence and (is_weights or function == "softmax") and same_shape:
        with np.errstate(all="ignore"):
            finite = np.all(np.isfinite(np.asarray(got, dtype=float)))
        rows = compare.rows_sum_message(got) if (is_weights and finite) else ""
        sentence = f"({rows})" if rows else ("" if finite else nonfinite_rows_message(got) + ".")
    return ids, sentence, basis


def check_call(response: Response, function: str, call: dict[str, Any], large: bool = False) -> Any:
    """The student's outputs for one call, each checked against the expected ones."""
    got = got_of(response, function, call["where"])
    if isinstance(got, tuple):
        first = WEIGHTS.get(function)  # the weights first: most mistakes start there
        order = sorted(range(len(got)), key=lambda k: k != first)
        for k in order:
            check_output(function, got[k], call, output=k, large=large)
    else:
        check_output(function, got, call, large=large)
    return got


def well_formed(
    got: Any, function: str, call: dict[str, Any], output: int | None = None, rows: bool = True
) -> None:
    """Fail unless got has the expected shape, a real dtype and no NaN/inf (values unchecked);
    with rows=True, attention weights must also be non-negative rows that sum to 1."""
    expected = call["expected"]
    if output is not None:
        expected, name = expected[output], OUTPUTS[function][output]
    else:
        name = "the result"
    what = f"{name} returned by {call['where']}"
    compare.assert_shape(got, np.shape(expected), what)
    compare.assert_dtype_kind(got, expected, what)
    compare.assert_finite_like(got, expected, what)
    if rows and WEIGHTS.get(function, -1) == output:
        compare.assert_rows_sum_to_one(got, what)


def same_outputs(a: Any, b: Any, what: str, tol: float = 1e-9) -> None:
    """Fail unless two outputs of the student's (already type-checked) agree closely."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape:
        raise Fail(f"{what}: the two calls returned shapes {a.shape} and {b.shape}.")
    summary = compare.difference_summary(a, b, rtol=1e-7, atol=tol)
    if summary:
        raise Fail(f"{what}: {summary.replace('the expected values', 'each other')}.")


def short(value: Any) -> str:
    """repr(value), cut to 60 characters, for messages."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
