"""Names the grader accepts: a notebook handed in under a near name (a browser's ` (1)`, another
letter case, inside one extra folder or a zip's top folder) is graded when it is the only file
that could be it, and says so; when several could be, none is taken and the notebook is misnamed,
with its candidates. Every path that finds a student's notebook uses the one rule
(notebook_files.match_name): the folder walk, zips, Gradescope (through discover) and nbgrader's
autograded copy (notebook_files.locate). One real grading of the ` (1)` case, marked slow."""

import json
import os
import zipfile
from pathlib import Path

import pytest
from fixtures import graded_files as graded
from fixtures import one_cell_notebook as notebook
from fixtures import put_notebook as put

from autograder.config import Config
from autograder.curriculum import BY_STEM
from autograder.grading import plan
from autograder.grading.plan import plan_notebooks
from autograder.notebook_files import load_notebook, locate, match_name
from autograder.results import CORRUPT, MISNAMED, MISSING_NOTEBOOK
from autograder.sandbox import Limits
from autograder.submissions import discover

REPO = Path(__file__).resolve().parents[2]
B = "02_dot_product_softmax.ipynb"
SOFTMAX = "02_dot_product_softmax"


@pytest.mark.parametrize(
    "name",
    [
        "02_dot_product_softmax (1).ipynb",
        "02_dot_product_softmax (12).ipynb",
        "02_dot_product_softmax(2).ipynb",
        "02_dot_product_softmax-1.ipynb",
        "02_dot_product_softmax copy.ipynb",
        "02_dot_product_softmax - Copy.ipynb",
        "02_Dot_Product_Softmax.ipynb",
        "02_DOT_PRODUCT_SOFTMAX.IPYNB",
    ],
)
def test_a_near_name_means_its_notebook(name):
    assert match_name(name).stem == SOFTMAX and not match_name(name).exact


@pytest.mark.parametrize(
    "name",
    [
        "02_dot_product_softmax (1) (1).ipynb",  # two copy suffixes: not one browser's doing
        "02_dot_product_softmax-checkpoint.ipynb",
        "02_dot_product_softmax_v2.ipynb",
        "02_dot_product.ipynb",
        "03_dot_product_softmax.ipynb",
        "02_dot_product_softmax.ipynb.txt",
        "../02_dot_product_softmax.ipynb",
    ],
)
def test_other_names_mean_no_notebook(name):
    assert match_name(name) is None


def test_the_own_name_is_exact():
    assert match_name(B).exact and match_name(B).stem == SOFTMAX


def test_a_browser_duplicate_is_graded_as_the_notebook(tmp_path):
    put(tmp_path / "ada", "02_dot_product_softmax (1).ipynb", "mine = 2")
    put(tmp_path / "ada", "01_soft_lookup.ipynb", "mine = 1")
    [sub] = discover(tmp_path / "ada", staging=tmp_path / "staging")
    assert graded(sub) == {"01_soft_lookup.ipynb": notebook("mine = 1"), B: notebook("mine = 2")}
    assert sub.messages.graded_as == {SOFTMAX: "02_dot_product_softmax (1).ipynb"}
    assert sub.messages[SOFTMAX] == [f"02_dot_product_softmax (1).ipynb was graded as {B}."]


def test_a_case_variant_and_an_extra_folder_are_taken(tmp_path):
    put(tmp_path / "class/ada/hw", "02_Dot_Product_Softmax.ipynb", "mine = 2")
    put(tmp_path / "class/ada/hw", "03_matrix_attention.ipynb", "mine = 3")
    [sub] = discover(tmp_path / "class", staging=tmp_path / "staging")
    assert sub.student == "ada"
    assert graded(sub) == {
        B: notebook("mine = 2"),
        "03_matrix_attention.ipynb": notebook("mine = 3"),
    }
    assert sub.messages.graded_as == {SOFTMAX: "hw/02_Dot_Product_Softmax.ipynb"}


def test_a_zips_top_folder_and_duplicate_name_are_taken(tmp_path):
    (tmp_path / "class").mkdir()
    with zipfile.ZipFile(tmp_path / "class/ada.zip", "w") as archive:
        archive.writestr("homework/02_dot_product_softmax (1).ipynb", notebook("mine = 2"))
    [sub] = discover(tmp_path / "class", staging=tmp_path / "staging")
    assert graded(sub) == {B: notebook("mine = 2")}
    assert sub.messages.graded_as == {SOFTMAX: "ada.zip!homework/02_dot_product_softmax (1).ipynb"}


def test_several_different_candidates_are_misnamed_and_none_is_taken(tmp_path):
    put(tmp_path / "ada", "02_dot_product_softmax (1).ipynb", "first = 1")
    put(tmp_path / "ada", "02_dot_product_softmax (2).ipynb", "second = 2")
    put(tmp_path / "ada", "01_soft_lookup.ipynb")
    [sub] = discover(tmp_path / "ada", staging=tmp_path / "staging")
    assert B not in graded(sub)
    assert set(sub.messages.candidates[SOFTMAX]) == {
        "02_dot_product_softmax (1).ipynb",
        "02_dot_product_softmax (2).ipynb",
    }
    assert sub.messages.graded_as == {}
    said = " ".join(sub.messages[SOFTMAX])
    assert "02_dot_product_softmax (1).ipynb" in said and "(2).ipynb" in said


def test_the_own_name_beside_a_different_duplicate_is_graded_and_the_other_named(tmp_path):
    """`02.ipynb` and a download `02 (1).ipynb` in one folder: the notebook's own name is the one
    the course asks for (submissions.py's rule), and the other is named, never silently."""
    put(tmp_path / "ada", B, "own = 1")
    put(tmp_path / "ada", "02_dot_product_softmax (1).ipynb", "other = 2")
    [sub] = discover(tmp_path / "ada", staging=tmp_path / "staging")
    assert graded(sub)[B] == notebook("own = 1") and sub.messages.candidates == {}
    assert sub.messages.copies[SOFTMAX] == ["02_dot_product_softmax (1).ipynb"]


def test_identical_candidates_are_one_notebook_and_the_own_name_is_preferred(tmp_path):
    put(tmp_path / "ada", B, "same = 1")
    put(tmp_path / "ada", "02_dot_product_softmax (1).ipynb", "same = 1")
    [sub] = discover(tmp_path / "ada", staging=tmp_path / "staging")
    assert graded(sub)[B] == notebook("same = 1")
    assert sub.messages.graded_as == {} and sub.messages.candidates == {}
    assert sub.folder == tmp_path / "ada"  # nothing to say: graded from the folder as it is


def test_a_near_named_link_is_not_followed(tmp_path):
    secret = put(tmp_path / "elsewhere", B, "not the student's")
    (tmp_path / "ada").mkdir()
    os.symlink(secret, tmp_path / "ada" / "02_dot_product_softmax (1).ipynb")
    put(tmp_path / "ada", "01_soft_lookup.ipynb")
    [sub] = discover(tmp_path / "ada", staging=tmp_path / "staging")
    assert B not in graded(sub)
    assert "is a symbolic link" in " ".join(sub.messages[SOFTMAX])
    assert "not the student's" not in "".join(graded(sub).values())


def test_nbgrader_finds_the_one_near_name_in_an_assignment_folder(tmp_path):
    folder = tmp_path / "submitted/ada/02_dot_product_softmax"
    put(folder, "02_dot_product_softmax (1).ipynb", "mine = 2")
    assert locate(folder, B) == "02_dot_product_softmax (1).ipynb"
    put(folder, "02_dot_product_softmax (2).ipynb", "other = 2")
    assert locate(folder, B) is None  # two candidates: none
    put(folder, B, "exact = 2")
    assert locate(folder, B) == B
    link_folder = tmp_path / "linked"
    link_folder.mkdir()
    os.symlink(folder / B, link_folder / "02_dot_product_softmax (1).ipynb")
    nb, message = load_notebook(link_folder, locate(link_folder, B))
    assert nb is None and "symbolic link" in message  # named, never followed


# -- the plans: each notebook's reason ----------------------------------------------------------
def test_plans_name_missing_misnamed_and_corrupt_notebooks(tmp_path, monkeypatch):
    monkeypatch.setattr(plan, "registered_probes", lambda: set(BY_STEM["01_soft_lookup"].graded))
    put(tmp_path / "ada", "02_dot_product_softmax (1).ipynb", "first = 1")
    put(tmp_path / "ada", "02_dot_product_softmax (2).ipynb", "second = 2")
    (tmp_path / "ada/03_matrix_attention.ipynb").write_text("{ this is not json")
    put(tmp_path / "ada", "04_Multihead_Attention.ipynb", "four = 4")
    [sub] = discover(tmp_path / "ada", staging=tmp_path / "staging")
    settings = Config(out=tmp_path / "out", secret="s", limits=Limits())
    (tmp_path / "work").mkdir()
    plans = plan_notebooks("ada", sub.folder, settings, tmp_path / "work", sub.messages, {})
    by_stem = {p.notebook.stem: p for p in plans}
    assert by_stem["01_soft_lookup"].reason == MISSING_NOTEBOOK
    assert by_stem[SOFTMAX].reason == MISNAMED and len(by_stem[SOFTMAX].candidates) == 2
    assert by_stem["03_matrix_attention"].reason == CORRUPT
    taken = by_stem["04_multihead_attention"]
    assert taken.job is not None and taken.graded_from == "04_Multihead_Attention.ipynb"


# -- one real grading ------------------------------------------------------------------------------
@pytest.mark.slow  # runs notebooks 01-03 in the sandbox
def test_a_browser_duplicate_of_02_is_graded_and_03_uses_it(tmp_path, monkeypatch):
    """The field report's case: `02_dot_product_softmax (1).ipynb` cost 19 points, because 03
    and 04 import the student's 02. Now 02 is graded from it, and 03 finds it."""
    from autograder.grading.run_state import RunState
    from autograder.grading.sandboxes import open_sandbox
    from autograder.grading.student import grade_student

    numpy_names = {n for s in ("01_soft_lookup", SOFTMAX, "03_matrix_attention") for n in BY_STEM[s].graded}  # fmt: skip
    monkeypatch.setattr(plan, "registered_probes", lambda: numpy_names)
    ada = tmp_path / "class" / "ada"
    ada.mkdir(parents=True)
    for stem, name in (
        ("01_soft_lookup", "01_soft_lookup.ipynb"),
        (SOFTMAX, "02_dot_product_softmax (1).ipynb"),
        ("03_matrix_attention", "03_matrix_attention.ipynb"),
    ):
        (ada / name).write_bytes((REPO / "solutions" / f"{stem}.ipynb").read_bytes())
    [sub] = discover(tmp_path / "class", staging=tmp_path / "staging")
    settings = Config(out=tmp_path / "out", secret="near-names", limits=Limits(timeout=300))
    sandbox = open_sandbox(settings)  # as grading opens it
    try:
        run = RunState(work_root=tmp_path)
        result = grade_student(sub.student, sub.folder, settings, sandbox, sub.messages, run=run)
    finally:
        sandbox.close()
    tests = result.results["tests"]
    for stem in (SOFTMAX, "03_matrix_attention"):
        mine = [t for t in tests if t["notebook"] == stem]
        assert mine and all(t["status"] == "passed" for t in mine), [
            t["output"] for t in mine if t["status"] != "passed"
        ]
    info = result.results["notebooks"][SOFTMAX]
    assert info["graded_from"] == "02_dot_product_softmax (1).ipynb"
    page = (tmp_path / "out/ada/feedback.html").read_text()
    assert "graded from your file 02_dot_product_softmax (1).ipynb" in page
    saved = json.loads((tmp_path / "out/ada/results.json").read_text())
    assert saved["notebooks"][SOFTMAX]["graded_from"] == info["graded_from"]
