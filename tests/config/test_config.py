"""One Config, made at the door and never written to (autograder/config.py): the only reader of
the grader's settings from the environment; every platform builds it the same way, so the
self-test's measured budgets are in force on Gradescope too; one chooser of the sandbox
(grading/sandboxes.py); and the handout ships each file once."""

import ast
import dataclasses
import json
from argparse import Namespace
from pathlib import Path
from types import SimpleNamespace

import pytest
from fixtures import NB01, REPO, stand_in_todo

from autograder import __main__ as cli
from autograder.config import Config, cache_root, config_from_args
from autograder.grading import classrun, sandboxes, selftest
from autograder.grading import student as student_module
from autograder.grading.stopping import Stopping
from autograder.handout import SHIPPED
from autograder.platforms import gradescope
from autograder.sandbox import Limits
from autograder.sandbox.bubblewrap import BubblewrapUnsupported
from autograder.submissions import discover

PACKAGE = REPO / "autograder"
GB = 2**30

# -- the environment is read at the door alone ---------------------------------------------------
# Other processes than the grader's keep their own reads, each commented where it is.
OTHER_PROCESSES = {
    "autograder/config.py": "the door itself",
    "autograder/checks.py": "runs in the student's kernel",
    "autograder/sandbox/inside/driver.py": "runs inside the sandbox",
    "autograder/sandbox/inside/zygote.py": "runs inside the sandbox",
    # PATH handed on to nbgrader's own child process (alembic), put back after: not a setting
    "autograder/platforms/nbgrader.py": "scripts_first",
}


def environment_reads(tree):
    """Lines that read the process's environment: os.environ / os.getenv used in any way but
    handing it on whole to a child (dict(os.environ, ...), {**os.environ, ...},
    os.environ.copy()), and `from os import environ / getenv`."""
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}

    def handed_on(node):
        parent = parents.get(node)
        if isinstance(parent, ast.Call) and parent.args and parent.args[0] is node:
            return isinstance(parent.func, ast.Name) and parent.func.id == "dict"
        if isinstance(parent, ast.Dict):  # {**os.environ, ...}: a key of None
            return any(
                k is None and v is node for k, v in zip(parent.keys, parent.values, strict=True)
            )
        if isinstance(parent, ast.Attribute) and parent.attr == "copy":
            return isinstance(parents.get(parent), ast.Call)
        return False

    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "os":
            if {a.name for a in node.names} & {"environ", "getenv", "environb"}:
                yield node.lineno
        elif (
            isinstance(node, ast.Attribute)
            and node.attr in ("environ", "getenv", "environb")
            and isinstance(node.value, ast.Name)
            and node.value.id == "os"
            and not handed_on(node)
        ):
            yield node.lineno


def test_the_scanner_sees_each_way_of_reading_the_environment():
    code = (
        "import os\n"
        'a = os.environ.get("TMPDIR")\n'
        'b = os.environ["HOME"]\n'
        'c = "COURSE_SECRET" in os.environ\n'
        'd = os.getenv("XDG_CACHE_HOME")\n'
        "from os import environ\n"
        "e = dict(os.environ, MPLBACKEND='Agg')\n"
        "f = {**os.environ, 'GIT_TERMINAL_PROMPT': '0'}\n"
        "g = os.environ.copy()\n"
        "h = sorted(os.environ)\n"
    )
    assert sorted(set(environment_reads(ast.parse(code)))) == [2, 3, 4, 5, 6, 10]


def test_no_module_but_the_config_reads_the_environment():
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(REPO).as_posix()
        if name in OTHER_PROCESSES:
            continue
        lines = sorted(set(environment_reads(ast.parse(path.read_text(encoding="utf-8")))))
        if lines:
            offenders.append(f"{name}: lines {lines}")
    assert not offenders, "the environment read outside autograder/config.py:\n" + "\n".join(
        offenders
    )


def test_each_other_process_read_is_commented_where_it_is():
    """The reads left in the files run by other processes say why, on the line above."""
    for name in OTHER_PROCESSES:
        if name == "autograder/config.py":
            continue
        lines = (REPO / name).read_text(encoding="utf-8").splitlines()
        for lineno in set(environment_reads(ast.parse("\n".join(lines)))):
            near = lines[max(0, lineno - 4) : lineno]  # the line and the three above it
            assert any(line.strip().startswith("#") or "  # " in line for line in near), (
                f"{name}:{lineno} reads the environment without saying why"
            )


# -- the door --------------------------------------------------------------------------------------
def test_the_door_reads_everything_from_the_environment_it_is_given(tmp_path, capsys):
    env = {
        "COURSE_SECRET": "from-the-environment",
        "AUTOGRADER_WARM_KERNELS": "0",
        "AUTOGRADER_SKIP_DEMOS": "off",
        "AUTOGRADER_WORK_DIR": str(tmp_path / "scratch"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "TMPDIR": str(tmp_path),
    }
    config = config_from_args(Namespace(out=str(tmp_path / "out"), timeout=None), env)
    assert config.secret == "from-the-environment" and capsys.readouterr().err == ""
    assert (config.switches.warm_kernels, config.switches.skip_demos) == (False, False)
    assert config.switches.work_dir == str(tmp_path / "scratch")
    assert config.cache == tmp_path / "cache" / "autograder" and config.tmpdir_set
    assert config.out == (tmp_path / "out").resolve()
    # --secret wins; with neither, the public default and the warning
    assert config_from_args(Namespace(secret="given"), env).secret == "given"
    bare = config_from_args(Namespace(), {})
    assert bare.secret == "course-default-secret" and "COURSE_SECRET" in capsys.readouterr().err
    assert (bare.cache is None) == (cache_root({}) is None) and not bare.tmpdir_set


def test_a_config_cannot_be_written_to():
    config = config_from_args(Namespace(secret="s"), {})
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.secret = "other"  # type: ignore[misc]


@pytest.mark.parametrize("platform", ["standalone", "gradescope"])
def test_timeout_given_means_the_same_on_every_platform(platform):
    """Without --timeout the measured budgets may apply, with it they never do: on Gradescope
    too (its runner builds its Config by the same door)."""
    free = config_from_args(SimpleNamespace(secret="s", timeout=None), {}, platform=platform)
    fixed = config_from_args(SimpleNamespace(secret="s", timeout=60), {}, platform=platform)
    assert free.limits.timeout_given is False and fixed.limits.timeout_given is True
    assert free.limits.derive({NB01: 10.0}) == {NB01: (30.0, 30.0)}
    assert fixed.limits.derive({NB01: 10.0}) == {}


def test_the_sandbox_mode_is_the_option_else_gradescopes_switch():
    env = {"AUTOGRADER_SANDBOX": "none"}
    assert config_from_args(Namespace(secret="s"), env).sandbox_mode == "auto"
    assert config_from_args(Namespace(secret="s", sandbox="bwrap"), env).sandbox_mode == "bwrap"
    on_gradescope = config_from_args(Namespace(secret="s"), env, platform="gradescope")
    assert on_gradescope.sandbox_mode == "none"


def test_the_defaults_of_the_options_and_of_the_zip_are_the_sandboxs(monkeypatch):
    """--memory, Gradescope's memory_gb and the static time budget: Limits' own figures."""
    seen = []
    monkeypatch.setattr("autograder.grading.command.grade_command", seen.append)
    cli.main(["grade", "somewhere"])
    config = config_from_args(seen[0], {"COURSE_SECRET": "s"})
    assert config.limits.memory_bytes == Limits().memory_bytes
    assert config.limits.timeout == Limits().timeout and not config.limits.timeout_given
    assert gradescope.DEFAULTS["memory_gb"] * GB == Limits().memory_bytes
    zipped = gradescope.grading_config(gradescope.DEFAULTS, "s", Path("/nowhere"), {})
    assert zipped.limits == config.limits


def test_a_class_run_never_writes_its_config(tmp_path, monkeypatch):
    stand_in_todo(monkeypatch)
    (tmp_path / "class" / "ada").mkdir(parents=True)
    (tmp_path / "class" / "ada" / f"{NB01}.ipynb").write_text("{}")
    config = Config(out=tmp_path / "out", secret="s", limits=Limits(timeout_given=False))
    before = dataclasses.replace(config, limits=dataclasses.replace(config.limits))
    with Stopping() as stop:
        found = discover(tmp_path / "class", out=config.out, staging=tmp_path / "st")
        classrun._grade_class(found, config, False, stop)
    assert config == before
    assert json.loads((config.out / "ada" / "results.json").read_text())["grading_fingerprint"]


# -- Gradescope grades under the budgets its setup's self-test measured --------------------------
@pytest.fixture
def measured(monkeypatch, tmp_path):
    """The self-test's grading stubbed: the solutions of NB01 cost 10 CPU s, 4 in its cells."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv(selftest.SKIP_ENV, raising=False)
    runs = []

    def run(sandbox, config, workers=2, work_root=None):
        runs.append(sandbox)
        return {
            "scores": {"solutions": [88.5, 88.5], "blank": [0, 88.5]},
            "seconds": 1.0,
            "cpu": {NB01: 10.0},
            "cpu_cells": {NB01: 4.0},
        }

    monkeypatch.setattr(selftest, "run", run)
    return runs


def gradescope_root(root, settings):
    (root / "source").mkdir(parents=True)
    (root / "source" / "settings.json").write_text(json.dumps(settings))
    (root / "source" / "secret").write_text("zip-secret\n")
    (root / "submission").mkdir()
    (root / "submission_metadata.json").write_text(json.dumps({"users": [{"email": "a@b.c"}]}))
    return root


def graded_under(root, monkeypatch):
    """run_autograder on ROOT, the student's grading stubbed: (the sandbox's limits, the
    Config's limits) it graded under."""
    seen = {}

    def grade_student(student, folder, config, sandbox, *args, **kwargs):
        seen["sandbox"], seen["config"] = sandbox.limits, config.limits
        payload = {"score": 0.0, "max_score": 0.0, "tests": [], "notebooks": {}}
        return student_module.StudentResult(student, payload)

    monkeypatch.setattr(student_module, "grade_student", grade_student)
    assert gradescope.run_autograder(root) == 0
    return seen["sandbox"], seen["config"]


def test_run_autograder_grades_under_the_budgets_setups_self_test_measured(
    measured, monkeypatch, tmp_path
):
    monkeypatch.setenv("AUTOGRADER_SANDBOX", "none")  # no bubblewrap in a test run
    settings = dict(gradescope.DEFAULTS)
    # setup.sh's own command: `selftest --platform gradescope` with the zip's limits
    argv = ["selftest", "--platform", "gradescope", "--sandbox", "none"]
    assert cli.main(argv + gradescope.selftest_options(settings)) == 0
    assert len(measured) == 1
    sandbox_limits, config_limits = graded_under(
        gradescope_root(tmp_path / "r1", settings), monkeypatch
    )
    assert len(measured) == 1  # read from the record, not run again
    # 3x the measured 4 s of cells and 6 s of tests
    assert sandbox_limits.notebook_budgets(NB01, {"a": 100.0}) == (12.0, 18.0)
    assert config_limits.measured == {} and config_limits.timeout_given is False
    # the control: a zip with --timeout grades under it, whatever was measured
    fixed = {**settings, "timeout": 60.0}
    sandbox_limits, _ = graded_under(gradescope_root(tmp_path / "r2", fixed), monkeypatch)
    assert sandbox_limits.notebook_budgets(NB01, {"a": 100.0}) == (60.0, 60.0)


def test_without_a_record_run_autograder_grades_under_the_static_budget(
    measured, monkeypatch, tmp_path
):
    monkeypatch.setenv("AUTOGRADER_SANDBOX", "none")
    root = gradescope_root(tmp_path / "r", dict(gradescope.DEFAULTS))
    sandbox_limits, _ = graded_under(root, monkeypatch)
    assert measured == []  # never run per submission
    budget = Limits().timeout
    assert sandbox_limits.notebook_budgets(NB01, {"a": 1000.0}) == (budget, budget)


# -- one chooser of the sandbox --------------------------------------------------------------------
@pytest.mark.parametrize(
    ("platform", "mode", "root", "tried"),
    [
        ("standalone", "bwrap", True, ("bwrap",)),
        ("standalone", "auto", True, ("bwrap", "none")),
        ("standalone", "auto", False, ("bwrap", "none")),
        ("standalone", "none", True, ("none",)),
        ("gradescope", "bwrap", True, ("bwrap",)),
        ("gradescope", "auto", True, ("bwrap", "student-user")),
        ("gradescope", "none", True, ("student-user",)),
        ("gradescope", "auto", False, ("bwrap", "none")),
        ("gradescope", "none", False, ("none",)),
    ],
)
def test_the_kinds_tried(platform, mode, root, tried):
    assert sandboxes.kinds(platform, mode, root) == tried


class Made:
    """Stands in for the sandbox classes: records how each was made; bubblewrap fails here."""

    made: list = []

    def __init__(self, limits, *args, mode="none", **options):
        if mode == "bwrap":
            raise RuntimeError("bubblewrap (bwrap) cannot create namespaces")
        self.limits, self.mode, self.args, self.options = limits, mode, args, options
        Made.made.append(self)


class MadeStudentUser(Made):
    def __init__(self, limits, user, **options):
        super().__init__(limits, user, mode="student-user", **options)


@pytest.fixture
def stand_ins(monkeypatch):
    Made.made = []
    monkeypatch.setattr(sandboxes, "Sandbox", Made)
    monkeypatch.setattr(sandboxes, "StudentUserSandbox", MadeStudentUser)
    monkeypatch.setattr(sandboxes, "course_files", lambda: "the course")


def test_the_chooser_hands_the_sandbox_the_configs_switches_and_a_copy_of_its_limits(stand_ins):
    env = {"AUTOGRADER_WARM_KERNELS": "0", "AUTOGRADER_CGROUPS": "no", "XDG_CACHE_HOME": "/c"}
    config = config_from_args(Namespace(secret="s", memory=2), env)
    box = sandboxes.open_sandbox(config, lib_root=Path("/lib"))
    assert box.mode == "none" and Made.made == [box]  # auto: bubblewrap failed, then none
    assert box.options == {
        "lib_root": Path("/lib"),
        "course": "the course",
        "warm": False,
        "userns": True,
        "cgroups": False,
        "cache": Path("/c/autograder"),
    }
    assert box.limits == config.limits and box.limits is not config.limits


def test_on_gradescope_as_root_the_student_user_of_the_switch_grades(stand_ins, monkeypatch):
    monkeypatch.setattr(sandboxes.os, "geteuid", lambda: 0)
    env = {"AUTOGRADER_STUDENT_USER": "learner"}
    config = config_from_args(Namespace(secret="s"), env, platform="gradescope")
    box = sandboxes.open_sandbox(config)
    assert (box.mode, box.args) == ("student-user", ("learner",))
    asked = dataclasses.replace(config, sandbox_mode="bwrap")  # asked for: never a fall back
    with pytest.raises(RuntimeError, match="bubblewrap"):
        sandboxes.open_sandbox(asked)


def test_a_bubblewrap_too_old_is_never_fallen_back_from(stand_ins, monkeypatch):
    def too_old(*args, **kwargs):
        raise BubblewrapUnsupported("bubblewrap 0.4.0 lacks --perms")

    monkeypatch.setattr(sandboxes, "Sandbox", too_old)
    for platform in ("standalone", "gradescope"):
        with pytest.raises(BubblewrapUnsupported):
            sandboxes.open_sandbox(Config(platform=platform))


def test_no_module_but_the_chooser_makes_a_sandbox():
    """Sandbox(...) and StudentUserSandbox(...) are made in grading/sandboxes.py alone (the
    sandbox package itself aside)."""
    makers = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        if "sandbox" in path.relative_to(PACKAGE).parts[:1]:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name | ast.Attribute):
                name = node.func.id if isinstance(node.func, ast.Name) else node.func.attr
                if name in ("Sandbox", "StudentUserSandbox"):
                    makers.add(path.relative_to(REPO).as_posix())
    assert makers == {"autograder/grading/sandboxes.py"}


# -- the handout ---------------------------------------------------------------------------------
def test_the_handout_lists_each_file_it_ships_once():
    matched = [p for pattern in SHIPPED for p in sorted(PACKAGE.glob(pattern))]
    assert len(SHIPPED) == len(set(SHIPPED))
    assert matched and len(matched) == len(set(matched)), sorted(
        p for p in set(matched) if matched.count(p) > 1
    )
    assert all(any(PACKAGE.glob(pattern)) for pattern in SHIPPED)  # none names nothing
