"""The layouts `grade` reads: what ends up graded for whom, and the message for every file it
cannot place. (No notebook runs here, except one class whose files are all unplaceable.)"""

import json
import os
import stat
import zipfile
from argparse import Namespace
from pathlib import Path

import pytest
from fixtures import graded_files as graded
from fixtures import one_cell_notebook as notebook
from fixtures import put_notebook as put
from fixtures import stand_in_todo

from autograder import submissions
from autograder.submissions import GENERAL, discover

REPO = Path(__file__).resolve().parents[2]
A, B, E, F = (
    "01_soft_lookup.ipynb",
    "02_dot_product_softmax.ipynb",
    "05_transformer_block.ipynb",
    "06_autoregressive_lm.ipynb",
)


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
    named = " ".join(sub.messages["02_dot_product_softmax"])
    assert f"Also found and not graded: old/{B}" in named
    # the shallowest copy is graded and the other named; identical copies are one notebook
    assert graded(sub) == {B: notebook("mine"), F: notebook("same")}
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
    put(tmp_path / "class/ada/first", B, "one")
    put(tmp_path / "class/ada/again", B, "two")  # as deep as the other: neither is taken
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


# -- nothing in a student's folder makes the student ungradable ---------------------------------
def hostile_folder(root):
    """A student's folder with two notebooks beside everything a walk can trip on: a loop of
    links (loopA -> loopB -> loopA), a link to itself, a dangling link, links to a file and a
    folder elsewhere, a FIFO, a socket, a chain of folders 60 deep, and a helper module."""
    import socket

    put(root, A, "a = 1")
    put(root, B, "b = 2")
    (root / "helper.py").write_text("X = 3\n")
    os.symlink("loopB", root / "loopA")
    os.symlink("loopA", root / "loopB")
    os.symlink("self", root / "self")
    os.symlink("nowhere", root / "dangling")
    os.symlink("/etc/passwd", root / "passwd")
    os.mkfifo(root / "pipe")
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(root / "sock"))
    server.close()
    deep = root
    for i in range(60):
        deep = deep / f"d{i}"
    deep.mkdir(parents=True)
    (deep / "bottom.txt").write_text("deep")
    return root


def test_links_loops_and_special_files_are_skipped_named_and_the_notebooks_graded(
    tmp_path, staging
):
    """A loop of links beside the notebooks once made the student NOT GRADED at every run
    ("Too many levels of symbolic links"). Every walk of the folder skips and names them."""
    from autograder.deadlines import handed_in_from_files
    from autograder.notebook_files import load_notebook
    from autograder.sandbox import copy_submission

    root = hostile_folder(tmp_path / "class" / "ada")
    put(tmp_path / "class" / "bob", A, "bob")
    subs = {s.student: s for s in discover(tmp_path / "class", staging=staging)}
    ada = subs["ada"]
    assert not ada.refused, ada.refused
    assert graded(ada) == {A: notebook("a = 1"), B: notebook("b = 2")}
    assert "is nested too deep" in all_messages(ada)
    for name, code in ((A, "a = 1"), (B, "b = 2")):
        nb, message = load_notebook(ada.folder, name)
        assert nb is not None and nb.cells[0].source == code and message == ""
    skipped = dict(copy_submission(root, tmp_path / "copy"))  # as for a folder graded in place
    for name in ("loopA", "loopB", "self", "dangling", "passwd"):
        assert skipped[name] == "it is a symbolic link", name
    assert skipped["pipe"] == skipped["sock"] == "it is not a regular file"
    assert any("nested this deep" in why for why in skipped.values())
    copied = sorted(p.name for p in (tmp_path / "copy").iterdir() if p.is_file())
    assert copied == sorted([A, B, "helper.py"])
    assert submissions.content_digest(ada).startswith("sha256:")
    times = handed_in_from_files(ada.messages.sources)
    assert times["01_soft_lookup"].timestamp() == pytest.approx((root / A).stat().st_mtime)


def test_a_notebook_that_is_a_loop_or_a_fifo_is_named_with_its_notebook(tmp_path, staging):
    root = tmp_path / "ada"
    put(root, B, "b")
    os.symlink("03_matrix_attention.ipynb", root / A)
    os.symlink(A, root / "03_matrix_attention.ipynb")  # 01 -> 03 -> 01
    os.mkfifo(root / E)
    os.symlink("sub", root / "sub")  # a folder-looking link to itself
    [sub] = discover(root, staging=staging)
    assert not sub.refused
    assert graded(sub) == {B: notebook("b")}
    assert "is a symbolic link" in " ".join(sub.messages["01_soft_lookup"])
    assert "is a symbolic link" in " ".join(sub.messages["03_matrix_attention"])
    assert "named pipe (FIFO)" in " ".join(sub.messages["05_transformer_block"])


def test_a_folder_that_cannot_be_read_is_named_not_fatal(tmp_path, staging, monkeypatch):
    """(The tests run as root, whom chmod does not stop: os.scandir is made to refuse.)"""
    root = tmp_path / "ada"
    put(root, A, "a")
    put(root / "locked", B, "b")
    real = os.scandir

    def scandir(path="."):
        if str(path).endswith("locked"):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    [sub] = discover(root, staging=staging)
    assert not sub.refused
    assert graded(sub) == {A: notebook("a")}
    assert "locked could not be read; it was not searched" in all_messages(sub)


def test_a_copy_that_cannot_be_read_is_named_and_the_readable_one_graded(
    tmp_path, staging, monkeypatch
):
    from autograder import safe_files

    root = tmp_path / "ada"
    put(root, A, "same")
    put(root / "again", A, "same")
    put(root, B, "b")
    real = safe_files.open_below

    def open_below(folder, relpath, shown=None):
        if str(folder).endswith("again"):
            raise safe_files.UnsafeFile("unreadable", "could not be opened (Permission denied)")
        return real(folder, relpath, shown)

    monkeypatch.setattr(safe_files, "open_below", open_below)
    [sub] = discover(root, staging=staging)
    assert not sub.refused
    assert graded(sub) == {A: notebook("same"), B: notebook("b")}  # the copy it could read
    assert f"again/{A} could not be read as a notebook; not graded" in " ".join(
        sub.messages["01_soft_lookup"]
    )


# -- up to date by content, never by file times --------------------------------------------------
def test_the_digest_follows_the_content_not_the_file_times(tmp_path, staging):
    root = tmp_path / "ada"
    path = put(root, A, "first")
    (root / "data.txt").write_text("x")
    [sub] = discover(root, staging=staging)
    first = submissions.content_digest(sub)
    os.utime(path, (0, 0))  # a time of 1970: nothing changed
    assert submissions.content_digest(discover(root, staging=staging)[0]) == first
    for change in (
        lambda: path.write_text(notebook("second")),  # the notebook
        lambda: (root / "data.txt").write_text("y"),  # a file the notebook may read
        lambda: (root / "data.txt").rename(root / "data2.txt"),  # a name
        lambda: os.symlink("data2.txt", root / "link"),  # a file now skipped and named
    ):
        change()
        os.utime(path, (0, 0))
        now = submissions.content_digest(discover(root, staging=staging)[0])
        assert now != first
        first = now


def test_a_student_is_regraded_when_the_content_changed_whatever_the_file_times(
    tmp_path, monkeypatch
):
    """A commit dated in the past gives files older than results.json: the student was skipped
    as "up to date" and kept the old 0. Now the run grades whoever's content changed, and
    only them."""
    from autograder.config import Config
    from autograder.grading import classrun
    from autograder.grading.stopping import Stopping
    from autograder.report import write_student
    from autograder.sandbox import Limits

    cls, out = tmp_path / "class", tmp_path / "grades"
    for student in ("ada", "bob"):
        put(cls / student, A, f"{student} before")
    graded_now = stand_in_todo(monkeypatch)

    def run():
        graded_now.clear()
        settings = Config(out=out, secret="s", limits=Limits())
        with Stopping() as stop:
            classrun._grade_class(
                discover(cls, out=out, staging=tmp_path / "st"), settings, False, stop
            )
        return sorted(graded_now)

    assert run() == ["ada", "bob"]
    assert run() == []  # nothing changed: nobody is graded again
    changed = put(cls / "ada", A, "ada after")
    past = (out / "ada" / "results.json").stat().st_mtime - 86400 * 365
    os.utime(changed, (past, past))  # files dated a year before the results
    os.utime(cls / "ada", (past, past))
    assert run() == ["ada"]
    assert run() == []
    # results written by a grader that kept no digest: graded again, never trusted by times
    saved = json.loads((out / "bob" / "results.json").read_text())
    del saved["submission_digest"]
    write_student(out / "bob", saved)
    assert run() == ["bob"]


@pytest.mark.slow  # grades in a real sandbox
def test_a_student_with_a_loop_of_links_is_graded_and_the_links_named(tmp_path):
    """Last round this student was NOT GRADED at every run ("Too many levels of symbolic
    links"), so a student could avoid a grade indefinitely."""
    from autograder.__main__ import main

    root = tmp_path / "class" / "ada"
    root.mkdir(parents=True)
    (root / A).write_text((REPO / "solutions" / A).read_text())
    os.symlink("loopB", root / "loopA")
    os.symlink("loopA", root / "loopB")
    os.mkfifo(root / "pipe")
    out = tmp_path / "grades"
    command = ["grade", str(tmp_path / "class"), "--out", str(out), "--quiet", "--secret", "s"]
    assert main([*command, "--timeout", "120"]) == 0
    results = json.loads((out / "ada" / "results.json").read_text())
    info = results["notebooks"]["01_soft_lookup"]
    assert info["score"] == info["max_score"] > 0
    for name in ("loopA", "loopB", "pipe"):
        assert any(m.startswith(f"{name} was not copied") for m in results["submission_messages"])
    assert main([*command, "--timeout", "120"]) == 0  # and the next run: up to date, not lost
    assert json.loads((out / "ada" / "results.json").read_text())["score"] == results["score"]
