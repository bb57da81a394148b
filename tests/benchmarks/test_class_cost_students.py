"""benchmarks/class_cost.py's hostile students are what its header says they are."""

from pathlib import Path

import nbformat
from fixtures import load_script

import autograder
from autograder.curriculum import NOTEBOOKS

REPO = Path(autograder.__file__).resolve().parent.parent


def bench():
    return load_script(REPO / "benchmarks" / "class_cost.py")


def sleeping(path):
    nb = nbformat.read(path, as_version=4)
    return [c.source for c in nb.cells if "sleep(" in c.source]


def test_the_sleeper_everywhere_sleeps_in_every_graded_notebook_and_only_there(tmp_path):
    cost = bench()
    cost.hostile("sleeper-everywhere", tmp_path / "s")
    graded = {nb.stem for nb in NOTEBOOKS if nb.graded}
    for path in sorted((tmp_path / "s").glob("*.ipynb")):
        found = sleeping(path)
        if path.stem in graded:  # a sleeping cell and the graded names' sleeping calls
            assert any("time.sleep(18)" in s for s in found), path.name
            assert any("_slowly" in s for s in found), path.name
        else:
            assert not any("time.sleep(18)" in s for s in found), path.name
    # the default class has the four kinds and the maxers; --also adds to it
    assert cost.hostile_kinds(1) == ["loop", "sleeper", "flood", "threads", "maxer1"]
    assert cost.hostile_kinds(0, ["sleeper-everywhere"])[-1] == "sleeper-everywhere"
