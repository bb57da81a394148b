"""The outputs nbval compares: stored in the solutions, right, and nowhere else.

`pytest --nbval-lax solutions/` (part of the README's test command) re-runs each solution and
compares the outputs stored in its cells tagged `nbval-check-output` with fresh ones. Those cells
are exactly the cells tagged `lecture-numbers`; here we check, without running anything, that
their stored outputs hold the lectures' own numbers (test_notebooks.LECTURE, typed in from the
lectures), so nbval compares against the lecture and not against whatever the code once printed,
and that no other cell of solutions/ and no cell of notebooks/ carries outputs.

Refresh the stored outputs after changing such a cell (this runs the solutions headless, with
NBGRADER_EXECUTION set as nbval's kernels have it, and stores only the tagged cells' outputs):

    python tests/course/test_nbval.py --store [01_soft_lookup ...]
"""

import os
import sys
from pathlib import Path

import nbformat
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
from fixtures import LECTURE, SOLUTIONS, WITH_SOLUTION, lecture_lines  # noqa: E402

pytestmark = pytest.mark.slow  # executes whole notebooks (`pytest -m "not slow"` skips it)

REPO = Path(__file__).resolve().parents[2]
NUMBERS, CHECKED = "lecture-numbers", "nbval-check-output"


def tags(cell):
    return cell.get("metadata", {}).get("tags", [])


def read(notebook):
    return nbformat.read(SOLUTIONS / notebook.filename, as_version=4)


@pytest.mark.parametrize("notebook", WITH_SOLUTION, ids=lambda nb: nb.stem)
def test_nbval_compares_exactly_the_lecture_number_cells(notebook):
    for cell in read(notebook).cells:
        assert (NUMBERS in tags(cell)) == (CHECKED in tags(cell)), (
            f"{notebook.filename}, cell {cell.get('id')}: tag both {NUMBERS} and {CHECKED}, or neither"
        )


@pytest.mark.parametrize(
    "notebook", [nb for nb in WITH_SOLUTION if nb.stem in LECTURE], ids=lambda nb: nb.stem
)
def test_the_stored_outputs_hold_the_lectures_numbers(notebook):
    import numpy as np

    found = lecture_lines(read(notebook))
    expected = LECTURE[notebook.stem]
    assert set(found) == set(expected), (
        f"stored lecture lines {sorted(found)}, expected {sorted(expected)}: "
        "run `python tests/course/test_nbval.py --store`"
    )
    for key, value in expected.items():
        if isinstance(np.asarray(value()).flat[0], str):
            assert found[key] == value(), key
        else:
            np.testing.assert_allclose(
                np.asarray(found[key], float), np.asarray(value(), float), rtol=0, atol=1e-6
            )


@pytest.mark.parametrize("notebook", WITH_SOLUTION, ids=lambda nb: nb.stem)
def test_no_other_solution_cell_stores_outputs(notebook):
    for cell in read(notebook).cells:
        if cell.cell_type == "code" and CHECKED not in tags(cell):
            assert cell.outputs == [], f"{notebook.filename}, cell {cell.get('id')} has outputs"
        if cell.cell_type == "code" and CHECKED in tags(cell):
            assert cell.outputs, f"{notebook.filename}, cell {cell.get('id')}: no stored output"
            assert all(o.output_type == "stream" for o in cell.outputs), "text outputs only"


def test_the_test_command_runs_nbval_on_the_solutions():
    """The README's test command (which .ci/run runs) validates solutions/ with nbval, in a run
    of its own without xdist: xdist would deal one notebook's cells to several workers, each
    with a kernel that never ran the cells before."""
    readme = (REPO / "README.md").read_text()
    command = readme.split("<!-- test-command -->", 1)[1].split("```", 2)[1]
    runs = [run.split() for run in command.split("&&")]
    nbval = [run for run in runs if "--nbval-lax" in run]
    assert len(nbval) == 1, command
    assert "solutions" in nbval[0] and "no:xdist" in nbval[0] and "-n" not in nbval[0]


def store(stems=()):
    """Run each solution (or those named) as nbval will; keep its nbval-check-output outputs."""
    from nbclient import NotebookClient

    for notebook in WITH_SOLUTION:
        if stems and notebook.stem not in stems:
            continue
        path = SOLUTIONS / notebook.filename
        original = nbformat.read(path, as_version=4)
        run = nbformat.read(path, as_version=4)
        NotebookClient(
            run,
            timeout=600,
            kernel_name="python3",
            resources={"metadata": {"path": str(SOLUTIONS)}},
        ).execute(env={**os.environ, "NBGRADER_EXECUTION": "autograde"})
        for kept, fresh in zip(original.cells, run.cells, strict=True):
            if kept.cell_type != "code":
                continue
            if CHECKED in tags(kept):
                kept.outputs = [o for o in fresh.outputs if o.output_type == "stream"]
                for o in kept.outputs:
                    o.pop("metadata", None)
                kept.execution_count = fresh.execution_count  # nbval skips unrun cells
            else:
                kept.outputs = []
                kept.execution_count = None
        nbformat.write(original, path)
        print("stored", notebook.filename)


if __name__ == "__main__":
    if sys.argv[1:2] != ["--store"]:
        sys.exit(__doc__)
    store(sys.argv[2:])
