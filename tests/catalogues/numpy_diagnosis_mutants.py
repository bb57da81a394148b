"""Wrong answers to notebooks 01-04, each with the misconception id its failed tests must name
(MUTANTS: graded name, id, answer). A data module, not a test file: tests/catalogues/test_diagnosis_numpy.py
checks each diagnosis, test_judging_numpy.py and test_mistake_catalogue_numpy.py reuse it."""

import math

import numpy as np
from numpy_mutants import mha_with, sdpa_with, stable_softmax, swap


def lookup_get(table, query):
    return table.get(query)


def lookup_value_error(table, query):
    if query not in table:
        raise ValueError(f"{query} is not in the table")
    return table[query]


def similarity_cosine_loop(query, keys):
    out = []
    for key in keys:
        out.append(np.dot(key, query) / (np.linalg.norm(key) * np.linalg.norm(query)))
    return np.array(out)


def similarity_scaled(query, keys):
    return keys @ query / math.sqrt(len(query))


def similarity_total(query, keys):
    return np.sum(keys * query)  # one number: every product added together


def percentages_math_exp(scores):
    e = [math.exp(s) for s in scores]
    return np.array(e) / sum(e)


def percentages_no_exp(scores):
    return scores / np.sum(scores)


def percentages_times_100(scores):
    e = np.exp(scores - np.max(scores))
    return 100 * e / e.sum()


def percentages_in_place(scores):
    scores -= np.max(scores)
    e = np.exp(scores)
    return e / e.sum()


def percentages_over_max(scores):
    e = np.exp(scores - np.max(scores))
    return e / e.max()


def soft_lookup_mean(query, keys, values):
    w = stable_softmax(keys @ query)
    return w, values.mean(axis=0)


def soft_lookup_cosine(query, keys, values):
    w = stable_softmax(similarity_cosine_loop(query, keys))
    return w, w @ values


def soft_lookup_unstable(query, keys, values):
    e = np.exp(np.einsum("md,d->m", keys, query))
    w = e / e.sum()
    return w, np.einsum("m,mv->v", w, values)


def soft_lookup_swapped(query, keys, values):
    w = stable_softmax(keys @ query)
    return w @ values, w


def softmax_global_max(x, axis=-1):
    x = np.asarray(x, dtype=float)
    e = np.exp(x - np.max(x))  # the whole array's maximum, not each row's
    return e / np.sum(e, axis=axis, keepdims=True)


def softmax_unstable(x, axis=-1):
    e = np.exp(x)
    return e / np.sum(e, axis=axis, keepdims=True)


def softmax_axis_zero(x, axis=-1):
    e = np.exp(x - np.max(x, axis=0, keepdims=True))
    return e / np.sum(e, axis=0, keepdims=True)


def softmax_no_keepdims(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis)


def softmax_in_place(x, axis=-1):
    x -= np.max(x, axis=axis, keepdims=True)
    np.exp(x, out=x)
    return x / x.sum(axis=axis, keepdims=True)


def softmax_minus_mean(x, axis=-1):
    x = np.asarray(x, dtype=float)
    e = np.exp(x - np.mean(x, axis=axis, keepdims=True))  # not the max: exp still overflows
    return e / np.sum(e, axis=axis, keepdims=True)


def scaled_scores_loop_unscaled(query, keys):
    return np.array([sum(q * k for q, k in zip(query, key, strict=True)) for key in keys])


def scaled_scores_by_d_k(query, keys):
    return keys @ query / query.shape[0]


def scaled_scores_by_keys(query, keys):
    return keys @ query / np.sqrt(len(keys))  # the number of keys, not d_k


def scaled_scores_by_ndim(query, keys):
    return keys @ query / np.sqrt(query.ndim)  # 1: exactly no scale at all


def scaled_scores_softmaxed(query, keys):
    return stable_softmax(keys @ query / np.sqrt(len(query)))


def attend_unscaled(query, keys, values):
    w = stable_softmax(keys @ query)
    return w, w @ values


def attend_by_d_v(query, keys, values):
    w = stable_softmax(keys @ query / np.sqrt(values.shape[1]))
    return w, w @ values


def attend_unstable(query, keys, values):
    e = np.exp(keys @ query / np.sqrt(len(query)))
    w = e / e.sum()
    return w, w @ values


def attend_weighs_keys(query, keys, values):
    w = stable_softmax(keys @ query / np.sqrt(len(query)))
    return w, w @ keys  # the keys, not the values


def _token(X, i, W_q, W_k, W_v, rows, scale=None, query_weights=None):
    q = X[i] @ (W_q if query_weights is None else query_weights)
    K, V = rows @ W_k, rows @ W_v
    s = K @ q / (np.sqrt(W_q.shape[1]) if scale is None else scale)
    return stable_softmax(s) @ V


def token_query_with_w_k(X, i, W_q, W_k, W_v, causal=True):
    rows = X[: i + 1] if causal else X
    return _token(X, i, W_q, W_k, W_v, rows, query_weights=W_k)


def token_sees_everything(X, i, W_q, W_k, W_v, causal=True):
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    w = stable_softmax(K @ Q[i] / np.sqrt(Q.shape[1]))
    return w @ V


def token_flag_ignored(X, i, W_q, W_k, W_v, causal=True):
    out = np.zeros(W_v.shape[1])
    q = X[i] @ W_q
    scores = np.array([(X[j] @ W_k) @ q for j in range(i + 1)]) / math.sqrt(len(q))
    w = stable_softmax(scores)
    for j in range(i + 1):
        out += w[j] * (X[j] @ W_v)
    return out


def token_skips_itself(X, i, W_q, W_k, W_v, causal=True):
    return _token(X, i, W_q, W_k, W_v, X[:i] if causal else X)


def token_looks_ahead(X, i, W_q, W_k, W_v, causal=True):
    return _token(X, i, W_q, W_k, W_v, X[i:] if causal else X)


def token_scaled_by_d(X, i, W_q, W_k, W_v, causal=True):
    rows = X[: i + 1] if causal else X
    return _token(X, i, W_q, W_k, W_v, rows, scale=np.sqrt(X.shape[1]))


def token_unscaled(X, i, W_q, W_k, W_v, causal=True):
    rows = X[: i + 1] if causal else X
    return _token(X, i, W_q, W_k, W_v, rows, scale=1.0)


def token_scaled_by_position(X, i, W_q, W_k, W_v, causal=True):
    rows = X[: i + 1] if causal else X
    return _token(X, i, W_q, W_k, W_v, rows, scale=np.sqrt(i + 1))


def scores_einsum_unscaled(Q, K):
    return np.einsum("...qd,...kd->...qk", Q, K)


def scores_transposed(Q, K):
    return K @ swap(Q) / np.sqrt(Q.shape[-1])


def scores_dot_T(Q, K):
    return np.dot(Q, K.T) / np.sqrt(Q.shape[-1])  # K.T: only right for 2-D inputs


def scores_by_d_k(Q, K):
    return Q @ swap(K) / Q.shape[-1]


def scores_by_sqrt2(Q, K):
    return Q @ swap(K) / np.sqrt(2)


def scores_isqrt(Q, K):
    return Q @ swap(K) / math.isqrt(Q.shape[-1])  # right for d_k = 4, not for d_k = 8


def causal_transposed(n):
    return np.tri(n, dtype=bool).T


def causal_triu(n):
    return np.triu(np.ones((n, n), dtype=bool), k=1)


def causal_strict(n):
    m = np.zeros((n, n), dtype=bool)
    for i in range(n):
        for j in range(i):
            m[i, j] = True
    return m


def causal_floats(n):
    return np.tril(np.ones((n, n)))


def causal_all_true(n):
    return np.ones((n, n), dtype=bool)


def sdpa_inverted_in_place(Q, K, V, mask=None):
    S = Q @ swap(K) / np.sqrt(Q.shape[-1])
    if mask is not None:
        S = S.copy()
        S[..., np.broadcast_to(mask, S.shape[-2:])] = -np.inf  # blocks the visible keys
    A = stable_softmax(S)
    return A @ V, A


def sdpa_global_max(Q, K, V, mask=None):
    S = Q @ swap(K) / np.sqrt(Q.shape[-1])
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    A = softmax_global_max(S)
    return A @ V, A


def sdpa_unstable(Q, K, V, mask=None):
    S = Q @ swap(K) / np.sqrt(Q.shape[-1])
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    A = softmax_unstable(S)
    return A @ V, A


def sdpa_scales_q_in_place(Q, K, V, mask=None):
    Q /= np.sqrt(Q.shape[-1])
    S = Q @ swap(K)
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    A = stable_softmax(S)
    return A @ V, A


def sdpa_mask_after_then_scaled(Q, K, V, mask=None):
    A = stable_softmax(Q @ swap(K))  # unscaled, and masked after the softmax
    if mask is not None:
        A = A * mask
    return A @ V, A


def self_attention_query_with_w_k(X, W_q, W_k, W_v, mask=None):
    return sdpa_with(X @ W_k, X @ W_k, X @ W_v, mask)


def self_attention_values_with_w_q(X, W_q, W_k, W_v, mask=None):
    return sdpa_with(X @ W_q, X @ W_k, X @ W_q, mask)


def self_attention_2d_only(X, W_q, W_k, W_v, mask=None):
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    S = Q @ K.T / np.sqrt(Q.shape[-1])
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    A = stable_softmax(S)
    return A @ V, A


def _shapes(n, d, d_k, H, **changes):
    shapes = {
        "W_q": (d, d_k), "W_k": (d, d_k), "W_v": (d, d_k), "W_o": (H * d_k, d),
        "input": (n, d), "q": (n, d_k), "k": (n, d_k), "v": (n, d_k), "A": (n, n),
        "z": (n, d_k), "concat": (n, H * d_k), "output": (n, d),
    }  # fmt: skip
    for key, shape in changes.items():
        shapes[key] = shape(n, d, d_k, H)
    return shapes


def shapes_column_convention(n, d, d_k, H):
    return _shapes(n, d, d_k, H, W_o=lambda n, d, d_k, H: (d, H * d_k))


def shapes_averaged(n, d, d_k, H):
    return _shapes(n, d, d_k, H, concat=lambda n, d, d_k, H: (n, d_k))


def shapes_no_projection(n, d, d_k, H):
    return _shapes(n, d, d_k, H, output=lambda n, d, d_k, H: (n, H * d_k))


def split_no_transpose(X, n_heads):
    *lead, n, w = X.shape
    return X.reshape(*lead, n_heads, n, w // n_heads)


def split_strided(X, n_heads):
    return np.stack([X[..., h::n_heads] for h in range(n_heads)], axis=-3)


def split_2d_only(X, n_heads):
    n, w = X.shape
    return X.reshape(n, n_heads, w // n_heads).transpose(1, 0, 2)


def merge_no_transpose(X):
    *lead, H, n, d_k = X.shape
    return X.reshape(*lead, n, H * d_k)


def merge_2d_only(X):
    H, n, d_k = X.shape
    return np.transpose(X, (1, 0, 2)).reshape(n, H * d_k)


def merge_sums_heads(X):
    return X.sum(axis=-3)


def _heads(X, W_q, W_k, W_v, mask, query=None):
    Z, A = [], []
    for h in range(W_q.shape[0]):
        Wq = W_q[h] if query is None else query[h]
        z, a = sdpa_with(X @ Wq, X @ W_k[h], X @ W_v[h], mask)
        Z.append(z)
        A.append(a)
    return Z, np.stack(A, axis=-3)


def mha_mean_of_heads(X, W_q, W_k, W_v, W_o, mask=None):
    Z, A = _heads(X, W_q, W_k, W_v, mask)
    d_k = W_q.shape[2]
    return np.mean([z @ W_o[h * d_k : (h + 1) * d_k] for h, z in enumerate(Z)], axis=0), A


def mha_mean_tiled(X, W_q, W_k, W_v, W_o, mask=None):
    Z, A = _heads(X, W_q, W_k, W_v, mask)
    mean = sum(Z) / len(Z)
    return np.concatenate([mean] * len(Z), axis=-1) @ W_o, A


def mha_mean_first_block(X, W_q, W_k, W_v, W_o, mask=None):
    Z, A = _heads(X, W_q, W_k, W_v, mask)
    return np.mean(Z, axis=0) @ W_o[: W_q.shape[2]], A


def mha_loop_no_projection(X, W_q, W_k, W_v, W_o, mask=None):
    Z, A = _heads(X, W_q, W_k, W_v, mask)
    return np.concatenate(Z, axis=-1), A


def mha_query_with_w_k(X, W_q, W_k, W_v, W_o, mask=None):
    Z, A = _heads(X, W_q, W_k, W_v, mask, query=W_k)
    return np.concatenate(Z, axis=-1) @ W_o, A


def mha_first_head_everywhere(X, W_q, W_k, W_v, W_o, mask=None):
    H = W_q.shape[0]
    Z, A = _heads(X, np.stack([W_q[0]] * H), np.stack([W_k[0]] * H), W_v, mask)
    return np.concatenate(Z, axis=-1) @ W_o, A


# (graded name, the one id its results must name or None, the answer)
MUTANTS = [
    # notebook 01
    ("lookup", "unknown-key-answered", lookup_get),
    ("lookup", "unknown-key-wrong-error", lookup_value_error),
    ("similarity", "cosine-instead-of-dot", similarity_cosine_loop),
    ("similarity", "similarity-scaled", similarity_scaled),
    ("similarity", None, similarity_total),
    ("percentages", "softmax-unstable", percentages_math_exp),
    ("percentages", "normalised-without-exp", percentages_no_exp),
    ("percentages", "percent-not-fraction", percentages_times_100),
    ("percentages", "modifies-input", percentages_in_place),
    ("percentages", None, percentages_over_max),
    ("soft_lookup", None, soft_lookup_mean),
    ("soft_lookup", "cosine-instead-of-dot", soft_lookup_cosine),
    ("soft_lookup", "softmax-unstable", soft_lookup_unstable),
    ("soft_lookup", None, soft_lookup_swapped),
    # notebook 02
    ("softmax", "softmax-global-max", softmax_global_max),
    ("softmax", "softmax-unstable", softmax_unstable),
    ("softmax", "softmax-wrong-axis", softmax_axis_zero),
    ("softmax", "softmax-missing-keepdims", softmax_no_keepdims),
    ("softmax", "modifies-input", softmax_in_place),
    ("softmax", None, softmax_minus_mean),
    ("scaled_scores", "missing-scale", scaled_scores_loop_unscaled),
    ("scaled_scores", "wrong-scale", scaled_scores_by_d_k),
    ("scaled_scores", "wrong-scale", scaled_scores_by_keys),
    ("scaled_scores", "missing-scale", scaled_scores_by_ndim),
    ("scaled_scores", None, scaled_scores_softmaxed),
    ("attend", "missing-scale", attend_unscaled),
    ("attend", "wrong-scale", attend_by_d_v),
    ("attend", "softmax-unstable", attend_unstable),
    ("attend", None, attend_weighs_keys),
    ("attention_for_token", None, token_query_with_w_k),
    ("attention_for_token", "token-sees-later-tokens", token_sees_everything),
    ("attention_for_token", "causal-flag-ignored", token_flag_ignored),
    ("attention_for_token", "token-range-off-by-one", token_skips_itself),
    ("attention_for_token", "token-range-reversed", token_looks_ahead),
    ("attention_for_token", "wrong-scale", token_scaled_by_d),
    ("attention_for_token", "missing-scale", token_unscaled),
    ("attention_for_token", "wrong-scale", token_scaled_by_position),
    # notebook 03
    ("attention_scores", "missing-scale", scores_einsum_unscaled),
    ("attention_scores", "transposed-scores", scores_transposed),
    ("attention_scores", "batch-dims-unsupported", scores_dot_T),
    ("attention_scores", "wrong-scale", scores_by_d_k),
    ("attention_scores", "wrong-scale", scores_by_sqrt2),
    ("attention_scores", "wrong-scale", scores_isqrt),
    ("causal_mask", "mask-inverted", causal_triu),
    ("causal_mask", "mask-inverted", causal_transposed),
    ("causal_mask", "mask-off-by-one", causal_strict),
    ("causal_mask", "mask-not-boolean", causal_floats),
    ("causal_mask", None, causal_all_true),
    ("scaled_dot_product_attention", "mask-inverted", sdpa_inverted_in_place),
    ("scaled_dot_product_attention", "mask-after-softmax",
     lambda Q, K, V, mask=None: sdpa_with(Q, K, V, mask, mode="after")),
    ("scaled_dot_product_attention", "mask-fills-zero",
     lambda Q, K, V, mask=None: sdpa_with(Q, K, V, mask, mode="times")),
    ("scaled_dot_product_attention", "mask-ignored", lambda Q, K, V, mask=None: sdpa_with(Q, K, V)),
    ("scaled_dot_product_attention", "softmax-over-queries",
     lambda Q, K, V, mask=None: sdpa_with(Q, K, V, mask, axis=-2)),
    ("scaled_dot_product_attention", "softmax-wrong-axis",
     lambda Q, K, V, mask=None: sdpa_with(Q, K, V, mask, axis=0)),
    ("scaled_dot_product_attention", "transposed-scores",
     lambda Q, K, V, mask=None: sdpa_with(Q, K, V, mask, transpose=True)),
    ("scaled_dot_product_attention", "missing-scale",
     lambda Q, K, V, mask=None: sdpa_with(Q, K, V, mask, scale=1.0)),
    ("scaled_dot_product_attention", "softmax-global-max", sdpa_global_max),
    ("scaled_dot_product_attention", "softmax-unstable", sdpa_unstable),
    ("scaled_dot_product_attention", "modifies-input", sdpa_scales_q_in_place),
    # two mistakes: the no-mask case shows the missing scale alone, the masked ones a mixture
    ("scaled_dot_product_attention", "missing-scale", sdpa_mask_after_then_scaled),
    ("self_attention", None, self_attention_query_with_w_k),
    ("self_attention", None, self_attention_values_with_w_q),
    ("self_attention", "batch-dims-unsupported", self_attention_2d_only),
    ("self_attention", "mask-ignored",
     lambda X, Wq, Wk, Wv, mask=None: sdpa_with(X @ Wq, X @ Wk, X @ Wv)),
    ("self_attention", "wrong-scale",
     lambda X, Wq, Wk, Wv, mask=None: sdpa_with(X @ Wq, X @ Wk, X @ Wv, mask, scale=np.sqrt(X.shape[-1]))),
    ("self_attention", "softmax-wrong-axis",
     lambda X, Wq, Wk, Wv, mask=None: sdpa_with(X @ Wq, X @ Wk, X @ Wv, mask, axis=0)),
    ("self_attention", "mask-after-softmax",
     lambda X, Wq, Wk, Wv, mask=None: sdpa_with(X @ Wq, X @ Wk, X @ Wv, mask, mode="after-where")),
    # notebook 04
    ("mha_shapes", None, shapes_column_convention),
    ("mha_shapes", "heads-averaged", shapes_averaged),
    ("mha_shapes", "missing-output-projection", shapes_no_projection),
    ("split_heads", "heads-reshape-without-transpose", split_no_transpose),
    ("split_heads", "heads-strided-columns", split_strided),
    ("split_heads", "batch-dims-unsupported", split_2d_only),
    ("merge_heads", "heads-reshape-without-transpose", merge_no_transpose),
    ("merge_heads", "batch-dims-unsupported", merge_2d_only),
    ("merge_heads", None, merge_sums_heads),
    ("multi_head_attention", "heads-averaged", mha_mean_of_heads),
    ("multi_head_attention", "heads-averaged", mha_mean_tiled),
    ("multi_head_attention", "heads-averaged", mha_mean_first_block),
    ("multi_head_attention", "missing-output-projection", mha_loop_no_projection),
    ("multi_head_attention", "heads-reshape-without-transpose",
     lambda *a, mask=None: mha_with(*a, mask=mask, merge="flat")),
    ("multi_head_attention", "mask-inverted", lambda *a, mask=None: mha_with(*a, mask=mask, mode="inverted")),
    ("multi_head_attention", "mask-after-softmax", lambda *a, mask=None: mha_with(*a, mask=mask, mode="after")),
    ("multi_head_attention", "softmax-over-queries", lambda *a, mask=None: mha_with(*a, mask=mask, axis=-2)),
    ("multi_head_attention", None, mha_query_with_w_k),
    ("multi_head_attention", None, mha_first_head_everywhere),
]  # fmt: skip
