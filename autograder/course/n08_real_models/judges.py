"""The judges of notebook 08 (your model meets a real one): verdicts from plain data.

Registered as "n08_real_models.<name>"; cases.py builds the cases with the reference's outputs
and the known-wrong variants' outputs stored as plain data. This file is the one of the folder
the student handout ships: it imports none of reference.py, cases.py or variants.py
(tests/course/torch_shared/test_judging_torch.py scans it), and runs no model answer.
"""

import numpy as np

from autograder.course.torch_shared.checks import close_or_diagnose, explain
from autograder.course.torch_shared.checks_modules import module_answer, no_biases
from autograder.judging import compare, judge
from autograder.judging.base import Fail
from autograder.results import NOT_IMPLEMENTED


def _pair(value, what, n_blocks=None):
    """(output, k, v) from (output, (k, v)); (output, [(k, v), ...]) for a model."""
    if not isinstance(value, tuple | list) or len(value) != 2:
        raise Fail(
            f"{what} should return a pair (output, cache); it returned {type(value).__name__}."
        )
    out, cache = value
    out = compare.as_array(out, f"the output of {what}")

    def kv(c):
        if not isinstance(c, tuple | list) or len(c) != 2:
            raise Fail(f"the cache {what} returns should be a pair (k, v) of tensors.")
        return tuple(compare.as_array(t, f"the cache of {what}") for t in c)

    if n_blocks is None:
        return (out, *kv(cache))
    if not isinstance(cache, tuple | list) or len(cache) != n_blocks:
        raise Fail(f"the cache {what} returns should hold one (k, v) per block ({n_blocks}).")
    return out, [kv(c) for c in cache]


def _cache_heads(k, n_heads, n_kv_heads, what):
    """The cache must hold the n_kv_heads heads, stored before they are repeated."""
    heads = np.shape(k)[1] if np.ndim(k) == 4 else None
    if heads == n_heads and n_heads != n_kv_heads:
        raise Fail(
            f"{what}: the cached keys hold {n_heads} heads, one per query head. "
            + explain(["cache-after-repeat"]),
            ["cache-after-repeat"],
        )


def _layout(r, cls_name, what, *, d_kv, d_ff=None):
    """module_answer, with the widths the notebook gives said first when a shape is off."""
    wrong = (r.raw.get("state_mismatch") or {}).get("wrong_shape", [])
    ffn = [n for n in wrong if ".ffn." in n]
    if d_ff is not None and ffn:
        raise Fail(
            f"your {cls_name}'s {ffn[0]} does not fit d_ff = {d_ff}, the default for this "
            "d_model. " + explain(["llama-d-ff-default"]),
            ["llama-d-ff-default"],
        )
    kv = [n for n in wrong if n.split(".")[-2:-1] in (["wk"], ["wv"])]
    if kv:
        own = r.decode(r.raw.get("state_names")) or {}
        raise Fail(
            f"your {cls_name}'s {kv[0]} has shape {compare.shape_str(own.get(kv[0], []))}: "
            "wk and wv give one key and one "
            f"value per key/value head, n_kv_heads * d_head = {d_kv} features, not d_model.",
            ["kv-projection-full-width"],
        )
    return module_answer(r, cls_name, what)


@judge
def constructor_raises(responses, *, what, because):
    """Building the module with head counts that do not divide raises ValueError."""
    for r in responses:
        err = r.error or {}
        if not err:
            raise Fail(
                f"{what} returned normally, building a module; it should raise ValueError: "
                f"{because}.",
                ["heads-not-checked"],
            )
        if err.get("type") != "ValueError":
            raise Fail(
                f"{what} raised {err['type']}: {compare.plain_error_text(err['message'])}; "
                f"it should raise ValueError ({because})."
            )


@judge
def gqa_values(responses, *, what, expected, variants, n_heads, n_kv_heads):
    """GroupedQueryAttention.forward(x[, cache]): (y, (k, v)) against the expected ones."""
    d_kv = n_kv_heads * np.shape(expected[0])[-1] // n_heads
    r = _layout(responses[0], "GroupedQueryAttention", what, d_kv=d_kv)
    no_biases(r, "GroupedQueryAttention")
    y, k, v = _pair(r.value(what), what)
    _cache_heads(k, n_heads, n_kv_heads, what)
    close_or_diagnose(
        (y, k, v),
        tuple(expected),
        variants,
        (f"y of {what}", f"the cached keys of {what}", f"the cached values of {what}"),
        hint="Check each piece against the notebook: which key/value head each query head "
        "reads, RoPE at the right positions with the given base, the scale, the mask, the cache",
    )


def _head(r, tied, what):
    """A tied head is one parameter (named once, as tok_emb.weight); an untied one is its own."""
    params = r.raw.get("params") or []
    if tied and "lm_head.weight" in params:
        raise Fail(
            f"{what}: lm_head has a weight of its own. " + explain(["head-not-tied"]),
            ["head-not-tied"],
        )
    if not tied and params and "lm_head.weight" not in params:
        raise Fail(
            f"{what}: lm_head uses the token embedding's matrix. "
            + explain(["head-tied-when-untied"]),
            ["head-tied-when-untied"],
        )


@judge
def llama_values(
    responses, *, what, expected, variants, d_ff, tied, n_heads, n_kv_heads, n_blocks, d_kv,
    kv_left_out
):  # fmt: skip
    """Llama(idx): logits against the expected ones; the head tied or not as asked; the cache
    holding n_kv_heads heads."""
    if kv_left_out and responses[0].error:
        raise Fail(
            compare.error_message(responses[0], what) + ". With n_kv_heads left out (None), "
            "every query head has a key/value head of its own: n_kv_heads = n_heads.",
            ["kv-heads-none-kept"],
        )
    r = _layout(responses[0], "Llama", what, d_kv=d_kv, d_ff=d_ff)
    no_biases(r, "Llama")
    _head(r, tied, what)
    logits, caches = _pair(r.value(what), what, n_blocks=n_blocks)
    for k, _ in caches:
        _cache_heads(k, n_heads, n_kv_heads, what)
    close_or_diagnose(logits, expected, variants, f"the logits of {what}")


@judge
def llama_cache(
    responses, *, what, expected, variants, n_blocks, T_total, d_ff, d_kv, block_size=None
):
    r = responses[0]
    if (r.error or {}).get("type") == "ValueError":
        raise Fail(
            compare.error_message(r, what) + f". {T_total} positions, cached and new together, "
            "fit a model whose block_size is at least that: only more than block_size are "
            "refused.",
            ["block-size-full-refused"] if T_total == block_size else [],
        )
    r = _layout(r, "Llama", what, d_kv=d_kv, d_ff=d_ff)
    logits, caches = _pair(r.value(what), what, n_blocks=n_blocks)
    close_or_diagnose(logits, expected, variants, f"the logits of {what}")
    lengths = {np.shape(k)[2] if np.ndim(k) == 4 else None for k, _ in caches}
    if lengths != {T_total}:
        raise Fail(
            f"{what}: the cache returned should hold {T_total} positions in every block, the "
            "cached and the new ones. " + explain(["cache-not-appended"]),
            ["cache-not-appended"],
        )


@judge
def block_size_raises(responses, *, what, because):
    """More than block_size positions raise ValueError: the first request without a cache, the
    second with one (the same length counted with the cached positions)."""
    errors = [(r.error or {}).get("type") for r in responses]
    ids = ["block-size-cache-not-counted"] if errors[0] == "ValueError" and not errors[1] else []
    for r in responses:
        err = r.error or {}
        if not err:
            got = compare.describe_encoded(r.raw.get("value"))
            raise Fail(f"{what} returned {got}; it should raise ValueError: {because}.", ids)
        if err.get("type") != "ValueError":
            raise Fail(
                f"{what} raised {err['type']}: {compare.plain_error_text(err['message'])}; "
                f"it should raise ValueError ({because})."
            )


# ================================================================ load_hf_llama

LLAMA_FIRST = (
    "load_hf_llama copies into your Llama, so Llama's own checks come first: if they do not "
    "all pass, fix Llama, then run this check again."
)


@judge
def hf_logits(responses, *, what, expected, variants):
    """The logits of the Llama load_hf_llama filled, against those of the same checkpoint run by
    the reference (equal to transformers' LlamaForCausalLM's: tests/course/n08_real_models/test_real_models.py)."""
    r = responses[0]
    if r.error:
        err = r.error
        if err.get("type") == "ValueError":
            raise Fail(
                f"{what} raised ValueError on a complete, well-shaped state dict: "
                f"{compare.plain_error_text(err['message'])}. Every key it holds has a place in "
                "the model; check the names you expect and the shapes you compare."
            )
        raise Fail(compare.error_message(r, what) + ". " + LLAMA_FIRST)
    changed = r.raw.get("inputs_modified") or []
    if changed:
        raise Fail(
            f"{what} changed the state dict it was given ({changed[0]}): copy from it, and "
            "reorder rows into new tensors, leaving the caller's dict and tensors as they were "
            "(loading the same dict twice must give the same model).",
            ["load-changes-state-dict"],
        )
    if not r.raw.get("returned_model"):
        raise Fail(
            f"{what} should return the model it was given, after copying the weights into it "
            "(in place)."
        )
    value = r.value("the loaded model's forward(idx)")
    if not isinstance(value, tuple | list) or len(value) != 2:
        raise Fail(
            f"your Llama should return a pair (logits, cache); it returned {type(value).__name__}."
        )
    logits = compare.as_array(value[0], "the logits of the loaded model")
    close_or_diagnose(
        logits,
        expected,
        variants,
        f"the logits of the model {what} filled",
        hint="Check which of your parameters each key goes to, and the q and k rows' order. "
        + LLAMA_FIRST,
    )


@judge
def hf_rejects(responses, *, what, key, because):
    """A state dict with one key missing, unexpected or misshapen: ValueError naming the key."""
    r = responses[0]
    err = r.error or {}
    if not err or "returned_model" in r.raw:  # the error, if any, is the model's forward()'s
        raise Fail(
            f"{what} returned normally, without raising; it should raise ValueError naming "
            f"{key}: {because}.",
            ["load-not-checked"],
        )
    if err.get("type") != "ValueError":
        raise Fail(
            f"{what} raised {err['type']}: {compare.plain_error_text(err['message'])}; it "
            f"should raise ValueError naming {key} ({because})."
        )
    if key not in str(err.get("message", "")):
        raise Fail(
            f"{what} raised ValueError, but its message does not name {key}: say which key, so "
            "that whoever loads a checkpoint knows what to look at.",
            ["load-error-unnamed"],
        )


# ================================================================ kv_cache_bytes


@judge
def kv_bytes(responses, *, calls):
    """calls: [[what, expected, variants]], one per call of the request, in order."""
    answers = responses[0].raw.get("calls") or []
    for (what, expected, variants), answer in zip(calls, answers, strict=False):
        if answer.get("error"):
            err = answer["error"]
            if err.get("type") == "NotImplementedError":
                raise Fail("kv_cache_bytes is not implemented yet.", reason=NOT_IMPLEMENTED)
            raise Fail(f"{what} raised {err['type']}: {compare.plain_error_text(err['message'])}")
        got = responses[0].decode(answer.get("value"))
        if isinstance(got, np.ndarray) and got.ndim == 0:
            got = got.item()
        if isinstance(got, np.integer):
            got = int(got)
        if isinstance(got, float) and got.is_integer():
            raise Fail(
                f"{what} returned {got!r}, a float; a number of bytes is an int.",
                ["kv-bytes-float"],
            )
        if type(got) is not int:
            raise Fail(
                f"{what} should return an int; it returned {compare.describe_encoded(answer.get('value'))}."
            )
        if got != expected:
            ids = [i for i, v in variants if v == got and v != expected]
            ids = ids if len(ids) == 1 else []
            extra = explain(ids)
            raise Fail(
                f"{what} returned {got:,}, not the bytes those keys and values take."
                + (
                    f" {extra}"
                    if extra
                    else " Count what the cache holds: a key and a value, "
                    "per layer, per key/value head, per feature, per position, per sequence."
                ),
                ids,
            )
