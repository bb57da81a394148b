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

import ast
import math
import os
import re
import shutil
import tempfile
from functools import cache
from pathlib import Path

import nbformat
import numpy as np
import pytest
from nbclient import NotebookClient

from autograder.curriculum import BY_STEM, NOTEBOOKS, OPTIONAL

REPO = Path(__file__).resolve().parent.parent
SOLUTIONS = REPO / "solutions"
RELEASED = REPO / "notebooks"
CELL_TIMEOUT = 300  # seconds; generous for a loaded CI machine, the notebooks need far less

WITH_SOLUTION = [nb for nb in NOTEBOOKS if (SOLUTIONS / nb.filename).exists()]
WITH_RELEASE = [nb for nb in NOTEBOOKS if (RELEASED / nb.filename).exists()]


def _fruit_merge():
    """The lecture's 0.1 pomme + 0.1 banane + 0.8 citron, with the values the course ships."""
    from coursedata import load_fruit

    fruit = load_fruit()
    pomme, banane, citron = (
        fruit.values[fruit.value_words.index(w)] for w in ("pomme", "banane", "citron")
    )
    return (0.1 * pomme + 0.1 * banane + 0.8 * citron).tolist()


def _lecture_masked_softmax():
    """softmax(S + M) for the lecture's S, row by row, written out with math.exp."""
    rows = []
    for i, row in enumerate(LECTURE_SCORES):
        seen = [math.exp(s) for s in row[: i + 1]]
        rows.append([e / sum(seen) for e in seen] + [0.0] * (len(row) - i - 1))
    return rows


LECTURE_SCORES = [[12, 3, 5, 2], [4, 9, 3, 5], [2, 3, 7, 2], [3, 4, 1, 9]]
INF = math.inf

# Notebook 03's hand-worked example (Q, K, V in the notebook's markdown): per query, the scores
# floor(k_j . q_i / 2) are (0,2,2,0), (1,3,2,0), (1,2,3,0), (0,3,2,1); with 3^x they normalise to
# (1,9,9,1)/20, (3,27,9,1)/40, (3,9,27,1)/40, (1,27,9,3)/40 -- one column per query.
HAND_WEIGHTS = np.array(
    [[1, 9, 9, 1], [3, 27, 9, 1], [3, 9, 27, 1], [1, 27, 9, 3]], dtype=float
) / np.array([[20], [40], [40], [40]])
HAND_V = np.array([[0, 1], [1, 0], [2, 1], [1, 2]], dtype=float)

LECTURE = {
    "01_soft_lookup": {
        "fruit_weights": lambda: [0.1, 0.1, 0.8],
        "fruit_output": _fruit_merge,
    },
    "03_matrix_attention": {
        "masked_scores": lambda: [
            [12, -INF, -INF, -INF],
            [4, 9, -INF, -INF],
            [2, 3, 7, -INF],
            [3, 4, 1, 9],
        ],
        "masked_softmax": _lecture_masked_softmax,
        # the UBI lecture's "v1 -> 0.2 v1 + 0.6 v2 + 0.2 v3"
        "ubi_v1_weights": lambda: [0.2, 0.6, 0.2],
        "hand_weights_columns": lambda: HAND_WEIGHTS.T.tolist(),
        # z1 = 0.05 v1 + 0.45 v2 + 0.45 v3 + 0.05 v4 = (1.4, 0.6), and so on; columns = tokens
        "hand_outputs_columns": lambda: [[1.4, 1.15, 1.6, 1.2], [0.6, 0.35, 0.8, 0.4]],
    },
    "04_multihead_attention": {
        # The lecture's table for n=2, d=4, d_k=3, H=5, in SPEC's key order (W_q, W_k, W_v, W_o,
        # input, q, k, v, A, z, concat, output); its W^o is 4x15 in the column convention, so
        # ours is the transpose, 15x4.
        "mha_shapes": lambda: (
            [[4, 3]] * 3 + [[15, 4], [2, 4]] + [[2, 3]] * 3 + [[2, 2], [2, 3], [2, 15], [2, 4]]
        ),
        # Deck 004's training-data and training-compute columns, as the deck prints them (typed
        # in from the deck's text, quoted in the course review, item W1), in the order of the
        # notebook's model table; a dash where the deck gives no figure.
        "training_data": lambda: [
            *["–", "–"],  # Transformer-Base, -Large
            *["13 GB", "13 GB", "126 GB", "160 GB", "40 GB", "174 GB", "–", "694 GB"],
        ],
        "training_compute": lambda: [
            *["8x P100 (12 hours)", "8x P100 (3.5 days)", "–", "–"],
            *["512x TPU-v3 (2.5 days)", "1024x V100 (1 day)", "–", "512x V100 (9 days)"],
            *["256x V100", "–"],
        ],
    },
    "05_transformer_block": {
        # "I am a Robot", d = 4, base 100: the lecture's table, rounded to 2 decimals as printed.
        "robot_pe": lambda: [
            [0.00, 1.00, 0.00, 1.00],
            [0.84, 0.54, 0.10, 1.00],
            [0.91, -0.42, 0.20, 0.98],
            [0.14, -0.99, 0.30, 0.96],
        ],
        # The UBI lecture's second table (base 10000, d = 50): P[0] is (sin 0, cos 0, ...) for
        # any base and d, and its embedding x = [0.1, 0.7, 1.4, 2.1, 0.4] (first five) plus P[0].
        "ubi_p0": lambda: [0.0, 1.0, 0.0, 1.0, 0.0],
        "ubi_x_plus_p0": lambda: [0.1 + 0, 0.7 + 1, 1.4 + 0, 2.1 + 1, 0.4 + 0],
    },
    "06_autoregressive_lm": {
        # The lecture's self-supervised pairs: every prefix from "To date, the" on, and its next word.
        "issac_examples": lambda: [
            ["To date, the", "cleverest"],
            ["To date, the cleverest", "thinker"],
            ["To date, the cleverest thinker", "of"],
            ["To date, the cleverest thinker of", "all"],
            ["To date, the cleverest thinker of all", "time"],
            ["To date, the cleverest thinker of all time", "was"],
            ["To date, the cleverest thinker of all time was", "Issac"],
        ],
    },
}


def execute(path, cwd, env=None):
    """Run a notebook headless (kernel python3, cells in order); returns the executed notebook."""
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        timeout=CELL_TIMEOUT,
        kernel_name="python3",
        allow_errors=True,
        resources={"metadata": {"path": str(cwd)}},
    )
    client.execute(env={**os.environ, "NBGRADER_EXECUTION": "autograde", **(env or {})})
    return nb


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


def without_ipywidgets(folder):
    """An environment whose kernel cannot import ipywidgets, as a fresh install of the handout
    (which does not ask for it): a module of that name on PYTHONPATH that refuses to import."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "ipywidgets.py").write_text("raise ImportError('ipywidgets is not installed')\n")
    return {
        "PYTHONPATH": os.pathsep.join(filter(None, [str(folder), os.environ.get("PYTHONPATH")]))
    }


def stdout(cell):
    return "".join(o.get("text", "") for o in cell.get("outputs", []) if o.output_type == "stream")


def grade_id(cell):
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


def check_cell(nb, name):
    cells = [c for c in nb.cells if grade_id(c) == f"test_{name}"]
    assert len(cells) == 1, f"expected one check cell with grade_id test_{name}, found {len(cells)}"
    return cells[0]


@cache
def executed_solution(stem):
    no_widgets = Path(tempfile.mkdtemp(prefix="no-widgets-"))
    return execute(SOLUTIONS / f"{stem}.ipynb", cwd=SOLUTIONS, env=without_ipywidgets(no_widgets))


def lecture_lines(nb):
    """{key: value} from the 'lecture: key = value' lines of cells tagged lecture-numbers."""
    found = {}
    for cell in nb.cells:
        if "lecture-numbers" not in cell.get("metadata", {}).get("tags", []):
            continue
        for line in stdout(cell).splitlines():
            match = re.fullmatch(r"(?:lecture|checked): (\w+) = (.+)", line.strip())
            if match:
                literal = re.sub(
                    r"\binf\b", "1e999", match.group(2)
                )  # literal_eval reads 1e999 as inf
                found[match.group(1)] = ast.literal_eval(literal)
    return found


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
