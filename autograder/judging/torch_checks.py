"""What the PyTorch judges (notebooks 05-06) share, on plain data only.

Everything here works in the parent on what the harness answered (decoded to NumPy) and on the
plain data a probe stored at build time: the reference's outputs and gradients, and the outputs
of the known-wrong variants as a list of (misconception id, output) pairs. Nothing here runs a
model answer or a variant.

    diagnose(got, variants, rtol, atol)     # the ids whose stored output `got` matches
    close_or_diagnose(got, expected, variants, what)   # Fail naming the mistake, or pass
    module_answer(response, "FeedForward", what)       # built, loaded, ran (or a Fail)
    grads_match(response, reference, "FeedForward")    # gradients against stored ones
    chi_square(counts, p), chi_square_limit(dof)       # sampling tests
"""

import math

import numpy as np

from autograder.judging import compare
from autograder.judging.base import Fail
from autograder.judging.compare import FLOAT32, shape_str
from autograder.misconceptions import CATALOGUE
from autograder.results import NOT_IMPLEMENTED

# ---------------------------------------------------------------- diagnosis


def _close(got, expected, rtol, atol):
    """got matches a variant's output; the variant's NaN entries (e.g. a row the mistake masks
    entirely) match anything, since students' code differs there (-inf gives NaN, -1e9 not)."""
    try:
        got = np.asarray(got, dtype=float)
    except (TypeError, ValueError):
        return False
    expected = np.asarray(expected, dtype=float)
    if got.shape != expected.shape or np.isnan(expected).all():
        return False
    with np.errstate(invalid="ignore"):
        ok = np.isclose(got, expected, rtol=rtol, atol=atol, equal_nan=True) | np.isnan(expected)
    return bool(np.all(ok))


def diagnose(got, variants, rtol=1e-4, atol=1e-5):
    """The misconception ids whose variant output matches `got` (first match per id, in order).

    `variants` is a list of (id, expected) pairs computed when the case was built; expected may
    be a tuple of arrays compared item by item with the items of `got` (a tuple too). Several
    variants may share one id.
    """
    found = []
    for id_, expected in variants:
        if id_ in found or expected is None:
            continue
        if isinstance(expected, tuple | list):
            if not isinstance(got, tuple | list) or len(got) != len(expected):
                continue
            if all(
                e is None or _close(g, e, rtol, atol) for g, e in zip(got, expected, strict=True)
            ):
                found.append(id_)
        elif _close(got, expected, rtol, atol):
            found.append(id_)
    return found


def explain(ids, lead="This is what happens with"):
    """'This is what happens with <mistake>: <hint>' for the first id (ids in SPEC's catalogue)."""
    known = [i for i in ids if i in CATALOGUE]
    if not known:
        return ""
    m = CATALOGUE[known[0]]
    return f"{lead} {m.mistake}: {m.hint}"


NON_CATALOGUE_HINTS = {
    "rope-pairs-concatenated": (
        "Each pair is turned by the right angle, but the results come back as every pair's "
        "first feature, then every pair's second one: put each rotated pair back in its own "
        "two places, 2i and 2i + 1."
    ),
    "other-activation": "This is what the other activation gives: check which one `activation` selects.",
    "gelu-tanh": (
        "This is GELU's tanh approximation; the notebook's gelu is the exact one (F.gelu's "
        "default, as in nn.TransformerEncoderLayer)."
    ),
    "ln-swapped": "This is what happens when ln1 and ln2 are used the wrong way round: ln1 goes with attention, ln2 with the feed-forward network.",
    "ln1-twice": (
        "This is what happens when ln1 normalises the input of both sublayers and ln2 is "
        "never used: the feed-forward sublayer goes with ln2."
    ),
    "ln2-twice": (
        "This is what happens when ln2 normalises the input of both sublayers and ln1 is "
        "never used: the attention sublayer goes with ln1."
    ),
    "mask-not-passed": (
        "This is what your block gives when its attention ignores the mask: pass mask on to "
        "self.attn(..., mask)."
    ),
    "norm-inside-residual": (
        "This is what happens when the layer norm is applied to the sublayer's output before "
        "the residual addition, x + ln1(attn(x)): post-norm normalises the sum, "
        "ln1(x + attn(x)), and pre-norm the sublayer's input, x + attn(ln1(x))."
    ),
    "layernorm-no-eps": (
        "This is layer norm without eps: dividing by the plain standard deviation, which "
        "divides by zero for a token whose features are all equal. eps goes inside the square "
        "root: sqrt(var + eps)."
    ),
    "layernorm-eps-ignored": (
        "This is what eps=1e-5 gives, whatever eps was passed: use the eps argument."
    ),
    "pe-base-ignored": (
        "This is what base=10000 gives, whatever base was passed: use the base argument."
    ),
    "query-from-k_proj": (
        "This is what happens when the queries are computed with k_proj: q = q_proj(x)."
    ),
    "key-from-q_proj": (
        "This is what happens when the keys are computed with q_proj: k = k_proj(context)."
    ),
    "value-from-k_proj": (
        "This is what happens when the values are computed with k_proj: v = v_proj(context)."
    ),
    "probabilities-not-log": (
        "This is the loss of probabilities instead of log-probabilities: F.nll_loss expects "
        "log_softmax(logits), and F.cross_entropy takes the raw logits."
    ),
    "layernorm-sqrt-of-std": (
        "This is the lecture's misprint, dividing by the square root of the standard "
        "deviation: that leaves a standard deviation of sqrt(sigma). Divide by "
        "sqrt(var + eps), the standard deviation itself."
    ),
    "layernorm-affine-missing": (
        "This is the normalised x without the gain and the shift: multiply by weight, then "
        "add bias."
    ),
    "softmax-over-heads": (
        "This is a softmax over the heads axis (dim=1): each query's weights over the keys, "
        "the last axis, sum to 1."
    ),
    "activation-after-output": (
        "This is the activation applied after fc2: it goes between the two layers, "
        "fc2(act(fc1(x)))."
    ),
    "gpt-final-norm-unused": (
        "This is what the notebook's GPT gives without its final layer norm: apply ln_f to the "
        "last block's output, then the head."
    ),
    "gpt-positions-unused": (
        "This is what the notebook's GPT gives without the position embeddings: add "
        "pos_emb(positions) to the token embeddings before the blocks."
    ),
    "gpt-embeddings-scaled": (
        "This is what the notebook's GPT gives with the embeddings multiplied by "
        "sqrt(d_model): the notebook's GPT adds them as they are."
    ),
    "shifted-again": (
        "This is the loss with the targets shifted once more inside lm_loss: get_batch already "
        "paired position t with the token at t + 1, so compare logits[:, t] with targets[:, t]."
    ),
}


def one_diagnosis(got, variants, rtol=1e-4, atol=1e-5):
    """The one label whose stored output `got` matches, or None.

    A diagnosis is only specific when exactly one known mistake (catalogue id or not) gives
    this output: when two different mistakes give the same numbers on these inputs, naming
    either could send the student after the wrong bug, so neither is named.
    """
    labels = diagnose(got, variants, rtol, atol)
    return labels[0] if len(labels) == 1 else None


def hint_for(label, fallback=""):
    """What to tell a student whose answer matched `label`: the catalogue's explanation, the
    NON_CATALOGUE_HINTS sentence, or the fallback."""
    if label is None:
        return fallback
    return explain([label]) or NON_CATALOGUE_HINTS.get(label, "") or fallback


def close_or_diagnose(got, expected, variants, what, tol=FLOAT32, hint="", fraction=0.0):
    """Pass when got matches expected; otherwise Fail naming the misconception it matches.

    `variants` is a list of (id, expected). At most one id goes into the Fail, and only when
    that mistake alone explains the output (one_diagnosis) and it is in the catalogue; others
    (e.g. "other-activation") just explain themselves through NON_CATALOGUE_HINTS. Without a
    specific match the message says what was observed, plus `hint`.
    """
    try:
        if isinstance(expected, tuple | list):
            for g, e, w in zip(got, expected, what, strict=True):
                compare.assert_close(g, e, w, **tol)
        else:
            compare.assert_close(got, expected, what, **tol)
    except Fail as failure:
        label = one_diagnosis(got, variants, **tol)
        message = failure.message
        extra = hint_for(label, hint)
        if extra:
            message = message.rstrip(".") + ". " + extra
        ids = [label] if label in CATALOGUE else []
        raise Fail(message, ids, fraction) from None


# ---------------------------------------------------------------- module answers

# What the notebook calls the parameters of each module (the names the grader loads weights
# by), said when a name is missing or misshapen. Students never see SPEC: say "the notebook".
SPEC_NAMES = {
    "MultiHeadAttention": (
        "the notebook names the projections q_proj, k_proj, v_proj and out_proj, "
        "each nn.Linear(d_model, d_model, bias=bias)"
    ),
    "FeedForward": (
        "the notebook names the two layers fc1 = nn.Linear(d_model, d_ff) and "
        "fc2 = nn.Linear(d_ff, d_model)"
    ),
    "TransformerBlock": (
        "the notebook names the sub-modules attn (your MultiHeadAttention), ff (your "
        "FeedForward), ln1 and ln2 (layer norms with a weight and a bias of shape (d_model,))"
    ),
}

_ORDER = ("attn", "ff", "ln1", "ln2", "q_proj", "k_proj", "v_proj", "out_proj", "fc1", "fc2")


def _spec_order(name):
    parts = name.split(".")
    return [_ORDER.index(p) if p in _ORDER else len(_ORDER) for p in parts[:-1]] + [
        parts[-1] != "weight"
    ]


def module_answer(response, cls_name, what):
    """Check a module answer: built, weights loaded under SPEC's names, forward ran."""
    raw = response.raw
    if "state_mismatch" in raw:
        own = response.decode(raw.get("state_names")) or {}
        absent = raw["state_mismatch"].get("absent", [])
        wrong = raw["state_mismatch"].get("wrong_shape", [])
        spec = SPEC_NAMES.get(cls_name, "use the attribute names the notebook gives")
        if not own:
            raise Fail(
                f"{cls_name} is not implemented yet: it creates no parameters ({spec}).",
                reason=NOT_IMPLEMENTED,
            )
        absent = sorted(absent, key=_spec_order)
        if absent:
            names = ", ".join(sorted(own)[:8]) or "no parameters at all"
            more = " ..." if len(own) > 8 else ""
            raise Fail(
                f"your {cls_name} has no {absent[0]}"
                + (
                    f" (nor {len(absent) - 1} more of the notebook's names)"
                    if len(absent) > 1
                    else ""
                )
                + f"; {spec}. Its parameters are: {names}{more}."
            )
        name = wrong[0]
        raise Fail(
            f"your {cls_name}'s {name} has shape {shape_str(own[name])}, which does not fit "
            f"the notebook's layout; {spec}."
        )
    if response.error:
        raise Fail(compare.error_message(response, what))
    return response


def grads_match(response, reference, cls_name, tol=None):
    """Check the gradients a module answer carries against the reference's, stored as
    {"output", "y_index", "input_grads", "param_grads"} when the case was built."""
    ref_output, y_index = reference["output"], reference["y_index"]
    raw = response.raw
    value = response.decode(raw.get("value"))
    if isinstance(value, tuple | list) and y_index is not None:
        value = value[y_index] if len(value) > y_index else None
    if not compare.is_close(value, ref_output, **FLOAT32):
        raise Fail(
            f"the output of your {cls_name} is already wrong here (the value checks say how), "
            "so its gradients are too: fix the values first."
        )
    if "backward_error" in raw:
        err = raw["backward_error"]
        raise Fail(
            f"backpropagating through your {cls_name} raised {err['type']}: {err['message']}. "
            "Graded torch code must stay differentiable: no .detach(), .numpy(), .item() or "
            "torch.no_grad() on the way from input to output."
        )
    tol = tol or {"rtol": 1e-3, "atol": 1e-4}
    inputs = response.decode(raw.get("input_grads") or [])
    for i, want in enumerate(reference["input_grads"]):
        if want is None:
            continue
        got = inputs[i] if i < len(inputs) else None
        if got is None:
            raise Fail(
                f"no gradient reached the input of your {cls_name}: is the input detached, "
                "or converted to NumPy, on the way to the output?"
            )
        compare.assert_close(np.asarray(got), want, "the gradient of the input", **tol)
    params = response.decode(raw.get("param_grads") or {})
    want_params = reference["param_grads"]
    missing = sorted(set(want_params) - set(params))
    if missing:
        raise Fail(
            f"{missing[0]} of your {cls_name} gets no gradient"
            + (f" (nor {len(missing) - 1} more parameters)" if len(missing) > 1 else "")
            + ": is it used in forward, and used through torch operations?"
        )
    for name, want in want_params.items():
        compare.assert_close(np.asarray(params[name]), want, f"the gradient of {name}", **tol)


def assert_differentiable(response, what):
    """The value came back as a tensor attached to the autograd graph."""
    data = response.raw.get("value")
    if isinstance(data, dict) and "$tensor" in data and not data.get("has_grad_fn"):
        raise Fail(
            f"{what} is not connected to the autograd graph: the input requires a gradient, "
            "but none can flow back to it from the result. Keep every step in torch "
            "operations, without .detach(), .numpy(), .item(), torch.tensor(...) around a "
            "result, or torch.no_grad()."
        )


def input_grads_match(response, what, names, want):
    """The gradients the harness backpropagated to a function's inputs (op "call" with a
    cotangent) against the reference's, `want[i]` for input names[i] (None: no gradient
    expected). The `has_grad_fn` flag (assert_differentiable) says how an answer went wrong;
    these values are what a forged flag cannot fake."""
    raw = response.raw
    if "backward_error" in raw:
        err = raw["backward_error"]
        raise Fail(
            f"backpropagating through {what} raised {err['type']}: {err['message']}. "
            "Graded torch code must stay differentiable: no .detach(), .numpy(), .item() or "
            "torch.no_grad() on the way from input to output."
        )
    got = response.decode(raw.get("input_grads") or [])
    for i, (name, expected) in enumerate(zip(names, want, strict=True)):
        if expected is None:
            continue
        grad = got[i] if i < len(got) else None
        if not isinstance(grad, np.ndarray):
            raise Fail(
                f"no gradient reached {name} through {what}: is it detached, or converted to "
                "NumPy, on the way to the result?"
            )
        compare.assert_close(
            grad, expected, f"the gradient of {what} with respect to {name}", rtol=1e-3, atol=1e-4
        )


def input_grads_flow(response, what, names, want):
    """Gradients reached each input that should get one, finite and not all zero (for an
    answer whose values are already wrong, so its gradients cannot match the reference's)."""
    raw = response.raw
    if "backward_error" in raw:
        input_grads_match(response, what, names, want)  # says the error
    got = response.decode(raw.get("input_grads") or [])
    for i, (name, expected) in enumerate(zip(names, want, strict=True)):
        if expected is None:
            continue
        grad = got[i] if i < len(got) else None
        if not isinstance(grad, np.ndarray) or not np.any(grad) or not np.all(np.isfinite(grad)):
            raise Fail(
                f"no usable gradient reached {name} through {what} (none, all zero, or not "
                "finite): is it detached, or converted to NumPy, on the way to the result?"
            )


def args_after(response):
    """The call's arguments as they were after the call (harness op "call"), decoded. The
    harness always answers them; an answer without them was edited in the student's process."""
    after = response.raw.get("args_after")
    if not isinstance(after, list):
        raise Fail(
            "the grader could not see the inputs after the call (the answer does not carry "
            "them), so it cannot tell whether the function leaves its inputs unchanged."
        )
    return [response.decode(a) for a in after]


# ---------------------------------------------------------------- losses and sampling


def cross_entropy(logits, targets):
    """Mean cross-entropy of logits (..., V) against integer targets (...), in float64 NumPy.

    Computed here, in the parent, from the logits a model returned: never a loss the student's
    process reports.
    """
    z = np.asarray(logits, dtype=np.float64).reshape(-1, np.shape(logits)[-1])
    t = np.asarray(targets, dtype=np.int64).reshape(-1)
    with np.errstate(invalid="ignore", over="ignore"):
        top = z.max(axis=-1, keepdims=True)
        lse = top[:, 0] + np.log(np.exp(z - top).sum(axis=-1))
        return float(np.mean(lse - z[np.arange(len(t)), t]))


def chi_square(counts, p, min_expected=5.0):
    """Pearson's statistic of counts against probabilities p (rare cells pooled) and its dof."""
    counts = np.asarray(counts, dtype=float)
    expected = counts.sum() * np.asarray(p, dtype=float)
    if np.any((expected == 0) & (counts > 0)):
        return math.inf, 1
    order = np.argsort(expected)
    pooled_c, pooled_e, cells_c, cells_e = 0.0, 0.0, [], []
    for i in order:
        if expected[i] == 0:
            continue
        if expected[i] < min_expected:
            pooled_c += counts[i]
            pooled_e += expected[i]
        else:
            cells_c.append(counts[i])
            cells_e.append(expected[i])
    if pooled_e > 0:
        cells_c.append(pooled_c)
        cells_e.append(pooled_e)
    c, e = np.array(cells_c), np.array(cells_e)
    return float(((c - e) ** 2 / e).sum()), max(len(c) - 1, 1)


def chi_square_limit(dof):
    """A generous acceptance bound (about p = 1e-6) for Pearson's statistic with dof degrees."""
    # Wilson-Hilferty: chi2 quantile ~ dof * (1 - 2/(9 dof) + z sqrt(2/(9 dof)))^3, z(1e-6) = 4.75
    a = 2.0 / (9.0 * dof)
    return dof * (1 - a + 4.75 * math.sqrt(a)) ** 3


def sample_fit(counts, p):
    """The sampling check of notebooks 06 and 07: Pearson's statistic of the tokens' `counts`
    against the distribution p, and whether chance explains it (chi_square_limit)."""
    stat, dof = chi_square(counts, np.asarray(p))
    return stat, stat <= chi_square_limit(dof)


NOTEBOOK_05 = ("TransformerBlock", "MultiHeadAttention", "FeedForward", "LayerNorm", "layer_norm")


def gpt_error(r, what):
    """The error a GPT raised. Raised inside notebook 05's classes or functions (the innermost
    of the student's own frames says where), it is said as such, without blaming notebook 05:
    what GPT hands them may be at fault (a mask that is not boolean is named), and 05's own
    checks say whether they are."""
    message = compare.error_message(r, what)
    where = r.error.get("where") or []
    inner = where[-1].split(" in ", 1)[-1] if where else ""
    owner = inner.split(".")[0]
    if owner in NOTEBOOK_05 and len(where) > 1:
        said = r.error.get("message", "").lower()
        if "bool" in said or "bitwise_not" in said:
            return Fail(
                message.rstrip(".") + f". Your {owner} (notebook 05) expects a boolean mask, "
                "and your GPT hands it another kind. " + explain(["mask-not-boolean"]),
                ["mask-not-boolean"],
            )
        message = (
            message.rstrip(".") + f". It is raised inside your {owner} (notebook 05), on "
            f"what your GPT hands it: x of shape (B, T, d_model) and a boolean (T, T) mask. If "
            f"{owner}'s checks in notebook 05 fail, fix it there first."
        )
    return Fail(message)


def gpt_logits(r, what, shape):
    """A GPT's logits of the given shape as float64, or a Fail that says what is wrong with them."""
    if r.error:
        raise gpt_error(r, what)
    got = compare.returned(r, what, framework="torch")
    if got.ndim == 3 and got.shape[:2] == tuple(shape[:2]) and got.shape[2] != shape[2]:
        raise Fail(
            f"{what}: expected shape {tuple(shape)}, got {tuple(got.shape)}: the last axis "
            f"should hold vocab_size = {shape[2]} logits, one per token of the vocabulary. Is "
            "the head, nn.Linear(d_model, vocab_size), applied last?"
        )
    compare.assert_shape(got, shape, what)
    if got.dtype.kind != "f":
        raise Fail(f"{what} holds {got.dtype} values; logits are floats.")
    if not np.all(np.isfinite(got)):
        raise Fail(
            f"{what}: {int((~np.isfinite(got)).sum())} of {got.size} logits are NaN or inf. A row "
            "of attention scores that is entirely masked gives NaN: each position must be "
            "allowed to attend to at least one key (the causal mask is True on and below the "
            "diagonal)."
        )
    return got.astype(np.float64)


def differentiable_and_unchanged(r, what, got, expected, inputs, input_grads):
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


IN_EVAL_MODE = (
    "dropout acts only in train mode: nn.Dropout switches itself off after model.eval(); "
    "F.dropout needs training=self.training"
)


def no_biases(r, cls_name):
    """Fail (llama-bias) when a LLaMA-style module's state holds a bias (notebooks 07 and 08)."""
    names = r.decode(r.raw.get("state_names")) or {}
    biased = sorted(k for k in names if k.endswith("bias"))
    if biased:
        raise Fail(
            f"your {cls_name} has {biased[0]}: its layers are nn.Linear(..., bias=False), "
            "as in LLaMA.",
            ["llama-bias"],
        )
