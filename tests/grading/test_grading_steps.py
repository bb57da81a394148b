"""The grading steps of one run (autograder/grading/), without a sandbox: one student's
results.json written once, late penalties already in it; the class report from memory."""

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path

import nbformat

from autograder.config import Config
from autograder.curriculum import BY_STEM
from autograder.deadlines import LatePolicy
from autograder.grading import course_files as course_files_module
from autograder.grading import plan, student
from autograder.grading.course_files import course_files
from autograder.grading.plan import NotebookPlan, plan_notebooks
from autograder.grading.run_state import RunState
from autograder.grading.saved import class_results
from autograder.grading.student import StudentResult
from autograder.report import write_student
from autograder.sandbox import CourseFiles, Limits, Sandbox

REPO = Path(__file__).resolve().parents[2]
STEM = "01_soft_lookup"


def only_notebook_01(monkeypatch):
    """Cases for notebook 01's names alone: the other notebooks' (torch) cannot be cheap."""
    monkeypatch.setattr(plan, "registered_probes", lambda: set(BY_STEM[STEM].graded))


def test_one_student_is_written_once_with_the_late_penalty_in_it(tmp_path, monkeypatch):
    only_notebook_01(monkeypatch)
    due, handed_in = datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 1, 3, tzinfo=UTC)
    settings = Config(
        out=tmp_path / "out",
        secret="s",
        limits=Limits(),
        deadlines=LatePolicy(due={STEM: due}, method="zero"),
        handed_in={"sam": {STEM: handed_in}},  # a record: load_handed_in's keys
    )
    written = []
    monkeypatch.setattr(
        student, "write_student", lambda folder, payload: written.append(json.dumps(payload))
    )
    (tmp_path / "sam").mkdir()  # no notebook at all: nothing for the sandbox to run
    run = RunState(work_root=tmp_path)
    result = student.grade_student("sam", tmp_path / "sam", settings, sandbox=None, run=run)
    assert len(written) == 1
    payload = json.loads(written[0])
    # a notebook never handed in has no hand-in time, whatever the record says: never "late"
    assert payload["late"]["notebooks"][STEM]["seconds_late"] == 0
    assert payload["late"]["notebooks"][STEM]["handed_in"] is None
    assert payload["late"]["penalty"] == 0
    assert payload == json.loads(json.dumps(result.results))
    assert payload["tests"] and {t["reason"] for t in payload["tests"]} == {"missing-notebook"}


def test_a_plan_says_why_a_notebook_is_not_run(tmp_path, monkeypatch):
    only_notebook_01(monkeypatch)
    settings = Config(out=tmp_path / "out", secret="s", limits=Limits())
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


def test_the_plan_hands_the_sandbox_the_released_demo_cells_to_skip(tmp_path, monkeypatch):
    """The skip plan is the plan's: the released notebook's demo cells, found in the very
    normalised copy the sandbox runs; an edited demo cell is not in it."""
    only_notebook_01(monkeypatch)
    settings = Config(out=tmp_path / "out", secret="s", limits=Limits())
    released = nbformat.read(REPO / "notebooks" / f"{STEM}.ipynb", as_version=4)
    demos = [i for i, c in enumerate(released.cells) if "demo" in c.metadata.get("tags", [])]
    assert len(demos) >= 2
    released.cells[demos[0]].source += "\nprint('edited')"
    (tmp_path / "sam").mkdir()
    nbformat.write(released, tmp_path / "sam" / f"{STEM}.ipynb")
    (tmp_path / "work").mkdir()
    plans = plan_notebooks("sam", tmp_path / "sam", settings, tmp_path / "work", {}, {})
    [job] = [p.job for p in plans if p.notebook.stem == STEM]
    assert sorted(int(i) for i in job.skip) == demos[1:]
    prepared = nbformat.read(tmp_path / "work" / "prepared" / f"{STEM}.ipynb", as_version=4)
    for index, digest in job.skip.items():
        source = prepared.cells[int(index)].source
        assert hashlib.sha256(source.encode("utf-8")).hexdigest() == digest


def test_the_sandbox_is_handed_the_course_files(tmp_path, monkeypatch):
    """What the notebooks import inside (a silent checks.py, coursedata) and the data their
    loaders read come from grading (course_files); a sandbox made without them has the harness."""
    files = course_files()
    assert dict(files.modules)["autograder/checks.py"] == course_files_module.STUB_CHECKS
    # The coursedata the grader imports: this checkout's data/ when the venv was installed from
    # it, another clone's otherwise; either way the same files as this checkout's.
    handed = dict(files.packages)["coursedata"]
    for name in ("__init__.py", *(p.name for p in (REPO / "data").glob("*.json"))):
        assert (handed / name).read_bytes() == (REPO / "data" / name).read_bytes()
    monkeypatch.setattr(Sandbox, "_warm_matplotlib", lambda self: None)
    data = tmp_path / "corpus.txt"
    data.write_text("to be")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("X = 1\n")
    box = Sandbox.__new__(Sandbox)
    box.lib = tmp_path / "with"
    box.course = CourseFiles(
        (("autograder/checks.py", "Y = 2\n"),), (("pkg", tmp_path / "pkg"),), (data,)
    )
    box._build_lib()
    lib = tmp_path / "with" / "lib"
    assert (lib / "autograder" / "checks.py").read_text() == "Y = 2\n"
    assert (lib / "pkg" / "__init__.py").read_text() == "X = 1\n"
    assert (lib / "autograder" / "harness" / "serve.py").exists()
    assert box.extra_data == [data]
    bare = Sandbox.__new__(Sandbox)
    bare.lib = tmp_path / "bare"
    bare.course = CourseFiles()
    bare._build_lib()
    assert not (tmp_path / "bare" / "lib" / "autograder" / "checks.py").exists()
    assert not (tmp_path / "bare" / "lib" / "coursedata").exists()
    assert bare.extra_data == []
