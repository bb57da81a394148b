"""A notebook's status file, written in the sandbox: read safely, cleaned, applied to its run.

Everything in the sandbox runs as the student, so the parent believes only type-checked plain
facts from it and writes every sentence the student reads itself.
"""

from collections.abc import Mapping
from pathlib import Path
from typing import Protocol

from autograder.integrity import INTEGRITY_FACTS

MAX_STATUS_BYTES = 2**20


class Job(Protocol):
    """What the status is checked against: a NotebookJob (sandbox/__init__.py)."""

    @property
    def serve_seconds(self) -> Mapping[str, float]: ...


class Run(Protocol):
    """What apply_status writes: a NotebookRun (sandbox/__init__.py)."""

    executed_ok: bool
    cell_errors: list[dict]
    notes: dict[str, str]
    messages: list[str]
    seconds: float
    cpu_seconds: float
    cells_cpu_seconds: float
    timed_out: bool
    kernel_died: bool
    integrity: list[str]


def read_status(path: Path) -> dict | None:
    """A notebook's status file as JSON, or None. Read without following links, only a regular
    file under MAX_STATUS_BYTES (autograder.safe_files): code in the sandbox may have replaced it."""
    from autograder.safe_files import UnsafeFile, read_json

    path = Path(path)
    try:
        return read_json(path.parent, [path.name], MAX_STATUS_BYTES)
    except (UnsafeFile, OSError):
        return None


def clean_status(status: dict | None, job: Job) -> dict | None:
    """The structured facts of a status file, type-checked; its free text is dropped.

    Everything in the sandbox runs as the student (the driver too), so a status file may have
    been written by the student's code: by a later notebook about an earlier one, or by a process
    left behind. The parent therefore believes only plain facts (flags, cell numbers, which graded
    names lost their answers) and the student's own cell errors (shown as theirs), and writes
    every sentence itself: nothing a student writes there is shown as the grader's words.
    """
    if not isinstance(status, dict):
        return None

    def flag(key: str) -> bool:
        return status.get(key) is True

    errors = []
    raw_errors = status.get("cell_errors")
    for err in raw_errors[:200] if isinstance(raw_errors, list) else []:
        if not isinstance(err, dict) or type(err.get("cell")) is not int or err["cell"] < 0:
            continue
        errors.append(
            {
                "cell": err["cell"],
                "type": str(err.get("type", "Error"))[:100],
                "message": str(err.get("message", ""))[:500],
                "line": str(err.get("line", ""))[:100],
            }
        )
    notes = status.get("notes")
    lost = sorted(n for n in (notes if isinstance(notes, dict) else {}) if n in job.serve_seconds)
    unrun = status.get("tests_out_of_time")
    unrun = sorted(n for n in (unrun if isinstance(unrun, list) else []) if n in lost)

    def number(key: str, default: float) -> float:
        value = status.get(key)
        if isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value < 1e12:
            return float(value)
        return default

    integrity = status.get("integrity")
    integrity = integrity[:20] if isinstance(integrity, list) else []
    return {
        "integrity": sorted({t for t in integrity if isinstance(t, str) and t in INTEGRITY_FACTS}),
        "finished": flag("finished"),
        "executed_ok": flag("executed_ok"),
        "timed_out": flag("timed_out"),
        "kernel_died": flag("kernel_died"),
        "kernel_start_failed": flag("kernel_start_failed"),
        "wall_backstop": flag("wall_backstop"),
        "seconds": min(number("seconds", 0.0), 1e7),
        "cpu_seconds": min(number("cpu_seconds", 0.0), 1e7),
        "cells_cpu_seconds": min(number("cells_cpu_seconds", 0.0), 1e7),
        "unrun": unrun,  # not run: the notebook's tests budget was used up before them
        # the window the parent measures starvation over (clipped to its own samples)
        "started_at": number("started_at", 0.0),
        "ended_at": number("ended_at", float("inf")),
        "cell_errors": errors,
        "lost": lost,
    }


def suspicion(status: dict | None, job: Job) -> str:
    """Why a notebook's outcome may be the sandbox's failure rather than the student's, or "".

    "never-ran": the sandbox stopped before it; "kernel-start": its kernel did not start;
    "died": the sandbox stopped while it ran; "wall": its time ran out on the wall-clock backstop
    (its CPU seconds were not used up). The status is the student's to write, so these are only
    reasons to look again (Sandbox.run re-runs, and checks with its own measurements).
    """
    status = clean_status(status, job) if status is not None else None
    if status is None:
        return "never-ran"
    if status["kernel_start_failed"]:
        return "kernel-start"
    if not status["finished"]:
        return "died"
    if status["wall_backstop"]:
        return "wall"
    return ""


def window(status: dict | None, job: Job) -> tuple[float, float]:
    """(started_at, ended_at) as the notebook's status reports them (time.monotonic)."""
    status = clean_status(status, job) if status is not None else None
    return (status["started_at"], status["ended_at"]) if status else (0.0, float("inf"))


def apply_status(run: Run, status: dict | None, job: Job) -> None:
    status = clean_status(status, job) if status is not None else None
    if status is not None and status["kernel_start_failed"]:
        run.messages.append(
            "The notebook's kernel could not start in the grading sandbox, so it could not be "
            "tested. Files in your submission named like Python modules (ipykernel_launcher.py, "
            "zmq.py, ...) can stop it: rename them."
        )
        run.notes["*"] = "not tested: the notebook's kernel could not start."
        for name in job.serve_seconds:
            run.notes.setdefault(name, run.notes["*"])
        return
    if status is None:
        run.messages.append(
            "The grading sandbox stopped before this notebook could run, so it could not be tested."
        )
        run.notes["*"] = "not tested: the grading sandbox stopped before this notebook could run."
        return
    run.executed_ok = status["executed_ok"]
    run.cell_errors = status["cell_errors"]
    run.seconds = status["seconds"]
    run.cpu_seconds = status["cpu_seconds"]
    run.cells_cpu_seconds = status["cells_cpu_seconds"]
    run.timed_out = status["timed_out"]
    run.kernel_died = status["kernel_died"]
    run.integrity = status["integrity"]  # known tokens only: hints for a human, never a verdict
    graded = list(job.serve_seconds)
    lost = status["lost"]
    stuck = run.timed_out and graded and set(lost) == set(graded)
    died_in = next((e["cell"] for e in run.cell_errors if e["type"] == "KernelDied"), None)
    timeout_in = next((e["cell"] for e in run.cell_errors if e["type"] == "Timeout"), None)
    if timeout_in is not None and run.timed_out:
        if stuck:
            run.messages.append(
                f"Cell {timeout_in + 1} was still running when the notebook's time ran out and "
                "could not be interrupted, so nothing could be tested."
            )
        else:
            run.messages.append(
                f"Cell {timeout_in + 1} was still running when the notebook's time ran out; it was "
                "interrupted and the later cells were not run. The names defined before it were "
                "tested."
            )
    if died_in is not None and run.kernel_died:
        run.messages.append(
            f"The kernel died while running cell {died_in + 1} (os._exit, a crash in compiled "
            "code, or running out of memory), so nothing could be tested."
        )
    for name in lost:
        if run.kernel_died and died_in is not None:
            text = (
                f"the kernel died while running cell {died_in + 1} of your notebook, so this "
                "could not be tested."
            )
        elif run.kernel_died:
            text = (
                f"the kernel died while {name} was being tested (os._exit, a crash in compiled "
                "code, or running out of memory); the tests that had not finished score 0."
            )
        elif stuck:
            text = (
                "your notebook ran out of time (see the cell errors) and could not be stopped, "
                "so this could not be tested."
            )
        elif name in status["unrun"]:
            text = (
                "not tested: the hidden tests of this notebook share one time budget, and the "
                "names tested before this one used it up (look for an infinite loop, very slow "
                "code, or code that waits)."
            )
        else:
            text = (
                f"the tests of {name} did not finish (they have {job.serve_seconds[name]:g} s in "
                "total: look for an infinite loop or very slow code), or your notebook's code "
                "stopped them or the test harness; the tests that had not finished score 0."
            )
        run.notes[name] = text
    if not status["finished"]:
        run.executed_ok = False
        text = (
            "the grading sandbox stopped while this notebook was running (it ran out of time or "
            "memory, or killed its own processes), so the remaining tests could not run."
        )
        run.messages.append(text[0].upper() + text[1:])
        run.notes.setdefault("*", text)
        for name in job.serve_seconds:
            run.notes.setdefault(name, text)
