"""The judges of the PyTorch notebooks (05-06): verdicts from the student's answers and plain data.

Each judge is registered as "torch_judges.<name>" and named by a Judgement that the probes
(autograder/probes/transformer_block.py, autoregressive_lm.py) build with plain-data params:
the reference's outputs and gradients and the variants' outputs, computed when the case was
built, or for property checks (causality, shapes, errors, reproducibility, sampling against the
harness's toy model) only the inputs the parent chose. No judge runs a model answer, and every
number a verdict depends on is computed here from returned values (logits, tokens, tensors),
never taken from a number the student's process reports (a loss, a count).
"""

import math

import numpy as np

from autograder.judging import compare, judge
from autograder.judging.base import Fail, Response
from autograder.judging.compare import FLOAT32, describe_encoded, fmt
from autograder.judging.torch_checks import (
    args_after,
    assert_differentiable,
    chi_square,
    chi_square_limit,
    close_or_diagnose,
    cross_entropy,
    diagnose,
    explain,
    gpt_error,
    gpt_logits,
    grads_match,
    hint_for,
    input_grads_flow,
    input_grads_match,
    module_answer,
    one_diagnosis,
)
from autograder.misconceptions import CATALOGUE

PE_TOL = {"rtol": 1e-4, "atol": 5e-5}  # sin of angles up to ~30 rad computed in float32
# Angles of thousands of radians computed in float64, then rounded to float32: within 6e-8.
# The same angles computed in float32 are off by 1e-4 (half an ulp of 2000).
FAR_TOL = {"rtol": 1e-6, "atol": 2e-6}


# ================================================================ 05: layer_norm


@judge
def layer_norm(responses, *, what, expected, variants, inputs=None, input_grads=None):
    """Values against the reference; with `inputs` ([name, value before the call] for x, weight,
    bias), also differentiable (the gradients that reached the inputs against the reference's
    `input_grads`) and the inputs left unchanged."""
    (r,) = responses
    got = compare.returned(r, what, framework="torch")
    if inputs is None:
        close_or_diagnose(got, expected, variants, what)
        return
    _differentiable_and_unchanged(r, what, got, expected, inputs, input_grads)


def _differentiable_and_unchanged(r, what, got, expected, inputs, input_grads):
    """The case "differentiable, and leaves its inputs unchanged": a modified input or no (right)
    gradient is said as such. With wrong values the gradients are wrong too, so then only their
    presence is checked, and the case fails saying that the inputs and gradients are fine and
    the values are not (their own cases say how): nobody hunts for an in-place bug that is not
    there, and an answer that returns its input untouched earns nothing here."""
    for (name, before), now in zip(inputs, args_after(r), strict=False):
        compare.assert_unchanged(before, np.asarray(now), name)
    assert_differentiable(r, what)
    if input_grads is None:
        return
    names = [name for name, _ in inputs]
    if compare.is_close(got, expected, **FLOAT32):
        input_grads_match(r, what, names, input_grads)
    else:
        input_grads_flow(r, what, names, input_grads)
        raise Fail(
            f"{what} leaves its inputs unchanged and gradients reach them, good. This test's "
            "points also need the right values, which the tests above check: fix those first."
        )


# ================================================================ 05: positional encoding


@judge
def positional_encoding(responses, *, what, expected, variants, d_model, lecture_table):
    got = compare.returned(responses[0], what, framework="torch")
    hint = ""
    if got.shape == expected.shape and d_model >= 2:
        if not compare.is_close(got[:, 0], expected[:, 0], **PE_TOL):
            hint = "column 0 should be sin(k): 0 at position 0, 0.84 at position 1"
        elif not compare.is_close(got[:, 1], expected[:, 1], **PE_TOL):
            hint = "column 1 should be cos(k): 1 at position 0, 0.54 at position 1"
    if got.ndim == 2 and got.shape[1] == 4 and lecture_table:
        hint = (hint + "; " if hint else "") + (
            "the lecture's table (its first 4 rows) has P[1] = [0.84, 0.54, 0.10, 1.00] and "
            "P[3] = [0.14, -0.99, 0.30, 0.96]"
        )
    close_or_diagnose(got, expected, variants, what, tol=PE_TOL, hint=hint)


@judge
def positional_encoding_far(responses, *, what, expected):
    """Many positions: the first rows right and the far ones drifting is float32 angles."""
    got = compare.returned(responses[0], what, framework="torch")
    compare.assert_shape(got, np.shape(expected), what)
    near = min(100, len(expected))
    if compare.is_close(got, expected, **FAR_TOL):
        return
    if compare.is_close(got[:near], expected[:near], **PE_TOL):
        worst = int(np.argmax(np.abs(got.astype(np.float64) - expected).max(axis=1)))
        raise Fail(
            f"{what}: the first {near} positions are right, but the far ones drift (the worst "
            f"is position {worst}, off by {fmt(float(np.abs(got[worst] - expected[worst]).max()))}). "
            + explain(["pe-float32-angles"]),
            ["pe-float32-angles"],
        )
    compare.assert_close(got, expected, what, hint="the shorter cases above say more", **FAR_TOL)


# ================================================================ 05: modules


@judge
def attention_module(responses, *, call, expected, variants, no_bias=False):
    """MultiHeadAttention.forward: (y, attn) against the reference's, diagnosed by variants."""
    what = f"MultiHeadAttention.{call}"
    if responses[0].error and "context=" in call:
        raise Fail(
            compare.error_message(responses[0], what).rstrip(".") + ". With context given, "
            "the keys and values come from context (n_k tokens), the queries from x."
        )
    r = module_answer(responses[0], "MultiHeadAttention", what)
    y, attn = compare.returned(r, what, framework="torch", count=2, names=["y", "attn"])
    if no_bias:
        names = r.decode(r.raw.get("state_names")) or {}
        biased = sorted(k for k in names if k.endswith("bias"))
        if biased:
            raise Fail(
                f"with bias=False your MultiHeadAttention still has {biased[0]}: pass "
                "bias=bias to each nn.Linear."
            )
    want = np.shape(expected[1])
    if attn.shape == want[:1] + want[2:]:  # (B, n, n_k): one pattern, the heads' axis gone
        y_right = compare.is_close(y, expected[0], **FLOAT32)
        raise Fail(
            f"attn of {what} has shape {tuple(attn.shape)}, without the heads' axis"
            + (" (y itself is right)" if y_right else "")
            + f": return the weights of every head, shape {tuple(want)} (B, H, n, n_k), not "
            "their mean over the heads."
        )
    close_or_diagnose(
        (y, attn),
        tuple(expected),
        variants,
        (f"y of {what}", f"attn (B, H, n, n_k) of {what}"),
        hint=_attention_where(attn, expected[1]),
    )


def _attention_where(attn, expected_attn):
    """Which half of attention is wrong, from the weights alone: said when no single known
    mistake explains the output."""
    if compare.is_close(attn, expected_attn, **FLOAT32):
        return (
            "The attention weights attn are right, so the mistake comes after the softmax: "
            "the values (v_proj), attn @ v, putting the heads back side by side, or out_proj"
        )
    return (
        "The attention weights attn are already wrong: look at the queries and keys "
        "(q_proj, k_proj), how they are split into heads, the scale, the mask and the softmax"
    )


@judge
def module_gradients(responses, *, cls_name, what, reference):
    """Gradients of the input and of every parameter against the reference's (stored)."""
    r = module_answer(responses[0], cls_name, what)
    grads_match(r, reference, cls_name)


@judge
def feed_forward(responses, *, shown, activation, expected, variants):
    r = module_answer(responses[0], "FeedForward", f"FeedForward({shown})")
    got = compare.returned(r, "FeedForward.forward(x)", framework="torch")
    gelu = activation == "gelu"
    gelu_tanh = diagnose(got, variants[2:3], **FLOAT32) and gelu
    close_or_diagnose(
        got,
        expected,
        variants if gelu else variants[:2] + variants[3:],
        f"FeedForward({shown}).forward(x)",
        fraction=0.5 if gelu_tanh else 0.0,
    )


@judge
def transformer_block(responses, *, what, expected, variants, halves=None):
    """The block's output against the reference's. A known wiring mistake is named by the
    variants' outputs; otherwise `halves` locates the faulty half by behaviour: the same block
    with one sub-layer switched off (its last linear layer set to zero, so it adds nothing),
    answered by responses[1:], against the reference's output for that switch
    ([[which half is switched off, expected output], ...], computed when the case was built)."""
    r = responses[0]
    if r.error and r.error["type"] == "TypeError" and "tuple" in r.error["message"]:
        raise Fail(
            compare.error_message(r, what).rstrip(".") + ". self.attn(...) returns a pair "
            "(y, attn): add y, its first item, to the residual."
        )
    r = module_answer(r, "TransformerBlock", what)
    got = compare.returned(r, what, framework="torch")
    if compare.is_close(got, expected, **FLOAT32) or one_diagnosis(got, variants, **FLOAT32):
        close_or_diagnose(got, expected, variants, what)
        return
    hint = _block_half_at_fault(responses[1:], halves or [])
    close_or_diagnose(got, expected, variants, what, hint=hint)


_HALVES = {
    "attention": ("attention", "attn.out_proj", "ln1, attn and the residual around them"),
    "feed-forward": ("feed-forward", "ff.fc2", "ln2, ff and the residual around them"),
}


def _block_half_at_fault(responses, halves):
    """Compare the block with its attention off, and with its feed-forward off, to the
    reference's: right with X off means the other half works on its own."""
    right = {}
    for r, (off, want) in zip(responses, halves, strict=False):
        if r.error or "state_mismatch" in r.raw or "value" not in r.raw:
            return ""
        try:
            got = compare.as_array(r.decode(r.raw["value"]))
        except Fail:
            return ""
        right[off] = compare.is_close(got, want, **FLOAT32)
    if set(right) != {"attention", "feed-forward"}:
        return ""

    def switched(off):
        name, layer, _ = _HALVES[off]
        return f"with the {name} sublayer switched off ({layer} set to zero)"

    if right["attention"] and right["feed-forward"]:
        return (
            f"Each half is right on its own ({switched('attention')}, and "
            f"{switched('feed-forward')}), but not together: the feed-forward half should "
            "take h, the attention half's output, not the block's input x"
        )
    for off, other in (("feed-forward", "attention"), ("attention", "feed-forward")):
        if right[off] and not right[other]:
            works, broken = _HALVES[other], _HALVES[off]
            fix = "MultiHeadAttention" if broken[0] == "attention" else "FeedForward"
            return (
                f"{switched(off).capitalize()} your block is right, so its {works[0]} half "
                f"works; the {broken[0]} half is wrong: look at {broken[2]} (if {fix} fails "
                "its own checks, fix it first)"
            )
    return (
        f"It is also wrong {switched('attention')} and {switched('feed-forward')}: look at "
        "what both halves share, the residual connections and where the layer norms sit"
    )


# ================================================================ 06: make_examples


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


# ================================================================ 06: CharTokenizer


def _not_implemented(step, what):
    if (step.get("error") or {}).get("type") == "NotImplementedError":
        raise Fail(f"CharTokenizer is not implemented yet ({what} raises NotImplementedError).")


def _step(r, i, what):
    if r.error:
        raise Fail(compare.error_message(r, "CharTokenizer(text)"))
    step = r.raw["steps"][i]
    _not_implemented(step, what)
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
    _not_implemented(step, "encode")
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


@judge
def tokenizer_unknown(responses, *, bad, unknown, sample=None, sample_ids=None):
    r = responses[0]
    if r.error:
        raise Fail(compare.error_message(r, "CharTokenizer(text)"))
    if sample is not None and len(r.raw.get("steps", [])) > 1:
        known_sample_encodes(r, sample, sample_ids)
    step = r.raw["steps"][0]
    _not_implemented(step, "encode")
    if step.get("missing"):
        raise Fail(f"{step['missing']} does not exist.")
    if not step.get("error"):
        raise Fail(
            f"encode({bad!r}) returned {describe_encoded(step.get('value'))} although {unknown!r} "
            "is not in the vocabulary: raise an error that names the character."
        )
    message = step["error"]["message"]
    if unknown not in message:
        raise Fail(
            f"encode({bad!r}) raised {step['error']['type']}: {message[:80]!r}, which does not "
            f"name the unknown character {unknown!r}: say which character is missing.",
            fraction=0.5,
        )


# ================================================================ 06: get_batch


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


# ================================================================ 06: GPT


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
            raise Fail("GPT is not implemented yet (forward raises NotImplementedError).")
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


# ================================================================ 06: lm_loss


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
    _differentiable_and_unchanged(r, what, got, expected, inputs, input_grads)


# ================================================================ 06: generate


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
    stat, dof = chi_square(counts, p)
    if stat <= chi_square_limit(dof):
        return
    freq = counts / B
    top = int(np.argmax(p))
    seen = f"token {top}, the most likely, came {fmt(100 * freq[top])}% of the time; expected about {fmt(100 * p[top])}%"
    if freq.max() == 1.0 and p.max() < 1.0:
        raise Fail(
            f"{what}: all {B} samples are token {int(np.argmax(freq))}: generate should sample from the distribution (torch.multinomial), not take the argmax."
        )

    def fits(q, loosely=True):
        stat_q, dof_q = chi_square(counts, np.asarray(q))
        return stat_q <= chi_square_limit(dof_q) or (loosely and stat_q < stat / 10)

    if top_p is not None:
        for id_, q in named:
            if not fits(q, loosely=False):
                continue
            if id_ == "ties-by-higher-id":
                raise Fail(
                    f"{what}: of two tokens with the same probability at the edge of the set, "
                    "the one of HIGHER id was kept; keep ties in order of id (a stable sort, "
                    "torch.sort(..., stable=True), keeps them so)."
                )
            raise Fail(f"{what}: {seen}. " + explain([id_]), [id_])
        outside = int(counts[p == 0].sum())
        if p_plain is not None and fits(p_plain, loosely=False) and top_p < 1.0:
            raise Fail(
                f"{what}: the samples follow the whole distribution, {outside} of them outside "
                "the top_p set: keep only the smallest set of likeliest tokens whose "
                "probabilities add up to at least top_p."
            )
    if temperature != 1.0:
        if fits(p_mul):
            raise Fail(
                f"{what}: {seen}. " + explain(["temperature-multiplied"]),
                ["temperature-multiplied"],
            )
        if p_plain is not None and top_p is None:
            stat_one, dof_one = chi_square(counts, np.asarray(p_plain))
            if stat_one <= chi_square_limit(dof_one):
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
def generate_mode(responses, *, what, shape, vocab_size):
    """generate on a model in eval mode: the tokens are valid and the model is still in eval
    mode afterwards."""
    r = responses[0]
    _generated(r, what, tuple(shape), vocab_size)
    after = r.raw.get("training_after") or []
    if after and after[0] is True:
        raise Fail(
            f"{what}: the model came in eval mode and was left in train mode. "
            + explain(["generate-leaves-train-mode"]),
            ["generate-leaves-train-mode"],
        )


# ================================================================ 06: GPT by values


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
            raise Fail("GPT is not implemented yet: it creates no parameters.")
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
