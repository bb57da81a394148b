"""Hidden tests as data: a Case is some harness requests plus a judge run in the trusted parent.

    cases = build_cases("03_matrix_attention", seed)     # inputs drawn from the seed
    write_requests(cases, request_root)                  # plain data for the sandbox
    ...the sandbox runs the notebook, then harness.serve on each function's folder...
    results = judge_cases(cases, response_root, notes)   # TestResults, decided here

The same cases run in-process for the visible checks (autograder.checks): one set of tests,
two runners.
"""

import hashlib
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np

from autograder.curriculum import BY_STEM
from autograder.harness.wire import Writer
from autograder.judging.answers import judge_cases  # noqa: F401 - the probes' vocabulary
from autograder.judging.base import (  # noqa: F401 - the probes' vocabulary
    Case,
    Fail,
    Response,
    request_folder,
    verdict,
)

PROBES: dict[str, Callable[[np.random.Generator], list[Case]]] = {}


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
    """Every case of one notebook's graded names, inputs drawn from `seed`."""
    from autograder.probes import load

    load(stem)  # registers this notebook's probes

    cases = []
    for function in BY_STEM[stem].graded:
        if functions is not None and function not in functions:
            continue
        rng = np.random.default_rng(derive_seed(seed, function))
        for case in PROBES[function](rng):
            for request in case.requests:
                request.setdefault("target", function)
                request.setdefault("seconds", case.seconds)
            cases.append(case)
    return cases


def write_requests(cases, request_root):
    """One folder per graded name, one sub-folder per request: what the sandbox will carry out."""
    request_root = Path(request_root)
    if request_root.exists():
        shutil.rmtree(request_root)
    for i, case in enumerate(cases):
        for j, request in enumerate(case.requests):
            writer = Writer(request_root / case.function / request_folder(i, j), packed=True)
            writer.write_json("request.json", _encode_request(writer, request))
    return sorted({case.function for case in cases})


def _encode_request(writer, value):
    if isinstance(value, dict):  # plain dicts and the harness's "$..." forms alike
        return {k: _encode_request(writer, v) for k, v in value.items()}
    if isinstance(value, list):
        return [_encode_request(writer, v) for v in value]
    if isinstance(value, tuple):
        return {"$tuple": [_encode_request(writer, v) for v in value]}
    if isinstance(value, np.ndarray | np.generic) or type(value).__module__.startswith("torch"):
        return writer.encode(value)
    return value
