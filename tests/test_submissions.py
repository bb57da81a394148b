"""The layouts `grade` reads: what ends up graded for whom, and the message for every file it
cannot place. (No notebook runs here, except one class whose files are all unplaceable.)"""

import json
import os
import stat
import zipfile
from argparse import Namespace
from pathlib import Path

import nbformat
import pytest

from autograder import submissions
from autograder.submissions import GENERAL, discover

REPO = Path(__file__).resolve().parent.parent
A, B, E, F = (
    "01_soft_lookup.ipynb",
    "02_dot_product_softmax.ipynb",
    "05_transformer_block.ipynb",
    "06_autoregressive_lm.ipynb",
)


def notebook(code):
    return nbformat.writes(
        nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code, id="c")])
    )


def put(root, rel, code="x = 1"):
    path = Path(root) / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(notebook(code))
    return path


def graded(sub):
    """{file name: its text} of what the grader will grade for this student."""
    return {p.name: p.read_text() for p in sorted(sub.folder.glob("*.ipynb"))}


def all_messages(sub):
    return " ".join(m for texts in sub.messages.values() for m in texts)


@pytest.fixture
def staging(tmp_path):
    path = tmp_path / "staging"
    path.mkdir()
    return path


def test_folder_of_student_folders_is_graded_in_place(tmp_path, staging):
    put(tmp_path / "class/ada", A, "a = 1")
    put(tmp_path / "class/bob", B, "b = 2")
    (tmp_path / "class/.git").mkdir()
    found = discover(tmp_path / "class", out=tmp_path / "class/grades", staging=staging)
    assert [s.student for s in found] == ["ada", "bob"]
    assert found[0].folder == tmp_path / "class/ada"  # loose notebooks: the folder as it is
    assert graded(found[1]) == {B: notebook("b = 2")}
    assert not list(staging.iterdir())


def test_one_students_folder(tmp_path, staging):
    put(tmp_path / "ada", A)
    [sub] = discover(tmp_path / "ada", staging=staging)
    assert (sub.student, sub.folder) == ("ada", tmp_path / "ada")


@pytest.mark.parametrize("point_at", ["course", "course/submitted", "course/submitted/ada"])
def test_nbgrader_one_assignment_per_notebook(tmp_path, staging, point_at):
    course = tmp_path / "course"
    put(course / "submitted/ada/01_soft_lookup", A, "ada_a = 1")
    put(course / "submitted/ada/02_dot_product_softmax", B, "ada_b = 1")
    (course / "submitted/ada/01_soft_lookup/timestamp.txt").write_text("2026-01-01 10:00:00")
    put(course / "submitted/bob/02_dot_product_softmax", B, "bob_b = 1")
    put(course / "source/01_soft_lookup", A, "the solution")  # never a student
    found = {s.student: s for s in discover(tmp_path / point_at, staging=staging)}
    expected = {"ada"} if point_at.endswith("ada") else {"ada", "bob"}
    assert set(found) == expected
    assert graded(found["ada"]) == {A: notebook("ada_a = 1"), B: notebook("ada_b = 1")}
    assert found["ada"].source == course / "submitted/ada"
    assert not found["ada"].messages


def test_nbgrader_one_assignment_holding_all(tmp_path, staging):
    put(tmp_path / "course/submitted/ada/attention", A, "a")
    put(tmp_path / "course/submitted/ada/attention", F, "f")
    [sub] = discover(tmp_path / "course", staging=staging)
    assert graded(sub) == {A: notebook("a"), F: notebook("f")}


def test_other_assignments_are_kept_for_import_but_not_graded(tmp_path, staging):
    put(tmp_path / "course/submitted/ada/05_transformer_block", E, "block")
    put(tmp_path / "course/submitted/ada/06_autoregressive_lm", F, "lm")
    [sub] = discover(tmp_path / "course", staging=staging, graded_groups={"06_autoregressive_lm"})
    assert graded(sub) == {F: notebook("lm")}
    assert (sub.folder / "05_transformer_block" / E).read_text() == notebook("block")


def test_upload_with_notebooks_loose_and_in_sub_folders(tmp_path, staging):
    put(tmp_path / "upload", A, "a")
    put(tmp_path / "upload/week2/work", B, "b")
    put(tmp_path / "upload/.ipynb_checkpoints", "01_soft_lookup-checkpoint.ipynb")
    [sub] = discover(tmp_path / "upload", staging=staging)
    assert graded(sub) == {A: notebook("a"), B: notebook("b")}
    assert not sub.messages


def write_zip(path, members):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            if isinstance(data, zipfile.ZipInfo):
                archive.writestr(data, "target")
            else:
                archive.writestr(name, data)
    return path


def test_zip_upload_in_a_folder_or_on_its_own(tmp_path, staging):
    upload = tmp_path / "ada"
    upload.mkdir()
    write_zip(upload / "homework.zip", {f"homework/{A}": notebook("a"), "homework/notes.txt": "hi"})
    [sub] = discover(upload, staging=staging)
    assert (sub.student, graded(sub)) == ("ada", {A: notebook("a")})
    [sub] = discover(upload / "homework.zip", staging=staging)
    assert (sub.student, graded(sub)) == ("homework", {A: notebook("a")})


def test_a_class_of_zips(tmp_path, staging):
    (tmp_path / "class").mkdir()
    write_zip(tmp_path / "class/ada.zip", {A: notebook("ada")})
    put(tmp_path / "class/bob", A, "bob")
    found = {s.student: graded(s) for s in discover(tmp_path / "class", staging=staging)}
    assert found == {"ada": {A: notebook("ada")}, "bob": {A: notebook("bob")}}


def test_unsafe_zip_members_are_named_and_never_written(tmp_path, staging):
    link = zipfile.ZipInfo(B)
    link.external_attr = (stat.S_IFLNK | 0o777) << 16
    archive = write_zip(
        tmp_path / "ada.zip",
        {
            f"../{A}": notebook("escape"),
            f"/abs/{A}": notebook("absolute"),
            B: link,
            "inner.zip": b"PK",
            "__MACOSX/._01_soft_lookup.ipynb": b"\x00",
            f"ok/{F}": notebook("fine"),
        },
    )
    [sub] = discover(archive, staging=staging)
    assert graded(sub) == {F: notebook("fine")}
    text = all_messages(sub)
    for name in (f"ada.zip!../{A}", f"ada.zip!/abs/{A}", f"ada.zip!{B}", "ada.zip!inner.zip"):
        assert name in text
    assert "unsafe path" in text and "symbolic link" in text
    assert "__MACOSX" not in text
    assert not (tmp_path / A).exists() and not Path(f"/abs/{A}").exists()


def test_zip_caps_count_bytes_as_read(tmp_path, staging, monkeypatch):
    monkeypatch.setattr(submissions, "MAX_NOTEBOOK_BYTES", 10_000)
    big = notebook("x = '" + "0" * 50_000 + "'")  # compresses to ~1 kB: a small zip bomb
    archive = write_zip(tmp_path / "ada.zip", {A: big, B: notebook("b")})
    assert archive.stat().st_size < 10_000
    [sub] = discover(archive, staging=staging)
    assert graded(sub) == {B: notebook("b")}
    assert f"ada.zip!{A} is larger than" in " ".join(sub.messages["01_soft_lookup"])

    monkeypatch.setattr(submissions, "MAX_ZIP_MEMBERS", 3)
    many = write_zip(tmp_path / "many.zip", {f"{i}.txt": "x" for i in range(5)} | {B: "{}"})
    [sub] = discover(many, staging=staging)
    assert graded(sub) == {}
    assert "many.zip was not read: it holds 6 files" in all_messages(sub)


def test_bad_zip_is_named(tmp_path, staging):
    (tmp_path / "ada").mkdir()
    (tmp_path / "ada/work.zip").write_bytes(b"not a zip at all")
    [sub] = discover(tmp_path / "ada", staging=staging)
    assert "work.zip was not read: it has no zip end record (not a zip file" in all_messages(sub)


def test_unknown_names_and_conflicting_copies_are_named(tmp_path, staging):
    put(tmp_path / "ada", "01_soft_lookp.ipynb")
    put(tmp_path / "ada", "scratch.ipynb")
    put(tmp_path / "ada", B, "mine")
    put(tmp_path / "ada/old", B, "an older try")
    put(tmp_path / "ada/copy", F, "same")
    put(tmp_path / "ada", F, "same")
    [sub] = discover(tmp_path / "ada", staging=staging)
    general = " ".join(sub.messages[GENERAL])
    assert "01_soft_lookp.ipynb is not one of the course's notebooks" in general
    assert "Did you mean 01_soft_lookup.ipynb?" in general
    assert sub.messages.candidates["01_soft_lookup"] == ["01_soft_lookp.ipynb"]  # misnamed
    assert "scratch.ipynb is not one of the course's notebooks" in general
    conflict = " ".join(sub.messages["02_dot_product_softmax"])
    assert B in conflict and f"old/{B}" in conflict and "not graded" in conflict
    # the conflicting copies are both left out; identical copies are one notebook
    assert graded(sub) == {F: notebook("same")}
    assert sub.folder != tmp_path / "ada"


def test_symlinks_are_not_followed(tmp_path, staging):
    secret = put(tmp_path / "elsewhere", A, "not the student's")
    put(tmp_path / "ada", B, "b")
    os.symlink(secret, tmp_path / "ada" / A)
    os.symlink(tmp_path / "elsewhere", tmp_path / "ada" / "linked")
    [sub] = discover(tmp_path / "ada", staging=staging)
    assert graded(sub) == {B: notebook("b")}
    text = all_messages(sub)
    assert f"{A} is a symbolic link; upload the file itself" in text
    assert "linked is a link to a folder" in text


def test_messages_reach_the_students_results(tmp_path):
    """A student whose only files cannot be placed gets 0 with the reasons, not a silent 0."""
    from autograder.grading.command import grade_command

    put(tmp_path / "class/ada", "01_soft_lookp.ipynb")
    put(tmp_path / "class/ada", B, "one")
    put(tmp_path / "class/ada/again", B, "two")
    args = Namespace(
        path=str(tmp_path / "class"),
        out=str(tmp_path / "grades"),
        workers=1,
        timeout=30,
        force=True,
        secret="s",
        memory=None,
        sandbox="auto",
        keep_work=False,
        quiet=True,
        layout="auto",
    )
    assert grade_command(args) == 0
    results = json.loads((tmp_path / "grades/ada/results.json").read_text())
    assert results["score"] == 0
    assert "01_soft_lookp.ipynb is not one of the course's notebooks" in results["output"]
    softmax = [t for t in results["tests"] if t["notebook"] == "02_dot_product_softmax"]
    assert softmax and all("found 2 times" in t["output"] for t in softmax)
    assert {t["reason"] for t in softmax} == {"misnamed"}  # two different files, none taken
    lookup = [t for t in results["tests"] if t["notebook"] == "01_soft_lookup"]
    assert {t["reason"] for t in lookup} == {"misnamed"}  # a misspelt name, not taken
    assert results["notebooks"]["01_soft_lookup"]["candidates"] == ["01_soft_lookp.ipynb"]
