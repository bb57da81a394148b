"""The course as an nbgrader course, graded by this grader.

    python -m autograder nbgrader init COURSE [--layout per-notebook|single] [--assignment NAME]
    python -m autograder nbgrader grade COURSE [--assignment A ...] [--secret S] ...

`init` makes COURSE an nbgrader course of this course: its configuration (a marked block in
COURSE/nbgrader_config.py), the solutions as nbgrader source (one assignment per notebook, named
like the notebook, or one assignment holding all six), and the student versions
(`nbgrader generate_assignment`, through nbgrader's own API).

`grade` grades nbgrader's submitted/<student>/<assignment>/ tree with `python -m autograder
grade` (student code runs in the sandbox only: no reference answers, no network) and writes each
grade cell's score, `test_<name>` = the sum of the hidden tests of <name>, into nbgrader's
gradebook through `nbgrader.api.Gradebook`, exactly where `nbgrader autograde` writes its own,
and writes what autograde leaves in autograded/<student>/<assignment>/: each notebook as
submitted (put through nbgrader's own sanitising preprocessors; its code never run here) with
our verdicts as the outputs of its grade cells (wrapping, failures in red), every markdown cell,
raw cell and output cleaned by an allow-list (nbgrader_sanitise.py: formgrader renders them
under the instructor's login), and the submission's timestamp.txt and
submission_secret.txt. formgrader then lists the submission with its per-cell scores and
"tests failed", `nbgrader export` has our partial credit, and `nbgrader generate_feedback`,
`release_feedback` and `fetch_feedback` give each student nbgrader's feedback page per notebook,
carrying our verdicts (see write_autograded for why not our own feedback page). The late
penalty is nbgrader's own (nbgrader_late.py, with the course's LateSubmissionPlugin). A
submission without a submission_secret.txt (put in submitted/ by hand) gets a fresh random one,
so that release_feedback, which needs one beside every page, works for the class. Our results
and feedback pages in COURSE/autograder_grades/ are made readable by the course folder's group
(group-writable with CourseDirectory.groupshared), never by others.

One student's bad files never stop the run: every file of a submission is read through
autograder.safe_files (no link followed, no FIFO or device opened, bounded size), each
(student, assignment) is written in its own step, and the run ends non-zero naming each student
not written and why. Student ids enter the gradebook only when gradebook_id_problem accepts them.

`nbgrader autograde` would run students' code in the instructor's environment, where
`autograder.course.model_answers` (the model answers) can be imported, and judge in the student's own
kernel; the configuration written by `init` makes it refuse (refuse_kernel_grading).
"""

import contextlib
import os
import secrets
import shutil
import stat
import sys
import sysconfig
import tempfile
import unicodedata
import warnings
from pathlib import Path

from autograder import student_ids
from autograder.curriculum import BY_STEM, NOTEBOOKS
from autograder.escaping import terminal
from autograder.safe_files import UnsafeFile, read_bytes, remove_tree, walk

SOLUTIONS = Path(__file__).resolve().parent.parent.parent / "solutions"
RELEASED = SOLUTIONS.parent / "notebooks"  # the student versions (`python -m autograder release`)

CONFIG_BEGIN = "# BEGIN attention-course: written by `python -m autograder nbgrader init`"
CONFIG_END = "# END attention-course"
CONFIG_BLOCK = f"""{CONFIG_BEGIN}
# Students' code is graded by `python -m autograder nbgrader grade`, in a sandbox, never by
# `nbgrader autograde` (which would run it here, where the model answers can be imported).
c.Autograde.autograde_preprocessors = [
    "autograder.platforms.nbgrader.refuse_kernel_grading",
]
# The student notebooks are exactly notebooks/ (`python -m autograder release`): no header.
c.IncludeHeaderFooter.header = ""
c.IncludeHeaderFooter.footer = ""
{CONFIG_END}
"""
LAYOUTS = ("per-notebook", "single")
GRADES_DIR = "autograder_grades"  # in the course: our results.json and feedback pages


def refuse_kernel_grading(nb, resources):
    """Stands in for nbgrader autograde's Execute: never runs a student's notebook here."""
    raise RuntimeError(
        "this course is not graded by `nbgrader autograde` (it would run students' code "
        "next to the model answers). Run `python -m autograder nbgrader grade .` in the "
        "course directory instead: it grades submitted/ in a sandbox and fills the gradebook."
    )


@contextlib.contextmanager
def _inside(folder):
    """nbgrader resolves its configured paths against the working directory."""
    before = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)


def assignments_for(layout, single_name="attention"):
    """{assignment: [notebook stems]} of a layout."""
    if layout == "per-notebook":
        return {nb.stem: [nb.stem] for nb in NOTEBOOKS}
    if layout == "single":
        return {single_name: [nb.stem for nb in NOTEBOOKS]}
    raise ValueError(f"layout is one of {LAYOUTS}, not {layout!r}")


def write_config(course):
    """Create or update COURSE/nbgrader_config.py with the course's block (idempotent)."""
    path = Path(course) / "nbgrader_config.py"
    text = path.read_text() if path.exists() else ""
    if not text.strip():
        text = f'c = get_config()  # noqa\nc.CourseDirectory.course_id = "{Path(course).name}"\n'
    if CONFIG_BEGIN in text:
        start = text.index(CONFIG_BEGIN)
        end = text.index(CONFIG_END, start) + len(CONFIG_END)
        text = text[:start] + CONFIG_BLOCK.rstrip("\n") + text[end:]
    else:
        text = text.rstrip("\n") + "\n\n" + CONFIG_BLOCK
    path.write_text(text)
    return path


def load_course(course):
    """(traitlets Config, nbgrader CourseDirectory) of the course at COURSE."""
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config
    from traitlets.config.loader import PyFileConfigLoader

    course = Path(course).resolve()
    config = Config()
    if (course / "nbgrader_config.py").exists():
        with _inside(course):
            config = PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
    config.CourseDirectory.root = str(course)
    return config, CourseDirectory(config=config)


def init_course(course, layout="per-notebook", single_name="attention", generate=True):
    """Write the configuration and the source assignments; generate the student versions."""
    course = Path(course).resolve()
    course.mkdir(parents=True, exist_ok=True)
    write_config(course)
    plan = assignments_for(layout, single_name)
    for assignment, stems in plan.items():
        folder = course / "source" / assignment
        folder.mkdir(parents=True, exist_ok=True)
        for stem in stems:
            shutil.copy2(SOLUTIONS / BY_STEM[stem].filename, folder / BY_STEM[stem].filename)
    if generate:
        generate_assignments(course, list(plan))
    return plan


def generate_assignments(course, assignments):
    """`nbgrader generate_assignment` for each, through nbgrader's API (one process)."""
    from nbgrader.apps import NbGraderAPI

    config, coursedir = load_course(course)
    with _inside(coursedir.root):
        api = NbGraderAPI(coursedir=coursedir, config=config)
        for assignment in assignments:
            result = api.generate_assignment(assignment, force=True, create=True)
            if not result.get("success"):
                raise RuntimeError(
                    f"nbgrader generate_assignment {assignment} failed:\n"
                    f"{result.get('error') or result.get('log')}"
                )


def course_assignments(coursedir):
    """{assignment: [notebook names]} as nbgrader's gradebook knows them."""
    from nbgrader.api import Gradebook

    with Gradebook(coursedir.db_url, coursedir.course_id) as gb:
        return {a.name: sorted(nb.name for nb in a.notebooks) for a in gb.assignments}


def grade_course(course, grading, assignments=None, progress=True):
    """Grade COURSE's submitted/ tree with our grader, fill nbgrader's gradebook and autograded/.

    grading: the run's Config (autograder/config.py). Returns (StudentResults, summary, {(student, assignment): score written}, [NotWritten]).
    """
    from autograder.grading.classrun import grade_class

    config, coursedir = load_course(course)
    known = course_assignments(coursedir)
    if not known:
        raise SystemExit(
            "error: the gradebook has no assignments: run `python -m autograder nbgrader init` "
            "(or `nbgrader generate_assignment`) first"
        )
    selected = list(assignments or sorted(known))
    unknown = [a for a in selected if a not in known]
    if unknown:
        raise SystemExit(f"error: no assignment {terminal(', '.join(unknown))} in the gradebook")
    for assignment in selected:
        foreign = [nb for nb in known[assignment] if nb not in BY_STEM]
        if foreign:
            print(
                f"warning: {assignment}: {', '.join(foreign)} are not notebooks of this course; "
                "their grade cells are left to nbgrader",
                file=sys.stderr,
            )
    submitted = Path(coursedir.root) / coursedir.submitted_directory
    if not submitted.is_dir():
        raise SystemExit(f"error: {terminal(submitted)} does not exist: nothing was collected yet")
    done, summary = grade_class(
        submitted, grading, progress=progress, layout="class", graded_groups=set(selected)
    )
    written, failed = write_gradebook(
        coursedir, config, done, selected, known, submitted, grading.max_notebook_bytes
    )
    write_gradebook_list(grading.out, written)
    share_reports(grading.out, coursedir.groupshared)  # last: every file of ours included
    return done, summary, written, failed


# -- who enters the gradebook --------------------------------------------------------------------
GRADEBOOK_ID_MARKS = "._-+@~ "  # besides letters, combining marks and digits
FORMULA_STARTS = "=+-@"


def gradebook_id_problem(student):
    """None when `student` may be a student id in nbgrader's gradebook; otherwise why not.

    The rule: student_ids' (UTF-8, visible, no control character, ...), and then only letters,
    combining marks, digits, spaces inside and `. _ - + @ ~`, not starting with `= + - @`.
    Refused, never rewritten (an id must match the roster and the student's JupyterHub name).
    Why so narrow: nbgrader takes ids as they are into places that give characters a meaning.
    `nbgrader export` writes grades.csv unquoted (a `,` or `"` forges a column or a row, a
    leading `=` `+` `-` `@` is a formula in a spreadsheet), formgrader puts ids into its pages'
    HTML and JavaScript and into links without escaping (`<` `"` `'` `&` `\\` `?` `#` `%`), and
    nbgrader's converters match file patterns built from ids (`*` `?` `[`)."""
    why = student_ids.problem(student)
    if why:
        return why
    if student[0] in FORMULA_STARTS:
        return (
            f"it starts with {student[0]!r}: `nbgrader export` writes ids unquoted, so a "
            "spreadsheet would read a formula; rename the folder to the student's id"
        )
    for ch in student:
        if unicodedata.category(ch)[0] not in "LMN" and ch not in GRADEBOOK_ID_MARKS:
            return (
                f"it holds {terminal(ch)!r}: nbgrader ids are letters, digits, spaces and "
                f"{' '.join(GRADEBOOK_ID_MARKS.strip())} (nbgrader's export, formgrader's pages "
                "and its file patterns use ids unescaped); rename the folder"
            )
    return None


# -- a student's files, read safely --------------------------------------------------------------
TIMESTAMP_BYTES = 256  # nbgrader writes "2026-03-01 12:00:00.000000 UTC"
SECRET_BYTES = 1024  # nbgrader writes 128 hex digits


class NotWritten(Exception):
    """One (student, assignment) left out of the gradebook; str() says why, for the instructor."""

    def __init__(self, student, assignment, why):
        super().__init__(why)
        self.student, self.assignment, self.why = student, assignment, why


def _small_text(submitted, parts, limit, student, assignment):
    """The text of submitted/<parts...> (a small file the student's exchange wrote), or None if
    it does not exist; NotWritten if it is a link, a FIFO, a device, too large or not UTF-8."""
    name = parts[-1]
    try:
        data = read_bytes(submitted, parts, limit, shown=name)
    except UnsafeFile as exc:
        if exc.kind == "missing":
            return None
        raise NotWritten(student, assignment, f"{terminal(exc.message)}; replace it") from None
    try:
        return data.decode("utf-8").strip()
    except UnicodeDecodeError:
        raise NotWritten(student, assignment, f"{name} is not UTF-8 text; replace it") from None


def read_timestamp(submitted, student, assignment):
    """(datetime, text) of submitted/<student>/<assignment>/timestamp.txt, (None, None) without
    one; NotWritten unless nbgrader's own parser reads it as a date (formgrader parses this file
    again on every page of the assignment: a file it cannot read would break them all)."""
    from nbgrader.utils import parse_utc

    text = _small_text(
        submitted, [student, assignment, "timestamp.txt"], TIMESTAMP_BYTES, student, assignment
    )
    if text is None:
        return None, None
    try:
        return parse_utc(text), text
    except Exception:  # noqa: BLE001 - dateutil raises ParserError, OverflowError, ...
        raise NotWritten(
            student,
            assignment,
            f"timestamp.txt holds {terminal(text[:60])!r}, not a date nbgrader can read; "
            "fix or remove it",
        ) from None


def read_secret(submitted, student, assignment):
    """submitted/<student>/<assignment>/submission_secret.txt (nbgrader pairs feedback with the
    student's submission by it), or None; NotWritten if it is not plain letters and digits."""
    text = _small_text(
        submitted,
        [student, assignment, "submission_secret.txt"],
        SECRET_BYTES,
        student,
        assignment,
    )
    if text is not None and not (text.isascii() and text.isalnum()):
        raise NotWritten(
            student, assignment, "submission_secret.txt is not letters and digits; replace it"
        )
    return text


def assignment_folder(submitted, student, assignment):
    """submitted/<student>/<assignment> if it is a real folder, None if absent; NotWritten if it
    is a link or not a folder (never followed)."""
    try:
        info = os.lstat(submitted / student / assignment)
    except FileNotFoundError:
        return None
    except OSError as exc:  # a loop of links on the way, an unreadable folder: theirs alone
        raise NotWritten(
            student,
            assignment,
            f"submitted/…/{terminal(assignment)} could not be looked at ({exc.strerror})",
        ) from None
    if stat.S_ISDIR(info.st_mode):
        return submitted / student / assignment
    what = "a symbolic link" if stat.S_ISLNK(info.st_mode) else "not a folder"
    raise NotWritten(
        student, assignment, f"submitted/…/{terminal(assignment)} is {what}; not followed"
    )


# -- autograded/: what formgrader and generate_feedback read -------------------------------------
SANITISERS = (  # nbgrader autograde's own, before it would execute (we never do)
    "ClearOutput",
    "DeduplicateIds",
    "OverwriteKernelspec",
    "OverwriteCells",  # the test cells as the source has them, whatever the student did
    "CheckCellMetadata",
    "ClearHiddenTests",  # nbgrader's hidden tests never ran: our verdicts are their output
)


FAILED_COLOUR = "#c62828"  # red, as Jupyter's own error outputs
VERDICT_BOX = "white-space:pre-wrap;overflow-wrap:anywhere;word-break:break-word;margin:0"


def _lines_output(lines):
    """An output holding `lines` (text, failed?) that wraps at any width and shows the failed
    ones in red wherever nbgrader renders it: formgrader's grading page shows a stream in black
    and neither it nor the feedback page wraps one, but both render our HTML (cleaned like the
    student's, see nbgrader_sanitise). The text/plain copy is what Jupyter and `nbgrader
    validate` read."""
    import html

    import nbformat

    shown = []
    for text, bad in lines:
        escaped = html.escape(terminal(text), quote=False)
        shown.append(f'<span style="color:{FAILED_COLOUR}">{escaped}</span>' if bad else escaped)
    data = {
        "text/plain": "\n".join(terminal(text) for text, _ in lines) + "\n",
        "text/html": f'<pre style="{VERDICT_BOX}">' + "\n".join(shown) + "</pre>",
    }
    return nbformat.v4.new_output("display_data", data)


def _verdict_output(tests, name):
    """A grade cell's output: one line per hidden test of `name`, the lines of a test that lost
    points (its ✗, message and hint) in red, and the first line too when any point was lost."""
    from autograder.course.misconceptions import CATALOGUE

    earned = sum(float(t.get("score", 0)) for t in tests)
    worth = sum(float(t.get("max_score", 0)) for t in tests)
    full = worth > 0 and earned >= worth - 1e-9
    lines = [(f"{name}: {earned:g} / {worth:g} points from the course's hidden tests", not full)]
    for t in tests:
        passed = t.get("status") == "passed"
        mark = "✓" if passed else "✗"
        test = str(t.get("name", "")).split(": ", 1)[-1]
        score = f"({float(t.get('score', 0)):g}/{float(t.get('max_score', 0)):g})"
        lines.append((f"{mark} {test} {score}", not passed))
        if not passed:
            lines += [(f"    {line}", True) for line in str(t.get("output", "")).splitlines()[:12]]
            for mid in t.get("misconceptions") or []:
                known = CATALOGUE.get(mid)
                if known is not None:
                    lines.append((f"    likely: {known.mistake}. Hint: {known.hint}", True))
    return _lines_output(lines)


def _resources(db_url, student, assignment, stem):
    """What nbgrader's preprocessors read to find a submitted notebook in the gradebook."""
    return {
        "nbgrader": {
            "db_url": db_url,
            "assignment": assignment,
            "notebook": stem,
            "student": student,
        }
    }


def _sanitise(nb, config, db_url, student, assignment, stem):
    from nbgrader import preprocessors

    resources = _resources(db_url, student, assignment, stem)
    for name in SANITISERS:
        nb, resources = getattr(preprocessors, name)(config=config).preprocess(nb, resources)
    return nb


def _sanitised_or_none(nb, config, coursedir, student, assignment, stem):
    """The student's notebook through nbgrader's sanitisers, each cell's nbgrader metadata taken
    from the released notebook by grade id (once each; none on any other cell), so a student can
    neither remove a written answer's score box by unsetting its flags nor invent a graded cell;
    None if nbgrader still refuses it."""
    import copy

    released: dict[str, dict] = {}
    for cell in _released(coursedir, assignment, BY_STEM[stem].filename).cells:
        meta = cell.get("metadata", {}).get("nbgrader")
        if isinstance(meta, dict) and meta.get("grade_id"):
            released.setdefault(meta["grade_id"], meta)
    for cell in nb.cells:
        meta = cell.get("metadata", {}).pop("nbgrader", None)
        grade_id = meta.get("grade_id") if isinstance(meta, dict) else None
        if isinstance(grade_id, str) and grade_id in released:
            cell.metadata["nbgrader"] = copy.deepcopy(released.pop(grade_id))
    try:
        return _sanitise(nb, config, coursedir.db_url, student, assignment, stem)
    except Exception:  # noqa: BLE001 - nbgrader raises many kinds on bad metadata
        return None


def _released(coursedir, assignment, filename):
    import nbformat

    for candidate in (
        Path(coursedir.root) / coursedir.release_directory / assignment / filename,
        RELEASED / filename,
    ):
        if candidate.is_file() and not candidate.is_symlink():
            return nbformat.read(candidate, as_version=4)
    raise FileNotFoundError(f"no released {filename}")


def autograded_notebook(coursedir, config, student, assignment, stem, payload, folder, limit):
    """The notebook formgrader shows: the student's (read as the grader reads it: bounded, no
    link, outputs dropped), sanitised by nbgrader's preprocessors, with our verdicts as each
    grade cell's output, the errors its cells raised while graded, and a first cell saying how it
    was graded. A notebook that cannot be read or sanitised is shown as released, and says so.
    Last, everything in it that formgrader and the feedback page render as HTML is cleaned
    (nbgrader_sanitise): no student's script reaches the instructor's browser."""
    import nbformat

    from autograder.notebook_files import load_notebook, locate
    from autograder.platforms.nbgrader_sanitise import sanitise_notebook

    filename = BY_STEM[stem].filename
    info = (payload.get("notebooks") or {}).get(stem, {})
    nb, shown_as_released = None, False
    if folder is not None:
        # the file graded as this notebook: its own name, or the one near name (notebook_files)
        found = locate(folder, filename) or filename
        nb, _message = load_notebook(folder, found, limit, nbgrader_metadata=True)
    if nb is not None:
        nb = _sanitised_or_none(nb, config, coursedir, student, assignment, stem)
    if nb is None:
        nb, shown_as_released = _released(coursedir, assignment, filename), True
        nb = _sanitise(nb, config, coursedir.db_url, student, assignment, stem)
    else:
        for err in info.get("cell_errors") or []:
            index = err.get("cell")
            if isinstance(index, int) and 0 <= index < len(nb.cells):
                cell = nb.cells[index]
                if cell.cell_type == "code":
                    text = f"While graded, this cell raised {err.get('type')}: {err.get('message')}"
                    cell.outputs.append(_lines_output([(text, True)]))
    tests = [t for t in payload.get("tests", []) if t.get("notebook") == stem]
    for cell in nb.cells:
        grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", "")
        name = grade_id.removeprefix("test_")
        if (
            cell.cell_type == "code"
            and grade_id.startswith("test_")
            and name in BY_STEM[stem].graded
        ):
            cell.outputs = [_verdict_output([t for t in tests if t.get("function") == name], name)]
    about = (
        f"**Graded by the course's autograder**: {float(info.get('score', 0)):g} / "
        f"{float(info.get('max_score', 0)):g} points in this notebook. The hidden tests ran on "
        "your code in a sandbox; each test cell below shows its verdicts, in red where points "
        "were lost."
    )
    if shown_as_released:
        about += (
            " Your notebook could not be shown here (the test cells say why), so this is the "
            "notebook as it was handed out."
        )
    summary = nbformat.v4.new_markdown_cell(about)
    if nb.get("nbformat_minor", 0) < 5:
        summary.pop("id", None)
    nb.cells.insert(0, summary)
    return sanitise_notebook(nb)


def _file_modes(groupshared):
    """(file mode, folder mode) of what nbgrader autograde writes: read-only for everyone, or
    group-writable in a group-shared course (CourseDirectory.groupshared)."""
    return (0o664, 0o2770) if groupshared else (0o444, 0o755)


def write_autograded(target, notebooks, timestamp_text, secret, groupshared):
    """autograded/<student>/<assignment>/ in one step: written beside it, then swapped in.

    Why nbgrader's own feedback and not our feedback page: `release_feedback` releases one HTML
    file per notebook, named after it and paired with the student's submission_secret.txt, and
    `fetch_feedback` fetches only pages named after the notebooks the student submitted; a page
    for the whole student has no slot, and formgrader's "generate feedback" button would write
    over any page put there. Generated from these notebooks, nbgrader's page per notebook shows
    the student's code, every grade cell's score and our verdicts with their hints; our page
    stays in COURSE/autograder_grades/ for the instructor."""
    import nbformat

    file_mode, dir_mode = _file_modes(groupshared)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.partial-", dir=target.parent))
    try:
        for stem, nb in notebooks.items():
            nbformat.write(nb, staging / BY_STEM[stem].filename)
        if timestamp_text is not None:
            (staging / "timestamp.txt").write_text(timestamp_text)
        (staging / "submission_secret.txt").write_text(secret)
        for child in staging.iterdir():
            os.chmod(child, file_mode)
        os.chmod(staging, dir_mode)
    except BaseException:
        remove_tree(staging)
        raise
    return staging


def _swap_in(staging, target):
    old = None
    if os.path.lexists(target):
        old = Path(tempfile.mkdtemp(prefix=f".{target.name}.old-", dir=target.parent))
        os.rename(target, old / "x")
    os.rename(staging, target)
    if old is not None:
        remove_tree(old)


def share_reports(out, groupshared):
    """Our results and feedback pages in COURSE/autograder_grades/ readable by the course's
    group (TAs grading in formgrader), group-writable too in a group-shared course; never by
    others. Links are not followed."""
    file_mode, dir_mode = (0o660, 0o2770) if groupshared else (0o640, 0o750)
    out = Path(out)
    with contextlib.suppress(OSError):
        os.chmod(out, dir_mode)
    for parts, name, info in walk(out, max_depth=4):
        if name is None:
            continue
        mode = dir_mode if stat.S_ISDIR(info.st_mode) else file_mode
        if stat.S_ISDIR(info.st_mode) or stat.S_ISREG(info.st_mode):
            with contextlib.suppress(OSError):
                os.chmod(out.joinpath(*parts, name), mode)


# -- the gradebook -------------------------------------------------------------------------------
def write_gradebook(coursedir, config, done, selected, known, submitted, limit):
    """Each (student, assignment) submitted, in its own step: autograded/ and the gradebook.

    Returns ({(student, assignment): score}, [NotWritten]): one student's bad files, refused id
    or grading failure is theirs alone."""
    from nbgrader.api import Gradebook
    from sqlalchemy.exc import SAWarning

    written, failed = {}, []
    with Gradebook(coursedir.db_url, coursedir.course_id) as gb, warnings.catch_warnings():
        # nbgrader's add_submission makes SQLAlchemy warn about its own autoflush (harmless)
        warnings.simplefilter("ignore", SAWarning)
        for result in done:
            student = result.student
            if result.refused:
                failed.append(NotWritten(student, "", result.refused))
                continue
            if result.error or not result.results:
                failed.append(NotWritten(student, "", "the grader failed on this submission"))
                continue
            why = gradebook_id_problem(student)
            if why:
                failed.append(NotWritten(student, "", f"not written to the gradebook: {why}"))
                continue
            for assignment in selected:
                try:
                    folder = assignment_folder(submitted, student, assignment)
                    if folder is None:
                        continue  # nothing submitted for it: nbgrader shows no submission
                    written[(student, assignment)] = _write_submission(
                        gb,
                        coursedir,
                        config,
                        result.results,
                        student,
                        assignment,
                        known,
                        submitted,
                        folder,
                        limit,
                    )
                except NotWritten as exc:
                    failed.append(exc)
                except Exception as exc:  # noqa: BLE001 - this student's, never the class's
                    gb.db.rollback()
                    failed.append(
                        NotWritten(
                            student,
                            assignment,
                            f"could not be written ({type(exc).__name__}: "
                            f"{terminal(str(exc))[:300]})",
                        )
                    )
    return written, failed


def _write_submission(
    gb, coursedir, config, payload, student, assignment, known, submitted, folder, limit
):
    """autograded/<student>/<assignment>/ and the gradebook's grades of one submission; every
    step that reads the student's files comes before the first write. The late penalty is
    nbgrader's own rule (autograder/platforms/nbgrader_late.py)."""
    from autograder.platforms.nbgrader_late import assign_late_penalties

    timestamp, timestamp_text = read_timestamp(submitted, student, assignment)
    secret = read_secret(submitted, student, assignment) or secrets.token_hex(64)
    ours = [nb for nb in known[assignment] if nb in BY_STEM]
    notebooks = {
        stem: autograded_notebook(
            coursedir, config, student, assignment, stem, payload, folder, limit
        )
        for stem in ours
    }
    per_name: dict[tuple, float] = {}
    for test in payload.get("tests", []):
        key = (test.get("notebook"), test.get("function"))
        per_name[key] = per_name.get(key, 0.0) + float(test.get("score", 0.0))

    target = Path(coursedir.format_path(coursedir.autograded_directory, student, assignment))
    staging = write_autograded(target, notebooks, timestamp_text, secret, coursedir.groupshared)
    try:
        gb.update_or_create_student(student)
        submission = gb.update_or_create_submission(assignment, student)
        submission.timestamp = timestamp
        total = 0.0
        for stem in ours:
            submitted_nb = gb.find_submission_notebook(stem, assignment, student)
            for grade in submitted_nb.grades:
                name = grade.name.removeprefix("test_")
                if name not in BY_STEM[stem].graded:
                    continue  # not a cell of ours: left to nbgrader's manual grading
                score = per_name.get((stem, name), 0.0)
                grade.auto_score = round(min(max(score, 0.0), grade.max_score), 4)
                grade.needs_manual_grade = False
                total += grade.auto_score
        late = assign_late_penalties(gb, config, assignment, student, ours)
        gb.db.commit()
    except BaseException:
        gb.db.rollback()
        remove_tree(staging)
        raise
    _swap_in(staging, target)
    return round(total - sum(late.values()), 4)


GRADEBOOK_LIST = "gradebook.csv"  # in OUT: what this run wrote into the gradebook


def write_gradebook_list(out, written):
    """OUT/gradebook.csv: one row per (student, assignment) this run wrote into the gradebook,
    with the score written (late penalty taken), in place of a line each on the terminal (a
    class of 200 with seven notebooks is 1,400 lines). Ids go through escaping.csv_row, the
    one way student text enters a CSV. Returns its path."""
    from autograder.escaping import csv_row

    lines = [csv_row(["student", "assignment", "score"])]
    lines += [csv_row([s, a, score]) for (s, a), score in sorted(written.items())]
    path = Path(out) / GRADEBOOK_LIST
    partial = path.with_name(f".{GRADEBOOK_LIST}.tmp")
    partial.write_text("\n".join(lines) + "\n", encoding="utf-8")
    partial.replace(path)
    return path


# -- the command line ----------------------------------------------------------------------------
def add_arguments(commands, grade_options):
    """`nbgrader init` and `nbgrader grade` under `python -m autograder`."""
    parser = commands.add_parser("nbgrader", help="set up and grade an nbgrader course")
    sub = parser.add_subparsers(dest="nbgrader_command", required=True)
    init = sub.add_parser("init", help="configure COURSE and generate its assignments")
    init.add_argument("course", help="the nbgrader course directory (made if missing)")
    init.add_argument(
        "--layout",
        choices=LAYOUTS,
        default="per-notebook",
        help="one assignment per notebook (default), or one assignment holding all six",
    )
    init.add_argument("--assignment", default="attention", help="name of the single assignment")
    init.add_argument(
        "--no-generate", action="store_true", help="skip nbgrader generate_assignment"
    )
    grade = sub.add_parser("grade", help="grade submitted/ in the sandbox, fill the gradebook")
    grade.add_argument("course", help="the nbgrader course directory")
    grade.add_argument(
        "--assignment",
        action="append",
        help="grade only this assignment (repeatable; default: every assignment)",
    )
    grade.add_argument(
        "--out", help=f"where our results go (default: COURSE/{GRADES_DIR}/<assignments>)"
    )
    grade_options(grade)


@contextlib.contextmanager
def scripts_first():
    """This interpreter's scripts folder first on PATH: nbgrader's Gradebook runs `alembic` from
    PATH, which holds the venv's only when the venv is activated."""
    scripts = sysconfig.get_path("scripts")
    # not a setting: PATH handed on to nbgrader's child (alembic), put back after
    before = os.environ.get("PATH")
    os.environ["PATH"] = os.pathsep.join([scripts, *(before or os.defpath).split(os.pathsep)])
    try:
        yield
    finally:  # PATH put back as it was
        os.environ.pop("PATH", None)
        if before is not None:
            os.environ["PATH"] = before


def run(args):
    with scripts_first():
        if args.nbgrader_command == "init":
            return run_init(args)
        return run_grade(args)


def run_init(args):
    plan = init_course(args.course, args.layout, args.assignment, generate=not args.no_generate)
    for assignment, stems in plan.items():
        print(f"{assignment}: {', '.join(stems)}")
    print(f"nbgrader course ready in {terminal(Path(args.course).resolve())}")
    return 0


def run_grade(args):
    from autograder.config import config_from_args

    if args.deadlines or args.handed_in:
        raise SystemExit(
            "error: in an nbgrader course the due dates and the late penalty are nbgrader's own "
            "(the assignment's duedate, c.AssignLatePenalties.plugin_class; see "
            "autograder/platforms/nbgrader_late.py): `nbgrader grade` applies them as "
            "`nbgrader autograde` would. --deadlines and --handed-in are for `grade`."
        )
    course = Path(args.course).resolve()
    label = "+".join(sorted(args.assignment)) if args.assignment else "all"
    args.out = args.out or str(course / GRADES_DIR / label)
    config = config_from_args(args)
    done, summary, written, failed = grade_course(
        course, config, args.assignment, progress=not args.quiet
    )
    print(summary["text"])
    writes = Path(config.out) / GRADEBOOK_LIST  # grade_course wrote it
    for r in done:
        if r.error:
            shown = "\n".join(terminal(line) for line in r.error.splitlines())
            print(f"INTERNAL ERROR grading {terminal(r.student)}:\n{shown}", file=sys.stderr)
    for line in summary.get("skipped_entries", []):  # not a student's folder: named, skipped
        print(f"skipped entry {terminal(line)}", file=sys.stderr)
    for miss in failed:  # terminal() leaves text it already escaped as it is
        where = f" {terminal(miss.assignment)}" if miss.assignment else ""
        print(
            f"NOT IN THE GRADEBOOK {terminal(miss.student)}{where}: {terminal(miss.why)}",
            file=sys.stderr,
        )
    print(
        f"wrote {len(written)} submission(s) into the gradebook and autograded/ (each one's "
        f"score in {terminal(writes)}); our results and feedback pages in "
        f"{terminal(config.out)}"
    )
    if failed:
        names = sorted({terminal(m.student) for m in failed})
        print(
            f"error: {len(names)} student(s) not (fully) written to the gradebook: "
            f"{', '.join(names)}",
            file=sys.stderr,
        )
        return 1
    return 0
