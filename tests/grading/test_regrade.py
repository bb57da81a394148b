"""Regrading as an instructor does it: one student (`grade CLASS/<student> --force`) or one
notebook (`grade CLASS --notebook STEM`), without losing anyone else's grades."""

import csv
import json
from pathlib import Path

import nbformat
import pytest

from autograder.__main__ import main
from autograder.curriculum import NOTEBOOKS
from autograder.report import write_student

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow  # grades in a real sandbox (`pytest -m "not slow"` skips it)


def course_points():
    """The hidden tests' points, as the solutions' test cells carry them (nbgrader metadata)."""
    total = 0.0
    for nb in NOTEBOOKS:
        for cell in nbformat.read(REPO / "solutions" / nb.filename, as_version=4).cells:
            meta = cell.metadata.get("nbgrader", {})
            if meta.get("grade") and str(meta.get("grade_id", "")).startswith("test_"):
                total += float(meta["points"])
    return total


def test_regrading_one_student_rebuilds_the_class_files(tmp_path):
    """`grade CLASS/<student> --out OUT --force`: that student is graded again and grades.csv
    still lists everyone graded into OUT before."""
    out, cls = tmp_path / "grades", tmp_path / "class"
    earlier = {
        "score": 3.0, "max_score": 88.5, "student": "ada", "output": "",
        "notebooks": {"01_soft_lookup": {"score": 3.0, "max_score": 6.5}},
        "tests": [{"notebook": "01_soft_lookup", "function": "lookup", "name": "lookup: x",
                   "score": 3.0, "max_score": 6.5, "status": "failed", "output": "",
                   "misconceptions": []}],
    }  # fmt: skip
    write_student(out / "ada", earlier)
    (cls / "bob").mkdir(parents=True)
    (cls / "bob" / "notes.txt").write_text("no notebook handed in yet")
    status = main(["grade", str(cls / "bob"), "--out", str(out), "--force", "--quiet",
                   "--secret", "s", "--layout", "student"])  # fmt: skip
    assert status == 0
    bob = json.loads((out / "bob" / "results.json").read_text())
    assert bob["score"] == 0 and bob["max_score"] == course_points()
    rows = {r["student"]: r for r in csv.DictReader((out / "grades.csv").open())}
    assert set(rows) == {"ada", "bob"} and rows["ada"]["total"] == "3"


def _saved(student, per_notebook=1.0):
    tests = [
        {"notebook": nb.stem, "function": nb.graded[0], "name": f"{nb.graded[0]}: kept",
         "score": per_notebook, "max_score": 2.0, "status": "failed", "output": "earlier",
         "misconceptions": []}
        for nb in NOTEBOOKS
    ]  # fmt: skip
    notebooks = {nb.stem: {"score": per_notebook, "max_score": 2.0} for nb in NOTEBOOKS}
    return {"score": per_notebook * len(NOTEBOOKS), "max_score": 2.0 * len(NOTEBOOKS), "student": student, "output": "",
            "notebooks": notebooks, "tests": tests}  # fmt: skip


def test_regrading_one_notebook_keeps_the_other_notebooks_verdicts(tmp_path):
    out, cls = tmp_path / "grades", tmp_path / "class"
    for student in ("ada", "bob"):
        (cls / student).mkdir(parents=True)
        (cls / student / "notes.txt").write_text("the notebooks were withdrawn")
    write_student(out / "ada", _saved("ada"))  # ada was graded before; bob never was
    status = main(["grade", str(cls), "--out", str(out), "--quiet", "--secret", "s",
                   "--notebook", "03_matrix_attention"])  # fmt: skip
    assert status == 0
    ada = json.loads((out / "ada" / "results.json").read_text())
    kept = [t for t in ada["tests"] if t["output"] == "earlier"]
    assert sorted({t["notebook"] for t in kept}) == sorted(
        nb.stem for nb in NOTEBOOKS if nb.stem != "03_matrix_attention"
    )
    regraded = [t for t in ada["tests"] if t["notebook"] == "03_matrix_attention"]
    assert regraded and all("was not found" in t["output"] for t in regraded)
    assert ada["score"] == len(NOTEBOOKS) - 1  # the kept notebooks at 1 point, notebook 03 now 0
    assert [t["notebook"] for t in ada["tests"]] == sorted(
        (t["notebook"] for t in ada["tests"]), key=[nb.stem for nb in NOTEBOOKS].index
    )  # in the course's order, as a full grading writes them
    bob = json.loads((out / "bob" / "results.json").read_text())  # nothing to keep: all graded
    assert {t["notebook"] for t in bob["tests"]} == {nb.stem for nb in NOTEBOOKS}
    rows = {r["student"]: r for r in csv.DictReader((out / "grades.csv").open())}
    assert rows["ada"]["03_matrix_attention"] == "0" and rows["ada"]["01_soft_lookup"] == "1"
