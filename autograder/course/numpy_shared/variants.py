"""Known-wrong NumPy implementations (notebooks 01-04): what each typical mistake returns.

VARIANTS[function] lists (misconception id, wrong implementation) pairs, written the way a
student would write them. A probe runs them when it builds a case, on the very inputs the
student's function will get, and stores their outputs in the case:

    variants = variant_outputs("attention_scores", (Q, K))        # [[id, output], ...]

A judge (autograder.judging.numpy_signatures.diagnose_from) then names the misconceptions
whose output the student's reproduces (and the reference's doesn't). This module is the
instructor's side only: it is not shipped to students.
"""

import importlib

import numpy as np

from autograder import reference as ref
from autograder.course.n02_dot_product_softmax.reference import softmax
from autograder.curriculum import NOTEBOOK_OF

# ---------------------------------------------------------------- building blocks


def softmax_unstable(x, axis=-1):
    e = np.exp(np.asarray(x, dtype=float))
    return e / e.sum(axis=axis, keepdims=True)


def softmax_on_axis(x, axis):
    return softmax(x, axis=axis)


def softmax_global_max(x, axis=-1):
    """Subtracts the maximum of the whole array, not each row's: right until a row lies ~745
    below the array's maximum, where every exp of that row underflows to 0 (0/0)."""
    x = np.asarray(x, dtype=float)
    e = np.exp(x - np.max(x))
    return e / e.sum(axis=axis, keepdims=True)


_SOFTMAXES = {
    "stable": softmax,
    "unstable": softmax_unstable,
    "global-max": softmax_global_max,
}


def swap(K):
    return np.swapaxes(K, -1, -2)


def sdpa(
    Q,
    K,
    V,
    mask=None,
    scale=None,
    softmax_axis=-1,
    mask_mode="before",
    transpose=False,
    softmax="stable",
):
    """Scaled dot-product attention with one knob per mistake."""
    d_k = Q.shape[-1]
    scale = np.sqrt(d_k) if scale is None else scale
    S = (K @ swap(Q) if transpose else Q @ swap(K)) / scale
    if mask is not None and mask_mode == "inverted":
        S = np.where(mask, -np.inf, S)
    elif mask is not None and mask_mode == "before":
        S = np.where(mask, S, -np.inf)
    elif mask is not None and mask_mode == "zero":
        S = np.where(mask, S, 0.0)
    A = _SOFTMAXES[softmax](S, axis=softmax_axis)
    if mask is not None and mask_mode == "after":
        A = A * mask
    return A @ V, A


# ---------------------------------------------------------------- notebook 04


def _split_variants():
    def without_transpose(X, n_heads):
        *lead, n, w = X.shape
        return X.reshape(*lead, n_heads, n, w // n_heads)

    def strided(X, n_heads):
        *lead, n, w = X.shape
        return np.moveaxis(X.reshape(*lead, n, w // n_heads, n_heads), -1, -3)

    def count_as_width(X, n_heads):
        *lead, n, w = X.shape
        return np.swapaxes(X.reshape(*lead, n, w // n_heads, n_heads), -3, -2)

    return [
        ("heads-reshape-without-transpose", without_transpose),
        ("heads-strided-columns", strided),
        ("heads-count-as-width", count_as_width),
    ]


def _merge_variants():
    def without_transpose(X):
        *lead, H, n, d_k = X.shape
        return X.reshape(*lead, n, H * d_k)

    def strided(X):
        *lead, H, n, d_k = X.shape
        return np.moveaxis(X, -3, -1).reshape(*lead, n, H * d_k)

    return [
        ("heads-reshape-without-transpose", without_transpose),
        ("heads-strided-columns", strided),
    ]


def _mha(X, W_q, W_k, W_v, W_o, mask=None, merge=ref.merge_heads, project=True, **knobs):
    Xh = X[..., None, :, :]
    Z, A = sdpa(Xh @ W_q, Xh @ W_k, Xh @ W_v, mask, **knobs)
    concat = merge(Z)
    return (concat @ W_o if project else concat), A


def _mha_variants():
    H_of = lambda W_q: W_q.shape[0]  # noqa: E731

    def averaged(X, W_q, W_k, W_v, W_o, mask=None):
        Y, A = _mha(X, W_q, W_k, W_v, W_o, mask)
        return Y / H_of(W_q), A

    def averaged_A(X, W_q, W_k, W_v, W_o, mask=None):
        Y, A = _mha(X, W_q, W_k, W_v, W_o, mask)
        return Y, A.mean(axis=-3)

    def averaged_Z(X, W_q, W_k, W_v, W_o, mask=None):
        Xh = X[..., None, :, :]
        Z, A = sdpa(Xh @ W_q, Xh @ W_k, Xh @ W_v, mask)
        d_k = Z.shape[-1]
        return Z.mean(axis=-3) @ W_o[:d_k], A

    def averaged_Z_tiled(X, W_q, W_k, W_v, W_o, mask=None):
        Xh = X[..., None, :, :]
        Z, A = sdpa(Xh @ W_q, Xh @ W_k, Xh @ W_v, mask)
        mean = Z.mean(axis=-3)
        return np.concatenate([mean] * H_of(W_q), axis=-1) @ W_o, A

    merge_flat, merge_strided = (f for _, f in _merge_variants())
    d = lambda X: X.shape[-1]  # noqa: E731
    return [
        ("missing-output-projection", lambda *a, mask=None: _mha(*a, mask=mask, project=False)),
        ("heads-averaged", averaged),
        ("weights-averaged-over-heads", averaged_A),
        (
            "weights-of-one-head",
            lambda *a, mask=None: (lambda Y, A: (Y, A[..., -1, :, :]))(*_mha(*a, mask=mask)),
        ),
        (
            "weights-of-one-head",
            lambda *a, mask=None: (lambda Y, A: (Y, A[..., 0, :, :]))(*_mha(*a, mask=mask)),
        ),
        ("heads-averaged", averaged_Z),
        ("heads-averaged", averaged_Z_tiled),
        (
            "heads-reshape-without-transpose",
            lambda *a, mask=None: _mha(*a, mask=mask, merge=merge_flat),
        ),
        ("heads-strided-columns", lambda *a, mask=None: _mha(*a, mask=mask, merge=merge_strided)),
        ("missing-scale", lambda *a, mask=None: _mha(*a, mask=mask, scale=1.0)),
        ("wrong-scale", lambda *a, mask=None: _mha(*a, mask=mask, scale=np.sqrt(d(a[0])))),
        ("wrong-scale", lambda *a, mask=None: _mha(*a, mask=mask, scale=a[1].shape[-1])),
        (
            "wrong-scale",
            lambda *a, mask=None: _mha(*a, mask=mask, scale=np.sqrt(a[4].shape[0])),
        ),
        ("transposed-scores", lambda *a, mask=None: _mha(*a, mask=mask, transpose=True)),
        ("softmax-over-queries", lambda *a, mask=None: _mha(*a, mask=mask, softmax_axis=-2)),
        ("mask-after-softmax", lambda *a, mask=None: _mha(*a, mask=mask, mask_mode="after")),
        ("mask-inverted", lambda *a, mask=None: _mha(*a, mask=mask, mask_mode="inverted")),
        ("mask-fills-zero", lambda *a, mask=None: _mha(*a, mask=mask, mask_mode="zero")),
        ("mask-ignored", lambda *a, mask=None: _mha(*a, mask=None)),
        ("softmax-unstable", lambda *a, mask=None: _mha(*a, mask=mask, softmax="unstable")),
    ]


VARIANTS = {
    "split_heads": _split_variants(),
    "merge_heads": _merge_variants(),
    "multi_head_attention": _mha_variants(),
}


# ---------------------------------------------------------------- what each variant returns


def variants_of(function):
    """[(id, wrong implementation), ...] of `function`: its notebook's folder's VARIANTS
    (curriculum's Notebook.package), [] for a function without known mistakes."""
    notebook = NOTEBOOK_OF.get(function)
    if notebook is None or not notebook.package:
        return VARIANTS.get(function, [])
    module = importlib.import_module(f"autograder.course.{notebook.package}.variants")
    return module.VARIANTS.get(function, [])


def variant_outputs(function, args, kwargs=None):
    """[[id, output], ...]: every variant of `function`, in order, on these inputs.

    Each output is the variant's whole return value (a pair for pair-returning functions),
    computed on copies of the inputs, or None where the variant fails on them: so the k-th
    entry is the same variant in every call of a function, and a judge can ask whether a
    student's answer behaves like one variant on all the calls of a case. Stored in a case,
    this is what autograder.judging.numpy_signatures compares a student's answer with.
    """
    return [[id_, _run(fn, args, kwargs)] for id_, fn in variants_of(function)]


def _run(fn, args, kwargs):
    """fn's output on copies of the inputs, or None if it fails."""
    args = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
    try:
        with np.errstate(all="ignore"):
            return fn(*args, **(kwargs or {}))
    except Exception:  # noqa: BLE001 - a variant that does not apply to these inputs
        return None
