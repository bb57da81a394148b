"""The lectures' own printed numbers, hard-coded, reproduced by the model answers."""

import math

import numpy as np
import pytest
import torch

from autograder.course.model_answers import (
    causal_mask,
    lookup,
    merge_heads,
    mha_shapes,
    multi_head_attention,
    scaled_dot_product_attention,
    sinusoidal_positional_encoding,
    soft_lookup,
    softmax,
    split_heads,
)


def test_fruit_soft_lookup_gives_point1_point1_point8():
    from coursedata import load_fruit

    fruit = load_fruit()
    query, keys = np.asarray(fruit.query, dtype=float), np.asarray(fruit.keys, dtype=float)
    values = np.asarray(fruit.values, dtype=float)
    weights, output = soft_lookup(query, keys, values)
    np.testing.assert_allclose(weights, [0.1, 0.1, 0.8], rtol=0, atol=1e-12)
    np.testing.assert_allclose(
        output, 0.1 * values[0] + 0.1 * values[1] + 0.8 * values[2], atol=1e-12
    )
    assert list(fruit.words) == ["apple", "banana", "lemon"]  # 0.8 goes to lemon -> citron


def test_fruit_dictionary_hard_lookup():
    from coursedata import dict_en2fr

    table = dict_en2fr()
    assert lookup(table, "lemon") == "citron"
    with pytest.raises(KeyError, match="orange"):
        lookup(table, "orange")


# The lecture's "I am a Robot" table: positional encodings with base=100, d_model=4.
ROBOT = {
    "I": [0.00, 1.00, 0.00, 1.00],
    "am": [0.84, 0.54, 0.10, 1.00],
    "a": [0.91, -0.42, 0.20, 0.98],
    "Robot": [0.14, -0.99, 0.30, 0.96],
}


def test_i_am_a_robot_positional_encoding_table():
    P = sinusoidal_positional_encoding(4, 4, base=100)
    assert P.shape == (4, 4)
    table = np.array(list(ROBOT.values()))
    np.testing.assert_array_equal(np.round(P.double().numpy(), 2), table)


# The lecture's multi-head shape table, n=2, d=4, d_k=3, H=5, in our row-vector convention
# (the lecture writes W^o as 4x15; ours is its transpose).
N, D, D_K, H = 2, 4, 3, 5
SHAPES = {
    "W_q": (4, 3),
    "W_k": (4, 3),
    "W_v": (4, 3),
    "W_o": (15, 4),
    "input": (2, 4),
    "q": (2, 3),
    "k": (2, 3),
    "v": (2, 3),
    "A": (2, 2),
    "z": (2, 3),
    "concat": (2, 15),
    "output": (2, 4),
}


def test_mha_shapes_table():
    assert mha_shapes(N, D, D_K, H) == SHAPES


def test_mha_shapes_table_matches_the_arrays_actually_computed():
    rng = np.random.default_rng(0)
    W_q, W_k, W_v = (rng.standard_normal((H, D, D_K)) for _ in range(3))
    W_o = rng.standard_normal((H * D_K, D))
    X = rng.standard_normal((N, D))
    q, k, v = X @ W_q, X @ W_k, X @ W_v  # (H, n, d_k): one per head
    z, A = scaled_dot_product_attention(q, k, v)
    concat = merge_heads(z)
    Y, A_mha = multi_head_attention(X, W_q, W_k, W_v, W_o)
    actual = {
        "W_q": W_q[0].shape,
        "W_k": W_k[0].shape,
        "W_v": W_v[0].shape,
        "W_o": W_o.shape,
        "input": X.shape,
        "q": q[0].shape,
        "k": k[0].shape,
        "v": v[0].shape,
        "A": A_mha[0].shape,
        "z": z[0].shape,
        "concat": concat.shape,
        "output": Y.shape,
    }
    assert actual == SHAPES
    assert A_mha.shape == (H, *SHAPES["A"]) and A.shape == A_mha.shape
    assert split_heads(concat, H).shape == (H, *SHAPES["z"])
    np.testing.assert_allclose(concat @ W_o, Y, rtol=1e-12)


# The lecture's masked score matrix (4 tokens) and its causal softmax.
SCORES = np.array([[12, 3, 5, 2], [4, 9, 3, 5], [2, 3, 7, 2], [3, 4, 1, 9]], dtype=float)


def test_masked_score_matrix():
    mask = causal_mask(4)
    A = softmax(np.where(mask, SCORES, -np.inf))
    assert (A[np.triu_indices(4, 1)] == 0).all()
    np.testing.assert_array_equal(A[0], [1.0, 0.0, 0.0, 0.0])
    e = math.exp
    np.testing.assert_allclose(A[1, :2], [e(4) / (e(4) + e(9)), e(9) / (e(4) + e(9))], rtol=1e-12)
    masked = torch.tensor(SCORES).masked_fill(~torch.tensor(mask), float("-inf"))
    np.testing.assert_allclose(A, torch.softmax(masked, dim=-1).numpy(), rtol=1e-6, atol=1e-8)


def test_masked_score_matrix_through_scaled_dot_product_attention():
    d_k = 4
    Q, K = SCORES * math.sqrt(d_k), np.eye(d_k)  # Q K^T / sqrt(d_k) == SCORES
    V = np.arange(16.0).reshape(4, 4)
    Z, A = scaled_dot_product_attention(Q, K, V, mask=causal_mask(4))
    assert (A[np.triu_indices(4, 1)] == 0).all()
    np.testing.assert_array_equal(A[0], [1.0, 0.0, 0.0, 0.0])
    np.testing.assert_array_equal(Z[0], V[0])  # token 0 can only copy itself
    np.testing.assert_allclose(A.sum(axis=1), 1.0, rtol=1e-12)
