"""Tolerant comparisons of plain data, with kind and precise messages (used by the judges).

Every function here works on plain NumPy data in the trusted parent and raises
autograder.course.probes.Fail with a message that helps the student find the mistake: what was
expected (a shape, a dtype, "rows sum to 1") and what was seen (counts, the largest
difference), never the expected array itself.

    arrays = returned(response, "softmax(x)")                     # type-checked plain arrays
    Z, A = returned(response, "the result", count=2)              # a pair, each checked
    assert_close(Z, expected_Z, what="Z")                         # shape, dtype, NaN, values
    assert_rows_sum_to_one(A, what="A")

It is framework-neutral: torch probes pass framework="torch" to `returned` (tensors are decoded
to arrays in the parent) and float32 tolerances (FLOAT32) to assert_close.
"""

import re
from collections.abc import Iterable, Sequence
from typing import TypedDict, overload

import numpy as np
import numpy.typing as npt

from autograder.harness.wire import Opaque
from autograder.judging.base import Fail, Response

FLOAT64 = {"rtol": 1e-6, "atol": 1e-8}  # SPEC: NumPy notebooks


class Tolerance(TypedDict):
    """The rtol and atol of a comparison (numpy.isclose's), passed on as keywords."""

    rtol: float
    atol: float


FLOAT32: Tolerance = {"rtol": 1e-4, "atol": 1e-5}  # SPEC: torch notebooks


# ---------------------------------------------------------------- formatting


def fmt(x: float | np.ndarray | np.generic, digits: int = 3) -> str:
    """A short human number: 0.31, 2.83, 1.2e+04, nan."""
    x = float(x)
    if not np.isfinite(x):
        return str(x)
    if x != 0 and (abs(x) >= 1e4 or abs(x) < 1e-3):
        return f"{x:.{max(digits - 1, 1)}e}"
    return f"{x:.{digits}g}"


def fmt_index(index: tuple[np.integer, ...]) -> str:
    return "[" + ", ".join(str(int(i)) for i in index) + "]"


def shape_str(shape: Iterable[int]) -> str:
    return str(tuple(int(s) for s in shape))


# ---------------------------------------------------------------- what came back


def describe_encoded(data: object) -> str:
    """What a wire-encoded value is, in words a student understands ('a Python list', ...)."""
    if data is None:
        return "None"
    if isinstance(data, bool):
        return f"the bool {data}"
    if isinstance(data, int | float):
        return f"the Python {type(data).__name__} {data!r}"
    if isinstance(data, str):
        return "a string"
    if isinstance(data, list):
        return f"a Python list of length {len(data)}"
    if isinstance(data, dict):
        if "$array" in data:
            kind = data.get("type", "numpy.ndarray")
            return "a NumPy array" + ("" if kind == "numpy.ndarray" else f" (subclass {kind})")
        if "$scalar" in data:
            return f"a NumPy scalar ({data.get('type', '?')})"
        if "$tensor" in data:
            return f"a torch tensor (dtype {data.get('dtype', '?')})"
        if "$tuple" in data:
            return f"a tuple of length {len(data['$tuple'])}"
        if "$dict" in data:
            return "a dict"
        if "$float" in data:
            return f"the Python float {data['$float']}"
        if "$object" in data:
            return f"an object of type {data['$object']}"
    return "an unexpected value"


_RETURN_NUMPY = "return a NumPy array (np.ndarray)"
_RETURN_TORCH = "return a torch tensor"


def assert_array_type(data: object, what: str = "the result", framework: str = "numpy") -> None:
    """Fail unless the wire-encoded `data` is an array of the exercise's framework.

    NumPy exercises accept an ndarray or a NumPy scalar (a torch tensor or list inside the
    function is fine, as long as the returned value is an ndarray); torch exercises accept a
    tensor.
    """
    seen = describe_encoded(data)
    if framework == "numpy":
        if isinstance(data, dict) and ("$array" in data or "$scalar" in data):
            return
        if isinstance(data, dict) and "$tensor" in data:
            raise Fail(
                f"{what} is {seen}, but this notebook is NumPy: {_RETURN_NUMPY} "
                "(for a tensor t, t.numpy() or t.detach().numpy())."
            )
        if isinstance(data, list) or (isinstance(data, dict) and "$tuple" in data):
            raise Fail(
                f"{what} is {seen}: {_RETURN_NUMPY}, for example by computing with NumPy "
                "operations or wrapping the result in np.array(...)."
            )
        if data is None:
            raise Fail(f"{what} is None: is a `return` statement missing?")
        raise Fail(f"{what} is {seen}: {_RETURN_NUMPY}.")
    if framework == "torch":
        if isinstance(data, dict) and "$tensor" in data:
            return
        if isinstance(data, dict) and ("$array" in data or "$scalar" in data):
            raise Fail(
                f"{what} is {seen}, but this notebook is PyTorch: {_RETURN_TORCH} "
                "(computed with torch operations, so gradients can flow)."
            )
        if data is None:
            raise Fail(f"{what} is None: is a `return` statement missing?")
        raise Fail(f"{what} is {seen}: {_RETURN_TORCH}.")
    raise ValueError(f"unknown framework {framework!r}")


def error_message(response: Response, what: str) -> str:
    """'softmax(x) raised ValueError: ... (line 3 in softmax)' for a response with an error."""
    err = response.error
    where = err.get("where") or []
    at = f" ({where[-1]})" if where else ""
    return f"{what} raised {err['type']}: {plain_error_text(err['message'])}{at}"


_MATMUL = re.compile(
    r"matmul: Input operand (\d) has a mismatch in its core dimension (\d), with gufunc "
    r"signature \S+ \(size (\d+) is different from (\d+)\)"
)


# PyTorch's errors that notebook 05 teaches before they bite, in the notebooks' words.
_TORCH_ERRORS = (
    (
        re.compile(r"view size is not compatible with input tensor's size and stride"),
        lambda m: (
            "`.view` needs a tensor whose entries lie in memory in reading order (contiguous), "
            "and one that went through `.transpose` is not: use `.reshape(...)`, which copies "
            "when it must (or call `.contiguous()` before `.view`)"
        ),
    ),
    (
        re.compile(r"(?:Subtraction|Negation), the `-` operator, (?:with|on) a bool tensor"),
        lambda m: (
            "a boolean mask cannot be subtracted from 1 or negated with `-`: "
            "flip it with `~mask` (or `mask.logical_not()`)"
        ),
    ),
    (
        re.compile(r"mat1 and mat2 shapes cannot be multiplied \((\d+)x(\d+) and (\d+)x(\d+)\)"),
        lambda m: (
            "in a matrix product A @ B (an nn.Linear is one), A's last axis and B's "
            f"second-to-last axis must have the same size; here A's last axis has size "
            f"{m.group(2)} and B's second-to-last {m.group(3)}"
        ),
    ),
    (
        re.compile(
            r"The size of tensor a \((\d+)\) must match the size of tensor b \((\d+)\) "
            r"at non-singleton dimension (\d+)"
        ),
        lambda m: (
            f"two tensors combined entry by entry have sizes {m.group(1)} and {m.group(2)} "
            f"on axis {m.group(3)}: broadcasting needs equal sizes, or a size of 1"
        ),
    ),
    (
        re.compile(r"(?:must have|to have) the same dtype, but got:? (\w+) (?:and|!=) (\w+)"),
        lambda m: (
            f"PyTorch does not mix {m.group(1).lower()} and {m.group(2).lower()} tensors in one "
            "product: models work in float32, and torch.from_numpy keeps NumPy's float64 "
            "(convert with `.float()`)"
        ),
    ),
    (
        re.compile(r"(?:only supports boolean masks|expected condition to be a boolean tensor)"),
        lambda m: (
            "the mask must be a boolean tensor (True = may attend), not numbers: "
            "build it with a comparison, or convert it with `.bool()`"
        ),
    ),
)


def plain_error_text(message: str) -> str:
    """A library's error message in the words the notebooks use (NumPy's matmul speaks of
    gufunc signatures and core dimensions, which no notebook teaches; PyTorch's `.view` and mask
    errors name fixes notebook 05 teaches); others unchanged."""
    for pattern, words in _TORCH_ERRORS:
        found = pattern.search(message)
        if found:
            return words(found)
    found = _MATMUL.search(message)
    if found:
        operand, _, size, other = found.groups()
        ours, theirs = (
            ("B's second-to-last", "A's last")
            if operand == "1"
            else (
                "A's last",
                "B's second-to-last",
            )
        )
        return (
            f"in a matrix product A @ B, A's last axis and B's second-to-last axis must have "
            f"the same size; here {ours} axis has size {size} and {theirs} axis {other}"
        )
    return message


@overload
def returned(
    response: Response,
    what: str = ...,
    framework: str = ...,
    count: None = None,
    names: Sequence[str] | None = ...,
) -> np.ndarray: ...
@overload
def returned(
    response: Response,
    what: str = ...,
    framework: str = ...,
    *,
    count: int,
    names: Sequence[str] | None = ...,
) -> tuple[np.ndarray, ...]: ...
@overload
def returned(
    response: Response, what: str, framework: str, count: int, names: Sequence[str] | None = ...
) -> tuple[np.ndarray, ...]: ...
def returned(
    response: Response,
    what: str = "the result",
    framework: str = "numpy",
    count: int | None = None,
    names: Sequence[str] | None = None,
) -> np.ndarray | tuple[np.ndarray, ...]:
    """The response's value as plain np.ndarrays, after checking what kind of value came back.

    count=None: one array. count=k: a tuple (or list) of k arrays, e.g. (weights, output);
    names labels them in messages ("the weights", "the output").
    """
    if response.error:
        raise Fail(error_message(response, what))
    data = response.raw.get("value")
    if count is None:
        assert_array_type(data, what, framework)
        return np.asarray(response.decode(data))
    items = None
    if isinstance(data, dict) and "$tuple" in data:
        items = data["$tuple"]
    elif isinstance(data, list):
        items = data
    names = names or [f"item {i} of {what}" for i in range(count)]
    if items is None or len(items) != count:
        raise Fail(
            f"{what} should be a tuple of {count} ({', '.join(names)}); it is "
            f"{describe_encoded(data)}."
        )
    out = []
    for item, name in zip(items, names, strict=True):
        assert_array_type(item, name, framework)
        out.append(np.asarray(response.decode(item)))
    return tuple(out)


def as_array(value: object, what: str = "the result") -> np.ndarray:
    """A decoded value as a plain ndarray; anything else (Opaque, str, None, dict) is a Fail."""
    if isinstance(value, Opaque):
        raise Fail(f"{what} is {value.type_name}, not an array.")
    if isinstance(value, np.ndarray):
        return np.array(value, copy=False, subok=False)
    if isinstance(value, np.generic | int | float | bool):
        return np.asarray(value)
    raise Fail(f"{what} is a {type(value).__name__}, not an array.")


# ---------------------------------------------------------------- shape, dtype, non-finite


def shape_hint(got: Sequence[int], expected: Sequence[int]) -> str:
    """Why a shape might be wrong, in a few words, or ''."""
    got, expected = tuple(got), tuple(expected)
    if not got and expected:
        return "a single number came back: were all the values added up into one?"
    if len(got) == len(expected) and len(got) >= 2:
        if got == expected[:-2] + expected[-2:][::-1]:
            return "did you transpose?"
        if sorted(got) == sorted(expected):
            return "the same sizes in another order."
    if 2 <= len(got) < len(expected) and got == expected[len(expected) - len(got) :]:
        lead = expected[: len(expected) - len(got)]
        return f"the leading {_axes(lead)} of {_sizes(lead)} missing."
    if len(got) > len(expected) and got[len(got) - len(expected) :] == expected:
        lead = got[: len(got) - len(expected)]
        extra = "is an extra leading axis" if len(lead) == 1 else "are extra leading axes"
        return f"there {extra} of {_sizes(lead).rsplit(' ', 1)[0]}."
    if len(got) == len(expected) - 1 and got == expected[:-1]:
        return "the last axis is missing: was something summed or averaged over it?"
    if len(got) == len(expected) + 1 and got[:-1] == expected:
        return "there is an extra last axis: is a sum over it missing?"
    if int(np.prod(got, dtype=np.int64)) == int(np.prod(expected, dtype=np.int64)):
        return "the same number of entries arranged differently: check your reshape."
    return ""


def _axes(sizes: Sequence[int]) -> str:
    return "axis" if len(sizes) == 1 else "axes"


def _sizes(sizes: Sequence[int]) -> str:
    """'size 2 is' / 'sizes 2, 3 are'."""
    if len(sizes) == 1:
        return f"size {sizes[0]} is"
    return f"sizes {', '.join(map(str, sizes))} are"


def assert_shape(got: np.ndarray, shape: Sequence[int], what: str = "the result") -> None:
    got_shape = np.shape(got)
    if tuple(got_shape) != tuple(shape):
        hint = shape_hint(got_shape, shape)
        raise Fail(
            f"{what}: expected shape {shape_str(shape)}, got {shape_str(got_shape)}"
            + (f": {hint}" if hint else ".")
        )


_KIND_NAMES = {
    "b": "booleans",
    "i": "integers",
    "u": "unsigned integers",
    "f": "floats",
    "c": "complex numbers",
}


def assert_dtype_kind(got: np.ndarray, expected: np.ndarray, what: str = "the result") -> None:
    """Fail when got's dtype kind (bool/int/float/complex) differs from expected's."""
    gk, ek = np.asarray(got).dtype.kind, np.asarray(expected).dtype.kind
    if gk == ek or (ek in "iu" and gk in "iu"):
        return
    seen = f"{_KIND_NAMES.get(gk, 'values of dtype ' + str(np.asarray(got).dtype))}"
    if ek == "b":
        raise Fail(
            f"{what} holds {seen} (dtype {np.asarray(got).dtype}); expected a boolean array "
            "(True/False): create it with dtype=bool or compare, e.g. `... == 1`."
        )
    if ek == "f" and gk in "iub":
        raise Fail(
            f"{what} holds {seen} (dtype {np.asarray(got).dtype}); expected floats: "
            "is an integer division or a cast to int in the way?"
        )
    if gk == "c":
        raise Fail(f"{what} holds complex numbers; expected real {_KIND_NAMES.get(ek, ek)}.")
    raise Fail(f"{what} holds {seen}; expected {_KIND_NAMES.get(ek, ek)}.")


def assert_finite_like(got: np.ndarray, expected: np.ndarray, what: str = "the result") -> None:
    """Fail when got has NaN/inf where expected is finite, with counts and likely causes."""
    got = np.asarray(got)
    if got.dtype.kind not in "fc":
        return
    finite_expected = np.isfinite(np.asarray(expected, dtype=float))
    nan = np.isnan(got) & finite_expected
    inf = np.isinf(got) & finite_expected
    total = got.size
    if nan.any():
        raise Fail(
            f"{what}: {int(nan.sum())} of {total} values are NaN: did you compute exp of a "
            "huge number (inf / inf), or 0 * inf, or divide 0 by 0?"
        )
    if (inf & (got > 0)).any():
        raise Fail(
            f"{what}: {int(inf.sum())} of {total} values are infinite: did exp overflow "
            "(exp(710) is already inf in float64)?"
        )
    if inf.any():  # -inf only: nothing overflowed (log(0) is -inf, so is a -inf passed along)
        raise Fail(
            f"{what}: {int(inf.sum())} of {total} values are -inf, where the expected values "
            "are finite numbers."
        )
    # expected non-finite entries must be matched exactly (e.g. -inf scores)
    bad = ~finite_expected & ~(
        np.isnan(got) & np.isnan(np.asarray(expected, dtype=float))
        | (got == np.asarray(expected, dtype=float))
    )
    if bad.any():
        raise Fail(
            f"{what}: {int(bad.sum())} of {total} entries should be ±inf or NaN and are not."
        )


# ---------------------------------------------------------------- values


def difference_summary(
    got: np.ndarray,
    expected: np.ndarray,
    rtol: float = FLOAT64["rtol"],
    atol: float = FLOAT64["atol"],
) -> str:
    """'7 of 20 entries differ (largest difference 0.31, at [2, 1])' or '' if all close."""
    got = np.asarray(got, dtype=float)
    expected = np.asarray(expected, dtype=float)
    with np.errstate(invalid="ignore", over="ignore"):
        close = _close_mask(got, expected, rtol, atol)
        if close.all():
            return ""
        diff = np.where(close, 0.0, abs(got - expected))
        diff = np.where(diff != diff, np.inf, diff)
    worst = np.unravel_index(int(np.argmax(diff)), diff.shape) if diff.ndim else ()
    where = f", at {fmt_index(worst)}" if diff.ndim else ""
    n_bad = int((~close).sum())
    return (
        f"{n_bad} of {got.size} entries differ from the expected values "
        f"(largest difference {fmt(diff[worst])}{where})"
    )


def assert_close(
    got: npt.ArrayLike,
    expected: npt.ArrayLike,
    what: str = "the output",
    rtol: float = 1e-6,
    atol: float = 1e-8,
    hint: str = "",
) -> None:
    """Fail unless got matches expected: shape, then dtype kind, then NaN/inf, then values.

    `hint` is appended to a value mismatch message. A float32 answer that is right only to
    float32 precision, where float64 is expected, gets a message saying exactly that.
    """
    got = np.asarray(got)
    expected = np.asarray(expected)
    assert_shape(got, expected.shape, what)
    assert_dtype_kind(got, expected, what)
    if expected.dtype.kind == "b":
        wrong = got != expected
        if wrong.any():
            raise Fail(
                f"{what}: {int(wrong.sum())} of {got.size} entries are wrong"
                f" (the first at {fmt_index(np.argwhere(wrong)[0])})"
                + (f"; {hint}" if hint else ".")
            )
        return
    assert_finite_like(got, expected, what)
    summary = difference_summary(got, expected, rtol, atol)
    if not summary:
        return
    if (
        got.dtype == np.float32
        and expected.dtype == np.float64
        and not difference_summary(got, expected, **FLOAT32)
    ):
        raise Fail(
            f"{what} is right only to float32 precision: your result has dtype float32, "
            "float64 is expected. Keep the inputs' float64 (for torch: dtype=torch.float64).",
            fraction=0.5,
        )
    raise Fail(f"{what}: {summary}" + (f"; {hint}" if hint else "."))


def is_close(
    got: npt.ArrayLike, expected: npt.ArrayLike, rtol: float = 1e-6, atol: float = 1e-8
) -> bool:
    """True when got has expected's shape and matches it (NaN matching NaN); never raises."""
    try:
        got = np.asarray(got, dtype=float)
        expected = np.asarray(expected, dtype=float)
    except (TypeError, ValueError):
        return False
    if got.shape != expected.shape:
        return False
    with np.errstate(invalid="ignore", over="ignore"):
        return bool(_close_mask(got, expected, rtol, atol).all())


def _close_mask(got: np.ndarray, expected: np.ndarray, rtol: float, atol: float) -> np.ndarray:
    """Elementwise |got - expected| <= atol + rtol |expected|, NaN matching NaN, inf matching inf.

    Written with array operators rather than np.isclose/np.allclose, so that a student's code
    that replaces those functions (in the visible checks, which share the student's process)
    cannot change a verdict.
    """
    got = np.asarray(got, dtype=float)
    expected = np.asarray(expected, dtype=float)
    close = abs(got - expected) <= atol + rtol * abs(expected)
    close = close | (got == expected) | ((got != got) & (expected != expected))
    return np.asarray(close, dtype=bool)


# ---------------------------------------------------------------- properties


def row_sums(A: npt.ArrayLike, axis: int = -1) -> np.ndarray:
    with np.errstate(invalid="ignore", over="ignore"):
        return np.asarray(A, dtype=float).sum(axis=axis)


def rows_sum_message(A: np.ndarray, axis: int = -1, atol: float = 1e-6) -> str:
    """'row [0, 2] sums to 1.7' for the row farthest from summing to 1, or '' if all do."""
    sums = row_sums(A, axis)
    off = np.abs(sums - 1.0)
    off = np.where(np.isnan(off), np.inf, off)
    if off.size == 0 or float(off.max()) <= atol:
        return ""
    worst = np.unravel_index(int(np.argmax(off)), off.shape) if off.ndim else ()
    n_bad = int((off > atol).sum())
    label = f"row {fmt_index(worst)}" if off.ndim else "the sum"
    return (
        f"{n_bad} of {off.size} rows do not sum to 1 ({label} sums to {fmt(sums[worst], 4)})"
        if off.ndim
        else f"{label} is {fmt(sums, 4)}, not 1"
    )


def columns_sum_to_one(A: npt.ArrayLike, atol: float = 1e-6) -> bool:
    """True when A (..., n_q, n_k) with n_q > 1 has every column summing to 1 (a wrong-axis sign)."""
    A = np.asarray(A, dtype=float)
    if A.ndim < 2 or A.shape[-2] < 2:
        return False
    with np.errstate(invalid="ignore"):
        return bool(np.all(np.abs(A.sum(axis=-2) - 1.0) <= atol))


def assert_rows_sum_to_one(
    A: npt.ArrayLike, what: str = "the weights", axis: int = -1, atol: float = 1e-6, hint: str = ""
) -> None:
    """Fail unless A is non-negative and sums to 1 along `axis`."""
    A = np.asarray(A)
    with np.errstate(invalid="ignore"):
        negative = A < -atol
    if negative.any():
        raise Fail(
            f"{what}: {int(negative.sum())} of {A.size} weights are negative (the smallest is "
            f"{fmt(np.nanmin(A))}); exp-normalised weights are never negative."
        )
    message = rows_sum_message(A, axis, atol)
    if message:
        raise Fail(f"{what}: {message}" + (f"; {hint}" if hint else "."))


def assert_unchanged(before: object, after: object, what: str = "the input") -> None:
    """Fail when an input came back modified (the harness answers args_after for op call)."""
    if isinstance(before, dict):
        if not isinstance(after, dict) or set(before) != set(after):
            raise Fail(f"{what} was modified by the call: keys were added or removed.")
        for k in before:
            assert_unchanged(before[k], after[k], f"{what}[{k!r}]")
        return
    if isinstance(before, np.ndarray):
        after = np.asarray(after) if not isinstance(after, Opaque) else None
        if after is None or after.shape != before.shape:
            raise Fail(f"{what} was modified by the call (its shape changed).")
        same = (
            (after == before) | (np.isnan(after) & np.isnan(before))
            if before.dtype.kind == "f"
            else after == before
        )
        if not np.all(same):
            raise Fail(
                f"{what} was modified in place ({int((~same).sum())} of {before.size} entries "
                "changed): functions must not change their inputs. Look for `x -= ...`, "
                "`x[...] = ...` or `out=` on an input; compute into a new array instead."
            )
        return
    if before != after:
        raise Fail(f"{what} was modified by the call.")
