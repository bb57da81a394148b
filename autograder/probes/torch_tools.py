"""Judging helpers shared by the PyTorch probes (notebooks 05 and 06).

Everything runs in the trusted parent on plain data decoded from the harness's answers; the
generic comparisons live in autograder.judging.compare, this module adds what only torch probes need:
drawing float32 tensors, module answers (state names, gradients) and misconception diagnosis.
"""

import numpy as np
import torch

from autograder.judging import compare
from autograder.judging.compare import FLOAT32, fmt, shape_str
from autograder.misconceptions.torch_variants import diagnose, explain
from autograder.probes.base import Fail, probe


def torch_probe(function):
    """probe(function), with the cases built on one torch thread (restored afterwards): the
    reference runs on tiny tensors, and on a loaded machine torch's thread pool made building
    the cases 10-15 times slower."""

    def register(build):
        def built(rng):
            threads = torch.get_num_threads()
            torch.set_num_threads(1)
            try:
                return build(rng)
            finally:
                torch.set_num_threads(threads)

        probe(function)(built)
        return build

    return register


# What SPEC calls the parameters of each module, said when a name is missing or misshapen.
SPEC_NAMES = {
    "MultiHeadAttention": (
        "SPEC names the projections q_proj, k_proj, v_proj and out_proj, "
        "each nn.Linear(d_model, d_model, bias=bias)"
    ),
    "FeedForward": (
        "SPEC names the two layers fc1 = nn.Linear(d_model, d_ff) and fc2 = nn.Linear(d_ff, d_model)"
    ),
    "TransformerBlock": (
        "SPEC names the sub-modules attn (your MultiHeadAttention), ff (your FeedForward), "
        "ln1 and ln2 (layer norms with a weight and a bias of shape (d_model,))"
    ),
}


def tensor(rng, *shape, scale=1.0, shift=0.0, grad=False):
    """A float32 tensor of N(shift, scale^2) draws from the numpy generator rng."""
    t = torch.from_numpy((shift + scale * rng.standard_normal(shape)).astype(np.float32))
    return t.requires_grad_(grad)


def linear_state(rng, prefix, d_in, d_out, bias=True):
    """Weights like a trained layer's: (d_out, d_in) with N(0, 1/d_in), small biases."""
    state = {f"{prefix}.weight": tensor(rng, d_out, d_in, scale=d_in**-0.5)}
    if bias:
        state[f"{prefix}.bias"] = tensor(rng, d_out, scale=0.3)
    return state


def norm_state(rng, prefix, d):
    return {
        f"{prefix}.weight": tensor(rng, d, scale=0.3, shift=1.0),
        f"{prefix}.bias": tensor(rng, d, scale=0.3),
    }


def load(module, state):
    """A reference module with `state` loaded (strict: every SPEC name present)."""
    module.load_state_dict({k: v.detach().clone() for k, v in state.items()}, strict=True)
    return module.eval()


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
        spec = SPEC_NAMES.get(cls_name, "see SPEC for the attribute names")
        if not own:
            raise Fail(f"{cls_name} is not implemented yet: it creates no parameters ({spec}).")
        absent = sorted(absent, key=_spec_order)
        if absent:
            names = ", ".join(sorted(own)[:8]) or "no parameters at all"
            more = " ..." if len(own) > 8 else ""
            raise Fail(
                f"your {cls_name} has no {absent[0]}"
                + (f" (nor {len(absent) - 1} more of SPEC's names)" if len(absent) > 1 else "")
                + f"; {spec}. Its parameters are: {names}{more}."
            )
        name = wrong[0]
        raise Fail(
            f"your {cls_name}'s {name} has shape {shape_str(own[name])}, which does not fit "
            f"SPEC's layout; {spec}."
        )
    if response.error:
        raise Fail(compare.error_message(response, what))
    return response


def close_or_diagnose(got, expected, variants, what, tol=FLOAT32, hint="", fraction=0.0):
    """Pass when got matches expected; otherwise Fail naming the misconception it matches.

    `variants` is a list of (id, expected) as built by torch_variants. Only ids of SPEC's
    catalogue go into the Fail; others (e.g. "other-activation") just explain themselves
    through NON_CATALOGUE_HINTS.
    """
    try:
        if isinstance(expected, tuple):
            for g, e, w in zip(got, expected, what, strict=True):
                compare.assert_close(g, e, w, **tol)
        else:
            compare.assert_close(got, expected, what, **tol)
    except Fail as failure:
        ids = diagnose(got, variants, **tol)
        message = failure.message
        extra = hint
        if ids:
            extra = explain(ids) or NON_CATALOGUE_HINTS.get(ids[0], "") or hint
        if extra:
            message = message.rstrip(".") + ". " + extra
        from autograder.misconceptions import CATALOGUE

        raise Fail(message, [i for i in ids if i in CATALOGUE], fraction) from None


NON_CATALOGUE_HINTS = {
    "other-activation": "This is what the other activation gives: check which one `activation` selects.",
    "gelu-tanh": (
        "This is GELU's tanh approximation; SPEC's gelu is the exact one (F.gelu's default, "
        "as in nn.TransformerEncoderLayer)."
    ),
    "ln-swapped": "This is what happens when ln1 and ln2 are used the wrong way round: ln1 goes with attention, ln2 with the feed-forward network.",
    "probabilities-not-log": (
        "This is the loss of probabilities instead of log-probabilities: F.nll_loss expects "
        "log_softmax(logits), and F.cross_entropy takes the raw logits."
    ),
    "shifted-again": (
        "This is the loss with the targets shifted once more inside lm_loss: get_batch already "
        "paired position t with the token at t + 1, so compare logits[:, t] with targets[:, t]."
    ),
}


def grads_match(response, reference, cls_name, tol=None):
    """Check the gradients a module answer carries against reference_grads(...)'s."""
    ref_output, y_index, ref_input_grads, ref_param_grads = reference
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
    for i, want in enumerate(ref_input_grads):
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
    missing = sorted(set(ref_param_grads) - set(params))
    if missing:
        raise Fail(
            f"{missing[0]} of your {cls_name} gets no gradient"
            + (f" (nor {len(missing) - 1} more parameters)" if len(missing) > 1 else "")
            + ": is it used in forward, and used through torch operations?"
        )
    for name, want in ref_param_grads.items():
        compare.assert_close(np.asarray(params[name]), want, f"the gradient of {name}", **tol)


def reference_grads(module, args, y_index, cotangent):
    """(output, y_index, input grads, parameter grads) of the reference for (y * cotangent).sum()."""
    args = [
        a.detach().clone().requires_grad_(a.requires_grad) if isinstance(a, torch.Tensor) else a
        for a in args
    ]
    module.zero_grad(set_to_none=True)
    out = module(*args)
    y = out if y_index is None else out[y_index]
    (y * cotangent).sum().backward()
    inputs = [
        a.grad.double().numpy() if isinstance(a, torch.Tensor) and a.grad is not None else None
        for a in args
    ]
    params = {
        n: p.grad.double().numpy() for n, p in module.named_parameters() if p.grad is not None
    }
    return y.detach().double().numpy(), y_index, inputs, params


def np_(t):
    return t.detach().to(torch.float64).numpy()


def assert_differentiable(response, what):
    """The value came back as a tensor attached to the autograd graph."""
    data = response.raw.get("value")
    if isinstance(data, dict) and "$tensor" in data and not data.get("has_grad_fn"):
        raise Fail(
            f"{what} is not connected to the autograd graph (the input required grad, the "
            "result has no grad_fn): keep every step in torch operations, without .detach(), "
            ".numpy(), .item(), torch.tensor(...) around a result, or torch.no_grad()."
        )


__all__ = [
    "torch_probe",
    "FLOAT32",
    "fmt",
    "tensor",
    "linear_state",
    "norm_state",
    "load",
    "module_answer",
    "close_or_diagnose",
    "grads_match",
    "reference_grads",
    "np_",
    "assert_differentiable",
]
