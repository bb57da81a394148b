"""More wrong answers to notebooks 01-04, written as students write them, each annotated with the
one misconception id its failed tests must name (None: no id is specific to what it does, and
the messages must say what was observed instead).

Entries are (graded name, id or None, the answer, the student's other functions): the last,
when given, are the student's own earlier functions the grader finds in the notebook's
namespace (a correct function built on a wrong earlier one must be blamed on that one).
tests/test_mistake_catalogue_numpy.py measures the whole catalogue (this one with
test_diagnosis_numpy's and test_probes_numpy's).
"""

import math

import numpy as np
from test_probes_numpy import sdpa_with

from autograder import reference as R


def swap(M):
    return np.swapaxes(M, -1, -2)


def good_softmax(x, axis=-1):
    x = np.asarray(x, dtype=float)
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


# ------------------------------------------------------------------ wrong earlier functions


def softmax_neginf_to_zero(x, axis=-1):
    x = np.asarray(x, dtype=float)
    x = np.where(np.isinf(x), 0.0, x)  # "get rid of the infinities"
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def softmax_nan_to_num(x, axis=-1):
    x = np.nan_to_num(np.asarray(x, dtype=float), neginf=0.0)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def softmax_log(x, axis=-1):
    x = np.asarray(x, dtype=float)
    s = x - np.max(x, axis=axis, keepdims=True)
    return s - np.log(np.sum(np.exp(s), axis=axis, keepdims=True))


def softmax_rounded(x, axis=-1):
    return np.round(good_softmax(x, axis=axis), 3)  # "percentages to one decimal"


def softmax_unstable(x, axis=-1):
    e = np.exp(np.asarray(x, dtype=float))
    return e / e.sum(axis=axis, keepdims=True)


def softmax_axis0(x, axis=-1):
    x = np.asarray(x, dtype=float)
    e = np.exp(x - x.max(axis=0, keepdims=True))
    return e / e.sum(axis=0, keepdims=True)


def sdpa_built_on(softmax):
    def scaled_dot_product_attention(Q, K, V, mask=None):
        S = Q @ swap(K) / np.sqrt(Q.shape[-1])
        if mask is not None:
            S = np.where(mask, S, -np.inf)
        A = softmax(S, axis=-1)
        return A @ V, A

    return scaled_dot_product_attention


def self_attention_on(sdpa):
    return lambda X, W_q, W_k, W_v, mask=None: sdpa(X @ W_q, X @ W_k, X @ W_v, mask)


def mha_on(sdpa):
    def multi_head_attention(X, W_q, W_k, W_v, W_o, mask=None):
        Xh = X[..., None, :, :]
        Z, A = sdpa(Xh @ W_q, Xh @ W_k, Xh @ W_v, mask)
        return R.merge_heads(Z) @ W_o, A

    return multi_head_attention


def attend_on(softmax):
    def attend(query, keys, values):
        w = softmax(keys @ query / np.sqrt(query.shape[-1]))
        return w, w @ values

    return attend


def token_on(attend):
    def attention_for_token(X, i, W_q, W_k, W_v, causal=True):
        seen = X[: i + 1] if causal else X
        return attend(X[i] @ W_q, seen @ W_k, seen @ W_v)[1]

    return attention_for_token


def soft_lookup_on(percentages):
    def soft_lookup(query, keys, values):
        w = percentages(keys @ query)
        return w, w @ values

    return soft_lookup


def percentages_unstable(scores):
    e = np.exp(scores)
    return e / e.sum()


def percentages_no_exp(scores):
    return scores / scores.sum()


def attend_unscaled(query, keys, values):
    w = good_softmax(keys @ query)
    return w, w @ values


def sdpa_mask_after(Q, K, V, mask=None):
    A = good_softmax(Q @ swap(K) / np.sqrt(Q.shape[-1]))
    if mask is not None:
        A = A * mask
    return A @ V, A


# ------------------------------------------------------------------ notebook 01


def lookup_keyerror_no_name(table, query):
    if query not in table:
        raise KeyError("unknown word")
    return table[query]


def lookup_default(table, query):
    return table.get(query, "?")


def lookup_loop_none(table, query):
    for key, value in table.items():
        if key == query:
            return value
    return None


def percentages_softmax_of_exp(scores):
    e = np.exp(scores - scores.max())
    return e / np.sum(e) * 100


def percentages_abs(scores):
    return np.abs(scores) / np.abs(scores).sum()


def percentages_loop_unstable(scores):
    total = 0.0
    for s in scores:
        total += math.exp(s)
    return np.array([math.exp(s) / total for s in scores])


# ------------------------------------------------------------------ notebook 02


def softmax_keepdims_false_sum(x, axis=-1):
    x = np.asarray(x, dtype=float)
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis)


def softmax_no_asarray(x, axis=-1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def softmax_whole_array(x, axis=-1):
    x = np.asarray(x, dtype=float)
    e = np.exp(x - x.max())
    return e / e.sum()


def softmax_last_axis_only(x, axis=-1):
    x = np.asarray(x, dtype=float)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def scaled_scores_by_sqrt_m(query, keys):
    return keys @ query / math.sqrt(keys.shape[0])


def scaled_scores_times_sqrt(query, keys):
    return keys @ query * np.sqrt(len(query))


def scaled_scores_einsum_unscaled(query, keys):
    return np.einsum("md,d->m", keys, query)


def attend_by_d_k(query, keys, values):
    w = good_softmax(keys @ query / len(query))
    return w, w @ values


def attend_loop_unstable(query, keys, values):
    d_k = len(query)
    s = [math.exp(float(k @ query) / math.sqrt(d_k)) for k in keys]
    w = np.array(s) / sum(s)
    return w, w @ values


def token_excludes_self(X, i, W_q, W_k, W_v, causal=True):
    seen = X[:i] if causal else X
    return attend_on(good_softmax)(X[i] @ W_q, seen @ W_k, seen @ W_v)[1]


def token_one_too_many(X, i, W_q, W_k, W_v, causal=True):
    seen = X[: i + 2] if causal else X
    return attend_on(good_softmax)(X[i] @ W_q, seen @ W_k, seen @ W_v)[1]


def token_ignores_flag(X, i, W_q, W_k, W_v, causal=True):
    seen = X[: i + 1]
    return attend_on(good_softmax)(X[i] @ W_q, seen @ W_k, seen @ W_v)[1]


def token_unscaled(X, i, W_q, W_k, W_v, causal=True):
    seen = X[: i + 1] if causal else X
    return attend_unscaled(X[i] @ W_q, seen @ W_k, seen @ W_v)[1]


def token_by_d_v(X, i, W_q, W_k, W_v, causal=True):
    seen = X[: i + 1] if causal else X
    q, K, V = X[i] @ W_q, seen @ W_k, seen @ W_v
    return good_softmax(K @ q / np.sqrt(V.shape[-1])) @ V


def token_unstable(X, i, W_q, W_k, W_v, causal=True):
    seen = X[: i + 1] if causal else X
    q, K, V = X[i] @ W_q, seen @ W_k, seen @ W_v
    return softmax_unstable(K @ q / np.sqrt(len(q))) @ V


def token_sees_all(X, i, W_q, W_k, W_v, causal=True):
    return attend_on(good_softmax)(X[i] @ W_q, X @ W_k, X @ W_v)[1]


# ------------------------------------------------------------------ notebook 03


def scores_unscaled_matmul(Q, K):
    return np.matmul(Q, swap(K))


def scores_by_n_k(Q, K):
    return Q @ swap(K) / np.sqrt(K.shape[-2])


def scores_times_sqrt(Q, K):
    return Q @ swap(K) * np.sqrt(Q.shape[-1])


def scores_transposed_unscaled(Q, K):
    return K @ swap(Q)


def scores_transpose_2d(Q, K):
    return Q @ np.transpose(K) / np.sqrt(Q.shape[-1])


def scores_einsum_transposed(Q, K):
    return np.einsum("...kd,...qd->...kq", K, Q) / np.sqrt(Q.shape[-1])


def mask_triu(n):
    return np.triu(np.ones((n, n), dtype=bool))


def mask_ints(n):
    return np.tril(np.ones((n, n), dtype=int))


def mask_loop_strict(n):
    m = np.zeros((n, n), dtype=bool)
    for i in range(n):
        m[i, :i] = True
    return m


def mask_plus_one(n):
    return np.tril(np.ones((n, n), dtype=bool), k=1)


def mask_additive_floats(n):
    return np.where(np.tril(np.ones((n, n))) > 0, 1.0, 0.0)


def mask_inverted_compare(n):
    return np.arange(n)[:, None] < np.arange(n)[None, :]


def sdpa_with_mode(mode=None, axis=-1, scale=None, transpose=False):
    """test_probes_numpy.sdpa_with with the mask applied by `mode` (None: ignored; "after": the
    weights zeroed after the softmax) and the scale a function of (Q, K, V)."""
    mode = {None: "ignored", "after": "after-where"}.get(mode, mode)

    def scaled_dot_product_attention(Q, K, V, mask=None):
        s = None if scale is None else scale(Q, K, V)
        return sdpa_with(Q, K, V, mask, scale=s, axis=axis, mode=mode, transpose=transpose)

    return scaled_dot_product_attention


def sdpa_mask_minus_inf_added_wrongly(Q, K, V, mask=None):
    S = Q @ swap(K) / np.sqrt(Q.shape[-1])
    if mask is not None:
        S = S + np.where(mask, -np.inf, 0.0)  # adds -inf where the query MAY attend
    A = good_softmax(S)
    return A @ V, A


def sdpa_returns_scores(Q, K, V, mask=None):
    S = Q @ swap(K) / np.sqrt(Q.shape[-1])
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    A = good_softmax(S)
    return A @ V, S  # the scores, not the weights


def sdpa_swapped_outputs(Q, K, V, mask=None):
    Z, A = sdpa_with_mode("before")(Q, K, V, mask)
    return A, Z


def sdpa_2d_only(Q, K, V, mask=None):
    S = Q @ K.T / np.sqrt(Q.shape[-1])
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    A = good_softmax(S)
    return A @ V, A


def self_attention_with(**kw):
    sdpa = sdpa_with_mode(**kw)
    return lambda X, W_q, W_k, W_v, mask=None: sdpa(X @ W_q, X @ W_k, X @ W_v, mask)


def self_attention_by_d(X, W_q, W_k, W_v, mask=None):
    return sdpa_with_mode("before", scale=lambda Q, K, V: np.sqrt(X.shape[-1]))(
        X @ W_q, X @ W_k, X @ W_v, mask
    )


def self_attention_2d_only(X, W_q, W_k, W_v, mask=None):
    return sdpa_2d_only(X @ W_q, X @ W_k, X @ W_v, mask)


# ------------------------------------------------------------------ notebook 04


def shapes(**changes):
    def mha_shapes(n, d, d_k, H):
        out = R.mha_shapes(n, d, d_k, H)
        for key, shape in changes.items():
            out[key] = shape(n, d, d_k, H)
        return out

    return mha_shapes


def shapes_as_lists(n, d, d_k, H):
    return {k: list(v) for k, v in R.mha_shapes(n, d, d_k, H).items()}


def shapes_as_arrays(n, d, d_k, H):
    return {k: np.array(v) for k, v in R.mha_shapes(n, d, d_k, H).items()}


def split_count_as_width(X, n_heads):
    *lead, n, w = X.shape
    return np.swapaxes(X.reshape(*lead, n, w // n_heads, n_heads), -3, -2)


def split_reshape_only(X, n_heads):
    *lead, n, w = X.shape
    return X.reshape(*lead, n_heads, n, -1)


def split_strided_loop(X, n_heads):
    return np.stack([X[..., h::n_heads] for h in range(n_heads)], axis=-3)


def split_transpose_2d(X, n_heads):
    n, w = X.shape
    return X.reshape(n, n_heads, w // n_heads).transpose(1, 0, 2)


def split_wrong_swap(X, n_heads):
    *lead, n, w = X.shape
    return np.swapaxes(X.reshape(*lead, n, n_heads, w // n_heads), -1, -2)


def merge_reshape_only(X):
    *lead, H, n, d_k = X.shape
    return X.reshape(*lead, n, H * d_k)


def merge_strided(X):
    *lead, H, n, d_k = X.shape
    return np.moveaxis(X, -3, -1).reshape(*lead, n, H * d_k)


def merge_transpose_2d(X):
    return X.transpose(1, 0, 2).reshape(X.shape[1], -1)


def merge_mean(X):
    return X.mean(axis=-3)


def mha_loop(project=True, weights="stack", merge="concat", query_from=None, **sdpa_kw):
    sdpa = sdpa_with_mode("before" if "mode" not in sdpa_kw else sdpa_kw.pop("mode"), **sdpa_kw)

    def multi_head_attention(X, W_q, W_k, W_v, W_o, mask=None):
        H = W_q.shape[0]
        Zs, As = [], []
        for h in range(H):
            m = (
                None
                if mask is None
                else np.broadcast_to(mask, (*X.shape[:-2], H) + mask.shape[-2:])[..., h, :, :]
            )
            Wq = W_q[h] if query_from is None else query_from(W_q, W_k, h)
            Z, A = sdpa(X @ Wq, X @ W_k[h], X @ W_v[h], m)
            Zs.append(Z)
            As.append(A)
        if merge == "concat":
            concat = np.concatenate(Zs, axis=-1)
        elif merge == "mean":
            concat = np.concatenate([sum(Zs) / H] * H, axis=-1)
        elif merge == "flat":
            concat = np.stack(Zs, axis=-3).reshape(*X.shape[:-2], X.shape[-2], -1)
        Y = concat @ W_o if project else concat
        if weights == "stack":
            A = np.stack(As, axis=-3)
        elif weights == "last":
            A = As[-1]
        elif weights == "first":
            A = As[0]
        elif weights == "mean":
            A = np.mean(As, axis=0)
        return Y, A

    return multi_head_attention


# (graded name, id or None, answer, the student's other functions or None)
NEW_MUTANTS = [
    # notebook 01
    ("lookup", "unknown-key-unnamed", lookup_keyerror_no_name, None),
    ("lookup", "unknown-key-answered", lookup_default, None),
    ("lookup", "unknown-key-answered", lookup_loop_none, None),
    ("similarity", "products-not-summed", lambda q, K: K * q, None),
    ("similarity", None, lambda q, K: -np.linalg.norm(K - q, axis=1), None),
    ("similarity", "cosine-instead-of-dot", lambda q, K: (K / np.linalg.norm(K, axis=1, keepdims=True)) @ (q / np.linalg.norm(q)), None),
    ("similarity", "similarity-scaled", lambda q, K: np.einsum("md,d->m", K, q) / np.sqrt(q.size), None),
    ("percentages", "percent-not-fraction", percentages_softmax_of_exp, None),
    ("percentages", "normalised-without-exp", percentages_abs, None),
    ("percentages", "softmax-unstable", percentages_loop_unstable, None),
    ("percentages", "log-softmax", lambda s: s - s.max() - np.log(np.exp(s - s.max()).sum()), None),
    ("lookup", "unknown-key-wrong-error", lambda table, query: list(table.values())[list(table).index(query)], None),
    ("lookup", "unknown-key-answered", lambda table, query: table[query] if query in table else None, None),
    ("similarity", None, lambda q, K: K.T @ q, None),
    ("similarity", "products-not-summed", lambda q, K: np.multiply(K, q[None, :]), None),
    ("lookup", "unknown-key-wrong-error", lambda table, query: table[query] if query in table else exec("raise LookupError(query)"), None),
    ("lookup", "unknown-key-unnamed", lambda table, query: table[query] if query in table else exec("raise KeyError()"), None),
    ("similarity", None, lambda q, K: np.abs(K @ q), None),
    ("similarity", None, lambda q, K: (K @ q) ** 2, None),
    ("similarity", "cosine-instead-of-dot", lambda q, K: np.array([k @ q / math.sqrt((k @ k) * (q @ q)) for k in K]), None),
    ("percentages", "softmax-unstable", lambda s: np.exp(s) / np.exp(s).sum(), None),
    ("percentages", None, lambda s: np.exp(s) / np.sum(s), None),
    ("percentages", None, lambda s: np.round(good_softmax(s), 2), None),
    ("percentages", "percent-not-fraction", lambda s: np.round(100 * good_softmax(s), 6), None),
    ("soft_lookup", None, lambda q, K, V: (lambda w: (w, V[np.argmax(w)]))(good_softmax(K @ q)), None),
    ("soft_lookup", None, lambda q, K, V: (lambda w: (w, (w[:, None] * V).sum(axis=1)))(good_softmax(K @ q)), None),
    ("soft_lookup", "cosine-instead-of-dot", lambda q, K, V: (lambda w: (w, w @ V))(good_softmax(K @ q / np.linalg.norm(K, axis=1) / np.linalg.norm(q))), None),
    ("soft_lookup", "softmax-unstable", soft_lookup_on(percentages_unstable), {"percentages": percentages_unstable}),
    ("soft_lookup", "normalised-without-exp", soft_lookup_on(percentages_no_exp), {"percentages": percentages_no_exp}),
    ("soft_lookup", "similarity-scaled", lambda q, K, V: (lambda w: (w, w @ V))(good_softmax(K @ q / np.sqrt(len(q)))), None),
    ("soft_lookup", "percent-not-fraction", lambda q, K, V: (lambda w: (100 * w, w @ V))(good_softmax(K @ q)), None),
    # notebook 02
    ("softmax", "softmax-missing-keepdims", softmax_keepdims_false_sum, None),
    ("softmax", "list-input-unsupported", softmax_no_asarray, None),
    ("softmax", "list-input-unsupported", lambda x, axis=-1: good_softmax(x.astype(float), axis=axis), None),
    ("softmax", "softmax-wrong-axis", softmax_whole_array, None),
    ("softmax", "softmax-wrong-axis", softmax_last_axis_only, None),
    ("softmax", "softmax-neginf-weight", softmax_neginf_to_zero, None),
    ("softmax", "softmax-neginf-weight", softmax_nan_to_num, None),
    ("softmax", "log-softmax", softmax_log, None),
    ("softmax", "softmax-unstable", softmax_unstable, None),
    ("softmax", "softmax-wrong-axis", lambda x, axis=-1: good_softmax(x, axis=1) if np.ndim(x) > 1 else good_softmax(x), None),
    ("softmax", None, lambda x, axis=-1: good_softmax(np.abs(x), axis), None),
    ("scaled_scores", "wrong-scale", scaled_scores_by_sqrt_m, None),
    ("scaled_scores", "wrong-scale", scaled_scores_times_sqrt, None),
    ("scaled_scores", "missing-scale", scaled_scores_einsum_unscaled, None),
    ("attend", "wrong-scale", attend_by_d_k, None),
    ("attend", "softmax-unstable", attend_loop_unstable, None),
    ("attend", "softmax-unstable", attend_on(softmax_unstable), {"softmax": softmax_unstable}),
    ("attend", "log-softmax", attend_on(softmax_log), {"softmax": softmax_log}),
    ("attend", "earlier-exercise-wrong", attend_on(softmax_rounded), {"softmax": softmax_rounded}),
    ("attention_for_token", "token-range-off-by-one", token_excludes_self, None),
    ("attention_for_token", "token-range-off-by-one", token_one_too_many, None),
    ("attention_for_token", "causal-flag-ignored", token_ignores_flag, None),
    ("attention_for_token", "missing-scale", token_unscaled, None),
    ("attention_for_token", "wrong-scale", token_by_d_v, None),
    ("attention_for_token", "softmax-unstable", token_unstable, None),
    ("attention_for_token", "token-sees-later-tokens", token_sees_all, None),
    ("attention_for_token", "missing-scale", token_on(attend_unscaled), {"attend": attend_unscaled}),
    # notebook 03
    ("attention_scores", "missing-scale", scores_unscaled_matmul, None),
    ("attention_scores", "wrong-scale", scores_by_n_k, None),
    ("attention_scores", "wrong-scale", scores_times_sqrt, None),
    ("attention_scores", "transposed-scores", scores_transposed_unscaled, None),
    ("attention_scores", "batch-dims-unsupported", scores_transpose_2d, None),
    ("attention_scores", "transposed-scores", scores_einsum_transposed, None),
    ("causal_mask", "mask-inverted", mask_triu, None),
    ("causal_mask", "mask-not-boolean", mask_ints, None),
    ("causal_mask", "mask-off-by-one", mask_loop_strict, None),
    ("causal_mask", "mask-off-by-one", mask_plus_one, None),
    ("causal_mask", "mask-not-boolean", mask_additive_floats, None),
    ("causal_mask", "mask-inverted", mask_inverted_compare, None),
    ("causal_mask", "mask-inverted", lambda n: ~np.tri(n, dtype=bool), None),
    ("causal_mask", None, lambda n: np.eye(n, dtype=bool), None),
    ("attention_scores", "wrong-scale", lambda Q, K: Q @ swap(K) / math.sqrt(Q.shape[-1] * 2), None),
    ("attention_scores", "transposed-scores", lambda Q, K: swap(Q @ swap(K)) / np.sqrt(Q.shape[-1]), None),
    ("scaled_dot_product_attention", "mask-fills-zero", sdpa_with_mode("times"), None),
    ("self_attention", None, lambda X, W_q, W_k, W_v, mask=None: sdpa_with_mode("before")(X, X, X @ W_v, mask), None),
    ("percentages", None, lambda s: np.exp(s - s.min()) / np.exp(s - s.min()).sum(), None),
    ("soft_lookup", None, lambda q, K, V: (lambda w: (w, w @ V / len(w)))(good_softmax(K @ q)), None),
    ("split_heads", None, lambda X, n_heads: X.reshape(*X.shape[:-2], X.shape[-2], n_heads, -1), None),
    ("merge_heads", "heads-strided-columns", lambda X: np.stack([X[..., h, :, :] for h in range(X.shape[-3])], axis=-1).reshape(*X.shape[:-3], X.shape[-2], -1), None),
    ("multi_head_attention", "missing-scale", mha_on(sdpa_with_mode("before", scale=lambda Q, K, V: 1)), None),
    ("multi_head_attention", None, lambda X, W_q, W_k, W_v, W_o, mask=None: (lambda Y, A: (Y + X, A))(*mha_on(sdpa_built_on(good_softmax))(X, W_q, W_k, W_v, W_o, mask)), None),
    ("mha_shapes", None, shapes(q=lambda n, d, d_k, H: (n, H * d_k)), None),
    ("scaled_dot_product_attention", "mask-inverted", sdpa_mask_minus_inf_added_wrongly, None),
    ("scaled_dot_product_attention", "mask-fills-zero", sdpa_with_mode("zero"), None),
    ("scaled_dot_product_attention", "mask-after-softmax", sdpa_with_mode("after"), None),
    ("scaled_dot_product_attention", "mask-ignored", sdpa_with_mode(None), None),
    ("scaled_dot_product_attention", "softmax-over-queries", sdpa_with_mode("before", axis=-2), None),
    ("scaled_dot_product_attention", "wrong-scale", sdpa_with_mode("before", scale=lambda Q, K, V: Q.shape[-1]), None),
    ("scaled_dot_product_attention", "wrong-scale", sdpa_with_mode("before", scale=lambda Q, K, V: np.sqrt(V.shape[-1])), None),
    ("scaled_dot_product_attention", "batch-dims-unsupported", sdpa_2d_only, None),
    ("scaled_dot_product_attention", None, sdpa_returns_scores, None),
    ("scaled_dot_product_attention", None, sdpa_swapped_outputs, None),
    ("scaled_dot_product_attention", "softmax-neginf-weight", sdpa_built_on(softmax_neginf_to_zero), {"softmax": softmax_neginf_to_zero}),
    ("scaled_dot_product_attention", "softmax-neginf-weight", sdpa_built_on(softmax_nan_to_num), {"softmax": softmax_nan_to_num}),
    ("scaled_dot_product_attention", "softmax-unstable", sdpa_built_on(softmax_unstable), {"softmax": softmax_unstable}),
    ("scaled_dot_product_attention", "log-softmax", sdpa_built_on(softmax_log), {"softmax": softmax_log}),
    ("scaled_dot_product_attention", "earlier-exercise-wrong", sdpa_built_on(softmax_rounded), {"softmax": softmax_rounded}),
    ("multi_head_attention", "earlier-exercise-wrong", mha_on(sdpa_built_on(softmax_rounded)), {"softmax": softmax_rounded, "scaled_dot_product_attention": sdpa_built_on(softmax_rounded)}),
    ("self_attention", "mask-inverted", self_attention_with(mode="inverted"), None),
    ("self_attention", "mask-fills-zero", self_attention_with(mode="zero"), None),
    ("self_attention", "softmax-over-queries", self_attention_with(mode="before", axis=-2), None),
    ("self_attention", "transposed-scores", self_attention_with(mode="before", transpose=True), None),
    ("self_attention", "wrong-scale", self_attention_by_d, None),
    ("self_attention", "batch-dims-unsupported", self_attention_2d_only, None),
    ("self_attention", "softmax-neginf-weight", self_attention_on(sdpa_built_on(softmax_neginf_to_zero)), {"softmax": softmax_neginf_to_zero, "scaled_dot_product_attention": sdpa_built_on(softmax_neginf_to_zero)}),
    ("self_attention", "mask-after-softmax", self_attention_on(sdpa_mask_after), {"softmax": good_softmax, "scaled_dot_product_attention": sdpa_mask_after}),
    # notebook 04
    ("mha_shapes", "shape-not-tuple", shapes_as_lists, None),
    ("mha_shapes", None, shapes_as_arrays, None),
    ("mha_shapes", "heads-averaged", shapes(concat=lambda n, d, d_k, H: (n, d_k)), None),
    ("mha_shapes", "missing-output-projection", shapes(output=lambda n, d, d_k, H: (n, H * d_k)), None),
    ("mha_shapes", None, shapes(W_o=lambda n, d, d_k, H: (d, H * d_k)), None),
    ("mha_shapes", None, shapes(A=lambda n, d, d_k, H: (n, d_k)), None),
    ("split_heads", "heads-count-as-width", split_count_as_width, None),
    ("split_heads", "heads-count-as-width", lambda X, n_heads: np.stack(np.split(X, X.shape[-1] // n_heads, axis=-1), axis=-3), None),
    ("split_heads", "heads-reshape-without-transpose", split_reshape_only, None),
    ("split_heads", "heads-strided-columns", split_strided_loop, None),
    ("split_heads", "batch-dims-unsupported", split_transpose_2d, None),
    ("split_heads", None, split_wrong_swap, None),
    ("merge_heads", "heads-reshape-without-transpose", merge_reshape_only, None),
    ("merge_heads", "heads-strided-columns", merge_strided, None),
    ("merge_heads", "batch-dims-unsupported", merge_transpose_2d, None),
    ("merge_heads", None, merge_mean, None),
    ("multi_head_attention", "weights-of-one-head", mha_loop(weights="last"), None),
    ("multi_head_attention", "weights-of-one-head", mha_loop(weights="first"), None),
    ("multi_head_attention", "weights-averaged-over-heads", mha_loop(weights="mean"), None),
    ("multi_head_attention", "heads-averaged", mha_loop(merge="mean"), None),
    ("multi_head_attention", "missing-output-projection", mha_loop(project=False), None),
    ("multi_head_attention", "heads-reshape-without-transpose", mha_loop(merge="flat"), None),
    ("multi_head_attention", "mask-fills-zero", mha_loop(mode="zero"), None),
    ("multi_head_attention", "mask-ignored", mha_loop(mode=None), None),
    ("multi_head_attention", "missing-scale", mha_loop(scale=lambda Q, K, V: 1.0), None),
    ("multi_head_attention", "transposed-scores", mha_loop(transpose=True), None),
    ("multi_head_attention", "softmax-over-queries", mha_loop(axis=-2), None),
    ("multi_head_attention", None, mha_loop(query_from=lambda W_q, W_k, h: W_k[h]), None),
    ("multi_head_attention", "softmax-neginf-weight", mha_on(sdpa_built_on(softmax_neginf_to_zero)), {"softmax": softmax_neginf_to_zero, "scaled_dot_product_attention": sdpa_built_on(softmax_neginf_to_zero)}),
    ("multi_head_attention", "mask-after-softmax", mha_on(sdpa_mask_after), {"softmax": good_softmax, "scaled_dot_product_attention": sdpa_mask_after}),
    ("multi_head_attention", "softmax-unstable", mha_on(sdpa_built_on(softmax_unstable)), {"softmax": softmax_unstable, "scaled_dot_product_attention": sdpa_built_on(softmax_unstable)}),
]  # fmt: skip
