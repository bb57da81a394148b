"""Visible checks for students: the hidden tests' own cases, run in the student's kernel.

    from autograder.checks import check
    check("softmax", softmax)

prints which checks pass and, for those that fail, what was seen and a hint, never the answer.
The inputs come from a public seed; the grader draws its own from a secret. In Jupyter a check
never raises, so a notebook with unfinished exercises still runs top to bottom. Under
`nbgrader validate` (the students' Validate button: it sets NBGRADER_EXECUTION=validate in the
kernel's environment) a check that fails, that finds the exercise not implemented, or that cannot
run prints the same report and then raises ChecksFailed, so the test cell fails and Validate
says so. (NBGRADER_EXECUTION=autograde, the notebooks' quick mode, stays lenient: there the
hidden tests' `assert_passes` is the strict run, and our grader never runs these checks.)

Where the cases come from: the student handout (`python -m autograder handout`) ships the
visible seed's cases as plain data in autograder/visible/ (judging.store), and no probe; the
full course package builds them from the probes. Either way the same requests are served in
this process and the same judges decide, so both say the same thing. A check of a later notebook
whose earlier notebook could not be used (notebook 03 without its 02 next to it) says so, in the
same words as the grader (judging.dependencies), rather than "not implemented".
"""

import os
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from autograder.curriculum import NOTEBOOK_OF, NOTEBOOKS
from autograder.harness import serve
from autograder.judging.answers import judge_cases
from autograder.judging.base import VISIBLE_SEED, Case, write_requests
from autograder.judging.dependencies import Unavailable, kernel_unavailable
from autograder.results import (
    DEPENDENCY_MISSING,
    DEPENDENCY_NOT_IMPLEMENTED,
    UNFINISHED,
    TestResult,
)

# The visible seed's cases as stored data: present in the student handout only.
STORED = Path(__file__).resolve().parent / "visible"
# Requests and answers are many small files: in memory (/dev/shm) they cost ~10x less than on disk.
SCRATCH = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None


class ChecksFailed(AssertionError):
    """A visible check failed under `nbgrader validate` (its message: the report)."""


def validating() -> bool:
    """True while `nbgrader validate` runs this kernel's notebook."""
    # in the student's kernel (another process than the grader's): nbgrader's own variable
    return os.environ.get("NBGRADER_EXECUTION", "") == "validate"


def _stored(function: str, seed: str) -> bool:
    """True if this seed's cases of `function` are stored data (the handout)."""
    from autograder.judging.store import stored_functions

    return (
        seed == VISIBLE_SEED
        and (STORED / "index.json").is_file()
        and function in stored_functions(STORED)
    )


def cases_and_requests(function: str, seed: str, scratch: Path) -> tuple[list[Case], Path]:
    """(cases, folder of their requests) for one graded name: stored data, else the probes."""
    if _stored(function, seed):
        from autograder.judging.store import load_cases, request_dir

        return load_cases(STORED, function), request_dir(STORED, function)
    try:
        from autograder.course.probes import build_cases
    except ImportError:  # the handout: no probes, and this seed's cases were not stored
        raise LookupError(
            f"this copy of the course holds only the visible checks (seed {VISIBLE_SEED!r}) of "
            f"the notebooks it was handed out with, and none for {function} with seed {seed!r}"
        ) from None
    from autograder.judging.later import resolved

    cases = build_cases(NOTEBOOK_OF[function].stem, seed, functions={function})
    for case in cases:  # before the student's code runs in this process and can change torch
        resolved(getattr(case.judge, "params", None))
    write_requests(cases, scratch)
    return cases, Path(scratch) / function


def run_in_process(
    function: str,
    obj: object,
    seed: str = VISIBLE_SEED,
    namespace: dict[str, Any] | None = None,
    unavailable: Mapping[str, Unavailable] | None = None,
) -> list[TestResult]:
    """The TestResults of one graded name's cases, calling `obj` in this process.
    `unavailable`: the earlier notebooks' names that could not be imported (earlier_notebooks)."""
    namespace = dict(namespace or {})
    namespace[function] = obj
    with tempfile.TemporaryDirectory(prefix="course-check-", dir=SCRATCH) as tmp:
        cases, requests = cases_and_requests(function, seed, Path(tmp, "requests"))
        responses = Path(tmp, "responses")
        serve(namespace, requests, responses / function)
        return judge_cases(cases, responses, unavailable=unavailable)


def earlier_notebooks(function: str, frame_globals: Mapping[str, object]) -> dict[str, Unavailable]:
    """The names this notebook takes from earlier notebooks that could not be used here: the
    placeholders coursedata.import_earlier left, and names never defined whose notebook is not
    next to this one (judging.dependencies.kernel_unavailable)."""
    try:
        from coursedata.notebooks import find_notebook
    except ImportError:  # the checks without the course's data package: nothing to look up
        return {}
    return kernel_unavailable(
        NOTEBOOK_OF[function].stem, frame_globals, lambda name: find_notebook(Path(name)).is_file()
    )


def report(function: str, results: list[TestResult]) -> str:
    failed = [r for r in results if r.status == "failed"]
    if not failed:
        return f"✓ {function} passes all {len(results)} checks."
    if all(r.reason == DEPENDENCY_MISSING for r in failed):  # its message says what to do
        return f"… {failed[0].output}"
    if all(r.reason in UNFINISHED for r in failed):
        if failed[0].reason == DEPENDENCY_NOT_IMPLEMENTED:  # the message names what it calls
            return f"… {failed[0].output}"
        return (
            f"… {function} is not implemented yet: fill in the exercise, then run this cell again."
        )
    lines = [f"✗ {function}: {len(results) - len(failed)} of {len(results)} checks pass."]
    for r in failed:
        lines.append(f"  - {r.name.split(': ', 1)[-1]}: {r.output}")
    return "\n".join(lines)


def _graded_names_of(frame_globals: Mapping[str, object]) -> dict[str, object]:
    """The graded functions a notebook has defined or imported (its globals), so that a check can
    ask, as the grader does, what the student's own earlier functions make of an input."""
    names = {name for notebook in NOTEBOOKS for name in notebook.graded}
    return {name: frame_globals[name] for name in names if name in frame_globals}


def check(function: str, obj: object, **namespace: Any) -> None:
    """Run the visible checks of one graded name on your `obj` and print what they found.
    Under nbgrader (Validate), a check that does not pass also raises ChecksFailed."""
    __tracebackhide__ = True  # IPython shows the report, not this module's frames
    frame_globals = sys._getframe(1).f_globals
    namespace = _graded_names_of(frame_globals) | namespace
    try:
        unavailable = earlier_notebooks(function, frame_globals)
        results = run_in_process(function, obj, namespace=namespace, unavailable=unavailable)
    except Exception as exc:  # noqa: BLE001 - a check must never crash the student's notebook
        text = f"? the checks of {function} could not run: {type(exc).__name__}: {exc}"
        passed = False
    else:
        text, passed = report(function, results), all(r.status != "failed" for r in results)
    print(text)
    if not passed and validating():
        raise ChecksFailed(text)
    return None  # the cell shows only the report


def assert_passes(
    function: str, obj: object, seed: str = "nbgrader-hidden", **namespace: Any
) -> None:
    """Raise AssertionError unless every case passes (nbgrader's hidden test cells)."""
    frame_globals = sys._getframe(1).f_globals
    namespace = _graded_names_of(frame_globals) | namespace
    unavailable = earlier_notebooks(function, frame_globals)
    results = run_in_process(function, obj, seed=seed, namespace=namespace, unavailable=unavailable)
    failed = [r for r in results if r.status == "failed"]
    assert not failed, report(function, results)
