"""The judges of notebook 05 (the transformer block, PyTorch): verdicts from plain data.

Registered as "block_judges.<name>" (judging.LEGACY_PREFIXES) and named by the Judgements of
cases*.py: layer_norm, the positional encoding, MultiHeadAttention,
FeedForward and TransformerBlock by their values against the reference's (computed when the case
was built) and the known-wrong variants', and what the later cells rely on: a float32 encoding,
dropout off in eval mode and, in train mode, acting on each sub-layer's output only. No judge
runs a model answer.

Dropout's statistics (block_dropout_train). Dropout with probability p keeps each entry of a
sublayer's output a with probability 1 - p, scaled by 1 / (1 - p), and sets it to 0 otherwise.
One sequence is sent as R copies in one batch, in train mode, with the other sublayer's last
layer zeroed, so that the block's output minus x is exactly the dropped sublayer output:
- the fraction f of exact zeros among N = R * n * d entries is Binomial(N, p) / N for a right
  answer; it must lie within DROP_TOL = 0.01 of p. Hoeffding: P(|f - p| > 0.01) <= 2 exp(-2 N
  0.01^2) = 2 exp(-32) < 3e-14 for N = 160,000 (R = 2000, n = 5, d = 16);
- the copies' mean, projected on a: S_b = <Y_b, a> / <a, a> per copy, T = mean of S_b, is 1 for a
  right answer. With dropout only on the sublayer's output, S_b lies in [0, 1 / (1 - p)], so
  Hoeffding gives P(|T - 1| > t) <= 2 exp(-2 R t^2 (1 - p)^2) = 2 exp(-22.5) < 4e-10 for t =
  MEAN_TOL = 0.1, R = 2000, p = 0.25. Extra dropout inside the sublayer (on the attention
  weights, inside the feed-forward network) keeps the mean but adds variance: the bound is then
  widened to Z_BOUND = 6 standard errors of T (estimated from the copies; a normal tail of
  2e-9). The mistakes it must catch are far outside: no rescaling gives T = 1 - p = 0.75,
  rescaling by 1 - p gives 0.56.
The seeds are fixed by the case, so a verdict never changes between runs of the same answer.
"""

import numpy as np

from autograder.course.torch_shared.checks import (
    close_or_diagnose,
    diagnose,
    explain,
    one_diagnosis,
)
from autograder.course.torch_shared.checks_modules import (
    IN_EVAL_MODE,
    differentiable_and_unchanged,
    grads_match,
    module_answer,
)
from autograder.judging import compare, judge
from autograder.judging.base import Fail
from autograder.judging.compare import FLOAT32, fmt

PE_TOL: compare.Tolerance = {
    "rtol": 1e-4,
    "atol": 5e-5,
}  # sin of angles up to ~30 rad computed in float32


# Angles of thousands of radians computed in float64, then rounded to float32: within 6e-8.
# The same angles computed in float32 are off by 1e-4 (half an ulp of 2000).
FAR_TOL: compare.Tolerance = {"rtol": 1e-6, "atol": 2e-6}


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
    differentiable_and_unchanged(r, what, got, expected, inputs, input_grads)


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


DROP_TOL = 0.01


MEAN_TOL = 0.1


Z_BOUND = 6.0


def _pct(x):
    return f"{fmt(100 * x)} %"


def _dtype(response):
    value = response.raw.get("value")
    return value.get("dtype") if isinstance(value, dict) else None


@judge
def float32_encoding(responses, *, what, expected):
    """P is float32 (the embeddings it is added to are), with the right values."""
    r = responses[0]
    got = compare.returned(r, what, framework="torch")
    dtype = _dtype(r)
    if dtype != "float32":
        raise Fail(
            f"{what} has dtype {dtype}, but the token embeddings it is added to are float32 "
            "(PyTorch's default): their sum would be float64, which the float32 layers of a "
            "block reject. Compute in float64 if you like, then convert the result with .float()."
        )
    compare.assert_close(got, expected, what, **PE_TOL)


def _module_output(response, cls_name, what, hint=""):
    """The output of a module request (built, weights loaded, forward ran) as an ndarray."""
    try:
        r = module_answer(response, cls_name, what)
    except Fail as failure:
        if response.error and hint:
            raise Fail(failure.message.rstrip(".") + ". " + hint) from None
        raise
    return compare.returned(r, what, framework="torch").astype(np.float64)


@judge
def module_values(responses, *, cls_name, what, expected, hint):
    """One forward of the student's module against the reference's output; `hint` says why
    this call matters when it raises."""
    got = _module_output(responses[0], cls_name, what, hint)
    compare.assert_close(got, expected, what, **FLOAT32)


@judge
def block_dropout_eval(responses, *, p, expected, labels):
    """Per label (pre-norm, post-norm): a block with dropout=0 and one with dropout=p, the same
    weights, both in eval mode. They must agree, and equal the reference's output."""
    for k, label in enumerate(labels):
        what0 = f"the {label} TransformerBlock(..., dropout=0) in eval mode"
        what = f"the {label} TransformerBlock(..., dropout={p:g}) in eval mode"
        without = _module_output(responses[2 * k], "TransformerBlock", what0)
        with_p = _module_output(responses[2 * k + 1], "TransformerBlock", what)
        if without.shape == with_p.shape and not compare.is_close(with_p, without, **FLOAT32):
            worst = float(np.abs(with_p - without).max())
            raise Fail(
                f"{what} gives a different output from the same block with dropout=0 (largest "
                f"difference {fmt(worst)}): {IN_EVAL_MODE}."
            )
        compare.assert_close(
            without,
            np.asarray(expected[k]),
            f"the output of {what0}",
            hint="the block is wrong even without dropout: see its value checks",
            **FLOAT32,
        )


def _changed(got, want):
    """(entries that differ, of which set to 0) between two arrays of one shape."""
    differ = ~(np.abs(got - want) <= FLOAT32["atol"] + FLOAT32["rtol"] * np.abs(want))
    return int(differ.sum()), int((differ & (got == 0)).sum())


def _residual_kept(responses, label, p_residual):
    """Both sublayers' outputs are zero: train mode must give what eval mode gives."""
    what = f"the {label} block in train mode (dropout={p_residual:g})"
    in_eval = _module_output(responses[0], "TransformerBlock", f"the {label} block in eval mode")
    in_train = _module_output(responses[1], "TransformerBlock", what)
    compare.assert_shape(in_train, in_eval.shape, what)
    changed, zeros = _changed(in_train, in_eval)
    if changed:
        result = (
            "return x unchanged" if label == "pre-norm" else "give ln2(ln1(x)), as in eval mode"
        )
        raise Fail(
            f"with both sublayers' outputs zero (the last layers of attention and of the "
            f"feed-forward network hold zero weights), {what} must {result}: only the "
            f"sublayers' outputs are dropped, never the residual path. Yours changed {changed} "
            f"of {in_train.size} entries"
            + (f" ({zeros} of them to 0)" if zeros else "")
            + ": dropout is applied after the residual sum, or to x itself. Apply it to each "
            "sublayer's output before adding it to x."
        )


def _sublayer_dropped(response, label, x, a, p):
    """R copies of x in train mode, the other sublayer zeroed: out - x is Dropout(a)."""
    what = f"the pre-norm TransformerBlock(..., dropout={p:g}) in train mode"
    got = _module_output(response, "TransformerBlock", what)
    x, a = np.asarray(x, dtype=np.float64), np.asarray(a, dtype=np.float64)
    if got.ndim != 3 or got.shape[1:] != x.shape:
        raise Fail(f"{what}: expected shape (copies, {x.shape[0]}, {x.shape[1]}), got {got.shape}.")
    if not np.all(np.isfinite(got)):
        raise Fail(f"{what}: some outputs are NaN or infinite.")
    copies = got.shape[0]
    added = got - x  # what the sublayer added to the residual stream, copy by copy
    if np.all(added == added[0]):
        if compare.is_close(added[0], a, **FLOAT32):
            raise Fail(
                f"{what}: {copies} copies of one sequence all got the full output of the {label}, "
                "as with dropout=0: dropout is not applied. Pass each sublayer's output through "
                "self.dropout (an nn.Dropout(dropout) made in __init__) before adding it to x."
            )
        raise Fail(
            f"{what}: {copies} copies of one sequence all got the same output: each entry must "
            "be dropped on its own, with a new random choice on every call."
        )
    dropped = added == 0
    fraction = float(dropped.mean())
    if abs(fraction - p) > DROP_TOL:
        flipped = (
            " That is about 1 - p: nn.Dropout(p) drops with probability p, it does not keep with it."
            if abs(fraction - (1 - p)) <= DROP_TOL
            else ""
        )
        raise Fail(
            f"{what}: {_pct(fraction)} of the entries the {label} adds to x were dropped (exactly "
            f"0); with dropout={p:g} about {_pct(p)} should be. Dropout acts on each sublayer's "
            "output, before it is added to x." + flipped
        )
    flat, direction = added.reshape(copies, -1), a.ravel()
    per_copy = flat @ direction / float(direction @ direction)
    mean = float(per_copy.mean())
    bound = max(MEAN_TOL, Z_BOUND * float(per_copy.std(ddof=1)) / np.sqrt(copies))
    if abs(mean - 1.0) > bound:
        kept = ~dropped & (np.abs(a) > 1e-3)[None]
        scale = ""
        if kept.any():
            ratio = float(np.median(added[kept] / np.broadcast_to(a, added.shape)[kept]))
            scale = f" The entries kept are about {fmt(ratio)} times their dropout=0 values:"
        raise Fail(
            f"{what}: averaged over {copies} copies, the output of the {label} is {fmt(mean)} "
            f"times its value with dropout=0; it should stay 1 (within {fmt(bound)}).{scale} "
            f"scale the kept entries by 1 / (1 - p) = {fmt(1 / (1 - p))}, as nn.Dropout does, "
            "so that dropout keeps the mean."
        )


@judge
def block_dropout_train(responses, *, p, p_residual, x, sublayers):
    """Train mode. Requests: for each of `sublayers` ([label, its dropout=0 output a]) R copies
    of x with the other sublayer zeroed; then, both sublayers zeroed, pre-norm in eval and
    train mode, post-norm in eval and train mode; then two calls with different seeds."""
    n = len(sublayers)
    _residual_kept(responses[n : n + 2], "pre-norm", p_residual)
    _residual_kept(responses[n + 2 : n + 4], "post-norm", p_residual)
    for response, (label, a) in zip(responses[:n], sublayers, strict=True):
        _sublayer_dropped(response, label, x, a, p)
    what = f"TransformerBlock(..., dropout={p:g}) in train mode"
    first, second = (_module_output(r, "TransformerBlock", what) for r in responses[n + 4 :])
    if np.array_equal(first, second):
        raise Fail(
            f"two calls of {what} on the same input gave the same output: dropout must draw a "
            "new random mask on every call (is a seed set inside forward?)."
        )
