"""What the PyTorch probes (notebooks 05-08) share when they BUILD their cases.

Drawing float32 tensors and weights, loading them into a reference module, and working out the
reference's gradients, all as plain data for a Judgement. The judges themselves live in each
notebook's judges*.py, and the checks they share (module answers, gradients, misconception
diagnosis) in checks*.py beside this file: none of them runs a model answer.
"""

import functools
import hashlib
from collections.abc import Callable, Iterable
from typing import TypeVar

import numpy as np
import torch

from autograder.course.probes import DRAWS_UNSEEN, Case, derive_seed, probe
from autograder.judging.later import Later

Builder = Callable[[np.random.Generator], list[Case]]  # a probe: rng -> its cases
M = TypeVar("M", bound=torch.nn.Module)
T = TypeVar("T")

REDRAWS = 50  # a probe whose requests repeat a visible one this often has a fixed request


def one_thread(work: Callable[..., T]) -> Callable[..., T]:
    """work, run on one torch thread (restored afterwards): a probe's cases and the variants
    that wait (torch_probe, later)."""

    @functools.wraps(work)
    def run(*args, **kwargs):
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return work(*args, **kwargs)
        finally:
            torch.set_num_threads(threads)

    return run


def torch_probe(function: str) -> Callable[[Builder], Builder]:
    """probe(function), with the cases built on one torch thread (restored afterwards): the
    reference runs on tiny tensors, and on a loaded machine torch's thread pool made building
    the cases 10-15 times slower.

    Hidden inputs never repeat a visible one: the handout ships the visible cases with their
    expected outputs, so a hidden request equal to a visible request could be answered by
    looking it up. When a seed other than the visible one draws a request equal to one of the
    visible seed's (small integer inputs can), the cases are drawn again from a generator the
    first one seeds, until none is."""

    def register(build):
        @functools.wraps(build)  # PROBES[function] names its builder and the module it is in
        @one_thread
        def built(rng):
            visible = rng.bit_generator.state == _visible_rng(function).bit_generator.state
            cases = build(rng)
            for _ in range(REDRAWS):
                if visible or _visible_requests(function, build).isdisjoint(fingerprints(cases)):
                    return cases
                cases = build(np.random.default_rng(int(rng.integers(2**63))))
            raise RuntimeError(f"{function}'s probe keeps drawing a visible request")

        DRAWS_UNSEEN.add(function)  # probes.draw: no second check against the visible cases
        probe(function)(built)
        return build

    return register


def later(work: Callable[..., list], *args) -> Later:
    """The known-wrong variants' outputs, worked out when a judge first reads them
    (judging.later), on one torch thread as the case's other data was. Only for variants that
    take no part in drawing the case; their inputs must not change after the case is built
    (tests/course/torch_shared/test_later_variants.py builds every probe both ways)."""
    return Later(one_thread(work), *args)


def _visible_rng(function):
    from autograder.checks import VISIBLE_SEED

    return np.random.default_rng(derive_seed(VISIBLE_SEED, function))


_VISIBLE: dict[str, set[str]] = {}  # graded name -> the visible seed's request fingerprints


def _visible_requests(function, build):
    """The fingerprints of the visible seed's requests of one graded name: the cases
    probes.visible_cases builds once per process from the same generator (`build` with the
    visible generator: the wrapper returns its cases as they are)."""
    from autograder.course.probes import visible_cases

    if function not in _VISIBLE:
        _VISIBLE[function] = fingerprints(visible_cases(function))
    return _VISIBLE[function]


def fingerprints(cases: Iterable[Case]) -> set[str]:
    """One digest per request of `cases`: equal digests, equal requests (tensors by value)."""
    out = set()
    for case in cases:
        for request in case.requests:
            assert request is not None  # a built case keeps every request (judging.base.Case)
            digest = hashlib.sha256()
            _feed(digest, {k: v for k, v in request.items() if k not in ("target", "seconds")})
            out.add(digest.hexdigest())
    return out


def _feed(digest, value):
    if isinstance(value, dict):
        digest.update(b"{")
        for key in sorted(value):
            digest.update(repr(key).encode())
            _feed(digest, value[key])
        digest.update(b"}")
    elif isinstance(value, list | tuple):
        digest.update(b"[")
        for item in value:
            _feed(digest, item)
        digest.update(b"]")
    elif isinstance(value, torch.Tensor | np.ndarray):
        arr = value.detach().numpy() if isinstance(value, torch.Tensor) else value
        digest.update(f"{arr.dtype}{arr.shape}".encode() + np.ascontiguousarray(arr).tobytes())
    else:
        digest.update(repr(value).encode())


def tensor(
    rng: np.random.Generator,
    *shape: int,
    scale: float = 1.0,
    shift: float = 0.0,
    grad: bool = False,
) -> torch.Tensor:
    """A float32 tensor of N(shift, scale^2) draws from the numpy generator rng."""
    t = torch.from_numpy((shift + scale * rng.standard_normal(shape)).astype(np.float32))
    return t.requires_grad_(grad)


def linear_state(
    rng: np.random.Generator, prefix: str, d_in: int, d_out: int, bias: bool = True
) -> dict[str, torch.Tensor]:
    """Weights like a trained layer's: (d_out, d_in) with N(0, 1/d_in), small biases."""
    state = {f"{prefix}.weight": tensor(rng, d_out, d_in, scale=d_in**-0.5)}
    if bias:
        state[f"{prefix}.bias"] = tensor(rng, d_out, scale=0.3)
    return state


def norm_state(rng: np.random.Generator, prefix: str, d: int) -> dict[str, torch.Tensor]:
    return {
        f"{prefix}.weight": tensor(rng, d, scale=0.3, shift=1.0),
        f"{prefix}.bias": tensor(rng, d, scale=0.3),
    }


def load(module: M, state: dict[str, torch.Tensor]) -> M:
    """A reference module with `state` loaded (strict: every SPEC name present)."""
    module.load_state_dict({k: v.detach().clone() for k, v in state.items()}, strict=True)
    return module.eval()


def reference_grads(module, args, y_index, cotangent):
    """The reference's output and gradients for (y * cotangent).sum(), as checks_modules.py's
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


def reference_input_grads(fn, args, cotangent):
    """The gradients of (fn(*args) * cotangent).sum() that reach the args requiring grad, as
    float64 arrays (None for the others): what checks_modules.input_grads_match expects."""
    args = [a.detach().clone().requires_grad_(a.requires_grad) for a in args]
    (fn(*args) * cotangent).sum().backward()
    return [a.grad.double().numpy() if a.grad is not None else None for a in args]


def np_(t: torch.Tensor) -> np.ndarray:
    return t.detach().to(torch.float64).numpy()


__all__ = [
    "torch_probe",
    "tensor",
    "linear_state",
    "norm_state",
    "load",
    "reference_grads",
    "reference_input_grads",
    "np_",
]
