"""Shared pieces of the NumPy probes (notebooks 01-04): call requests and the data of a call.

A value case calls the student's function once; when it builds the case, the probe computes
with the reference what the call must return and with the misconception variants
(numpy_shared.variants) what each known mistake returns on the same inputs,
and stores both in the case's Judgement. The judge (numpy_judges.value, numpy_shared/judges.py)
compares the student's outputs with that data and names the mistake an output reproduces.
Property cases (causality, equivariance, inputs unmodified) compare the student's outputs with
each other; they only need the expected shapes and dtypes.
"""

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from autograder.course import model_answers as ref
from autograder.course.numpy_shared.judges_calls import SCORES, WEIGHTS
from autograder.course.numpy_shared.variants import variant_outputs
from autograder.course.probes import Case
from autograder.judging import Judgement, compare

PARAMS = {
    "lookup": ("table", "query"),
    "similarity": ("query", "keys"),
    "percentages": ("scores",),
    "soft_lookup": ("query", "keys", "values"),
    "softmax": ("x",),
    "scaled_scores": ("query", "keys"),
    "attend": ("query", "keys", "values"),
    "attention_for_token": ("X", "i", "W_q", "W_k", "W_v"),
    "attention_scores": ("Q", "K"),
    "causal_mask": ("n",),
    "scaled_dot_product_attention": ("Q", "K", "V"),
    "self_attention": ("X", "W_q", "W_k", "W_v"),
    "mha_shapes": ("n", "d", "d_k", "H"),
    "split_heads": ("X", "n_heads"),
    "merge_heads": ("X",),
    "multi_head_attention": ("X", "W_q", "W_k", "W_v", "W_o"),
}


def _describe(name: str, value: Any) -> str:
    if isinstance(value, list):
        return f"{name} (a Python list of {len(value)})"
    if isinstance(value, np.ndarray):
        if value.dtype == bool:
            return f"{name} bool {compare.shape_str(value.shape)}"
        return f"{name} {compare.shape_str(value.shape)}"
    return f"{name}={value!r}"


def label(function: str, args: Sequence[Any], kwargs: dict[str, Any] | None = None) -> str:
    """'attention_scores(Q (2, 4, 8), K (2, 5, 8))': the call, by shapes, for messages."""
    names = PARAMS.get(function, ())
    parts = [_describe(names[i] if i < len(names) else f"arg{i}", a) for i, a in enumerate(args)]
    parts += [_describe(k, v) for k, v in (kwargs or {}).items()]
    return f"{function}({', '.join(parts)})"


def call(*args: Any, **kwargs: Any) -> dict[str, Any]:
    return {"op": "call", "args": list(args), "kwargs": kwargs}


def expected_of(function: str, args: Sequence[Any], kwargs: dict[str, Any] | None = None) -> Any:
    with np.errstate(all="ignore"):
        return getattr(ref, function)(*args, **(kwargs or {}))


def call_data(
    function: str, args: Sequence[Any], kwargs: dict[str, Any] | None = None, variants: bool = True
) -> dict[str, Any]:
    """What a judge needs to know of one call: its label, the right output and the variants'.

    variants=False leaves the variants out: for property cases, which only check shapes.
    """
    kwargs = kwargs or {}
    data: dict[str, Any] = {
        "where": label(function, args, kwargs),
        "expected": expected_of(function, args, kwargs),
    }
    if variants:
        data["variants"] = variant_outputs(function, args, kwargs)
    if function in SCORES:
        data["d_k"] = int(np.shape(args[0])[-1])
    if function in WEIGHTS:
        data["mask"] = kwargs.get("mask")
    return data


# For batched cases: which arguments carry the leading batch dimensions, and their own ndim.
BATCHED_ARGS = {
    "attention_scores": ((0, 1), 2),
    "scaled_dot_product_attention": ((0, 1, 2), 2),
    "self_attention": ((0,), 2),
    "split_heads": ((0,), 2),
    "merge_heads": ((0,), 3),
    "multi_head_attention": ((0,), 2),
}


def first_of_batch(function: str, args: Sequence[Any]) -> list[Any]:
    """The same call on the first element of the batch (no leading dimensions)."""
    indices, base = BATCHED_ARGS[function]
    out = list(args)
    for i in indices:
        a = out[i]
        while a.ndim > base:
            a = a[0]
        out[i] = np.ascontiguousarray(a)
    return out


def value_case(
    function: str,
    name: str,
    points: float,
    args: Sequence[Any] | None = None,
    kwargs: dict[str, Any] | None = None,
    calls: list[tuple[Sequence[Any], dict[str, Any]]] | None = None,
    large: bool = False,
    batched: bool = False,
    helpers: bool = True,
    lists: list[list[int]] | None = None,
) -> Case:
    """Call once (or once per (args, kwargs) in calls); every output must match the reference.

    batched=True (one call with leading batch dimensions) also asks for the first element of
    the batch alone: if that one is right, the failure is named batch-dims-unsupported.
    lists: [[k, j], ...]: call k passes Python lists where call j passes arrays; when call j is
    right and call k is not, the failure is named list-input-unsupported.
    helpers=True also asks the student's own earlier functions (HELPERS) for what the first
    call hands them: optional requests, which let the judge blame the earlier function when
    the answer is exactly what that function's fault produces (numpy_judges.blame).
    """
    calls = calls or [(args or [], kwargs or {})]
    requests = [call(*a, **kw) for a, kw in calls]
    params: dict[str, Any] = {
        "function": function,
        "calls": [call_data(function, a, kw) for a, kw in calls],
    }
    if large:
        params["large"] = True
    if lists:
        params["lists"] = lists
    if batched:
        single = first_of_batch(function, calls[0][0])
        requests.append(call(*single, **calls[0][1]))
        params["single"] = call_data(function, single, calls[0][1])
    if helpers and function in HELPERS:
        params["helpers"] = []
        for helper, helper_args, links in HELPERS[function](*calls[0][0], **calls[0][1]):
            params["helpers"].append(
                {
                    "function": helper,
                    "origin": _origin(helper, function),
                    "index": len(requests),
                    "call": call_data(helper, helper_args[0], helper_args[1]),
                    "links": links,
                }
            )
            requests.append(call(*helper_args[0], **helper_args[1]) | {"target": helper})
        params["optional"] = [h["index"] for h in params["helpers"]]
    return Case(function, name, points, requests, Judgement("numpy_judges.value", params))


def _origin(helper: str, function: str) -> str:
    """Where the student wrote `helper`, as seen from `function`'s notebook."""
    from autograder.curriculum import NOTEBOOK_OF

    stem = NOTEBOOK_OF[helper].stem
    if stem == NOTEBOOK_OF[function].stem:
        return "above in this notebook"
    return f"from notebook {stem[:2]}, which this notebook imports"


def _masked_scores(Q: np.ndarray, K: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    S = ref.attention_scores(Q, K)
    return S if mask is None else np.where(mask, S, -np.inf)


def _heads_qkv(
    X: np.ndarray, W_q: np.ndarray, W_k: np.ndarray, W_v: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    Xh = X[..., None, :, :]
    return Xh @ W_q, Xh @ W_k, Xh @ W_v


# The student's earlier functions that a graded name's model answer calls, deepest first, and
# what the first call of a value case hands each: function -> (args...) -> [(helper, (args,
# kwargs), links)], links: [[output of function, output of helper], ...] (None: the whole value)
# that are equal when the answer is right given that helper's own result; links None: the
# answer transforms the helper's result further, and only the same named mistake is evidence.
Helper = tuple[str, tuple[Sequence[Any], dict[str, Any]], list[list[int | None]] | None]
HELPERS: dict[str, Callable[..., list[Helper]]] = {
    "soft_lookup": lambda q, K, V: [
        ("percentages", ([K @ q], {}), [[0, None]]),
        ("similarity", ([q, K], {}), None),
    ],
    "attend": lambda q, K, V: [
        ("softmax", ([ref.scaled_scores(q, K)], {}), [[0, None]]),
        ("scaled_scores", ([q, K], {}), None),
    ],
    "attention_for_token": lambda X, i, W_q, W_k, W_v, causal=True: [
        (
            "attend",
            (
                [
                    X[i] @ W_q,
                    (X[: i + 1] if causal else X) @ W_k,
                    (X[: i + 1] if causal else X) @ W_v,
                ],
                {},
            ),
            [[None, 1]],
        )
    ],
    "scaled_dot_product_attention": lambda Q, K, V, mask=None: [
        ("softmax", ([_masked_scores(Q, K, mask)], {}), [[1, None]]),
        ("attention_scores", ([Q, K], {}), None),
    ],
    "self_attention": lambda X, W_q, W_k, W_v, mask=None: [
        ("softmax", ([_masked_scores(X @ W_q, X @ W_k, mask)], {}), [[1, None]]),
        (
            "scaled_dot_product_attention",
            ([X @ W_q, X @ W_k, X @ W_v], {"mask": mask} if mask is not None else {}),
            [[0, 0], [1, 1]],
        ),
    ],
    "multi_head_attention": lambda X, W_q, W_k, W_v, W_o, mask=None: [
        (
            "softmax",
            ([_masked_scores(*_heads_qkv(X, W_q, W_k, W_v)[:2], mask)], {}),
            [[1, None]],
        ),
        (
            "scaled_dot_product_attention",
            (_heads_qkv(X, W_q, W_k, W_v), {"mask": mask} if mask is not None else {}),
            [[1, 1]],
        ),
    ],
}


def unmodified_case(
    function: str,
    points: float,
    args: Sequence[Any],
    kwargs: dict[str, Any] | None = None,
    name: str = "leaves its inputs unmodified",
    values: bool = False,
) -> Case:
    """Call once; every array argument must come back unchanged (and the result must have the
    right shape). values=True also checks the result's values: only for a case whose name says
    so ("a single key (m = 1) and inputs unmodified"), never for a plain "leaves its inputs
    unmodified", which must fail only when an input was modified."""
    kwargs = kwargs or {}
    names = PARAMS.get(function, ())
    inputs = [
        [k, names[k] if k < len(names) else f"argument {k}", before]
        for k, before in enumerate(args)
        if isinstance(before, np.ndarray | dict)
    ]
    params: dict[str, Any] = {
        "function": function,
        "call": call_data(function, args, kwargs),
        "inputs": inputs,
    }
    if values:
        params["values"] = True
    return Case(
        function,
        name,
        points,
        [call(*args, **kwargs)],
        Judgement("numpy_judges.unmodified", params),
    )


def causal_mask_of(n: int) -> np.ndarray:
    return ref.causal_mask(n)


def random_mask(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """A random boolean mask in which every query row may attend to at least one key."""
    mask = rng.random(shape) < 0.5
    keep = rng.integers(0, shape[-1], size=shape[:-1])[..., None]
    return mask | (np.arange(shape[-1]) == keep)


def overflowing(
    query: np.ndarray, keys: np.ndarray, least: float = 1500.0
) -> tuple[np.ndarray, np.ndarray]:
    """(query, keys) rescaled so that the largest score keys @ query is at least `least`:
    exp overflows (exp(710) is inf) on every draw, so an unshifted softmax always shows."""
    scores = keys @ query
    j = int(np.argmax(np.abs(scores)))
    if scores[j] < 0:
        query = -query
    return query * max(1.0, least / abs(float(scores[j]))), keys


def loud(
    X: np.ndarray,
    W_q: np.ndarray,
    W_k: np.ndarray,
    *,
    least: float = 3000.0,
    row: int | None = None,
) -> np.ndarray:
    """X scaled so that its self-attention scores x_i W_q . x_j W_k / sqrt(d_k) are large (they
    scale with the square of X): exp overflows without a shift, and rows whose scores lie far
    below the largest underflow when the whole array's maximum is subtracted, on every draw.

    row=None: the largest |score| becomes at least `least`. row=i: token i's scores against
    tokens 0..i, whose largest (signed) score becomes at least `least` in size: positive, exp
    overflows; negative, every exp of the row underflows to 0 (0/0)."""
    S = (X @ W_q) @ np.swapaxes(X @ W_k, -1, -2) / np.sqrt(W_q.shape[-1])
    size = np.max(np.abs(S)) if row is None else abs(np.max(S[row, : row + 1]))
    return X * max(1.0, np.sqrt(least / float(size)))
