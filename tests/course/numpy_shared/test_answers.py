"""Every "going further" question of notebooks 01-04 has an answer in solutions/answers/, and every
written ("in words") question is an nbgrader manually graded cell with a rubric the release strips."""

import re
from pathlib import Path

import nbformat
import pytest
from fixtures import manual_cells

from autograder.curriculum import NOTEBOOKS
from autograder.release import SOLUTIONS, release_notebook

ANSWERS = SOLUTIONS / "answers"
WITH_ANSWERS = NOTEBOOKS[
    :4
]  # 05-06 (their questions' lists differ): tests/course/torch_shared/test_answers_05_06.py
QUESTION = re.compile(r"^(\d+)\. \*\*(.+?)\*\*", re.MULTILINE)


def going_further(notebook):
    cells = nbformat.read(SOLUTIONS / notebook.filename, as_version=4).cells
    text = "\n".join(c.source for c in cells if c.cell_type == "markdown")
    section = text.split("## Going further", 1)[1]
    return [(int(n), title.strip()) for n, title in QUESTION.findall(section)]


@pytest.mark.parametrize("notebook", WITH_ANSWERS, ids=lambda nb: nb.stem)
def test_every_going_further_question_has_an_answer(notebook):
    questions = going_further(notebook)
    assert questions, f"{notebook.filename}: no numbered questions under '## Going further'"
    answers = re.findall(
        r"^### (\d+)\. (.+?)$", (ANSWERS / f"{notebook.stem}.md").read_text(), re.M
    )
    assert [(int(n), t.strip()) for n, t in answers] == questions


@pytest.mark.parametrize("notebook", WITH_ANSWERS, ids=lambda nb: nb.stem)
def test_one_manually_graded_written_answer_whose_rubric_the_release_strips(notebook):
    solution = nbformat.read(SOLUTIONS / notebook.filename, as_version=4)
    (cell,) = manual_cells(solution)
    meta = cell.metadata["nbgrader"]
    assert meta["solution"] and meta["points"] > 0
    assert not meta["grade_id"].startswith("test_")  # not an automatic test: no probe points
    assert "Rubric" in cell.source
    (released,) = manual_cells(release_notebook(solution))
    assert "Rubric" not in released.source and "BEGIN SOLUTION" not in released.source


def test_answers_are_not_notebooks():
    assert not list(Path(ANSWERS).glob("*.ipynb"))
