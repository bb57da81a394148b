"""The judges of notebook 07 (from GPT-2 to a modern small LM): verdicts from plain data.

Registered as "modern_lm.<name>"; the probes (autograder/probes/modern_lm.py) build the cases
with the reference's outputs and the known-wrong variants' outputs stored as plain data. Values
(rms_norm, apply_rope) reuse block_judges.layer_norm, which is a generic "values, diagnosed, then
differentiable and unchanged" judge. No judge here runs a model answer.
"""

import re

import numpy as np

from autograder.course.torch_shared.checks import close_or_diagnose, explain
from autograder.course.torch_shared.checks_modules import module_answer, no_biases
from autograder.course.torch_shared.checks_sampling import sample_fit
from autograder.judging import compare, judge
from autograder.judging.base import Fail
from autograder.judging.compare import describe_encoded, fmt
from autograder.results import NOT_IMPLEMENTED

# ================================================================ BPETokenizer


def _step(r, i, what, name="BPETokenizer"):
    if r.error:
        raise Fail(compare.error_message(r, f"{name}(text, vocab_size)"))
    step = r.raw["steps"][i]
    if (step.get("error") or {}).get("type") == "NotImplementedError":
        raise Fail(
            f"{name} is not implemented yet ({what} raises NotImplementedError).",
            reason=NOT_IMPLEMENTED,
        )
    if step.get("missing"):
        raise Fail(f"{step['missing']} does not exist: the notebook's {name} has it.")
    if step.get("error"):
        err = step["error"]
        raise Fail(f"{what} raised {err['type']}: {compare.plain_error_text(err['message'])}")
    return r.decode(step["value"])


def _int(v):
    if isinstance(v, np.ndarray) and v.ndim == 0:
        v = v.item()
    if isinstance(v, np.integer):
        v = int(v)
    if type(v) is not int:
        raise TypeError
    return v


def _ids(value, what):
    if isinstance(value, np.ndarray):
        value = value.tolist()
    try:
        return [_int(v) for v in value]
    except TypeError:
        raise Fail(f"{what} should be a list of ints; it is {type(value).__name__}.") from None


def _pairs(value, what):
    if isinstance(value, dict):  # minbpe keeps a dict {pair: id}, in insertion order
        value = list(value)
    if isinstance(value, np.ndarray):
        value = value.tolist()
    try:
        pairs = [tuple(_int(x) for x in p) for p in value]
    except TypeError:
        raise Fail(f"{what} should be a list of pairs (a, b) of ints.") from None
    if any(len(p) != 2 for p in pairs):
        raise Fail(f"{what} should hold pairs (a, b): two ids each.")
    return pairs


def _shown(pair):
    return "(" + ", ".join(repr(chr(i)) if 32 <= i < 127 else str(i) for i in pair) + ")"


BPE_HINT = (
    "Count every adjacent pair of the current sequence, take the most frequent (ties: the one "
    "that occurs first), replace it left to right, and stop when no pair occurs twice."
)


def _name(what):
    return what.split("(")[0].split(".")[0]


@judge
def bpe_merges(responses, *, what, expected, variants, hint=BPE_HINT):
    """merges (in the order learned) and vocab_size = 256 + len(merges)."""
    r = responses[0]
    got = _pairs(_step(r, 0, "merges", _name(what)), f"merges of {what}")
    want = [tuple(p) for p in expected]
    if got != want:
        ids = [i for i, v in variants if [tuple(p) for p in v] == got]
        ids = ids[:1] if len(set(ids)) == 1 else []
        n = next((i for i, (g, w) in enumerate(zip(got, want, strict=False)) if g != w), None)
        if n is None:
            seen = f"it learned {len(got)} merges, the text calls for {len(want)}"
        else:
            seen = f"merge {n} is {_shown(got[n])}, which is not the pair to merge at that step"
        raise Fail(
            f"{what}: {seen}. " + (explain(ids) if ids else hint),
            ids,
        )
    size = _step(r, 1, "vocab_size", _name(what))
    try:
        size = _int(size)
    except TypeError:
        raise Fail(f"vocab_size of {what} is not an int.") from None
    if size != 256 + len(want):
        raise Fail(
            f"{what}: vocab_size is {size}, but with {len(want)} merges learned the vocabulary "
            f"holds 256 + {len(want)} ids."
        )


def _spell(ids, spelled):
    """The bytes a list of ids stands for, from `spelled` (the byte values of ids 256, 257, ...
    under the learned merges, worked out when the case was built); None if an id is unknown."""
    if any(not 0 <= i < 256 + len(spelled) for i in ids):
        return None
    return b"".join(bytes((i,)) if i < 256 else bytes(spelled[i - 256]) for i in ids)


ENCODE_HINT = (
    "Start from the UTF-8 bytes and apply merges, the earliest-learned pair present first, "
    "until none applies."
)


@judge
def bpe_encode(
    responses, *, what, expected, variants, merges, spelled, text, hint=ENCODE_HINT, name=None
):
    """encode(text) against the expected ids. Ids that spell the right bytes with the learned
    merges, but not the expected ones, are merges applied in another order (whatever order);
    with a `hint` of its own (RegexBPETokenizer), only a stored variant names a mistake."""
    r = responses[0]
    got = _ids(_step(r, 1, what, name or "BPETokenizer"), what)
    if got != list(expected):
        own = r.raw["steps"][0]
        learned = own.get("value") is not None and not own.get("error")
        if not learned or _pairs(r.decode(own["value"]), "merges") != [tuple(m) for m in merges]:
            raise Fail(
                f"{what} gave other ids than the merges the text calls for give; your merges "
                "differ from those already (the test of the merges says how): fix them first."
            )
        ids = sorted({i for i, v in variants if list(v) == got})
        ids = ids if len(ids) == 1 else []
        if not ids and hint == ENCODE_HINT and _spell(got, spelled) == text.encode("utf-8"):
            ids = ["bpe-encode-order"]
        raise Fail(
            f"{what} gave {len(got)} ids, not the encoding the merges give"
            + (f" ({got[:12]}{' ...' if len(got) > 12 else ''})" if len(got) else "")
            + ". "
            + (explain(ids) if ids else hint),
            ids,
        )


@judge
def bpe_decode(
    responses, *, text, partial, partial_decoded, split=None, split_text=None, apart=None
):
    """decode(encode(text)) == text; decode of half a UTF-8 character replaces it; the bytes
    of one character spread over two ids (`split`) decode back to it (`split_text`)."""
    r = responses[0]
    got = _step(r, 0, "decode(encode(s))")
    if not isinstance(got, str):
        raise Fail(f"decode returned {describe_encoded(r.raw['steps'][0]['value'])}, not a str.")
    if got != text and got == apart:  # `apart`: encode(s)'s ids decoded one at a time
        raise Fail(
            f"decode(encode(s)) gave {got[:40]!r}, not s = {text[:40]!r}: the UTF-8 bytes of "
            "one character can sit in two ids. Join the bytes of all the ids first, then "
            "decode them once."
        )
    if got != text:
        raise Fail(f"decode(encode(s)) gave {got[:40]!r}, not s = {text[:40]!r}.")
    err = r.raw["steps"][1].get("error") or {}
    if err.get("type") == "UnicodeDecodeError":
        raise Fail(
            f"decode({partial}) raised UnicodeDecodeError: these ids end in the middle of a "
            "UTF-8 character, which a model's sample can do; decode with errors='replace' "
            "(each broken character becomes '\\ufffd')."
        )
    got = _step(r, 1, f"decode({partial})")
    if got != partial_decoded:
        raise Fail(
            f"decode({partial}) gave {got!r:.60}: these bytes are not whole UTF-8 characters; "
            "decode them with errors='replace' (each broken character becomes '\\ufffd')."
        )
    if split is not None:
        got = _step(r, 2, f"decode({split})")
        if got != split_text:
            raise Fail(
                f"decode({split}) gave {got!r:.60}, not {split_text!r}: these ids are the two "
                "UTF-8 bytes of one character. Join the bytes of all the ids first, then decode "
                "them once."
            )


@judge
def bpe_unknown(responses, *, ids, bad, name="BPETokenizer", negative=None):
    """decode(ids) with one id past the vocabulary raises ValueError naming it; so does a
    negative id (`negative`: the ids of a second call), which Python's indexing would wrap."""
    r = responses[0]
    if r.error:
        raise Fail(compare.error_message(r, f"{name}(text, vocab_size)"))
    _unknown_step(r.raw["steps"][0], ids, bad, name)
    if negative is not None:
        _unknown_step(r.raw["steps"][1], negative, negative[-1], name)


def _unknown_step(step, ids, bad, name):
    if (step.get("error") or {}).get("type") == "NotImplementedError":
        raise Fail(
            f"{name} is not implemented yet (decode raises NotImplementedError).",
            reason=NOT_IMPLEMENTED,
        )
    if not step.get("error"):
        where = "ids run from 0 to vocab_size - 1" if bad < 0 else f"{bad} is not in it"
        raise Fail(
            f"decode({ids}) returned {describe_encoded(step.get('value'))} although {bad} is "
            f"not in the vocabulary ({where}): raise ValueError naming it."
        )
    err = step["error"]
    if err["type"] != "ValueError":
        raise Fail(f"decode({ids}) raised {err['type']}: an unknown id raises ValueError.", [], 0.5)
    if str(bad) not in err["message"]:
        raise Fail(
            f"decode({ids}) raised ValueError: {err['message'][:60]!r}, which does not name "
            f"the unknown id {bad}.",
            [],
            0.5,
        )


@judge
def regex_specials(responses, *, what, expected, variants, merges, specials):
    """encode of a text holding special tokens: each special token its own id (as given),
    the text around them encoded chunk by chunk. Needs the merges right first."""
    r = responses[0]
    name = "RegexBPETokenizer"
    own = _step(r, 0, "merges", name)
    if _pairs(own, "merges") != [tuple(m) for m in merges]:
        raise Fail(
            f"{what}: your merges differ already (the test of the merges says how): fix them first."
        )
    got = _ids(_step(r, 1, what, name), what)
    if got == list(expected):
        return
    ids = sorted({i for i, v in variants if list(v) == got})
    ids = ids if len(ids) == 1 else []
    wanted = sorted(specials.values())
    missing = [f"{s!r} (id {i})" for s, i in specials.items() if i in expected and i not in got]
    seen = (
        f"the ids do not hold {', '.join(missing)}"
        if missing
        else "the text around the special tokens is encoded otherwise"
    )
    # ids of its own for the special tokens: the same ids, but where a special id belongs, one
    # below 256 + len(merges) (a merged text would give other ids around it too)
    if (
        not ids
        and missing
        and len(got) == len(expected)
        and all(g != e for g, e in zip(got, expected, strict=True) if e in wanted)
        and all(g == e for g, e in zip(got, expected, strict=True) if e not in wanted)
        and all(g < 256 + len(merges) for g, e in zip(got, expected, strict=True) if e in wanted)
    ):
        ids = ["regex-bpe-special-ids-low"]
    raise Fail(
        f"{what}: {seen}. "
        + (
            explain(ids)
            if ids
            else f"Split the text at the special tokens first (ids {wanted}, as special_tokens "
            "gives them), then encode each piece between them as usual."
        ),
        ids,
    )


@judge
def regex_special_decode(
    responses, *, what, texts, calls, merges, special, at=(0, 1), one_by_one=None
):
    """decode of ids holding special ids: their strings back, the other ids as bytes. Judged
    once the merges are right and encode gives a special token its own id (their own tests
    say how otherwise)."""
    r = responses[0]
    name = "RegexBPETokenizer"
    own = _step(r, 2, "merges", name)
    if _pairs(own, "merges") != [tuple(m) for m in merges]:
        raise Fail(
            f"{what}: decode gives other text since your merges differ already (the test of "
            "the merges says how): fix them first."
        )
    token, id_ = special
    if _ids(_step(r, 3, f"encode({token!r})", name), f"encode({token!r})") != [id_]:
        raise Fail(
            f"{what}: encode({token!r}) is not [{id_}], the id special_tokens gives it, so "
            "decode cannot give it back (the test of the special tokens says how): fix that first."
        )
    apart = one_by_one or [None] * len(texts)
    for i, text, ids, each in zip(at, texts, calls, apart, strict=True):
        step = r.raw["steps"][i] if not r.error else {}
        err = step.get("error") or {}
        if err and err.get("type") not in ("NotImplementedError",):
            raise Fail(
                f"{what}.decode({ids}) raised {err['type']}: "
                f"{compare.plain_error_text(err['message'])}. "
                + explain(["regex-bpe-special-decode"]),
                ["regex-bpe-special-decode"],
            )
        got = _step(r, i, f"decode({ids})", name)
        if got != text and got == each:
            raise Fail(
                f"{what}.decode({ids}) gave {str(got)[:60]!r}, not {text[:60]!r}: the UTF-8 "
                "bytes of one character can sit in two ids. Join the bytes of each run of "
                "ordinary ids, then decode them together."
            )
        if got != text:
            ids_ = ["regex-bpe-special-decode"] if isinstance(got, str) else []
            raise Fail(
                f"{what}.decode({ids}) gave {str(got)[:60]!r}, not {text[:60]!r}. "
                + (explain(ids_) if ids_ else "decode returns a str."),
                ids_,
            )


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
def raises_value_error(responses, *, what, because):
    for r in responses:
        err = r.error or {}
        if not err:
            got = describe_encoded(r.raw.get("value"))
            raise Fail(f"{what} returned {got}; it should raise ValueError: {because}.")
        if err.get("type") != "ValueError":
            raise Fail(
                f"{what} raised {err['type']}: {compare.plain_error_text(err['message'])}; "
                f"it should raise ValueError ({because})."
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
def llama_values(responses, *, what, expected, variants, d_ff, hint=""):
    """TinyLlama(idx): logits against the reference's; the head tied to the embedding (a tied
    weight is one parameter: named_parameters lists it once, as tok_emb.weight)."""
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
    close_or_diagnose(logits, expected, variants, f"the logits of {what}", hint=hint)


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
            f"the {T_total - T_past} new ones: return the caches the blocks give back, which "
            f"hold all {T_total}."
        )
    if lengths != {T_total}:
        raise Fail(
            f"{what}: the cache returned should hold {T_total} positions in every block, the "
            "cached and the new ones. " + explain(["cache-not-appended"]),
            ["cache-not-appended"],
        )


# ================================================================ generate_cached


def _generated(r, what, shape, V, prompt):
    if _out_of_order(r):
        _say_out_of_order(r, what)
    got = compare.returned(r, what, framework="torch")
    compare.assert_shape(got, shape, what)
    if got.dtype.kind not in "iu":
        raise Fail(f"{what} holds {got.dtype} values; token ids are integers (torch.long).")
    if got.min() < 0 or got.max() >= V:
        raise Fail(f"{what} holds ids outside 0..{V - 1}.")
    prompt = np.asarray(prompt)  # (B, T0), or one row every row of idx repeats
    if not np.all(got[:, : prompt.shape[1]] == prompt):
        raise Fail(
            f"{what}: the first {prompt.shape[1]} columns should be the prompt idx, unchanged."
        )
    return got.astype(np.int64)


@judge
def cached_tokens(
    responses, *, what, shape, vocab_size, prompt, fills_block=None, also=(), also_shape=None
):
    """Shape (B, T0 + max_new_tokens), valid ids, the prompt kept and idx itself unchanged.
    With `fills_block` (block_size), T0 + max_new_tokens == block_size: a request that fits
    exactly must not be refused, nor feed the model a position past block_size. `also`
    describes further calls on the same prompt, each to give `also_shape`."""
    r = responses[0]
    if fills_block is not None and r.error and r.error.get("type") == "ValueError":
        message = r.error.get("message", "")
        fed = (
            re.search(r"not (\d+)$", message) if message.startswith("the toy model holds") else None
        )
        if fed and int(fed.group(1)) > fills_block + 1:  # the model's own refusal, far past
            raise Fail(
                f"{what}: {shape[1]} positions fill block_size = {fills_block} exactly, but "
                f"the model was fed {fed.group(1)} positions in all, through its cache: the "
                "tokens already in the cache were fed again. Feed the prompt once, then only "
                "the newest token with the cache."
            )
        id_ = "cache-feeds-last-token" if fed else "generate-full-block-refused"
        raise Fail(
            f"{what}: {shape[1]} positions fill block_size = {fills_block} exactly, which "
            f"fits, but it raised ValueError: {compare.plain_error_text(message)}. "
            + explain([id_]),
            [id_],
        )
    _generated(r, what, tuple(shape), vocab_size, prompt)
    after = r.decode(r.raw["args_after"][1])
    compare.assert_unchanged(np.asarray(prompt), np.asarray(after), "idx")
    for more, response in zip(also, responses[1:], strict=True):
        _generated(response, more, tuple(also_shape), vocab_size, prompt)


@judge
def cached_greedy(responses, *, what, shape, vocab_size, prompt, want, variants):
    """top_k=1 under the toy model whose logits depend on the position: `want` the right
    chain, variants the chains of tokens fed at the wrong positions."""
    got = _generated(responses[0], what, tuple(shape), vocab_size, prompt)
    if np.array_equal(got, want):
        return
    ids = [i for i, chain in variants if np.array_equal(got, chain)][:1]
    b, t = np.argwhere(got != np.asarray(want))[0]
    raise Fail(
        f"{what}: token {t} of row {b} is not the model's most likely next token at that "
        "position (with top_k=1 generation is greedy). "
        + (
            explain(ids)
            if ids
            else "Feed the prompt once, then each new token with the cache "
            "the previous call returned, and sample from the last position's logits."
        ),
        ids,
    )


def _out_of_order(r):
    """True if an answer raised the TypeError of a sampling argument in another's place
    (a generator compared with a number, a float given as top_k, ...)."""
    err = (r.error or {}) if not (r.missing or r.lost) else {}
    message = err.get("message", "")
    return err.get("type") == "TypeError" and any(
        clue in message for clue in ("Generator", "generator", "float", "NoneType", "'<'", "'>'")
    )


def _say_out_of_order(r, what):
    raise Fail(
        f"{what} raised TypeError ({compare.plain_error_text(r.error['message'])}): "
        "temperature, top_k, top_p and generator reach the sampler in another order than it "
        "takes them. Pass them by name (top_k=top_k, top_p=top_p, generator=generator)."
    )


@judge
def cached_distribution(responses, *, what, samples, vocab_size, prompt, p, variants):
    """One token sampled `samples` times; Pearson's test against p; variants (id, p) name
    the sampling mistake whose distribution fits instead (one match or none). A second
    request, where there is one, gives top_p alone: a TypeError there says the arguments
    reached the sampler in another order, which no sampling mistake explains."""
    r = responses[0]
    if len(responses) > 1 and _out_of_order(responses[1]):
        _say_out_of_order(responses[1], what)
    got = _generated(r, what, (samples, len(prompt[0]) + 1), vocab_size, prompt)
    counts = np.bincount(got[:, -1], minlength=vocab_size)
    if sample_fit(counts, p)[1]:
        return
    top = int(np.argmax(p))
    seen = (
        f"token {top}, the most likely, came {fmt(100 * counts[top] / samples)}% of the time; "
        f"expected about {fmt(100 * p[top])}%"
    )
    ids = {id_ for id_, q in variants if sample_fit(counts, q)[1]}
    if len(ids) == 1:
        raise Fail(f"{what}: {seen}. " + explain(sorted(ids)), sorted(ids))
    if counts.max() == samples:
        raise Fail(
            f"{what}: all {samples} samples are one token: sample (torch.multinomial), do not take the argmax."
        )
    raise Fail(
        f"{what}: the {samples} samples do not follow the distribution notebook 06's sampling "
        f"gives (temperature, then top-k, then top-p), by far more than chance explains: {seen}."
    )
