"""Every copy of a notebook that a student's tools leave is considered, and one rule chooses
(autograder/submissions.py, "Choosing among copies"): copies that are not a readable notebook
never block one that is; then the shallowest folder first (a GitHub Classroom `backup/` copy
never hides the real one), then the notebook's own name before a near name (`Copy of X`,
`X (1)`, `X - Copy`, another case). One content at the best rank is graded and every other copy is named;
different contents there are none of them taken, and all of them named."""

import pytest
from fixtures import graded_files as graded
from fixtures import one_cell_notebook as notebook
from fixtures import put_notebook as put

from autograder.notebook_files import match_name
from autograder.submissions import discover

A = "01_soft_lookup.ipynb"
SOFT = "01_soft_lookup"
STUB = "raise NotImplementedError"


def said(sub, stem=SOFT):
    return " ".join(sub.messages.get(stem, []))


@pytest.mark.parametrize(
    "name",
    [
        "Copy of 01_soft_lookup.ipynb",  # Colab's "Save a copy in Drive", then download
        "Copy of 01_soft_lookup (1).ipynb",  # ... downloaded twice
        "copy of 01_Soft_Lookup.ipynb",
        "01_soft_lookup - Copy.ipynb",
        "01_soft_lookup (1).ipynb",
    ],
)
def test_the_names_students_tools_produce_mean_the_notebook(name):
    assert match_name(name).stem == SOFT and not match_name(name).exact


@pytest.mark.parametrize(
    "name",
    ["Copy of Copy of 01_soft_lookup.ipynb", "Copy of01_soft_lookup.ipynb", "Copy of .ipynb"],
)
def test_not_every_copy_name_is_accepted(name):
    assert match_name(name) is None


def test_colabs_download_name_is_graded_and_said(tmp_path):
    put(tmp_path / "ada", "Copy of 01_soft_lookup.ipynb", "mine = 1")
    [sub] = discover(tmp_path / "ada", staging=tmp_path / "staging")
    assert graded(sub) == {A: notebook("mine = 1")}
    assert sub.messages.graded_as == {SOFT: "Copy of 01_soft_lookup.ipynb"}
    assert sub.messages.candidates == {}


def test_a_blank_backup_never_hides_the_real_notebook(tmp_path):
    """GitHub Classroom's `backup/` holds the handout as it was: the top-level copy is graded."""
    root = tmp_path / "ada"
    put(root, A, "mine = 1")
    put(root / "backup", A, STUB)
    [sub] = discover(root, staging=tmp_path / "staging")
    assert graded(sub) == {A: notebook("mine = 1")}
    assert sub.messages.candidates == {}
    assert "backup/01_soft_lookup.ipynb" in said(sub)  # named, not graded
    assert sub.messages.copies[SOFT] == ["backup/01_soft_lookup.ipynb"]


def test_the_shallowest_copy_wins_whatever_the_folders_are_called(tmp_path):
    root = tmp_path / "ada"
    put(root / "a", A, "shallow = 1")
    put(root / "a/b", A, "deep = 1")
    [sub] = discover(root, staging=tmp_path / "staging")
    assert graded(sub) == {A: notebook("shallow = 1")}


def test_an_unreadable_near_name_never_blocks_the_exact_one(tmp_path):
    root = tmp_path / "ada"
    put(root, A, "mine = 1")
    (root / "01_soft_lookup (1).ipynb").write_text("this is not a notebook")
    [sub] = discover(root, staging=tmp_path / "staging")
    assert graded(sub) == {A: notebook("mine = 1")}
    assert sub.messages.candidates == {}
    assert "01_soft_lookup (1).ipynb could not be read as a notebook; not graded" in said(sub)


def test_an_unreadable_exact_name_never_blocks_a_readable_copy(tmp_path):
    root = tmp_path / "ada"
    (root).mkdir()
    (root / A).write_bytes(b"")
    put(root, "Copy of 01_soft_lookup.ipynb", "mine = 1")
    [sub] = discover(root, staging=tmp_path / "staging")
    assert graded(sub) == {A: notebook("mine = 1")}
    assert sub.messages.graded_as == {SOFT: "Copy of 01_soft_lookup.ipynb"}


def test_the_own_name_wins_over_a_different_near_name_and_the_other_is_named(tmp_path):
    root = tmp_path / "ada"
    put(root, A, "own = 1")
    put(root, "01_soft_lookup (1).ipynb", "other = 1")
    [sub] = discover(root, staging=tmp_path / "staging")
    assert graded(sub) == {A: notebook("own = 1")}
    assert "Also found and not graded: 01_soft_lookup (1).ipynb" in said(sub)


def test_different_copies_of_the_same_rank_are_all_named_and_none_taken(tmp_path):
    root = tmp_path / "ada"
    put(root, "Copy of 01_soft_lookup.ipynb", "first = 1")
    put(root, "01_soft_lookup (1).ipynb", "second = 1")
    put(root / "backup", A, STUB)  # a readable stub deeper down is not the tie-breaker
    [sub] = discover(root, staging=tmp_path / "staging")
    assert A not in graded(sub)
    assert sorted(sub.messages.candidates[SOFT]) == [
        "01_soft_lookup (1).ipynb",
        "Copy of 01_soft_lookup.ipynb",
    ]
    assert "2 different files could each be it" in said(sub)
    assert "Also found and not graded: backup/01_soft_lookup.ipynb" in said(sub)  # all named


def test_a_single_candidate_is_named_and_never_called_several():
    """A misspelt 05 was "several of your files could each be 05_...": one file is named."""
    from autograder.platforms.gradescope import notebook_summary

    def summary(candidates):
        test = {"notebook": "05_transformer_block", "function": "LayerNorm", "score": 0.0,
                "max_score": 1.0, "status": "failed", "reason": "misnamed", "output": ""}  # fmt: skip
        info = {"score": 0.0, "max_score": 1.0, "candidates": candidates}
        payload = {"tests": [test], "notebooks": {"05_transformer_block": info}}
        return " ".join(notebook_summary(payload))

    one = summary(["05_transformer_blok.ipynb"])
    assert "several" not in one
    assert "05_transformer_blok.ipynb looks like 05_transformer_block.ipynb; rename it" in one
    assert "2 of your files could each be 05_transformer_block.ipynb" in summary(["a", "b"])
