"""The grading steps of one run (autograder/grading/), without a sandbox: one student's
results.json written once, late penalties already in it; the class report from memory."""

import json
from datetime import UTC, datetime

from autograder.curriculum import BY_STEM
from autograder.deadlines import LatePolicy
from autograder.grading import plan, student
from autograder.grading.classrun import class_results
from autograder.grading.plan import NotebookPlan, plan_notebooks
from autograder.grading.settings import Settings
from autograder.grading.student import StudentResult
from autograder.report import write_student
from autograder.sandbox import Limits

STEM = "01_soft_lookup"


def only_notebook_01(monkeypatch):
    """Cases for notebook 01's names alone: the other notebooks' (torch) cannot be cheap."""
    monkeypatch.setattr(plan, "registered_probes", lambda: set(BY_STEM[STEM].graded))


def test_one_student_is_written_once_with_the_late_penalty_in_it(tmp_path, monkeypatch):
    only_notebook_01(monkeypatch)
    due, handed_in = datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 1, 3, tzinfo=UTC)
    settings = Settings(
        out=tmp_path / "out",
        secret="s",
        limits=Limits(),
        deadlines=LatePolicy(due={STEM: due}, method="zero"),
        handed_in={"sam": {STEM: handed_in}},
        work_root=tmp_path,
    )
    written = []
    monkeypatch.setattr(
        student, "write_student", lambda folder, payload: written.append(json.dumps(payload))
    )
    (tmp_path / "sam").mkdir()  # no notebook at all: nothing for the sandbox to run
    result = student.grade_student("sam", tmp_path / "sam", settings, sandbox=None)
    assert len(written) == 1
    payload = json.loads(written[0])
    assert payload["late"]["notebooks"][STEM]["seconds_late"] == 2 * 24 * 3600
    assert payload == json.loads(json.dumps(result.results))
    assert payload["tests"] and {t["reason"] for t in payload["tests"]} == {"missing-notebook"}


def test_a_plan_says_why_a_notebook_is_not_run(tmp_path, monkeypatch):
    only_notebook_01(monkeypatch)
    settings = Settings(out=tmp_path / "out", secret="s", limits=Limits())
    (tmp_path / "sam").mkdir()
    (tmp_path / "sam" / "02_dot_product_softmax.ipynb").write_text("not json")
    (tmp_path / "work").mkdir()
    plans = plan_notebooks("sam", tmp_path / "sam", settings, tmp_path / "work", {}, {})
    by_stem = {p.notebook.stem: p for p in plans}
    assert all(isinstance(p, NotebookPlan) and p.job is None for p in plans)
    assert by_stem[STEM].reason == "missing-notebook" and not by_stem[STEM].submitted
    unreadable = by_stem["02_dot_product_softmax"]
    assert unreadable.reason == "corrupt" and unreadable.submitted
    assert unreadable.note.startswith("not tested: ")


def test_the_class_report_reads_this_runs_students_from_memory(tmp_path):
    out = tmp_path / "out"
    earlier = {"score": 1.0, "max_score": 2.0, "student": "zed", "tests": []}
    write_student(out / "zed", earlier)  # graded by an earlier run, not seen now
    on_disk = {"score": 0.0, "max_score": 2.0, "student": "sam", "tests": []}
    write_student(out / "sam", on_disk)
    now = {"score": 2.0, "max_score": 2.0, "student": "sam", "tests": []}
    students = class_results(out, [StudentResult("sam", now)])
    assert [(s.student, s.results["score"]) for s in students] == [("sam", 2.0), ("zed", 1.0)]
