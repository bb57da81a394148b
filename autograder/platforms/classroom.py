"""GitHub Classroom: gather each student's repository into a class folder that `grade` reads.

    python -m autograder classroom gather REPOS --into class/ [--prefix attention-]
                                          [--deadline 2026-12-18T23:59:00+01:00]
                                          [--cache repos/] [--record handed_in.csv]

REPOS is a text file with one repository per line: a clone URL (`git@github.com:org/
attention-ada.git`, `https://github.com/org/attention-ada`) or a local path; blank lines and
`#` comments are skipped. Each repository is cloned into the cache (or fetched, when it is
there already), and the commit to grade is chosen: the newest commit of the default branch, or
with `--deadline`, the newest one whose commit time is not after it. Its notebooks (the course's
file names, anywhere in the tree) are written to `class/<student>/` with the commit's time as
their modification time, so a later `grade` regrades only students with new commits, and
`--record` gets one row per student: student, notebook (empty: all), handed_in (the commit's
time), repository, commit: `grade --deadlines ... --handed-in handed_in.csv` reads it.
gather writes nowhere else: without `--cache` the clones go to a temporary folder removed at the
end, and without `--record` no record is written (the file times carry the commits' times).

The student id is the repository's name without `--prefix` (GitHub Classroom names each
student's copy `<assignment>-<github user>`). A repository that cannot be cloned, has no commit
before the deadline or holds no notebook is reported and left out; the others are gathered.

Commit times are written by the student's own git: a student can set them. `--deadline`
excludes commits dated after it, which is what an honest history needs; to be sure nothing
pushed later is graded, run `gather` at the deadline (a scheduled job), and keep `--record`.
git is run as a program, with prompts for credentials turned off, hooks disabled, and no
checkout: files are read from the commit with `git show`, never written by git into the class.
"""

import os
import re
import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from autograder.curriculum import NOTEBOOKS
from autograder.safe_files import printable, remove_tree

NOTEBOOK_FILES = {nb.filename for nb in NOTEBOOKS}
MAX_NOTEBOOK_BYTES = 20 * 2**20
GIT_ENV = {
    "GIT_TERMINAL_PROMPT": "0",  # a private repository without credentials fails, never asks
    "GIT_ASKPASS": "/bin/false",
    "GIT_CONFIG_NOSYSTEM": "1",
    "LC_ALL": "C",
}


class GatherError(RuntimeError):
    """One repository could not be gathered; the message says which and why."""


@dataclass
class Gathered:
    student: str
    repository: str
    commit: str
    handed_in: datetime
    notebooks: list


def read_repository_list(path):
    repos = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            repos.append(line)
    return repos


def student_of(repository, prefix=""):
    """'ada' for '.../attention-ada.git' with prefix 'attention-'."""
    name = re.split(r"[/:]", repository.rstrip("/"))[-1].removesuffix(".git")
    if prefix and name.startswith(prefix):
        name = name[len(prefix) :]
    if not name or name in (".", "..") or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._@+-]*", name):
        raise GatherError(f"{printable(repository)}: cannot tell the student from its name")
    return name


def _git(*args, cwd=None, timeout=600):
    done = subprocess.run(
        ["git", "-c", "core.hooksPath=/dev/null", *args],
        cwd=cwd,
        capture_output=True,
        timeout=timeout,
        env={**os.environ, **GIT_ENV},
    )
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:]
        raise GatherError(f"git {args[0]} failed: {printable(' '.join(message))}")
    return done.stdout


def update_clone(repository, cache):
    """A bare mirror of `repository` in `cache` (cloned, or fetched when it is there)."""
    target = Path(cache) / (student_of(repository) + ".git")
    if target.is_dir():
        _git("fetch", "--quiet", "--prune", "origin", "+refs/heads/*:refs/heads/*", cwd=target)
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        _git("clone", "--quiet", "--bare", "--", repository, str(target))
    return target


def chosen_commit(clone, deadline=None):
    """(commit, its time) on the default branch: the newest, or the newest not after deadline."""
    try:
        lines = _git("log", "--first-parent", "--format=%H %ct", "HEAD", cwd=clone).split(b"\n")
    except GatherError:
        lines = []  # an empty repository has no HEAD
    for line in lines:
        if line.strip():
            commit, seconds = line.decode().split()
            when = datetime.fromtimestamp(int(seconds), UTC)
            if deadline is None or when <= deadline:
                return commit, when
    raise GatherError("no commit" + (" before the deadline" if deadline else ""))


def export_notebooks(clone, commit, target, when):
    """Write the course's notebooks of `commit` into `target` (a new folder), dated `when`."""
    listing = _git("ls-tree", "-r", "-z", "--long", commit, cwd=clone).split(b"\0")
    found = {}
    for entry in listing:
        if not entry:
            continue
        meta, _, path = entry.partition(b"\t")
        mode, kind, blob, size = meta.split()
        name = path.rsplit(b"/", 1)[-1].decode("utf-8", "replace")
        if kind != b"blob" or mode not in (b"100644", b"100755") or name not in NOTEBOOK_FILES:
            continue  # links, submodules, other files
        if name in found:
            found[name] = None  # two copies: grade reports the name; take the top-most
            continue
        if int(size) > MAX_NOTEBOOK_BYTES:
            continue
        found[name] = blob
    target.mkdir(parents=True, exist_ok=False)
    written = []
    for name, blob in sorted(found.items()):
        if blob is None:
            continue
        data = _git("cat-file", "blob", blob.decode(), cwd=clone)
        path = target / name
        path.write_bytes(data)
        os.utime(path, (when.timestamp(), when.timestamp()))
        written.append(name)
    os.utime(target, (when.timestamp(), when.timestamp()))
    return written


def gather(repositories, into, cache, prefix="", deadline=None):
    """([Gathered], [(repository, why)])."""
    into, gathered, failed = Path(into), [], []
    into.mkdir(parents=True, exist_ok=True)
    seen = set()
    for repository in repositories:
        try:
            student = student_of(repository, prefix)
            if student in seen:
                raise GatherError(f"a second repository for student {student}")
            seen.add(student)
            clone = update_clone(repository, cache)
            commit, when = chosen_commit(clone, deadline)
            staging = into / f".{student}.gathering"
            if staging.exists():
                remove_tree(staging)
            notebooks = export_notebooks(clone, commit, staging, when)
            if not notebooks:
                remove_tree(staging)
                raise GatherError(f"commit {commit[:10]} holds none of the course's notebooks")
            final = into / student
            if final.exists():
                remove_tree(final)
            staging.rename(final)
            gathered.append(Gathered(student, repository, commit, when, notebooks))
        except (GatherError, OSError, subprocess.TimeoutExpired) as exc:
            failed.append((repository, str(exc)))
    return gathered, failed


RECORD_COLUMNS = ("student", "notebook", "handed_in", "repository", "commit")


def write_record(path, gathered):
    from autograder.escaping import csv_row
    from autograder.report import atomic_write

    lines = [csv_row(RECORD_COLUMNS)]
    for g in sorted(gathered, key=lambda g: g.student):
        lines.append(csv_row([g.student, "", g.handed_in.isoformat(), g.repository, g.commit]))
    atomic_write(path, "\n".join(lines) + "\n")


def add_arguments(commands):
    parser = commands.add_parser("classroom", help="GitHub Classroom: gather the repositories")
    sub = parser.add_subparsers(dest="classroom_command", required=True)
    cmd = sub.add_parser("gather", help="clone or update each repository; write class/<student>/")
    cmd.add_argument("repos", help="a file with one repository URL or path per line")
    cmd.add_argument("--into", required=True, help="the class folder to write")
    cmd.add_argument(
        "--cache",
        help="keep the clones here, so the next gather fetches only what is new (default: a "
        "temporary folder, removed at the end)",
    )
    cmd.add_argument("--prefix", default="", help="Classroom's assignment prefix, e.g. attention-")
    cmd.add_argument("--deadline", help="only commits dated at or before this (ISO 8601)")
    cmd.add_argument(
        "--record",
        help="write the graded commits and their times here (CSV, for grade --handed-in); the "
        "notebooks' file times are the commits' times either way",
    )


def run(args):
    deadline = None
    if args.deadline:
        try:
            deadline = datetime.fromisoformat(args.deadline)
        except ValueError:
            raise SystemExit(f"error: --deadline {args.deadline!r} is not ISO 8601") from None
        if deadline.tzinfo is None:
            raise SystemExit("error: --deadline needs a UTC offset (e.g. +01:00 or Z)")
    repositories = read_repository_list(args.repos)
    if args.cache:
        gathered, failed = gather(repositories, args.into, args.cache, args.prefix, deadline)
    else:
        import tempfile

        with tempfile.TemporaryDirectory(prefix="attention-gather-") as cache:
            gathered, failed = gather(repositories, args.into, cache, args.prefix, deadline)
    if args.record:
        write_record(args.record, gathered)
    for g in gathered:
        print(f"{printable(g.student)}: {g.commit[:10]} of {g.handed_in:%Y-%m-%d %H:%M} UTC, "
              f"{len(g.notebooks)} notebook(s)")  # fmt: skip
    for repository, why in failed:
        print(f"NOT GATHERED {printable(repository)}: {printable(why)}")
    print(f"gathered {len(gathered)} repositories into {printable(args.into)}; "
          f"{len(failed)} not gathered"
          + (f"; record: {printable(args.record)}" if args.record else ""))  # fmt: skip
    return 1 if failed else 0
