"""The judges of notebook 06's model and data (make_examples, CharTokenizer, get_batch, GPT,
lm_loss, generate): verdicts from plain data.

Registered as "lm_judges.<name>" (judging.LEGACY_PREFIXES) and named by the Judgements of
cases*.py. Values are compared with the reference's, worked out
when the case was built; properties (causality, shapes, errors, reproducibility, sampling from
the harness's toy model) from the inputs the parent chose alone; and what the later cells rely
on (tok.chars, a ValueError for an unknown character, sliced logits, the generator, dropout in
the right places) by calling the student's code as those cells do. No judge runs a model answer,
and every number a verdict depends on is computed here from returned values (logits, tokens),
never taken from a number the student's process reports (a loss, a count). The training
pieces (lr_at, configure_optimizer, train_step) are judged in judges_training.py and judges_train_step.py.

This file judges the data pieces (make_examples, CharTokenizer, get_batch); judges_gpt.py the
GPT's contract, causality, training, dropout and positions; judges_values.py the values against
the reference's (lm_loss, the GPT's logits); judges_generate.py generate.
"""

import numpy as np

from autograder.course.torch_shared.checks import explain
from autograder.judging import compare, judge
from autograder.judging.base import Fail
from autograder.judging.compare import describe_encoded
from autograder.results import NOT_IMPLEMENTED


def _plain(v):
    if isinstance(v, np.generic):
        return v.item()
    if isinstance(v, np.ndarray) and v.ndim == 0:
        return v.item()
    return v


def _as_examples(value, what):
    if not isinstance(value, list | tuple):
        raise Fail(
            f"{what} should return a list of (context, label) pairs; it returned {value!r:.80}."
        )
    out = []
    for i, item in enumerate(value):
        if not isinstance(item, list | tuple) or len(item) != 2:
            raise Fail(f"item {i} of {what} is {item!r:.60}, not a pair (context, label).")
        feature, label = item
        if isinstance(feature, np.ndarray):
            feature = feature.tolist()
        if not isinstance(feature, list | tuple):
            raise Fail(
                f"the context of item {i} of {what} is {feature!r:.60}, not a list of tokens."
            )
        out.append(([_plain(t) for t in feature], _plain(label)))
    return out


def _examples(pairs):
    """Stored examples as the judge compares them: a list of (list of tokens, label)."""
    return [(list(context), label) for context, label in pairs]


@judge
def make_examples(responses, *, what, tokens, context_size, right, variants):
    """`right` and each variant's examples were worked out when the case was built; variants
    are [id or None, examples, why]."""
    (r,) = responses
    got = _as_examples(r.value(what), what)
    right = _examples(right)
    after = r.decode(r.raw.get("args_after", [None])[0])
    if after != list(tokens):
        raise Fail(f"{what} changed the token list it was given: build new lists instead.")
    if got == right:
        return
    for id_, variant, why in variants:
        if got == _examples(variant):
            raise Fail(f"{what}: {why}.", [id_] if id_ else [])
    if len(got) != len(right):
        raise Fail(
            f"{what} returned {len(got)} examples; expected {len(right)}, one for every "
            "token after the first."
        )
    i = next(i for i, (g, e) in enumerate(zip(got, right, strict=True)) if g != e)
    g, e = got[i], right[i]
    part = "context" if g[0] != e[0] else "label"
    raise Fail(
        f"{what}: example {i} (label position {i + 1}) has the wrong {part}: got {g!r:.80}, "
        f"expected {e!r:.80}. The context is the latest (at most {context_size}) tokens before "
        "the label."
    )


def _object_steps(r, label="CharTokenizer"):
    """The steps of an object request, after the errors every step shares."""
    if r.error:
        raise Fail(compare.error_message(r, f"{label}(text)"))
    steps = r.raw["steps"]
    for step in steps:
        if (step.get("error") or {}).get("type") == "NotImplementedError":
            raise Fail(
                f"{label} is not implemented yet (it raises NotImplementedError).",
                reason=NOT_IMPLEMENTED,
            )
    return steps


def _step(r, i, what):
    """The value of step i of a CharTokenizer object request, or a Fail saying what went wrong."""
    step = _object_steps(r)[i]
    if step.get("missing"):
        raise Fail(
            f"{step['missing']} does not exist: CharTokenizer needs the methods encode and decode."
        )
    if step.get("error"):
        err = step["error"]
        raise Fail(f"{what} raised {err['type']}: {err['message']}")
    return r.decode(step["value"])


def _ids(value, what):
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if not isinstance(value, list | tuple) or not all(
        isinstance(_plain(v), int) and not isinstance(_plain(v), bool) for v in value
    ):
        raise Fail(f"{what} should return a list of ints; it returned {value!r:.80}.")
    return [int(_plain(v)) for v in value]


@judge
def tokenizer_vocab_size(responses, *, sizes):
    for r, size in zip(responses, sizes, strict=True):
        v = _plain(_step(r, 0, "vocab_size"))
        if v != size:
            raise Fail(f"vocab_size is {v!r:.40} for a text with {size} distinct characters.")


@judge
def tokenizer_ids(responses, *, sizes, sample, sample_ids, folded=None):
    """encode(sorted distinct characters) is 0..size-1 for each text; encode(sample) is
    sample_ids for the first. `folded`: per text, what a tokenizer sorting without regard to
    case gives (the second text always mixes a lowercase letter and a later capital)."""
    folded = folded or [None, None]
    for r, size, label, fold in zip(
        responses, sizes, ("a text", "a second text"), folded, strict=True
    ):
        what = f"encode(sorted distinct characters) for {label}"
        got = _ids(_step(r, 0, what), what)
        if fold is not None and got == list(fold) and got != list(range(size)):
            raise Fail(
                f"{what} gave {got}: " + explain(["tokenizer-case-insensitive"]),
                ["tokenizer-case-insensitive"],
            )
        if got != list(range(size)):
            if sorted(got) == list(range(size)):
                raise Fail(
                    f"{what} gave {got}: the ids are a permutation of 0..{size - 1} but "
                    "not in sorted order. The ids are the positions in sorted(set(text))."
                )
            raise Fail(
                f"{what} gave {got!r:.80}; expected 0, 1, ..., {size - 1}. The ids "
                "are the positions in sorted(set(text)) (is state shared between tokenizers?)."
            )
    got = _ids(_step(responses[0], 1, "encode(s)"), "encode(s)")
    if got != list(sample_ids):
        raise Fail(f"encode({sample!r}) gave {got!r:.80}: expected one id per character.")


@judge
def tokenizer_decode(responses, *, sample, vocabulary):
    r = responses[0]
    got = _step(r, 0, "decode(ids)")
    if not isinstance(got, str):
        raise Fail(
            f"decode(ids) returned {describe_encoded(r.raw['steps'][0]['value'])}, not a str: join the characters with ''.join(...)."
        )
    if got != sample:
        raise Fail(f"decode(encode(s)) gave {got!r} for s = {sample!r}.")
    full = _step(r, 1, "decode(list(range(vocab_size)))")
    if full != vocabulary:
        raise Fail(
            f"decode(list(range(vocab_size))) gave {full!r}: it should list the vocabulary in "
            "sorted order."
        )


def known_sample_encodes(r, sample, sample_ids):
    """Property points need a working tokenizer: encode(sample), every character known, must
    give the right ids (a tokenizer that always raises would otherwise earn them)."""
    step = r.raw["steps"][1]
    if step.get("error"):
        err = step["error"]
        raise Fail(
            f"encode({sample!r}), every character known, raised {err['type']}: this test's "
            "points also need encode to work on known characters (the tests above say how)."
        )
    got = _ids(_step(r, 1, f"encode({sample!r})"), f"encode({sample!r})")
    if got != list(sample_ids):
        raise Fail(
            f"encode({sample!r}), every character known, gave {got!r:.80}: this test's points "
            "also need encode to work on known characters (the tests above say how)."
        )


def _unknown_encoded(r, bad, unknown, sample, sample_ids, wanted):
    """The error encode(bad) raised, after the checks both unknown-character cases share: the
    tokenizer built, encode known characters right (for the points), encode(bad) raising."""
    step, *rest = _object_steps(r)
    if sample is not None and rest:
        known_sample_encodes(r, sample, sample_ids)
    if step.get("missing"):
        raise Fail(f"{step['missing']} does not exist.")
    if not step.get("error"):
        raise Fail(
            f"encode({bad!r}) returned {describe_encoded(step.get('value'))} although {unknown!r} "
            f"is not in the vocabulary: raise {wanted} that names the character."
        )
    return step["error"]


@judge
def tokenizer_unknown(responses, *, bad, unknown, sample=None, sample_ids=None):
    """encode(bad) raises an error whose message names the unknown character."""
    err = _unknown_encoded(responses[0], bad, unknown, sample, sample_ids, "an error")
    if unknown not in err["message"]:
        raise Fail(
            f"encode({bad!r}) raised {err['type']}: {err['message'][:80]!r}, which does not "
            f"name the unknown character {unknown!r}: say which character is missing.",
            fraction=0.5,
        )


def _batch(r, what, B, T):
    x, y = compare.returned(r, what, framework="torch", count=2, names=["x", "y"])
    for name, t in (("x", x), ("y", y)):
        compare.assert_shape(t, (B, T), f"{name} of {what}")
        if t.dtype.kind not in "iu":
            raise Fail(
                f"{name} of {what} holds {t.dtype} values: token ids must stay integers "
                "(torch.long) so nn.Embedding can look them up."
            )
    return x.astype(np.int64), y.astype(np.int64)


def _window_check(data, x, y, what):
    """Every row of x is a window of data and y the same window shifted by one."""
    data = np.asarray(data)
    N, T = len(data), x.shape[1]
    windows = {tuple(data[s : s + T]): s for s in range(N - T + 1)}
    for b in range(len(x)):
        starts = [s for s in range(N - T + 1) if np.array_equal(data[s : s + T], x[b])]
        if not starts:
            raise Fail(
                f"row {b} of x is not {T} consecutive tokens of data: take data[s : s + block_size]."
            )
        if any(s + T < N and np.array_equal(data[s + 1 : s + T + 1], y[b]) for s in starts):
            continue  # right, even where a run of one token makes y equal x
        if np.array_equal(y[b], x[b]):
            raise Fail(
                f"{what}: row {b} of y equals row {b} of x. " + explain(["targets-not-shifted"]),
                ["targets-not-shifted"],
            )
        if any(s > 0 and np.array_equal(data[s - 1 : s - 1 + T], y[b]) for s in starts):
            raise Fail(
                f"{what}: row {b} of y is x's window shifted one token BACK (y starts one "
                "token before x): x and y are swapped. x = data[s : s + block_size] and "
                "y = data[s + 1 : s + 1 + block_size], the tokens that follow."
            )
        if tuple(y[b]) in windows:
            raise Fail(
                f"{what}: row {b} of y is a window of data, but not x's window shifted by one: "
                "y must use the same start s as x, plus one."
            )
        raise Fail(
            f"{what}: row {b} of y is not x's window shifted by one: y = data[s + 1 : s + 1 + block_size]."
        )


@judge
def batch_windows(responses, *, what, data, batch_size, block_size, check_unchanged):
    x, y = _batch(responses[0], what, batch_size, block_size)
    _window_check(data, x, y, what)
    if check_unchanged:
        after = responses[0].decode(responses[0].raw["args_after"][0])
        compare.assert_unchanged(np.asarray(data), np.asarray(after), "data")


@judge
def batch_one_window(responses, *, what, data, batch_size, block_size):
    """data has exactly block_size + 1 tokens: one window, starting at 0."""
    r, T = responses[0], block_size
    if r.error:
        raise Fail(
            compare.error_message(r, what)
            + f". With {T + 1} tokens there is exactly one window, starting at 0: the "
            "starts run from 0 to len(data) - block_size - 1 inclusive."
        )
    x, y = _batch(r, what, batch_size, T)
    d = np.asarray(data)
    if not (np.all(x == d[:T]) and np.all(y == d[1:])):
        _window_check(d, x, y, what)
        raise Fail(f"{what}: the only window is x = data[:{T}], y = data[1:].")


@judge
def batch_reproducible(responses, *, what, data, batch_size, block_size):
    (x1, y1), (x2, y2) = (_batch(r, what, batch_size, block_size) for r in responses)
    _window_check(data, x1, y1, what)
    if len({tuple(row) for row in x1}) < 2:
        raise Fail(
            f"{what}: all {batch_size} rows are the same window; draw a random start for each row."
        )
    if not (np.array_equal(x1, x2) and np.array_equal(y1, y2)):
        raise Fail(
            f"{what} gave different batches: draw the random starts with the `generator` "
            "argument (torch.randint(..., generator=generator)) so batches are reproducible."
        )


@judge
def tokenizer_value_error(responses, *, bad, unknown, sample=None, sample_ids=None):
    """encode(bad) raises ValueError: the exception the notebook's cells catch (and, for the
    points, encode works on known characters)."""
    err = _unknown_encoded(responses[0], bad, unknown, sample, sample_ids, "a ValueError")
    if err["type"] != "ValueError":
        lookup = " (what a dictionary lookup raises)" if err["type"] == "KeyError" else ""
        raise Fail(
            f"encode({bad!r}) raised {err['type']}{lookup}; the exercise asks for a ValueError, "
            "which the cells below catch: check each character and raise ValueError(...) naming "
            "the unknown one."
        )


@judge
def tokenizer_chars(responses, *, chars):
    """`chars` is the sorted list of the distinct characters, for each text."""
    for r, want in zip(responses, chars, strict=True):
        step = _object_steps(r)[0]
        if step.get("error"):
            raise Fail(
                "CharTokenizer has no attribute chars: keep the sorted distinct characters of "
                "the text as self.chars (chars[i] is the character of id i); the cells below "
                "read it."
            )
        got = r.decode(step["value"])
        if isinstance(got, list | tuple | str) and list(got) == sorted(want, key=str.lower) != list(
            want
        ):
            raise Fail(
                f"chars is {''.join(got)!r}: " + explain(["tokenizer-case-insensitive"]),
                ["tokenizer-case-insensitive"],
            )
        if not isinstance(got, list | tuple | str) or list(got) != list(want):
            raise Fail(
                f"chars is {describe_encoded(step['value'])}: {got!r:.60}; expected the "
                f"{len(want)} distinct characters of the text, sorted (sorted(set(text)))."
            )
