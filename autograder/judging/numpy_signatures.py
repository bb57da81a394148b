"""Reading a NumPy answer's mistake from plain data: stored variant outputs and properties.

A probe computes, when it builds a case, what each known-wrong variant
(autograder.misconceptions.numpy_variants) returns on the case's inputs; a judge then names the
misconceptions whose outputs the student's answer reproduces:

    ids = diagnose_from(got, expected, variants)         # variants: [[id, output], ...]
    ids = diagnose_from(got_A, expected_A, variants, output=1)

Some mistakes are better recognised by a property signature than by one variant:
`weights_signature` (rows, columns and masked entries of an attention matrix),
`scale_signature` (scores off by a constant factor) and `error_signature` (what an exception
says). `explain(ids)` turns ids into the hint text of the catalogue. Nothing here computes a
model answer: every function compares the student's output with given data or reads its
properties.
"""

import numpy as np

from autograder.judging.compare import fmt, is_close
from autograder.misconceptions import CATALOGUE

MATCH = {"rtol": 1e-5, "atol": 1e-7}  # a variant "matches" a little more loosely than a pass

# When both match, the first names the mistake more precisely (2-D attention: axis 0 = queries).
_SUBSUMES = [("softmax-over-queries", "softmax-wrong-axis")]


def diagnose_from(got, expected, variants, output=None):
    """Misconception ids whose stored variant output `got` reproduces (and `expected` doesn't).

    `variants` lists [id, output] pairs in the catalogue's order (several may share an id); a
    variant's output is the whole return value, `output` picks one item of a pair (0: the
    weights/Z/Y, 1: the output/A). Ids come in the order of their first matching variant,
    without repeats.
    """
    if expected is not None and is_close(got, expected, **MATCH):
        return []
    ids = []
    for id_, value in variants:
        if id_ in ids:
            continue
        variant = _item(value, output)
        if variant is not None and is_close(got, variant, **MATCH):
            ids.append(id_)
    for specific, general in _SUBSUMES:
        if specific in ids and general in ids:
            ids.remove(general)
    return ids


def _item(value, output):
    if output is None:
        return value
    try:
        return value[output]
    except Exception:  # noqa: BLE001 - a variant whose result has no such item
        return None


def scale_signature(got, expected, d_k):
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


def weights_signature(A, mask=None, large=False, over_queries_id="softmax-over-queries"):
    """Ids and a sentence read off an attention matrix A (..., n_q, n_k) by its properties."""
    A = np.asarray(A, dtype=float)
    if A.ndim < 1:
        return [], ""
    with np.errstate(all="ignore"):
        if not np.all(np.isfinite(A)):
            if large:
                return ["softmax-unstable"], (
                    "on scores this large exp overflows: subtract each row's maximum before exp."
                )
            return [], ""
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
            zero_where_masked = not leak.any()
            # softmax weights are all > 0, so masking them afterwards leaves every visible one > 0
            # (an all-zero answer is not this mistake)
            softmax_then_zeroed = bool(np.all(A[m] > 0))
            if (
                zero_where_masked
                and softmax_then_zeroed
                and not rows_ok
                and np.all(rows <= 1 + 1e-9)
            ):
                i = np.unravel_index(int(np.argmax(np.abs(rows - 1))), rows.shape)
                return ["mask-after-softmax"], (
                    f"the masked weights are 0 but row {list(map(int, i))} sums to "
                    f"{fmt(rows[i], 4)}: is the mask applied after the softmax?"
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


def error_signature(error, function=""):
    """Ids and a sentence for an exception the student's function raised on a case."""
    message = (error or {}).get("message", "")
    if "broadcast" in message and function == "softmax":
        return ["softmax-missing-keepdims"], (
            "the max or sum along the axis lost that axis: pass keepdims=True so it lines up."
        )
    return [], ""


def explain(ids):
    """' It looks like <mistake>: <hint>' for each id, joined; '' for none."""
    parts = []
    for id_ in list(ids)[:2]:  # two hints at most: more would bury the first
        m = CATALOGUE.get(id_)
        if m is not None:
            parts.append(f"It looks like {m.mistake}: {m.hint}")
    return (" " + " ".join(parts)) if parts else ""
