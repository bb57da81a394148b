"""Where a grading run keeps its scratch files: a roomy tmpfs when there is one (file churn on a
disk cost the parent 0.5-1 CPU-s per student), unless the user said where."""

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
import pytest

import autograder
from autograder.config import Config
from autograder.grading import student, workspace

REPO = Path(autograder.__file__).resolve().parent.parent


def mounted_tmpfs():
    with open("/proc/self/mounts") as mounts:
        return [line.split()[1] for line in mounts if line.split()[2:3] == ["tmpfs"]]


def test_the_users_choice_wins(monkeypatch, tmp_path):
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again
    (tmp_path / "tmp").mkdir()
    assert workspace.scratch_folder(Config()) == tmp_path / "tmp"
    monkeypatch.setenv("AUTOGRADER_WORK_DIR", str(tmp_path / "work"))
    assert workspace.scratch_folder(Config()) == tmp_path / "work"


def test_a_roomy_tmpfs_is_preferred_and_a_small_or_disk_one_is_not(monkeypatch, tmp_path):
    monkeypatch.delenv("TMPDIR", raising=False)
    monkeypatch.delenv("AUTOGRADER_WORK_DIR", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", None)
    default = Path(tempfile.gettempdir())
    roomy = [
        Path(p)
        for p in mounted_tmpfs()
        if os.access(p, os.W_OK | os.X_OK)
        and os.statvfs(p).f_bavail * os.statvfs(p).f_frsize >= workspace.MEMORY_FS_MIN_FREE
    ]
    if not roomy or str(tmp_path) in mounted_tmpfs():
        pytest.skip("needs a writable tmpfs with room, and tmp_path on another file system")
    monkeypatch.setattr(workspace, "MEMORY_FS", roomy[0])
    assert workspace.scratch_folder(Config()) == roomy[0]
    monkeypatch.setattr(workspace, "MEMORY_FS_MIN_FREE", 2**62)  # like a Docker-sized /dev/shm
    assert workspace.scratch_folder(Config()) == default
    monkeypatch.setattr(workspace, "MEMORY_FS_MIN_FREE", 0)
    monkeypatch.setattr(workspace, "MEMORY_FS", tmp_path)  # a folder, not a tmpfs mount
    assert workspace.scratch_folder(Config()) == default


def test_a_run_folder_is_made_in_the_scratch_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("AUTOGRADER_WORK_DIR", str(tmp_path / "scratch"))
    root, fd = workspace.start_work_root(False, workspace.scratch_folder(Config()))
    try:
        assert root.parent == tmp_path / "scratch"
        assert root.name.startswith(workspace.RUN_PREFIX)
    finally:
        os.close(fd)
        student.remove_quietly(root)
    assert list((tmp_path / "scratch").iterdir()) == []


@pytest.mark.slow  # grades in a real sandbox
def test_the_class_is_gathered_on_disk_and_each_student_worked_on_in_the_scratch(tmp_path):
    """A class of large notebooks must not fill a memory file system: only the per-student work
    (made and removed one student at a time) goes to the scratch folder."""
    solution = nbformat.v4.new_notebook()
    solution.cells = [nbformat.v4.new_code_cell("def percentages(scores):\n    return scores")]
    (tmp_path / "class" / "ann" / "week1").mkdir(parents=True)  # a sub-folder: gathered
    nbformat.write(solution, tmp_path / "class" / "ann" / "week1" / "01_soft_lookup.ipynb")
    for name in ("scratch", "disk"):
        (tmp_path / name).mkdir()
    env = dict(
        os.environ,
        AUTOGRADER_WORK_DIR=str(tmp_path / "scratch"),
        TMPDIR=str(tmp_path / "disk"),
    )
    done = subprocess.run(
        [sys.executable, "-m", "autograder", "grade", str(tmp_path / "class")]
        + ["--out", str(tmp_path / "out"), "--keep-work", "--quiet", "--secret", "s"],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    [disk_run] = (tmp_path / "disk").glob(f"{workspace.RUN_PREFIX}*")
    [scratch_run] = (tmp_path / "scratch").glob(f"{workspace.RUN_PREFIX}*")
    assert list((disk_run / "submissions").rglob("01_soft_lookup.ipynb"))
    assert not (scratch_run / "submissions").exists()
    assert list(scratch_run.glob("student-ann-*"))  # the student's work folder
