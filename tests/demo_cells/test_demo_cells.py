"""Demonstration cells (autograder/demo_cells.py): the grader skips a submitted cell only when it
is, to the byte after normalisation, a `demo` cell of the RELEASED notebook; never on the
submission's own tags; and a tag is only allowed on a cell whose names nothing graded needs.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograder import demo_cells
from autograder.curriculum import BY_STEM, NOTEBOOKS
from autograder.grading.course_files import course_files
from autograder.release import release_notebook, render
from autograder.sandbox import NotebookJob, Sandbox

REPO = Path(__file__).resolve().parents[2]
SOLUTIONS = REPO / "solutions"
STEM = "01_soft_lookup"


def _solution(stem):
    return nbformat.read(SOLUTIONS / f"{stem}.ipynb", as_version=4)


def _demo_indices(nb):
    return [i for i, cell in enumerate(nb.cells) if demo_cells.is_demo(cell)]


# -- the tags in solutions/ ----------------------------------------------------------------------
@pytest.mark.parametrize("info", NOTEBOOKS, ids=lambda nb: nb.stem)
def test_every_demo_tag_binds_nothing_a_graded_definition_or_an_untagged_cell_needs(info):
    nb = _solution(info.stem)
    assert _demo_indices(nb), f"{info.stem} has no demo cell: nothing would be skipped"
    assert demo_cells.demo_tag_problems(nb, info.graded) == []
    for index in _demo_indices(nb):
        assert not nb.cells[index].metadata.get("nbgrader", {}).get("grade_id"), index


@pytest.mark.parametrize("info", NOTEBOOKS, ids=lambda nb: nb.stem)
def test_the_release_keeps_every_demo_cell_and_its_tag(info):
    solution = _solution(info.stem)
    released = nbformat.read(REPO / "notebooks" / info.filename, as_version=4)
    expected = {demo_cells.fingerprint(solution.cells[i].source) for i in _demo_indices(solution)}
    assert demo_cells.released_demo_fingerprints(info.stem) == expected
    assert len(_demo_indices(released)) == len(_demo_indices(solution))


def _notebook(*cells):
    nb = nbformat.v4.new_notebook()
    for source, tags, grade_id in cells:
        cell = nbformat.v4.new_code_cell(source)
        if tags:
            cell.metadata["tags"] = tags
        if grade_id:
            cell.metadata["nbgrader"] = {"grade_id": grade_id, "solution": True}
        nb.cells.append(cell)
    return nb


@pytest.mark.parametrize(
    "demo_source",
    [
        "scale = 2.0",  # a global a graded function reads
        "for scale in range(3):\n    pass",  # a loop variable is a binding too
        "config['scale'] = 3",  # changing an item of a global changes it
        "import math as scale",
        "def double(x):\n    return 0",  # redefines the graded name
        "import_definitions('05.ipynb', ['scale'], globals())",  # binds anything at all
        "exec('scale = 1')",
    ],
)
def test_a_demo_tag_on_a_cell_that_changes_what_graded_code_reads_is_refused(demo_source):
    nb = _notebook(
        ("scale = 1.0\nconfig = {'scale': 1}", None, None),
        (demo_source, ["demo"], None),
        ("def double(x):\n    return x * scale * config['scale'] * math.pi", None, "double"),
    )
    assert demo_cells.demo_tag_problems(nb, ("double",)) != []


def test_a_demo_cell_whose_names_are_rebound_before_any_untagged_read_is_allowed():
    nb = _notebook(
        ("import numpy as np", None, None),
        (
            "fig = 1\nrng = np.random.default_rng(0)\nrows = [rng.normal() for _ in range(3)]",
            ["demo"],
            None,
        ),  # fmt: skip
        ("if True:\n    fig = 2\n    print(fig)", None, None),  # binds fig itself first
        ("def double(x):\n    return 2 * x", None, "double"),
    )
    assert demo_cells.demo_tag_problems(nb, ("double",)) == []
    # ...but reading it first, even in a comprehension run at once, is a dependency
    nb.cells.append(nbformat.v4.new_code_cell("values = [rng.normal() for _ in range(2)]"))
    assert demo_cells.demo_tag_problems(nb, ("double",)) != []


# -- the decision from trusted data --------------------------------------------------------------
def _write(nb, path):
    path.write_text(render(nb))
    return path


def test_only_released_demo_cells_are_planned_for_skipping_whatever_the_submission_says(
    tmp_path,
):
    released = release_notebook(_solution(STEM))
    demos = _demo_indices(released)
    plan = demo_cells.skip_plan(_write(released, tmp_path / "as_released.ipynb"), STEM)
    assert sorted(int(i) for i in plan) == demos

    student = release_notebook(_solution(STEM))
    own = nbformat.v4.new_code_cell("print('my own work')")
    own.metadata["tags"] = ["demo"]  # a student's tag is worth nothing
    student.cells.append(own)
    first, second = demos[0], demos[1]
    student.cells[first].source += "\nprint('edited')"  # an edited demo cell runs
    student.cells[second].source = student.cells[second].source.replace("\n", "  \r\n") + "\n\n"
    for index in demos[2:]:
        student.cells[index].metadata = {}  # removing the tag changes nothing either
    plan = demo_cells.skip_plan(_write(student, tmp_path / "student.ipynb"), STEM)
    assert sorted(int(i) for i in plan) == demos[1:]  # whitespace alone does not matter

    # AUTOGRADER_SKIP_DEMOS=0, as the run's Config hands it to the plan (grading/plan.py)
    assert demo_cells.skip_plan(tmp_path / "as_released.ipynb", STEM, enabled=False) == {}


# -- in the sandbox ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def sandbox():
    box = Sandbox(course=course_files())
    yield box
    box.close()


def _run(box, nb, tmp_path):
    folder = tmp_path / "submission"
    folder.mkdir()
    path = _write(nb, folder / BY_STEM[STEM].filename)
    (tmp_path / "requests").mkdir()
    skip = demo_cells.skip_plan(path, STEM)  # as grading's plan hands it in
    job = NotebookJob(STEM, BY_STEM[STEM].filename, tmp_path / "requests", {}, skip=skip)
    runs = box.run(folder, [job], tmp_path / "work")
    status = json.loads((tmp_path / "work" / "status" / f"{STEM}.json").read_text())
    return runs[STEM], status


@pytest.mark.slow  # runs a notebook in a real sandbox
def test_the_driver_skips_the_released_demo_cells_and_runs_an_edited_one(sandbox, tmp_path):
    nb = _solution(STEM)
    demos = _demo_indices(nb)
    edited = demos[-1]
    nb.cells[edited].source += "\nraise RuntimeError('the edited demo cell ran')"
    own = nbformat.v4.new_code_cell("raise ValueError('a cell the student tagged demo ran')")
    own.metadata["tags"] = ["demo"]
    nb.cells.append(own)
    run, status = _run(sandbox, nb, tmp_path)
    assert status["skipped_cells"] == len(demos) - 1
    errors = {(e["cell"], e["type"]) for e in run.cell_errors}
    assert errors == {(edited, "RuntimeError"), (len(nb.cells) - 1, "ValueError")}


# -- the whole course: skipping changes no result ------------------------------------------------
def _grade(folder, out, skip):
    env = dict(os.environ, COURSE_SECRET="demo-cells-test", AUTOGRADER_SKIP_DEMOS=skip)
    done = subprocess.run(
        [sys.executable, "-m", "autograder", "grade", str(folder), "--out", str(out)]
        + ["--workers", "1", "--quiet"],
        capture_output=True,
        text=True,
        env=env,
        timeout=1800,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    results = json.loads((out / folder.name / "results.json").read_text())
    for info in results["notebooks"].values():
        info.pop("seconds", None)
    results.pop("execution_time")
    return results


@pytest.mark.slow
def test_grading_the_solutions_with_demo_cells_skipped_gives_full_marks_and_the_same_results(
    tmp_path,
):
    folder = tmp_path / "solutions"
    folder.mkdir()
    for info in NOTEBOOKS:
        (folder / info.filename).write_bytes((SOLUTIONS / info.filename).read_bytes())
    skipped = _grade(folder, tmp_path / "skipped", "1")
    everything = _grade(folder, tmp_path / "everything", "0")
    assert skipped["score"] == skipped["max_score"] > 0
    assert all(not info["cell_errors"] for info in skipped["notebooks"].values())
    # the same verdicts; what the run cost is the point of skipping (and differs)
    assert skipped.pop("cpu_seconds") < everything.pop("cpu_seconds")
    assert skipped == everything
