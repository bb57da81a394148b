"""Notebook 03: all queries at once.

Stack the queries, keys and values as rows: Q (n_q, d_k), K (n_k, d_k), V (n_k, d_v). Then
A = softmax(Q K^T / sqrt(d_k)) has one row per query, each summing to 1, and Z = A V.
Every function accepts leading batch dimensions (..., n, d).
"""

import numpy as np

from autograder.course.n02_dot_product_softmax.reference import softmax


def attention_scores(Q, K):
    """Scaled scores Q K^T / sqrt(d_k): Q (..., n_q, d_k), K (..., n_k, d_k) -> (..., n_q, n_k)."""
    return Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])


def causal_mask(n):
    """Boolean (n, n): True where query i may attend to key j, that is on and below the diagonal."""
    return np.tril(np.ones((n, n), dtype=bool))


def scaled_dot_product_attention(Q, K, V, mask=None):
    """Attention of Q (..., n_q, d_k) over K (..., n_k, d_k), V (..., n_k, d_v).

    mask: boolean, broadcastable to (..., n_q, n_k), True = may attend.
    Returns Z (..., n_q, d_v) and the attention weights A (..., n_q, n_k).
    """
    scores = attention_scores(Q, K)  # (..., n_q, n_k)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)  # before the softmax: blocked keys get weight 0
    A = softmax(scores, axis=-1)  # each row sums to 1
    return A @ V, A  # (..., n_q, d_v), (..., n_q, n_k)


def self_attention(X, W_q, W_k, W_v, mask=None):
    """Self-attention of X (..., n, d) with W_q, W_k (d, d_k), W_v (d, d_v) -> (Z, A)."""
    return scaled_dot_product_attention(X @ W_q, X @ W_k, X @ W_v, mask)
