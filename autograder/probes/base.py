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
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from autograder.curriculum import BY_STEM, NOTEBOOK_OF
from autograder.harness.wire import Reader, Writer
from autograder.results import TestResult


class Fail(Exception):
    """Raised by a judge: the case fails with this message and these misconception ids."""

    def __init__(self, message, misconceptions=(), fraction=0.0):
        super().__init__(message)
        self.message = message
        self.misconceptions = list(misconceptions)
        self.fraction = fraction


@dataclass
class Response:
    """One harness answer, read in the parent. `raw` is the JSON; decoded values via value()."""

    raw: dict
    reader: Reader | None = None

    @property
    def missing(self):
        return self.raw.get("missing")

    @property
    def error(self):
        return self.raw.get("error")

    @property
    def lost(self):
        return self.raw.get("lost")

    def decode(self, data):
        return self.reader.decode(data)

    def value(self, what="the call"):
        """The decoded return value; a raised exception becomes a Fail naming it."""
        if self.error:
            raise Fail(f"{what} raised {self.error['type']}: {self.error['message']}")
        return self.decode(self.raw["value"])


Judge = Callable[[list[Response]], None]  # returns None to pass, raises Fail to fail


@dataclass
class Case:
    function: str  # SPEC's graded name
    name: str  # what this case checks, shown to the student
    points: float
    requests: list[dict]
    judge: Judge
    seconds: float = 20.0  # per request, enforced by the harness
    meta: dict = field(default_factory=dict)


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


def _folder(case_index, request_index):
    return f"{case_index:03d}_{request_index:02d}"


def write_requests(cases, request_root):
    """One folder per graded name, one sub-folder per request: what the sandbox will carry out."""
    request_root = Path(request_root)
    if request_root.exists():
        shutil.rmtree(request_root)
    for i, case in enumerate(cases):
        for j, request in enumerate(case.requests):
            writer = Writer(request_root / case.function / _folder(i, j))
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


def read_responses(case_index, case, response_root, notes):
    responses = []
    for j in range(len(case.requests)):
        folder = Path(response_root) / case.function / _folder(case_index, j)
        try:
            raw = Reader(folder).read_json("response.json")
        except (OSError, ValueError):
            raw = {"lost": notes.get(case.function) or notes.get("*") or "no answer came back"}
        responses.append(Response(raw, Reader(folder)))
    return responses


def verdict(case, responses):
    """(fraction of points, message, misconception ids) for one case."""
    for r in responses:
        if r.lost:
            return 0.0, r.lost, []
        if r.missing:
            return 0.0, _missing_message(r.missing), []
        err = r.error or {}
        if err.get("type") == "NotImplementedError":
            where = err.get("where") or []
            inner = where[-1].split(" in ", 1)[-1] if where else case.function
            if len(where) < 2 or inner.split(".")[0] == case.function:  # raised by itself
                return (
                    0.0,
                    f"{case.function} is not implemented yet (it raises NotImplementedError).",
                    [],
                )
            return (
                0.0,
                (
                    f"{case.function} is not implemented yet: something it calls ({inner}, "
                    f"{where[-1].split(' in ', 1)[0]}) still raises NotImplementedError."
                ),
                [],
            )
        if err.get("type") == "Timeout":
            return (
                0.0,
                (
                    f"{case.function} did not finish within {case.seconds:g} s on this test: "
                    "look for an infinite loop, or a loop over every element where arrays would do."
                ),
                [],
            )
    try:
        case.judge(responses)
    except Fail as failure:
        return failure.fraction, failure.message, failure.misconceptions
    except Exception as exc:  # noqa: BLE001 - an odd return value must not crash the grader
        return 0.0, f"could not check what {case.function} returned ({type(exc).__name__}).", []
    return 1.0, "", []


def _missing_message(name):
    return (
        f"`{name}` is not defined after running your notebook. Keep the cell that defines it, "
        f"spelled exactly `{name}`, and make sure the cells before it run without errors."
    )


def judge_cases(cases, response_root, notes=None):
    """TestResults for every case from the responses under response_root (None: all lost)."""
    notes = notes or {}
    results = []
    for i, case in enumerate(cases):
        if response_root is None:
            fraction, message, ids = 0.0, notes.get(case.function) or notes.get("*", ""), []
        else:
            fraction, message, ids = verdict(case, read_responses(i, case, response_root, notes))
        results.append(
            TestResult(
                name=f"{case.function}: {case.name}",
                score=round(case.points * fraction, 4),
                max_score=case.points,
                output=message,
                notebook=NOTEBOOK_OF[case.function].stem,
                function=case.function,
                misconceptions=ids,
            )
        )
    return results
