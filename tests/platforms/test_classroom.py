"""GitHub Classroom's gather (autograder/platforms/classroom.py) on local repositories made here
(no network): the commit before the deadline is chosen, file times are the commit's, a record of
the graded commits is written, a broken repository costs only itself; and regrading one student
"""

import csv
import json
import os
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import nbformat
import pytest

from autograder.__main__ import main
from autograder.deadlines import load_handed_in
from autograder.platforms.gather_refusals import FILE as NOT_GATHERED

DEADLINE = datetime(2026, 12, 18, 23, 0, tzinfo=UTC)
A = "01_soft_lookup.ipynb"


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
    assert sorted(p.name for p in (tmp_path / "class").iterdir() if p.name != NOT_GATHERED) == [
        "cy"
    ]
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


# -- what each gather saw: backdated pushes, rewritten histories ---------------------------------
def _rows(tmp_path):
    return {r["student"]: r for r in csv.DictReader((tmp_path / "handed_in.csv").open())}


def test_a_commit_dated_before_the_deadline_but_pushed_after_it_is_flagged(tmp_path, capsys):
    """`gather --deadline` takes the newest commit dated before the deadline: a student who
    commits after the deadline with an earlier date was taken as on time, and nothing said so.
    A gather at or after the deadline that did not have the commit is the proof."""
    deadline = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=2)
    ada = _repo(tmp_path / "remote", "attention-ada", [(deadline - timedelta(hours=5), {A: _notebook("early")})])  # fmt: skip
    bob = _repo(tmp_path / "remote", "attention-bob", [(deadline - timedelta(hours=5), {A: _notebook("bob")})])  # fmt: skip
    assert _gather(tmp_path, [ada, bob], "--deadline", deadline.isoformat()) == 0  # after it
    first = _rows(tmp_path)
    assert first["ada"]["flags"] == "" and first["bob"]["flags"] == ""
    assert first["ada"]["author_date"] == (deadline - timedelta(hours=5)).isoformat()
    capsys.readouterr()

    # later: ada commits with a date before the deadline (git lets anyone set it) and pushes
    (ada / A).write_text(_notebook("late work"))
    _git(ada, "commit", "-qam", "late", when=deadline - timedelta(minutes=30))
    bob_commit = first["bob"]["commit"]
    assert _gather(tmp_path, [ada, bob], "--deadline", deadline.isoformat()) == 0
    printed = capsys.readouterr().out
    assert "FLAGGED ada backdated" in printed and "FLAGGED bob" not in printed
    assert "1 flagged" in printed
    rows = _rows(tmp_path)
    assert rows["ada"]["flags"] == "backdated" and rows["bob"]["flags"] == ""
    assert rows["bob"]["commit"] == bob_commit
    assert datetime.fromisoformat(rows["ada"]["first_seen"]) > deadline
    assert datetime.fromisoformat(rows["ada"]["committer_date"]) < deadline
    assert "late work" in (tmp_path / "class" / "ada" / A).read_text()  # graded, flagged
    assert load_handed_in(tmp_path / "handed_in.csv")["ada"].flags == ("backdated",)
    # the history keeps the flag at the next gather, with nothing new pushed
    assert _gather(tmp_path, [ada, bob], "--deadline", deadline.isoformat()) == 0
    assert _rows(tmp_path)["ada"]["flags"] == "backdated"
    history = json.loads((tmp_path / "handed_in.history.json").read_text())
    assert len(history["students"]["ada"]["gathered"]) == 3


def test_without_a_gather_after_the_deadline_nothing_is_claimed(tmp_path, capsys):
    """Commits first seen by a first gather after the deadline may have been pushed in time:
    no flag without a gather that proves otherwise."""
    deadline = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=2)
    ada = _repo(tmp_path / "remote", "attention-ada", [(deadline - timedelta(minutes=1), {A: _notebook("a")})])  # fmt: skip
    assert _gather(tmp_path, [ada], "--deadline", deadline.isoformat()) == 0
    assert "FLAGGED" not in capsys.readouterr().out
    assert _rows(tmp_path)["ada"]["flags"] == ""


@pytest.mark.parametrize("cached", [True, False])
def test_a_rewritten_history_is_flagged(tmp_path, capsys, cached):
    when = DEADLINE - timedelta(days=2)
    ada = _repo(tmp_path / "remote", "attention-ada", [(when, {A: _notebook("one")}), (when + timedelta(hours=1), {A: _notebook("two")})])  # fmt: skip
    cache = ["--cache", str(tmp_path / "cache")] if cached else []

    def gather():
        listing = tmp_path / "repos.txt"
        listing.write_text(f"{ada}\n")
        return main(["classroom", "gather", str(listing), "--into", str(tmp_path / "class"),
                     "--prefix", "attention-", "--record", str(tmp_path / "handed_in.csv"),
                     *cache])  # fmt: skip

    assert gather() == 0
    _git(ada, "commit", "-q", "--amend", "-m", "rewritten", when=when + timedelta(hours=2))
    capsys.readouterr()
    assert gather() == 0
    assert "FLAGGED ada history-rewritten" in capsys.readouterr().out
    assert _rows(tmp_path)["ada"]["flags"] == "history-rewritten"
    _git(ada, "commit", "-q", "--allow-empty", "-m", "more", when=when + timedelta(hours=3))
    assert gather() == 0  # moving forward is no rewrite; the flag stays in the record
    assert "FLAGGED" not in capsys.readouterr().out
    assert _rows(tmp_path)["ada"]["flags"] == "history-rewritten"


def test_a_bad_history_is_refused_before_anything_is_gathered(tmp_path, capsys):
    ada = _repo(tmp_path / "remote", "attention-ada", [(DEADLINE, {A: _notebook("a")})])
    (tmp_path / "handed_in.history.json").write_text('{"students": {"ada": {"seen": {"x": 5}}}}')
    with pytest.raises(SystemExit, match="students.ada.seen"):
        _gather(tmp_path, [ada])
    assert not (tmp_path / "class").exists() and not (tmp_path / "handed_in.csv").exists()


# -- sizes ----------------------------------------------------------------------------------------
def test_oversized_repositories_are_refused_named_and_not_kept(tmp_path, capsys):
    """A 150 MB blob was fetched and kept. Caps: the clone's size, and any file's."""
    import random

    noise = random.Random(0).randbytes(3 * 2**20)  # incompressible: 3 MB on disk too
    when = DEADLINE - timedelta(days=1)
    big_file = _repo(tmp_path / "remote", "attention-ada", [(when, {A: _notebook("a")})])
    (big_file / "data.bin").write_bytes(noise)
    _git(big_file, "add", "-A")
    _git(big_file, "commit", "-qm", "data", when=when)
    _git(big_file, "rm", "-q", "data.bin")  # gone from the tip, still in the history
    _git(big_file, "commit", "-qm", "removed", when=when)
    many = _repo(tmp_path / "remote", "attention-bob", [(when, {A: _notebook("b")})])
    for i in range(3):  # 1.5 MB each, under the file cap; 4.5 MB together, over the other
        (many / f"part{i}.bin").write_bytes(random.Random(i + 1).randbytes(3 * 2**19))
    _git(many, "add", "-A")
    _git(many, "commit", "-qm", "parts", when=when)
    fine = _repo(tmp_path / "remote", "attention-cy", [(when, {A: _notebook("c")})])
    status = _gather(tmp_path, [big_file, many, fine], "--max-file-mb", "2", "--max-repository-mb", "4")  # fmt: skip
    printed = capsys.readouterr().out
    assert status == 1
    assert "NOT GATHERED " + str(big_file) in printed and "a file of 3 MB" in printed
    assert "NOT GATHERED " + str(many) in printed and "larger than 4 MB" in printed
    assert sorted(p.name for p in (tmp_path / "class").iterdir() if p.name != NOT_GATHERED) == [
        "cy"
    ]
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == ["attention-cy.git"]
    assert list(_rows(tmp_path)) == ["cy"]
    # the defaults let both through
    assert _gather(tmp_path, [big_file, many, fine]) == 0


@pytest.mark.parametrize("value", ["0", "-1", "nan"])
def test_a_cap_must_be_a_size(tmp_path, value):
    ada = _repo(tmp_path / "remote", "attention-ada", [(DEADLINE, {A: _notebook("a")})])
    with pytest.raises(SystemExit, match="max-file-mb"):
        _gather(tmp_path, [ada], "--max-file-mb", value)


@pytest.mark.slow  # grades in a real sandbox
def test_gather_on_a_backdated_push_shows_the_flag_and_the_regrade(tmp_path, capsys):
    """The whole story: gathered and graded after the deadline (the released notebook: 0), then
    the student commits the answers dated before the deadline and pushes. The next gather
    flags it, and a plain `grade` (no --force) grades it again, with the flag in results.json;
    file times older than the results never make it "up to date". It was pushed after the
    first gather, itself after the deadline: late, whatever the commit's date says."""
    repo = Path(__file__).resolve().parents[2]
    deadline = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=2)
    released = (repo / "notebooks" / A).read_text()
    ada = _repo(tmp_path / "remote", "attention-ada", [(deadline - timedelta(days=1), {A: released})])  # fmt: skip
    policy = tmp_path / "deadlines.toml"
    policy.write_text(f'[due]\nall = "{deadline.isoformat()}"\n[penalty]\nmethod = "zero"\n')
    out = tmp_path / "grades"

    def grade():
        return main(["grade", str(tmp_path / "class"), "--out", str(out), "--quiet",
                     "--secret", "s", "--timeout", "120", "--deadlines", str(policy),
                     "--handed-in", str(tmp_path / "handed_in.csv")])  # fmt: skip

    assert _gather(tmp_path, [ada], "--deadline", deadline.isoformat()) == 0
    assert grade() == 0
    before = json.loads((out / "ada" / "results.json").read_text())
    stem = A.removesuffix(".ipynb")
    assert before["notebooks"][stem]["score"] == 0 and "handed_in_flags" not in before
    capsys.readouterr()

    (ada / A).write_text((repo / "solutions" / A).read_text())
    _git(ada, "commit", "-qam", "answers", when=deadline - timedelta(minutes=10))
    assert _gather(tmp_path, [ada], "--deadline", deadline.isoformat()) == 0
    assert "FLAGGED ada backdated" in capsys.readouterr().out
    gathered = tmp_path / "class" / "ada" / A
    assert gathered.stat().st_mtime < (out / "ada" / "results.json").stat().st_mtime
    assert grade() == 0
    assert "graded 1 student(s), skipped 0 up to date" in capsys.readouterr().out
    after = json.loads((out / "ada" / "results.json").read_text())
    assert sum(t["score"] for t in after["tests"]) > 0  # regraded: the answers pass
    history = json.loads((tmp_path / "handed_in.history.json").read_text())
    missed_by = history["students"]["ada"]["gathered"][0]  # the first gather, after the deadline
    late = after["late"]["notebooks"][stem]
    assert late["handed_in"] == missed_by and late["seconds_late"] > 0
    assert after["notebooks"][stem]["score"] == 0  # the policy: a late notebook scores 0
    assert [f["flag"] for f in after["handed_in_flags"]] == ["backdated"]


def test_gathers_git_starts_no_background_maintenance(tmp_path, monkeypatch):
    """A detached `git gc --auto` or `git maintenance run --auto` would outlive the fetch and
    change the cache (its lock files come and go) while gather measures its size; whatever the
    instructor's own git configuration says, gather's git has both switched off."""
    from autograder.platforms.classroom import _git as gathers_git

    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[gc]\n\tauto = 1\n[maintenance]\n\tauto = true\n")
    monkeypatch.setenv("HOME", str(home))
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    assert subprocess.run(["git", "config", "gc.auto"], cwd=repo, capture_output=True,
                          text=True).stdout.strip() == "1"  # fmt: skip
    assert gathers_git("config", "gc.auto", cwd=repo).decode().strip() == "0"
    assert gathers_git("config", "maintenance.auto", cwd=repo).decode().strip() == "false"


def test_a_backdated_commit_is_handed_in_no_earlier_than_the_gather_that_missed_it(tmp_path):
    """Flagged `backdated`, the commit was then graded on its own dates: on time, no penalty.
    A gather after the deadline that did not have it proves it was pushed after that gather."""
    deadline = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=2)
    early = deadline - timedelta(hours=5)
    ada = _repo(tmp_path / "remote", "attention-ada", [(early, {A: _notebook("early")})])
    assert _gather(tmp_path, [ada], "--deadline", deadline.isoformat()) == 0
    assert datetime.fromisoformat(_rows(tmp_path)["ada"]["handed_in"]) == early  # seen in time?
    history = json.loads((tmp_path / "handed_in.history.json").read_text())
    missed_by = datetime.fromisoformat(history["students"]["ada"]["gathered"][0])
    assert missed_by > deadline

    (ada / A).write_text(_notebook("late work"))
    _git(ada, "commit", "-qam", "late", when=deadline - timedelta(minutes=30))
    for _ in range(2):  # and again at the next gather, from the history
        assert _gather(tmp_path, [ada], "--deadline", deadline.isoformat()) == 0
        row = _rows(tmp_path)["ada"]
        assert row["flags"] == "backdated"
        assert datetime.fromisoformat(row["committer_date"]) == deadline - timedelta(minutes=30)
        assert datetime.fromisoformat(row["handed_in"]) == missed_by
        assert load_handed_in(tmp_path / "handed_in.csv")["ada"]["01_soft_lookup"] == missed_by
        gathered = tmp_path / "class" / "ada" / A
        assert gathered.stat().st_mtime == missed_by.timestamp()  # for grade without --handed-in


def test_a_commit_first_seen_by_the_first_gather_keeps_its_own_date(tmp_path):
    """No gather before it: nothing proves it late, so nothing moves."""
    deadline = datetime.now(UTC).replace(microsecond=0) - timedelta(hours=2)
    dated = deadline - timedelta(minutes=1)
    ada = _repo(tmp_path / "remote", "attention-ada", [(dated, {A: _notebook("a")})])
    assert _gather(tmp_path, [ada], "--deadline", deadline.isoformat()) == 0
    assert _gather(tmp_path, [ada], "--deadline", deadline.isoformat()) == 0
    assert datetime.fromisoformat(_rows(tmp_path)["ada"]["handed_in"]) == dated


# -- what a tree expands to -----------------------------------------------------------------------
def _git_out(repo, *args, stdin=b""):
    return subprocess.run(["git", *args], cwd=repo, input=stdin, check=True,
                          capture_output=True).stdout.decode().strip()  # fmt: skip


def _tree_bomb(root, name, levels, width=10):
    """A repository holding notebook A and a tree `bomb/` of `levels` nested levels of `width`
    entries, every entry of a level naming the same object: width**levels paths from a few
    kilobytes."""
    repo = _repo(root, name, [(DEADLINE - timedelta(days=1), {A: _notebook("mine")})])
    blob = _git_out(repo, "hash-object", "-w", "--stdin", stdin=b"x")
    listing = "".join(f"100644 blob {blob}\tf{i}\n" for i in range(width))
    tree = _git_out(repo, "mktree", stdin=listing.encode())
    for _ in range(levels - 1):
        listing = "".join(f"040000 tree {tree}\td{i}\n" for i in range(width))
        tree = _git_out(repo, "mktree", stdin=listing.encode())
    top = _git_out(repo, "ls-tree", "HEAD") + f"\n040000 tree {tree}\tbomb\n"
    commit = _git_out(repo, "commit-tree", _git_out(repo, "mktree", stdin=top.encode()), "-p", "HEAD", "-m", "b")  # fmt: skip
    _git_out(repo, "update-ref", "refs/heads/main", commit)
    return repo


def test_paths_are_counted_as_git_lists_them(tmp_path):
    from autograder.platforms.git_paths import TooManyPaths, count_paths

    repo = _tree_bomb(tmp_path, "bomb", levels=3, width=7)
    listed = _git_out(repo, "ls-tree", "-r", "--name-only", "HEAD").splitlines()
    assert len(listed) == 7**3 + 1  # the oracle: git's own listing
    assert count_paths(repo, "HEAD", limit=7**3 + 1, seconds=60) == len(listed)
    with pytest.raises(TooManyPaths, match="more than 343"):
        count_paths(repo, "HEAD", limit=7**3, seconds=60)


@pytest.mark.slow  # a real git tree bomb under a memory cap
def test_a_tree_bomb_under_a_memory_cap_costs_only_its_student(tmp_path):
    """A 35 KB repository expanding to 10^9 paths passed both size caps; under a memory cap
    the MemoryError ended the whole gather: no record, later students not gathered."""
    import sys
    import textwrap

    bomb = _tree_bomb(tmp_path / "remote", "attention-ada", levels=9)
    fine = _repo(tmp_path / "remote", "attention-bob", [(DEADLINE, {A: _notebook("b")})])
    listing = tmp_path / "repos.txt"
    listing.write_text(f"{bomb}\n{fine}\n")
    script = textwrap.dedent(f"""
        import resource, sys
        cap = 1536 * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        from autograder.__main__ import main
        sys.exit(main(["classroom", "gather", {str(listing)!r}, "--into", {str(tmp_path / "class")!r},
                       "--prefix", "attention-", "--record", {str(tmp_path / "handed_in.csv")!r}]))
    """)  # fmt: skip
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 1, done.stderr[-2000:]
    assert f"NOT GATHERED {bomb}: commit " in done.stdout
    assert "more than 100,000: refused" in done.stdout
    assert "Traceback" not in done.stderr
    assert list(_rows(tmp_path)) == ["bob"]
    assert sorted(p.name for p in (tmp_path / "class").iterdir() if p.name != NOT_GATHERED) == [
        "bob"
    ]


def test_any_failure_is_one_students_refusal(tmp_path, monkeypatch, capsys):
    from autograder.platforms import classroom

    export = classroom.export_notebooks

    def failing(clone, commit, target, when):
        if "ada" in str(clone):
            raise MemoryError
        if "cy" in str(clone):
            raise KeyError("surprise")
        return export(clone, commit, target, when)

    monkeypatch.setattr(classroom, "export_notebooks", failing)
    repos = [_repo(tmp_path / "remote", f"attention-{s}", [(DEADLINE, {A: _notebook(s)})])
             for s in ("ada", "bob", "cy")]  # fmt: skip
    assert _gather(tmp_path, repos) == 1
    printed = capsys.readouterr().out
    assert f"NOT GATHERED {repos[0]}: gathering it ran out of memory: refused" in printed
    assert f"NOT GATHERED {repos[2]}: gathering it failed (KeyError" in printed
    assert list(_rows(tmp_path)) == ["bob"]


@pytest.mark.slow  # waits for a git command to run past its time
def test_a_git_command_past_its_time_is_stopped_with_its_children(tmp_path, monkeypatch, capsys):
    """Each git command on a clone has GIT_SECONDS; one that hangs (here a child of git that
    holds git's output open) is stopped, its whole process group, and costs only its student."""
    import shutil

    from autograder.platforms import classroom

    real = shutil.which("git")
    fake = tmp_path / "bin" / "git"
    fake.parent.mkdir()
    sleeper = tmp_path / "sleeper.pid"
    fake.write_text(
        "#!/bin/sh\n"
        'case "$PWD" in *attention-ada*) case " $* " in *" rev-list "*)\n'
        f"  sleep 600 & echo $! > {sleeper}; wait; exit 0;; esac;; esac\n"
        f'exec {real} "$@"\n'
    )
    fake.chmod(0o755)
    repos = [_repo(tmp_path / "remote", f"attention-{s}", [(DEADLINE, {A: _notebook(s)})])
             for s in ("ada", "bob")]  # fmt: skip
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(classroom, "GIT_SECONDS", 2)
    assert _gather(tmp_path, repos) == 1
    printed = capsys.readouterr().out
    assert f"NOT GATHERED {repos[0]}: git rev-list took more than 2 s: stopped" in printed
    assert list(_rows(tmp_path)) == ["bob"]
    stat = Path(f"/proc/{int(sleeper.read_text())}/stat")  # the child went with git
    assert not stat.exists() or stat.read_text().rsplit(")", 1)[1].split()[0] in ("Z", "X")


def test_a_blank_backup_copy_never_costs_the_real_notebook(tmp_path):
    """A repository with GitHub Classroom's blank `backup/01_soft_lookup.ipynb` beside the
    student's own lost notebook 01 (0/6.5, no message): gather dropped every copy. Every copy
    is gathered now, and grade's one rule takes the shallowest, naming the other."""
    from autograder.submissions import discover

    before = DEADLINE - timedelta(hours=3)
    files = {
        "work/01_soft_lookup.ipynb": _notebook("mine = 1"),
        "work/backup/01_soft_lookup.ipynb": _notebook("raise NotImplementedError"),
        "work/Copy of 02_dot_product_softmax.ipynb": _notebook("colab = 2"),
        "work/.ipynb_checkpoints/01_soft_lookup.ipynb": _notebook("checkpoint"),
    }
    ada = _repo(tmp_path / "remote", "attention-ada", [(before, files)])
    assert _gather(tmp_path, [ada]) == 0
    folder = tmp_path / "class" / "ada"
    assert sorted(str(p.relative_to(folder)) for p in folder.rglob("*.ipynb")) == [
        "01_soft_lookup.ipynb",
        "Copy of 02_dot_product_softmax.ipynb",
        "backup/01_soft_lookup.ipynb",
    ]
    [sub] = discover(folder, staging=tmp_path / "staging")
    graded = {p.name: p.read_text() for p in sub.folder.glob("*.ipynb")}
    assert "mine = 1" in graded[A] and "colab = 2" in graded["02_dot_product_softmax.ipynb"]
    assert "backup/01_soft_lookup.ipynb" in " ".join(sub.messages["01_soft_lookup"])


def test_copies_are_capped_the_shallowest_first(tmp_path, monkeypatch):
    from autograder.platforms import classroom

    monkeypatch.setattr(classroom, "MAX_COPIES", 3)
    before = DEADLINE - timedelta(hours=3)
    files = {f"a/b/c/x{i}/{A}": _notebook(f"deep = {i}") for i in range(5)}
    files |= {A: _notebook("mine = 1"), f"copy/{A}": _notebook("copy = 1")}
    ada = _repo(tmp_path / "remote", "attention-ada", [(before, files)])
    assert _gather(tmp_path, [ada]) == 0
    folder = tmp_path / "class" / "ada"
    written = sorted(str(p.relative_to(folder)) for p in folder.rglob("*.ipynb"))
    assert written == [A, "a/b/c/x0/" + A, "copy/" + A]
