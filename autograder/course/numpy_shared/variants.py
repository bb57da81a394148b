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
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from autograder.course.n02_dot_product_softmax.reference import softmax
from autograder.curriculum import NOTEBOOK_OF

# A known-wrong variant: (misconception id, the wrong implementation).
Variant = tuple[str, Callable[..., Any]]

# ---------------------------------------------------------------- building blocks


def softmax_unstable(x: Any, axis: int = -1) -> np.ndarray:
    e = np.exp(np.asarray(x, dtype=float))
    return e / e.sum(axis=axis, keepdims=True)


def softmax_on_axis(x: Any, axis: int) -> np.ndarray:
    return softmax(x, axis=axis)


def softmax_global_max(x: Any, axis: int = -1) -> np.ndarray:
    """Subtracts the maximum of the whole array, not each row's: right until a row lies ~745
    below the array's maximum, where every exp of that row underflows to 0 (0/0)."""
    x = np.asarray(x, dtype=float)
    e = np.exp(x - np.max(x))
    return e / e.sum(axis=axis, keepdims=True)


_SOFTMAXES: dict[str, Callable[..., np.ndarray]] = {
    "stable": softmax,
    "unstable": softmax_unstable,
    "global-max": softmax_global_max,
}


def swap(K: np.ndarray) -> np.ndarray:
    return np.swapaxes(K, -1, -2)


def sdpa(
    Q: np.ndarray,
    K: np.ndarray,
    V: np.ndarray,
    mask: np.ndarray | None = None,
    scale: float | None = None,
    softmax_axis: int = -1,
    mask_mode: str = "before",
    transpose: bool = False,
    softmax: str = "stable",
) -> tuple[np.ndarray, np.ndarray]:
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


def variants_of(function: str) -> list[Variant]:
    """[(id, wrong implementation), ...] of a NumPy notebook's `function`: its notebook's folder's
    VARIANTS (curriculum's Notebook.package), [] for a function without known mistakes."""
    notebook = NOTEBOOK_OF.get(function)
    if notebook is None or notebook.framework != "numpy":
        return []
    module = importlib.import_module(f"autograder.course.{notebook.package}.variants")
    variants: dict[str, list[Variant]] = module.VARIANTS
    return variants.get(function, [])


def variant_outputs(
    function: str, args: Sequence[Any], kwargs: dict[str, Any] | None = None
) -> list[list[Any]]:
    """[[id, output], ...]: every variant of `function`, in order, on these inputs.

    Each output is the variant's whole return value (a pair for pair-returning functions),
    computed on copies of the inputs, or None where the variant fails on them: so the k-th
    entry is the same variant in every call of a function, and a judge can ask whether a
    student's answer behaves like one variant on all the calls of a case. Stored in a case,
    this is what numpy_shared.signatures compares a student's answer with.
    """
    return [[id_, _run(fn, args, kwargs)] for id_, fn in variants_of(function)]


def _run(fn: Callable[..., Any], args: Sequence[Any], kwargs: dict[str, Any] | None) -> Any:
    """fn's output on copies of the inputs, or None if it fails."""
    copies = [np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args]
    try:
        with np.errstate(all="ignore"):
            return fn(*copies, **(kwargs or {}))
    except Exception:  # noqa: BLE001 - a variant that does not apply to these inputs
        return None
