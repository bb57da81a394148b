"""GitHub Classroom's gather (autograder/platforms/classroom.py) on local repositories made here
(no network): the commit before the deadline is chosen, file times are the commit's, a record of
the graded commits is written, a broken repository costs only itself; and regrading one student
"""

import csv
import os
import subprocess
from datetime import UTC, datetime, timedelta

import nbformat
import pytest

from autograder.__main__ import main
from autograder.deadlines import load_handed_in

DEADLINE = datetime(2026, 12, 18, 23, 0, tzinfo=UTC)


def _git(repo, *args, when=None):
    env = {**os.environ, "GIT_AUTHOR_NAME": "s", "GIT_AUTHOR_EMAIL": "s@example.org"}
    env |= {"GIT_COMMITTER_NAME": "s", "GIT_COMMITTER_EMAIL": "s@example.org"}
    if when is not None:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = when.isoformat()
    subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True)


def _notebook(text):
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_code_cell(text))
    return nbformat.writes(nb)


def _repo(root, name, commits):
    """A repository `name` with one commit per (time, {path: text or ('link', target)})."""
    repo = root / name
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "main")
    for when, files in commits:
        for path, content in files.items():
            target = repo / path
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, tuple):
                target.unlink(missing_ok=True)
                os.symlink(content[1], target)
            else:
                target.write_text(content)
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", "work", when=when)
    return repo


def _gather(tmp_path, repos, *extra):
    listing = tmp_path / "repos.txt"
    listing.write_text("# the class\n" + "\n".join(str(r) for r in repos) + "\n\n")
    return main(
        ["classroom", "gather", str(listing), "--into", str(tmp_path / "class"),
         "--cache", str(tmp_path / "cache"), "--prefix", "attention-",
         "--record", str(tmp_path / "handed_in.csv"), *extra]
    )  # fmt: skip


def test_gather_takes_the_last_commit_before_the_deadline_with_its_time(tmp_path):
    before, after = DEADLINE - timedelta(hours=3), DEADLINE + timedelta(hours=1)
    ada = _repo(
        tmp_path / "remote",
        "attention-ada",
        [
            (before, {"notebooks/01_soft_lookup.ipynb": _notebook("on time"), "README.md": "x"}),
            (after, {"notebooks/01_soft_lookup.ipynb": _notebook("too late")}),
        ],
    )
    bob = _repo(tmp_path / "remote", "attention-bob", [(before, {"02_dot_product_softmax.ipynb": _notebook("b")})])  # fmt: skip
    assert _gather(tmp_path, [ada, bob], "--deadline", DEADLINE.isoformat()) == 0
    gathered = tmp_path / "class" / "ada" / "01_soft_lookup.ipynb"
    assert "on time" in gathered.read_text() and "too late" not in gathered.read_text()
    assert gathered.stat().st_mtime == pytest.approx(before.timestamp())
    assert sorted(p.name for p in (tmp_path / "class").iterdir()) == ["ada", "bob"]
    assert sorted(p.name for p in (tmp_path / "class" / "ada").iterdir()) == [
        "01_soft_lookup.ipynb"
    ]  # README.md is not a notebook of the course
    rows = list(csv.DictReader((tmp_path / "handed_in.csv").open()))
    assert [r["student"] for r in rows] == ["ada", "bob"]
    assert len(rows[0]["commit"]) == 40
    assert load_handed_in(tmp_path / "handed_in.csv")["ada"]["01_soft_lookup"] == before

    # without a deadline, a second gather fetches and takes the newest commit
    assert _gather(tmp_path, [ada, bob]) == 0
    assert "too late" in gathered.read_text()
    assert gathered.stat().st_mtime == pytest.approx(after.timestamp())


def test_a_broken_repository_costs_only_itself(tmp_path):
    when = DEADLINE - timedelta(days=1)
    good = _repo(tmp_path / "remote", "attention-cy", [(when, {"01_soft_lookup.ipynb": _notebook("c")})])  # fmt: skip
    empty = _repo(tmp_path / "remote", "attention-dee", [(when, {"notes.txt": "no notebooks"})])
    linked = _repo(
        tmp_path / "remote",
        "attention-eve",
        [(when, {"01_soft_lookup.ipynb": ("link", "/etc/passwd")})],
    )
    late_only = _repo(tmp_path / "remote", "attention-fay", [(DEADLINE + timedelta(days=1), {"01_soft_lookup.ipynb": _notebook("f")})])  # fmt: skip
    missing = tmp_path / "remote" / "attention-gus"
    status = _gather(
        tmp_path, [good, empty, linked, late_only, missing], "--deadline", DEADLINE.isoformat()
    )
    assert status == 1  # someone was not gathered: the command says so
    assert sorted(p.name for p in (tmp_path / "class").iterdir()) == ["cy"]
    rows = list(csv.DictReader((tmp_path / "handed_in.csv").open()))
    assert [r["student"] for r in rows] == ["cy"]


def test_a_repository_name_that_is_not_a_student_id_is_refused():
    from autograder.platforms.classroom import GatherError, student_of

    assert student_of("git@github.com:org/attention-ada.git", "attention-") == "ada"
    assert student_of("https://github.com/org/attention-ada/", "attention-") == "ada"
    for bad in (
        "https://github.com/org/attention-",
        "/tmp/..",
        "x/a b",
        "o/attention--x",
        "o/=1+2",
    ):
        with pytest.raises(GatherError):
            student_of(bad, "attention-")


def test_gather_writes_only_where_it_is_told(tmp_path, monkeypatch, capsys):
    before = DEADLINE - timedelta(hours=3)
    ada = _repo(tmp_path / "remote", "attention-ada", [(before, {"01_soft_lookup.ipynb": _notebook("a")})])  # fmt: skip
    listing = tmp_path / "repos.txt"
    listing.write_text(f"{ada}\n")
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("TMPDIR", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again
    code = main(
        [
            "classroom",
            "gather",
            str(listing),
            "--into",
            str(tmp_path / "class"),
            "--prefix",
            "attention-",
        ]
    )
    assert code == 0, capsys.readouterr()
    assert list(cwd.iterdir()) == []  # no clones, no record in the current directory
    assert list((tmp_path / "tmp").iterdir()) == []  # the temporary clones are gone
    assert [p.name for p in (tmp_path / "class" / "ada").iterdir()] == ["01_soft_lookup.ipynb"]
    assert "record" not in capsys.readouterr().out
    with pytest.raises(SystemExit):  # and --into is never guessed
        main(["classroom", "gather", str(listing)])
