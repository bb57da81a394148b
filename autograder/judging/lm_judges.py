"""The judges of notebook 06's model and data (make_examples, CharTokenizer, get_batch, GPT,
lm_loss, generate): verdicts from plain data.

Registered as "lm_judges.<name>" and named by the Judgements of
autograder/probes/autoregressive_lm.py. Values are compared with the reference's, worked out
when the case was built; properties (causality, shapes, errors, reproducibility, sampling from
the harness's toy model) from the inputs the parent chose alone; and what the later cells rely
on (tok.chars, a ValueError for an unknown character, sliced logits, the generator, dropout in
the right places) by calling the student's code as those cells do. No judge runs a model answer,
and every number a verdict depends on is computed here from returned values (logits, tokens),
never taken from a number the student's process reports (a loss, a count). The training
pieces (lr_at, configure_optimizer, train_step) are judged in training_judges.
"""

import math

import numpy as np

from autograder.course.torch_shared.checks import (
    close_or_diagnose,
    explain,
    hint_for,
    one_diagnosis,
)
from autograder.course.torch_shared.checks_modules import (
    IN_EVAL_MODE,
    differentiable_and_unchanged,
    gpt_error,
    gpt_logits,
)
from autograder.course.torch_shared.checks_sampling import cross_entropy, sample_fit
from autograder.judging import compare, judge
from autograder.judging.base import Fail, Response
from autograder.judging.compare import FLOAT32, describe_encoded, fmt
from autograder.misconceptions import CATALOGUE
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
def gpt_shapes(responses, *, calls):
    """calls: [what, expected shape] per request."""
    for i, (r, (what, shape)) in enumerate(zip(responses, calls, strict=True)):
        if i > 0 and r.error and not responses[0].error:
            raise Fail(
                compare.error_message(r, what).rstrip(".") + ". It works for T = block_size, "
                "so something is sized for block_size: build the mask for the T tokens given, "
                "(T, T), and the positions 0..T-1."
            )
        gpt_logits(r, what, tuple(shape))


@judge
def gpt_causal(responses, *, shape, cuts):
    """Row j of idx equals row 0 up to position cuts[j - 1] and differs after it: the logits up
    to that position must be row 0's. A failure is diagnosed by responses[1] (a one-block GPT
    with one token changed per row, see _mask_diagnosis), when there is one."""
    found = _mask_diagnosis(responses[1]) if len(responses) > 1 else None
    try:
        logits = gpt_logits(responses[0], "GPT(...)(idx)", tuple(shape))
    except Fail as failure:
        if found is None or responses[0].error:
            raise
        raise Fail(failure.message + " " + found[1], [found[0]] if found[0] else []) from None
    scale = max(float(np.abs(logits[0]).max()), 1e-6)
    for j, t in enumerate(cuts, start=1):
        past = float(np.abs(logits[j, : t + 1] - logits[0, : t + 1]).max())
        if past > max(1e-5, 1e-4 * scale):
            seen = int(np.argmax(np.abs(logits[j, : t + 1] - logits[0, : t + 1]).max(-1)))
            message = (
                f"changing only the tokens after position {t} changed the logits at position "
                f"{seen} by up to {fmt(past)}: position {seen} sees the future."
            )
            if found is None:
                raise Fail(
                    message + " Position t may only attend to positions <= t: check the mask "
                    "you build and that every block gets it."
                )
            raise Fail(message + " " + found[1], [found[0]] if found[0] else [])
    future = float(np.abs(logits[1, 2:] - logits[0, 2:]).max())
    if future == 0.0:
        raise Fail(
            "the logits do not change at all when the later tokens change: does the model "
            "use the token ids (tok_emb(idx))?"
        )


def _dependencies(r):
    """From a one-block GPT's logits on [row, row with token 0 changed, ..., token T-1
    changed]: dep[s, j] (changing token j moved the logits at position s) and the positions
    whose logits are not finite (an entirely masked row of attention scores). None when the
    answer is unusable."""
    if r.error or "value" not in r.raw:
        return None
    try:
        L = compare.as_array(r.decode(r.raw["value"])).astype(np.float64)
    except (Fail, TypeError, ValueError):
        return None
    if L.ndim != 3 or L.shape[0] != L.shape[1] + 1:
        return None
    T, base = L.shape[1], L[0]
    finite = np.isfinite(base)
    empty = {s for s in range(T) if not finite[s].all()}
    scale = max(float(np.abs(base[finite]).max()) if finite.any() else 0.0, 1e-6)
    tol = max(1e-5, 1e-4 * scale)
    with np.errstate(invalid="ignore"):
        dep = np.stack([~(np.abs(L[1 + j] - base).max(-1) <= tol) for j in range(T)], axis=1)
    return dep, empty


def _mask_diagnosis(r):
    """(id or None, sentence) naming the mask's pattern, from a one-block GPT where position s
    sees exactly the tokens its row of the mask allows (plus itself, through the residual):
    every position sees everything (no mask), the future and not the past (inverted), or one
    diagonal off. None when the evidence fits none of them."""
    found = _dependencies(r)
    if found is None:
        return None
    dep, empty = found
    T = dep.shape[0]
    future = [bool(dep[s, s + 1 :].any()) for s in range(T)]
    past = [bool(dep[s, :s].any()) for s in range(T)]
    one_ahead = all(dep[s, s + 1] and not dep[s, s + 2 :].any() for s in range(T - 1))
    if not empty and one_ahead and all(past[1:]):
        return "mask-off-by-one", (
            "In a GPT with one block (n_layers=1), the logits at each position t move when token t + 1 "
            "changes, and not for any later token: each position sees one token ahead. "
            + explain(["mask-off-by-one"])
        )
    if empty <= {0} and not any(future[1:]) and (0 in empty or future[0]):
        seen = "its row of the mask allows no key" if 0 in empty else "it sees later tokens"
        return "mask-off-by-one", (
            f"In a GPT with one block (n_layers=1), every position but the first sees only the past; the "
            f"first position is wrong ({seen}): the mask leaves out the diagonal. "
            + explain(["mask-off-by-one"])
        )
    inner = [s for s in range(T - 1) if s not in empty]
    if empty <= {T - 1} and all(future[s] for s in inner) and not any(past[1 : T - 1]):
        return "mask-inverted", (
            "In a GPT with one block (n_layers=1), the logits at position t move when a LATER token "
            "changes and never when an earlier one does: the mask hides the past and shows "
            "the future. " + explain(["mask-inverted"])
        )
    if not empty and all(future[: T - 1]) and all(past[1:]):
        return "no-causal-mask", (
            "In a GPT with one block (n_layers=1), changing any token moves the logits at every position, "
            "earlier ones included: nothing stops a position from attending to later tokens. "
            + explain(["no-causal-mask"])
        )
    return None


def reads_its_input(logits, what):
    """Property points need a real model: rows of different tokens get different logits."""
    if np.array_equal(logits[0], logits[-1]):
        raise Fail(
            f"{what}: two sequences of different tokens get exactly the same logits, so the "
            "model does not read its input yet; this test's points need a GPT whose logits "
            "come from the tokens (the tests above say what is missing)."
        )


@judge
def gpt_too_long(responses, *, block_size, vocab_size=None):
    r, T = responses[0], block_size
    if len(responses) > 1:
        what = f"GPT(...)(idx of shape (1, {T}))"
        logits = gpt_logits(responses[1], what, (1, T, vocab_size))
        if np.ptp(logits) == 0.0:
            raise Fail(
                f"{what} gives the same number for every logit: this test's points need a GPT "
                "whose logits come from the tokens (the tests above say what is missing)."
            )
    if r.error:
        if r.error["type"] == "ValueError":
            return
        raise Fail(
            f"a sequence of {T + 1} tokens (block_size {T}) raised {r.error['type']}; the notebook asks "
            "for a ValueError with a clear message, checked at the start of forward.",
            fraction=0.5,
        )
    raise Fail(
        f"a sequence of {T + 1} tokens went through a GPT with block_size {T} without an "
        "error: raise ValueError when T > block_size."
    )


@judge
def gpt_block_size(responses, *, block_sizes, vocab_size=None):
    for r, want in zip(responses, block_sizes, strict=True):
        if r.error:
            raise Fail(compare.error_message(r, "building GPT(...)"))
        step = r.raw["steps"][0]
        forward = r.raw["steps"][1] if len(r.raw["steps"]) > 1 else {}
        if (forward.get("error") or {}).get("type") == "NotImplementedError":
            raise Fail(
                "GPT is not implemented yet (forward raises NotImplementedError).",
                reason=NOT_IMPLEMENTED,
            )
        if step.get("error"):
            raise Fail(
                "GPT has no attribute block_size: store it in __init__ (self.block_size = block_size)."
            )
        got = _plain(r.decode(step["value"]))
        if got != want:
            raise Fail(f"GPT(..., block_size={want}).block_size is {got!r:.40}.")
    first = responses[0]
    if vocab_size is not None and not first.error and len(first.raw["steps"]) > 1:
        step = first.raw["steps"][1]
        if not step.get("error") and "value" in step:
            shown = "GPT(vocab_size, block_size)(idx of shape (2, 3))"
            fake = Response({"value": step["value"]}, first.reader)
            reads_its_input(gpt_logits(fake, shown, (2, 3, vocab_size)), shown)


@judge
def gpt_gradients(responses, *, shape):
    r = responses[0]
    reads_its_input(gpt_logits(r, "GPT(...)(idx)", tuple(shape)), "GPT(...)(idx)")
    if "backward_error" in r.raw:
        err = r.raw["backward_error"]
        raise Fail(f"backpropagating through your GPT raised {err['type']}: {err['message']}.")
    without = _without_gradient(r)
    if without:
        raise Fail(
            f"{len(without)} parameter(s) of your GPT get no gradient (e.g. {without[0]}): "
            "is every layer used in forward, through torch operations?"
        )


def _without_gradient(r):
    """The parameters (that require grad) to which the parent received no gradient tensor.

    The harness lists the module's trainable parameters ("params"); the parent compares that
    list with the gradient tensors it received, rather than taking a list of gradient-less
    parameters (or a count) worked out in the student's process.
    """
    names = r.raw.get("params")
    names = names if isinstance(names, list) else []
    grads = r.decode(r.raw.get("param_grads") or {})
    grads = grads if isinstance(grads, dict) else {}
    return [n for n in names if not isinstance(grads.get(n), np.ndarray)]


SPREAD_FACTOR = 2.5  # PyTorch's default initialisation spreads these logits about 5 times more


@judge
def gpt_initial_loss(responses, *, shape, targets, ln_vocab, spread=None):
    """The untrained model's cross-entropy, computed here from its logits, near ln(V); with
    `spread` (the notebook's untrained GPT's logits' standard deviation), logits no more than
    SPREAD_FACTOR times as spread out: the initialisation reached every layer."""
    logits = gpt_logits(responses[0], "GPT(...)(idx)", tuple(shape))
    reads_its_input(logits, "GPT(...)(idx)")
    V = shape[-1]
    loss = cross_entropy(logits, targets)
    if spread is not None and float(logits.std()) > SPREAD_FACTOR * spread:
        raise Fail(
            f"the untrained model's logits have a standard deviation of "
            f"{fmt(float(logits.std()))}; the notebook's initialisation (weights of std 0.02) "
            f"gives {fmt(spread)} here, so some layers kept PyTorch's default weights. "
            + explain(["init-before-modules"]),
            ["init-before-modules"],
        )
    if abs(loss - ln_vocab) > 1.5:
        raise Fail(
            f"the untrained model's loss on random targets is {fmt(loss)}; with {V} tokens a "
            f"model that knows nothing yet should be near ln({V}) = {fmt(ln_vocab)}. Very "
            "confident initial logits usually mean large initial weights (GPT-2 draws them "
            "with std 0.02) or a missing final layer norm."
        )


@judge
def gpt_training(responses, *, targets, threshold, steps, period):
    """The harness trains the student's GPT and returns its LOGITS on inputs the parent chose,
    before and after training; the losses are computed here, against the parent's targets."""
    r = responses[0]
    result = r.value("training your GPT")
    if not isinstance(result, dict) or "logits_after" not in result:
        raise Fail("the training run gave no logits back.")
    n, T = np.shape(targets)
    losses = []
    for key in ("logits_before", "logits_after"):
        logits = compare.as_array(result.get(key), "the logits of your trained GPT")
        if logits.ndim != 3 or logits.shape[:2] != (n, T) or logits.dtype.kind != "f":
            raise Fail(
                f"your GPT's logits on {n} sequences of {T} tokens have shape "
                f"{tuple(logits.shape)} ({logits.dtype}); expected float logits of shape "
                f"({n}, {T}, vocab_size)."
            )
        if logits.shape[-1] <= int(np.max(targets)):
            raise Fail(
                f"your GPT's logits have {logits.shape[-1]} entries per position; the text has "
                f"{int(np.max(targets)) + 1} distinct tokens at least: is vocab_size used?"
            )
        losses.append(cross_entropy(logits, targets))
    before, after = losses
    if not math.isfinite(after):
        raise Fail(
            f"the loss became {after} during training: look for NaN from a fully masked row."
        )
    if not before > threshold:  # knew the text before any training (or NaN): nothing learned
        raise Fail(
            f"your GPT's loss was already {fmt(before)} before training (an untrained model is "
            f"near ln(vocab_size)): the case checks that training teaches the model the text, "
            f"so the loss must start above {fmt(threshold)} and fall below it."
        )
    if after > threshold:
        raise Fail(
            f"after up to {steps} AdamW steps on a text that repeats every {period} tokens, the "
            f"loss went from {fmt(before)} to {fmt(after)}; a working GPT gets below "
            f"{fmt(threshold)}. Check the position embeddings, the residual connections, and "
            "that every block is used."
        )


@judge
def lm_loss(responses, *, what, expected, variants, positions, inputs=None, input_grads=None):
    """The loss against the reference's; with `inputs` ([name, value before]), also
    differentiable (gradients against the reference's `input_grads`) and the inputs left
    unchanged."""
    r = responses[0]
    if r.error and "target size" in r.error["message"]:
        raise Fail(
            compare.error_message(r, what).rstrip(".") + ". F.cross_entropy takes logits of "
            "shape (N, V) and targets of shape (N,): flatten the logits to (B*T, V) and the "
            "targets to (B*T,) first."
        )
    got = compare.returned(r, what, framework="torch")
    if got.size != 1:
        raise Fail(
            f"{what} has shape {tuple(got.shape)}: the loss is one number (shape ()), the mean over all {positions} positions."
        )
    got = got.reshape(())
    if inputs is None:
        close_or_diagnose(got, expected, variants, what)
        return
    differentiable_and_unchanged(r, what, got, expected, inputs, input_grads)


def _generated(r, what, shape, V, prefix=None):
    if r.error:
        err = r.error
        if (
            err["type"] == "ValueError"
            and "block_size" in err["message"]
            and "context of" in err["message"]
        ):
            raise Fail(
                f"{what}: the model was given {err['message'].split(' >')[0].replace('context of ', '')} "
                "of context, more than its block_size. " + explain(["generate-no-crop"]),
                ["generate-no-crop"],
            )
        raise Fail(compare.error_message(r, what))
    got = compare.returned(r, what, framework="torch")
    compare.assert_shape(got, shape, what)
    if got.dtype.kind not in "iu":
        raise Fail(f"{what} holds {got.dtype} values; token ids are integers (torch.long).")
    if got.min() < 0 or got.max() >= V:
        raise Fail(f"{what} holds ids outside 0..{V - 1}.")
    if prefix is not None:
        prefix = np.asarray(prefix)
        if not np.array_equal(got[:, : prefix.shape[1]], prefix):
            raise Fail(
                f"{what}: the first {prefix.shape[1]} columns should be the prompt idx, unchanged."
            )
    return got.astype(np.int64)


@judge
def generated_tokens(responses, *, what, shape, vocab_size, prompt, check_unchanged=False):
    """Shape, valid ids, the prompt kept (and, with check_unchanged, the prompt tensor intact)."""
    _generated(responses[0], what, tuple(shape), vocab_size, prompt)
    if check_unchanged:
        after = responses[0].decode(responses[0].raw["args_after"][1])
        compare.assert_unchanged(np.asarray(prompt), np.asarray(after), "idx")


@judge
def generate_greedy(responses, *, what, shape, vocab_size, prompt, want, most_likely, oldest=None):
    """top_k=1: `want` is the greedy chain under the toy model, most_likely[t] its argmax
    after token t; `oldest` the chain of a context cut to its first block_size tokens."""
    got = _generated(responses[0], what, tuple(shape), vocab_size, prompt)
    want = np.asarray(want)
    if oldest is not None and np.array_equal(got, oldest) and not np.array_equal(got, want):
        raise Fail(
            f"{what}: after the first few tokens every row repeats one token, the model's "
            "prediction after the token at position block_size - 1: the context keeps the "
            "first tokens. " + explain(["generate-crop-oldest"]),
            ["generate-crop-oldest"],
        )
    if not np.array_equal(got, want):
        b, t = np.argwhere(got != want)[0]
        prev = int(got[b, t - 1])
        raise Fail(
            f"{what}: token {t} of row {b} is {int(got[b, t])}, but the model's most likely "
            f"token after {prev} is {int(most_likely[prev])}. With top_k=1 generation "
            "is greedy; the model's prediction for the next token sits in logits[:, -1, :] "
            "of the cropped context idx[:, -block_size:]."
        )


@judge
def generate_top_k(responses, *, what, shape, vocab_size, prompt, top):
    """top[t] lists the k most likely tokens after t (the last the most likely)."""
    got = _generated(responses[0], what, tuple(shape), vocab_size, prompt)
    top = np.asarray(top)
    prev, nxt = got[:, :-1].ravel(), got[:, 1:].ravel()
    outside = np.array([n not in top[p] for p, n in zip(prev, nxt, strict=True)])
    if outside.any():
        raise Fail(
            f"{what}: {int(outside.sum())} of {outside.size} sampled tokens are not among the "
            "2 most likely ones: set every logit below the k-th largest to -inf before the "
            "softmax."
        )
    if len(set(nxt.tolist())) < 2 or all(
        np.all(nxt[prev == p] == top[p, -1]) for p in set(prev.tolist())
    ):
        raise Fail(
            f"{what}: every token is the most likely one; top_k=2 should sample between the top 2."
        )


@judge
def generate_distribution(
    responses,
    *,
    what,
    samples,
    vocab_size,
    p,
    p_multiplied,
    temperature,
    top_k,
    p_plain=None,
    top_p=None,
    named=(),
):
    """One token sampled `samples` times; Pearson's test against p, the distribution the toy
    model's row gives (and p_multiplied, what the temperature-multiplied mistake gives; p_plain
    what ignoring the temperature, or with top_p ignoring top_p, gives; `named`: [id, the
    distribution of that mistake], e.g. top_p's)."""
    B, V = samples, vocab_size
    got = _generated(responses[0], what, (B, 2), V)
    p, p_mul = np.asarray(p), np.asarray(p_multiplied)
    counts = np.bincount(got[:, 1], minlength=V)
    stat, fits_p = sample_fit(counts, p)
    if fits_p:
        return
    freq = counts / B
    top = int(np.argmax(p))
    seen = f"token {top}, the most likely, came {fmt(100 * freq[top])}% of the time; expected about {fmt(100 * p[top])}%"

    def fits(q, loosely=True):
        stat_q, fits_q = sample_fit(counts, q)
        return fits_q or (loosely and stat_q < stat / 10)

    # a known mistake first (one match or none): its own words, before any generic reading
    ids = {id_ for id_, q in named if fits(q, loosely=False)}
    if len(ids) == 1:
        (id_,) = ids
        if id_ == "top-p-ties-unstable":
            raise Fail(
                f"{what}: of several tokens with the same probability at the edge of the set, "
                "one of HIGHER id than the first was kept. " + explain([id_]),
                [id_],
            )
        raise Fail(f"{what}: {seen}. " + explain([id_]), [id_])
    if freq.max() == 1.0 and p.max() < 1.0:
        raise Fail(
            f"{what}: all {B} samples are token {int(np.argmax(freq))}: generate should sample from the distribution (torch.multinomial), not take the argmax."
        )
    if top_p is not None:
        outside = int(counts[p == 0].sum())
        if p_plain is not None and fits(p_plain, loosely=False) and top_p < 1.0:
            raise Fail(
                f"{what}: the samples follow the whole distribution, {outside} of them outside "
                "the top_p set. " + explain(["top-p-ignored"]),
                ["top-p-ignored"],
            )
    even = np.full(V, 1.0 / V)
    if sample_fit(counts, even)[1] and not sample_fit(counts, p_mul)[1]:
        raise Fail(
            f"{what}: {seen}. The samples spread evenly over all {V} tokens, as if every "
            "token were equally likely: the probabilities of one row come from a softmax over "
            "its logits, the last axis (the vocabulary)."
        )
    if temperature != 1.0:
        if fits(p_mul):
            raise Fail(
                f"{what}: {seen}. " + explain(["temperature-multiplied"]),
                ["temperature-multiplied"],
            )
        if p_plain is not None and top_p is None:
            if sample_fit(counts, p_plain)[1]:
                raise Fail(
                    f"{what}: {seen}. The samples follow softmax(logits), as if the "
                    "temperature were 1: divide the logits by temperature before the softmax."
                )
    raise Fail(
        f"{what}: the {B} samples do not follow softmax(logits / temperature)"
        + (" restricted to the top k" if top_k else "")
        + (" restricted to the top_p set" if top_p is not None and top_p < 1.0 else "")
        + f", by far more than chance explains: {seen}."
    )


@judge
def generate_distribution_parts(responses, *, what, samples, vocab_size, parts):
    """One token sampled `samples` times in each call (one per part), each part with its own
    right distribution p and known mistakes `named` [id, distribution] (a mistake absent from a
    part samples as p there). A mistake is named only if it explains every part and no other
    does."""
    everyone = {id_ for part in parts for id_, _ in part["named"]}
    consistent, failing = set(everyone), []
    for r, part in zip(responses, parts, strict=True):
        got = _generated(r, what, (samples, 2), vocab_size)
        counts = np.bincount(got[:, 1], minlength=vocab_size)
        fits_p = sample_fit(counts, np.asarray(part["p"]))[1]
        shown = {id_ for id_, _ in part["named"]}
        fitting = {id_ for id_, q in part["named"] if sample_fit(counts, np.asarray(q))[1]}
        consistent &= fitting | ((everyone - shown) if fits_p else set())
        if not fits_p:
            failing.append((part, counts))
    if not failing:
        return
    if all(counts.max() == counts.sum() for _, counts in failing):  # one token each time
        raise Fail(
            f"{what}: every call gave one token only, where the distribution keeps several: "
            "generate should sample from it (torch.multinomial), not take the argmax."
        )
    part, counts = failing[0]
    p, n = np.asarray(part["p"]), counts.sum()
    top = int(np.argmax(p))
    seen = (
        f"after token {part['start']}, token {top}, the most likely, came "
        f"{fmt(100 * counts[top] / max(n, 1))}% of the time; expected about {fmt(100 * p[top])}%"
    )
    if len(consistent) == 1:
        raise Fail(f"{what}: {seen}. " + explain(sorted(consistent)), sorted(consistent))
    raise Fail(
        f"{what}: the samples do not follow softmax(logits) cut to the top k, then to the top_p "
        f"set of what is left, by far more than chance explains: {seen}."
    )


@judge
def generate_mode(responses, *, what, shape, vocab_size, modes=(False,)):
    """generate on a model in each mode of `modes` (False: eval, True: train): the tokens are
    valid and the model is in the same mode afterwards."""
    for r, training in zip(responses, modes, strict=False):
        mode = "train" if training else "eval"
        _generated(r, what.format(mode), tuple(shape), vocab_size)
        after = r.raw.get("training_after") or []
        if after and after[0] is not training:
            id_ = "generate-leaves-eval-mode" if training else "generate-leaves-train-mode"
            other = "eval" if training else "train"
            raise Fail(
                f"{what.format(mode)}: the model came in {mode} mode and was left in {other} "
                "mode. " + explain([id_]),
                [id_],
            )


@judge
def gpt_values(responses, *, what, expected, expected_tied, variants, blocks, final_norm, sizes):
    """The logits of the student's GPT with the reference's weights placed by role
    (harness/roles.py) against the reference's (`expected_tied` for a model whose head reuses
    the token table). Parameters that do not fit the notebook's architecture are said from the
    facts the harness answered; wrong logits are blamed on notebook 05's block or layer norm
    when the model's own blocks or final norm, run alone on one input (`blocks`,
    `final_norm`: their expected outputs and variants), are wrong; else on GPT's wiring."""
    r = responses[0]
    if r.error:
        raise gpt_error(r, what)
    if "role_mismatch" in r.raw:
        if not r.decode(r.raw.get("state_names")):
            raise Fail(
                "GPT is not implemented yet: it creates no parameters.", reason=NOT_IMPLEMENTED
            )
        facts = r.decode(r.raw["role_mismatch"])
        message, ids = _architecture_message(facts if isinstance(facts, dict) else {}, sizes)
        raise Fail(message, ids)
    distinct = r.raw.get("distinct_blocks")
    if isinstance(distinct, int) and distinct < len(blocks):
        raise Fail(
            f"{what}: your GPT's {len(blocks)} blocks are {distinct} block object(s) repeated "
            "(as nn.ModuleList([block] * n_layers) makes them), so the layers share one set "
            "of weights: build a new TransformerBlock for each layer."
        )
    logits = gpt_logits(r, what, tuple(np.shape(expected)))
    want = np.asarray(expected_tied if r.raw.get("tied") is True else expected)
    if compare.is_close(logits, want, **FLOAT32):
        return
    seen = compare.difference_summary(logits, want, **FLOAT32)
    lead = f"with the notebook's GPT's weights, your GPT's logits differ ({seen})"
    blamed = _blame_notebook_05(r, blocks, final_norm)
    if blamed:
        raise Fail(f"{lead}. {blamed[0]}", blamed[1])
    label = one_diagnosis(logits, variants, **FLOAT32)
    if label is not None:
        raise Fail(f"{lead}. {hint_for(label)}", [label] if label in CATALOGUE else [])
    raise Fail(
        f"{lead}. Its blocks and final layer norm are right on their own, so look at how GPT "
        "puts them together: tok_emb(idx) + pos_emb(positions), every block in order with the "
        "causal mask, then ln_f, then head."
    )


def _blame_notebook_05(r, blocks, final_norm):
    """(sentence, ids) when the model's own blocks or final norm give wrong values alone."""
    parts = r.decode(r.raw.get("parts")) if isinstance(r.raw.get("parts"), dict) else None
    if not isinstance(parts, dict):
        return None
    ln_f = _norm_at_fault(r, parts, final_norm)
    if ln_f and ln_f[1]:  # a known layer-norm mistake: the blocks' norms have it too
        return ln_f
    outs = parts.get("blocks") or []
    flags = parts.get("norm_first") or []
    for i, (out, want) in enumerate(zip(outs, blocks, strict=False)):
        got = _part_value(r, out)
        if got is None or compare.is_close(got, want["expected"], **FLOAT32):
            continue
        if compare.is_close(got, want["post_norm"], **FLOAT32):
            if i < len(flags) and flags[i] is False:
                return (
                    "Your GPT builds its blocks as post-norm (norm_first=False); the notebook's "
                    "GPT stacks pre-norm blocks: TransformerBlock(..., norm_first=True).",
                    ["norm-order-swapped"],
                )
            return (
                "Block "
                f"{i} computes post-norm although it was built with norm_first=True: your "
                "TransformerBlock from notebook 05 mixes up the two orders. Fix it there "
                "(its checks in notebook 05 say more), then run this notebook again.",
                ["norm-order-swapped"],
            )
        label = one_diagnosis(got, want["variants"], **FLOAT32)
        return (
            f"Run alone on one input, block {i} of your GPT already gives other values than the "
            "notebook's block with the same weights: your TransformerBlock from notebook 05 is "
            "wrong, and GPT inherits it. Fix it there (its checks in notebook 05 say more), "
            "then run this notebook again." + (" " + hint_for(label) if label else ""),
            [label] if label in CATALOGUE else [],
        )
    return ln_f


def _norm_at_fault(r, parts, final_norm):
    """(sentence, ids) when the model's final norm, run alone, is not layer norm."""
    got = _part_value(r, parts.get("ln_f"))
    if got is None or compare.is_close(got, final_norm["expected"], **FLOAT32):
        return None
    label = one_diagnosis(got, final_norm["variants"], **FLOAT32)
    return (
        "Run alone on one input, its final LayerNorm gives other values than layer norm: "
        "your layer_norm (or LayerNorm) from notebook 05 is wrong, and GPT inherits it. Fix "
        "it there (its checks in notebook 05 say more), then run this notebook again."
        + (" " + hint_for(label) if label else ""),
        [label] if label in CATALOGUE else [],
    )


def _part_value(r, part):
    if not isinstance(part, dict) or "value" not in part:
        return None
    try:
        return compare.as_array(part["value"]).astype(np.float64)
    except (Fail, TypeError, ValueError):
        return None


def _architecture_message(facts, sizes):
    """What does not fit the notebook's GPT, from the harness's plain facts."""
    V, d, d_ff = sizes["vocab_size"], sizes["d_model"], sizes["d_ff"]
    if "no_blocks" in facts:
        return (
            f"the grader could not find your GPT's {facts['no_blocks']} blocks: keep them in "
            "one nn.ModuleList, blocks = nn.ModuleList(TransformerBlock(...) for _ in "
            "range(n_layers)).",
            [],
        )
    if "block" in facts:
        mine = _shapes(facts.get("block"))
        theirs = _shapes(facts.get("reference"))
        if (d, d) in mine and (d_ff, d) not in mine and (d_ff, d) in theirs:
            return (
                f"the feed-forward layers of your GPT's blocks have shapes ({d}, {d}): with "
                f"d_ff=None, d_ff should default to 4 * d_model = {d_ff}, so fc1 is "
                f"({d_ff}, {d}) and fc2 ({d}, {d_ff}).",
                ["gpt-d-ff-default"],
            )
        extra = sorted(set(mine) - set(theirs))
        return (
            "a block of your GPT has parameters of shapes the notebook's block does not "
            f"({', '.join(map(str, extra[:4])) or 'a different layout'}): the notebook's block "
            "has attn (four d x d projections), ff (fc1, fc2) and two layer norms.",
            [],
        )
    extra = [e for e in facts.get("extra") or [] if isinstance(e, list) and len(e) == 2]
    missing = facts.get("missing") or []
    bias = [name for name, shape in extra if list(shape) == [V]]
    if bias:
        return (
            f"your GPT has a parameter {str(bias[0])[:60]} of shape ({V},) that the notebook's "
            "GPT does not have: its output layer has no bias, head = nn.Linear(d_model, "
            "vocab_size, bias=False).",
            ["gpt-head-bias"],
        )
    if "ln_f" in missing and not extra:
        return (
            "your GPT has no final layer norm: the notebook's GPT applies ln_f = "
            "LayerNorm(d_model) after the last block, before the head.",
            [],
        )
    if "pos" in missing:
        return (
            "your GPT has no position embedding, a table of block_size rows of width d_model "
            "(pos_emb = nn.Embedding(block_size, d_model)).",
            [],
        )
    if "head" in missing or "tok" in missing:
        return (
            f"your GPT needs a token embedding (vocab_size, d_model) and an output layer "
            f"nn.Linear(d_model, vocab_size, bias=False); the grader found {len(missing)} of "
            "them missing.",
            [],
        )
    shown = ", ".join(f"{str(n)[:40]} {tuple(s)}" for n, s in extra[:3])
    return (
        f"your GPT has parameters the notebook's GPT does not have: {shown}. Is every layer "
        "you build used, and does it follow the notebook's list (embeddings, blocks, ln_f, head)?",
        [],
    )


def _shapes(named):
    out = []
    for item in named or []:
        if isinstance(item, list) and len(item) == 2 and isinstance(item[1], list):
            out.append(tuple(int(s) for s in item[1]))
    return out


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


@judge
def sliced_loss(responses, *, what, expected, positions):
    """The loss of views that are not contiguous, as held_out_loss passes them."""
    r = responses[0]
    if r.error:
        view = "view" in r.error["message"]
        raise Fail(
            compare.error_message(r, what)
            + ". The notebook calls lm_loss on slices such as logits[:, 2:], which are not "
            "contiguous in memory"
            + (": .view cannot flatten them, .reshape (or .flatten) can." if view else ".")
        )
    got = compare.returned(r, what, framework="torch")
    if got.size != 1:
        raise Fail(
            f"{what} has shape {tuple(got.shape)}: the loss is one number, the mean over all "
            f"{positions} positions."
        )
    compare.assert_close(got.reshape(()), np.float64(expected), what, **FLOAT32)


def _tokens(r, what, shape, vocab_size):
    if r.error:
        raise Fail(compare.error_message(r, what))
    got = compare.returned(r, what, framework="torch")
    compare.assert_shape(got, shape, what)
    if got.dtype.kind not in "iu":
        raise Fail(f"{what} holds {got.dtype} values; token ids are integers (torch.long).")
    if got.min() < 0 or got.max() >= vocab_size:
        raise Fail(f"{what} holds ids outside 0..{vocab_size - 1}.")
    return got.astype(np.int64)


@judge
def generate_reproducible(responses, *, what, shape, vocab_size, greedy=None):
    """Three calls: two with generators seeded alike, one seeded differently. `greedy`: the
    tokens an argmax gives, which no generator changes either (said as such, not as a
    generator left unused)."""
    first, again, other = (_tokens(r, what, tuple(shape), vocab_size) for r in responses)
    if greedy is not None and all(np.array_equal(t, greedy) for t in (first, again, other)):
        raise Fail(
            f"{what}: every call gave the most likely token at each step, whatever the seed: "
            "generate should sample from the distribution (torch.multinomial), not take the "
            "argmax."
        )
    if not np.array_equal(first, again):
        differ = int((first != again).sum())
        raise Fail(
            f"{what}: two calls with generators seeded alike gave different tokens ({differ} "
            f"of {first.size} differ). Draw every random choice from `generator` "
            "(torch.multinomial(probs, 1, generator=generator)), not from torch's global "
            "random state, so that seeded samples can be reproduced.",
            ["generator-not-used"],
        )
    if np.array_equal(first, other):
        raise Fail(
            f"{what}: generators seeded differently gave exactly the same {first.size} tokens: "
            "the sampling does not use `generator` (is a seed set inside generate?).",
            ["generator-not-used"],
        )


@judge
def gpt_dropout(responses, *, p, shape, in_eval=()):
    """GPT(dropout=0) and GPT(dropout=p) built with one seed, in eval mode, agree; in train mode
    GPT(dropout=p) gives two identical sequences of one batch different logits."""
    shape = tuple(shape)
    without = gpt_logits(responses[0], "GPT(..., dropout=0) in eval mode", shape)
    reads_its_input(without, "GPT(..., dropout=0) in eval mode")
    what = f"GPT(..., dropout={p:g})"
    with_p = gpt_logits(responses[1], f"{what} in eval mode", shape)
    if not compare.is_close(with_p, without, **FLOAT32):
        worst = float(np.abs(with_p - without).max())
        raise Fail(
            f"in eval mode, {what} gives different logits from GPT(..., dropout=0) built with "
            f"the same seed (largest difference {fmt(worst)}): {IN_EVAL_MODE}."
        )
    trained = gpt_logits(responses[2], f"{what} in train mode", shape)
    if np.array_equal(trained[0], trained[1]):
        raise Fail(
            f"in train mode, {what} gives two identical sequences exactly the same logits: "
            "dropout is not applied. Pass dropout to every TransformerBlock, and apply "
            "nn.Dropout(dropout) to the sum of the two embeddings."
        )
    # responses[3:]: in train mode, then in eval mode, the settings of the probe: blocks
    # passing their input through; embeddings all zero; both (nothing left before ln_f)
    where = [
        (
            "embedding-dropout-missing",
            "with every block passing its input through (the last layers of attention and of "
            "the feed-forward network zero), two identical sequences get the same logits: "
            "nothing drops entries of the embeddings",
            False,
        ),
        (
            "block-dropout-not-passed",
            "with the embeddings of every token and position zero (so dropout on the "
            "embeddings has nothing to drop), two identical sequences get the same logits: "
            "the blocks drop nothing",
            False,
        ),
        (
            "dropout-after-final-norm",
            "with the embeddings zero AND every block passing its input through, nothing "
            "before the final layer norm is left to drop, yet two identical sequences get "
            "different logits: something after the blocks drops entries",
            True,
        ),
    ]
    n = min(len(where), len(in_eval), (len(responses) - 3) // 2)
    trains, evals = responses[3 : 3 + n], responses[3 + n : 3 + 2 * n]
    order = [2, 0, 1] if n == 3 else list(range(n))  # after the norm first: it fools the others
    for k in order:
        r, (id_, seen, differing_is_wrong) = trains[k], where[k]
        if "role_mismatch" in r.raw or r.error:
            continue  # the architecture case says why the weights could not be placed
        try:
            right = compare.is_close(
                gpt_logits(evals[k], what, (2, *shape[1:])), in_eval[k], **FLOAT32
            )
        except Fail:
            right = False
        if not right:
            continue  # wrong even in eval mode: the architecture case says how
        logits = gpt_logits(r, f"{what} in train mode", (2, *shape[1:]))
        if np.array_equal(logits[0], logits[1]) != differing_is_wrong:
            raise Fail(f"in train mode, {what}: {seen}. " + explain([id_]), [id_])


ORDER_TOL = 1e-3  # of the logits' spread: no positions gives ~1e-6, the reference >= 6e-2


@judge
def gpt_positions(responses, *, shape, swaps):
    """A one-block GPT, every parameter jittered: swapping two earlier tokens must move the
    logits at the last position (which attends to all of them). Without position information
    it cannot tell the two orders apart."""
    what = "GPT(..., n_layers=1) on a sequence and on copies with two earlier tokens swapped"
    logits = gpt_logits(responses[0], what, tuple(shape))
    last = logits[:, -1]
    spread = float(last[0].std())
    if spread == 0.0:
        raise Fail(f"{what}: every logit at the last position is the same number.")
    moved = max(float(np.abs(last[k + 1] - last[0]).max()) for k in range(len(swaps)))
    if moved <= ORDER_TOL * spread:
        raise Fail(
            f"{what}: the logits at the last position stay the same whichever order the "
            "earlier tokens come in, so the model cannot tell where a token is. Add a position "
            "embedding for positions 0..T-1 to the token embeddings before the blocks."
        )
