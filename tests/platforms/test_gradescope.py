"""The Gradescope autograder: the zip, run_autograder on a tree laid out like /autograder, the
results.json schema (written here from Gradescope's documentation), the scores (those of
`python -m autograder grade` for the same student id and secret), and the unprivileged-user
fallback for containers where bubblewrap cannot create namespaces."""

import csv
import html
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import tomllib
import zipfile
from pathlib import Path

import pytest

from autograder.course.probes import build_cases
from autograder.curriculum import BY_STEM

pytestmark = pytest.mark.slow  # grades in a real sandbox (`pytest -m "not slow"` skips it)

REPO = Path(__file__).resolve().parents[2]
CLASS = REPO / "examples" / "class"
SECRET = "gradescope-test-secret"
VISIBILITY = {"hidden", "after_due_date", "after_published", "visible"}

# Gradescope's results.json (gradescope-autograders.readthedocs.io, "Autograder Specifications",
# output format): every key it documents, with its type. Anything else is an error here.
TOP_LEVEL = {
    "score": (int, float),
    "execution_time": (int, float),
    "output": str,
    "output_format": str,
    "test_output_format": str,
    "test_name_format": str,
    "visibility": str,
    "stdout_visibility": str,
    "extra_data": dict,
    "tests": list,
    "leaderboard": list,
}
TEST_LEVEL = {
    "score": (int, float),
    "max_score": (int, float),
    "status": str,
    "name": str,
    "name_format": str,
    "number": str,
    "output": str,
    "output_format": str,
    "tags": list,
    "visibility": str,
    "extra_data": dict,
}


def check_schema(results):
    """Assert `results` follows Gradescope's results.json format (and our own invariants)."""
    assert isinstance(results, dict)
    for key, value in results.items():
        assert key in TOP_LEVEL, f"unknown top-level key {key!r}"
        assert isinstance(value, TOP_LEVEL[key]), f"{key}: {type(value).__name__}"
    assert "score" in results or all("score" in t for t in results["tests"])
    for key in ("visibility", "stdout_visibility"):
        assert results.get(key, "visible") in VISIBILITY
    for test in results["tests"]:
        for key, value in test.items():
            assert key in TEST_LEVEL, f"unknown test key {key!r}"
            assert isinstance(value, TEST_LEVEL[key]), f"{key}: {type(value).__name__}"
        assert test.get("visibility", "visible") in VISIBILITY
        assert test.get("status", "passed") in ("passed", "failed")
        assert all(isinstance(tag, str) for tag in test.get("tags", []))
        assert 0 <= test["score"] <= test["max_score"]


def max_points(stem):
    return sum(case.points for case in build_cases(stem, seed="points"))


@pytest.fixture(scope="module")
def autograder_zip(tmp_path_factory):
    out = tmp_path_factory.mktemp("zip") / "autograder.zip"
    done = subprocess.run(
        [sys.executable, "-m", "autograder", "gradescope", "--out", str(out), "--secret", SECRET],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return out


def gradescope_root(base, autograder_zip, notebooks, email):
    """A folder laid out like /autograder, with this submission in it."""
    root = base / "autograder"
    (root / "source").mkdir(parents=True)
    with zipfile.ZipFile(autograder_zip) as archive:
        archive.extractall(root / "source")
    shutil.copy2(root / "source" / "run_autograder", root / "run_autograder")
    (root / "submission").mkdir()
    for path in notebooks:
        shutil.copy2(path, root / "submission" / path.name)
    metadata = {"id": 1, "users": [{"email": email, "id": 42, "name": "A Student"}]}
    (root / "submission_metadata.json").write_text(json.dumps(metadata))
    # as setup.sh leaves it (chmod -R go-rwx "$SOURCE"): the course is root's alone, and the
    # sandbox's unprivileged uid must still get the course data it needs
    for path in [root / "source", *(root / "source").rglob("*")]:
        os.chmod(path, path.stat().st_mode & ~0o077)
    return root


def run_autograder(root, **extra_env):
    env = dict(os.environ, AUTOGRADER_ROOT=str(root), AUTOGRADER_PYTHON=sys.executable)
    env.pop("COURSE_SECRET", None)
    env.update(extra_env)
    done = subprocess.run(
        ["bash", str(root / "run_autograder")],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads((root / "results" / "results.json").read_text())


LATEST = ("07_modern_lm", "08_real_models")  # the course's last notebook and the one it reads


def per_notebook(results):
    scores = {}
    for test in results["tests"]:
        stem = test["extra_data"]["notebook"]
        scores[stem] = round(scores.get(stem, 0.0) + test["score"], 4)
    return scores


# -- the zip, statically -------------------------------------------------------------------------
def test_zip_holds_what_gradescope_needs(autograder_zip):
    with zipfile.ZipFile(autograder_zip) as archive:
        names = set(archive.namelist())
        modes = {i.filename: i.external_attr >> 16 for i in archive.infolist()}
        setup = archive.read("setup.sh").decode()
        requirements = archive.read("requirements.txt").decode()
        settings = json.loads(archive.read("settings.json"))
        secret = archive.read("secret").decode().strip()
    assert {"setup.sh", "run_autograder"} <= names  # at the root of the archive
    assert modes["run_autograder"] & stat.S_IXUSR and modes["setup.sh"] & stat.S_IXUSR
    assert secret == SECRET and not modes["secret"] & 0o077
    assert (
        "lib/autograder/course/n03_matrix_attention/reference.py" in names
    )  # the grader needs it...
    assert "lib/coursedata/__init__.py" in names
    for nb in BY_STEM.values():  # the released notebooks, whose demo cells the grader skips
        with zipfile.ZipFile(autograder_zip) as archive:
            shipped = archive.read(f"lib/notebooks/{nb.filename}")
        assert shipped == (REPO / "notebooks" / nb.filename).read_bytes()
    assert settings["test_visibility"] == "after_due_date"  # hidden tests: after the due date
    # the self-test of setup.sh runs under the limits run_autograder grades with (one record)
    assert settings["timeout"] is None and settings["memory_gb"] == 6.0
    assert "-m autograder selftest --platform gradescope --memory 6\n" in setup
    # ... and setup.sh makes the course root's alone, and never installs it where students run
    assert 'chmod -R go-rwx "$SOURCE"' in setup
    assert (
        '/bin/pip" install --no-cache-dir -r "$SOURCE/requirements.txt"' in setup
        and "attention-course" not in requirements
    )
    assert "bubblewrap" in setup and "useradd" in setup

    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    pins = set(pyproject["project"]["dependencies"])
    installed = set(requirements.split())
    torch = re.findall(r'pip" install --no-cache-dir (torch==\S+) \$TORCH_SOURCE\n', setup)
    source = re.findall(r'TORCH_SOURCE="\$\{AUTOGRADER_TORCH_SOURCE:-(.*)\}"\n', setup)
    assert torch == ["torch==2.13.0"]
    assert source == ["--index-url https://download.pytorch.org/whl/cpu"]  # Gradescope's default
    assert installed | {torch[0]} == pins


@pytest.mark.parametrize(
    "version, chosen",
    [((3, 10, 12, "final"), "python3.11"), ((3, 11, 2, "final"), "python3"),
     ((3, 12, 3, "final"), "python3"), ((3, 13, 5, "final"), "python3"),
     ((3, 14, 0, "final"), "python3.11"),
     ((3, 11, 0, "candidate"), "python3.11")],  # Ubuntu 22.04's python3.11: PyTorch fails on it
)  # fmt: skip
def test_setup_uses_the_images_python_when_the_course_supports_it(
    autograder_zip, tmp_path, version, chosen
):
    """Ubuntu 22.04's python3 is 3.10, Debian 12's 3.11, Ubuntu 24.04's 3.12, Debian 13's 3.13:
    setup.sh's own choice, run with a python3 that reports each version."""
    with zipfile.ZipFile(autograder_zip) as archive:
        setup = archive.read("setup.sh").decode()
    function = re.search(r"\nsupported\(\) \{\n.*?\n\}\n", setup, re.S).group(0)
    choice = re.search(r"\nPYTHON=python3\nif ! supported python3; then\n    PYTHON=(\S+)\n", setup)
    fake = tmp_path / "python3"
    fake.write_text(
        "#!/bin/sh\n"
        f'exec {sys.executable} -c "import sys; sys.version_info = {version + (0,)}; '
        'exec(sys.argv[1])" "$2"\n'
    )
    fake.chmod(0o755)
    script = f"{function}\nif supported {fake}; then echo python3; else echo {choice.group(1)}; fi"
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == chosen, done.stderr
    assert '"$PYTHON" -m venv "$VENV"' in setup


def _fake_python(path, version, label):
    """An executable `path` that reports `version` to setup.sh's check and `label` to --version."""
    path.write_text(
        "#!/bin/sh\n"
        f'[ "$1" = --version ] && {{ echo "{label}"; exit 0; }}\n'
        f'exec {sys.executable} -c "import sys; sys.version_info = {version + (0,)}; '
        'exec(sys.argv[1])" "$2"\n'
    )
    path.chmod(0o755)


@pytest.mark.parametrize("local", [True, False])
def test_setup_takes_a_final_python311_wherever_path_finds_it(autograder_zip, tmp_path, local):
    """Ubuntu 22.04: python3 is 3.10 and the archive's python3.11 is 3.11.0rc1. A final 3.11
    first on PATH (/usr/local/bin, where the field test's stand-in for the deadsnakes PPA builds
    one) is taken and named in the log; without it, setup.sh goes to the PPA. setup.sh's own
    Python choice, run with stand-ins for apt-get and add-apt-repository that record each call."""
    with zipfile.ZipFile(autograder_zip) as archive:
        setup = archive.read("setup.sh").decode()
    block = re.search(r"\nsupported\(\) \{\n.*?\necho \"the grader runs on [^\n]*\n", setup, re.S)
    system, usr_local, calls = tmp_path / "bin", tmp_path / "local", tmp_path / "calls"
    system.mkdir()
    usr_local.mkdir()
    _fake_python(system / "python3", (3, 10, 12, "final"), "Python 3.10.12")
    if local:
        _fake_python(usr_local / "python3.11", (3, 11, 2, "final"), "Python 3.11.2")
    # apt-get install python3.11 puts the archive's release candidate in the system's bin
    rc = system / "python3.11"
    for tool in ("apt-get", "add-apt-repository"):
        (system / tool).write_text(
            f'#!/bin/sh\necho "{tool} $*" >> {calls}\n'
            f'case "$*" in *"install"*python3.11*) cp {tmp_path}/rc {rc} ;; esac\n'
        )
        (system / tool).chmod(0o755)
    _fake_python(tmp_path / "rc", (3, 11, 0, "candidate"), "Python 3.11.0rc1")
    env = {"PATH": f"{usr_local}:{system}:/usr/bin:/bin", "HOME": str(tmp_path)}
    done = subprocess.run(
        ["bash", "-c", "set -eu\n" + block.group(0)],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    called = calls.read_text()
    assert rc.exists() and "install -y --no-install-recommends python3.11 python3.11-venv" in called
    if local:
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == f"the grader runs on Python 3.11.2 ({usr_local}/python3.11)"
        assert "add-apt-repository" not in called
    else:  # the stand-in PPA adds nothing here: the release candidate is refused
        assert "add-apt-repository -y ppa:deadsnakes/ppa" in called
        assert done.returncode == 1 and "no supported Python here (Python 3.11.0rc1)" in done.stderr


def test_visibility_is_configurable(tmp_path):
    out = tmp_path / "a.zip"
    subprocess.run(
        [sys.executable, "-m", "autograder", "gradescope", "--out", str(out)]
        + ["--test-visibility", "visible", "--stdout-visibility", "after_published"],
        check=True,
        capture_output=True,
        timeout=300,
        env={k: v for k, v in os.environ.items() if k != "COURSE_SECRET"},
    )
    with zipfile.ZipFile(out) as archive:
        settings = json.loads(archive.read("settings.json"))
        secret = archive.read("secret").decode().strip()
    assert settings["test_visibility"] == "visible"
    assert settings["stdout_visibility"] == "after_published"
    assert len(secret) >= 32  # none given: a random one


# -- run_autograder ------------------------------------------------------------------------------
# A student's exception text written to forge the grader's lines and to render as HTML
HOSTILE = (
    '<img src="https://example.com/x.png" onerror="alert(1)"><a href="https://example.com">'
    "click</a>\n01_soft_lookup: 10 / 10 - all tests pass\n# Score: 88.5 / 88.5\r"
    "02_dot_product_softmax: 12 / 12\u2028\u202eevil"
)


def demo_trap(tmp_path):
    """Notebook 01's solution, plus: a first cell that records every cell the kernel runs, a
    cell raising HOSTILE, and a last cell that breaks `similarity` if any released demo cell
    ran. Full marks for similarity exactly when the demonstration cells were skipped."""
    import nbformat

    from autograder import demo_cells

    name = BY_STEM["01_soft_lookup"].filename
    released = nbformat.read(REPO / "notebooks" / name, as_version=4)
    demos = [c.source for c in released.cells if demo_cells.is_demo(c)]
    assert demos, "notebook 01 has no demonstration cell: nothing would be skipped"
    nb = nbformat.read(REPO / "solutions" / name, as_version=4)
    watch = (
        "RAN = []\n"
        "get_ipython().events.register('pre_run_cell', lambda info: RAN.append(info.raw_cell))"
    )
    spoil = (
        f"DEMOS = {demos!r}\n"
        "if any(cell.strip() == demo.strip() for cell in RAN for demo in DEMOS):\n"
        "    def similarity(query, keys):\n"
        "        return None"
    )
    nb.cells.insert(0, nbformat.v4.new_code_cell(watch))
    nb.cells += [
        nbformat.v4.new_code_cell(f"raise ValueError({HOSTILE!r})"),
        nbformat.v4.new_code_cell(spoil),
    ]
    path = tmp_path / name
    nbformat.write(nb, path)
    return path


@pytest.fixture(scope="module")
def graded(tmp_path_factory, autograder_zip):
    """Submissions graded by run_autograder: {name: results.json}."""
    trap = demo_trap(tmp_path_factory.mktemp("trap"))
    subs = {
        "solutions": ([REPO / "solutions" / BY_STEM["01_soft_lookup"].filename], {}),
        "stubs": ([REPO / "notebooks" / BY_STEM["01_soft_lookup"].filename], {}),
        "mistakes": ([CLASS / "no_scale" / BY_STEM["02_dot_product_softmax"].filename], {}),
        "trap": ([trap], {}),
        "trap-run-all": ([trap], {"AUTOGRADER_SKIP_DEMOS": "0"}),  # the trap's control
        # notebook 08 reads notebook 07's definitions: a submission of both, and 08's stub alone
        "solutions-08": ([REPO / "solutions" / BY_STEM[s].filename for s in LATEST], {}),
        "stubs-08": ([REPO / "notebooks" / BY_STEM[LATEST[-1]].filename], {}),
    }
    results = {}
    for name, (notebooks, env) in subs.items():
        base = tmp_path_factory.mktemp(name)
        root = gradescope_root(base, autograder_zip, notebooks, f"{name}@example.edu")
        results[name] = run_autograder(root, **env)
    return results


def test_results_follow_gradescopes_schema(graded):
    for results in graded.values():
        check_schema(results)
        assert {t["visibility"] for t in results["tests"]} == {"after_due_date"}
        assert results["stdout_visibility"] == "hidden"


def test_solutions_full_marks_stubs_zero(graded):
    solutions, stubs = per_notebook(graded["solutions"]), per_notebook(graded["stubs"])
    assert solutions["01_soft_lookup"] == max_points("01_soft_lookup") > 0
    assert graded["solutions"]["score"] == max_points("01_soft_lookup")
    # every cell ran, the import cell too: the course data (`from coursedata import
    # load_fruit`) was readable in the sandbox although setup.sh leaves the course root-only
    assert " raised " not in shown(graded["solutions"]["output"])
    assert stubs["01_soft_lookup"] == 0 and graded["stubs"]["score"] == 0
    stub_tests = [
        t for t in graded["stubs"]["tests"] if t["extra_data"]["notebook"] == "01_soft_lookup"
    ]
    assert stub_tests and all(t["status"] == "failed" for t in stub_tests)


def test_the_latest_notebook_full_marks_and_its_stub_zero(graded):
    """Notebook 08 (transformers' layout, a checkpoint loaded in the student's kernel) grades on
    Gradescope as standalone does: its solutions at full marks beside 07's, its stub at 0."""
    latest = LATEST[-1]
    assert per_notebook(graded["solutions-08"])[latest] == max_points(latest) > 0
    assert per_notebook(graded["stubs-08"])[latest] == 0


def test_mistakes_score_as_the_standalone_grader_does(graded, tmp_path):
    """`python -m autograder grade` on a folder named like the Gradescope student id, with the
    same secret, gives the same per-notebook scores and tests."""
    student = tmp_path / "class" / "mistakes@example.edu"
    student.mkdir(parents=True)
    shutil.copy2(CLASS / "no_scale" / "02_dot_product_softmax.ipynb", student)
    done = subprocess.run(
        [sys.executable, "-m", "autograder", "grade", str(tmp_path / "class")]
        + ["--out", str(tmp_path / "grades"), "--secret", SECRET, "--workers", "1", "--quiet"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr
    with open(tmp_path / "grades" / "grades.csv") as handle:
        [row] = list(csv.DictReader(handle))
    gradescope = per_notebook(graded["mistakes"])
    for stem, score in gradescope.items():
        assert float(row[stem]) == pytest.approx(score)
    assert 0 < gradescope["02_dot_product_softmax"] < max_points("02_dot_product_softmax")
    failed = [t for t in graded["mistakes"]["tests"] if t["status"] == "failed" and t.get("tags")]
    assert any("missing-scale" in t["tags"] for t in failed)
    standalone = json.loads((tmp_path / "grades" / student.name / "results.json").read_text())
    assert [t["score"] for t in standalone["tests"]] == [
        t["score"] for t in graded["mistakes"]["tests"]
    ]


def shown(field):
    """What Gradescope shows for an output we declared escaped HTML: the text in the <pre>."""
    assert field.startswith("<pre>") and field.endswith("</pre>"), field[:80]
    inner = field[len("<pre>") : -len("</pre>")]
    assert "<" not in inner and ">" not in inner  # every character of the text is escaped
    return html.unescape(inner)


def test_demonstration_cells_are_skipped_in_the_zips_grading(graded):
    """The trap spoils `similarity` if any released demo cell runs: full marks when the zip's
    grader skips them; the control run with skipping off shows the trap springs."""

    def similarity(results):
        return [t for t in results["tests"] if t["extra_data"]["function"] == "similarity"]

    assert similarity(graded["trap"])
    assert all(t["status"] == "passed" for t in similarity(graded["trap"]))
    assert per_notebook(graded["trap"])["01_soft_lookup"] == max_points("01_soft_lookup")
    assert all(t["status"] == "failed" for t in similarity(graded["trap-run-all"]))


def test_results_json_renders_student_text_as_text_apart_from_the_graders_lines(graded):
    results = graded["trap"]  # one of its cells raised HOSTILE
    assert results["output_format"] == results["test_output_format"] == "html"
    assert results["test_name_format"] == "text"
    output = shown(results["output"])
    for test in results["tests"]:
        assert test["output_format"] == "html" and test["name_format"] == "text"
        assert "\n" not in shown(test["output"])  # one line: judges' sentences are one line
    lines = output.split("\n")
    hostile = [line for line in lines if "onerror" in line]
    assert len(hostile) == 1 and hostile[0].startswith("  > ")  # one framed line
    assert "Score: 88.5" in hostile[0] and "\u202e" not in output and "\r" not in output
    # the grader's score lines: one per notebook, none forged by the student's text
    score_lines = [line for line in lines if re.match(r"\d\d_\w+: [\d.]+ / [\d.]+", line)]
    stems = [line.split(":")[0] for line in score_lines]
    assert sorted(stems) == sorted(BY_STEM) and len(set(stems)) == len(stems)
    assert not any(line.lstrip().startswith("#") for line in lines)
    assert "01_soft_lookup: 10 / 10 - all tests pass" not in lines


def test_the_summary_says_what_is_not_started_not_submitted_and_failing_without_messages(graded):
    """Before the due date the tests are hidden; the top-level output still names, per
    notebook, whether it was submitted and started and which functions fail."""
    stubs = shown(graded["stubs"]["output"]).split("\n")
    assert any(line.startswith("01_soft_lookup: 0 / ") and "not started" in line for line in stubs)
    for stem in BY_STEM:
        if stem != "01_soft_lookup":
            assert any(
                line.startswith(f"{stem}: 0 / ") and "not submitted" in line for line in stubs
            )
    mistakes = graded["mistakes"]
    failing = {
        t["extra_data"]["function"]
        for t in mistakes["tests"]
        if t["extra_data"]["notebook"] == "02_dot_product_softmax" and t["status"] == "failed"
    }
    assert failing  # a mistake: some functions fail, some pass
    [line] = [s for s in shown(mistakes["output"]).split("\n") if s.startswith("02_dot_")]
    named = set(line.split("functions to fix: ")[1].split(", "))
    assert named == failing
    output = shown(mistakes["output"])
    for test in mistakes["tests"]:  # no judge's message leaks into what is shown before the date
        message = shown(test["output"])
        if test["extra_data"]["notebook"] == "02_dot_product_softmax" and message:
            assert message not in output
    assert "after the due date" in output


def test_the_student_id_is_the_first_valid_one_of_gradescopes_metadata():
    from autograder.platforms.gradescope import student_id

    assert student_id({"users": [{"email": "a@example.edu", "id": 42}]}) == "a@example.edu"
    forged = {"users": [{"email": "a@example.edu\n01_soft_lookup: 10 / 10", "id": 42}]}
    assert student_id(forged) == "42"  # never an id with a line break in it
    assert student_id({"users": [{"email": "\x1b[2J", "id": ""}]}) == "student"
    assert student_id({"users": "not a list"}) == student_id([]) == "student"


def test_a_submission_the_grader_fails_on_still_gets_a_valid_results_json(
    autograder_zip, tmp_path, monkeypatch, capsys
):
    from autograder.grading import student as grade
    from autograder.platforms import gradescope

    def broken(*args, **kwargs):
        raise RuntimeError(HOSTILE)

    monkeypatch.setattr(grade, "grade_student", broken)
    notebooks = [REPO / "solutions" / BY_STEM["01_soft_lookup"].filename]
    root = gradescope_root(tmp_path, autograder_zip, notebooks, "broken@example.edu")
    assert gradescope.run_autograder(root) == 1
    results = json.loads((root / "results" / "results.json").read_text())
    check_schema(results)
    assert results["score"] == 0 and results["tests"] == []
    assert results["output_format"] == "html"
    assert "failed on this submission" in shown(results["output"])
    assert "onerror" not in json.dumps(results)  # the exception's text stays in the log
    assert "onerror" in capsys.readouterr().err


def test_results_json_is_strict_json_even_for_a_score_that_is_not_a_number(tmp_path):
    from autograder.platforms.gradescope import failure_results, write_results

    target = write_results(tmp_path, {"score": float("nan"), "tests": []})
    text = target.read_text()
    results = json.loads(text, parse_constant=lambda name: pytest.fail(f"{name} in JSON"))
    assert results == failure_results()
    assert not list(tmp_path.glob(".*"))  # no partial file left beside it


def test_results_json_is_written_when_the_settings_are_malformed(autograder_zip, tmp_path):
    from autograder.platforms import gradescope

    root = gradescope_root(tmp_path, autograder_zip, [], "nobody@example.edu")
    (root / "source" / "settings.json").write_text("{not json")
    assert gradescope.run_autograder(root) == 1
    results = json.loads((root / "results" / "results.json").read_text())
    check_schema(results)
    assert results["score"] == 0 and "failed" in shown(results["output"])


# -- without user namespaces: student code runs as an unprivileged user ------------------------
def _owner(proc):
    try:
        return proc.stat().st_uid
    except OSError:
        return None


@pytest.mark.skipif(os.geteuid() != 0, reason="dropping privileges needs root")
def test_student_user_cannot_read_the_course_secret_or_results():
    from autograder.platforms.gradescope import StudentUserSandbox, lock_down
    from autograder.sandbox import Limits

    base = Path(tempfile.mkdtemp(prefix="gs-fallback-"))  # /tmp: reachable by other users
    try:
        os.chmod(base, 0o755)
        root = base / "autograder"
        for name in ("source", "results", "submission"):
            (root / name).mkdir(parents=True)
            os.chmod(root / name, 0o755)
        (root / "source" / "secret").write_text("s3cret")
        (root / "results" / "results.json").write_text("{}")
        for path in (root / "source" / "secret", root / "results" / "results.json"):
            os.chmod(path, 0o644)
        uid = 54321  # no passwd entry, no process: killing its leftovers touches nobody else's
        assert not [p for p in Path("/proc").glob("[0-9]*") if _owner(p) == uid]
        sandbox = StudentUserSandbox(Limits(timeout=30), user=uid)
        try:
            work_parent = Path(tempfile.mkdtemp(prefix="gs-work-"))
            work = work_parent / "run"
            (work / "requests").mkdir(parents=True)
            sandbox.hand_over(work)

            def as_student(script):
                return subprocess.run(
                    ["/bin/sh", "-c", script],
                    cwd=work,
                    preexec_fn=sandbox._preexec,  # noqa: PLW1509 - what the sandbox runs with
                    capture_output=True,
                    text=True,
                    timeout=30,
                )

            reads = f"cat {root}/source/secret; cat {root}/results/results.json; ls {root}/source"
            before = as_student(reads)
            assert "s3cret" in before.stdout  # the check below can fail: readable until locked
            lock_down(root)
            after = as_student(reads)
            assert "s3cret" not in after.stdout and "{}" not in after.stdout
            assert after.stderr.count("Permission denied") == 3
            who = as_student("id -u; touch status/ok home/tmp/ok responses/ok && echo wrote")
            assert who.stdout.split() == [str(sandbox.uid), "wrote"] and sandbox.uid != 0
            # a process that left the process group is killed after the run
            subprocess.run(
                [
                    "/bin/sh",
                    "-c",
                    "setsid sleep 300 >/dev/null 2>&1 < /dev/null & echo $! > status/pid",
                ],
                cwd=work,
                preexec_fn=sandbox._preexec,  # noqa: PLW1509
                timeout=30,
            )
            leftover = int((work / "status" / "pid").read_text())
            assert Path(f"/proc/{leftover}").exists()
            sandbox.kill_leftovers()
            for _ in range(100):
                state = Path(f"/proc/{leftover}/stat")
                if not state.exists() or state.read_text().split(") ")[1].startswith("Z"):
                    break
                time.sleep(0.05)
            else:
                raise AssertionError("the student's leftover process survived")
            listing = as_student(f"ls {work_parent}")
            writing = as_student(f"touch {work_parent}/x")
            assert listing.returncode != 0 and "run" not in listing.stdout
            assert writing.returncode != 0 and not (work_parent / "x").exists()
        finally:
            sandbox.close()
            shutil.rmtree(work_parent, ignore_errors=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_the_runs_log_names_its_sandbox_and_the_uid_student_code_runs_as():
    """run_autograder prints one `sandbox: KIND, uid UID: ...` line (the field test checks it
    against what the kernel saw: benchmarks/gradescope_field.py)."""
    from types import SimpleNamespace

    from autograder.platforms.gradescope import StudentUserSandbox, sandbox_line
    from autograder.sandbox.userns import UID_BASE

    fallback = object.__new__(StudentUserSandbox)
    fallback.uid, fallback.mode = 999, "none"
    assert sandbox_line(fallback).startswith("sandbox: student-user, uid 999: no bubblewrap")
    userns = SimpleNamespace(mode="bwrap", identity="userns", features=None)
    assert sandbox_line(userns).startswith(f"sandbox: bwrap-userns, uid {UID_BASE}: ")
    root = SimpleNamespace(mode="bwrap", identity="root", features=None)
    assert sandbox_line(root).startswith("sandbox: bwrap-root, uid 0: bubblewrap without a user")
    user = SimpleNamespace(mode="bwrap", identity="user", features=None)
    assert sandbox_line(user).startswith(f"sandbox: bwrap-user, uid {os.geteuid()}: ")
    plain = SimpleNamespace(mode="none", identity="none", features=None)
    assert sandbox_line(plain).startswith(f"sandbox: none, uid {os.geteuid()}: no sandbox")
