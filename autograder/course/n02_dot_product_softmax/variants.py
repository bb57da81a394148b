"""Known-wrong answers to notebook 02 (dot products and softmax): what each mistake returns.

VARIANTS[function] lists (misconception id, wrong implementation) pairs, written the way a
student would write them; numpy_shared/variants.py runs them on a case's inputs when the case is
built (variant_outputs). Instructor side only: never shipped to students.
"""

import numpy as np

from autograder.course.n02_dot_product_softmax import reference as ref
from autograder.course.numpy_shared.variants import (
    Variant,
    softmax_global_max,
    softmax_on_axis,
    softmax_unstable,
)


def _softmax_variants() -> list[Variant]:
    def no_keepdims_sum(x, axis=-1):
        x = np.asarray(x, dtype=float)
        e = np.exp(x - np.max(x, axis=axis, keepdims=True))
        return e / e.sum(axis=axis)

    def no_keepdims_max(x, axis=-1):
        x = np.asarray(x, dtype=float)
        e = np.exp(x - np.max(x, axis=axis))
        return e / e.sum(axis=axis, keepdims=True)

    def whole_array(x, axis=-1):
        x = np.asarray(x, dtype=float)
        e = np.exp(x - x.max())
        return e / e.sum()

    def log_softmax(x, axis=-1):
        x = np.asarray(x, dtype=float)
        shifted = x - np.max(x, axis=axis, keepdims=True)
        return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))

    def neginf_to_zero(x, axis=-1):
        x = np.asarray(x, dtype=float)
        return ref.softmax(np.where(np.isinf(x), 0.0, x), axis=axis)

    return [
        ("softmax-unstable", softmax_unstable),
        ("softmax-global-max", softmax_global_max),
        ("log-softmax", log_softmax),
        ("softmax-neginf-weight", neginf_to_zero),
        ("softmax-wrong-axis", lambda x, axis=-1: softmax_on_axis(x, 0)),
        ("softmax-wrong-axis", lambda x, axis=-1: softmax_on_axis(x, -1)),
        ("softmax-wrong-axis", lambda x, axis=-1: softmax_on_axis(x, 1 if np.ndim(x) > 1 else 0)),
        ("softmax-wrong-axis", whole_array),
        ("softmax-missing-keepdims", no_keepdims_sum),
        ("softmax-missing-keepdims", no_keepdims_max),
        ("normalised-without-exp", lambda x, axis=-1: x / np.sum(x, axis=axis, keepdims=True)),
    ]


def _scaled_scores_variants() -> list[Variant]:
    return [
        ("missing-scale", lambda q, K: K @ q),
        ("wrong-scale", lambda q, K: K @ q / q.shape[-1]),
        ("wrong-scale", lambda q, K: K @ q / np.sqrt(K.shape[0])),
        ("wrong-scale", lambda q, K: K @ q * np.sqrt(q.shape[-1])),
    ]


def _attend_variants() -> list[Variant]:
    def with_scores(scores_fn, softmax=ref.softmax):
        def attend(q, K, V):
            w = softmax(scores_fn(q, K))
            return w, w @ V

        return attend

    out = [(id_, with_scores(f)) for id_, f in _scaled_scores_variants()]

    def scaled_by_d_v(q, K, V):
        w = ref.softmax(K @ q / np.sqrt(V.shape[-1]))
        return w, w @ V

    out.append(("wrong-scale", scaled_by_d_v))
    out.append(("softmax-unstable", with_scores(ref.scaled_scores, softmax_unstable)))
    return out


def _token_variants() -> list[Variant]:
    def recipe(visible_of, scale_of=None, softmax=ref.softmax):
        def attention_for_token(X, i, W_q, W_k, W_v, causal=True):
            visible = visible_of(X, i, causal)
            q = X[i] @ W_q
            keys, values = visible @ W_k, visible @ W_v
            scale = np.sqrt(W_q.shape[-1]) if scale_of is None else scale_of(X, i, W_q, W_v)
            w = softmax(keys @ q / scale)
            return w @ values

        return attention_for_token

    correct = lambda X, i, causal: X[: i + 1] if causal else X  # noqa: E731
    return [
        ("missing-scale", recipe(correct, lambda X, i, Wq, Wv: 1.0)),
        ("wrong-scale", recipe(correct, lambda X, i, Wq, Wv: Wq.shape[-1])),
        ("wrong-scale", recipe(correct, lambda X, i, Wq, Wv: np.sqrt(X.shape[-1]))),
        ("wrong-scale", recipe(correct, lambda X, i, Wq, Wv: np.sqrt(Wv.shape[-1]))),
        ("wrong-scale", recipe(correct, lambda X, i, Wq, Wv: np.sqrt(i + 1))),
        ("token-range-off-by-one", recipe(lambda X, i, c: X[:i] if c else X)),
        ("token-range-off-by-one", recipe(lambda X, i, c: X[: i + 2] if c else X)),
        ("token-sees-later-tokens", recipe(lambda X, i, c: X)),
        ("causal-flag-ignored", recipe(lambda X, i, c: X[: i + 1])),
        ("token-range-reversed", recipe(lambda X, i, c: X[i:] if c else X)),
        ("token-range-reversed", recipe(lambda X, i, c: X[i + 1 :] if c else X)),
        ("softmax-unstable", recipe(correct, softmax=softmax_unstable)),
    ]


VARIANTS: dict[str, list[Variant]] = {
    "softmax": _softmax_variants(),
    "scaled_scores": _scaled_scores_variants(),
    "attend": _attend_variants(),
    "attention_for_token": _token_variants(),
}
