"""Release: generate the student notebooks in notebooks/ from the instructor's solutions/.

The solutions are nbgrader source notebooks. Releasing runs nbgrader's own preprocessors, in
order, on each of them: the list below is the algorithm. notebooks/ is never edited by hand;
`python -m autograder release --check` (and tests/release/test_release.py) fail when it is stale.
"""

import copy
from pathlib import Path

import nbformat
from nbgrader.preprocessors import (
    ClearHiddenTests,
    ClearMarkScheme,
    ClearOutput,
    ClearSolutions,
    ComputeChecksums,
    LockCells,
)

from autograder.curriculum import handed_out

REPO = Path(__file__).resolve().parent.parent
SOLUTIONS = REPO / "solutions"
STUDENT_NOTEBOOKS = REPO / "notebooks"

PIPELINE = (
    ClearSolutions,
    ClearHiddenTests,
    ClearMarkScheme,
    ClearOutput,
    LockCells,
    ComputeChecksums,
)


def release_notebook(solution: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The student version of one solution notebook (a NotebookNode; the input is not modified)."""
    nb = copy.deepcopy(solution)
    resources: dict = {}  # nbgrader's preprocessors' resources
    for step in PIPELINE:
        nb, resources = step().preprocess(nb, resources)
    nb.metadata.pop("widgets", None)
    return nb


def render(nb: nbformat.NotebookNode) -> str:
    return nbformat.writes(nb) + "\n"


def release(
    solutions_dir: Path = SOLUTIONS, out_dir: Path = STUDENT_NOTEBOOKS, check: bool = False
) -> list[str]:
    """Write (or, with check=True, compare) every student notebook. Returns the stale file names."""
    out_dir = Path(out_dir)
    stale = []
    for notebook in handed_out():  # the graded notebooks and the optional ones
        source = Path(solutions_dir) / notebook.filename
        if not source.exists():
            continue
        text = render(release_notebook(nbformat.read(source, as_version=4)))
        target = out_dir / notebook.filename
        if target.exists() and target.read_text() == text:
            continue
        stale.append(notebook.filename)
        if not check:
            out_dir.mkdir(parents=True, exist_ok=True)
            target.write_text(text)
    return stale
