"""Where the notebooks are: turn what an instructor points `grade` at into students' folders.

    subs = discover("submissions/", out="grades", staging=tmp)   # -> [Submission]
    subs[0].student, subs[0].folder, subs[0].messages

Layouts read (see docs/instructors.md, "Grading"):
- a folder of student folders (student id = folder name), each holding the notebooks;
- one student's folder (PATH itself holds notebooks);
- nbgrader's tree: COURSE/ or COURSE/submitted/, i.e. submitted/<student>/<assignment>/*.ipynb,
  one assignment per notebook or one assignment holding all six;
- one student's upload whose notebooks are loose, in sub-folders, or in a .zip;
- the bulk downloads of Canvas and Moodle (autograder/bulk_downloads.py): students are found by
  the names those systems give each file or folder, and a student's latest upload of a
  notebook wins (Canvas's attachment ids), the earlier ones named.

Notebooks are matched by name through notebook_files.match_name, the one rule for names: the
SPEC file name, or a near name that can only mean it (another letter case, Colab's `Copy of `, a
browser's ` (1)`), anywhere in the student's tree (say in one extra folder, or a zip's top
folder). Every copy found is considered, and one rule chooses among copies (_choose):
1. a copy that is not a readable notebook never blocks one that is (it is named, not graded);
2. among the readable copies, the shallowest folder wins (a zip counts as one folder), so a
   GitHub Classroom `backup/` copy never hides the student's own;
3. at that depth, the notebook's own name wins over a near name;
4. the copies left at the best rank are taken when they hold the same bytes (the first by
   name), and every other copy is named for the student as found and not graded; when they
   differ, none is taken and the notebook is misnamed with them as its candidates
   (Placement.candidates).
A near name taken says so ("... was graded as 02_dot_product_softmax.ipynb";
Placement.graded_as). A file that cannot be placed (an unknown name, a symbolic link, an
unsafe or oversized zip member) gets a message naming it, which the student reads in
results.json and feedback.html; it is never dropped silently. Symbolic links are never followed; zip members are read into files named by
us (a member's own path is never used to write), with caps on count and size.

A student whose folder holds their notebooks loose, with nothing to report (no link, no unknown
name, no copy), is graded from that folder as it is (as before); any other student gets a fresh flat folder under `staging` holding
their notebooks by SPEC name. Notebooks outside the graded set (nbgrader `--assignment`) go to
a sub-folder named like the notebook, so notebook 06 still finds the student's own 05
(`coursedata.import_definitions` looks in sub-folders) without 05 being graded.
"""

import difflib
import hashlib
import json
import os
import shutil
import stat
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from autograder import bulk_downloads, notebook_files, student_ids, zip_directory
from autograder.curriculum import NOTEBOOKS
from autograder.deadlines import LmsMark
from autograder.escaping import terminal as printable
from autograder.notebook_files import match_name

NOTEBOOK_FILES = {nb.filename: nb.stem for nb in NOTEBOOKS}
GENERAL = "*"  # key of messages about the whole submission, not one notebook

# Caps: an upload is a handful of notebooks. Anything far past that is a mistake or an attack.
MAX_FILES = 5_000  # files looked at in one student's tree
MAX_DEPTH = 8  # folder depth below the student's folder
MAX_NOTEBOOK_BYTES = notebook_files.MAX_NOTEBOOK_BYTES  # per notebook, as grading reads it
MAX_ZIP_MEMBERS = 2_000
MAX_ZIP_BYTES = 300 * 2**20  # uncompressed notebooks read from one zip, counted as read
MAX_COMPARED_BYTES = 300 * 2**20  # copies of one notebook read to see whether they are the same
SKIPPED_DIRS = {".ipynb_checkpoints", "__MACOSX", "__pycache__", ".git"}


class Placement(dict):
    """Messages about a student's files, notebook stem or GENERAL -> [text], and, as fields,
    what name matching decided (grading reads them; they travel with the messages):
    graded_as {stem: the file taken for that notebook under a near name, as the student knows
    it}, candidates {stem: [files]} for a notebook that several different files could be, or
    that is not there but a misspelt file looks like (none of them taken); guesses {stem:
    [files]}, the misspelt files while the folder is walked; copies {stem: [files]}, the other
    copies of a notebook taken from one of them; sources {stem: Path}, the student's own file
    graded as that notebook (a zip's member: the zip), whose time is its hand-in time."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.graded_as, self.candidates, self.guesses = {}, {}, {}
        self.copies = {}  # stem -> [the other copies found, not graded]
        self.sources = {}  # stem -> the student's file graded (or the zip it came from)
        self.marks = {}  # stem -> deadlines.LmsMark of that file (Canvas: late or not), if any


@dataclass
class Submission:
    student: str
    folder: Path  # holds the notebooks to grade, by SPEC file name, at its top level
    source: Path  # what the instructor gave us for this student (for "is it up to date?")
    messages: dict = field(default_factory=Placement)  # notebook stem or GENERAL -> [text]
    refused: str = ""  # why this student is not graded at all (their id, a duplicate)

    def add(self, key, text):
        self.messages.setdefault(key, []).append(text)


@dataclass
class _Found:
    """One notebook file found in a student's tree (or in a zip)."""

    stem: str
    shown: str  # how the student knows it: a path relative to their folder, or zip!member
    exact: bool = True  # named exactly as the notebook (else a near name: notebook_files)
    path: Path | None = None  # on disk: the student's file, or a zip member unpacked by us
    group: str = ""  # nbgrader assignment (first folder under the student), if any
    unpacked: bool = False  # path is ours (a zip member), moved into the student's folder
    origin: Path | None = None  # the student's own file: `path`, or the zip it came from
    order: int = 0  # an LMS's upload order (bulk_downloads: Canvas's attachment id), else 0
    mark: object = None  # deadlines.LmsMark: an LMS's late mark, where its dates are not times

    def place(self, target):
        if self.unpacked:
            os.replace(self.path, target)
        else:
            shutil.copyfile(self.path, target, follow_symlinks=False)


class _Unpacked:
    """Files for one student's zip members, named by us, in a folder made on first use: a zip's
    notebooks are streamed to disk, never held in memory (up to MAX_ZIP_BYTES a zip)."""

    def __init__(self, staging, student):
        self.staging, self.student, self.folder, self.count = Path(staging), student, None, 0

    def new_file(self):
        if self.folder is None:
            self.staging.mkdir(parents=True, exist_ok=True)
            prefix = f".unpacked-{_safe(self.student)}-"
            self.folder = Path(tempfile.mkdtemp(prefix=prefix, dir=self.staging))
        self.count += 1
        return self.folder / f"{self.count}.ipynb"

    def remove(self):
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)


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
    entries, bulk = [], {}  # (student id, path); student id -> [(path, BulkFile)]
    for child in sorted(path.iterdir()):
        why = _not_a_submission(child, out)
        uploaded = bulk_downloads.bulk_file(child.name) if child.is_file() else None
        if uploaded is not None and (not why or why.startswith("a file")):
            bulk.setdefault(uploaded.student, []).append((child, uploaded))
            continue
        moodle, why_not = bulk_downloads.moodle_folder(child.name)
        why = why or why_not
        if why:
            if notices is not None:
                notices.append(f"{printable(child.name)}: {why}")
            continue
        entries.append((moodle or (child.stem if child.is_file() else child.name), child))
    entries += [(name, path) for name in bulk]  # an LMS's flat folder: a student's files in it
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
            found.append(_gather_checked(name, child, staging, graded_groups, bulk.get(name)))
    return found


def content_digest(sub):
    """The digest ("sha256:<hex>") of what grading reads for this student, never of file times:
    every file of sub.folder the copy into the sandbox takes (its path and bytes), every entry
    it skips and why (autograder/sandbox/copying.py's one rule), and the messages about the
    files that could not be placed. The same content gives the same digest at every run,
    whatever its files' times say; results.json keeps it (`submission_digest`), and a student
    is regraded when it differs (grading/classrun.py). None when the folder cannot be walked at all (then
    the student is graded, and nothing is recorded)."""
    try:
        return _content_digest(sub)
    except OSError:
        return None


def _content_digest(sub):
    from autograder.safe_files import UnsafeFile
    from autograder.sandbox.copying import read_chunks, submission_files

    digest = hashlib.sha256()

    def put(*fields):
        for text in fields:
            data = str(text).encode("utf-8", "surrogateescape")
            digest.update(len(data).to_bytes(8, "big") + data)

    for item in submission_files(sub.folder):
        if item[0] == "folder":
            put("folder", "/".join(item[1]))
        elif item[0] == "skipped":
            put("skipped", item[1], item[2])
        else:
            content = hashlib.sha256()
            try:
                for chunk in read_chunks(sub.folder, item[1], item[2]):
                    content.update(chunk)
            except (UnsafeFile, OSError) as exc:
                put("unreadable", "/".join(item[1]), getattr(exc, "message", str(exc)))
                continue
            put("file", "/".join(item[1]), content.hexdigest())
    put("messages", json.dumps(sub.messages, sort_keys=True))
    return "sha256:" + digest.hexdigest()


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


def _gather_checked(student, source, staging, graded_groups, files=None):
    """gather(), for a student whose id student_ids accepts; a refused Submission otherwise.
    `files`: [(path, bulk_downloads.BulkFile)], the student's files of an LMS's flat folder."""
    why = student_ids.problem(student)
    if why:
        return Submission(student, Path(source), Path(source), refused=f"not graded: {why}.")
    try:
        return gather(student, source, staging, graded_groups, files)
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
    or zips, or an LMS's bulk download: autograder/bulk_downloads.py)."""
    entries = [
        e for e in folder.iterdir() if not e.name.startswith(".") and e.name not in SKIPPED_DIRS
    ]
    files = [e for e in entries if e.is_file() and not e.is_symlink()]
    folders = [e for e in entries if e.is_dir() and not e.is_symlink()]
    zips = [e for e in files if e.suffix.lower() == ".zip"]
    uploads = [e for e in files if e.suffix.lower() in (".ipynb", ".zip")]
    if uploads and all(bulk_downloads.bulk_file(e.name) for e in uploads):
        return False  # an LMS's flat folder (Canvas, Moodle): every file names its student
    if any(e.suffix.lower() == ".ipynb" for e in files) or folder.parent.name == "submitted":
        return True
    if len(zips) == 1 and not folders:
        return True
    stems = set(NOTEBOOK_FILES.values())
    return any(e.name in stems for e in folders)


# -- one student ---------------------------------------------------------------------------------
def gather(student, source, staging, graded_groups=None, files=None):
    """The Submission of one student whose files are at `source` (a folder or a .zip), or are
    `files` ([(path, bulk_downloads.BulkFile)]) of an LMS's flat folder `source`."""
    source = Path(source)
    sub = Submission(student, source, source)
    unpacked = _Unpacked(staging, student)
    try:
        return _gather(sub, source, staging, graded_groups, unpacked, files)
    finally:
        unpacked.remove()


def _gather(sub, source, staging, graded_groups, unpacked, files=None):
    found = []
    if files is not None:
        found += _from_bulk(files, sub, unpacked)
    elif source.is_file():
        found += _from_zip(source, source.name, sub, unpacked)
    else:
        found += _walk(source, sub, unpacked)
    by_stem = {}
    for item in found:
        by_stem.setdefault(item.stem, []).append(item)
    for stem, items in by_stem.items():
        by_stem[stem] = _latest(stem, items, sub)

    chosen, support = {}, {}
    for stem, items in by_stem.items():
        item = _choose(stem, items, sub)
        if item is None:
            continue
        if graded_groups is not None and item.group not in graded_groups:
            support[stem] = item
        else:
            chosen[stem] = item
            sub.messages.sources[stem] = item.origin
            if item.mark is not None:
                sub.messages.marks[stem] = item.mark
    for stem, names in getattr(sub.messages, "guesses", {}).items():
        if stem not in by_stem:  # nothing else could be it: the misspelt file is named with it
            sub.add(
                stem,
                f"{stem}.ipynb was not found, and {', '.join(names)} looks like it: rename it "
                f"to {stem}.ipynb and submit again.",
            )
            sub.messages.candidates[stem] = names[:20]

    loose = all(i.path is not None and i.path.parent == source for i in chosen.values())
    zipped = any(i.unpacked for i in found)
    if source.is_dir() and loose and not support and not sub.messages and not zipped and not files:
        return sub  # graded from the folder itself, as it is
    # a folder of its own for each student: two names that look alike once made safe for a path
    # ("john smith", "john_smith") must never share one, or one is graded with the other's work
    Path(staging).mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix=f"{_safe(sub.student)}-", dir=staging))
    for stem, item in chosen.items():
        item.place(folder / f"{stem}.ipynb")
    for stem, item in support.items():  # readable by later notebooks, not graded
        (folder / stem).mkdir()
        item.place(folder / stem / f"{stem}.ipynb")
    sub.folder = folder
    return sub


def _from_bulk(files, sub, unpacked):
    """_Found items of a student's files in an LMS's flat folder, each known to the student by
    the name they uploaded it under (bulk_downloads.BulkFile.name)."""
    found = []
    for path, uploaded in sorted(files, key=lambda f: f[0].name):
        shown = uploaded.name
        try:
            mode = path.lstat().st_mode
        except OSError:
            sub.add(GENERAL, f"{shown} could not be looked at; it was skipped.")
            continue
        if not stat.S_ISREG(mode):
            sub.add(GENERAL, f"{shown} is not a regular file; it was not graded.")
            continue
        if shown.lower().endswith(".zip"):
            items = _from_zip(path, shown, sub, unpacked)
        else:
            item = _notebook(shown, shown, sub, path=path, origin=path)
            if item is not None and path.lstat().st_size > MAX_NOTEBOOK_BYTES:
                sub.add(
                    item.stem,
                    f"{shown} is larger than {_mb(MAX_NOTEBOOK_BYTES)}; it was not graded.",
                )
                item = None
            items = [item] if item is not None else []
        for item in items:
            item.order = uploaded.order
            if uploaded.lms == "Canvas":  # its dates are the download's: the mark is what is known
                item.mark = LmsMark(uploaded.lms, uploaded.late)
            found.append(item)
    return found


def _latest(stem, items, sub):
    """The uploads of `stem` an LMS marks as the latest (Canvas: the highest attachment id);
    the earlier ones are named for the student, not graded. Items without an order: all."""
    latest = max(item.order for item in items)
    if not latest:
        return items
    earlier = [item.shown for item in items if item.order < latest]
    if earlier:
        sub.add(stem, f"An earlier upload was not graded: {', '.join(earlier)}.")
    return [item for item in items if item.order == latest]


def _not_a_file_mode(mode):
    """What an entry that is not a regular file is, in words ("is a named pipe (FIFO), ...")."""
    if stat.S_ISFIFO(mode):
        return "is a named pipe (FIFO), not a notebook file"
    if stat.S_ISDIR(mode):
        return "is a folder, not a notebook file"
    return "is a device or a socket, not a notebook file"


def _rank(item):
    """Where a copy stands in the rule for choosing among copies (the module's docstring): the
    shallowest folder first (a zip counts as one), then the notebook's own name before a near
    name."""
    return (item.shown.count("/") + item.shown.count("!"), not item.exact)


def _choose(stem, items, sub):
    """The one file to grade for `stem` (exact names and near names alike are its candidates),
    or None (with a message, and the candidates recorded) when they disagree.

    The rule: copies that are not a readable notebook never block one that is (they are named);
    among the readable ones, those of the best _rank decide (the shallowest folder, then the
    notebook's own name before a near name): one content there is taken, and every other copy
    is named as not graded; different contents at that rank are none of them taken, all named."""
    if len(items) == 1:
        return _taken(stem, items[0], sub)
    where = ", ".join(item.shown for item in items)
    if sum(_size(item) for item in items) > MAX_COMPARED_BYTES:
        sub.add(
            stem,
            f"{stem}.ipynb was found {len(items)} times ({where[:300]}), too many or too large "
            "copies to compare, so it was not graded: keep one copy and submit again.",
        )
        _ambiguous(stem, items, sub)
        return None
    readable, unreadable = [], []
    for item in items:
        (readable if _readable(item) else unreadable).append(item)
    if not readable:  # none can be read: the best is graded, and its page says why it fails
        readable, unreadable = items, []
    digests = {id(item): _digest(item) for item in readable}  # a hash each, never all in memory
    best = min(_rank(item) for item in readable)
    top = [item for item in readable if _rank(item) == best]
    if len({digests[id(item)] for item in top}) > 1:
        shown = _listed([item.shown for item in top])
        if best[1]:  # near names only
            said = f"{len(top)} different files could each be it ({shown})"
        else:
            said = f"it was found {len(top)} times with different contents ({shown})"
        sub.add(
            stem,
            f"{stem}.ipynb was not graded: {said}. Keep the one you mean, named {stem}.ipynb, "
            "and submit again.",
        )
        others = [item.shown for item in items if item not in top]
        if others:
            sub.add(stem, f"Also found and not graded: {_listed(others)}.")
        _ambiguous(stem, top, sub)
        return None
    chosen = min(top, key=lambda i: i.shown)
    # the same bytes elsewhere say nothing new; a different copy, or an unreadable one, is named
    copies = [
        i.shown for i in readable if digests[id(i)] != digests[id(chosen)] and i is not chosen
    ]
    skipped = [i.shown for i in unreadable]
    if copies:
        sub.add(stem, f"Also found and not graded: {', '.join(copies)}.")
    if skipped:
        sub.add(stem, f"{', '.join(skipped)} could not be read as a notebook; not graded.")
    if isinstance(sub.messages, Placement) and (copies or skipped):
        sub.messages.copies[stem] = [*copies, *skipped][:20]
    return _taken(stem, chosen, sub)


def _readable(item):
    """True when the file can be read as a notebook (notebook_files.load_notebook, bounded)."""
    if item.path is None:
        return False
    notebook, _ = notebook_files.load_notebook(item.path.parent, item.path.name)
    return notebook is not None


def _taken(stem, item, sub):
    """`item` graded as the notebook `stem`; a near name is named for the student."""
    if not item.exact:
        sub.add(stem, f"{item.shown} was graded as {stem}.ipynb.")
        if isinstance(sub.messages, Placement):
            sub.messages.graded_as[stem] = item.shown
    return item


COPIES_NAMED = 10  # copies a message names; the others are counted


def _listed(names):
    """The first COPIES_NAMED names, then how many more: a message stays short whatever a zip holds."""
    more = len(names) - COPIES_NAMED
    return ", ".join(names[:COPIES_NAMED]) + (f" and {more} more" if more > 0 else "")


def _ambiguous(stem, items, sub):
    if isinstance(sub.messages, Placement):
        sub.messages.candidates[stem] = [item.shown for item in items][:20]


def _size(item):
    try:
        return item.path.lstat().st_size
    except OSError:
        return 0


def _digest(item):
    """A hash of a found notebook's bytes, read in chunks without following a link (a student's
    tree may hold thousands of copies of a notebook of up to MAX_NOTEBOOK_BYTES each, sparse on
    disk); None for a file that cannot be read."""
    from autograder.safe_files import UnsafeFile, open_below

    digest = hashlib.sha256()
    try:
        fd = open_below(item.path.parent, [item.path.name])
        with os.fdopen(fd, "rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
    except (UnsafeFile, OSError):
        return None
    return digest.digest()


def _walk(root, sub, unpacked):
    """Notebook files under `root` (not following links), zips opened; messages for the rest.
    Depth first, names sorted; every folder is listed through _listing, so a folder of a
    million files costs no more than MAX_FILES entries. Nothing here follows or opens a link
    (a loop of links included), a FIFO, a socket or a device: each entry is classified by its
    own lstat, and one that cannot be looked at is named and skipped, never fatal."""
    found, seen = [], 0
    stack = [Path(root)]
    while stack:
        here = stack.pop()
        depth = len(here.relative_to(root).parts)
        listed = _listing(here, MAX_FILES - seen)
        if listed is None:
            sub.add(GENERAL, f"more than {MAX_FILES} files: the rest were not searched.")
            return found
        if listed is False:
            where = _rel(here, root) if here != Path(root) else "the folder"
            sub.add(GENERAL, f"{where} could not be read; it was not searched.")
            continue
        seen += len(listed)
        keep = []
        for name, mode in sorted(listed):
            p = here / name
            if mode is not None and stat.S_ISDIR(mode):
                if name in SKIPPED_DIRS or name.startswith("."):
                    continue
                if depth + 1 > MAX_DEPTH:
                    sub.add(GENERAL, f"{_rel(p, root)} is nested too deep; it was not searched.")
                    continue
                keep.append(p)
                continue
            suffix = p.suffix.lower()
            shown = _rel(p, root)
            if name.startswith("."):
                continue
            if mode is None:
                sub.add(GENERAL, f"{shown} could not be looked at; it was skipped.")
                continue
            matched = match_name(name)  # shown with that notebook's tests
            key = matched.stem if matched is not None else GENERAL
            if stat.S_ISLNK(mode):  # never followed; os.path.isdir only looks (a loop: False)
                if suffix in (".ipynb", ".zip"):
                    sub.add(
                        key,
                        f"{shown} is a symbolic link; upload the file itself; it was not graded.",
                    )
                elif os.path.isdir(p):
                    sub.add(GENERAL, f"{shown} is a link to a folder; it was not followed.")
                continue  # other links: the copy into the sandbox names them
            if suffix not in (".ipynb", ".zip"):
                continue
            if not stat.S_ISREG(mode):
                sub.add(key, f"{shown} {_not_a_file_mode(mode)}; it was not graded.")
                continue
            group = Path(shown).parts[0] if len(Path(shown).parts) > 1 else ""
            if suffix == ".zip":
                for item in _from_zip(p, shown, sub, unpacked):
                    item.group = item.group or group
                    found.append(item)
                continue
            item = _notebook(name, shown, sub, path=p, group=group, origin=p)
            if item is not None:
                try:
                    size = p.lstat().st_size
                except OSError:
                    sub.add(item.stem, f"{shown} could not be looked at; it was not graded.")
                    continue
                if size > MAX_NOTEBOOK_BYTES:
                    sub.add(
                        item.stem,
                        f"{shown} is larger than {_mb(MAX_NOTEBOOK_BYTES)}; it was not graded.",
                    )
                    continue
                found.append(item)
        stack.extend(reversed(keep))
    return found


def _listing(folder, limit):
    """[(name, st_mode or None)] of the entries of `folder`, each classified by its own lstat
    (never followed: a link, a loop of links, is a link), or None when it holds more than
    `limit` (a listing is never read past the limit), or False when it cannot be read."""
    entries = []
    try:
        with os.scandir(folder) as scan:
            for entry in scan:
                if len(entries) >= limit:
                    return None
                try:
                    mode = entry.stat(follow_symlinks=False).st_mode
                except OSError:
                    mode = None
                entries.append((entry.name, mode))
    except OSError:
        return False
    return entries


def _notebook(name, shown, sub, **where):
    """A _Found for a notebook file named `name` (its own name or a near one, see
    notebook_files.match_name), or None with a message for an unknown name."""
    matched = match_name(name)
    if matched is None:
        base = name.rsplit(".", 1)[0]
        close = difflib.get_close_matches(base, list(NOTEBOOK_FILES.values()), n=1, cutoff=0.6)
        hint = f" Did you mean {close[0]}.ipynb? Rename it." if close else ""
        if close and isinstance(sub.messages, Placement):
            sub.messages.guesses.setdefault(close[0], []).append(shown)
        sub.add(
            GENERAL,
            f"{shown} is not one of the course's notebooks (they are named "
            f"{', '.join(sorted(NOTEBOOK_FILES))}), so it was not graded.{hint}",
        )
        return None
    return _Found(matched.stem, shown, exact=matched.exact, **where)


def _from_zip(path, shown, sub, unpacked):
    """Notebook files inside the zip at `path`, streamed to files of ours (`unpacked`) under
    caps; a member's own path is never used to write. The central directory is checked from the
    zip's end record (autograder/zip_directory.py) before zipfile reads any of it."""
    try:
        with open(path, "rb") as handle:
            refused = zip_directory.problem(handle, MAX_ZIP_MEMBERS)
        archive = None if refused else zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        refused = f"it could not be opened as a zip file ({printable(exc)})"
    if refused:
        sub.add(GENERAL, f"{shown} was not read: {refused}; nothing in it was graded.")
        return []
    found, total = [], 0
    with archive:
        for info in archive.infolist():
            name = info.filename
            parts = PurePosixPath(name.replace("\\", "/")).parts
            if info.is_dir() or not name.lower().endswith((".ipynb", ".zip")):
                continue
            where = f"{shown}!{printable(name)}"
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
            if total >= MAX_ZIP_BYTES:
                sub.add(
                    GENERAL,
                    f"{shown} unpacks to more than {_mb(MAX_ZIP_BYTES)}; the rest was not read.",
                )
                break
            target = unpacked.new_file()
            try:
                size = _unpack_capped(
                    archive, info, min(MAX_NOTEBOOK_BYTES, MAX_ZIP_BYTES - total), target
                )
            except (zipfile.BadZipFile, OSError, RuntimeError, ValueError, EOFError) as exc:
                sub.add(item.stem, f"{where} could not be read from the zip ({printable(exc)}).")
                continue
            if size is None:
                sub.add(
                    item.stem,
                    f"{where} is larger than {_mb(MAX_NOTEBOOK_BYTES)} unpacked (or than what is left of {_mb(MAX_ZIP_BYTES)} for the zip); it was not graded.",
                )
                total += MAX_NOTEBOOK_BYTES
                continue
            total += size
            item.path, item.unpacked, item.origin = target, True, Path(path)
            found.append(item)
    return found


def _unpack_capped(archive, info, limit, target):
    """Stream the member into `target`; its size, or None past `limit` (counted as read:
    headers can lie), the file then removed."""
    size = 0
    with archive.open(info) as member, open(target, "wb") as out:
        while chunk := member.read(1 << 20):
            size += len(chunk)
            if size > limit:
                break
            out.write(chunk)
    if size > limit:
        target.unlink()
        return None
    return size


def _mb(n):
    return f"{n / 2**20:g} MB"


def _rel(path, root):
    try:
        return str(Path(path).relative_to(root))
    except ValueError:
        return Path(path).name


def _safe(name):
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)[:80] or "student"
