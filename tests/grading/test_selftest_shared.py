"""One self-test per environment, shared by `grade`, `nbgrader grade` and Gradescope (issue 37,
item 4): the record one route writes is the one the next route reads, whatever folder it runs
from and whatever it imported; and it is not reused once the course, the grader or the limits
change.

The self-test's own grading is replaced by a counter here (tests/grading/test_selftest.py tests the
cache itself; tests/sandbox/test_bwrap_versions.py the real grading): what is tested is which runs
reuse which record. The routes are the real ones, through `python -m autograder`'s main, with
the grading of the students stubbed out after the self-test."""

import json
import sys

import nbformat
import pytest
from fixtures import NB01, REPO, TIMESTAMP

from autograder import __main__ as cli
from autograder.config import Config
from autograder.grading import classrun, selftest
from autograder.grading.sandboxes import open_sandbox
from autograder.platforms import gradescope, nbgrader
from autograder.sandbox import Limits


def gradescope_box(**limits):
    """The sandbox Gradescope's runner opens here (not root: no bubblewrap asked for)."""
    limits = Limits(**{"timeout_given": False, **limits})
    return open_sandbox(Config(limits=limits, platform="gradescope", sandbox_mode="none"))


@pytest.fixture
def counted(monkeypatch, tmp_path):
    """Every self-test that really runs, recorded; students' grading stubbed out."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv(selftest.SKIP_ENV, raising=False)
    calls = []

    def run(sandbox, config, workers=2, work_root=None):
        calls.append(selftest.environment(sandbox, config))
        return {
            "scores": {"solutions": [88.5, 88.5], "blank": [0, 88.5]},
            "seconds": 1.0,
            "cpu": {NB01: 0.25},
            "cpu_cells": {NB01: 0.1},
        }

    monkeypatch.setattr(selftest, "run", run)
    monkeypatch.setattr(classrun, "grade_pool", lambda todo, *a, **k: ([], []))
    return calls


def solved(folder):
    folder.mkdir(parents=True, exist_ok=True)
    nb = nbformat.read(REPO / "solutions" / f"{NB01}.ipynb", as_version=4)
    nbformat.write(nb, folder / f"{NB01}.ipynb")
    return folder


def nbgrader_course(root, monkeypatch):
    """An nbgrader course (its configuration written by `init`) with one submission; the
    gradebook's assignments and writes stubbed (tests/platforms/test_nbgrader_course.py runs them)."""
    course = root / "course"
    nbgrader.init_course(course, generate=False)
    folder = solved(course / "submitted" / "ada" / NB01)
    (folder / "timestamp.txt").write_text(TIMESTAMP)
    monkeypatch.setattr(nbgrader, "course_assignments", lambda coursedir: {NB01: [NB01]})
    monkeypatch.setattr(nbgrader, "write_gradebook", lambda *a, **k: ({}, []))
    return course


@pytest.mark.slow  # grades the course through nbgrader
def test_nbgrader_grade_reuses_the_self_test_grade_just_wrote(counted, tmp_path, monkeypatch):
    solved(tmp_path / "class" / "ada")
    options = ["--sandbox", "none", "--secret", "s", "--quiet", "--workers", "1"]
    monkeypatch.chdir(tmp_path)
    grade = ["grade", str(tmp_path / "class"), "--out", str(tmp_path / "out"), *options]
    assert cli.main(grade) == 0
    assert len(counted) == 1  # grade ran it
    course = nbgrader_course(tmp_path, monkeypatch)
    monkeypatch.chdir(course)  # where an instructor runs it
    before = list(sys.path)
    assert cli.main(["nbgrader", "grade", str(course), *options]) == 0
    assert len(counted) == 1, "nbgrader grade ran its own self-test"
    sys.path[:] = before
    # and the limits count: another --memory is another environment
    assert cli.main([*grade, "--memory", "3"]) == 0
    assert len(counted) == 2


def test_the_key_does_not_follow_the_folder_or_what_this_process_imported(tmp_path, monkeypatch):
    """Loading an nbgrader course puts setuptools' vendored packages on sys.path, and `python -m`
    puts the working folder first: neither is what a kernel in the sandbox imports from."""
    box = gradescope_box()
    base = selftest.environment(box, Config())
    vendored = tmp_path / "_vendor"
    (vendored / "zipp-3.0.0.dist-info").mkdir(parents=True)
    (vendored / "zipp-3.0.0.dist-info" / "METADATA").write_text("Name: zipp\nVersion: 3.0.0\n")
    monkeypatch.syspath_prepend(str(vendored))
    monkeypatch.chdir(vendored)
    assert selftest.environment(box, Config()) == base


def grading_config(settings, tmp_path, monkeypatch):
    """run_autograder's Config for the zip's `settings`, with AUTOGRADER_SANDBOX=none."""
    monkeypatch.setenv("AUTOGRADER_SANDBOX", "none")
    return gradescope.grading_config(settings, "s", tmp_path / "out")


def test_gradescope_grades_under_the_budgets_its_setup_measured(counted, tmp_path, monkeypatch):
    """setup.sh runs `selftest --platform gradescope` with the zip's limits; each submission is
    then graded under the budgets that self-test measured, read from its record (never run
    again per submission)."""
    settings = {**gradescope.DEFAULTS}
    argv = ["selftest", "--platform", "gradescope", "--sandbox", "none"]
    argv += gradescope.selftest_options(settings)
    assert cli.main(argv) == 0
    assert len(counted) == 1
    measured = gradescope.grading_sandbox(grading_config(settings, tmp_path, monkeypatch))
    floor = Limits().measured_floor_seconds  # 3x 0.1 and 3x 0.15 are under it
    assert measured.limits.notebook_budgets(NB01, {"a": 100.0}) == (floor, floor)
    assert len(counted) == 1  # read, not run again
    fixed = {**settings, "timeout": 60.0}
    given = gradescope.grading_sandbox(grading_config(fixed, tmp_path, monkeypatch))  # it wins
    assert given.limits.notebook_budgets(NB01, {"a": 100.0}) == (60.0, 60.0)
    assert "--timeout 60" in " ".join(gradescope.selftest_options(fixed))


def test_a_record_of_other_limits_is_not_read(counted, tmp_path):
    box = gradescope_box()
    selftest.guard(box, Config())
    selftest.guard(box, Config())  # the budgets it derived do not make it another environment
    assert len(counted) == 1
    other = gradescope_box(memory_bytes=2**30)
    assert selftest.recorded(other, Config()) is None
    assert selftest.recorded(gradescope_box(), Config())
    cached = next((tmp_path / "cache").rglob("*.json"))
    assert json.loads(cached.read_text())["cpu_cells"] == {NB01: 0.1}
