"""The judges of notebook 07's RegexBPETokenizer beyond what it shares with BPETokenizer
(registered as "modern_lm.<name>", like judges.py's): its special tokens, encoded whole and
decoded back. Plain data only.
"""

from autograder.course.n07_modern_lm.judges import _ids, _pairs, _step
from autograder.course.torch_shared.checks import explain
from autograder.judging import compare, judge
from autograder.judging.base import Fail


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
                f"{what}.decode({ids}) gave {str(got)[:60]!r}, not {text[:60]!r}. "
                + explain(["bpe-decode-per-token"]),
                ["bpe-decode-per-token"],
            )
        if got != text:
            ids_ = ["regex-bpe-special-decode"] if isinstance(got, str) else []
            raise Fail(
                f"{what}.decode({ids}) gave {str(got)[:60]!r}, not {text[:60]!r}. "
                + (explain(ids_) if ids_ else "decode returns a str."),
                ids_,
            )
