"""The course as a Gradescope autograder.

    python -m autograder gradescope --out autograder.zip [--secret S] [--test-visibility V] ...

builds the zip Gradescope asks for: `setup.sh` (runs once, at image build: Python 3.11, the
pinned dependencies, bubblewrap, an unprivileged user `student`), `run_autograder` (runs per
submission) and, readable by root only once installed, the course package (`lib/`), the secret
and the settings.

Per submission, `python -m autograder.platforms.gradescope ROOT` (ROOT = /autograder):
1. locks down what student code must not read: ROOT/source (model answers, hidden tests,
   secret), ROOT/results and the submission metadata (chmod go-rwx);
2. reads the student id from ROOT/submission_metadata.json (users[0].email, else .id) and seeds
   the hidden inputs with it and the course secret, exactly as `python -m autograder grade`
   does for a folder named like that id;
3. grades ROOT/submission (any layout of autograder.submissions: loose notebooks, sub-folders,
   a zip) in the sandbox: bubblewrap where the container lets it create namespaces, otherwise
   the same driver run as the unprivileged user (`setuid` in the child, like `setpriv`) with the
   rlimits and timeouts, which cannot read ROOT/source, the secret or ROOT/results;
4. writes ROOT/results/results.json in Gradescope's schema: one test per hidden test, top-level
   score, and the visibility settings chosen when the zip was built.
"""

import html
import importlib.metadata
import json
import os
import secrets
import shutil
import stat
import sys
import tempfile
import time
import traceback
import zipfile
from collections.abc import Collection, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from autograder import demo_cells
from autograder.config import DEFAULT_MEMORY_GB, Config, config_from_args, given_secret
from autograder.escaping import terminal
from autograder.grading import selftest
from autograder.grading.sandboxes import open_sandbox
from autograder.sandbox import Sandbox
from autograder.sandbox.student_user import STUDENT_USER, StudentUserSandbox

HERE = Path(__file__).resolve().parent
TEMPLATES = HERE / "templates"
PACKAGE = HERE.parent  # autograder/
VENV = "/opt/attention-course-venv"
VISIBILITIES = ("hidden", "after_due_date", "after_published", "visible")
DEFAULTS = {
    "visibility": "visible",  # the whole result (score, output) once graded
    "test_visibility": "after_due_date",  # each hidden test's verdict and message
    "stdout_visibility": "hidden",  # run_autograder's own log: for instructors
    "timeout": None,  # None: the budgets setup.sh's self-test measures (Limits.derive)
    "memory_gb": DEFAULT_MEMORY_GB,
}


# -- building the zip ----------------------------------------------------------------------------
def pinned_requirements() -> list[str]:
    """The course's pinned runtime dependencies, as installed (they mirror pyproject.toml)."""
    pins = []
    for requirement in importlib.metadata.requires("attention-course") or []:
        if ";" in requirement:  # an extra (dev): not needed to grade
            continue
        pins.append(requirement.replace(" ", ""))
    return pins


def supported_pythons() -> tuple[tuple[int, int], tuple[int, int]]:
    """((3, 11), (3, 13)): the oldest and newest Python the course supports, from its metadata's
    Requires-Python (">=3.11,<3.14")."""
    from packaging.specifiers import SpecifierSet

    spec = SpecifierSet(importlib.metadata.metadata("attention-course")["Requires-Python"])
    minors = [(3, minor) for minor in range(8, 30) if spec.contains(f"3.{minor}.0")]
    if not minors:
        raise RuntimeError(f"Requires-Python {spec} allows no Python 3")
    return minors[0], minors[-1]


def render(template: str, **values: Any) -> str:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined,
        autoescape=False,
    )
    return env.get_template(template).render(**values)


def build_zip(out: Path | str, secret: str | None = None, **settings: Any) -> str:
    """Write the autograder zip at `out`; returns the secret stored in it."""
    secret = secret or secrets.token_urlsafe(32)
    chosen = {**DEFAULTS, **{k: v for k, v in settings.items() if v is not None}}
    for key in ("visibility", "test_visibility", "stdout_visibility"):
        if chosen[key] not in VISIBILITIES:
            raise ValueError(f"{key} is one of {VISIBILITIES}, not {chosen[key]!r}")
    pins = pinned_requirements()
    torch = [p for p in pins if p.startswith("torch==")]
    if len(torch) != 1:
        raise RuntimeError(f"expected one pinned torch in the course's requirements, got {torch}")
    others = [p for p in pins if not p.startswith("torch==")]
    version = importlib.metadata.version("attention-course")
    oldest, newest = supported_pythons()
    files = {
        "setup.sh": render(
            "setup.sh.j2",
            venv=VENV,
            torch=torch[0],
            student_user=STUDENT_USER,
            version=version,
            python_min="{}.{}".format(*oldest),
            python_max="{}.{}".format(*newest),
            python_min_tuple=repr(oldest),
            python_max_tuple=repr(newest),
            selftest_options=" ".join(selftest_options(chosen)),
        ),
        "run_autograder": render("run_autograder.j2", venv=VENV),
        "requirements.txt": "\n".join(others) + "\n",
        "settings.json": json.dumps(chosen, indent=1) + "\n",
        "secret": secret + "\n",
    }
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, text in files.items():
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            mode = 0o755 if name in ("setup.sh", "run_autograder") else 0o600
            info.external_attr = (stat.S_IFREG | mode) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, text)
        for package, folder in (("autograder", PACKAGE), ("coursedata", _coursedata_dir())):
            for path in sorted(folder.rglob("*")):
                if "__pycache__" in path.parts or not path.is_file() or path.is_symlink():
                    continue
                if path.suffix in (".pyc", ".pyo"):
                    continue
                archive.write(path, f"lib/{package}/{path.relative_to(folder)}")
        # the released notebooks, where demo_cells looks for them (beside the package): their
        # demonstration cells are skipped when a submission kept them unchanged, as standalone
        for path in _released_notebooks():
            archive.write(path, f"lib/{demo_cells.RELEASED.name}/{path.name}")
        for path, name in selftest.shipped_files():  # setup.sh's self-test grades them
            if f"lib/{name}" not in archive.namelist():
                archive.write(path, f"lib/{name}")
    return secret


def _released_notebooks() -> list[Path]:
    from autograder.curriculum import NOTEBOOKS

    paths = [demo_cells.RELEASED / nb.filename for nb in NOTEBOOKS]
    missing = [p.name for p in paths if not p.is_file()]
    if missing:
        raise RuntimeError(
            f"the released notebooks are missing from {demo_cells.RELEASED} ({', '.join(missing)}):"
            " run `python -m autograder release` first"
        )
    return paths


def _coursedata_dir() -> Path:
    import coursedata

    return Path(coursedata.__file__).resolve().parent


# -- grading one submission ----------------------------------------------------------------------
def student_id(metadata: Any) -> str:
    """users[0].email or .id from Gradescope's submission_metadata.json, the first that is a
    valid student id (autograder.student_ids); 'student' if neither is."""
    from autograder import student_ids

    users = (metadata.get("users") or []) if isinstance(metadata, dict) else []
    first = users[0] if users and isinstance(users[0], dict) else {}
    for key in ("email", "id"):
        value = first.get(key)
        if value not in (None, "") and student_ids.problem(str(value)) is None:
            return str(value)
    return "student"


# -- results.json ---------------------------------------------------------------------------------
# Gradescope renders `output` as HTML ("simple_format") unless told otherwise. Every output we
# write is declared HTML and IS escaped HTML: the text, every character escaped (html.escape),
# in a <pre>, so student text shows exactly as written and can never become markup, whatever
# the page does with a "text" field, and results.json holds no markup of the student's. Test
# names (the grader's own) are declared plain text. Student-derived text (exception messages,
# file names, lines of their code) is also kept to one physical line each and set apart by
# QUOTE, which no line of the grader's own starts with: a message holding newlines cannot print
# a score line or a heading among ours.
OUTPUT_FORMAT = "html"
NAME_FORMAT = "text"
QUOTE = "  > "
MAX_QUOTED = 600  # characters of one student-derived line (the sandbox already cuts at 500)


def plain_line(text: Any, limit: int = MAX_QUOTED) -> str:
    """`text` as one line of plain text: line breaks, control and invisible characters
    (bidirectional overrides, zero-width ...) shown escaped, at most `limit` characters."""
    line = terminal(text)  # the terminal's rule (escaping.py): it leaves no line break either
    return line if len(line) <= limit else line[: limit - 4] + " ..."


def quoted(text: Any) -> str:
    """A student-derived line framed for the top-level output."""
    return QUOTE + plain_line(text)


def as_html(text: str) -> str:
    """Text for an output declared OUTPUT_FORMAT: escaped, in a <pre> (line breaks kept)."""
    return f"<pre>{html.escape(text, quote=True)}</pre>"


def _failing_functions(stem: str, tests: list[dict[str, Any]]) -> list[str]:
    """The graded names of notebook `stem` with a failed test, in the order it teaches them."""
    from autograder.curriculum import BY_STEM

    failing = {t.get("function") for t in tests if t.get("status") != "passed"}
    return [name for name in BY_STEM[stem].graded if name in failing]


def notebook_summary(payload: dict[str, Any], missing: Collection[str] = ()) -> list[str]:
    """The grader's own lines: one per notebook with its score and what to do next (complete,
    not submitted, not started, not graded, or which functions fail), never a test's message.
    Gradescope shows these even while the tests themselves are hidden (before the due date)."""
    from autograder.curriculum import BY_STEM, NOTEBOOKS
    from autograder.report.feedback import notebook_state
    from autograder.results import (
        CORRUPT,
        DEPENDENCY_MISSING,
        MISNAMED,
        NOT_RUN,
        PASSED,
        reason_of,
    )

    by_notebook: dict[Any, list[dict[str, Any]]] = {}
    for test in payload.get("tests", []):
        by_notebook.setdefault(test.get("notebook"), []).append(test)
    lines = []
    for nb in NOTEBOOKS:
        tests = by_notebook.get(nb.stem, [])
        info = payload.get("notebooks", {}).get(nb.stem, {})
        if not tests and not info:
            continue
        score = info.get("score", sum(t.get("score", 0) for t in tests))
        max_score = info.get("max_score", sum(t.get("max_score", 0) for t in tests))
        state, _ = notebook_state(tests) if tests else ("in-progress", "")
        reasons = {reason_of(t) for t in tests}
        waits_for = sorted(
            set(BY_STEM)
            & {t.get("depends_on") for t in tests if reason_of(t) == DEPENDENCY_MISSING}
        )
        if tests and reasons == {MISNAMED}:
            what = misnamed_line(nb.filename, info.get("candidates") or [])
        elif tests and reasons <= {CORRUPT, NOT_RUN}:
            what = "not graded: the file is not a readable notebook (see the messages below)"
        elif nb.stem in missing:
            what = "not submitted"
        elif waits_for and not (reasons - {DEPENDENCY_MISSING, PASSED}):
            what = "waits for your " + ", ".join(
                f"notebook {stem[:2]} ({BY_STEM[stem].filename}), which could not be used"
                for stem in waits_for
            )
        elif not info.get("ran", True):
            what = "not graded: the notebook could not be run (see the messages below)"
        elif state == "complete":
            what = "all tests pass"
        elif state == "not-started":
            what = "not started (its functions still raise NotImplementedError)"
        else:
            failing = _failing_functions(nb.stem, tests)
            what = "functions to fix: " + ", ".join(failing) if failing else "some tests fail"
        lines.append(f"{nb.stem}: {score:g} / {max_score:g} - {what}")
    return lines


def misnamed_line(filename: str, candidates: Sequence[Any]) -> str:
    """What a misnamed notebook's line says: one candidate is named, never called "several"."""
    if len(candidates) == 1:
        return (
            f"not graded: {plain_line(str(candidates[0]), 80)} looks like {filename}; rename it "
            f"{filename} (see the messages below)"
        )
    return (
        f"not graded: {len(candidates) or 'several'} of your files could each be {filename}; "
        "keep one, named exactly so (see the messages below)"
    )


def student_messages(payload: dict[str, Any]) -> list[str]:
    """What the grader has to say about the student's own files and cells, each message one
    quoted line (it carries their file names, code and exception messages)."""
    lines = [quoted(m) for m in payload.get("submission_messages", [])]
    for stem, info in payload.get("notebooks", {}).items():
        for text in info.get("messages", []):
            lines.append(quoted(f"{stem}: {text}"))
        for err in info.get("cell_errors", []):
            where = f" (`{err.get('line')}`)" if err.get("line") else ""
            lines.append(
                quoted(
                    f"{stem}: cell {int(err.get('cell', 0)) + 1}{where} raised "
                    f"{err.get('type')}: {err.get('message')}"
                )
            )
    return lines


def gradescope_results(
    payload: dict[str, Any], settings: dict[str, Any], missing: Collection[str] = ()
) -> dict[str, Any]:
    """Gradescope's results.json from our results payload (grade.build_results); `missing`:
    the notebooks (stems) the submission did not contain."""
    tests = []
    for test in payload.get("tests", []):
        score, max_score = float(test["score"]), float(test["max_score"])
        entry = {
            "name": plain_line(
                f"{test.get('notebook', '')}: {test.get('name', test.get('function', ''))}"
            ),
            "name_format": NAME_FORMAT,
            "score": score,
            "max_score": max_score,
            "status": "passed" if score >= max_score else "failed",
            # the judges' sentence, which may quote the student's exception: one plain line
            "output": as_html(plain_line(test.get("output", ""), limit=4000)),
            "output_format": OUTPUT_FORMAT,
            "visibility": settings["test_visibility"],
            "extra_data": {
                "notebook": test.get("notebook"),
                "function": test.get("function"),
                "misconceptions": test.get("misconceptions", []),
            },
        }
        if test.get("misconceptions"):
            entry["tags"] = list(test["misconceptions"])
        tests.append(entry)
    lines = notebook_summary(payload, missing)
    quoted_lines = student_messages(payload)
    if quoted_lines:
        lines += ["", "Messages about your files and cells (quoted as plain text):", *quoted_lines]
    if settings["test_visibility"] != "visible":
        lines += [
            "",
            "Each test's verdict and message is shown "
            + {
                "after_due_date": "after the due date.",
                "after_published": "once your instructor publishes the grades.",
                "hidden": "to your instructor only.",
            }[settings["test_visibility"]],
        ]
    return {
        "score": float(payload.get("score", 0.0)),
        "execution_time": payload.get("execution_time", 0),
        "output": as_html("\n".join(lines)),
        "output_format": OUTPUT_FORMAT,
        "test_output_format": OUTPUT_FORMAT,
        "test_name_format": NAME_FORMAT,
        "visibility": settings["visibility"],
        "stdout_visibility": settings["stdout_visibility"],
        "extra_data": {"student": payload.get("student"), "max_score": payload.get("max_score")},
        "tests": tests,
    }


def lock_down(root: Path) -> None:
    """What the student's code must never read: root only."""
    for path in (root / "source", root / "results"):
        if path.exists():
            os.chmod(path, 0o700)
    metadata = root / "submission_metadata.json"
    if metadata.exists() and not metadata.is_symlink():
        os.chmod(metadata, 0o600)


def selftest_options(config: dict[str, Any]) -> list[str]:
    """The options of setup.sh's `selftest --platform gradescope`: the limits run_autograder
    grades under (grading_config), so that both share one self-test record."""
    options = ["--memory", f"{float(config['memory_gb']):g}"]
    if config.get("timeout") is not None:
        options += ["--timeout", f"{float(config['timeout']):g}"]
    return options


def grading_config(settings: dict[str, Any], secret: str, out: Path, environ: Any = None) -> Config:
    """run_autograder's Config, made by the door every command uses (config_from_args) from the
    zip's settings.json and secret: --timeout when the zip gives one (else the budgets setup.sh's
    self-test measured), its --memory, the sandbox mode of AUTOGRADER_SANDBOX."""
    options = SimpleNamespace(
        out=out,
        secret=secret,
        timeout=settings.get("timeout"),
        memory=settings["memory_gb"],
        force=True,
        workers=1,
    )
    return config_from_args(options, environ, platform="gradescope")


def grading_sandbox(config: Config) -> Sandbox:
    """The sandbox run_autograder grades in (grading/sandboxes.py chooses it), under the
    Config's limits: without --timeout, the budgets setup.sh's self-test measured in this image
    (read from its record, selftest.recorded; the static default where there is none)."""
    sandbox = open_sandbox(config)
    if not config.limits.timeout_given:
        selftest.recorded(sandbox, config, out=sys.stdout)
    return sandbox


def sandbox_line(sandbox: Sandbox) -> str:
    """One line for run_autograder's log: which sandbox grades this submission and as which
    user, as `sandbox: KIND, uid UID: prose` (the field test reads KIND and UID;
    benchmarks/gradescope_field.py). KIND is bwrap-userns (bubblewrap, a user namespace per
    sandbox, an unprivileged uid: the first of one per concurrent sandbox), bwrap-root
    (bubblewrap without a user namespace: root without capabilities), bwrap-user (a grader that
    is not root: its own uid), student-user (no bubblewrap: the unprivileged user) or none."""
    from autograder.sandbox.userns import UID_BASE

    features = getattr(sandbox, "features", None)
    bwrap = features.name() if features else "bubblewrap"
    if isinstance(sandbox, StudentUserSandbox):
        kind, uid = "student-user", sandbox.uid
        prose = "no bubblewrap (no namespaces here); student code runs as an unprivileged user"
    elif sandbox.mode == "bwrap" and sandbox.identity == "userns":
        kind, uid = "bwrap-userns", UID_BASE
        prose = f"{bwrap}, a user namespace of its own per sandbox, unprivileged uid inside"
    elif sandbox.mode == "bwrap" and sandbox.identity == "root":
        kind, uid = "bwrap-root", 0
        prose = f"{bwrap} without a user namespace: root without capabilities"
    elif sandbox.mode == "bwrap":
        kind, uid = "bwrap-user", os.geteuid()
        prose = f"{bwrap} as the grader's own uid"
    else:
        kind, uid = "none", os.geteuid()
        prose = "no sandbox: student code runs as the grader"
    return f"sandbox: {kind}, uid {uid}: {prose}"


FAILED = (
    "The autograder failed on this submission, so nothing was graded; your instructor has the "
    "details. Please tell them."
)


def failure_results() -> dict[str, Any]:
    """A valid results.json for a submission the grader could not grade (no student text)."""
    return {
        "score": 0.0,
        "output": as_html(FAILED),
        "output_format": OUTPUT_FORMAT,
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": [],
    }


def grade_submission(root: Path) -> tuple[dict[str, Any], str]:
    """Grade ROOT/submission: (Gradescope's results.json as a dict, the student id). Raises on
    any failure."""
    from autograder import submissions
    from autograder.curriculum import NOTEBOOKS
    from autograder.grading.plan import notebook_file
    from autograder.grading.student import grade_student
    from autograder.safe_files import parse_json, read_bytes

    lock_down(root)  # first: nothing of the student's runs before the course is closed to it
    chosen = {**DEFAULTS, **json.loads((root / "source" / "settings.json").read_text())}
    secret = (root / "source" / "secret").read_text().strip()
    try:  # Gradescope writes it, but read it as untrusted all the same (bounded, no links)
        raw = read_bytes(root, ["submission_metadata.json"], 2**20)
        metadata = parse_json(raw.decode("utf-8", errors="replace"), "submission_metadata.json")
    except (OSError, ValueError):
        metadata = {}
    student = student_id(metadata)
    out = Path(tempfile.mkdtemp(prefix="autograder-results-"))
    staging = Path(tempfile.mkdtemp(prefix="autograder-submission-"))
    sandbox = None
    try:
        config = grading_config(chosen, secret, out)
        sandbox = grading_sandbox(config)
        [sub] = submissions.discover(
            root / "submission", out, staging, layout="student", student=student
        )
        if sub.refused:  # student_id() only hands over valid ids: the grader's own failure
            raise RuntimeError(sub.refused)
        missing = {
            nb.stem for nb in NOTEBOOKS if notebook_file(sub.folder, nb.filename) == "missing"
        }
        print(sandbox_line(sandbox), flush=True)  # the run's log says which sandbox graded
        result = grade_student(sub.student, sub.folder, config, sandbox, sub.messages)
        return gradescope_results(result.results, chosen, missing), student
    finally:
        if sandbox is not None:
            sandbox.close()
        shutil.rmtree(staging, ignore_errors=True)
        shutil.rmtree(out, ignore_errors=True)


def write_results(results_dir: Path, payload: Any) -> Path:
    """results.json, atomically, as strict JSON; the failure results if `payload` is not."""
    try:
        text = json.dumps(payload, indent=1, allow_nan=False)
    except (TypeError, ValueError):
        traceback.print_exc()
        text = json.dumps(failure_results(), indent=1)
    target = results_dir / "results.json"
    partial = results_dir / ".results.json.tmp"
    partial.write_text(text)
    partial.replace(target)
    return target


def run_autograder(root: Path | str) -> int:
    """Grade ROOT/submission, write ROOT/results/results.json whatever happens. Returns the exit
    status: 0 when graded, 1 when the grader failed (results.json then says so)."""
    root = Path(root).resolve()
    started = time.monotonic()
    results_dir = root / "results"
    student, status = "student", 1
    try:
        payload, student = grade_submission(root)
        status = 0
    except Exception:  # noqa: BLE001 - Gradescope must still get a results.json
        traceback.print_exc()
        payload = failure_results()
    payload["execution_time"] = round(time.monotonic() - started, 2)
    results_dir.mkdir(parents=True, exist_ok=True)
    target = write_results(results_dir, payload)
    print(f"{terminal(student)}: {payload.get('score', 0):g} -> {target}")
    return status


# -- the command line ----------------------------------------------------------------------------
def add_arguments(commands: Any) -> None:
    cmd = commands.add_parser("gradescope", help="build a Gradescope autograder zip")
    cmd.add_argument("--out", default="autograder.zip", help="the zip to write")
    cmd.add_argument(
        "--secret",
        help="course secret seeding the hidden tests (default: $COURSE_SECRET, else a new "
        "random one, printed once)",
    )
    cmd.add_argument(
        "--visibility",
        choices=VISIBILITIES,
        default=DEFAULTS["visibility"],
        help="the whole result: score and summary (default: %(default)s)",
    )
    cmd.add_argument(
        "--test-visibility",
        choices=VISIBILITIES,
        default=DEFAULTS["test_visibility"],
        help="each hidden test's verdict and message (default: %(default)s)",
    )
    cmd.add_argument(
        "--stdout-visibility",
        choices=VISIBILITIES,
        default=DEFAULTS["stdout_visibility"],
        help="the autograder's own log (default: %(default)s)",
    )
    cmd.add_argument("--timeout", type=float, default=DEFAULTS["timeout"])
    cmd.add_argument("--memory", type=float, default=DEFAULTS["memory_gb"])


def run(args: Any) -> int:
    given = given_secret(args)
    secret = build_zip(
        args.out,
        secret=given,
        visibility=args.visibility,
        test_visibility=args.test_visibility,
        stdout_visibility=args.stdout_visibility,
        timeout=args.timeout,
        memory_gb=args.memory,
    )
    print(f"wrote {Path(args.out).resolve()}: upload it as the assignment's autograder")
    if not given:
        print(
            f"the course secret stored in it (keep it to regrade the same way): {secret}",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    sys.exit(run_autograder(sys.argv[1] if len(sys.argv) > 1 else "/autograder"))
