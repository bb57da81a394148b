"""An nbgrader course of this course, set up, graded and exported the documented way (README,
"For instructors: nbgrader"): `python -m autograder nbgrader init`, students' submissions in
nbgrader's submitted/ tree, `python -m autograder nbgrader grade`, `nbgrader export`.

One course holds both layouts: one assignment per notebook, and one assignment ("attention")
holding all six. Few notebooks per student keep it fast."""

import csv
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograder.curriculum import BY_STEM
from autograder.probes.base import build_cases

REPO = Path(__file__).resolve().parent.parent
SECRET = "nbgrader-test-secret"
NB01, NB02, NB03 = "01_soft_lookup", "02_dot_product_softmax", "03_matrix_attention"
TIMESTAMP = "2026-03-01 12:00:00.000000 UTC"


def build_class_module():
    spec = importlib.util.spec_from_file_location(
        "build_class", REPO / "examples" / "build_class.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def max_points(stem):
    """The automatic points: the hidden tests' (the probes')."""
    return sum(case.points for case in build_cases(stem, seed="points"))


def manual_points(stem):
    """The written answers' points: nbgrader's manual grading only (markdown solution cells)."""
    path = REPO / "solutions" / f"{stem}.ipynb"
    if not path.exists():
        return 0.0
    cells = nbformat.read(path, as_version=4).cells
    return sum(
        c.metadata["nbgrader"]["points"]
        for c in cells
        if c.cell_type == "markdown" and c.metadata.get("nbgrader", {}).get("grade")
    )


def run(args, cwd=None, timeout=900):
    env = {k: v for k, v in os.environ.items() if k != "COURSE_SECRET"}
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)
    return done


def submit(course, student, assignment, stem, nb):
    folder = course / "submitted" / student / assignment
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, folder / f"{stem}.ipynb")
    (folder / "timestamp.txt").write_text(TIMESTAMP)


def read(path):
    return nbformat.read(path, as_version=4)


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """The course after init (both layouts), submissions, grade and export."""
    course = tmp_path_factory.mktemp("nbgrader") / "attention_course"
    course.mkdir()
    # what `nbgrader quickstart` leaves: a config with a header notebook the course must not get
    (course / "nbgrader_config.py").write_text(
        'c = get_config()  #noqa\nc.CourseDirectory.course_id = "attention_course"\n'
        'c.IncludeHeaderFooter.header = "source/header.ipynb"\n'
    )
    (course / "source").mkdir()
    header = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# HEADER")])
    nbformat.write(header, course / "source" / "header.ipynb")
    for layout in ("per-notebook", "single"):
        done = run(
            [sys.executable, "-m", "autograder", "nbgrader", "init", str(course)]
            + ["--layout", layout]
        )
        assert done.returncode == 0, done.stdout + done.stderr

    bc = build_class_module()
    solution = {s: read(REPO / "solutions" / f"{s}.ipynb") for s in (NB01, NB02, NB03)}
    released = {s: read(course / "release" / s / f"{s}.ipynb") for s in (NB01, NB02, NB03)}
    two_mistakes = bc.Student(
        "two_mistakes",
        "02 forgets the scale in scaled_scores; 03 masks after the softmax",
        mistakes=(
            bc.Body(NB02, "scaled_scores", bc.NO_SCALE_02),
            bc.Body(NB03, "scaled_dot_product_attention", bc.MASK_AFTER_SOFTMAX),
        ),
    )
    for stem in (NB01, NB02, NB03):  # 03 uses the student's own softmax from 02
        submit(course, "solutions", stem, stem, solution[stem])
    for stem in (NB01, NB03):
        submit(course, "stubs", stem, stem, released[stem])
    for stem in (NB02, NB03):
        submit(
            course,
            "two_mistakes",
            stem,
            stem,
            bc.student_notebook(solution[stem], two_mistakes, stem),
        )
    cheater = bc.BY_NAME["cheater"]
    submit(course, "cheater", NB03, NB03, bc.student_notebook(solution[NB03], cheater, NB03))
    submit(course, "single", "attention", NB01, solution[NB01])  # the six-in-one assignment
    submit(course, "single", "attention", NB02, released[NB02])

    graded = run(
        [sys.executable, "-m", "autograder", "nbgrader", "grade", str(course)]
        + ["--secret", SECRET, "--workers", "2", "--quiet"]
    )
    assert graded.returncode == 0, graded.stdout + graded.stderr
    exported = run(["nbgrader", "export", "--to", "grades.csv"], cwd=course)
    assert exported.returncode == 0, exported.stdout + exported.stderr
    with open(course / "grades.csv") as handle:
        rows = list(csv.DictReader(handle))
    scores = {(r["student_id"], r["assignment"]): float(r["score"]) for r in rows}
    maxima = {r["assignment"]: float(r["max_score"]) for r in rows}
    return {"path": course, "scores": scores, "maxima": maxima, "bc": bc, "log": graded.stdout}


def test_init_generates_the_student_notebooks_exactly(course):
    path = course["path"]
    for stem in BY_STEM:
        generated = (path / "release" / stem / f"{stem}.ipynb").read_text()
        assert generated.strip() == (REPO / "notebooks" / f"{stem}.ipynb").read_text().strip()
        in_single = path / "release" / "attention" / f"{stem}.ipynb"
        assert in_single.read_text().strip() == generated.strip()
    assert "HEADER" not in (path / "release" / NB01 / f"{NB01}.ipynb").read_text()


def test_export_max_scores_are_the_hidden_tests_points_plus_the_written_answers(course):
    """nbgrader's maximum adds the manually graded written answers; the automatic scores below
    (solutions get exactly the probes' points) stay those of every other platform."""
    for stem in (NB01, NB02, NB03):
        assert manual_points(stem) > 0
        assert course["maxima"][stem] == pytest.approx(max_points(stem) + manual_points(stem))
    assert course["maxima"]["attention"] == pytest.approx(
        sum(max_points(s) + manual_points(s) for s in BY_STEM)
    )


def test_solutions_full_marks_stubs_zero(course):
    scores = course["scores"]
    for stem in (NB01, NB02, NB03):
        assert scores[("solutions", stem)] == pytest.approx(max_points(stem))
    for stem in (NB01, NB03):
        assert scores[("stubs", stem)] == 0
    # the six-in-one assignment: the solution of 01 and the stub of 02
    assert scores[("single", "attention")] == pytest.approx(max_points(NB01))


def test_two_mistakes_score_as_the_standalone_grader_does(course, tmp_path):
    folder = tmp_path / "class" / "two_mistakes"
    for stem in (NB02, NB03):
        source = course["path"] / "submitted" / "two_mistakes" / stem / f"{stem}.ipynb"
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, folder)
    done = run(
        [sys.executable, "-m", "autograder", "grade", str(tmp_path / "class")]
        + ["--out", str(tmp_path / "grades"), "--secret", SECRET, "--workers", "1", "--quiet"]
    )
    assert done.returncode == 0, done.stderr
    with open(tmp_path / "grades" / "grades.csv") as handle:
        [row] = list(csv.DictReader(handle))
    for stem in (NB02, NB03):
        nbgrader_score = course["scores"][("two_mistakes", stem)]
        assert nbgrader_score == pytest.approx(float(row[stem]))
        assert 0 < nbgrader_score < max_points(stem)  # partial credit, not all or nothing


def test_the_cheat_scores_zero_on_the_attacked_function(course):
    from nbgrader.api import Gradebook

    path = course["path"]
    with Gradebook(f"sqlite:///{path / 'gradebook.db'}", "attention_course") as gb:
        attacked = gb.find_grade("test_scaled_dot_product_attention", NB03, NB03, "cheater")
        assert attacked.score == 0 and attacked.max_score > 0
        honest = gb.find_grade("test_attention_scores", NB03, NB03, "cheater")
        assert honest.score == honest.max_score  # the rest of its notebook is right
        submission = gb.find_submission(NB03, "cheater")
        assert submission.timestamp is not None
    assert 0 < course["scores"][("cheater", NB03)] < max_points(NB03)


def test_nbgrader_autograde_refuses_to_run_student_code(course):
    """The configuration `init` writes makes `nbgrader autograde` stop before executing."""
    path = course["path"]
    marker = path / "student-code-ran"
    canary = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(f"open({str(marker)!r}, 'w').write('ran')")]
    )
    submit(path, "canary", NB01, NB01, canary)
    done = run(["nbgrader", "autograde", NB01, "--student", "canary"], cwd=path)
    assert done.returncode != 0
    assert "python -m autograder nbgrader grade" in done.stdout + done.stderr
    assert not marker.exists()


def test_notebook_06_finds_the_students_05_next_to_it(tmp_path, monkeypatch):
    """One assignment per notebook: the student's own 05 sits in a sibling assignment folder
    (their work tree, nbgrader's submitted/ tree); in the grader's folder it is inside."""
    from coursedata import import_definitions

    from autograder.submissions import discover

    ada = REPO / "examples" / "class" / "ada"
    course = tmp_path / "submitted" / "ada"
    for stem in ("05_transformer_block", "06_autoregressive_lm"):
        (course / stem).mkdir(parents=True)
        shutil.copy2(ada / f"{stem}.ipynb", course / stem)
    monkeypatch.chdir(course / "06_autoregressive_lm")
    found = import_definitions("05_transformer_block.ipynb", ["TransformerBlock"])
    import torch

    block = found["TransformerBlock"](8, 2, 16)
    assert block(torch.zeros(1, 3, 8)).shape == (1, 3, 8)

    [sub] = discover(
        tmp_path / "submitted", staging=tmp_path / "staging", graded_groups={"06_autoregressive_lm"}
    )
    assert sorted(p.name for p in sub.folder.glob("*.ipynb")) == ["06_autoregressive_lm.ipynb"]
    monkeypatch.chdir(sub.folder)
    assert "TransformerBlock" in import_definitions("05_transformer_block.ipynb")

    # copies in folders named otherwise are not the student's notebook 05: never picked up
    (course / "backup").mkdir()
    shutil.copy2(ada / "05_transformer_block.ipynb", course / "backup")
    shutil.rmtree(course / "05_transformer_block")
    monkeypatch.chdir(course / "06_autoregressive_lm")
    with pytest.raises(FileNotFoundError, match="cannot find 05_transformer_block.ipynb"):
        import_definitions("05_transformer_block.ipynb")


def test_results_and_feedback_are_kept_in_the_course(course):
    results = course["path"] / "autograder_grades" / "all" / "two_mistakes" / "results.json"
    payload = json.loads(results.read_text())
    assert {t["notebook"] for t in payload["tests"] if t["score"] > 0} == {NB02, NB03}
    assert (results.parent / "feedback.html").exists()
