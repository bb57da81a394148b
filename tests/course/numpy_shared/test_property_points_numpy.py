"""Property points only for real answers (issue 18, item 5), and blame through the visible check.

A property case (permutation equivariance, causality, "an unknown key raises KeyError") gives
its points only to an answer whose outputs depend on its inputs, or that is right: zeros, uniform
weights or no computation at all have those properties without any attention (or any lookup).
tests/attacks/test_adversarial_more.py covers the identity "attention" (A = I) and keeps the points of a
real attention with a wrong scale.
"""

import contextlib
import io

import numpy as np
import pytest

from autograder.checks import check, run_in_process

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")
SEEDS = ("visible-checks", "degenerate-secret-1", "degenerate-secret-2")


def _properties(results):
    return [r for r in results if "permut" in r.name or "later tokens" in r.name]


def uniform_weights(X, W_q, W_k, W_v, mask=None):
    """Every query spreads its weight evenly over the keys it may see: no scores at all."""
    n = X.shape[-2]
    allowed = np.ones((n, n), dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    A = np.broadcast_to(allowed / allowed.sum(-1, keepdims=True), (*X.shape[:-2], n, n))
    return A @ (X @ W_v), A.copy()


def zero_outputs(X, W_q, W_k, W_v, mask=None):
    """Right-looking weights, but outputs that are all zeros (no weighing of the values)."""
    n = X.shape[-2]
    S = (X @ W_q) @ np.swapaxes(X @ W_k, -1, -2)
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    A = np.exp(S - S.max(-1, keepdims=True))
    A /= A.sum(-1, keepdims=True)
    return np.zeros((*X.shape[:-2], n, W_v.shape[-1])), A


@pytest.mark.parametrize("answer", [uniform_weights, zero_outputs])
@pytest.mark.parametrize("seed", SEEDS)
def test_degenerate_attention_earns_no_property_points(answer, seed):
    properties = _properties(run_in_process("self_attention", answer, seed=seed))
    assert len(properties) == 2
    assert all(r.score == 0 for r in properties), [(r.name, r.output) for r in properties]
    assert all("cannot be checked yet" in r.output for r in properties), properties


@pytest.mark.parametrize("seed", SEEDS)
def test_a_lookup_that_always_raises_earns_nothing(seed):
    def always_raises(table, query):
        raise KeyError(query)

    results = run_in_process("lookup", always_raises, seed=seed)
    assert sum(r.score for r in results) == 0, [(r.name, r.output) for r in results]
    right = run_in_process("lookup", lambda table, query: table[query], seed=seed)
    assert all(r.status == "passed" for r in right)


def test_check_blames_the_notebooks_own_earlier_function():
    """check() finds the student's softmax among the notebook's globals (as the grader finds it
    in the kernel) and blames it, naming its mistake, when a right scaled_dot_product_attention
    built on it fails; with a right softmax, the same function passes."""
    source = """
import numpy as np

def softmax(x, axis=-1):
    x = np.where(np.isinf(x), 0.0, np.asarray(x, dtype=float))
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)

def scaled_dot_product_attention(Q, K, V, mask=None):
    S = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if mask is not None:
        S = np.where(mask, S, -np.inf)
    A = softmax(S)
    return A @ V, A

check("scaled_dot_product_attention", scaled_dot_product_attention)
"""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(source, {"check": check, "__name__": "notebook"})
    text = printed.getvalue()
    assert "The cause is your softmax (from notebook 02" in text, text
    assert "giving -inf entries a weight other than 0" in text, text
    assert "setting masked scores to 0" not in text, text

    fixed = source.replace("x = np.where(np.isinf(x), 0.0, np.asarray(x, dtype=float))", "")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(fixed, {"check": check, "__name__": "notebook"})
    assert printed.getvalue().startswith("✓ scaled_dot_product_attention passes"), (
        printed.getvalue()
    )


def test_a_missing_earlier_function_costs_nothing():
    """The question asked of the earlier function is optional: a student who wrote the softmax
    inline (no `softmax` anywhere) loses nothing for it."""

    def inline(Q, K, V, mask=None):
        S = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
        if mask is not None:
            S = np.where(mask, S, -np.inf)
        e = np.exp(S - S.max(-1, keepdims=True))
        A = e / e.sum(-1, keepdims=True)
        return A @ V, A

    for seed in SEEDS:
        results = run_in_process("scaled_dot_product_attention", inline, seed=seed)
        assert all(r.status == "passed" for r in results), [r.output for r in results]


def test_the_same_mistake_in_an_earlier_function_is_pointed_at():
    """An unscaled attention_scores, used by a right scaled_dot_product_attention: the failure
    names missing-scale, as before, and points at attention_scores, which shows it too."""

    def attention_scores(Q, K):
        return Q @ np.swapaxes(K, -1, -2)

    def sdpa(Q, K, V, mask=None):
        S = attention_scores(Q, K)
        if mask is not None:
            S = np.where(mask, S, -np.inf)
        e = np.exp(S - S.max(-1, keepdims=True))
        A = e / e.sum(-1, keepdims=True)
        return A @ V, A

    namespace = {"attention_scores": attention_scores}
    results = run_in_process("scaled_dot_product_attention", sdpa, namespace=namespace)
    failed = [r for r in results if r.status == "failed" and r.misconceptions]
    assert failed and all(r.misconceptions == ["missing-scale"] for r in failed)
    assert "Your attention_scores (above in this notebook) shows the same mistake" in (
        failed[0].output
    ), failed[0].output
