"""The case model, the bottom layer of grading: a Case, its Judgement, its verdict, its requests.

    fraction, message, ids = verdict(case, responses)   # one case's verdict
    write_requests(cases, request_root)                 # its questions, as plain data on disk

A case is a Case (the probes build them in the grader; judging.store reloads the visible ones
in the student handout). Answers are read and turned into TestResults by judging.answers.
This module imports nothing of the course above it (only the harness's wire format and the
judge registry, autograder.judging): the probes, the stored cases, the visible checks and the
grader all build on it (tests/architecture/test_import_graph.py keeps it so).
"""

import shutil
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from autograder.harness.wire import Reader, Writer
from autograder.judging import Judgement  # noqa: F401 - part of the case model
from autograder.results import (
    DEPENDENCY_NOT_IMPLEMENTED,
    FAILED,
    LOST,
    MISSING_NAME,
    NOT_IMPLEMENTED,
    PASSED,
    TIMEOUT,
)

# The public seed of the visible checks (autograder.checks) and of the cases the handout stores.
VISIBLE_SEED = "visible-checks"


class Fail(Exception):
    """Raised by a judge: the case fails with this message and these misconception ids."""

    def __init__(
        self,
        message: str,
        misconceptions: Iterable[str] = (),
        fraction: float = 0.0,
        reason: str = FAILED,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.misconceptions = list(misconceptions)
        self.fraction = fraction
        self.reason = reason  # autograder.results: FAILED, or NOT_IMPLEMENTED for a stub


@dataclass
class Response:
    """One harness answer, read in the parent. `raw` is the JSON; decoded values via value()."""

    raw: dict
    reader: Reader | None = None

    @property
    def missing(self) -> Any:
        return self.raw.get("missing")

    @property
    def error(self) -> Any:
        return self.raw.get("error")

    @property
    def lost(self) -> Any:
        return self.raw.get("lost")

    def decode(self, data: object) -> Any:
        assert self.reader is not None, "a response read without its folder has no values"
        return self.reader.decode(data)

    def value(self, what: str = "the call") -> object:
        """The decoded return value; a raised exception becomes a Fail naming it."""
        if self.error:
            raise Fail(f"{what} raised {self.error['type']}: {self.error['message']}")
        return self.decode(self.raw["value"])


@dataclass
class Case:
    function: str  # SPEC's graded name
    name: str  # what this case checks, shown to the student
    points: float
    requests: Sequence[dict | None]  # None: a stored case's request (judging/store.py) not kept
    judge: Callable[
        [Sequence[Response]], None
    ]  # a judging.Judgement (storable), or any callable(responses) -> None / Fail
    seconds: float = 20.0  # per request, enforced by the harness
    meta: dict = field(default_factory=dict)


def request_folder(case_index: int, request_index: int) -> str:
    """The folder of one request's question and answer: 003_01 for case 3, request 1."""
    return f"{case_index:03d}_{request_index:02d}"


def verdict(case: Case, responses: Sequence[Response]) -> tuple[float, str, list[str]]:
    """(fraction of points, message, misconception ids) for one case (judgement without its
    reason)."""
    return judgement(case, responses)[:3]


def judgement(case: Case, responses: Sequence[Response]) -> tuple[float, str, list[str], str]:
    """(fraction of points, message, misconception ids, reason) for one case: the reason one of
    autograder.results.REASONS, decided here with the verdict.

    Responses the judge lists as optional (its "optional" indices: a question the judge may use,
    such as asking an earlier exercise's function, never one the case needs) do not fail the
    case when they are missing, lost, raise or time out: the judge decides what they mean.
    """
    optional = set(getattr(case.judge, "params", {}).get("optional", ()))
    for r in (r for i, r in enumerate(responses) if i not in optional):
        if r.lost:
            return 0.0, r.lost, [], LOST
        if r.missing:
            return 0.0, _missing_message(r.missing), [], MISSING_NAME
        err = r.error or {}
        if err.get("type") == "NotImplementedError":
            where = err.get("where") or []
            inner = where[-1].split(" in ", 1)[-1] if where else case.function
            if len(where) < 2 or inner.split(".")[0] == case.function:  # raised by itself
                return (
                    0.0,
                    f"{case.function} is not implemented yet (it raises NotImplementedError).",
                    [],
                    NOT_IMPLEMENTED,
                )
            return (
                0.0,
                (
                    f"{case.function} is not implemented yet: something it calls ({inner}, "
                    f"{where[-1].split(' in ', 1)[0]}) still raises NotImplementedError."
                ),
                [],
                DEPENDENCY_NOT_IMPLEMENTED,
            )
        if err.get("type") == "Timeout":
            return (
                0.0,
                (
                    f"{case.function} did not finish within {case.seconds:g} s on this test: "
                    "look for an infinite loop, or a loop over every element where arrays would do."
                ),
                [],
                TIMEOUT,
            )
    try:
        case.judge(responses)
    except Fail as failure:
        reason = PASSED if failure.fraction >= 1.0 else failure.reason
        return failure.fraction, failure.message, failure.misconceptions, reason
    except Exception as exc:  # noqa: BLE001 - an odd return value must not crash the grader
        message = f"could not check what {case.function} returned ({type(exc).__name__})."
        return 0.0, message, [], FAILED
    return 1.0, "", [], PASSED


def _missing_message(name: str) -> str:
    return (
        f"`{name}` is not defined after running your notebook. Keep the cell that defines it, "
        f"spelled exactly `{name}`, and make sure the cells before it run without errors."
    )


def write_requests(cases: Sequence[Case], request_root: Path | str) -> list[str]:
    """One folder per graded name, one sub-folder per request: what the sandbox will carry out."""
    request_root = Path(request_root)
    if request_root.exists():
        shutil.rmtree(request_root)
    for i, case in enumerate(cases):
        for j, request in enumerate(case.requests):
            writer = Writer(request_root / case.function / request_folder(i, j), packed=True)
            writer.write_json("request.json", _encode_request(writer, request))
    return sorted({case.function for case in cases})


def _encode_request(writer: Writer, value: object) -> object:
    if isinstance(value, dict):  # plain dicts and the harness's "$..." forms alike
        return {k: _encode_request(writer, v) for k, v in value.items()}
    if isinstance(value, list):
        return [_encode_request(writer, v) for v in value]
    if isinstance(value, tuple):
        return {"$tuple": [_encode_request(writer, v) for v in value]}
    if isinstance(value, np.ndarray | np.generic) or type(value).__module__.startswith("torch"):
        return writer.encode(value)
    return value
