"""Where the notebooks are: turn what an instructor points `grade` at into students' folders.

    subs = discover("submissions/", out="grades", staging=tmp)   # -> [Submission]
    subs[0].student, subs[0].folder, subs[0].messages

Layouts read (see docs/instructors.md, "Grading"):
- a folder of student folders (student id = folder name), each holding the notebooks;
- one student's folder (PATH itself holds notebooks);
- nbgrader's tree: COURSE/ or COURSE/submitted/, i.e. submitted/<student>/<assignment>/*.ipynb,
  one assignment per notebook or one assignment holding all six;
- one student's upload whose notebooks are loose, in sub-folders, or in a .zip.

Notebooks are matched by SPEC file name. A file that cannot be placed (an unknown name, two
different files with the same name, a symbolic link, an unsafe or oversized zip member) gets a
message naming it, which the student reads in results.json and feedback.html; it is never
dropped silently. Symbolic links are never followed; zip members are read into files named by
us (a member's own path is never used to write), with caps on count and size.

A student whose folder holds their notebooks loose, with nothing to report (no link, no unknown
name, no copy), is graded from that folder as it is (as before); any other student gets a fresh flat folder under `staging` holding
their notebooks by SPEC name. Notebooks outside the graded set (nbgrader `--assignment`) go to
a sub-folder named like the notebook, so notebook 06 still finds the student's own 05
(`coursedata.import_definitions` looks in sub-folders) without 05 being graded.
"""

import difflib
import hashlib
import os
import stat
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from autograder import student_ids
from autograder.curriculum import NOTEBOOKS
from autograder.escaping import terminal as printable

NOTEBOOK_FILES = {nb.filename: nb.stem for nb in NOTEBOOKS}
GENERAL = "*"  # key of messages about the whole submission, not one notebook

# Caps: an upload is a handful of notebooks. Anything far past that is a mistake or an attack.
MAX_FILES = 5_000  # files looked at in one student's tree
MAX_DEPTH = 8  # folder depth below the student's folder
MAX_NOTEBOOK_BYTES = 100 * 2**20  # per notebook (the sandbox's copy has the same cap)
MAX_ZIP_MEMBERS = 2_000
MAX_ZIP_BYTES = 300 * 2**20  # uncompressed notebooks read from one zip, counted as read
MAX_COMPARED_BYTES = 300 * 2**20  # copies of one notebook read to see whether they are the same
SKIPPED_DIRS = {".ipynb_checkpoints", "__MACOSX", "__pycache__", ".git"}


@dataclass
class Submission:
    student: str
    folder: Path  # holds the notebooks to grade, by SPEC file name, at its top level
    source: Path  # what the instructor gave us for this student (for "is it up to date?")
    messages: dict = field(default_factory=dict)  # notebook stem or GENERAL -> [text]
    refused: str = ""  # why this student is not graded at all (their id, a duplicate)

    def add(self, key, text):
        self.messages.setdefault(key, []).append(text)


@dataclass
class _Found:
    """One notebook file found in a student's tree (or in a zip)."""

    stem: str
    shown: str  # how the student knows it: a path relative to their folder, or zip!member
    data: bytes | None = None  # from a zip
    path: Path | None = None  # on disk
    group: str = ""  # nbgrader assignment (first folder under the student), if any

    def read(self):
        return self.data if self.data is not None else self.path.read_bytes()


# -- the whole thing -----------------------------------------------------------------------------
def discover(
    path,
    out=None,
    staging=None,
    layout="auto",
    student=None,
    graded_groups=None,
    notices=None,
):
    """[Submission] for PATH. layout: auto | class (a folder of students) | student (one).

    `staging` is a folder for the students whose notebooks must be gathered (zips, sub-folders,
    nbgrader's tree); without it a temporary folder is made (the caller removes it).
    `graded_groups`: only these nbgrader assignments (first-level folders) are graded.
    A student who cannot be graded (an id student_ids refuses, two submissions) is a Submission
    whose `refused` says why, with nothing gathered. `notices` (a list), when given, receives
    one line per entry of a class folder that is not a submission and was skipped.
    """
    path = Path(os.path.abspath(path))
    if path.is_symlink():
        raise SystemExit(f"error: {printable(path)} is a symbolic link; point at the folder itself")
    if not path.exists():
        raise SystemExit(f"error: {printable(path)} does not exist")
    if staging is None:
        staging = tempfile.mkdtemp(prefix="autograder-submissions-")
    staging = Path(staging)
    if path.is_file():
        if path.suffix.lower() != ".zip":
            raise SystemExit(
                f"error: {printable(path)} is a file; point at a folder or a .zip upload"
            )
        return [_gather_checked(student or path.stem, path, staging, graded_groups)]
    if layout == "auto" and (path / "submitted").is_dir() and not _holds_notebooks(path):
        path = path / "submitted"  # an nbgrader course root
    if layout == "student" or (layout == "auto" and _is_one_student(path)):
        return [_gather_checked(student or path.name, path, staging, graded_groups)]
    out = Path(os.path.abspath(out)) if out else None
    entries = []  # (student id, path)
    for child in sorted(path.iterdir()):
        why = _not_a_submission(child, out)
        if why:
            if notices is not None:
                notices.append(f"{printable(child.name)}: {why}")
            continue
        entries.append((child.stem if child.is_file() else child.name, child))
    if not entries:  # an empty folder: one student with nothing (every notebook missing)
        return [_gather_checked(student or path.name, path, staging, graded_groups)]
    by_student = {}
    for name, child in entries:
        by_student.setdefault(student_ids.key(name), []).append(child)
    found = []
    for name, child in entries:
        same = by_student[student_ids.key(name)]
        if len(same) > 1:
            found.append(_duplicate(name, child, same))
        else:
            found.append(_gather_checked(name, child, staging, graded_groups))
    return found


def _not_a_submission(child, out):
    """Why an entry of a class folder is not a student's submission, or "" when it is one.
    A name starting with "_" is a student's (e-mail addresses can); only the folders tools
    make (__MACOSX, __pycache__, .git, ...) and hidden entries are not."""
    if child.name in SKIPPED_DIRS:
        return "a folder that tools make (not a student's); skipped"
    if child.name.startswith("."):
        return "a hidden entry (its name starts with '.'); skipped"
    if child.is_symlink():
        return "a symbolic link; not followed, skipped (put the folder or .zip itself here)"
    if out is not None and (child == out or out.is_relative_to(child)):
        return "this run's output folder; skipped"
    if child.is_dir():
        return ""
    if child.is_file() and child.suffix.lower() == ".zip":
        return ""
    if child.is_file():
        return "a file that is not a submission (a student's folder or .zip); skipped"
    return "not a folder or a regular file; skipped"


def _gather_checked(student, source, staging, graded_groups):
    """gather(), for a student whose id student_ids accepts; a refused Submission otherwise."""
    why = student_ids.problem(student)
    if why:
        return Submission(student, Path(source), Path(source), refused=f"not graded: {why}.")
    try:
        return gather(student, source, staging, graded_groups)
    except Exception as exc:  # noqa: BLE001 - one unreadable upload never stops the class
        return Submission(
            student,
            Path(source),
            Path(source),
            refused=(
                f"not graded: their files could not be read ({type(exc).__name__}: "
                f"{printable(str(exc))[:200]})."
            ),
        )


def _duplicate(student, source, same):
    """Two submissions for one student id (`bob/` and `bob.zip`, or `Bob/` and `bob.zip`):
    neither is graded (which one the student meant is theirs to say), and both are named."""
    names = ", ".join(printable(p.name) + ("/" if p.is_dir() else "") for p in same)
    return Submission(
        student,
        Path(source),
        Path(source),
        refused=(
            f"not graded: {len(same)} submissions for one student ({names}); keep one and "
            "grade again."
        ),
    )


def _holds_notebooks(folder):
    return any(
        p.suffix.lower() in (".ipynb", ".zip") and not p.is_symlink() and p.is_file()
        for p in folder.iterdir()
    )


def _is_one_student(folder):
    """One student's folder: notebooks loose at the top, or a single zip and nothing else, or
    sub-folders named like the notebooks (nbgrader's one assignment per notebook, for one
    student), or a folder of nbgrader's submitted/. Otherwise: a folder of students (folders
    or zips)."""
    entries = [
        e for e in folder.iterdir() if not e.name.startswith(".") and e.name not in SKIPPED_DIRS
    ]
    files = [e for e in entries if e.is_file() and not e.is_symlink()]
    folders = [e for e in entries if e.is_dir() and not e.is_symlink()]
    zips = [e for e in files if e.suffix.lower() == ".zip"]
    if any(e.suffix.lower() == ".ipynb" for e in files) or folder.parent.name == "submitted":
        return True
    if len(zips) == 1 and not folders:
        return True
    stems = set(NOTEBOOK_FILES.values())
    return any(e.name in stems for e in folders)


# -- one student ---------------------------------------------------------------------------------
def gather(student, source, staging, graded_groups=None):
    """The Submission of one student whose files are at `source` (a folder or a .zip)."""
    source = Path(source)
    sub = Submission(student, source, source)
    found = []
    if source.is_file():
        found += _from_zip(source, source.name, sub)
    else:
        found += _walk(source, sub)
    by_stem = {}
    for item in found:
        by_stem.setdefault(item.stem, []).append(item)

    chosen, support = {}, {}
    for stem, items in by_stem.items():
        item = _choose(stem, items, sub)
        if item is None:
            continue
        if graded_groups is not None and item.group not in graded_groups:
            support[stem] = item
        else:
            chosen[stem] = item

    loose = all(i.path is not None and i.path.parent == source for i in chosen.values())
    if source.is_dir() and loose and not support and not sub.messages and not _has_zip(found):
        return sub  # graded from the folder itself, as it is
    # a folder of its own for each student: two names that look alike once made safe for a path
    # ("john smith", "john_smith") must never share one, or one is graded with the other's work
    Path(staging).mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix=f"{_safe(student)}-", dir=staging))
    for stem, item in chosen.items():
        (folder / f"{stem}.ipynb").write_bytes(item.read())
    for stem, item in support.items():  # readable by later notebooks, not graded
        (folder / stem).mkdir()
        (folder / stem / f"{stem}.ipynb").write_bytes(item.read())
    sub.folder = folder
    return sub


def _not_a_file(path):
    """What a path that is not a regular file is, in words ("is a symbolic link; upload ...")."""
    if path.is_symlink():
        return "is a symbolic link; upload the file itself"
    mode = path.lstat().st_mode
    if stat.S_ISFIFO(mode):
        return "is a named pipe (FIFO), not a notebook file"
    if stat.S_ISDIR(mode):
        return "is a folder, not a notebook file"
    return "is a device or a socket, not a notebook file"


def _has_zip(found):
    return any(i.data is not None for i in found)


def _choose(stem, items, sub):
    """The one file to grade for `stem`, or None (with a message) when they disagree."""
    if len(items) == 1:
        return items[0]
    where = ", ".join(item.shown for item in items)
    if sum(_size(item) for item in items) > MAX_COMPARED_BYTES:
        sub.add(
            stem,
            f"{stem}.ipynb was found {len(items)} times ({where[:300]}), too many or too large "
            "copies to compare, so it was not graded: keep one copy and submit again.",
        )
        return None
    contents = {_digest(item) for item in items}  # never every copy in memory at once
    if len(contents) == 1:
        return min(items, key=lambda i: (i.shown.count("/"), i.shown))
    sub.add(
        stem,
        f"{stem}.ipynb was found {len(items)} times with different contents ({where}), so it "
        "was not graded: keep one copy and submit again.",
    )
    return None


def _size(item):
    return len(item.data) if item.data is not None else item.path.stat().st_size


def _digest(item):
    """A hash of a found notebook's bytes, read from disk in chunks (a student's tree may hold
    thousands of copies of a notebook of up to MAX_NOTEBOOK_BYTES each, sparse on disk)."""
    if item.data is not None:
        return hashlib.sha256(item.data).digest()
    digest = hashlib.sha256()
    with open(item.path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.digest()


def _walk(root, sub):
    """Notebook files under `root` (not following links), zips opened; messages for the rest."""
    found, seen = [], 0
    for folder, dirs, files in os.walk(root, followlinks=False):
        here = Path(folder)
        depth = len(here.relative_to(root).parts)
        keep = []
        for d in sorted(dirs):
            p = here / d
            if d in SKIPPED_DIRS or d.startswith("."):
                continue
            if p.is_symlink():
                sub.add(GENERAL, f"{_rel(p, root)} is a link to a folder; it was not followed.")
                continue
            if depth + 1 > MAX_DEPTH:
                sub.add(GENERAL, f"{_rel(p, root)} is nested too deep; it was not searched.")
                continue
            keep.append(d)
        dirs[:] = keep
        for name in sorted(files):
            seen += 1
            if seen > MAX_FILES:
                sub.add(GENERAL, f"more than {MAX_FILES} files: the rest were not searched.")
                return found
            p = here / name
            suffix = p.suffix.lower()
            if suffix not in (".ipynb", ".zip") or name.startswith("."):
                continue
            shown = _rel(p, root)
            if p.is_symlink() or not p.is_file():
                key = NOTEBOOK_FILES.get(name, GENERAL)  # shown with that notebook's tests
                sub.add(key, f"{shown} {_not_a_file(p)}; it was not graded.")
                continue
            group = Path(shown).parts[0] if len(Path(shown).parts) > 1 else ""
            if suffix == ".zip":
                for item in _from_zip(p, shown, sub):
                    item.group = item.group or group
                    found.append(item)
                continue
            item = _notebook(name, shown, sub, path=p, group=group)
            if item is not None:
                if p.stat().st_size > MAX_NOTEBOOK_BYTES:
                    sub.add(item.stem, f"{shown} is larger than 100 MB; it was not graded.")
                    continue
                found.append(item)
    return found


def _notebook(name, shown, sub, **where):
    """A _Found for a notebook file named `name`, or None with a message for an unknown name."""
    stem = NOTEBOOK_FILES.get(name)
    if stem is None:
        base = name.rsplit(".", 1)[0]
        close = difflib.get_close_matches(base, list(NOTEBOOK_FILES.values()), n=1, cutoff=0.6)
        hint = f" Did you mean {close[0]}.ipynb? Rename it." if close else ""
        sub.add(
            GENERAL,
            f"{shown} is not one of the course's notebooks (they are named "
            f"{', '.join(sorted(NOTEBOOK_FILES))}), so it was not graded.{hint}",
        )
        return None
    return _Found(stem, shown, **where)


def _from_zip(path, shown, sub):
    """Notebook files inside the zip at `path`, read into memory with caps; never extracted."""
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        sub.add(
            GENERAL, f"{shown} could not be opened as a zip file ({exc}); nothing in it was graded."
        )
        return []
    found, total = [], 0
    with archive:
        members = archive.infolist()
        if len(members) > MAX_ZIP_MEMBERS:
            sub.add(
                GENERAL,
                f"{shown} holds {len(members)} files (at most {MAX_ZIP_MEMBERS} are read); "
                "nothing in it was graded.",
            )
            return []
        for info in members:
            name = info.filename
            parts = PurePosixPath(name.replace("\\", "/")).parts
            if info.is_dir() or not name.lower().endswith((".ipynb", ".zip")):
                continue
            where = f"{shown}!{name}"
            if name.startswith(("/", "\\")) or ".." in parts or (parts and ":" in parts[0]):
                sub.add(GENERAL, f"{where} has an unsafe path; it was not graded.")
                continue
            if any(p in SKIPPED_DIRS or p.startswith(".") for p in parts):
                continue  # macOS resource forks, Jupyter checkpoints, hidden files
            if stat.S_ISLNK(info.external_attr >> 16):
                sub.add(GENERAL, f"{where} is a symbolic link; it was not graded.")
                continue
            if name.lower().endswith(".zip"):
                sub.add(
                    GENERAL, f"{where} is a zip inside a zip; unzip it and submit the notebooks."
                )
                continue
            if info.flag_bits & 0x1:
                sub.add(GENERAL, f"{where} is encrypted; it was not graded.")
                continue
            item = _notebook(parts[-1], where, sub, group=parts[0] if len(parts) > 1 else "")
            if item is None:
                continue
            try:
                data = _read_capped(archive, info, MAX_NOTEBOOK_BYTES)
            except (zipfile.BadZipFile, OSError, RuntimeError, ValueError) as exc:
                sub.add(item.stem, f"{where} could not be read from the zip ({exc}).")
                continue
            if data is None:
                sub.add(item.stem, f"{where} is larger than 100 MB unpacked; it was not graded.")
                continue
            total += len(data)
            if total > MAX_ZIP_BYTES:
                sub.add(GENERAL, f"{shown} unpacks to more than 300 MB; the rest was not read.")
                break
            item.data = data
            found.append(item)
    return found


def _read_capped(archive, info, limit):
    """The member's bytes, or None past `limit` (counted as read: headers can lie)."""
    chunks, size = [], 0
    with archive.open(info) as handle:
        while True:
            chunk = handle.read(1 << 20)
            if not chunk:
                return b"".join(chunks)
            size += len(chunk)
            if size > limit:
                return None
            chunks.append(chunk)


def _rel(path, root):
    try:
        return str(Path(path).relative_to(root))
    except ValueError:
        return Path(path).name


def _safe(name):
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)[:80] or "student"
