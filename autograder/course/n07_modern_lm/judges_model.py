"""The judges of notebook 07's model (registered as "modern_lm.<name>", like judges.py's):
apply_rope's relative positions, a ValueError where the notebook asks for one, SwiGLU, attention
with a cache, TinyLlama's values with and without a cache. Plain data only.
"""

import numpy as np

from autograder.course.torch_shared.checks import close_or_diagnose, explain
from autograder.course.torch_shared.checks_modules import module_answer, no_biases
from autograder.judging import compare, judge
from autograder.judging.base import Fail
from autograder.judging.compare import describe_encoded


@judge
def rope_relative(responses, *, what, shift):
    """Two calls on the same query and key vectors (x[0] repeats q, x[1] repeats k at every
    position), the second at positions shifted by `shift`: q.k must be unchanged, depend only
    on the distance p_i - p_j, and not be the same at every distance."""
    scores = []
    for r in responses:
        got = compare.returned(r, what, framework="torch")
        if got.ndim != 3 or got.shape[0] != 2:
            raise Fail(f"{what} returned shape {got.shape}; it should keep the shape of x.")
        scores.append(got[0].astype(np.float64) @ got[1].astype(np.float64).T)
    tol = 1e-3 * max(1.0, float(np.abs(scores[0]).max()))
    if not np.allclose(scores[0], scores[1], atol=tol):
        raise Fail(
            f"{what}: q.k changes when every position moves by {shift}: with RoPE it should "
            "depend only on the distance between the two positions. Check that each pair turns "
            "by position * frequency, the same frequencies for queries and keys."
        )
    if np.ptp(scores[0]) < tol:
        raise Fail(
            f"{what}: q.k is the same whatever the positions: the rotation should depend on them."
        )


# ================================================================ errors


@judge
def raises_value_error(responses, *, what, because, named=()):
    """Every request raises ValueError. `named` gives, request by request, the id of the
    mistake an answer shows by returning or raising another error instead (no check of its
    own); where the first request is refused and a later one is not, the later one's id (an
    answer that checks only part of the rule)."""
    for n, r in enumerate(responses):
        err = r.error or {}
        # a module the notebook's weights did not fit never ran: its own tests say why
        ids = [named[n]] if n < len(named) and "state_mismatch" not in r.raw else []
        said = (" " + explain(ids)) if ids else ""
        if not err:
            got = describe_encoded(r.raw.get("value"))
            raise Fail(f"{what} returned {got}; it should raise ValueError: {because}.{said}", ids)
        if err.get("type") != "ValueError":
            raise Fail(
                f"{what} raised {err['type']}: {compare.plain_error_text(err['message'])}; "
                f"it should raise ValueError ({because}).{said}",
                ids,
            )


# ================================================================ modules


@judge
def swiglu(responses, *, what, expected, variants):
    r = responses[0]
    if "state_mismatch" not in r.raw:
        no_biases(r, "SwiGLU")
    r = module_answer(r, "SwiGLU", what)
    got = compare.returned(r, what, framework="torch")
    close_or_diagnose(got, expected, variants, what)


def _unpack_attention(r, what, n_blocks=None):
    """(y, k, v) from (y, (k, v)); or (logits, [(k, v), ...]) for a model (n_blocks)."""
    value = r.value(what)
    if not isinstance(value, tuple | list) or len(value) != 2:
        raise Fail(
            f"{what} should return a pair (output, cache); it returned {type(value).__name__}."
        )
    out, cache = value
    out = compare.as_array(out, f"the output of {what}")
    if n_blocks is not None:
        if not isinstance(cache, tuple | list) or len(cache) != n_blocks:
            raise Fail(f"the cache {what} returns should hold one (k, v) per block ({n_blocks}).")
        return out, [_kv(c, what) for c in cache]
    return (out, *_kv(cache, what))


def _kv(cache, what):
    if not isinstance(cache, tuple | list) or len(cache) != 2:
        raise Fail(f"the cache {what} returns should be a pair (k, v) of tensors.")
    return tuple(compare.as_array(t, f"the cache of {what}") for t in cache)


@judge
def attention_cache(responses, *, what, expected, variants, T_past):
    """CausalSelfAttention.forward(x, cache): (y, (k, v)) against the reference's."""
    r = module_answer(responses[0], "CausalSelfAttention", what)
    no_biases(r, "CausalSelfAttention")
    y, k, v = _unpack_attention(r, what)
    n = np.shape(expected[1])[2]
    if np.shape(k) != np.shape(expected[1]) and np.ndim(k) == 4 and np.shape(k)[2] == n - T_past:
        raise Fail(
            f"{what}: the cache returned holds {np.shape(k)[2]} positions, only the new ones. "
            + explain(["cache-not-appended"]),
            ["cache-not-appended"],
        )
    close_or_diagnose(
        (y, k, v),
        tuple(expected),
        variants,
        (f"y of {what}", f"the cached keys of {what}", f"the cached values of {what}"),
        hint="Check each piece against the notebook: the projections and heads, RoPE on the "
        "queries and keys at their positions, the scale, the causal mask and the cache",
    )


@judge
def llama_values(responses, *, what, expected, variants, d_ff, hint="", table=None):
    """TinyLlama(idx): logits against the reference's; the head tied to the embedding (a tied
    weight is one parameter: named_parameters lists it once, as tok_emb.weight). `table`: the
    shape (block_size, d_model) of a learned position table, which wrong logits beside such a
    parameter name (llama-position-embedding)."""
    r = responses[0]
    mismatch = r.raw.get("state_mismatch") or {}
    ffn = [n for n in mismatch.get("wrong_shape", []) if ".ffn." in n]
    if ffn:
        raise Fail(
            f"your TinyLlama's {ffn[0]} does not fit d_ff = {d_ff}, the default for this "
            "d_model. " + explain(["llama-d-ff-default"]),
            ["llama-d-ff-default"],
        )
    r = module_answer(r, "TinyLlama", what)
    no_biases(r, "TinyLlama")
    params = r.raw.get("params") or []
    if "lm_head.weight" in params:
        raise Fail(
            f"{what}: lm_head has a weight of its own. " + explain(["head-not-tied"]),
            ["head-not-tied"],
        )
    logits, _ = _model_out(r, what)
    try:
        close_or_diagnose(logits, expected, variants, f"the logits of {what}", hint=hint)
    except Fail as failure:
        shapes = r.decode(r.raw.get("state_names")) or {}
        tables = [n for n, shape in shapes.items() if table and list(shape) == list(table)]
        if failure.misconceptions or not tables:
            raise
        raise Fail(
            f"{what}: the logits differ, and your TinyLlama has {tables[0]}, of shape "
            f"{tuple(table)}. " + explain(["llama-position-embedding"]),
            ["llama-position-embedding"],
        ) from None


def _model_out(r, what):
    value = r.value(what)
    if not isinstance(value, tuple | list) or len(value) != 2:
        raise Fail(
            f"{what} should return a pair (logits, cache); it returned {type(value).__name__}."
        )
    return compare.as_array(value[0], f"the logits of {what}"), value[1]


@judge
def llama_cache(responses, *, what, expected, variants, n_blocks, T_total, T_past=None):
    r = module_answer(responses[0], "TinyLlama", what)
    logits, caches = _unpack_attention(r, what, n_blocks=n_blocks)
    close_or_diagnose(logits, expected, variants, f"the logits of {what}")
    lengths = {np.shape(k)[2] if np.ndim(k) == 4 else None for k, _ in caches}
    if T_past is not None and lengths == {T_past}:
        raise Fail(
            f"{what}: the cache returned holds the {T_past} positions it was given, without "
            f"the {T_total - T_past} new ones. " + explain(["llama-cache-returned-unchanged"]),
            ["llama-cache-returned-unchanged"],
        )
    if lengths != {T_total}:
        raise Fail(
            f"{what}: the cache returned should hold {T_total} positions in every block, the "
            "cached and the new ones. " + explain(["cache-not-appended"]),
            ["cache-not-appended"],
        )
