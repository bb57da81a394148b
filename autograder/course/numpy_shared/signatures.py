"""Reading a NumPy answer's mistake from plain data: stored variant outputs and properties.

A probe computes, when it builds a case, what each known-wrong variant
(each notebook's variants.py) returns on the case's inputs; a judge then names the
misconception whose outputs the student's answer reproduces:

    ids = diagnose_from(got, expected, variants)         # variants: [[id, output], ...]
    ids = diagnose_from(got_A, expected_A, variants, output=1)

One diagnosis, the right one: a failure names at most one id, and only on evidence specific to
it. An answer that reproduces variants of two different ids (they coincide on these inputs) is
named by neither (`one_id`), and the judge then says what it observed instead (which entries
differ and by how much, which rows do not sum to 1, which rows hold NaN).

Some mistakes are better recognised by a property signature than by one variant:
`weights_signature` (columns that sum to 1; weights non-zero exactly where the mask is False),
`scale_signature` (scores off by a constant factor) and `error_signature` (what an exception
says). Properties shared by several mistakes (rows that sum to less than 1 with the masked
weights 0; NaN on large scores) give a sentence and no id. `explain(ids)` turns the id into the
hint text of the catalogue. Nothing here computes a model answer: every function compares the
student's output with given data or reads its properties.
"""

from collections.abc import Iterable
from typing import Any

import numpy as np

from autograder.course.misconceptions import CATALOGUE
from autograder.judging.compare import fmt, is_close

# Functions whose answers exponentiate scores (an OverflowError there is exp overflowing).
EXP_FUNCTIONS = {"percentages", "soft_lookup", "softmax", "attend", "attention_for_token"}

MATCH = {"rtol": 1e-5, "atol": 1e-7}  # a variant "matches" a little more loosely than a pass


def matching_variants(
    got: Any, expected: Any, variants: list[list[Any]], output: int | None = None
) -> list[tuple[int, str]]:
    """[(index, id), ...] of the stored variants whose output `got` reproduces.

    `variants` lists [id, output] pairs in the catalogue's order (several may share an id; an
    output is None where that variant failed on the inputs); a variant's output is the whole
    return value, `output` picks one item of a pair (0: the weights/Z/Y, 1: the output/A).
    Nothing matches an answer that is itself right.
    """
    if expected is not None and is_close(got, expected, **MATCH):
        return []
    found = []
    for index, (id_, value) in enumerate(variants):
        variant = _item(value, output)
        if variant is not None and is_close(got, variant, **MATCH):
            found.append((index, id_))
    return found


def diagnose_from(
    got: Any, expected: Any, variants: list[list[Any]], output: int | None = None
) -> list[str]:
    """The one misconception id whose stored variants `got` reproduces, as a list ([] or [id]).

    Evidence is specific only when every matching variant names the same mistake: an answer
    that reproduces variants of two different ids (they coincide on these inputs) is named by
    neither.
    """
    return one_id(id_ for _, id_ in matching_variants(got, expected, variants, output))


def one_id(ids: Iterable[str]) -> list[str]:
    """[id] when `ids` holds exactly one distinct id, else []: a failure names one mistake or
    none."""
    distinct = list(dict.fromkeys(ids))
    return distinct if len(distinct) == 1 else []


def _item(value: Any, output: int | None) -> Any:
    if output is None:
        return value
    try:
        return value[output]
    except Exception:  # noqa: BLE001 - a variant whose result has no such item
        return None


def scale_signature(got: Any, expected: Any, d_k: int) -> tuple[list[str], str]:
    """(ids, sentence) when got equals expected times a constant other than 1, else ([], '').

    For scores: the ratio tells missing-scale (sqrt(d_k) too large) from wrong-scale.
    """
    try:
        got = np.asarray(got, dtype=float)
        expected = np.asarray(expected, dtype=float)
    except (TypeError, ValueError):
        return [], ""
    if got.shape != expected.shape or not np.all(np.isfinite(got)):
        return [], ""
    denom = float(np.sum(expected * expected))
    if denom == 0:
        return [], ""
    ratio = float(np.sum(got * expected)) / denom
    if abs(ratio - 1) < 1e-6 or not is_close(got, ratio * expected, **MATCH):
        return [], ""
    root = np.sqrt(d_k)
    if abs(ratio - root) < 1e-6 * root:
        return ["missing-scale"], (
            f"your scores are {fmt(ratio)}x too large for d_k = {d_k}: did you divide by sqrt(d_k)?"
        )
    if abs(ratio - 1 / root) < 1e-6:
        return ["wrong-scale"], (
            f"your scores are {fmt(1 / ratio)}x too small for d_k = {d_k}: "
            "did you divide by d_k instead of sqrt(d_k)?"
        )
    if abs(ratio - d_k) < 1e-6 * d_k:
        return ["wrong-scale"], (
            f"your scores are {fmt(ratio)}x too large for d_k = {d_k}: "
            "did you multiply by sqrt(d_k) instead of dividing?"
        )
    size = "too large" if ratio > 1 else "too small"
    return ["wrong-scale"], (
        f"your scores are {fmt(max(ratio, 1 / ratio) if ratio > 0 else ratio)}x {size} "
        f"(d_k = {d_k}): check what you divide by."
    )


def nonfinite_rows_message(A: Any) -> str:
    """'2 of 3 rows hold NaN or inf (the first is row [1]); the others are finite' or ''."""
    A = np.asarray(A, dtype=float)
    if A.ndim < 1:
        return ""
    with np.errstate(all="ignore"):
        bad = ~np.all(np.isfinite(A), axis=-1)
    if not bad.any():
        return ""
    if A.ndim == 1:
        return "some entries are NaN or inf"
    first = np.argwhere(bad)[0]
    n_bad, n = int(bad.sum()), bad.size
    rest = "; the others are finite" if n_bad < n else ""
    return f"{n_bad} of {n} rows hold NaN or inf (the first is row {list(map(int, first))}){rest}"


def weights_signature(
    A: Any,
    mask: np.ndarray | None = None,
    large: bool = False,
    over_queries_id: str = "softmax-over-queries",
) -> tuple[list[str], str]:
    """Ids and a sentence read off an attention matrix A (..., n_q, n_k) by its properties.

    An id only where the property is specific to one mistake (columns that sum to 1; weights
    non-zero exactly where the mask is False); otherwise a sentence saying what was seen.
    """
    A = np.asarray(A, dtype=float)
    if A.ndim < 1:
        return [], ""
    with np.errstate(all="ignore"):
        if not np.all(np.isfinite(A)):
            return [], nonfinite_rows_message(A)
        rows = A.sum(axis=-1)
        rows_ok = bool(np.all(np.abs(rows - 1) <= 1e-6))
        if A.ndim >= 2 and A.shape[-2] > 1 and not rows_ok:
            cols = A.sum(axis=-2)
            if np.all(np.abs(cols - 1) <= 1e-6):
                return [over_queries_id], (
                    "your columns sum to 1, not your rows: the softmax runs over the key axis (-1)."
                )
        if mask is not None:
            m = np.broadcast_to(np.asarray(mask, dtype=bool), A.shape)
            leak = np.abs(A[~m]) > 1e-9
            if not leak.any() and not rows_ok and np.all(rows <= 1 + 1e-9):
                i = np.unravel_index(int(np.argmax(np.abs(rows - 1))), rows.shape)
                return [], (
                    f"the weights are 0 where the mask is False, but row {list(map(int, i))} "
                    f"sums to {fmt(rows[i], 4)}, not 1."
                )
            if leak.any() and rows_ok:
                visible_zero = np.all(np.abs(A[m]) <= 1e-12)
                if visible_zero:
                    return ["mask-inverted"], (
                        "your weights are non-zero exactly where the mask is False: True means "
                        "'may attend'."
                    )
                return [], (
                    f"{int(leak.sum())} weights are non-zero where the mask is False: blocked "
                    "keys must get weight exactly 0."
                )
    return [], ""


def error_signature(error: dict[str, Any] | None, function: str = "") -> tuple[list[str], str]:
    """Ids and a sentence for an exception the student's function raised on a case."""
    error = error or {}
    message = error.get("message", "")
    if "broadcast" in message and function == "softmax":
        return ["softmax-missing-keepdims"], (
            "the max or sum along the axis lost that axis: pass keepdims=True so it lines up."
        )
    if error.get("type") == "OverflowError" and function in EXP_FUNCTIONS:
        return ["softmax-unstable"], "a number grew too large for a float: exp overflowed."
    return [], ""


def explain(ids: Iterable[str]) -> str:
    """' It looks like <mistake>: <hint>' for the one id of `ids`; '' for none (or several,
    which a judge never passes: one_id)."""
    ids = one_id(ids)
    m = CATALOGUE.get(ids[0]) if ids else None
    return f" It looks like {m.mistake}: {m.hint}" if m is not None else ""
