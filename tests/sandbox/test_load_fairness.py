"""Verdicts independent of load (issue 18, item 1): an honest student keeps full marks next to
a neighbour whose notebook starts 200 busy processes (each in its own session) and loops, and
under an external load of 4x the cores that this test starts and stops itself.

Time limits count the sandbox's CPU seconds (--timeout 10 here: the honest notebook needs a few),
so a slow, busy machine cannot cut an honest notebook short. Scores are asserted, never times.
"""

import importlib.util
import json
import os
import shutil
from pathlib import Path

import nbformat
import pytest

pytestmark = pytest.mark.slow  # grades in a real sandbox (`pytest -m "not slow"` skips it)

REPO = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location(
    "load_fairness", REPO / "benchmarks" / "load_fairness.py"
)
load_fairness = importlib.util.module_from_spec(spec)
spec.loader.exec_module(load_fairness)

NOTEBOOKS = {"02"}


@pytest.fixture(autouse=True)
def needs_bwrap():
    if shutil.which("bwrap") is None:
        pytest.skip("bubblewrap is not installed: the sandboxes' cgroups and CPU share need it")


def test_an_honest_student_keeps_full_marks_next_to_a_cpu_burning_neighbour(tmp_path):
    class_dir = load_fairness.make_class(tmp_path / "class", NOTEBOOKS, neighbour=True)
    payload, _, done = load_fairness.grade(class_dir, tmp_path / "out", workers=2, timeout=10)
    score, max_score = load_fairness.honest_score(payload, NOTEBOOKS)
    assert max_score > 0 and score == max_score, done.stdout[-3000:] + done.stderr[-3000:]
    assert not payload.get("internal_error")


SLEEPER = "import time\ntime.sleep(10**6)"


def test_an_honest_student_keeps_full_marks_under_external_load(tmp_path):
    """Beside them, a student whose notebook sleeps: it neither runs nor waits for a CPU, so the
    busy machine is no excuse: its notebook ran out of time (graded, 0), not NOT GRADED."""
    class_dir = load_fairness.make_class(tmp_path / "class", NOTEBOOKS)
    [path] = load_fairness.notebook_files(NOTEBOOKS)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(SLEEPER)]
    (class_dir / "sleeper").mkdir()
    nbformat.write(nb, class_dir / "sleeper" / path.name)
    with load_fairness.burning(4 * (os.cpu_count() or 1)) as burners:
        assert all(p.poll() is None for p in burners)  # the load is there while grading
        payload, _, done = load_fairness.grade(class_dir, tmp_path / "out", workers=2, timeout=10)
    assert all(p.poll() is not None for p in burners)
    score, max_score = load_fairness.honest_score(payload, NOTEBOOKS)
    assert max_score > 0 and score == max_score, done.stdout[-3000:] + done.stderr[-3000:]
    assert not payload.get("internal_error")
    sleeper = json.loads((tmp_path / "out" / "sleeper" / "results.json").read_text())
    assert not sleeper.get("internal_error") and sleeper["score"] == 0
    assert "ran out" in sleeper["output"]
