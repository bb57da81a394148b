"""Known-wrong answers to notebook 03 (attention in matrix form): what each mistake returns.

VARIANTS[function] lists (misconception id, wrong implementation) pairs, written the way a
student would write them; numpy_shared/variants.py runs them on a case's inputs when the case is
built (variant_outputs). Instructor side only: never shipped to students.
"""

import numpy as np

from autograder.course.numpy_shared.variants import Variant, sdpa, swap


def _attention_scores_variants() -> list[Variant]:
    return [
        ("missing-scale", lambda Q, K: Q @ swap(K)),
        ("wrong-scale", lambda Q, K: Q @ swap(K) / Q.shape[-1]),
        ("wrong-scale", lambda Q, K: Q @ swap(K) / np.sqrt(K.shape[-2])),
        ("wrong-scale", lambda Q, K: Q @ swap(K) / np.sqrt(Q.shape[-2])),
        ("transposed-scores", lambda Q, K: K @ swap(Q) / np.sqrt(Q.shape[-1])),
        ("transposed-scores", lambda Q, K: K @ swap(Q)),
    ]


def _causal_mask_variants() -> list[Variant]:
    return [
        ("mask-inverted", lambda n: np.triu(np.ones((n, n), dtype=bool), k=1)),
        ("mask-inverted", lambda n: np.triu(np.ones((n, n), dtype=bool))),
        ("mask-off-by-one", lambda n: np.tril(np.ones((n, n), dtype=bool), k=-1)),
        ("mask-off-by-one", lambda n: np.tril(np.ones((n, n), dtype=bool), k=1)),
    ]


def _sdpa_variants() -> list[Variant]:
    d = lambda Q: Q.shape[-1]  # noqa: E731
    return [
        ("missing-scale", lambda Q, K, V, mask=None: sdpa(Q, K, V, mask, scale=1.0)),
        ("wrong-scale", lambda Q, K, V, mask=None: sdpa(Q, K, V, mask, scale=d(Q))),
        (
            "wrong-scale",
            lambda Q, K, V, mask=None: sdpa(Q, K, V, mask, scale=np.sqrt(V.shape[-1])),
        ),
        (
            "wrong-scale",
            lambda Q, K, V, mask=None: sdpa(Q, K, V, mask, scale=np.sqrt(K.shape[-2])),
        ),
        ("transposed-scores", lambda Q, K, V, mask=None: sdpa(Q, K, V, mask, transpose=True)),
        ("softmax-over-queries", lambda Q, K, V, mask=None: sdpa(Q, K, V, mask, softmax_axis=-2)),
        ("softmax-wrong-axis", lambda Q, K, V, mask=None: sdpa(Q, K, V, mask, softmax_axis=0)),
        ("mask-inverted", lambda Q, K, V, mask=None: sdpa(Q, K, V, mask, mask_mode="inverted")),
        ("mask-after-softmax", lambda Q, K, V, mask=None: sdpa(Q, K, V, mask, mask_mode="after")),
        ("mask-fills-zero", lambda Q, K, V, mask=None: sdpa(Q, K, V, mask, mask_mode="zero")),
        ("mask-ignored", lambda Q, K, V, mask=None: sdpa(Q, K, V, None)),
        ("softmax-unstable", lambda Q, K, V, mask=None: sdpa(Q, K, V, mask, softmax="unstable")),
        (
            "softmax-global-max",
            lambda Q, K, V, mask=None: sdpa(Q, K, V, mask, softmax="global-max"),
        ),
    ]


def _self_attention_variants() -> list[Variant]:
    out: list[Variant] = []
    for id_, f in _sdpa_variants():
        out.append(
            (id_, lambda X, W_q, W_k, W_v, mask=None, f=f: f(X @ W_q, X @ W_k, X @ W_v, mask))
        )
    out.append(
        (
            "wrong-scale",
            lambda X, W_q, W_k, W_v, mask=None: sdpa(
                X @ W_q, X @ W_k, X @ W_v, mask, scale=np.sqrt(X.shape[-1])
            ),
        )
    )
    return out


VARIANTS: dict[str, list[Variant]] = {
    "attention_scores": _attention_scores_variants(),
    "causal_mask": _causal_mask_variants(),
    "scaled_dot_product_attention": _sdpa_variants(),
    "self_attention": _self_attention_variants(),
}
