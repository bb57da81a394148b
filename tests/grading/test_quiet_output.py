"""Quiet output at scale (issue 37, item 5): the nbgrader route writes what it put into the
gradebook to a file instead of a line per student and notebook, and a class run names each
student it could not grade as soon as that is known, above its one progress bar."""

import csv
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from autograder.config import Config
from autograder.grading import pool
from autograder.grading.run_state import RunState
from autograder.grading.stopping import Stopping
from autograder.grading.student import StudentResult, internal_error_result
from autograder.platforms import nbgrader
from autograder.sandbox import Limits, SandboxFailure


def test_the_gradebook_writes_go_to_a_csv_file_escaped_as_every_csv_is(tmp_path):
    written = {
        ("ada", "01_soft_lookup"): 6.5,
        ("=HYPERLINK(1)", "01_soft_lookup"): 0.0,
        ("bob\x1b[31m", "02_dot_product_softmax"): 7.25,
    }
    path = nbgrader.write_gradebook_list(tmp_path, written)
    assert path == tmp_path / "gradebook.csv"
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == ["student", "assignment", "score"]
    assert sorted(rows[1:]) == sorted(
        [
            ["'=HYPERLINK(1)", "01_soft_lookup", "0"],
            ["ada", "01_soft_lookup", "6.5"],
            ["bob\\x1b[31m", "02_dot_product_softmax", "7.25"],
        ]
    )
    assert "\x1b" not in path.read_text(encoding="utf-8")


def test_a_student_not_graded_is_named_with_the_reason_and_nobody_else_is():
    broken = internal_error_result("bob", SandboxFailure("01_soft_lookup: its kernel died"))
    line = pool.failed_now(broken)
    assert line.startswith("NOT GRADED bob: the grading sandbox failed")
    assert "its kernel died" in line
    crashed = internal_error_result("eve\x1b[2J", ValueError("bad \x07 value"))
    line = pool.failed_now(crashed)
    assert line == "NOT GRADED eve\\x1b[2J: internal error: ValueError: bad \\x07 value"
    assert pool.failed_now(StudentResult("ada", {"score": 1.0})) == ""
    assert pool.failed_now(None) == ""


@pytest.mark.parametrize("progress", [True, False])
def test_failures_are_named_as_they_happen_above_the_bar(tmp_path, monkeypatch, capsys, progress):
    """Three students, the second of whom the grader fails on: the line naming bob is written
    while the class is still being graded (the third student waits for it), once, on stderr;
    with --quiet, not at all (the summary at the end names him)."""
    said = threading.Event()
    named = pool.failed_now

    def failed_now(result):
        line = named(result)
        if line:
            said.set()
        return line

    seen = {}

    def grade_student(student, *args, **kwargs):
        if student == "cyd":
            seen["before cyd"] = said.wait(timeout=10 if progress else 1)
        if student == "bob":
            raise SandboxFailure("01_soft_lookup: the sandbox stopped")
        return StudentResult(student, {"score": 1.0})

    monkeypatch.setattr(pool, "failed_now", failed_now)
    monkeypatch.setattr(pool, "grade_student", grade_student)
    todo = [
        SimpleNamespace(student=name, folder=Path(name), messages={}, source=Path(name))
        for name in ("ada", "bob", "cyd")
    ]
    settings = Config(out=tmp_path / "out", secret="s", limits=Limits())
    sandbox = SimpleNamespace(running=SimpleNamespace(progress=lambda: []), limits=Limits())
    kept = {s.student: {} for s in todo}
    with Stopping() as stop:
        done, unfinished = pool.grade_pool(
            todo, kept, settings, RunState(), progress, sandbox, 1, stop
        )
    assert unfinished == [] and len(done) == 3
    err = capsys.readouterr().err
    assert seen["before cyd"] is progress
    assert err.count("NOT GRADED bob: the grading sandbox failed") == (1 if progress else 0)
