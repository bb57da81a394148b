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
gradebook through `nbgrader.api.Gradebook`, exactly where `nbgrader autograde` writes its own.
formgrader and `nbgrader export` then show our partial-credit verdicts.

`nbgrader autograde` would run students' code in the instructor's environment, where
`autograder.reference` (the model answers) can be imported, and judge in the student's own
kernel; the configuration written by `init` makes it refuse (refuse_kernel_grading).
"""

import contextlib
import os
import shutil
import sys
from pathlib import Path

from autograder.curriculum import BY_STEM, NOTEBOOKS

SOLUTIONS = Path(__file__).resolve().parent.parent.parent / "solutions"

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


def grade_course(course, settings, assignments=None, progress=True):
    """Grade COURSE's submitted/ tree with our grader and fill nbgrader's gradebook.

    Returns (StudentResults, {(student, assignment): score written}).
    """
    from autograder.grade import grade_class

    _config, coursedir = load_course(course)
    known = course_assignments(coursedir)
    if not known:
        raise SystemExit(
            "error: the gradebook has no assignments: run `python -m autograder nbgrader init` "
            "(or `nbgrader generate_assignment`) first"
        )
    selected = list(assignments or sorted(known))
    unknown = [a for a in selected if a not in known]
    if unknown:
        raise SystemExit(f"error: no assignment {', '.join(unknown)} in the gradebook")
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
        raise SystemExit(f"error: {submitted} does not exist: nothing was collected yet")
    done, summary = grade_class(
        submitted, settings, progress=progress, layout="class", graded_groups=set(selected)
    )
    written = write_gradebook(coursedir, done, selected, known, submitted)
    return done, summary, written


def write_gradebook(coursedir, done, selected, known, submitted):
    """Each grade cell test_<name> of each submitted notebook gets our score for <name>."""
    from nbgrader.api import Gradebook

    from autograder.platforms.nbgrader_late import assign_late_penalties

    written = {}
    with Gradebook(coursedir.db_url, coursedir.course_id) as gb:
        for result in done:
            if result.error or not result.results:
                continue  # an internal error of the grader: reported, nothing written
            per_name = {}
            for test in result.results.get("tests", []):
                key = (test.get("notebook"), test.get("function"))
                per_name[key] = per_name.get(key, 0.0) + float(test.get("score", 0.0))
            for assignment in selected:
                folder = submitted / result.student / assignment
                if not folder.is_dir() or folder.is_symlink():
                    continue  # nothing submitted for it: nbgrader shows no submission
                gb.update_or_create_student(result.student)
                timestamp = coursedir.get_existing_timestamp(str(folder))
                extra = {"timestamp": timestamp} if timestamp else {}
                gb.update_or_create_submission(assignment, result.student, **extra)
                total = 0.0
                for notebook in known[assignment]:
                    if notebook not in BY_STEM:
                        continue
                    submitted_nb = gb.find_submission_notebook(notebook, assignment, result.student)
                    for grade in submitted_nb.grades:
                        name = grade.name.removeprefix("test_")
                        if name not in BY_STEM[notebook].graded:
                            continue  # not a cell of ours: left to nbgrader's manual grading
                        score = per_name.get((notebook, name), 0.0)
                        grade.auto_score = round(min(max(score, 0.0), grade.max_score), 4)
                        grade.needs_manual_grade = False
                        total += grade.auto_score
                ours = [name for name in known[assignment] if name in BY_STEM]
                late = assign_late_penalties(gb, coursedir.config, assignment, result.student, ours)
                gb.db.commit()
                written[(result.student, assignment)] = round(total - sum(late.values()), 4)
    return written


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


def run(args):
    if args.nbgrader_command == "init":
        plan = init_course(args.course, args.layout, args.assignment, generate=not args.no_generate)
        for assignment, stems in plan.items():
            print(f"{assignment}: {', '.join(stems)}")
        print(f"nbgrader course ready in {Path(args.course).resolve()}")
        return 0
    from autograder.grade import settings_from_args

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
    settings = settings_from_args(args)
    done, summary, written = grade_course(
        course, settings, args.assignment, progress=not args.quiet
    )
    print(summary["text"])
    for (student, assignment), score in sorted(written.items()):
        print(f"gradebook: {student} {assignment} {score:g}")
    failed = [r for r in done if r.error]
    for r in failed:
        print(f"INTERNAL ERROR grading {r.student}:\n{r.error}", file=sys.stderr)
    print(f"wrote {len(written)} submission(s) into the gradebook; results in {settings.out}")
    return 1 if failed else 0
