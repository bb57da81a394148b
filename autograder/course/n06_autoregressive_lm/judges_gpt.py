"""The judges of notebook 06's GPT by its behaviour (registered as "lm_judges.<name>", like
judges.py's): shapes, causality, a ValueError past block_size, gradients, the initial loss, a
short training run, dropout in the right places and positions that matter. Plain data only.
"""

import math

import numpy as np

from autograder.course.n06_autoregressive_lm.judges import _plain
from autograder.course.torch_shared.checks import explain
from autograder.course.torch_shared.checks_modules import IN_EVAL_MODE, gpt_logits
from autograder.course.torch_shared.checks_sampling import cross_entropy
from autograder.judging import compare, judge
from autograder.judging.base import Fail, Response
from autograder.judging.compare import FLOAT32, fmt
from autograder.results import NOT_IMPLEMENTED


@judge
def gpt_shapes(responses, *, calls):
    """calls: [what, expected shape] per request."""
    for i, (r, (what, shape)) in enumerate(zip(responses, calls, strict=True)):
        if i > 0 and r.error and not responses[0].error:
            raise Fail(
                compare.error_message(r, what).rstrip(".") + ". It works for T = block_size, "
                "so something is sized for block_size. " + explain(["gpt-fixed-length"]),
                ["gpt-fixed-length"],
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
        said = (
            f"a sequence of {T + 1} tokens (block_size {T}) raised {r.error['type']}; the "
            "notebook asks for a ValueError with a clear message, checked at the start of "
            "forward"
        )
        if r.error["type"] == "IndexError":  # the position table's lookup, past its last row
            raise Fail(
                said + ". " + explain(["gpt-no-length-check"]),
                ["gpt-no-length-check"],
                fraction=0.5,
            )
        raise Fail(said + ".", fraction=0.5)
    raise Fail(
        f"a sequence of {T + 1} tokens went through a GPT with block_size {T} without an "
        "error. " + explain(["gpt-no-length-check"]),
        ["gpt-no-length-check"],
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
            "earlier tokens come in, so the model cannot tell where a token is. Add the position "
            "embeddings of the positions 0..T-1 (whatever tokens stand there) to the token "
            "embeddings before the blocks."
        )
