"""What the PyTorch judges share about a module the student built: it was built, loaded
and ran (module_answer), its gradients (grads_match, input_grads_*), what the model hands on
(gpt_error, gpt_logits), its parameters (no_biases). Plain data only, like checks.py."""

from collections.abc import Sequence
from typing import Any

import numpy as np

from autograder.course.torch_shared.checks import explain
from autograder.judging import compare
from autograder.judging.base import Fail, Response
from autograder.judging.compare import FLOAT32, shape_str
from autograder.results import NOT_IMPLEMENTED

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


def module_answer(response: Response, cls_name: str, what: str) -> Response:
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


def grads_match(
    response: Response, reference: dict, cls_name: str, tol: compare.Tolerance | None = None
) -> None:
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


def assert_differentiable(response: Response, what: str) -> None:
    """The value came back as a tensor attached to the autograd graph."""
    data = response.raw.get("value")
    if isinstance(data, dict) and "$tensor" in data and not data.get("has_grad_fn"):
        raise Fail(
            f"{what} is not connected to the autograd graph: the input requires a gradient, "
            "but none can flow back to it from the result. Keep every step in torch "
            "operations, without .detach(), .numpy(), .item(), torch.tensor(...) around a "
            "result, or torch.no_grad()."
        )


def input_grads_match(
    response: Response, what: str, names: Sequence[str], want: Sequence[Any]
) -> None:
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


def input_grads_flow(
    response: Response, what: str, names: Sequence[str], want: Sequence[Any]
) -> None:
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


def args_after(response: Response) -> list[Any]:
    """The call's arguments as they were after the call (harness op "call"), decoded. The
    harness always answers them; an answer without them was edited in the student's process."""
    after = response.raw.get("args_after")
    if not isinstance(after, list):
        raise Fail(
            "the grader could not see the inputs after the call (the answer does not carry "
            "them), so it cannot tell whether the function leaves its inputs unchanged."
        )
    return [response.decode(a) for a in after]


NOTEBOOK_05 = ("TransformerBlock", "MultiHeadAttention", "FeedForward", "LayerNorm", "layer_norm")


def gpt_error(r: Response, what: str) -> Fail:
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


def gpt_logits(r: Response, what: str, shape: Sequence[int]) -> np.ndarray:
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


def no_biases(r: Response, cls_name: str) -> None:
    """Fail (llama-bias) when a LLaMA-style module's state holds a bias (notebooks 07 and 08)."""
    names = r.decode(r.raw.get("state_names")) or {}
    biased = sorted(k for k in names if k.endswith("bias"))
    if biased:
        raise Fail(
            f"your {cls_name} has {biased[0]}. " + explain(["llama-bias"]),
            ["llama-bias"],
        )
