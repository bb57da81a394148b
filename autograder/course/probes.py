"""Hidden tests as data: a Case is some harness requests plus a judge run in the trusted parent.

    cases = build_cases("03_matrix_attention", seed)     # inputs drawn from the seed
    write_requests(cases, request_root)                  # plain data for the sandbox
    ...the sandbox runs the notebook, then harness.serve on each function's folder...
    results = judge_cases(cases, response_root, notes)   # TestResults, decided here

The same cases run in-process for the visible checks (autograder.checks): one set of tests,
two runners.
"""

import functools
import hashlib
import importlib
from collections.abc import Callable

import numpy as np

from autograder.curriculum import BY_STEM, NOTEBOOKS
from autograder.judging.answers import judge_cases  # noqa: F401 - the probes' vocabulary
from autograder.judging.base import (  # noqa: F401 - the probes' vocabulary
    VISIBLE_SEED,
    Case,
    Fail,
    Response,
    request_folder,
    verdict,
    write_requests,
)

PROBES: dict[str, Callable[[np.random.Generator], list[Case]]] = {}
# graded names whose probe redraws until no request equals a visible one by a fingerprint at
# least as coarse as draw's (torch_shared/tools.py): draw need not check them again
DRAWS_UNSEEN: set[str] = set()


def probe(function):
    """Register a function rng -> list[Case] as the hidden tests of one graded name."""

    def register(build):
        PROBES[function] = build
        return build

    return register


def derive_seed(*parts):
    """A reproducible seed from a course secret, a student id and a graded name."""
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "little")


def build_cases(stem, seed, functions=None):
    """Every case of one notebook's graded names, inputs drawn from `seed`.

    For any seed but the visible checks' own, no request equals a request of the visible checks
    (whose cases and answers the student handout ships): see `draw`.
    """
    load(stem)  # registers this notebook's probes

    cases = []
    for function in BY_STEM[stem].graded:
        if functions is not None and function not in functions:
            continue
        cases.extend(draw(function, seed))
    return cases


# How many times a graded name's hidden cases are drawn again while one of their requests equals
# a visible one: small draws (causal_mask(n), mha_shapes' sizes) collide now and then; 50 fresh
# draws all colliding would take a probe with a fixed input, which tests/course/numpy_shared/test_hidden_inputs.py names.
REDRAWS = 50


def draw(function, seed):
    """One graded name's cases from `seed`: drawn again, from seeds derived from it, while any
    of their requests equals a request of the visible checks (a hidden test must never be
    answerable by looking its answer up in the handout)."""
    if seed == VISIBLE_SEED or function in DRAWS_UNSEEN:
        # a torch probe redraws until no request equals a visible one by a fingerprint at
        # least as coarse as this one (torch_shared/tools.py): this check would never fail
        visible: frozenset[str] = frozenset()
    else:
        visible = visible_fingerprints(function)
    for attempt in range(REDRAWS):
        parts = (seed, function) if attempt == 0 else (seed, function, f"redraw {attempt}")
        cases = _cases(function, derive_seed(*parts))
        if visible.isdisjoint(fingerprints(cases)):
            break
    return cases


def _cases(function, seed):
    rng = np.random.default_rng(seed)
    cases = PROBES[function](rng)
    for case in cases:
        for request in case.requests:
            assert request is not None  # a built case keeps every request (judging.base.Case)
            request.setdefault("target", function)
            request.setdefault("seconds", case.seconds)
    return cases


_VISIBLE_CASES: dict[str, tuple[Callable, list[Case]]] = {}  # name -> (its probe, its cases)


def visible_cases(function):
    """The visible checks' cases of one graded name, built once per process (again if its probe
    is registered anew): every student's hidden cases are compared with them. Only their
    fingerprints are read; callers never hand these objects on."""
    build = PROBES[function]
    kept = _VISIBLE_CASES.get(function)
    if kept is None or kept[0] is not build:
        kept = _VISIBLE_CASES[function] = (
            build,
            _cases(function, derive_seed(VISIBLE_SEED, function)),
        )
    return kept[1]


@functools.cache
def visible_fingerprints(function):
    return frozenset(fingerprints(visible_cases(function)))


def fingerprints(cases):
    """One digest per request of the cases: equal digests, equal requests (time limit aside)."""
    return [
        request_fingerprint({k: v for k, v in request.items() if k != "seconds"})
        for case in cases
        for request in case.requests
    ]


def request_fingerprint(request):
    """A digest of a request's values: arrays and tensors by dtype, shape and bytes."""
    digest = hashlib.sha256()

    def walk(value):
        if isinstance(value, dict):
            digest.update(b"{")
            for key in sorted(value, key=str):
                digest.update(repr(key).encode())
                walk(value[key])
            digest.update(b"}")
        elif isinstance(value, list | tuple):
            digest.update(f"[{type(value).__name__}".encode())
            for item in value:
                walk(item)
            digest.update(b"]")
        elif isinstance(value, np.ndarray | np.generic):
            array = np.ascontiguousarray(value)
            digest.update(f"{array.dtype}{array.shape}".encode() + array.tobytes())
        elif type(value).__module__.startswith("torch") and hasattr(value, "detach"):
            digest.update(str(value.dtype).encode())
            walk(
                value.detach().cpu().double().numpy()
                if value.is_floating_point()
                else value.numpy()
            )
        else:
            digest.update(f"{type(value).__name__}:{value!r}".encode())

    walk(request)
    return digest.hexdigest()


def load(stem: str) -> None:
    """Register one notebook's probes, importing its folder's cases.py (which imports its
    cases_<topic>.py siblings): only what that notebook needs, no torch for 01-04. It runs on
    first use (build_cases), never at import: the cases import the case model, which imports
    this module."""
    importlib.import_module(BY_STEM[stem].cases_path)


def load_all() -> None:
    for notebook in NOTEBOOKS:
        load(notebook.stem)
