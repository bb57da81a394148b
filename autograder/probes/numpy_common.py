"""Shared pieces of the NumPy probes (notebooks 01-04): call requests and judges.

A value case calls the student's function once and compares every output with the reference
computed in this (trusted) process on the same inputs; on a mismatch it asks the misconception
variants (autograder.misconceptions.numpy_variants) which known mistake reproduces the output,
and adds that hint. Property cases (causality, equivariance, inputs unmodified) compare the
student's outputs with each other, not with the reference.
"""

import numpy as np

from autograder import reference as ref
from autograder.judging import compare
from autograder.misconceptions import numpy_variants as nv
from autograder.probes.base import Case, Fail

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

OUTPUTS = {
    "soft_lookup": ("the weights", "the output"),
    "attend": ("the weights", "the output"),
    "scaled_dot_product_attention": ("Z", "A"),
    "self_attention": ("Z", "A"),
    "multi_head_attention": ("Y", "A"),
}
WEIGHTS = {"soft_lookup": 0, "attend": 0, "scaled_dot_product_attention": 1, "self_attention": 1}
WEIGHTS["multi_head_attention"] = 1


def _describe(name, value):
    if isinstance(value, np.ndarray):
        if value.dtype == bool:
            return f"{name} bool {compare.shape_str(value.shape)}"
        return f"{name} {compare.shape_str(value.shape)}"
    return f"{name}={value!r}"


def label(function, args, kwargs=None):
    """'attention_scores(Q (2, 4, 8), K (2, 5, 8))': the call, by shapes, for messages."""
    names = PARAMS.get(function, ())
    parts = [_describe(names[i] if i < len(names) else f"arg{i}", a) for i, a in enumerate(args)]
    parts += [_describe(k, v) for k, v in (kwargs or {}).items()]
    return f"{function}({', '.join(parts)})"


def call(*args, **kwargs):
    return {"op": "call", "args": list(args), "kwargs": kwargs}


def expected_of(function, args, kwargs=None):
    with np.errstate(all="ignore"):
        return getattr(ref, function)(*args, **(kwargs or {}))


def got_of(response, function, args, kwargs=None):
    """The student's outputs as plain arrays (a tuple for pair-returning functions)."""
    where = label(function, args, kwargs)
    if response.error:
        ids, sentence = nv.error_signature(response.error, function=function)
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


SCORES = {"scaled_scores", "attention_scores"}  # outputs that are scores: scale ratio hints


def check_output(function, got, args, kwargs=None, output=None, large=False):
    """Compare one output with the reference; on failure name the misconceptions it shows."""
    expected = expected_of(function, args, kwargs)
    if output is not None:
        expected = expected[output]
    names = OUTPUTS.get(function)
    where = label(function, args, kwargs)
    what = where if output is None else f"{names[output]} returned by {where}"
    try:
        compare.assert_close(got, expected, what=what)
    except Fail as failure:
        try:
            ids, sentence = _diagnosis(function, got, expected, args, kwargs, output, large)
        except Exception:  # noqa: BLE001 - a diagnosis must never hide the failure itself
            ids, sentence = [], ""
        text = failure.message
        if sentence:
            text += f" {sentence[0].upper()}{sentence[1:]}"
        raise Fail(text + nv.explain(ids), ids, failure.fraction) from None


def _diagnosis(function, got, expected, args, kwargs, output, large):
    """(ids, sentence) explaining a mismatch: known variants first, then property signatures."""
    ids = nv.diagnose(function, got, args, kwargs, output)
    sentence = ""
    same_shape = np.shape(got) == np.shape(expected)
    if function in SCORES:
        scale_ids, sentence = nv.scale_signature(got, expected, int(np.shape(args[0])[-1]))
        ids = ids or scale_ids
    is_weights = WEIGHTS.get(function, -1) == output
    if not ids and is_weights and same_shape:
        mask = (kwargs or {}).get("mask")
        ids, sentence = nv.weights_signature(got, mask=mask, large=large)
    if not ids and large and np.asarray(got).dtype.kind == "f":
        with np.errstate(all="ignore"):
            if not np.all(np.isfinite(got)):
                ids = ["softmax-unstable"]
    if is_weights and not sentence and same_shape:
        rows = compare.rows_sum_message(got)
        sentence = f"({rows})" if rows else ""
    return ids, sentence


def check_call(response, function, args, kwargs=None, large=False):
    """The student's outputs for one call, each checked against the reference; returns them."""
    got = got_of(response, function, args, kwargs)
    if isinstance(got, tuple):
        first = WEIGHTS.get(function)  # the weights first: most mistakes start there
        order = sorted(range(len(got)), key=lambda k: k != first)
        for k in order:
            check_output(function, got[k], args, kwargs, output=k, large=large)
    else:
        check_output(function, got, args, kwargs, large=large)
    return got


# For batched cases: which arguments carry the leading batch dimensions, and their own ndim.
BATCHED_ARGS = {
    "attention_scores": ((0, 1), 2),
    "scaled_dot_product_attention": ((0, 1, 2), 2),
    "self_attention": ((0,), 2),
    "split_heads": ((0,), 2),
    "merge_heads": ((0,), 3),
    "multi_head_attention": ((0,), 2),
}


def first_of_batch(function, args):
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
    function, name, points, args=None, kwargs=None, calls=None, large=False, batched=False
):
    """Call once (or once per (args, kwargs) in calls); every output must match the reference.

    batched=True (one call with leading batch dimensions) also asks for the first element of
    the batch alone: if that one is right, the failure is named batch-dims-unsupported.
    """
    calls = calls or [(args, kwargs or {})]
    requests = [call(*a, **kw) for a, kw in calls]
    if batched:
        single = first_of_batch(function, calls[0][0])
        requests.append(call(*single, **calls[0][1]))

    def judge(responses):
        for response, (a, kw) in zip(responses, calls, strict=False):
            try:
                check_call(response, function, a, kw, large=large)
            except Fail as failure:
                if not batched:
                    raise
                try:
                    check_call(responses[-1], function, single, kw, large=large)
                except Fail:
                    raise failure from None
                ids = ["batch-dims-unsupported"]
                raise Fail(
                    f"{failure.message} The same call on one element of the batch is right, so "
                    "the leading batch dimensions are the trouble." + nv.explain(ids),
                    ids,
                    failure.fraction,
                ) from None

    return Case(function, name, points, requests, judge)


def unmodified_case(function, points, args, kwargs=None, name="leaves its inputs unmodified"):
    """Call once; the result must be right AND every array argument must come back unchanged."""
    kwargs = kwargs or {}
    inner = value_case(function, name, points, args, kwargs).judge

    def judge(responses):
        response = responses[0]
        after = response.raw.get("args_after") or []
        names = PARAMS.get(function, ())
        for k, before in enumerate(args):
            if k >= len(after):
                break
            if isinstance(before, np.ndarray | dict):
                arg = names[k] if k < len(names) else f"argument {k}"
                try:
                    compare.assert_unchanged(before, response.decode(after[k]), f"the input {arg}")
                except Fail as failure:
                    raise Fail(
                        failure.message + nv.explain(["modifies-input"]), ["modifies-input"]
                    ) from None
        inner(responses)

    return Case(function, name, points, [call(*args, **kwargs)], judge)


def well_formed(got, function, args, kwargs=None, output=None):
    """Fail unless got has the reference's shape, a real dtype and no NaN/inf (values unchecked)."""
    expected = expected_of(function, args, kwargs)
    if output is not None:
        expected, name = expected[output], OUTPUTS[function][output]
    else:
        name = "the result"
    what = f"{name} returned by {label(function, args, kwargs)}"
    compare.assert_shape(got, np.shape(expected), what)
    compare.assert_dtype_kind(got, expected, what)
    compare.assert_finite_like(got, expected, what)
    if WEIGHTS.get(function, -1) == output:
        compare.assert_rows_sum_to_one(got, what)


def same_outputs(a, b, what, tol=1e-9):
    """Fail unless two outputs of the student's (already type-checked) agree closely."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape:
        raise Fail(f"{what}: the two calls returned shapes {a.shape} and {b.shape}.")
    summary = compare.difference_summary(a, b, rtol=1e-7, atol=tol)
    if summary:
        raise Fail(f"{what}: {summary.replace('the expected values', 'each other')}.")


def causal_mask_of(n):
    return np.tril(np.ones((n, n), dtype=bool))


def random_mask(rng, shape):
    """A random boolean mask in which every query row may attend to at least one key."""
    mask = rng.random(shape) < 0.5
    keep = rng.integers(0, shape[-1], size=shape[:-1])[..., None]
    return mask | (np.arange(shape[-1]) == keep)
