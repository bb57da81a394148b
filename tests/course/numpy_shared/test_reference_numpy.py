"""The NumPy model answers (notebooks 01-04) against independent PyTorch oracles.

Every expected value comes from torch (softmax, scaled_dot_product_attention,
nn.MultiheadAttention) or from a formula written out here, never from the reference itself.
"""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from autograder.course.model_answers import (
    attend,
    attention_for_token,
    attention_scores,
    causal_mask,
    lookup,
    merge_heads,
    multi_head_attention,
    percentages,
    scaled_dot_product_attention,
    scaled_scores,
    self_attention,
    similarity,
    soft_lookup,
    softmax,
    split_heads,
)

RTOL, ATOL = 1e-6, 1e-8  # SPEC: float64 tolerances
HYP = settings(max_examples=30, deadline=None)


def close(actual, expected):
    if isinstance(expected, torch.Tensor):
        expected = expected.detach().numpy()
    np.testing.assert_allclose(actual, expected, rtol=RTOL, atol=ATOL)


def tt(x):
    """A float64 tensor copy of x (the oracle never shares memory with our inputs)."""
    return torch.tensor(np.asarray(x, dtype=np.float64))


def randn(rng, *shape):
    return rng.standard_normal(shape)


def random_mask(rng, shape):
    """A random boolean mask in which every query row may attend to at least one key."""
    mask = rng.random(shape) < 0.5
    keep = rng.integers(0, shape[-1], size=shape[:-1])[..., None]  # one guaranteed key per row
    return mask | (np.arange(shape[-1]) == keep)


finite = st.floats(-30, 30, allow_nan=False, allow_infinity=False)


# ---------------------------------------------------------------- 01 soft lookup


def test_lookup_returns_the_stored_value():
    table = {"apple": "pomme", "banana": "banane", "lemon": "citron"}
    assert lookup(table, "lemon") == "citron"
    assert lookup(table, "apple") == "pomme"


def test_lookup_unknown_key_raises_keyerror_naming_it():
    table = {"apple": "pomme", "lemon": "citron"}
    with pytest.raises(KeyError, match="orange"):
        lookup(table, "orange")


def test_similarity_is_the_dot_product_with_each_key():
    rng = np.random.default_rng(0)
    q, keys = randn(rng, 5), randn(rng, 7, 5)
    close(similarity(q, keys), torch.mv(tt(keys), tt(q)))
    close(similarity(q, keys)[3], sum(q[j] * keys[3, j] for j in range(5)))


def test_percentages_matches_torch_softmax():
    rng = np.random.default_rng(1)
    scores = 5 * randn(rng, 9)
    w = percentages(scores)
    close(w, torch.softmax(tt(scores), dim=0))
    assert (w >= 0).all()
    assert math.isclose(w.sum(), 1.0, rel_tol=1e-12)


def test_soft_lookup_weights_and_merge_match_torch():
    rng = np.random.default_rng(2)
    q, keys, values = randn(rng, 4), randn(rng, 3, 4), randn(rng, 3, 6)
    weights, out = soft_lookup(q, keys, values)
    w_expected = torch.softmax(tt(keys) @ tt(q), dim=0)  # unscaled scores
    close(weights, w_expected)
    close(out, w_expected @ tt(values))
    assert out.shape == (6,)


def test_soft_lookup_with_a_dominant_key_returns_its_value():
    keys = np.eye(3) * 50.0
    values = np.array([[1.0, 0.0], [0.0, 1.0], [7.0, -3.0]])
    _, out = soft_lookup(np.array([0.0, 0.0, 1.0]), keys, values)
    np.testing.assert_allclose(out, values[2], atol=1e-12)


# ---------------------------------------------------------------- 02 softmax


@pytest.mark.parametrize(
    ("shape", "axis"), [((5,), 0), ((3, 4), -1), ((3, 4), 0), ((2, 3, 4), 1), ((2, 3, 4, 5), -3)]
)
def test_softmax_matches_torch(shape, axis):
    rng = np.random.default_rng(3)
    x = 4 * rng.standard_normal(shape)
    close(softmax(x, axis=axis), torch.softmax(tt(x), dim=axis))


def test_softmax_default_axis_is_last():
    rng = np.random.default_rng(4)
    x = randn(rng, 3, 5)
    close(softmax(x), torch.softmax(tt(x), dim=-1))


@given(
    data=st.data(),
    x=hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=4, max_side=5), elements=finite),
)
@HYP
def test_softmax_any_axis_any_ndim(data, x):
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1), label="axis")
    x_before = x.copy()
    y = softmax(x, axis=axis)
    assert y.shape == x.shape
    close(y, torch.softmax(tt(x), dim=axis))
    np.testing.assert_allclose(y.sum(axis=axis), 1.0, rtol=1e-12)
    np.testing.assert_array_equal(x, x_before)  # input untouched


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_softmax_large_inputs_do_not_overflow(sign):
    x = sign * np.array([[1e4, 1e4 - 1.0, 1e4 - 3.0, -1e4], [1e4, 1e4, 1e4, 1e4]])
    with np.errstate(over="raise", invalid="raise"):
        y = softmax(x)
    assert np.isfinite(y).all()
    close(y, torch.softmax(tt(x), dim=-1))


def test_softmax_minus_inf_gets_exactly_zero_weight():
    x = np.array([[1.0, -np.inf, 2.0, -np.inf], [-np.inf, 0.5, 0.5, 3.0]])
    y = softmax(x)
    assert y[0, 1] == 0.0 and y[0, 3] == 0.0 and y[1, 0] == 0.0
    assert np.isfinite(y).all()
    close(y, torch.softmax(tt(x), dim=-1))
    close(y[0, [0, 2]], torch.softmax(torch.tensor([1.0, 2.0], dtype=torch.float64), dim=0))
    y0 = softmax(x.T, axis=0)  # the same along another axis
    assert y0[1, 0] == 0.0 and y0[0, 1] == 0.0
    close(y0, y.T)


def test_softmax_does_not_modify_its_input():
    x = np.array([[3.0, 1.0, -2.0], [1e4, 0.0, -np.inf]])
    x_before = x.copy()
    softmax(x)
    softmax(x, axis=0)
    np.testing.assert_array_equal(x, x_before)


def test_scaled_scores_divide_by_sqrt_dk():
    rng = np.random.default_rng(5)
    q, keys = randn(rng, 16), randn(rng, 6, 16)
    close(scaled_scores(q, keys), tt(keys) @ tt(q) / 4.0)


def test_attend_matches_torch_sdpa():
    rng = np.random.default_rng(6)
    q, keys, values = randn(rng, 8), randn(rng, 5, 8), randn(rng, 5, 3)
    weights, out = attend(q, keys, values)
    close(weights, torch.softmax(tt(keys) @ tt(q) / math.sqrt(8), dim=0))
    close(out, F.scaled_dot_product_attention(tt(q)[None], tt(keys), tt(values))[0])
    assert weights.shape == (5,) and out.shape == (3,)


@pytest.mark.parametrize("causal", [True, False])
def test_attention_for_token_matches_torch(causal):
    rng = np.random.default_rng(7)
    n, d, d_k, d_v = 6, 5, 4, 3
    X, W_q, W_k, W_v = randn(rng, n, d), randn(rng, d, d_k), randn(rng, d, d_k), randn(rng, d, d_v)
    Q, K, V = tt(X) @ tt(W_q), tt(X) @ tt(W_k), tt(X) @ tt(W_v)
    for i in range(n):
        m = i + 1 if causal else n
        expected = F.scaled_dot_product_attention(Q[i : i + 1], K[:m], V[:m])[0]
        close(attention_for_token(X, i, W_q, W_k, W_v, causal=causal), expected)


def test_attention_for_token_causal_ignores_later_tokens():
    rng = np.random.default_rng(8)
    X, W = randn(rng, 5, 4), randn(rng, 3, 4, 4)
    X2 = X.copy()
    X2[3:] += 10 * randn(rng, 2, 4)
    for i in range(3):
        close(attention_for_token(X2, i, *W, causal=True), attention_for_token(X, i, *W))
    assert not np.allclose(
        attention_for_token(X2, 1, *W, causal=False), attention_for_token(X, 1, *W, causal=False)
    )


# ---------------------------------------------------------------- 03 matrix attention


def test_attention_scores_with_batch_dims_and_nq_ne_nk():
    rng = np.random.default_rng(9)
    Q, K = randn(rng, 2, 3, 4, 5), randn(rng, 2, 3, 6, 5)
    S = attention_scores(Q, K)
    assert S.shape == (2, 3, 4, 6)
    close(S, tt(Q) @ tt(K).transpose(-2, -1) / math.sqrt(5))


@pytest.mark.parametrize("n", [1, 2, 3, 7])
def test_causal_mask_is_lower_triangular(n):
    m = causal_mask(n)
    assert m.dtype == np.bool_ and m.shape == (n, n)
    np.testing.assert_array_equal(m, torch.tril(torch.ones(n, n, dtype=torch.bool)).numpy())


def masked_softmax_oracle(Q, K, mask):
    """A from torch: scaled scores, blocked keys set to -inf, softmax over the keys."""
    S = tt(Q) @ tt(K).transpose(-2, -1) / math.sqrt(Q.shape[-1])
    if mask is not None:
        S = S.masked_fill(~torch.as_tensor(np.asarray(mask)), float("-inf"))
    return torch.softmax(S, dim=-1)


SDPA_CASES = {
    # name: (lead dims, n_q, n_k, mask shape or None or "causal")
    "plain": ((), 4, 4, None),
    "nq_ne_nk": ((), 3, 5, None),
    "batched": ((2, 3), 4, 6, None),
    "causal": ((), 5, 5, "causal"),
    "causal_broadcast_over_batch": ((2, 3), 5, 5, "causal"),
    "full_mask_nq_ne_nk": ((2,), 3, 5, (2, 3, 5)),
    "mask_broadcast_over_heads": ((2, 3), 4, 6, (2, 1, 4, 6)),
    "mask_broadcast_over_batch": ((2, 3), 4, 6, (4, 6)),
    "mask_one_row_for_all_queries": ((2,), 4, 6, (2, 1, 6)),
}


@pytest.mark.parametrize("case", SDPA_CASES)
def test_sdpa_matches_torch(case):
    lead, n_q, n_k, mask_shape = SDPA_CASES[case]
    rng = np.random.default_rng(list(SDPA_CASES).index(case))
    d_k, d_v = 4, 3
    Q, K, V = randn(rng, *lead, n_q, d_k), randn(rng, *lead, n_k, d_k), randn(rng, *lead, n_k, d_v)
    if mask_shape is None:
        mask = None
    elif mask_shape == "causal":
        mask = np.tril(np.ones((n_q, n_k), dtype=bool))
    else:
        mask = random_mask(rng, mask_shape)
    Z, A = scaled_dot_product_attention(Q, K, V, mask)
    assert Z.shape == (*lead, n_q, d_v) and A.shape == (*lead, n_q, n_k)
    torch_mask = None if mask is None else torch.as_tensor(mask)  # bool: True = may attend
    close(Z, F.scaled_dot_product_attention(tt(Q), tt(K), tt(V), attn_mask=torch_mask))
    close(A, masked_softmax_oracle(Q, K, mask))
    if mask is not None:
        blocked = ~np.broadcast_to(mask, A.shape)
        assert (A[blocked] == 0.0).all()  # exactly zero, not merely small


def test_sdpa_causal_matches_torch_is_causal():
    rng = np.random.default_rng(10)
    Q, K, V = randn(rng, 2, 5, 4), randn(rng, 2, 5, 4), randn(rng, 2, 5, 4)
    Z, _ = scaled_dot_product_attention(Q, K, V, causal_mask(5))
    close(Z, F.scaled_dot_product_attention(tt(Q), tt(K), tt(V), is_causal=True))


def test_sdpa_blocked_values_do_not_matter():
    rng = np.random.default_rng(11)
    Q, K, V = randn(rng, 3, 4), randn(rng, 5, 4), randn(rng, 5, 2)
    mask = np.array([True, False, True, False, True])  # broadcast over the queries
    V2 = V.copy()
    V2[~mask] = 1e3
    close(
        scaled_dot_product_attention(Q, K, V2, mask)[0],
        scaled_dot_product_attention(Q, K, V, mask)[0],
    )


@pytest.mark.parametrize("masked", [False, True])
def test_self_attention_matches_torch(masked):
    rng = np.random.default_rng(12)
    n, d, d_k, d_v = 5, 6, 4, 3
    X = randn(rng, 2, n, d)
    W_q, W_k, W_v = randn(rng, d, d_k), randn(rng, d, d_k), randn(rng, d, d_v)
    mask = causal_mask(n) if masked else None
    Z, A = self_attention(X, W_q, W_k, W_v, mask)
    Q, K, V = tt(X) @ tt(W_q), tt(X) @ tt(W_k), tt(X) @ tt(W_v)
    close(Z, F.scaled_dot_product_attention(Q, K, V, is_causal=masked))
    close(A, masked_softmax_oracle(Q.numpy(), K.numpy(), mask))


@pytest.mark.parametrize("causal", [True, False])
def test_matrix_form_equals_the_per_token_loop(causal):
    rng = np.random.default_rng(13)
    n, d = 7, 5
    X, W_q, W_k, W_v = randn(rng, n, d), randn(rng, d, 3), randn(rng, d, 3), randn(rng, d, 4)
    Z, _ = self_attention(X, W_q, W_k, W_v, mask=causal_mask(n) if causal else None)
    for i in range(n):
        close(Z[i], attention_for_token(X, i, W_q, W_k, W_v, causal=causal))


# ---------------------------------------------------------------- 03 properties (hypothesis)

lead_dims = hnp.array_shapes(min_dims=0, max_dims=2, min_side=1, max_side=3)


@given(lead=lead_dims, n_q=st.integers(1, 5), n_k=st.integers(1, 5), seed=st.integers(0, 2**16))
@HYP
def test_sdpa_rows_sum_to_one_and_inputs_untouched(lead, n_q, n_k, seed):
    rng = np.random.default_rng(seed)
    Q, K, V = (
        3 * randn(rng, *lead, n_q, 4),
        3 * randn(rng, *lead, n_k, 4),
        randn(rng, *lead, n_k, 2),
    )
    mask = random_mask(rng, (*lead, n_q, n_k))
    before = [a.copy() for a in (Q, K, V, mask)]
    Z, A = scaled_dot_product_attention(Q, K, V, mask)
    assert Z.shape == (*lead, n_q, 2) and A.shape == (*lead, n_q, n_k)
    np.testing.assert_allclose(A.sum(axis=-1), 1.0, rtol=1e-12)
    assert (A >= 0).all() and (A[~mask] == 0).all()
    for a, b in zip((Q, K, V, mask), before, strict=True):
        np.testing.assert_array_equal(a, b)


@given(lead=lead_dims, n=st.integers(2, 6), data=st.data())
@HYP
def test_self_attention_is_causal_under_future_perturbation(lead, n, data):
    t = data.draw(st.integers(1, n - 1), label="first perturbed position")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16), label="seed"))
    X, W = randn(rng, *lead, n, 4), randn(rng, 3, 4, 3)
    X2 = X.copy()
    X2[..., t:, :] += 5 * randn(rng, *lead, n - t, 4)
    Z, A = self_attention(X, *W, mask=causal_mask(n))
    Z2, A2 = self_attention(X2, *W, mask=causal_mask(n))
    close(Z2[..., :t, :], Z[..., :t, :])
    close(A2[..., :t, :], A[..., :t, :])
    assert (A[..., np.triu_indices(n, 1)[0], np.triu_indices(n, 1)[1]] == 0).all()


@given(lead=lead_dims, n=st.integers(1, 6), seed=st.integers(0, 2**16))
@HYP
def test_self_attention_is_permutation_equivariant_without_mask(lead, n, seed):
    rng = np.random.default_rng(seed)
    X, W = randn(rng, *lead, n, 4), randn(rng, 3, 4, 3)
    perm = rng.permutation(n)
    X_before = X.copy()
    Z, A = self_attention(X, *W)
    Zp, Ap = self_attention(X[..., perm, :], *W)
    np.testing.assert_array_equal(X, X_before)
    close(Zp, Z[..., perm, :])
    close(Ap, A[..., perm, :][..., perm])
    np.testing.assert_allclose(A.sum(axis=-1), 1.0, rtol=1e-12)


# ---------------------------------------------------------------- 04 heads


@given(
    lead=lead_dims,
    n=st.integers(1, 4),
    H=st.integers(1, 4),
    d_k=st.integers(1, 4),
    seed=st.integers(0, 2**16),
)
@HYP
def test_split_heads_matches_torch_view_transpose_and_round_trips(lead, n, H, d_k, seed):
    rng = np.random.default_rng(seed)
    X = randn(rng, *lead, n, H * d_k)
    X_before = X.copy()
    S = split_heads(X, H)
    assert S.shape == (*lead, H, n, d_k)
    expected = tt(X).view(*lead, n, H, d_k).transpose(-3, -2)
    np.testing.assert_array_equal(S, expected.numpy())
    np.testing.assert_array_equal(S[..., 0, :, :], X[..., :d_k])  # head 0: the first d_k columns
    np.testing.assert_array_equal(merge_heads(S), X)
    Y = randn(rng, *lead, H, n, d_k)
    np.testing.assert_array_equal(split_heads(merge_heads(Y), H), Y)
    np.testing.assert_array_equal(X, X_before)


def torch_mha_from(W_q, W_k, W_v, W_o):
    """nn.MultiheadAttention (float64, no bias, batch_first) holding our per-head weights."""
    H, d, d_k = W_q.shape
    mha = torch.nn.MultiheadAttention(d, H, bias=False, batch_first=True).double()

    def full(W):  # (H, d, d_k) -> (d, H*d_k): per-head slices side by side
        return np.concatenate(list(W), axis=1)

    with torch.no_grad():
        # torch stores (out, in): the transpose of our (in, out) row-vector matrices
        mha.in_proj_weight.copy_(tt(np.concatenate([full(W_q).T, full(W_k).T, full(W_v).T])))
        mha.out_proj.weight.copy_(tt(W_o.T))
    return mha


@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize(("d", "H"), [(6, 2), (6, 3), (4, 1)])
def test_multi_head_attention_matches_torch(batched, masked, d, H):
    rng = np.random.default_rng(14)
    n, d_k = 5, d // H
    W_q, W_k, W_v = randn(rng, H, d, d_k), randn(rng, H, d, d_k), randn(rng, H, d, d_k)
    W_o = randn(rng, H * d_k, d)
    X = randn(rng, 3, n, d) if batched else randn(rng, n, d)
    mask = causal_mask(n) if masked else None
    Y, A = multi_head_attention(X, W_q, W_k, W_v, W_o, mask)

    mha = torch_mha_from(W_q, W_k, W_v, W_o)
    x = tt(X)
    # torch's nn.MultiheadAttention: a boolean attn_mask means True = BLOCKED (ours: may attend)
    blocked = None if mask is None else ~torch.as_tensor(mask)
    y, a = mha(x, x, x, attn_mask=blocked, need_weights=True, average_attn_weights=False)
    assert Y.shape == X.shape and A.shape == (*X.shape[:-2], H, n, n)
    close(Y, y)
    close(A, a)


def test_mha_mask_conventions_are_opposite_in_torch_module_and_sdpa():
    """Our mask (True = may attend) is F.scaled_dot_product_attention's; MultiheadAttention's is its negation."""
    rng = np.random.default_rng(15)
    H, d, d_k, n = 2, 4, 2, 4
    W = randn(rng, 3, H, d, d_k)
    W_o = randn(rng, H * d_k, d)
    X = randn(rng, 2, n, d)
    mask = np.array(
        [
            [True, False, True, False],
            [True, True, False, False],
            [False, True, True, True],
            [True] * 4,
        ]
    )
    Y, A = multi_head_attention(X, *W, W_o, mask)
    assert (A[..., ~mask] == 0).all()

    mha = torch_mha_from(*W, W_o)
    x = tt(X)
    y, a = mha(x, x, x, attn_mask=~torch.as_tensor(mask), average_attn_weights=False)
    close(Y, y)
    close(A, a)
    # passing our mask unchanged to nn.MultiheadAttention attends to exactly the wrong keys
    _, a_wrong = mha(x, x, x, attn_mask=torch.as_tensor(mask), average_attn_weights=False)
    a_wrong = a_wrong.detach().numpy()[:, :, :3]  # row 3 would block every key: left out
    assert (a_wrong[..., mask[:3]] == 0).all() and (a_wrong[..., ~mask[:3]] > 0).all()
    # and the functional form takes it as it is: head h of ours == sdpa on head h's projections
    Qh = tt(X) @ tt(W[0, 1])
    Kh, Vh = tt(X) @ tt(W[1, 1]), tt(X) @ tt(W[2, 1])
    z1 = F.scaled_dot_product_attention(Qh, Kh, Vh, attn_mask=torch.as_tensor(mask))
    _, A1 = scaled_dot_product_attention(Qh.numpy(), Kh.numpy(), Vh.numpy(), mask)
    close(A[:, 1], A1)
    close(A1 @ Vh.numpy(), z1)


def test_multi_head_attention_head_h_uses_slice_h():
    rng = np.random.default_rng(16)
    H, d, d_k, n = 3, 4, 2, 5
    W_q, W_k, W_v = randn(rng, H, d, d_k), randn(rng, H, d, d_k), randn(rng, H, d, d_k)
    W_o = randn(rng, H * d_k, d)
    X = randn(rng, n, d)
    Y, A = multi_head_attention(X, W_q, W_k, W_v, W_o)
    Q, K, V = tt(X) @ tt(W_q), tt(X) @ tt(W_k), tt(X) @ tt(W_v)  # (H, n, d_k)
    z = F.scaled_dot_product_attention(Q, K, V)  # (H, n, d_k)
    concat = torch.cat(list(z), dim=-1)  # (n, H*d_k): heads side by side
    close(Y, concat @ tt(W_o))
    close(A, torch.softmax(Q @ K.transpose(-2, -1) / math.sqrt(d_k), dim=-1))


@given(lead=lead_dims, n=st.integers(1, 4), H=st.integers(1, 3), seed=st.integers(0, 2**16))
@HYP
def test_multi_head_attention_properties(lead, n, H, seed):
    rng = np.random.default_rng(seed)
    d, d_k = 4, 3
    W = randn(rng, 3, H, d, d_k)
    W_o = randn(rng, H * d_k, d)
    X = randn(rng, *lead, n, d)
    before = [X.copy(), W.copy(), W_o.copy()]
    Y, A = multi_head_attention(X, *W, W_o, mask=causal_mask(n))
    assert Y.shape == (*lead, n, d) and A.shape == (*lead, H, n, n)
    np.testing.assert_allclose(A.sum(axis=-1), 1.0, rtol=1e-12)
    np.testing.assert_array_equal(A * ~causal_mask(n), 0.0)
    for a, b in zip((X, W, W_o), before, strict=True):
        np.testing.assert_array_equal(a, b)
    if n > 1:  # the last token changes nothing before it
        X2 = X.copy()
        X2[..., -1, :] += 3.0
        close(
            multi_head_attention(X2, *W, W_o, mask=causal_mask(n))[0][..., :-1, :], Y[..., :-1, :]
        )
