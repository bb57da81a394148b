"""The judges several NumPy notebooks (01-04) use: a value case and an inputs-unmodified case.

A notebook's cases.py (autograder/course/n0[1-4]_*/) builds each case with the model answers and
the known-wrong variants, and stores what they return as plain data (the data of one call:
judges_calls.py); a judge here decides from that data alone:

    Case("softmax", "a 1-D input", 0.5, [request],
         Judgement("numpy_judges.value", {"function": "softmax", "calls": [call]}))

Registered under their stored names, "numpy_judges.<name>" (autograder.judging.LEGACY_PREFIXES).
Shipped in the student handout: imports no reference, cases or variants.
"""

from collections.abc import Sequence
from typing import Any, NoReturn

import numpy as np

from autograder.course.numpy_shared.judges_calls import (
    Mismatch,
    check_call,
    got_of,
    well_formed,
)
from autograder.course.numpy_shared.signatures import MATCH, explain, one_id
from autograder.judging import compare, judge
from autograder.judging.base import Fail, Response
from autograder.judging.compare import is_close


def _behaves_like(response: Response, function: str, call: dict[str, Any], index: int) -> bool:
    """True when the answer to one call is consistent with variant `index`: where the answer is
    wrong, its wrong outputs are that variant's; where it is entirely right, so is the variant
    (its mistake would have shown)."""
    variant = call["variants"][index][1]
    if variant is None:
        return False
    try:
        got = got_of(response, function, call["where"])
    except Fail:
        return False
    expected = call["expected"]
    if not isinstance(got, tuple):
        got, expected, variant = (got,), (expected,), (variant,)
    if not isinstance(variant, tuple | list) or len(variant) != len(got):
        return False
    wrong = [k for k in range(len(got)) if not is_close(got[k], expected[k])]
    if not wrong:
        return all(is_close(v, e, **MATCH) for v, e in zip(variant, expected, strict=True))
    return all(is_close(got[k], variant[k], **MATCH) for k in wrong)


def _confirmed(
    mismatch: Mismatch,
    responses: list[Response],
    calls: list[dict[str, Any]],
    function: str,
    large: bool,
) -> Mismatch:
    """The mismatch's id if every call of the case bears it out, else the mismatch without it.

    An id resting on variants stands only if one of those variants is consistent with the
    student's answer to every call of the case (`_behaves_like`: an answer that is right where
    that variant is wrong is not that mistake); an id read from a property must be read again
    from every call that fails.
    """
    if not mismatch.misconceptions:
        return mismatch
    pairs = list(zip(responses, calls, strict=False))
    if mismatch.basis is not None:
        for index in mismatch.basis:
            if all(_behaves_like(r, function, c, index) for r, c in pairs):
                return mismatch
        return mismatch.without_id()
    for response, call in pairs:
        try:
            check_call(response, function, call, large=large)
        except Mismatch as other:
            if other.misconceptions != mismatch.misconceptions:
                return mismatch.without_id()
        except Fail:
            return mismatch.without_id()
    return mismatch


# ---------------------------------------------------------------- value and input cases


@judge
def value(
    responses: list[Response],
    *,
    function: str,
    calls: list[dict[str, Any]],
    large: bool = False,
    single: dict[str, Any] | None = None,
    helpers: Sequence[dict[str, Any]] = (),
    optional: Sequence[int] = (),
    lists: Sequence[Sequence[int]] = (),
) -> None:
    """Every call's outputs match the expected ones.

    A failure names at most one misconception, and only one that every call of the case bears
    out (`_confirmed`). single: the call on the first element of a batch (its response follows
    the calls'); when the batched call's failure names no other mistake, that one is right, and
    the batched call answers it differently (`_batch_is_the_trouble`), the failure is named
    batch-dims-unsupported. lists: [[k, j], ...], call k is call j's kind with Python lists: when
    only k fails, the failure is named list-input-unsupported. helpers: the student's earlier
    functions asked on what the first call hands them (optional responses, see `blame`).
    """
    for k, (response, call) in enumerate(zip(responses, calls, strict=False)):
        try:
            check_call(response, function, call, large=large)
        except Mismatch as mismatch:
            failure: Fail = _confirmed(mismatch, responses, calls, function, large)
        except Fail as error:
            failure = error
        else:
            continue
        if k == 0:
            blame(failure, responses, function, call, helpers)
        for as_list, as_array in lists:
            if k == as_list and _right(responses[as_array], function, calls[as_array], large):
                _named(failure, "list-input-unsupported", "The same kind of call with a NumPy "
                       "array is right, so the Python list is the trouble.")  # fmt: skip
        if single is None or failure.misconceptions:
            raise failure
        alone = responses[len(calls)]  # the call on the first element of the batch alone
        if not _batch_is_the_trouble(response, alone, function, call, single, large):
            raise failure
        _named(failure, "batch-dims-unsupported", "The same call on one element of the batch is "
               "right, so the leading batch dimensions are the trouble.")  # fmt: skip


def _named(failure: Fail, id_: str, because: str) -> NoReturn:
    """Raise the failure again, named id_ for the reason `because` (what was observed)."""
    observed = failure.observed if isinstance(failure, Mismatch) else failure.message
    raise Fail(f"{observed} {because}" + explain([id_]), [id_], failure.fraction) from None


def _right(response: Response, function: str, call: dict[str, Any], large: bool) -> bool:
    try:
        check_call(response, function, call, large=large)
    except Fail:
        return False
    return True


def blame(
    failure: Fail,
    responses: list[Response],
    function: str,
    call: dict[str, Any],
    helpers: Sequence[dict[str, Any]],
) -> None:
    """Raise a Fail naming the student's earlier function when it explains the failure.

    Evidence specific to it: the earlier function (asked on exactly what a right answer hands
    it) is wrong there, and the answer's outputs are exactly what that wrong result gives
    (`links`), or the answer raised the very error the earlier function raises. A helper
    without links (one whose result the answer transforms further: the scores of an attention)
    is named beside the failure only when it shows the very mistake the failure names.
    Otherwise return, and the failure stands as it is.
    """
    for helper in helpers:
        name = helper["function"]
        if helper["index"] >= len(responses):
            continue
        answer = responses[helper["index"]]
        if answer.missing or answer.lost or (answer.error or {}).get("type") == "Timeout":
            continue
        try:
            check_call(answer, name, helper["call"])
        except Fail as wrong:
            fault = wrong
        else:
            continue  # that function is right on these inputs: not the cause
        text = fault.observed if isinstance(fault, Mismatch) else fault.message
        sentence = getattr(fault, "sentence", "")
        if helper["links"] is None:  # no output to compare: the same named mistake, or nothing
            ids = one_id(fault.misconceptions)
            if ids and ids == failure.misconceptions:
                raise Fail(
                    f"{str(failure)} Your {name} ({helper['origin']}) shows the same mistake on "
                    f"the inputs this call hands it: {text} If {function} calls it, fix {name} "
                    "first.",
                    ids,
                    failure.fraction,
                ) from None
            continue
        if not _explains(responses[0], answer, function, call, helper):
            continue
        ids = one_id(fault.misconceptions) or ["earlier-exercise-wrong"]
        raise Fail(
            f"{failure.observed if isinstance(failure, Mismatch) else failure.message} "
            f"The cause is your {name} ({helper['origin']}): {function} returns exactly what "
            f"your {name} gives it, and your {name} is wrong on these inputs: {text}"
            + (f" {sentence[0].upper()}{sentence[1:]}" if sentence else "")
            + f" Fix {name} there and run this check again: {function} itself may well be right."
            + explain(ids if ids != ["earlier-exercise-wrong"] else []),
            ids,
            failure.fraction,
        ) from None


def _explains(
    main: Response, answer: Response, function: str, call: dict[str, Any], helper: dict[str, Any]
) -> bool:
    """True when the student's answer is what the wrong earlier function makes of this call."""
    if main.error:
        return bool(answer.error) and (
            answer.error.get("type"),
            answer.error.get("message"),
        ) == (main.error.get("type"), main.error.get("message"))
    if answer.error:
        return False
    try:
        got = got_of(main, function, call["where"])
        mine = got_of(answer, helper["function"], helper["call"]["where"])
    except Fail:
        return False
    for out, own in helper["links"]:
        a = got if out is None else (got[out] if isinstance(got, tuple) else None)
        b = mine if own is None else (mine[own] if isinstance(mine, tuple) else None)
        if a is None or b is None or not is_close(a, b, **MATCH):
            return False
    return True


def _batch_is_the_trouble(
    batched: Response,
    alone: Response,
    function: str,
    call: dict[str, Any],
    single: dict[str, Any],
    large: bool,
) -> bool:
    """True when the answer for one element of the batch is right alone and is not what the
    batched call gives for that element (it raised, has another shape, or another value).

    A mistake that depends on the values (one that shows only on some elements) leaves the
    first element's answer the same inside and outside the batch: that is not this mistake.
    """
    try:
        got_alone = check_call(alone, function, single, large=large)
    except Fail:
        return False
    try:
        got = got_of(batched, function, call["where"])
    except Fail:
        return True  # raised on the batch only
    pairs = zip(got, got_alone, strict=True) if isinstance(got, tuple) else [(got, got_alone)]
    for whole, one in pairs:
        first = np.asarray(whole)
        while first.ndim > np.ndim(one) and first.shape[0] > 0:
            first = first[0]
        if first.shape != np.shape(one) or not is_close(first, one, **MATCH):
            return True
    return False


# An answer of the harness always carries the arguments after the call; one without them was
# changed in the student's process (a patched harness), so "unchanged" cannot be seen.
_INPUTS_UNSEEN = (
    "the grader could not see the input {name} after the call (the answer does not carry it), "
    "so it cannot tell whether the function leaves its inputs unchanged."
)


@judge
def unmodified(
    responses: list[Response],
    *,
    function: str,
    call: dict[str, Any],
    inputs: list[list[Any]],
    values: bool = False,
) -> None:
    """Every array input comes back unchanged, and the call returns a result of the right
    kind and shape (a function that raises or returns nothing has not shown it leaves its
    inputs alone). A wrong value fails it too, but its message then says that the inputs were
    left alone and points to the value tests: nobody hunts for an in-place bug that is not there,
    and an answer that returns anything untouched (zeros) earns nothing. With values=True (a case
    whose name also promises the values) the value tests' own message is given.

    inputs: [[position, name, value before the call], ...] for the array (and dict) arguments.
    """
    response = responses[0]
    after = response.raw.get("args_after")
    after = after if isinstance(after, list) else []
    for k, name, before in inputs:
        if k >= len(after) and not response.error:
            raise Fail(_INPUTS_UNSEEN.format(name=name))
        if k >= len(after):
            break
        try:
            compare.assert_unchanged(before, response.decode(after[k]), f"the input {name}")
        except Fail as failure:
            raise Fail(failure.message + explain(["modifies-input"]), ["modifies-input"]) from None
    if values:
        value(responses, function=function, calls=[call])
        return
    got = got_of(response, function, call["where"])
    for k, item in enumerate(got if isinstance(got, tuple) else [got]):
        well_formed(item, function, call, output=k if isinstance(got, tuple) else None, rows=False)
    try:
        value(responses, function=function, calls=[call])
    except Fail:
        # the inputs are fine: say so, so nobody hunts for an in-place bug, and keep the points
        # for an answer that is also right (a function returning zeros earns nothing here)
        raise Fail(
            f"{function} left its inputs as they were, good. This test's points also need the "
            "right result, which the tests above check: fix those first."
        ) from None
