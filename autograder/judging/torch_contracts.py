"""Judges of what the notebooks' later cells rely on (05-06): plain data in, a verdict out.

A function can return the right values on the inputs of its value checks and still break a cell
further down: a positional encoding in float64 that a float32 block then rejects, a loss that
cannot take the sliced logits `logits[:, 2:]`, a tokenizer that raises KeyError where a cell
catches ValueError, sampling that ignores the `generator`, dropout that never acts, acts in eval
mode, or drops the residual stream itself. Each judge here checks one such contract, by
behaviour, from the answers to requests that call the student's code the way those cells do.
The probes (autograder/probes/transformer_block.py, autoregressive_lm.py) build the cases; as
with the other judges, everything a verdict needs (the reference's values) is stored in the
case, and no model answer, probe or variant is imported here.

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

from autograder.judging import compare, judge
from autograder.judging.base import Fail
from autograder.judging.compare import FLOAT32, describe_encoded, fmt
from autograder.judging.torch_checks import explain, gpt_logits, module_answer
from autograder.judging.torch_judges import known_sample_encodes, reads_its_input

PE_TOL = {"rtol": 1e-4, "atol": 5e-5}  # sin of angles up to ~30 rad computed in float32
DROP_TOL = 0.01
MEAN_TOL = 0.1
Z_BOUND = 6.0
IN_EVAL_MODE = (
    "dropout acts only in train mode: nn.Dropout switches itself off after model.eval(); "
    "F.dropout needs training=self.training"
)


def _pct(x):
    return f"{fmt(100 * x)} %"


def _dtype(response):
    value = response.raw.get("value")
    return value.get("dtype") if isinstance(value, dict) else None


# ================================================================ 05: positional encoding


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


# ================================================================ 05: modules


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


# ================================================================ 06: CharTokenizer


def _object_steps(r, label="CharTokenizer"):
    """The steps of an object request, after the errors every step shares."""
    if r.error:
        raise Fail(compare.error_message(r, f"{label}(text)"))
    steps = r.raw["steps"]
    for step in steps:
        if (step.get("error") or {}).get("type") == "NotImplementedError":
            raise Fail(f"{label} is not implemented yet (it raises NotImplementedError).")
    return steps


@judge
def tokenizer_value_error(responses, *, bad, unknown, sample=None, sample_ids=None):
    """encode(bad) raises ValueError: the exception the notebook's cells catch (and, for the
    points, encode works on known characters)."""
    step, *rest = _object_steps(responses[0])
    if sample is not None and rest:
        known_sample_encodes(responses[0], sample, sample_ids)
    if step.get("missing"):
        raise Fail(f"{step['missing']} does not exist.")
    err = step.get("error")
    if not err:
        raise Fail(
            f"encode({bad!r}) returned {describe_encoded(step.get('value'))} although "
            f"{unknown!r} is not in the vocabulary: raise a ValueError that names it."
        )
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


# ================================================================ 06: lm_loss


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


# ================================================================ 06: generate


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
def generate_reproducible(responses, *, what, shape, vocab_size):
    """Three calls: two with generators seeded alike, one seeded differently."""
    first, again, other = (_tokens(r, what, tuple(shape), vocab_size) for r in responses)
    if not np.array_equal(first, again):
        differ = int((first != again).sum())
        raise Fail(
            f"{what}: two calls with generators seeded alike gave different tokens ({differ} "
            f"of {first.size} differ). Draw every random choice from `generator` "
            "(torch.multinomial(probs, 1, generator=generator)), not from torch's global "
            "random state, so that seeded samples can be reproduced."
        )
    if np.array_equal(first, other):
        raise Fail(
            f"{what}: generators seeded differently gave exactly the same {first.size} tokens: "
            "the sampling does not use `generator` (is a seed set inside generate?)."
        )


# ================================================================ 06: GPT


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
