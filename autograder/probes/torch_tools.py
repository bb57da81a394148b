"""What the PyTorch probes (notebooks 05 and 06) share when they BUILD their cases.

Drawing float32 tensors and weights, loading them into a reference module, and working out the
reference's gradients, all as plain data for a Judgement. The judges themselves (and the
checks they share: module answers, gradients, misconception diagnosis) live in
autograder.judging.torch_judges and torch_checks, which run no model answer.
"""

import numpy as np
import torch

from autograder.probes.base import probe


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


def reference_grads(module, args, y_index, cotangent):
    """The reference's output and gradients for (y * cotangent).sum(), as judging.torch_checks.
    grads_match reads them: {"output", "y_index", "input_grads", "param_grads"}."""
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
    return {
        "output": y.detach().double().numpy(),
        "y_index": y_index,
        "input_grads": inputs,
        "param_grads": params,
    }


def np_(t):
    return t.detach().to(torch.float64).numpy()


__all__ = [
    "torch_probe",
    "tensor",
    "linear_state",
    "norm_state",
    "load",
    "reference_grads",
    "np_",
]
