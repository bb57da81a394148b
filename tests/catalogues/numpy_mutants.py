"""More wrong answers to notebooks 01-04, written as students write them, each annotated with the
one misconception id its failed tests must name (None: no id is specific to what it does, and
the messages must say what was observed instead).

Entries are (graded name, id or None, the answer, the student's other functions): the last,
when given, are the student's own earlier functions the grader finds in the notebook's
namespace (a correct function built on a wrong earlier one must be blamed on that one).
tests/catalogues/test_mistake_catalogue_numpy.py measures the whole catalogue (this one with
numpy_diagnosis_mutants.MUTANTS and MUTANTS here). MUTANTS, CORRECT and WEIRD are
tests/course/numpy_shared/test_probes_numpy.py's catalogues (wrong answers, right answers written another way,
weird outputs); a data module, not a test file.
"""

import math

import numpy as np
import torch

from autograder.checks import run_in_process
from autograder.course import model_answers as R
from autograder.curriculum import BY_STEM

NUMPY_STEMS = (
    "01_soft_lookup",
    "02_dot_product_softmax",
    "03_matrix_attention",
    "04_multihead_attention",
)


NAMES = [name for stem in NUMPY_STEMS for name in BY_STEM[stem].graded]


def run(name, fn):
    results = run_in_process(name, fn)
    score = sum(r.score for r in results)
    total = sum(r.max_score for r in results)
    ids = {i for r in results for i in r.misconceptions}
    return score, total, ids, results


swap = lambda M: np.swapaxes(M, -1, -2)  # noqa: E731


def stable_softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def sdpa_with(Q, K, V, mask=None, scale=None, axis=-1, mode="before", transpose=False):
    d_k = Q.shape[-1]
    S = (K @ swap(Q) if transpose else Q @ swap(K)) / (math.sqrt(d_k) if scale is None else scale)
    if mask is not None and mode == "before":
        S = np.where(mask, S, -np.inf)
    if mask is not None and mode == "inverted":
        S = np.where(mask, -np.inf, S)
    if mask is not None and mode == "zero":
        S = np.where(mask, S, 0.0)
    if mask is not None and mode == "times":
        S = S * mask
    A = stable_softmax(S, axis=axis)
    if mask is not None and mode == "after":
        A = A * mask
    if mask is not None and mode == "after-where":
        A = np.where(mask, A, 0.0)
    return A @ V, A


def mha_with(X, W_q, W_k, W_v, W_o, mask=None, merge="right", project=True, average=None, **kw):
    Xh = X[..., None, :, :]
    Z, A = sdpa_with(Xh @ W_q, Xh @ W_k, Xh @ W_v, mask, **kw)
    *lead, H, n, d_k = Z.shape
    if merge == "right":
        concat = np.swapaxes(Z, -3, -2).reshape(*lead, n, H * d_k)
    else:  # reshaped without moving the heads axis
        concat = Z.reshape(*lead, n, H * d_k)
    if average == "Y":
        blocks = [Z[..., h, :, :] @ W_o[h * d_k : (h + 1) * d_k] for h in range(H)]
        return sum(blocks) / H, A
    if average == "A":
        return concat @ W_o, A.mean(axis=-3)
    return (concat @ W_o if project else concat), A


def _percentages_in_place(scores):
    scores -= scores.max()
    return np.exp(scores) / np.exp(scores).sum()


def _softmax_in_place(x, axis=-1):
    x -= np.max(x, axis=axis, keepdims=True)
    np.exp(x, out=x)
    return x / x.sum(axis=axis, keepdims=True)


def _sdpa_scales_Q_in_place(Q, K, V, mask=None):
    Q /= np.sqrt(Q.shape[-1])
    S = Q @ swap(K)
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    A = stable_softmax(S)
    return A @ V, A


def _sdpa_global_max(Q, K, V, mask=None):
    S = Q @ swap(K) / np.sqrt(Q.shape[-1])
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    e = np.exp(S - S.max())  # the whole array's maximum
    A = e / e.sum(-1, keepdims=True)
    return A @ V, A


def _token_all(X, i, W_q, W_k, W_v, causal=True):
    q, K, V = X[i] @ W_q, X @ W_k, X @ W_v
    return stable_softmax(K @ q / np.sqrt(W_q.shape[1])) @ V


def _token_via_matrix_no_mask(X, i, W_q, W_k, W_v, causal=True):
    Z, _ = R.self_attention(X, W_q, W_k, W_v)
    return Z[i]


def _token_always_causal(X, i, W_q, W_k, W_v, causal=True):
    Xs = X[: i + 1]
    q, K, V = X[i] @ W_q, Xs @ W_k, Xs @ W_v
    return stable_softmax(K @ q / np.sqrt(W_q.shape[1])) @ V


def _token_always_causal_loop(X, i, W_q, W_k, W_v, causal=True):
    q = X[i] @ W_q
    scores = [(X[j] @ W_k) @ q / math.sqrt(len(q)) for j in range(i + 1)]
    w = stable_softmax(np.array(scores))
    return sum(w[j] * (X[j] @ W_v) for j in range(i + 1))


def _token_off_by_one(X, i, W_q, W_k, W_v, causal=True):
    Xs = X[:i] if causal else X  # forgets that token i sees itself
    q, K, V = X[i] @ W_q, Xs @ W_k, Xs @ W_v
    return stable_softmax(K @ q / np.sqrt(W_q.shape[1])) @ V


def _token_off_by_one_plus(X, i, W_q, W_k, W_v, causal=True):
    Xs = X[: i + 2] if causal else X
    q, K, V = X[i] @ W_q, Xs @ W_k, Xs @ W_v
    return stable_softmax(K @ q / np.sqrt(W_q.shape[1])) @ V


def _token_scaled_by_d(X, i, W_q, W_k, W_v, causal=True):
    Xs = X[: i + 1] if causal else X
    q, K, V = X[i] @ W_q, Xs @ W_k, Xs @ W_v
    return stable_softmax(K @ q / np.sqrt(X.shape[1])) @ V


def _token_from_itself_on(X, i, W_q, W_k, W_v, causal=True):
    Xs = X[i:] if causal else X
    q, K, V = X[i] @ W_q, Xs @ W_k, Xs @ W_v
    return stable_softmax(K @ q / np.sqrt(W_q.shape[1])) @ V


def _token_after_itself(X, i, W_q, W_k, W_v, causal=True):
    rows = range(i + 1, len(X)) if causal else range(len(X))
    q = X[i] @ W_q
    w = stable_softmax(np.array([(X[j] @ W_k) @ q for j in rows]) / np.sqrt(len(q)))
    return sum(w_j * (X[j] @ W_v) for w_j, j in zip(w, rows, strict=True))


def _split_2d_only(X, n_heads):
    n, w = X.shape[-2:]
    return X.reshape(n, n_heads, w // n_heads).transpose(1, 0, 2)


def _merge_2d_only(X):
    H, n, d_k = X.shape[-3:]
    return X.transpose(1, 0, 2).reshape(n, H * d_k)


def _mha_loop_no_projection(X, W_q, W_k, W_v, W_o, mask=None):
    outs, weights = [], []
    for h in range(W_q.shape[0]):
        Z, A = R.scaled_dot_product_attention(X @ W_q[h], X @ W_k[h], X @ W_v[h], mask)
        outs.append(Z)
        weights.append(A)
    return np.concatenate(outs, axis=-1), np.stack(weights, axis=-3)


def _cosine(q, K):
    return (K @ q) / (np.linalg.norm(K, axis=1) * np.linalg.norm(q))


MUTANTS = [
    # notebook 01
    ("cosine-instead-of-dot", "similarity", _cosine),
    ("cosine-instead-of-dot", "soft_lookup",
     lambda q, K, V: (lambda w: (w, w @ V))(R.percentages(_cosine(q, K)))),
    ("similarity-scaled", "similarity", lambda q, K: K @ q / np.sqrt(len(q))),
    ("similarity-scaled", "soft_lookup",
     lambda q, K, V: (lambda w: (w, w @ V))(R.percentages(K @ q / np.sqrt(len(q))))),
    ("normalised-without-exp", "percentages", lambda s: s / s.sum()),
    ("normalised-without-exp", "soft_lookup", lambda q, K, V: (lambda s: (s / s.sum(), s / s.sum() @ V))(K @ q)),
    ("percent-not-fraction", "percentages", lambda s: 100 * np.exp(s - s.max()) / np.exp(s - s.max()).sum()),
    ("percent-not-fraction", "soft_lookup", lambda q, K, V: (100 * R.percentages(K @ q), R.percentages(K @ q) @ V)),
    ("softmax-unstable", "percentages", lambda s: np.exp(s) / np.sum(np.exp(s))),
    ("modifies-input", "percentages", _percentages_in_place),
    # notebook 02
    ("softmax-unstable", "softmax", lambda x, axis=-1: np.exp(x) / np.exp(x).sum(axis=axis, keepdims=True)),
    ("softmax-unstable", "attend",
     lambda q, K, V: (lambda e: (e / e.sum(), e / e.sum() @ V))(np.exp(K @ q / np.sqrt(len(q))))),
    ("softmax-wrong-axis", "softmax", lambda x, axis=-1: stable_softmax(x, axis=0)),
    ("softmax-wrong-axis", "softmax",
     lambda x, axis=-1: (lambda e: e / e.sum())(np.exp(np.asarray(x, float) - np.max(x)))),
    ("softmax-missing-keepdims", "softmax",
     lambda x, axis=-1: (lambda e: e / e.sum(axis=axis))(np.exp(x - np.max(x, axis=axis, keepdims=True)))),
    ("softmax-missing-keepdims", "softmax",
     lambda x, axis=-1: (lambda e: e / e.sum(axis=axis, keepdims=True))(np.exp(x - np.max(x, axis=axis)))),
    ("modifies-input", "softmax", _softmax_in_place),
    ("missing-scale", "scaled_scores", lambda q, K: K @ q),
    ("missing-scale", "attend", lambda q, K, V: (lambda w: (w, w @ V))(stable_softmax(K @ q))),
    ("wrong-scale", "scaled_scores", lambda q, K: K @ q / len(q)),
    ("wrong-scale", "attend", lambda q, K, V: (lambda w: (w, w @ V))(stable_softmax(K @ q / q.shape[0]))),
    ("wrong-scale", "attention_for_token", _token_scaled_by_d),
    ("token-sees-later-tokens", "attention_for_token", _token_all),
    ("token-sees-later-tokens", "attention_for_token", _token_via_matrix_no_mask),
    ("causal-flag-ignored", "attention_for_token", _token_always_causal),
    ("causal-flag-ignored", "attention_for_token", _token_always_causal_loop),
    ("token-range-off-by-one", "attention_for_token", _token_off_by_one),
    ("token-range-off-by-one", "attention_for_token", _token_off_by_one_plus),
    ("token-range-reversed", "attention_for_token", _token_from_itself_on),
    ("token-range-reversed", "attention_for_token", _token_after_itself),
    ("softmax-global-max", "softmax", lambda x, axis=-1: (lambda e: e / e.sum(axis=axis, keepdims=True))(np.exp(x - np.max(x)))),
    ("softmax-global-max", "scaled_dot_product_attention", _sdpa_global_max),
    # notebook 03
    ("missing-scale", "attention_scores", lambda Q, K: Q @ swap(K)),
    ("missing-scale", "scaled_dot_product_attention", lambda Q, K, V, mask=None: sdpa_with(Q, K, V, mask, scale=1)),
    ("missing-scale", "self_attention",
     lambda X, Wq, Wk, Wv, mask=None: sdpa_with(X @ Wq, X @ Wk, X @ Wv, mask, scale=1)),
    ("wrong-scale", "attention_scores", lambda Q, K: Q @ swap(K) / np.sqrt(K.shape[-2])),
    ("wrong-scale", "self_attention",
     lambda X, Wq, Wk, Wv, mask=None: sdpa_with(X @ Wq, X @ Wk, X @ Wv, mask, scale=np.sqrt(X.shape[-1]))),
    ("transposed-scores", "attention_scores", lambda Q, K: K @ swap(Q) / np.sqrt(Q.shape[-1])),
    ("transposed-scores", "attention_scores", lambda Q, K: np.einsum("...kd,...qd->...kq", K, Q) / np.sqrt(Q.shape[-1])),
    ("transposed-scores", "scaled_dot_product_attention",
     lambda Q, K, V, mask=None: sdpa_with(Q, K, V, mask, transpose=True)),
    ("batch-dims-unsupported", "attention_scores", lambda Q, K: Q @ K.T / np.sqrt(Q.shape[-1])),
    ("batch-dims-unsupported", "split_heads", _split_2d_only),
    ("batch-dims-unsupported", "merge_heads", _merge_2d_only),
    ("shape-not-tuple", "mha_shapes",
     lambda n, d, d_k, H: {k: list(v) for k, v in R.mha_shapes(n, d, d_k, H).items()}),
    ("mask-inverted", "causal_mask", lambda n: np.triu(np.ones((n, n), dtype=bool), k=1)),
    ("mask-inverted", "causal_mask", lambda n: ~np.tril(np.ones((n, n), dtype=bool))),
    ("mask-inverted", "scaled_dot_product_attention",
     lambda Q, K, V, mask=None: sdpa_with(Q, K, V, mask, mode="inverted")),
    ("mask-off-by-one", "causal_mask", lambda n: np.tril(np.ones((n, n), dtype=bool), k=-1)),
    ("mask-off-by-one", "causal_mask", lambda n: np.arange(n)[:, None] > np.arange(n)[None, :]),
    ("mask-not-boolean", "causal_mask", lambda n: np.tril(np.ones((n, n)))),
    ("mask-not-boolean", "causal_mask", lambda n: (np.arange(n)[:, None] >= np.arange(n)).astype(int)),
    ("mask-after-softmax", "scaled_dot_product_attention",
     lambda Q, K, V, mask=None: sdpa_with(Q, K, V, mask, mode="after")),
    ("mask-after-softmax", "self_attention",
     lambda X, Wq, Wk, Wv, mask=None: sdpa_with(X @ Wq, X @ Wk, X @ Wv, mask, mode="after-where")),
    ("mask-fills-zero", "scaled_dot_product_attention",
     lambda Q, K, V, mask=None: sdpa_with(Q, K, V, mask, mode="zero")),
    ("mask-fills-zero", "scaled_dot_product_attention",
     lambda Q, K, V, mask=None: sdpa_with(Q, K, V, mask, mode="times")),
    ("mask-ignored", "scaled_dot_product_attention", lambda Q, K, V, mask=None: sdpa_with(Q, K, V)),
    ("mask-ignored", "self_attention", lambda X, Wq, Wk, Wv, mask=None: sdpa_with(X @ Wq, X @ Wk, X @ Wv)),
    ("softmax-over-queries", "scaled_dot_product_attention",
     lambda Q, K, V, mask=None: sdpa_with(Q, K, V, mask, axis=-2)),
    ("softmax-over-queries", "self_attention",
     lambda X, Wq, Wk, Wv, mask=None: sdpa_with(X @ Wq, X @ Wk, X @ Wv, mask, axis=-2)),
    ("softmax-wrong-axis", "self_attention",  # axis 0 is the batch axis once there is one
     lambda X, Wq, Wk, Wv, mask=None: sdpa_with(X @ Wq, X @ Wk, X @ Wv, mask, axis=0)),
    ("softmax-wrong-axis", "scaled_dot_product_attention",
     lambda Q, K, V, mask=None: sdpa_with(Q, K, V, mask, axis=0)),
    ("modifies-input", "scaled_dot_product_attention", _sdpa_scales_Q_in_place),
    # notebook 04
    ("heads-reshape-without-transpose", "split_heads",
     lambda X, n_heads: X.reshape(*X.shape[:-2], n_heads, X.shape[-2], X.shape[-1] // n_heads)),
    ("heads-reshape-without-transpose", "merge_heads",
     lambda X: X.reshape(*X.shape[:-3], X.shape[-2], X.shape[-3] * X.shape[-1])),
    ("heads-reshape-without-transpose", "multi_head_attention",
     lambda *a, mask=None: mha_with(*a, mask=mask, merge="flat")),
    ("heads-strided-columns", "split_heads",
     lambda X, H: np.moveaxis(X.reshape(*X.shape[:-1], X.shape[-1] // H, H), -1, -3)),
    ("heads-strided-columns", "merge_heads",
     lambda X: np.moveaxis(X, -3, -1).reshape(*X.shape[:-3], X.shape[-2], -1)),
    ("missing-output-projection", "multi_head_attention", lambda *a, mask=None: mha_with(*a, mask=mask, project=False)),
    ("missing-output-projection", "multi_head_attention", _mha_loop_no_projection),
    ("heads-averaged", "multi_head_attention", lambda *a, mask=None: mha_with(*a, mask=mask, average="Y")),
    ("weights-averaged-over-heads", "multi_head_attention", lambda *a, mask=None: mha_with(*a, mask=mask, average="A")),
    ("missing-scale", "multi_head_attention", lambda *a, mask=None: mha_with(*a, mask=mask, scale=1)),
    ("mask-after-softmax", "multi_head_attention", lambda *a, mask=None: mha_with(*a, mask=mask, mode="after")),
    ("softmax-over-queries", "multi_head_attention", lambda *a, mask=None: mha_with(*a, mask=mask, axis=-2)),
]  # fmt: skip


def _lookup_loop(table, query):
    for key, value in table.items():
        if key == query:
            return value
    raise KeyError(query)


def _lookup_checked(table, query):
    if query not in table:
        raise KeyError(f"unknown key {query!r}")
    return table[query]


def _percentages_loop(scores):
    m = max(scores)
    e = [math.exp(s - m) for s in scores]
    return np.array([x / sum(e) for x in e])


def _softmax_torch(x, axis=-1):
    return torch.softmax(torch.as_tensor(np.asarray(x, dtype=np.float64)), dim=axis).numpy()


def _softmax_logsumexp(x, axis=-1):
    x = np.asarray(x, dtype=float)
    m = np.max(x, axis=axis, keepdims=True)
    lse = m + np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))
    return np.exp(x - lse)


def _softmax_moveaxis_loop(x, axis=-1):
    x = np.moveaxis(np.asarray(x, dtype=float), axis, -1)
    out = np.empty_like(x)
    for idx in np.ndindex(x.shape[:-1]):
        row = x[idx]
        e = np.exp(row - row.max())
        out[idx] = e / e.sum()
    return np.moveaxis(out, -1, axis)


def _attend_loop(q, K, V):
    scores = np.array([K[j] @ q for j in range(len(K))]) / math.sqrt(len(q))
    w = _percentages_loop(scores)
    return w, sum(w[j] * V[j] for j in range(len(V)))


def _attend_torch(q, K, V):
    qt, Kt, Vt = (torch.from_numpy(a) for a in (q, K, V))
    w = torch.softmax(Kt @ qt / qt.shape[0] ** 0.5, dim=0)
    return w.numpy(), (w @ Vt).numpy()


def _token_project_all(X, i, W_q, W_k, W_v, causal=True):
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    m = i + 1 if causal else len(X)
    w = stable_softmax(K[:m] @ Q[i] / np.sqrt(Q.shape[1]))
    return w @ V[:m]


def _token_additive_mask(X, i, W_q, W_k, W_v, causal=True):
    Q, K, V = X @ W_q, X @ W_k, X @ W_v
    s = K @ Q[i] / np.sqrt(W_k.shape[1])
    if causal:
        s = s + np.where(np.arange(len(X)) <= i, 0.0, -1e9)
    return stable_softmax(s) @ V


def _causal_loop(n):
    m = np.zeros((n, n), dtype=bool)
    for i in range(n):
        for j in range(i + 1):
            m[i, j] = True
    return m


def _sdpa_additive(Q, K, V, mask=None):
    S = np.matmul(Q, np.swapaxes(K, -1, -2)) * Q.shape[-1] ** -0.5
    if mask is not None:
        S = S + np.where(mask, 0.0, -1e9)
    A = stable_softmax(S)
    return A @ V, A


def _sdpa_renormalised(Q, K, V, mask=None):
    A = stable_softmax(np.einsum("...qd,...kd->...qk", Q, K) / np.sqrt(Q.shape[-1]))
    if mask is not None:
        A = A * mask
        A = A / A.sum(axis=-1, keepdims=True)
    return np.einsum("...qk,...kv->...qv", A, V), A


def _sdpa_torch(Q, K, V, mask=None):
    q, k, v = (torch.from_numpy(np.ascontiguousarray(a)) for a in (Q, K, V))
    S = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if mask is not None:
        S = S.masked_fill(~torch.from_numpy(np.asarray(mask)), float("-inf"))
    A = torch.softmax(S, dim=-1)
    return (A @ v).numpy(), A.numpy()


def _self_attention_loop(X, W_q, W_k, W_v, mask=None):
    if X.ndim > 2:
        pairs = [_self_attention_loop(x, W_q, W_k, W_v, mask) for x in X]
        return np.stack([z for z, _ in pairs]), np.stack([a for _, a in pairs])
    n = len(X)
    Z, A = np.zeros((n, W_v.shape[1])), np.zeros((n, n))
    for i in range(n):
        s = np.array([(X[i] @ W_q) @ (X[j] @ W_k) for j in range(n)]) / math.sqrt(W_q.shape[1])
        if mask is not None:
            s = np.where(np.asarray(mask)[i], s, -np.inf)
        A[i] = stable_softmax(s)
        Z[i] = A[i] @ (X @ W_v)
    return Z, A


def _split_stack(X, n_heads):
    d_k = X.shape[-1] // n_heads
    return np.stack([X[..., h * d_k : (h + 1) * d_k] for h in range(n_heads)], axis=-3)


def _split_moveaxis(X, n_heads):
    return np.moveaxis(X.reshape(*X.shape[:-1], n_heads, -1), -2, -3)


def _merge_concat(X):
    return np.concatenate([X[..., h, :, :] for h in range(X.shape[-3])], axis=-1)


def _head_mask(mask, X, H, h):
    """Head h's slice of a mask broadcastable to (..., H, n, n) (one per head, or shared)."""
    if mask is None:
        return None
    n = X.shape[-2]
    return np.broadcast_to(mask, (*X.shape[:-2], H, n, n))[..., h, :, :]


def _mha_loop(X, W_q, W_k, W_v, W_o, mask=None):
    outs, weights = [], []
    for h in range(W_q.shape[0]):
        m = _head_mask(mask, X, W_q.shape[0], h)
        Z, A = _sdpa_additive(X @ W_q[h], X @ W_k[h], X @ W_v[h], m)
        outs.append(Z)
        weights.append(A)
    return np.concatenate(outs, axis=-1) @ W_o, np.stack(weights, axis=-3)


def _mha_sum_of_blocks(X, W_q, W_k, W_v, W_o, mask=None):
    H, _, d_k = W_q.shape
    Y, weights = 0.0, []
    for h in range(H):
        Z, A = _sdpa_renormalised(X @ W_q[h], X @ W_k[h], X @ W_v[h], _head_mask(mask, X, H, h))
        Y = Y + Z @ W_o[h * d_k : (h + 1) * d_k]
        weights.append(A)
    return Y, np.stack(weights, axis=-3)


def _mha_shapes_numpy_ints(n, d, d_k, H):
    n, d, d_k, H = (np.int64(v) for v in (n, d, d_k, H))
    return {
        "W_q": (d, d_k), "W_k": (d, d_k), "W_v": (d, d_k), "W_o": (H * d_k, d),
        "input": (n, d), "q": (n, d_k), "k": (n, d_k), "v": (n, d_k), "A": (n, n),
        "z": (n, d_k), "concat": (n, H * d_k), "output": (n, d), "extra": "ignored",
    }  # fmt: skip


CORRECT = [
    ("lookup", _lookup_loop),
    ("lookup", _lookup_checked),
    ("similarity", lambda q, K: np.array([k @ q for k in K])),
    ("similarity", lambda q, K: np.einsum("md,d->m", K, q)),
    ("similarity", lambda q, K: (torch.from_numpy(K) @ torch.from_numpy(q)).numpy()),
    ("percentages", _percentages_loop),
    ("percentages", lambda s: _softmax_torch(s)),
    ("percentages", lambda s: np.exp(s - np.logaddexp.reduce(s))),
    ("soft_lookup", lambda q, K, V: (lambda w: (w, np.einsum("m,mv->v", w, V)))(_percentages_loop(K @ q))),
    ("soft_lookup", lambda q, K, V: (lambda w: (w, sum(w[j] * V[j] for j in range(len(V)))))(_softmax_torch(K @ q))),
    ("softmax", _softmax_torch),
    ("softmax", _softmax_logsumexp),
    ("softmax", _softmax_moveaxis_loop),
    ("scaled_scores", lambda q, K: np.array([k @ q / math.sqrt(len(q)) for k in K])),
    ("scaled_scores", lambda q, K: np.einsum("md,d->m", K, q) * len(q) ** -0.5),
    ("attend", _attend_loop),
    ("attend", _attend_torch),
    ("attention_for_token", _token_project_all),
    ("attention_for_token", _token_additive_mask),
    ("attention_scores", lambda Q, K: np.einsum("...qd,...kd->...qk", Q, K) / np.sqrt(Q.shape[-1])),
    ("attention_scores", lambda Q, K: np.matmul(Q, K.swapaxes(-1, -2)) * Q.shape[-1] ** -0.5),
    ("attention_scores",
     lambda Q, K: (torch.from_numpy(Q) @ torch.from_numpy(K).mT / math.sqrt(Q.shape[-1])).numpy()),
    ("causal_mask", lambda n: np.arange(n)[:, None] >= np.arange(n)[None, :]),
    ("causal_mask", _causal_loop),
    ("causal_mask", lambda n: np.tri(n, dtype=bool)),
    ("scaled_dot_product_attention", _sdpa_additive),
    ("scaled_dot_product_attention", _sdpa_renormalised),
    ("scaled_dot_product_attention", _sdpa_torch),
    ("self_attention", _self_attention_loop),
    ("self_attention", lambda X, Wq, Wk, Wv, mask=None: _sdpa_additive(X @ Wq, X @ Wk, X @ Wv, mask)),
    ("mha_shapes", _mha_shapes_numpy_ints),
    ("mha_shapes", lambda n, d, d_k, H: {k: tuple(int(x) for x in v) for k, v in R.mha_shapes(n, d, d_k, H).items()}),
    ("split_heads", _split_stack),
    ("split_heads", _split_moveaxis),
    ("merge_heads", _merge_concat),
    ("merge_heads", lambda X: np.moveaxis(X, -3, -2).reshape(*X.shape[:-3], X.shape[-2], -1)),
    ("multi_head_attention", _mha_loop),
    ("multi_head_attention", _mha_sum_of_blocks),
]  # fmt: skip


class _Thing:
    pass


WEIRD = {
    "None": lambda *a, **k: None,
    "a nested list": lambda *a, **k: [[1, [2]], 3],
    "a tensor": lambda *a, **k: torch.zeros(3),
    "an object": lambda *a, **k: _Thing(),
    "a string array": lambda *a, **k: np.array(["a", "b"]),
    "a complex array": lambda *a, **k: np.zeros(3, complex),
    "a pair of Nones": lambda *a, **k: (None, None),
    "a NaN array": lambda *a, **k: np.full((2, 2), np.nan),
    "SystemExit": lambda *a, **k: (_ for _ in ()).throw(SystemExit(1)),
}


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
    """sdpa_with with the mask applied by `mode` (None: ignored; "after": the
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
