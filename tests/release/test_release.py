"""Release: notebooks/ is exactly what `python -m autograder release` makes from solutions/, and
releasing turns solutions into stubs and strips hidden tests (checked cell by cell against a
plain re-statement of nbgrader's rules, and on a small notebook written here)."""

import copy
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograder.curriculum import NOTEBOOKS, handed_out
from autograder.release import release, release_notebook

REPO = Path(__file__).resolve().parents[2]
SOLUTIONS = REPO / "solutions"
WITH_SOLUTION = [nb for nb in handed_out() if (SOLUTIONS / nb.filename).exists()]  # + optional


def stubbed(source, cell_type="code"):
    """nbgrader's rule: a solution region becomes '# YOUR CODE HERE' + raise, at its indent, in
    code; 'YOUR ANSWER HERE' in markdown (a manually graded written answer)."""
    out, inside = [], False
    for line in source.splitlines():
        if line.strip() == "### BEGIN SOLUTION":
            indent = line[: len(line) - len(line.lstrip())]
            if cell_type == "markdown":
                out.append(f"{indent}YOUR ANSWER HERE")
            else:
                out += [f"{indent}# YOUR CODE HERE", f"{indent}raise NotImplementedError()"]
            inside = True
        elif line.strip() == "### END SOLUTION":
            inside = False
        elif not inside:
            out.append(line)
    return "\n".join(out)


def without_hidden_tests(source):
    out, inside = [], False
    for line in source.splitlines():
        if line.strip() == "### BEGIN HIDDEN TESTS":
            inside = True
        elif line.strip() == "### END HIDDEN TESTS":
            inside = False
        elif not inside:
            out.append(line)
    return "\n".join(out)


def nbgrader(cell):
    return cell.get("metadata", {}).get("nbgrader", {})


@pytest.mark.slow  # releases every notebook
def test_release_check_reports_nothing_stale():
    run = subprocess.run(
        [sys.executable, "-m", "autograder", "release", "--check"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, (
        "notebooks/ is stale; run `python -m autograder release` and commit it:\n" + run.stdout
    )
    assert "up to date" in run.stdout


@pytest.mark.parametrize("notebook", WITH_SOLUTION, ids=lambda nb: nb.stem)
def test_release_stubs_solutions_strips_hidden_tests_and_keeps_the_rest(notebook):
    solution = nbformat.read(SOLUTIONS / notebook.filename, as_version=4)
    before = copy.deepcopy(solution)
    released = release_notebook(solution)
    assert solution == before, "release_notebook modified its input"
    assert [c.id for c in released.cells] == [c.id for c in solution.cells]
    for ours, theirs in zip(solution.cells, released.cells, strict=True):
        meta = nbgrader(ours)
        if meta.get("solution"):
            assert "### BEGIN SOLUTION" in ours.source, f"{meta['grade_id']} has no solution region"
            assert theirs.source == stubbed(ours.source, ours.cell_type), meta["grade_id"]
        elif meta.get("grade"):
            assert theirs.source == without_hidden_tests(ours.source), meta["grade_id"]
            assert nbgrader(theirs)["locked"]
        else:
            assert theirs.source == ours.source, f"cell {ours.id} changed on release"
        if theirs.cell_type == "code":
            assert theirs.outputs == [] and theirs.execution_count is None


SOLUTION_CELL = '''def double(x):
    """Twice x."""
    ### BEGIN SOLUTION
    y = 2 * x
    return y
    ### END SOLUTION'''

TEST_CELL = """check("double", double)
### BEGIN HIDDEN TESTS
assert double(21) == 42
### END HIDDEN TESTS"""


def tiny_solution():
    cells = [
        nbformat.v4.new_markdown_cell("# Doubling"),
        nbformat.v4.new_code_cell(SOLUTION_CELL),
        nbformat.v4.new_code_cell(TEST_CELL),
        nbformat.v4.new_code_cell("print(double(2))"),
    ]
    cells[1].metadata["nbgrader"] = {
        "grade": False, "solution": True, "locked": False, "grade_id": "double", "schema_version": 3
    }  # fmt: skip
    cells[2].metadata["nbgrader"] = {
        "grade": True, "solution": False, "locked": True, "points": 1,
        "grade_id": "test_double", "schema_version": 3,
    }  # fmt: skip
    cells[3].outputs = [nbformat.v4.new_output("stream", name="stdout", text="4\n")]
    cells[3].execution_count = 1
    for i, cell in enumerate(cells):
        cell.id = f"cell-{i}"
    return nbformat.v4.new_notebook(
        cells=cells, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3"}}
    )


def test_release_of_a_small_notebook():
    released = release_notebook(tiny_solution())
    sources = [c.source for c in released.cells]
    assert sources[1] == (
        'def double(x):\n    """Twice x."""\n    # YOUR CODE HERE\n    raise NotImplementedError()'
    )
    assert sources[2] == 'check("double", double)'
    assert sources[3] == "print(double(2))"
    assert released.cells[3].outputs == [] and released.cells[3].execution_count is None
    text = nbformat.writes(released)
    assert "2 * x" not in text and "double(21)" not in text


def test_release_writes_then_check_finds_it_fresh_then_stale(tmp_path):
    solutions, out = tmp_path / "solutions", tmp_path / "notebooks"
    solutions.mkdir()
    name = NOTEBOOKS[0].filename
    nbformat.write(tiny_solution(), solutions / name)
    assert release(solutions, out) == [name]
    assert "raise NotImplementedError()" in (out / name).read_text()
    assert release(solutions, out, check=True) == []
    changed = tiny_solution()
    changed.cells[0].source = "# Doubling, revised"
    nbformat.write(changed, solutions / name)
    written = (out / name).read_text()
    assert release(solutions, out, check=True) == [name]
    assert (out / name).read_text() == written, "--check must not write"
