"""Known-wrong answers to notebook 04 (multi-head attention): what each mistake returns.

VARIANTS[function] lists (misconception id, wrong implementation) pairs, written the way a
student would write them; numpy_shared/variants.py runs them on a case's inputs when the case is
built (variant_outputs). Instructor side only: never shipped to students.
"""

from collections.abc import Callable
from typing import Any

import numpy as np

from autograder.course.n04_multihead_attention.reference import merge_heads
from autograder.course.numpy_shared.variants import Variant, sdpa


def _split_variants() -> list[Variant]:
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


def _merge_variants() -> list[Variant]:
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


def _mha(
    X: np.ndarray,
    W_q: np.ndarray,
    W_k: np.ndarray,
    W_v: np.ndarray,
    W_o: np.ndarray,
    *,
    mask: np.ndarray | None = None,
    merge: Callable[[np.ndarray], np.ndarray] = merge_heads,
    project: bool = True,
    **knobs: Any,
) -> tuple[np.ndarray, np.ndarray]:
    Xh = X[..., None, :, :]
    Z, A = sdpa(Xh @ W_q, Xh @ W_k, Xh @ W_v, mask, **knobs)
    concat = merge(Z)
    return (concat @ W_o if project else concat), A


def _mha_variants() -> list[Variant]:
    H_of = lambda W_q: W_q.shape[0]  # noqa: E731

    def averaged(X, W_q, W_k, W_v, W_o, mask=None):
        Y, A = _mha(X, W_q, W_k, W_v, W_o, mask=mask)
        return Y / H_of(W_q), A

    def averaged_A(X, W_q, W_k, W_v, W_o, mask=None):
        Y, A = _mha(X, W_q, W_k, W_v, W_o, mask=mask)
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

    def weights_of_head(h):
        def one_head(*a, mask=None):
            Y, A = _mha(*a, mask=mask)
            return Y, A[..., h, :, :]

        return one_head

    merge_flat, merge_strided = (f for _, f in _merge_variants())
    d = lambda X: X.shape[-1]  # noqa: E731
    return [
        ("missing-output-projection", lambda *a, mask=None: _mha(*a, mask=mask, project=False)),
        ("heads-averaged", averaged),
        ("weights-averaged-over-heads", averaged_A),
        ("weights-of-one-head", weights_of_head(-1)),
        ("weights-of-one-head", weights_of_head(0)),
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


VARIANTS: dict[str, list[Variant]] = {
    "split_heads": _split_variants(),
    "merge_heads": _merge_variants(),
    "multi_head_attention": _mha_variants(),
}
