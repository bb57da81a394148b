"""GitHub Classroom: gather each student's repository into a class folder that `grade` reads.

    python -m autograder classroom gather REPOS --into class/ [--prefix attention-]
                                          [--deadline 2026-12-18T23:59:00+01:00]
                                          [--cache repos/] [--record handed_in.csv]
                                          [--history gathers.json]
                                          [--max-repository-mb 100] [--max-file-mb 50]

REPOS is a text file with one repository per line: a clone URL (`git@github.com:org/
attention-ada.git`, `https://github.com/org/attention-ada`) or a local path; blank lines and
`#` comments are skipped. Each repository is cloned into the cache (or fetched, when it is
there already), and the commit to grade is chosen: the newest commit of the default branch, or
with `--deadline`, the newest one whose commit time is not after it. Every copy of its notebooks
(the course's file names and the near names `grade` accepts, anywhere in the tree, below the
folder all copies share) is written to `class/<student>/` with the commit's time as their
modification time (`grade` chooses among copies by its one rule: autograder/submissions.py),
and `--record` gets one row per student: student, notebook (empty: all), handed_in (the commit's time), repository, commit, its author and committer dates, the
time a gather first saw it, and the flags below: `grade --deadlines ... --handed-in
handed_in.csv` reads it (the flags reach results.json's `handed_in_flags`). gather writes
nowhere else: without `--cache` the clones go to a temporary folder removed at the end, and
without `--record` no record is written.

Commit times are written by the student's own git: a student can set them. So every gather
also keeps a history (`--history`, default: beside the record, `<record>.history.json`), read
and merged at each gather: per student, the commits each gather saw and when it first saw them,
the branch's head at the last gather, the commit graded, and flags (never a score):
- backdated: the commit graded is dated before the deadline, yet a gather at or after the
  deadline did not have it (it was pushed late, whatever its date says). Only a gather at or
  after the deadline can tell: run one then (a scheduled job), and keep the history;
- history-rewritten: the head an earlier gather saw is no longer in the branch's history.

A backdated commit is taken as handed in at the last gather, at or after the deadline, that did
not have it (record's `handed_in`, and the notebooks' file times): its `committer_date` stays
in the record as the student's git wrote it.

Sizes are capped: a clone or fetch is stopped and refused once the repository passes
`--max-repository-mb` (default 100) on disk, and a repository holding any file (blob, in any
commit) over `--max-file-mb` (default 50, GitHub's own warning size) is refused; a refused clone
is removed from the cache. What the commit graded expands to is capped too (`--max-paths`,
default 100,000 files): a few kilobytes of trees naming one another can expand to 10^9 paths,
so the paths are counted, each distinct tree read once, before anything lists them. Each git
command on a clone has 60 s (a clone or fetch, 600 s). Whoever is refused, or whose gather
fails in any other way (out of memory included), is named (exit 1), and the others are gathered;
each such student is kept in `class/.not_gathered.json` (autograder/platforms/gather_refusals.py),
so that the `grade` run over the class folder names them NOT GRADED with the reason.

The student id is the repository's name without `--prefix` (GitHub Classroom names each
student's copy `<assignment>-<github user>`). A repository that cannot be cloned, has no commit
before the deadline or holds no notebook is reported and left out; the others are gathered.

git is run as a program, with prompts for credentials turned off, hooks disabled, and no
checkout: files are read from the commit with `git cat-file`, never written by git into the
class.
"""

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from autograder.deadlines import GATHER_FLAGS
from autograder.notebook_files import match_name
from autograder.platforms import gather_refusals
from autograder.platforms.git_paths import TooManyPaths, count_paths
from autograder.safe_files import printable, remove_tree
from autograder.sandbox.copying import tree_bytes

MAX_NOTEBOOK_BYTES = 20 * 2**20
MAX_COPIES = 30  # copies of the course's notebooks written from one commit, shallowest first
MAX_COPIES_BYTES = 300 * 2**20  # and their bytes (grade compares at most this: submissions.py)
MAX_COPY_DEPTH = 8  # path parts of a copy (grade's walk looks no deeper: submissions.MAX_DEPTH)
MAX_REPOSITORY_MB = 100  # a student's clone on disk (--max-repository-mb)
MAX_FILE_MB = 50  # any file in any commit (--max-file-mb): GitHub warns from 50 MB
MAX_COMMITS_SEEN = 10_000  # commits of one repository remembered per gather
MAX_PATHS = 100_000  # paths in the commit graded, counted before it is listed (--max-paths)
GIT_SECONDS = 60  # any one git command on the clone (the clone and fetch: CLONE_SECONDS)
CLONE_SECONDS = 600
HISTORY_VERSION = 1
GIT_ENV = {
    "GIT_TERMINAL_PROMPT": "0",  # a private repository without credentials fails, never asks
    "GIT_ASKPASS": "/bin/false",
    "GIT_CONFIG_NOSYSTEM": "1",
    "LC_ALL": "C",
    # no background maintenance (git gc --auto, git maintenance run --auto): a detached gc would
    # outlive the command, change the cache while its size is measured and hold its locks
    "GIT_CONFIG_COUNT": "2",
    "GIT_CONFIG_KEY_0": "gc.auto",
    "GIT_CONFIG_VALUE_0": "0",
    "GIT_CONFIG_KEY_1": "maintenance.auto",
    "GIT_CONFIG_VALUE_1": "false",
}


class GatherError(RuntimeError):
    """One repository could not be gathered; the message says which and why."""


class GitTimeout(GatherError):
    """A git command ran past its time and was stopped."""


@dataclass
class Gathered:
    student: str
    repository: str
    commit: str
    handed_in: datetime  # the commit's committer date, or a later gather's (handed_in_time)
    notebooks: list
    committer_date: datetime | None = None
    author_date: datetime | None = None
    first_seen: datetime | None = None  # when a gather first had this commit
    flags: list = field(default_factory=list)  # GATHER_FLAGS tokens raised by this gather


@dataclass(frozen=True)
class Caps:
    repository_bytes: int = MAX_REPOSITORY_MB * 2**20
    file_bytes: int = MAX_FILE_MB * 2**20
    paths: int = MAX_PATHS


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


def _git(*args, cwd=None, timeout=None):
    """git's output; GatherError when it fails, or takes more than `timeout` (GIT_SECONDS)."""
    returncode, out, err = _run_git(args, cwd, GIT_SECONDS if timeout is None else timeout)
    if returncode != 0:
        message = err.decode("utf-8", "replace").strip().splitlines()[-1:]
        raise GatherError(f"git {args[0]} failed: {printable(' '.join(message))}")
    return out


def _run_git(args, cwd, timeout):
    """(returncode, stdout, stderr) of git in its own process group, which is killed whole when
    it runs past `timeout` (GatherError) or when reading its output fails (a MemoryError): a
    child of git holding the output open never keeps the gather waiting."""
    process = subprocess.Popen(
        ["git", "-c", "core.hooksPath=/dev/null", *args],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, **GIT_ENV},
        start_new_session=True,
    )
    try:
        out, err = process.communicate(timeout=timeout)
    except BaseException as exc:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        if isinstance(exc, subprocess.TimeoutExpired):
            raise GitTimeout(f"git {args[0]} took more than {timeout:g} s: stopped") from None
        raise
    return process.returncode, out, err


def _git_bounded(args, watched, limit, cwd=None, timeout=CLONE_SECONDS):
    """git `args` (a clone or a fetch into `watched`), stopped and refused (GatherError) once
    `watched` holds more than `limit` bytes: its size is looked at while git runs, so a huge
    repository is cut off in the transfer, not after it."""
    with tempfile.TemporaryFile() as errors:
        process = subprocess.Popen(
            ["git", "-c", "core.hooksPath=/dev/null", *args],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=errors,
            env={**os.environ, **GIT_ENV},
            start_new_session=True,  # its own group: stopped with every child it started
        )
        started, too_large = time.monotonic(), False
        while process.poll() is None:
            if tree_bytes(watched) > limit:
                too_large = True
            elif time.monotonic() - started > timeout:
                too_large = None
            if too_large is not False:
                with contextlib.suppress(ProcessLookupError):  # it may have just ended
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()
                break
            time.sleep(0.05)
        if too_large:
            raise GatherError(f"the repository is larger than {_mb(limit)}: refused")
        if too_large is None:
            raise GatherError(f"git {args[0]} took more than {timeout} s: stopped")
        if process.returncode != 0:
            errors.seek(0)
            text = errors.read(64 * 2**10).decode("utf-8", "replace").strip().splitlines()[-1:]
            raise GatherError(f"git {args[0]} failed: {printable(' '.join(text))}")


def _mb(n):
    return f"{n / 2**20:g} MB"


def update_clone(repository, cache, caps=None):
    """A bare mirror of `repository` in `cache` (cloned, or fetched when it is there), within
    `caps` (Caps): over them, GatherError, and the clone is removed."""
    caps = caps or Caps()
    target = Path(cache) / (student_of(repository) + ".git")
    try:
        if target.is_dir():
            _git_bounded(
                ["fetch", "--quiet", "--prune", "origin", "+refs/heads/*:refs/heads/*"],
                target,
                caps.repository_bytes,
                cwd=target,
            )
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            _git_bounded(
                ["clone", "--quiet", "--bare", "--", repository, str(target)],
                target,
                caps.repository_bytes,
            )
        _check_sizes(target, caps)
    except (GatherError, OSError, subprocess.SubprocessError):
        if target.exists():
            remove_tree(target)  # never kept: the next gather clones again
        raise
    return target


def _check_sizes(clone, caps):
    """GatherError when the clone is over the caps: its size on disk, or any blob's size."""
    if tree_bytes(clone) > caps.repository_bytes:
        raise GatherError(f"the repository is larger than {_mb(caps.repository_bytes)}: refused")
    listing = _git(
        "cat-file",
        "--batch-all-objects",
        "--batch-check=%(objecttype) %(objectsize)",
        cwd=clone,
    )
    for line in listing.split(b"\n"):
        kind, _, size = line.partition(b" ")
        if kind == b"blob" and int(size) > caps.file_bytes:
            raise GatherError(
                f"the repository holds a file of {_mb(int(size))}, more than the "
                f"{_mb(caps.file_bytes)} allowed: refused"
            )


def chosen_commit(clone, deadline=None):
    """(commit, committer date, author date) on the default branch: the newest, or the newest
    whose committer date is not after the deadline."""
    try:
        lines = _git("log", "--first-parent", "--format=%H %ct %at", "HEAD", cwd=clone).split(b"\n")
    except GitTimeout:
        raise
    except GatherError:
        lines = []  # an empty repository has no HEAD
    for line in lines:
        if line.strip():
            commit, committed, authored = line.decode().split()
            when = datetime.fromtimestamp(int(committed), UTC)
            if deadline is None or when <= deadline:
                return commit, when, datetime.fromtimestamp(int(authored), UTC)
    raise GatherError("no commit" + (" before the deadline" if deadline else ""))


def _head(clone):
    try:
        return _git("rev-parse", "--verify", "--quiet", "HEAD^{commit}", cwd=clone).decode().strip()
    except GatherError:
        return ""


def _is_ancestor(clone, older, newer):
    """True when commit `older` is in the history of `newer` (False when `older` is gone)."""
    return _run_git(["merge-base", "--is-ancestor", older, newer], clone, GIT_SECONDS)[0] == 0


def _commits(clone, head):
    if not head:
        return []
    listing = _git("rev-list", f"--max-count={MAX_COMMITS_SEEN}", head, cwd=clone)
    return listing.decode().split()


def export_notebooks(clone, commit, target, when):
    """Write every copy of the course's notebooks in `commit` into `target` (a new folder),
    dated `when`; the relative paths written. Every copy is kept, at its path below the
    deepest folder all copies share (`notebooks/01_soft_lookup.ipynb` alone becomes
    `01_soft_lookup.ipynb`; beside it, GitHub Classroom's `backup/01_soft_lookup.ipynb` stays
    one folder deeper), so `grade` chooses among them by its one rule for copies
    (autograder/submissions.py: the shallowest readable copy, its own name before a near one;
    the others named). A name is one notebook_files.match_name knows (`Copy of X`, `X (1)`,
    ...); paths that are not UTF-8, or with a hidden or empty part, are not written, and at
    most MAX_COPIES copies and MAX_COPIES_BYTES are, the shallowest first."""
    listing = _git("ls-tree", "-r", "-z", "--long", commit, cwd=clone).split(b"\0")
    copies = []  # (path parts, blob)
    for entry in listing:
        if not entry:
            continue
        meta, _, path = entry.partition(b"\t")
        mode, kind, blob, size = meta.split()
        if kind != b"blob" or mode not in (b"100644", b"100755"):
            continue  # links, submodules
        try:
            parts = path.decode("utf-8").split("/")
        except UnicodeDecodeError:
            continue
        if match_name(parts[-1]) is None or int(size) > MAX_NOTEBOOK_BYTES:
            continue  # other files
        if any(not p or p.startswith(".") for p in parts) or len(parts) > MAX_COPY_DEPTH:
            continue  # ".", "..", hidden folders (checkpoints), or nested past grade's walk
        copies.append((len(parts), parts, blob, int(size)))
    kept, total = [], 0  # the shallowest first: a cap never drops the student's own copy
    for _, parts, blob, size in sorted(copies):
        if len(kept) >= MAX_COPIES or total + size > MAX_COPIES_BYTES:
            break
        kept.append((parts, blob))
        total += size
    copies = kept
    shared = os.path.commonprefix([parts[:-1] for parts, _ in copies]) if copies else []
    target.mkdir(parents=True, exist_ok=False)
    written = []
    for parts, blob in sorted(copies):
        relative = parts[len(shared) :]
        data = _git("cat-file", "blob", blob.decode(), cwd=clone)
        path = target.joinpath(*relative)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        os.utime(path, (when.timestamp(), when.timestamp()))
        written.append("/".join(relative))
    os.utime(target, (when.timestamp(), when.timestamp()))
    return written


def gather(repositories, into, cache, prefix="", deadline=None, history=None, caps=None, now=None):
    """([Gathered], [(repository, why)]). `history` (a dict, as load_history reads it) is
    updated in place: the commits seen and when, the head, the commit graded, the flags. `now`:
    the time of this gather (tests give it; default: the clock, per repository, once fetched)."""
    into, gathered, failed = Path(into), [], []
    into.mkdir(parents=True, exist_ok=True)
    history = {"students": {}} if history is None else history
    seen = set()
    for repository in repositories:
        try:
            student = student_of(repository, prefix)
            if student in seen:
                raise GatherError(f"a second repository for student {student}")
            seen.add(student)
            clone = update_clone(repository, cache, caps)
            at = now or datetime.now(UTC)
            commit, when, authored = chosen_commit(clone, deadline)
            check_paths(clone, commit, caps or Caps())
            record = history["students"].setdefault(student, {})
            flags = _observe(clone, record, at, commit, when, deadline)
            handed_in = handed_in_time(record, commit, when, deadline)
            staging = into / f".{student}.gathering"
            if staging.exists():
                remove_tree(staging)
            notebooks = export_notebooks(clone, commit, staging, handed_in)
            if not notebooks:
                remove_tree(staging)
                raise GatherError(f"commit {commit[:10]} holds none of the course's notebooks")
            final = into / student
            if final.exists():
                remove_tree(final)
            staging.rename(final)
            record.update(
                repository=repository,
                commit=commit,
                committer_date=when.isoformat(),
                author_date=authored.isoformat(),
                first_seen=record["seen"][commit],
                handed_in=handed_in.isoformat(),
            )
            gathered.append(
                Gathered(
                    student,
                    repository,
                    commit,
                    handed_in,
                    notebooks,
                    committer_date=when,
                    author_date=authored,
                    first_seen=datetime.fromisoformat(record["seen"][commit]),
                    flags=flags,
                )
            )
        except (GatherError, OSError, subprocess.SubprocessError, ValueError) as exc:
            failed.append((repository, str(exc)))
        except MemoryError:  # one student's repository, never the whole gather
            failed.append((repository, "gathering it ran out of memory: refused"))
        except Exception as exc:  # noqa: BLE001 -- the same: named, and the others gathered
            failed.append((repository, f"gathering it failed ({type(exc).__name__}: {exc})"))
    return gathered, failed


def check_paths(clone, commit, caps):
    """GatherError when `commit`'s tree expands to more than `caps.paths` paths (counted before
    anything lists them: a small repository can expand to 10^9) or cannot be counted in time."""
    try:
        count_paths(clone, commit, caps.paths, GIT_SECONDS, env=GIT_ENV)
    except TooManyPaths as exc:
        raise GatherError(f"commit {commit[:10]}: {exc}: refused") from None


def handed_in_time(record, commit, when, deadline):
    """When `commit` (dated `when`) counts as handed in: its date, or, when a gather at or after
    the deadline did not yet have it, the last such gather before the one that first saw it
    (it was pushed after that gather, whatever its own dates say)."""
    if deadline is None:
        return when
    first = datetime.fromisoformat(record["seen"][commit])
    missed = [
        g for g in map(datetime.fromisoformat, record.get("gathered", [])) if deadline <= g < first
    ]
    return max([when, *missed])


def _observe(clone, record, at, commit, when, deadline):
    """Update one student's history `record` with what this gather (at time `at`) sees in the
    clone; the flags it raises (GATHER_FLAGS tokens) for the commit to grade."""
    flags = []
    head = _head(clone)
    earlier = record.get("head")
    if earlier and head and earlier != head and not _is_ancestor(clone, earlier, head):
        flags.append("history-rewritten")
    seen = record.setdefault("seen", {})
    stamp = at.isoformat()
    for sha in _commits(clone, head):
        seen.setdefault(sha, stamp)
    seen.setdefault(commit, stamp)
    first = datetime.fromisoformat(seen[commit])
    gathers = [datetime.fromisoformat(t) for t in record.get("gathered", [])]
    if deadline is not None and when <= deadline < first:
        # proof that it came late: a gather at or after the deadline that did not have it
        if any(deadline <= g < first for g in gathers):
            flags.append("backdated")
    record["gathered"] = [*record.get("gathered", []), stamp]
    record["head"] = head
    kept = record.setdefault("flags", [])
    for flag in flags:
        entry = {"flag": flag, "commit": commit, "at": stamp}
        if not any(k.get("flag") == flag and k.get("commit") == commit for k in kept):
            kept.append(entry)
    return flags


def load_history(path):
    """The gathers' history at `path` ({"students": {}} when there is none yet); SystemExit
    naming the file and the field for one that is not a history gather wrote."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {"version": HISTORY_VERSION, "students": {}}
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise SystemExit(
            f"error: the gather history {printable(path)} cannot be read ({printable(exc)})"
        ) from None
    problem = _history_problem(data)
    if problem:
        raise SystemExit(
            f"error: the gather history {printable(path)}: {problem}; nothing was gathered"
        )
    return data


def _history_problem(data):
    if not isinstance(data, dict) or not isinstance(data.get("students"), dict):
        return "it is not a history gather wrote (no `students` table)"
    for student, record in data["students"].items():
        where = f"students.{printable(student)}"
        if not isinstance(record, dict):
            return f"{where} is not a table"
        for key in ("head", "commit", "repository"):
            if key in record and not isinstance(record[key], str):
                return f"{where}.{key} is not text"
        if "handed_in" in record and not _is_time(record["handed_in"]):
            return f"{where}.handed_in is not a time"
        seen = record.get("seen", {})
        if not isinstance(seen, dict) or not all(_is_time(t) for t in seen.values()):
            return f"{where}.seen must map commits to times"
        gathered = record.get("gathered", [])
        if not isinstance(gathered, list) or not all(_is_time(t) for t in gathered):
            return f"{where}.gathered must be a list of times"
        flags = record.get("flags", [])
        if not isinstance(flags, list) or not all(
            isinstance(f, dict) and f.get("flag") in GATHER_FLAGS for f in flags
        ):
            return f"{where}.flags must be a list of known flags"
    return ""


def _is_time(text):
    try:
        return datetime.fromisoformat(text).tzinfo is not None
    except (TypeError, ValueError):
        return False


def write_history(path, history):
    from autograder.report import atomic_write

    history["version"] = HISTORY_VERSION
    atomic_write(path, json.dumps(history, indent=1, sort_keys=True) + "\n")


RECORD_COLUMNS = (
    "student",
    "notebook",
    "handed_in",
    "repository",
    "commit",
    "author_date",
    "committer_date",
    "first_seen",
    "flags",
)


def write_record(path, gathered, history=None):
    """One row per student: this gather's, then (from the history) every student gathered
    before and not now, whose class folder still holds that commit; `flags`: every flag the
    history keeps for them."""
    from autograder.escaping import csv_row
    from autograder.report import atomic_write

    students = (history or {}).get("students", {})
    rows = {}
    for g in gathered:
        rows[g.student] = [g.student, "", g.handed_in.isoformat(), g.repository, g.commit,
                           g.author_date.isoformat() if g.author_date else "",
                           (g.committer_date or g.handed_in).isoformat(),
                           g.first_seen.isoformat() if g.first_seen else ""]  # fmt: skip
    for student, record in students.items():
        if student not in rows and record.get("commit") and record.get("committer_date"):
            handed_in = record.get("handed_in") or record["committer_date"]
            rows[student] = [student, "", handed_in, record.get("repository", ""),
                             record["commit"], record.get("author_date", ""),
                             record["committer_date"], record.get("first_seen", "")]  # fmt: skip
    lines = [csv_row(RECORD_COLUMNS)]
    for student in sorted(rows):
        kept = students.get(student, {}).get("flags", [])
        flags = list(dict.fromkeys(f["flag"] for f in kept))
        if not students:  # no history: this gather's flags alone
            flags = next((g.flags for g in gathered if g.student == student), [])
        lines.append(csv_row([*rows[student], ";".join(flags)]))
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
        help="write the graded commits, their dates, when they were first seen and their flags "
        "here (CSV, for grade --handed-in); the notebooks' file times are the commits' times "
        "either way",
    )
    cmd.add_argument(
        "--history",
        help="the gathers' history (JSON), read and merged at every gather: the commits seen "
        "and when, for the backdated and rewritten-history flags (default: beside --record, "
        "<record>.history.json)",
    )
    cmd.add_argument(
        "--max-repository-mb",
        type=float,
        default=MAX_REPOSITORY_MB,
        help=f"refuse a repository larger than this on disk (default {MAX_REPOSITORY_MB})",
    )
    cmd.add_argument(
        "--max-file-mb",
        type=float,
        default=MAX_FILE_MB,
        help=f"refuse a repository holding a file larger than this (default {MAX_FILE_MB})",
    )
    cmd.add_argument(
        "--max-paths",
        type=int,
        default=MAX_PATHS,
        help="refuse a commit whose tree holds more files than this, counted before it is "
        f"listed (default {MAX_PATHS:,})",
    )


def _student_or_none(repository, prefix):
    try:
        return student_of(repository, prefix)
    except GatherError:
        return None


def history_path(args):
    if args.history:
        return Path(args.history)
    if args.record:
        record = Path(args.record)
        return record.with_name(record.stem + ".history.json")
    return None


def run(args):
    deadline = None
    if args.deadline:
        try:
            deadline = datetime.fromisoformat(args.deadline)
        except ValueError:
            raise SystemExit(f"error: --deadline {args.deadline!r} is not ISO 8601") from None
        if deadline.tzinfo is None:
            raise SystemExit("error: --deadline needs a UTC offset (e.g. +01:00 or Z)")
    for name in ("max_repository_mb", "max_file_mb"):
        value = getattr(args, name)
        if not (value > 0 and value < 2**40):  # nan fails too
            raise SystemExit(f"error: --{name.replace('_', '-')} must be a number of MB > 0")
    if not 0 < args.max_paths < 2**40:
        raise SystemExit("error: --max-paths must be a number of paths > 0")
    caps = Caps(int(args.max_repository_mb * 2**20), int(args.max_file_mb * 2**20), args.max_paths)
    repositories = read_repository_list(args.repos)
    where = history_path(args)
    history = load_history(where) if where else None
    if args.cache:
        gathered, failed = gather(
            repositories, args.into, args.cache, args.prefix, deadline, history, caps
        )
    else:
        with tempfile.TemporaryDirectory(prefix="attention-gather-") as cache:
            gathered, failed = gather(
                repositories, args.into, cache, args.prefix, deadline, history, caps
            )
    if where:
        write_history(where, history)
    if args.record:
        write_record(args.record, gathered, history)
    gather_refusals.write(
        args.into, [(_student_or_none(r, args.prefix), r, why) for r, why in failed]
    )
    for g in gathered:
        dated = g.committer_date or g.handed_in
        print(f"{printable(g.student)}: {g.commit[:10]} of {dated:%Y-%m-%d %H:%M} UTC, "
              f"{len(g.notebooks)} notebook(s)"
              + (f", handed in {g.handed_in:%Y-%m-%d %H:%M} UTC at the earliest"
                 if g.handed_in != dated else ""))  # fmt: skip
        for flag in g.flags:
            print(f"FLAGGED {printable(g.student)} {flag}: {GATHER_FLAGS[flag]} "
                  f"(commit {g.commit[:10]}, first seen {g.first_seen:%Y-%m-%d %H:%M} UTC)")  # fmt: skip
    for repository, why in failed:
        print(f"NOT GATHERED {printable(repository)}: {printable(why)}")
    flagged = sum(1 for g in gathered if g.flags)
    print(f"gathered {len(gathered)} repositories into {printable(args.into)}; "
          f"{len(failed)} not gathered"
          + (f"; {flagged} flagged" if flagged else "")
          + (f"; record: {printable(args.record)}" if args.record else "")
          + (f"; history: {printable(where)}" if where else ""))  # fmt: skip
    if where is None:
        print("note: nothing is kept between gathers without --history (or --record), so a "
              "commit pushed after the deadline with an earlier date cannot be flagged",
              file=sys.stderr)  # fmt: skip
    return 1 if failed else 0
