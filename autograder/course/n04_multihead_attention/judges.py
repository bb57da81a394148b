"""The judges of notebook 04 (multi-head attention: heads and shapes): mha_shapes's table.

Registered under their stored names, "numpy_judges.<name>" (autograder.judging.LEGACY_PREFIXES);
the value and input cases of its other functions are judged by numpy_shared/judges.py. Shipped
in the student handout: imports no reference, cases or variants.
"""

import numbers
from typing import Any

import numpy as np

from autograder.course.numpy_shared.judges_calls import short
from autograder.course.numpy_shared.signatures import explain, one_id
from autograder.harness.wire import Opaque
from autograder.judging import compare, judge
from autograder.judging.base import Fail, Response

SHAPE_KEYS = ("W_q", "W_k", "W_v", "W_o", "input", "q", "k", "v", "A", "z", "concat", "output")


def _as_shape(value: Any) -> tuple[int, ...] | None:
    """A tuple of ints from a tuple or list of integers, else None."""
    if not isinstance(value, tuple | list):
        return None
    out = []
    for x in value:
        if isinstance(x, bool) or not isinstance(x, numbers.Integral | np.integer):
            return None
        out.append(int(x))
    return tuple(out)


@judge
def mha_shapes(
    responses: list[Response],
    *,
    n: int,
    d: int,
    d_k: int,
    H: int,
    expected: dict[str, tuple[int, ...]],
) -> None:
    """mha_shapes(n, d, d_k, H) names every shape right. expected: {key: shape tuple}."""
    response = responses[0]
    where = f"mha_shapes(n={n}, d={d}, d_k={d_k}, H={H})"
    if response.error:
        raise Fail(compare.error_message(response, where))
    got = response.decode(response.raw.get("value"))
    if not isinstance(got, dict):
        seen = got.type_name if isinstance(got, Opaque) else type(got).__name__
        raise Fail(f"{where} returned a {seen}; it should return a dict from names to shapes.")
    missing = [k for k in SHAPE_KEYS if k not in got]
    if missing:
        raise Fail(f"{where} has no entry for {', '.join(map(repr, missing))}.")
    wrong, notes, ids, lists = [], [], [], []
    for key in SHAPE_KEYS:
        shape = _as_shape(got[key])
        want = tuple(expected[key])
        if shape is None:
            wrong.append(key)
            notes.append(f"{key!r} is {short(got[key])}, not a tuple of integers")
            continue
        if isinstance(got[key], list):
            lists.append(key)
        if shape == want:
            continue
        wrong.append(key)
        if len(shape) == 2 and shape == want[::-1]:
            notes.append(
                f"{key!r} = {shape} has its sizes in the wrong order (the lecture's column "
                "convention? we use rows: X @ W)"
            )
        else:
            notes.append(f"{key!r} = {shape} is not right")
        if key == "concat" and shape == (n, d_k):
            ids.append("heads-averaged")
        if key == "output" and shape == (n, H * d_k) and H * d_k != d:
            ids.append("missing-output-projection")
    if lists and not wrong:
        ids = ["shape-not-tuple"]
        raise Fail(
            f"{where}: the sizes are right, but {len(lists)} of {len(SHAPE_KEYS)} shapes are "
            f"lists (the first: {lists[0]!r})." + explain(ids),
            ids,
        )
    if wrong:
        ids = one_id(ids)
        raise Fail(
            f"{where}: {len(wrong)} of {len(SHAPE_KEYS)} shapes are wrong: "
            + "; ".join(notes)
            + "."
            + explain(ids),
            ids,
        )
