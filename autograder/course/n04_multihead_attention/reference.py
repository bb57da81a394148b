"""Notebook 04: heads and shapes.

H heads each attend on their own with their own W_q, W_k, W_v (d, d_k); their outputs are laid
side by side (n, H*d_k) and mixed back to width d by W_o (H*d_k, d).
"""

import numpy as np

from autograder.course.n03_matrix_attention.reference import scaled_dot_product_attention


def mha_shapes(n, d, d_k, H):
    """The shape of every array in one multi-head attention layer (row-vector convention)."""
    return {
        "W_q": (d, d_k),
        "W_k": (d, d_k),
        "W_v": (d, d_k),
        "W_o": (H * d_k, d),
        "input": (n, d),
        "q": (n, d_k),
        "k": (n, d_k),
        "v": (n, d_k),
        "A": (n, n),
        "z": (n, d_k),
        "concat": (n, H * d_k),
        "output": (n, d),
    }


def split_heads(X, n_heads):
    """(..., n, H*d_k) -> (..., H, n, d_k): head h gets columns h*d_k .. (h+1)*d_k - 1."""
    *lead, n, width = X.shape
    X = X.reshape(*lead, n, n_heads, width // n_heads)  # (..., n, H, d_k)
    return np.swapaxes(X, -3, -2)  # (..., H, n, d_k)


def merge_heads(X):
    """(..., H, n, d_k) -> (..., n, H*d_k), the inverse of split_heads."""
    *lead, n_heads, n, d_k = X.shape
    return np.swapaxes(X, -3, -2).reshape(*lead, n, n_heads * d_k)


def multi_head_attention(X, W_q, W_k, W_v, W_o, mask=None):
    """Multi-head self-attention of X (..., n, d).

    W_q, W_k, W_v: (H, d, d_k), one slice per head; W_o: (H*d_k, d).
    mask: boolean, broadcastable to (..., H, n, n), True = may attend.
    Returns Y (..., n, d) and the per-head attention weights A (..., H, n, n).
    """
    X = X[..., None, :, :]  # (..., 1, n, d): one copy broadcast across the heads
    Z, A = scaled_dot_product_attention(X @ W_q, X @ W_k, X @ W_v, mask)  # (..., H, n, d_k)
    return merge_heads(Z) @ W_o, A  # (..., n, d), (..., H, n, n)
