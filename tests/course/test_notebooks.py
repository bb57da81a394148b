"""The notebooks themselves: solutions run and reproduce the lectures' numbers; releases are clean.

Generic over autograder.curriculum.NOTEBOOKS: a notebook is tested as soon as its file exists in
solutions/ (and notebooks/ for the released checks); nothing is skipped.

A notebook states a lecture number by printing, in a cell tagged "lecture-numbers", a line

    lecture: <key> = <Python literal>

(`inf` allowed), or `checked: <key> = <literal>` for a number the lecture never printed (derived
from the lecture's by hand, or the course's own hand-worked example). LECTURE below holds the lectures' own values for every key, typed in here from
the lectures (or derived in this file from them by hand-checkable arithmetic), never produced by
the code under test. Authors of notebooks 04-06: add your keys to LECTURE.
"""

import shutil

import nbformat
import numpy as np
import pytest
from fixtures import (
    LECTURE,
    REPO,
    SOLUTIONS,
    WITH_SOLUTION,
    execute,
    executed_solution,
    lecture_lines,
    stdout,
    without_ipywidgets,
)

from autograder.curriculum import BY_STEM, NOTEBOOKS, OPTIONAL

RELEASED = REPO / "notebooks"

WITH_RELEASE = [nb for nb in NOTEBOOKS if (RELEASED / nb.filename).exists()]


HAND_V = np.array([[0, 1], [1, 0], [2, 1], [1, 2]], dtype=float)


def errors(nb):
    """'cell <id>: <error>' for every cell that raised."""
    found = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            if out.output_type == "error":
                found.append(f"cell {cell.get('id')}: {out.ename}: {out.evalue}")
    return found


def warnings_printed(nb):
    """'cell <id>: <line>' for every line of stderr that names a warning (a progress bar is not)."""
    return [
        f"cell {cell.get('id')}: {line.strip()}"
        for cell in nb.cells
        for out in cell.get("outputs", [])
        if out.output_type == "stream" and out.get("name") == "stderr"
        for line in out.get("text", "").splitlines()
        if "Warning" in line
    ]


def grade_id(cell):
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


def check_cell(nb, name):
    cells = [c for c in nb.cells if grade_id(c) == f"test_{name}"]
    assert len(cells) == 1, f"expected one check cell with grade_id test_{name}, found {len(cells)}"
    return cells[0]


@pytest.mark.slow
@pytest.mark.parametrize("notebook", WITH_SOLUTION, ids=lambda nb: nb.stem)
def test_solution_runs_without_errors_and_passes_its_checks(notebook):
    nb = executed_solution(notebook.stem)
    assert not errors(nb), "the solution notebook raised:\n" + "\n".join(errors(nb))
    assert not warnings_printed(nb), "the solution warns:\n" + "\n".join(warnings_printed(nb))
    for name in notebook.graded:
        out = stdout(check_cell(nb, name))
        assert f"✓ {name} passes all" in out, f"visible check of {name} in the solution: {out!r}"


@pytest.mark.slow
@pytest.mark.parametrize(
    "notebook",
    [nb for nb in OPTIONAL if (SOLUTIONS / nb.filename).exists()],
    ids=lambda nb: nb.stem,
)
def test_an_optional_notebook_runs_and_its_own_checks_pass(notebook):
    """An ungraded notebook keeps its checks as assertions in its cells: none may raise."""
    nb = execute(SOLUTIONS / notebook.filename, cwd=SOLUTIONS)
    assert not errors(nb), "the optional notebook raised:\n" + "\n".join(errors(nb))


def test_the_block_notebook_is_no_longer_than_the_one_that_trains_the_model():
    """05 was the course's cliff (twice any other notebook); its side topics live in 05b."""
    block, lm = (
        nbformat.read(SOLUTIONS / BY_STEM[stem].filename, as_version=4)
        for stem in ("05_transformer_block", "06_autoregressive_lm")
    )
    assert len(block.cells) <= len(lm.cells), (len(block.cells), len(lm.cells))


@pytest.mark.slow
@pytest.mark.parametrize(
    "notebook", [nb for nb in WITH_SOLUTION if nb.stem in LECTURE], ids=lambda nb: nb.stem
)
def test_solution_reproduces_the_lectures_numbers(notebook):
    found = lecture_lines(executed_solution(notebook.stem))
    expected = LECTURE[notebook.stem]
    assert set(found) == set(expected), (
        f"lecture keys printed {sorted(found)}, expected {sorted(expected)} "
        "(a key missing from the output: did the cell tagged lecture-numbers run its body?)"
    )
    for key, value in expected.items():
        if isinstance(np.asarray(value()).flat[0], str):  # words, not numbers: exactly equal
            assert found[key] == value(), f"{notebook.stem}: lecture table {key!r}"
            continue
        np.testing.assert_allclose(
            np.asarray(found[key], dtype=float),
            np.asarray(value(), dtype=float),
            rtol=0,
            atol=1e-6,
            err_msg=f"{notebook.stem}: lecture number {key!r}",
        )


@pytest.mark.parametrize("notebook", WITH_RELEASE, ids=lambda nb: nb.stem)
def test_released_notebook_leaks_nothing(notebook):
    nb = nbformat.read(RELEASED / notebook.filename, as_version=4)
    nbformat.validate(nb)
    for cell in nb.cells:
        where = f"{notebook.filename}, cell {cell.get('id')}"
        for marker in ("BEGIN SOLUTION", "END SOLUTION", "HIDDEN TESTS", "assert_passes("):
            assert marker not in cell.source, f"{where} still contains {marker!r}"
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, f"{where} has outputs"
    for name in notebook.graded:
        cells = [c for c in nb.cells if grade_id(c) == name]
        assert len(cells) == 1, f"{notebook.filename}: expected one exercise cell for {name}"
        assert "raise NotImplementedError()" in cells[0].source, f"{name} is not a stub"
        assert f'check("{name}", {name})' in check_cell(nb, name).source


@pytest.mark.slow
@pytest.mark.parametrize("notebook", WITH_RELEASE, ids=lambda nb: nb.stem)
def test_released_notebook_runs_and_every_stub_is_not_implemented(notebook, tmp_path):
    shutil.copytree(RELEASED, tmp_path / "notebooks")  # with its siblings, as a student has it
    nb = execute(
        tmp_path / "notebooks" / notebook.filename,
        cwd=tmp_path / "notebooks",
        env=without_ipywidgets(tmp_path / "no-widgets"),
    )
    assert not errors(nb), "the released notebook raised:\n" + "\n".join(errors(nb))
    assert not warnings_printed(nb), "a fresh install warns:\n" + "\n".join(warnings_printed(nb))
    for name in notebook.graded:
        out = stdout(check_cell(nb, name))
        assert f"{name} is not implemented yet" in out, (
            f"the check of the stub {name} printed {out!r}; expected 'not implemented yet'"
        )
