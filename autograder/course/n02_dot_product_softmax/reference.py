"""Notebook 02: one query at a time.

The recipe for token i: project every token into a query, a key and a value; compare token i's
query with the keys; divide by sqrt(d_k); softmax into weights; weigh the values and sum.
"""

import numpy as np


def softmax(x, axis=-1):
    """exp(x) normalised along `axis`, for any ndim; stable for large inputs; -inf gets weight 0."""
    x = np.asarray(x, dtype=float)
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))  # the largest exponent is exp(0) = 1
    return e / e.sum(axis=axis, keepdims=True)


def scaled_scores(query, keys):
    """Scores of one query (d_k,) against keys (m, d_k), divided by sqrt(d_k) -> (m,)."""
    return keys @ query / np.sqrt(query.shape[-1])


def attend(query, keys, values):
    """One query (d_k,) attends to keys (m, d_k) and values (m, d_v) -> (weights (m,), output (d_v,))."""
    weights = softmax(scaled_scores(query, keys))  # (m,)
    return weights, weights @ values  # (m,), (d_v,)


def attention_for_token(X, i, W_q, W_k, W_v, causal=True):
    """Self-attention output (d_v,) of token i of X (n, d), with W_q, W_k (d, d_k), W_v (d, d_v).

    Causal: token i sees tokens 0..i only; otherwise it sees all n tokens.
    """
    visible = X[: i + 1] if causal else X  # (m, d)
    query = X[i] @ W_q  # (d_k,)
    keys = visible @ W_k  # (m, d_k)
    values = visible @ W_v  # (m, d_v)
    _, output = attend(query, keys, values)
    return output
