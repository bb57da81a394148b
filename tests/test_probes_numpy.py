"""The NumPy probes (notebooks 01-04) against a catalogue of student answers, right and wrong.

Every answer runs through the real in-process path (autograder.checks.run_in_process: requests
written to disk, the harness calling the function, judges deciding in the parent). Wrong answers
are written the way students write them and must lose marks AND be named with the right
misconception id; right answers written another way (loops, einsum, torch inside, an additive
-1e9 mask, zero-then-renormalise) must get full marks.
"""

import math
import os
import tempfile
from collections import Counter

import numpy as np
import pytest
import torch

from autograder import reference as R
from autograder.checks import run_in_process
from autograder.curriculum import BY_STEM
from autograder.misconceptions import CATALOGUE

NUMPY_STEMS = (
    "01_soft_lookup",
    "02_dot_product_softmax",
    "03_matrix_attention",
    "04_multihead_attention",
)
NAMES = [name for stem in NUMPY_STEMS for name in BY_STEM[stem].graded]

SPEC_IDS = [
    "softmax-unstable", "softmax-wrong-axis", "missing-scale", "wrong-scale", "transposed-scores",
    "softmax-over-queries", "mask-inverted", "mask-after-softmax", "mask-off-by-one",
    "heads-reshape-without-transpose", "missing-output-projection", "heads-averaged",
]  # fmt: skip
NEW_IDS = [
    "cosine-instead-of-dot", "similarity-scaled", "normalised-without-exp", "percent-not-fraction",
    "softmax-missing-keepdims", "causal-flag-ignored", "batch-dims-unsupported", "mask-not-boolean",
    "mask-fills-zero", "mask-ignored", "heads-strided-columns", "modifies-input",
    "softmax-global-max", "token-sees-later-tokens", "token-range-off-by-one", "token-range-reversed",
    "shape-not-tuple", "list-input-unsupported", "softmax-neginf-weight", "log-softmax",
    "heads-count-as-width", "weights-averaged-over-heads", "weights-of-one-head",
    "unknown-key-answered", "unknown-key-wrong-error", "unknown-key-unnamed", "products-not-summed",
    "earlier-exercise-wrong",
]  # fmt: skip
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the mutants overflow on purpose

OWNED_IDS = SPEC_IDS + NEW_IDS


@pytest.fixture(autouse=True, scope="module")
def _fast_tempdir():
    """Requests and responses go through files: on tmpfs this module runs ~10x faster."""
    saved = tempfile.tempdir
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
        tempfile.tempdir = "/dev/shm"
    yield
    tempfile.tempdir = saved


def run(name, fn):
    results = run_in_process(name, fn)
    score = sum(r.score for r in results)
    total = sum(r.max_score for r in results)
    ids = {i for r in results for i in r.misconceptions}
    return score, total, ids, results


def failures(results):
    return "\n".join(f"{r.name}: {r.output}" for r in results if r.status == "failed")


# ------------------------------------------------------------------ helpers students write

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


# ------------------------------------------------------------------ the mutants (id, name, fn)


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


@pytest.mark.parametrize(
    "misconception, name, fn", MUTANTS, ids=[f"{m}-{n}-{i}" for i, (m, n, _) in enumerate(MUTANTS)]
)
def test_mutant_loses_marks_and_is_named(misconception, name, fn):
    score, total, ids, results = run(name, fn)
    assert score < total, f"{misconception} mutant of {name} got full marks"
    assert misconception in ids, f"expected {misconception}, named {ids}\n{failures(results)}"


def test_every_owned_id_has_two_mutants():
    from numpy_mutants import NEW_MUTANTS

    counts = Counter(m for m, _, _ in MUTANTS) + Counter(m for _, m, _, _ in NEW_MUTANTS)
    assert set(OWNED_IDS) <= set(CATALOGUE)
    thin = {i: counts[i] for i in OWNED_IDS if counts[i] < 2}
    assert not thin, f"ids with fewer than two mutants: {thin}"


# ------------------------------------------------------------------ correct alternatives


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


@pytest.mark.parametrize("name, fn", CORRECT, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CORRECT)])
def test_correct_alternative_gets_full_marks(name, fn):
    score, total, ids, results = run(name, fn)
    assert score == total, failures(results)
    assert not ids


def test_every_name_has_two_correct_alternatives():
    counts = Counter(name for name, _ in CORRECT)
    assert {n: counts[n] for n in NAMES if counts[n] < 2} == {}


# ------------------------------------------------------------------ reference, stubs, cheats


@pytest.mark.parametrize("name", NAMES)
def test_reference_gets_full_marks(name):
    score, total, ids, results = run(name, getattr(R, name))
    assert score == total, failures(results)
    assert 1 <= total <= 3
    assert not ids


@pytest.mark.parametrize("name", NAMES)
def test_stub_gets_zero_and_says_not_implemented(name):
    def stub(*args, **kwargs):
        raise NotImplementedError()

    score, total, _, results = run(name, stub)
    assert score == 0 and total > 0
    assert all("not implemented" in r.output for r in results)


class _Forged:
    def __eq__(self, other):
        return True

    def __array__(self, dtype=None, copy=None):
        return np.zeros(3)


class _Liar(np.ndarray):
    """An ndarray that claims to equal anything and to be close to anything."""

    def __eq__(self, other):
        return np.ones(np.shape(self), dtype=bool)

    def __array_function__(self, func, types, args, kwargs):
        if func in (np.allclose, np.array_equal, np.isclose):
            return True
        return super().__array_function__(func, types, args, kwargs)


def value_score(results):
    """Every point: "leaves its inputs unmodified" too needs the right values, so a forged or
    zero answer earns nothing anywhere."""
    return sum(r.score for r in results)


@pytest.mark.parametrize("name", ["softmax", "attention_scores", "split_heads"])
def test_forged_objects_get_zero(name):
    score, _, _, results = run(name, lambda *a, **k: _Forged())
    assert score == 0
    assert "_Forged" in results[0].output

    def liar(*args, **kwargs):
        shape = np.shape(getattr(R, name)(*args, **kwargs))
        return np.zeros(shape).view(_Liar)

    assert value_score(run(name, liar)[3]) == 0


def test_wrong_return_types_get_clear_messages():
    _, _, _, results = run("softmax", lambda x, axis=-1: R.softmax(x, axis).tolist())
    assert results[0].score == 0 and "Python list" in results[0].output
    _, _, _, results = run("softmax", lambda x, axis=-1: torch.from_numpy(R.softmax(x, axis)))
    assert results[0].score == 0 and "torch tensor" in results[0].output
    _, _, _, results = run("attend", lambda q, K, V: R.attend(q, K, V)[0])
    assert results[0].score == 0 and "tuple of 2" in results[0].output
    _, _, _, results = run("similarity", lambda q, K: None)
    assert "return" in results[0].output


def test_patching_numpy_in_the_students_call_does_not_change_the_verdict():
    saved = (np.allclose, np.isclose, np.array_equal, np.testing.assert_allclose)

    def cheat(x, axis=-1):
        np.allclose = lambda *a, **k: True
        np.isclose = lambda a, b, *r, **k: np.ones(np.broadcast(a, b).shape, dtype=bool)
        np.array_equal = lambda *a, **k: True
        np.testing.assert_allclose = lambda *a, **k: None
        return np.zeros(np.shape(x))

    try:
        score, total, _, results = run("softmax", cheat)
    finally:
        np.allclose, np.isclose, np.array_equal, np.testing.assert_allclose = saved
    assert value_score(results) == 0, failures(results)


def test_float32_answer_is_told_about_precision():
    _, _, _, results = run(
        "attention_scores", lambda Q, K: (R.attention_scores(Q, K) * (1 + 3e-6)).astype(np.float32)
    )
    assert results[0].score < results[0].max_score
    assert "float32" in results[0].output


def test_messages_never_print_the_expected_array():
    _, _, _, results = run("softmax", lambda x, axis=-1: R.softmax(x, axis) * 0.9)
    failed = [r for r in results if r.status == "failed"]
    assert len(failed) == len(results)  # the inputs test too (it says the inputs are fine)
    for r in failed:
        assert "[[" not in r.output and "array(" not in r.output


def test_scale_hint_gives_the_factor():
    _, _, ids, results = run("attention_scores", lambda Q, K: Q @ swap(K))
    assert "2.83x too large for d_k = 8" in results[0].output
    assert ids == {"missing-scale"}


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


@pytest.mark.parametrize("name", NAMES)
def test_weird_outputs_score_zero_with_a_message_never_a_crash(name):
    for what, fn in WEIRD.items():
        score, _, _, results = run(name, fn)
        assert score == 0, f"{what}: {failures(results)}"
        for r in results:
            assert r.output and "could not check" not in r.output, (what, r.name, r.output)
