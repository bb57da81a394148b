"""What grading hands the sandbox about this course (the sandbox itself knows no course).

    sandbox = Sandbox(limits, course=course_files())
    job = NotebookJob(..., skip=demo_cells.skip_plan(prepared_notebook, stem))   # plan.py

- modules: a silent `autograder/checks.py` (the notebooks' visible checks are no-ops while a
  notebook is graded; the sandbox has no reference and no hidden tests to run them with);
- packages: the course's `coursedata` (the small data and the loaders the notebooks import);
- data: the files coursedata's loaders look for outside it (tiny Shakespeare), if present.

Each notebook's skip plan (which released demonstration cells may be left out:
autograder/demo_cells.py) travels in its NotebookJob, made by plan.py.
"""

from pathlib import Path

from autograder.sandbox import CourseFiles

STUB_CHECKS = '''"""Visible checks are silent no-ops while a notebook is being graded."""


def check(function, obj=None, **namespace):
    return None


def assert_passes(function, obj=None, seed=None, **namespace):
    return None


def run_in_process(*args, **kwargs):
    return []
'''
DATA_PATHS = ("SHAKESPEARE_PATH", "shakespeare_path", "tiny_shakespeare_path")  # coursedata's


def course_files() -> CourseFiles:
    """This course's CourseFiles."""
    folder = coursedata_dir()
    return CourseFiles(
        modules=(("autograder/checks.py", STUB_CHECKS),),
        packages=(("coursedata", folder),) if folder is not None else (),
        data=tuple(extra_data()),
    )


def coursedata_dir() -> Path | None:
    try:
        import coursedata
    except ImportError:
        return None
    return Path(coursedata.__file__).resolve().parent


def extra_data() -> list[Path]:
    """Read-only data files the course loaders look for (e.g. tiny Shakespeare), if any."""
    found: list[Path] = []
    try:
        import coursedata
    except ImportError:
        return found
    for attr in DATA_PATHS:
        value = getattr(coursedata, attr, None)
        try:
            path = Path(value() if callable(value) else value) if value else None
        except Exception:  # noqa: BLE001 - a loader that cannot find its file: nothing to expose
            path = None
        if path and path.exists():
            found.append(path.resolve())
    return found
