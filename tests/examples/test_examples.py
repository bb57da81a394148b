"""examples/class: the demo class is what examples/build_class.py generates, and the real grader
names each student's mistake.

Grading the whole class takes minutes, so the grading test takes two students and only the
notebook their mistakes live in, with notebook 02 whose softmax it uses (the grader scores the
other notebooks 0 as missing, without running anything for them).
"""

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

import autograder
from autograder.curriculum import NOTEBOOK_OF, NOTEBOOKS

REPO = Path(autograder.__file__).resolve().parent.parent
EXAMPLES = REPO / "examples"


def _load_builder():
    spec = importlib.util.spec_from_file_location("build_class", EXAMPLES / "build_class.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


builder = _load_builder()


@pytest.fixture(scope="module")
def generated():
    return builder.build()


@pytest.mark.slow  # builds the example class
def test_examples_class_is_what_build_class_generates(generated):
    stale = builder.stale(generated, EXAMPLES / "class")
    assert not stale, (
        f"examples/class is stale ({len(stale)} file(s), e.g. {stale[:3]}): "
        "run `python examples/build_class.py` and commit examples/class"
    )


@pytest.mark.slow  # builds the example class
def test_the_build_is_deterministic(generated):
    assert builder.build() == generated


def test_every_student_submits_every_notebook_but_the_ones_they_forgot(generated):
    solutions = {nb.filename for nb in NOTEBOOKS}  # the graded ones: nobody hands in 05b
    for student in builder.CLASS:
        submitted = {
            rel.split("/", 1)[1] for rel in generated if rel.startswith(student.name + "/")
        }
        forgotten = {f"{stem}.ipynb" for stem in student.missing}
        assert submitted == solutions - forgotten, student.name


def _cells(text):
    nb = nbformat.reads(text, as_version=4)
    return {c.get("id"): c for c in nb.cells}


def test_each_mistake_changes_only_its_own_cells(generated):
    """Diffing against ada (all correct): exactly the named exercises differ, and added cells."""
    for student in builder.CLASS:
        if student.stubs or student.name == "ada":
            continue
        for rel, text in generated.items():
            if not rel.startswith(student.name + "/"):
                continue
            stem = Path(rel).stem
            mine, ada = _cells(text), _cells(generated[f"ada/{Path(rel).name}"])
            edits = [m for m in student.mistakes if m.stem == stem]
            expected_changed = {
                m.grade_id for m in edits if isinstance(m, builder.Body)
            }  # grade ids of rewritten exercises
            expected_added = {
                f"student-{m.cell_id}" for m in edits if isinstance(m, builder.ExtraCell)
            }
            assert set(mine) - set(ada) == expected_added, rel
            changed = {
                ada[i].metadata.get("nbgrader", {}).get("grade_id")
                for i in ada
                if mine[i].source != ada[i].source
            }
            assert changed == expected_changed, rel


def test_students_write_code_not_solution_markers(generated):
    for rel, text in generated.items():
        assert "### BEGIN SOLUTION" not in text and "### END SOLUTION" not in text, rel
        assert "BEGIN HIDDEN TESTS" not in text, rel
        for cell in nbformat.reads(text, as_version=4).cells:
            assert cell.get("outputs", []) == [], rel


def test_the_blank_student_submits_the_released_notebooks(generated):
    for rel, text in generated.items():
        if rel.startswith("blank/"):
            assert text == (REPO / "notebooks" / Path(rel).name).read_text(), rel


# -- grading a small part of the class with the real CLI -----------------------------------------
def _results(out, student):
    return json.loads((out / student / "results.json").read_text())


@pytest.mark.slow
def test_grading_names_the_mistakes_and_the_cheats_score_zero(tmp_path):
    stem = "03_matrix_attention"
    submissions = tmp_path / "class"
    for student in ("mask_after_softmax", "cheater"):
        (submissions / student).mkdir(parents=True)
        for name in ("02_dot_product_softmax", stem):  # 03 uses the student's own 02 softmax
            shutil.copy2(EXAMPLES / "class" / student / f"{name}.ipynb", submissions / student)
    out = tmp_path / "grades"
    env = dict(os.environ, COURSE_SECRET="test-examples-secret")
    done = subprocess.run(
        [sys.executable, "-m", "autograder", "grade", str(submissions), "--out", str(out)]
        + ["--quiet", "--timeout", "120"],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "mask_after_softmax" in (out / "grades.csv").read_text()

    def tests_of(payload, function):
        found = [t for t in payload["tests"] if t["function"] == function]
        assert found, f"no tests of {function}"
        return found

    masked = _results(out, "mask_after_softmax")
    nb = masked["notebooks"][stem]
    assert nb["ran"] and nb["score"] < nb["max_score"]
    sdpa = tests_of(masked, "scaled_dot_product_attention")
    assert sum(t["score"] for t in sdpa) < sum(t["max_score"] for t in sdpa)
    assert "mask-after-softmax" in {m for t in sdpa for m in t.get("misconceptions", [])}
    # the functions the student got right keep their points
    for function in ("attention_scores", "causal_mask"):
        assert all(t["score"] == t["max_score"] for t in tests_of(masked, function)), function

    cheater = _results(out, "cheater")
    assert cheater["notebooks"][stem]["ran"]
    for function in ("scaled_dot_product_attention", "self_attention"):
        for t in tests_of(cheater, function):
            assert t["score"] == 0, (function, t["name"], t["output"])
    for function in ("attention_scores", "causal_mask"):  # patched comparisons change nothing here
        assert all(t["score"] == t["max_score"] for t in tests_of(cheater, function)), function
    # the other notebooks were not submitted: 0 with a message, not an error
    other = [
        t
        for t in cheater["tests"]
        if NOTEBOOK_OF[t["function"]].stem not in (stem, "02_dot_product_softmax")
    ]
    assert other and all(t["score"] == 0 for t in other)
