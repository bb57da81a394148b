"""nbgrader's points in the solution notebooks are the hidden tests' points, name by name.

Instructors see the points in the notebooks (and nbgrader uses them); the grader awards the
probes' points. The two must not drift apart.
"""

import math

import nbformat
import pytest

from autograder.course.probes import build_cases
from autograder.curriculum import NOTEBOOKS
from autograder.release import SOLUTIONS

WRITTEN = [nb for nb in NOTEBOOKS if (SOLUTIONS / nb.filename).exists()]


@pytest.mark.parametrize("notebook", WRITTEN, ids=lambda nb: nb.stem)
def test_notebook_points_equal_probe_points(notebook):
    cells = nbformat.read(SOLUTIONS / notebook.filename, as_version=4).cells
    in_notebook = {}
    for cell in cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade") and meta.get("grade_id", "").startswith("test_"):
            in_notebook[meta["grade_id"].removeprefix("test_")] = meta["points"]
    in_probes = {}
    for case in build_cases(notebook.stem, seed="points"):
        in_probes[case.function] = in_probes.get(case.function, 0.0) + case.points
    assert set(in_notebook) == set(notebook.graded), "one visible-check cell per graded name"
    for name in notebook.graded:
        assert math.isclose(in_notebook[name], in_probes[name]), (
            f"{notebook.filename}: test_{name} is worth {in_notebook[name]} points in the "
            f"notebook but {in_probes[name]} in its hidden tests (autograder/course/)"
        )
