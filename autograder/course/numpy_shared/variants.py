"""Known-wrong NumPy implementations (notebooks 01-04): the building blocks they share, and what
each typical mistake returns.

Each notebook's folder lists its variants in variants.py: VARIANTS[function] holds (misconception
id, wrong implementation) pairs, written the way a student would write them. A probe runs them
when it builds a case, on the very inputs the student's function will get, and stores their
outputs in the case:

    variants = variant_outputs("attention_scores", (Q, K))        # [[id, output], ...]

A judge (numpy_shared.signatures.diagnose_from) then names the misconceptions whose output the
student's reproduces (and the reference's doesn't). The instructor's side only: never shipped to
students.
"""

import importlib

import numpy as np

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


# ---------------------------------------------------------------- what each variant returns


def variants_of(function):
    """[(id, wrong implementation), ...] of a NumPy notebook's `function`: its notebook's folder's
    VARIANTS (curriculum's Notebook.package), [] for a function without known mistakes."""
    notebook = NOTEBOOK_OF.get(function)
    if notebook is None or notebook.framework != "numpy":
        return []
    module = importlib.import_module(f"autograder.course.{notebook.package}.variants")
    return module.VARIANTS.get(function, [])


def variant_outputs(function, args, kwargs=None):
    """[[id, output], ...]: every variant of `function`, in order, on these inputs.

    Each output is the variant's whole return value (a pair for pair-returning functions),
    computed on copies of the inputs, or None where the variant fails on them: so the k-th
    entry is the same variant in every call of a function, and a judge can ask whether a
    student's answer behaves like one variant on all the calls of a case. Stored in a case,
    this is what numpy_shared.signatures compares a student's answer with.
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
