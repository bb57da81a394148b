"""The judges of notebook 07 (from GPT-2 to a modern small LM): verdicts from plain data.

Registered as "modern_lm.<name>" (judging.LEGACY_PREFIXES); the probes (cases*.py) build the cases
with the reference's outputs and the known-wrong variants' outputs stored as plain data. Values
(rms_norm, apply_rope) reuse block_judges.layer_norm, which is a generic "values, diagnosed, then
differentiable and unchanged" judge. No judge here runs a model answer.

This file judges BPETokenizer; judges_regex_bpe.py RegexBPETokenizer's special tokens,
judges_model.py the model's pieces (apply_rope's relative positions, SwiGLU, attention with a
cache, TinyLlama), judges_generate.py generate_cached.
"""

import numpy as np

from autograder.course.torch_shared.checks import explain
from autograder.judging import compare, judge
from autograder.judging.base import Fail
from autograder.judging.compare import describe_encoded
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
def bpe_merges(responses, *, what, expected, variants, hint=BPE_HINT, asked=None):
    """merges (in the order learned) and vocab_size = 256 + len(merges); `asked`, the
    vocab_size asked for where training stops before it (bpe-vocab-size-as-asked)."""
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
        ids = ["bpe-vocab-size-as-asked"] if asked is not None and size == asked else []
        raise Fail(
            f"{what}: vocab_size is {size}, but with {len(want)} merges learned the vocabulary "
            f"holds 256 + {len(want)} ids." + (" " + explain(ids) if ids else ""),
            ids,
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
            f"decode(encode(s)) gave {got[:40]!r}, not s = {text[:40]!r}. "
            + explain(["bpe-decode-per-token"]),
            ["bpe-decode-per-token"],
        )
    if got != text:
        raise Fail(f"decode(encode(s)) gave {got[:40]!r}, not s = {text[:40]!r}.")
    err = r.raw["steps"][1].get("error") or {}
    if err.get("type") == "UnicodeDecodeError":
        raise Fail(
            f"decode({partial}) raised UnicodeDecodeError: these ids end in the middle of a "
            "UTF-8 character. " + explain(["bpe-decode-strict"]),
            ["bpe-decode-strict"],
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
            ids = ["bpe-decode-per-token"] if got == "\ufffd" * len(split) else []
            raise Fail(
                f"decode({split}) gave {got!r:.60}, not {split_text!r}: these ids are the "
                f"{len(split)} UTF-8 bytes of one character. "
                + (
                    explain(ids)
                    if ids
                    else "Join the bytes of all the ids first, then decode them once."
                ),
                ids,
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
        if bad < 0:
            raise Fail(
                f"decode({ids}) returned {describe_encoded(step.get('value'))} although {bad} "
                "is not in the vocabulary. " + explain(["bpe-negative-id-accepted"]),
                ["bpe-negative-id-accepted"],
            )
        raise Fail(
            f"decode({ids}) returned {describe_encoded(step.get('value'))} although {bad} is "
            "not in the vocabulary: raise ValueError naming it."
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
