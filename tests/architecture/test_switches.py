"""One door for the grader's switches: every AUTOGRADER_* environment variable is read by
autograder/switches.py alone, and its yes/no values by one parser."""

import ast
from pathlib import Path

import pytest

from autograder.switches import flag, switches

PACKAGE = Path(__file__).resolve().parents[2] / "autograder"


def _switch_reads(tree):
    """Lines that look a variable AUTOGRADER_* up in a mapping (os.environ.get(...), environ[...],
    os.getenv(...), "AUTOGRADER_X" in os.environ), by its text or by a name bound to that text."""
    names = {
        target.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and _is_switch(node.value)
        for target in node.targets
        if isinstance(target, ast.Name)
    }

    def switch(node):
        return _is_switch(node) or (isinstance(node, ast.Name) and node.id in names)

    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args and switch(node.args[0]):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in (
                "get",
                "getenv",
                "pop",
                "setdefault",
            ):
                yield node.lineno
        elif isinstance(node, ast.Subscript) and switch(node.slice):
            yield node.lineno
        elif isinstance(node, ast.Compare) and switch(node.left):
            if any(isinstance(op, ast.In | ast.NotIn) for op in node.ops):
                yield node.lineno


def _is_switch(node):
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value.startswith("AUTOGRADER_")
    )


def test_no_module_but_switches_reads_an_autograder_variable():
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "switches.py" and path.parent == PACKAGE:
            continue
        lines = sorted(set(_switch_reads(ast.parse(path.read_text(encoding="utf-8")))))
        if lines:
            offenders.append(f"{path.relative_to(PACKAGE.parent)}: lines {lines}")
    assert not offenders, "AUTOGRADER_* read outside autograder/switches.py:\n" + "\n".join(
        offenders
    )


def test_the_finder_sees_each_way_of_reading_a_switch():
    code = (
        'NAME = "AUTOGRADER_X"\n'
        "a = os.environ.get(NAME)\n"
        'b = os.environ["AUTOGRADER_Y"]\n'
        'c = "AUTOGRADER_Z" in os.environ\n'
        'd = (environ or os.environ).get("AUTOGRADER_W", "1")\n'
        'e = os.getenv("AUTOGRADER_V")\n'
        'f = print("AUTOGRADER_U")\n'
    )
    assert sorted(set(_switch_reads(ast.parse(code)))) == [2, 3, 4, 5, 6]


@pytest.mark.parametrize("text", ["1", "true", "YES", " on "])
def test_yes(text):
    assert flag(text, False) is True


@pytest.mark.parametrize("text", ["0", "false", "No", "off "])
def test_no(text):
    assert flag(text, True) is False


@pytest.mark.parametrize("text", [None, "", "maybe"])
def test_anything_else_is_the_default(text):
    assert flag(text, True) is True
    assert flag(text, False) is False


def test_the_switches_and_their_defaults():
    assert switches({}) == switches({"PATH": "/bin"})
    default = switches({})
    assert (default.skip_selftest, default.skip_demos, default.warm_kernels) == (False, True, True)
    assert (default.userns, default.cgroups, default.work_dir) == (True, True, "")
    off = switches(
        {
            "AUTOGRADER_SKIP_SELFTEST": "1",
            "AUTOGRADER_SKIP_DEMOS": "0",
            "AUTOGRADER_WARM_KERNELS": "off",
            "AUTOGRADER_USERNS": "no",
            "AUTOGRADER_CGROUPS": "false",
            "AUTOGRADER_WORK_DIR": "/scratch",
            "AUTOGRADER_SANDBOX": "none",
        }
    )
    assert (off.skip_selftest, off.skip_demos, off.warm_kernels) == (True, False, False)
    assert (off.userns, off.cgroups, off.work_dir, off.sandbox) == (
        False,
        False,
        "/scratch",
        "none",
    )
    assert off.text("AUTOGRADER_SKIP_SELFTEST") == "1"


def test_the_driver_never_reads_the_environment_for_a_switch():
    """The sandbox does not carry the grader's environment: the driver gets its job.json."""
    text = (PACKAGE / "sandbox" / "inside" / "driver.py").read_text(encoding="utf-8")
    assert "AUTOGRADER_" not in text.replace("(AUTOGRADER_WARM_KERNELS)", "")
