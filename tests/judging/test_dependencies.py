"""Later notebooks use the student's own earlier ones (03 and 04 import 02's softmax, 06 imports
05's blocks): when the earlier notebook is missing, misnamed or unreadable, their tests say
"your notebook 02 is missing" (reason dependency-missing, naming the notebook), in the grader's
results, feedback page, Gradescope summary and class page, and in the visible checks of the
student's own kernel. The grader's answers here are real ones, served by the harness in this
process from student code whose softmax is coursedata's placeholder (no sandbox run)."""

import ast
import importlib
import io
import json
import types
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from autograder import checks
from autograder.course.n03_matrix_attention import reference as matrix_attention
from autograder.course.probes import build_cases
from autograder.curriculum import BY_STEM
from autograder.grading.payload import build_results
from autograder.grading.plan import NotebookPlan
from autograder.grading.student import judge
from autograder.harness import serve
from autograder.judging.base import write_requests
from autograder.judging.dependencies import (
    IMPORTS,
    Unavailable,
    culprit,
    kernel_unavailable,
    unavailable_names,
)
from autograder.platforms.gradescope import notebook_summary
from autograder.report import SavedResult
from autograder.report.class_page import class_data
from autograder.report.feedback import feedback_context
from autograder.results import (
    CORRUPT,
    DEPENDENCY_MISSING,
    DEPENDENCY_NOT_IMPLEMENTED,
    MISSING_NOTEBOOK,
    PASSED,
)
from autograder.sandbox import NotebookJob, NotebookRun

REPO = Path(__file__).resolve().parents[2]
SOFTMAX_02 = "02_dot_product_softmax"
ATTENTION_03 = "03_matrix_attention"


# -- the course's import cells, read from the solutions --------------------------------------
def _literal(node, assigned):
    """A literal of the import cell, its names resolved ({"05_...ipynb": blocks_05})."""
    if isinstance(node, ast.Name):
        return assigned[node.id]
    if isinstance(node, ast.Dict):
        return {
            _literal(k, assigned): _literal(v, assigned)
            for k, v in zip(node.keys, node.values, strict=True)
        }
    return ast.literal_eval(node)


def imports_in_solutions():
    """{notebook: {earlier notebook: names}} from every import_earlier / import_definitions call
    in the graded notebooks' solutions (names given inline or as a list assigned before)."""
    found = {}
    for stem in BY_STEM:
        nb = json.loads((REPO / "solutions" / f"{stem}.ipynb").read_text())
        assigned = {}
        for cell in nb["cells"]:
            if cell["cell_type"] != "code":
                continue
            source = "".join(cell["source"])
            source = "\n".join(line for line in source.splitlines() if not line.startswith("%"))
            for node in ast.walk(ast.parse(source)):
                if isinstance(node, ast.Assign) and isinstance(node.value, ast.List):
                    for target in node.targets:
                        try:  # lists of names (blocks_05 = [...]); other lists are not ours
                            value = ast.literal_eval(node.value)
                        except ValueError:
                            continue
                        if isinstance(target, ast.Name):
                            assigned[target.id] = value
                if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
                    continue
                if node.func.id == "import_earlier":
                    for notebook, names in _literal(node.args[0], assigned).items():
                        found.setdefault(stem, {})[notebook[: -len(".ipynb")]] = set(names)
                elif node.func.id == "import_definitions":
                    notebook = _literal(node.args[0], assigned)
                    names = _literal(node.args[1], assigned)
                    found.setdefault(stem, {})[notebook[: -len(".ipynb")]] = set(names)
    return found


def test_the_dependency_table_is_the_solutions_import_cells():
    declared = {stem: {e: set(n) for e, n in deps.items()} for stem, deps in IMPORTS.items()}
    assert declared == imports_in_solutions()
    assert "02_dot_product_softmax" in declared["03_matrix_attention"]  # not vacuous


def test_the_names_a_notebook_takes_from_an_unavailable_one():
    names = unavailable_names("04_multihead_attention", {SOFTMAX_02: MISSING_NOTEBOOK})
    assert names == {"softmax": Unavailable(SOFTMAX_02, MISSING_NOTEBOOK)}
    assert unavailable_names("02_dot_product_softmax", {SOFTMAX_02: MISSING_NOTEBOOK}) == {}
    assert unavailable_names("06_autoregressive_lm", {SOFTMAX_02: MISSING_NOTEBOOK}) == {}


def test_the_culprit_is_read_from_the_structured_error_only():
    names = unavailable_names("06_autoregressive_lm", {"05_transformer_block": CORRUPT})
    stub = {"error": {"type": "NotImplementedError", "message": "x", "where": ["line 3 in GPT.__init__", "line 2 in TransformerBlock"]}}  # fmt: skip
    undefined = {"steps": [{"error": {"type": "NameError", "message": "", "name": "LayerNorm"}}]}
    words = {"error": {"type": "NameError", "message": "name 'LayerNorm' is not defined"}}
    own = {"error": {"type": "NotImplementedError", "message": "", "where": ["line 1 in GPT"]}}
    assert culprit([stub], names) == "TransformerBlock"
    assert culprit([{"value": 1}, undefined], names) == "LayerNorm"
    assert culprit([words], names) is None  # the message's text is never read
    assert culprit([own], names) is None
    assert culprit([{"error": {"type": "NameError", "name": ["LayerNorm"]}}], names) is None


def test_the_harness_reports_a_name_errors_name_as_data():
    try:
        eval("TransformerBlock")  # noqa: S307 - a NameError, as a student's GPT raises it
    except NameError as exc:
        error = importlib.import_module("autograder.harness.serve")._error(exc)
    assert error["type"] == "NameError" and error["name"] == "TransformerBlock"


# -- the grader: notebook 02 missing, 03 present ----------------------------------------------
def placeholder_softmax(tmp_path, monkeypatch, content=None):
    """coursedata.import_earlier's softmax in a folder without (or with a broken) notebook 02."""
    from coursedata import import_earlier

    monkeypatch.chdir(tmp_path)
    if content is not None:
        (tmp_path / f"{SOFTMAX_02}.ipynb").write_text(content)
    with redirect_stdout(io.StringIO()):
        return import_earlier({f"{SOFTMAX_02}.ipynb": ["softmax"]})["softmax"]


def student_03(softmax):
    """Notebook 03 as a student finished it, but its softmax is the one from the import cell."""
    space = dict(vars(matrix_attention), softmax=softmax)  # the notebook's globals
    mine = {}
    for name in BY_STEM[ATTENTION_03].graded:
        model = getattr(matrix_attention, name)
        mine[name] = types.FunctionType(model.__code__, space, name, model.__defaults__)
    space.update(mine)  # self_attention calls this notebook's scaled_dot_product_attention
    return mine


def served_run(tmp_path, stem, namespace, cases):
    """A NotebookRun whose answers the harness wrote, in this process, as the sandbox would."""
    requests, root = tmp_path / "requests" / stem, tmp_path / "work" / "run" / "responses"
    functions = write_requests(cases, requests)
    for function in functions:
        serve(namespace, requests / function, root / stem / function)
    return NotebookRun(stem, executed_ok=True, responses=root / stem)


@pytest.fixture
def missing_02(tmp_path, monkeypatch):
    """The payload of a student whose 02 is missing and whose 03 is finished."""
    softmax = placeholder_softmax(tmp_path, monkeypatch)
    missing = build_cases(SOFTMAX_02, 7)
    present = build_cases(ATTENTION_03, 7)
    note = f"{SOFTMAX_02}.ipynb was not found in your submission, so its tests score 0."
    plans = [
        NotebookPlan(BY_STEM[SOFTMAX_02], missing, None, note, note, False, MISSING_NOTEBOOK),
        NotebookPlan(
            BY_STEM[ATTENTION_03], present, NotebookJob(ATTENTION_03, "", Path(), {}), None, ""
        ),
    ]
    runs = {ATTENTION_03: served_run(tmp_path, ATTENTION_03, student_03(softmax), present)}
    tests, notebooks = judge(plans, runs, {}, tmp_path / "work")
    return build_results("sam", tests, notebooks, 1.0)


def test_tests_that_need_the_missing_notebook_say_so(missing_02):
    tests = [t for t in missing_02["tests"] if t["notebook"] == ATTENTION_03]
    by_function = {}
    for t in tests:
        by_function.setdefault(t["function"], set()).add(t["reason"])
    # attention_scores and causal_mask never call softmax: they are graded as they are
    assert by_function["attention_scores"] == {PASSED} and by_function["causal_mask"] == {PASSED}
    for function in ("scaled_dot_product_attention", "self_attention"):
        assert by_function[function] == {DEPENDENCY_MISSING}, function
    waiting = [t for t in tests if t["reason"] == DEPENDENCY_MISSING]
    assert {t["depends_on"] for t in waiting} == {SOFTMAX_02}
    assert all(t["score"] == 0 and t["misconceptions"] == [] for t in waiting)
    assert "Your notebook 02 (02_dot_product_softmax.ipynb) is missing" in waiting[0]["output"]
    assert "not implemented" not in waiting[0]["output"]
    assert all("depends_on" not in t for t in tests if t["reason"] != DEPENDENCY_MISSING)


def test_without_knowing_02_is_missing_the_same_answers_are_not_implemented(tmp_path, monkeypatch):
    """The control: the same answers, judged without the plans' knowledge, blame the stub."""
    softmax = placeholder_softmax(tmp_path, monkeypatch)
    results = checks.run_in_process(
        "scaled_dot_product_attention", student_03(softmax)["scaled_dot_product_attention"]
    )
    assert {r.reason for r in results} == {DEPENDENCY_NOT_IMPLEMENTED}


def test_the_feedback_page_gradescope_and_the_class_page_name_the_missing_notebook(missing_02):
    context = feedback_context(missing_02, sections={})
    fix = {f["notebook"]: f for f in context["fix_first"]}
    assert "Your notebook 02" in fix[ATTENTION_03]["hint"]
    row = {n["stem"]: n for n in context["notebooks"]}[ATTENTION_03]
    assert row["waits_for"] == ["02_dot_product_softmax.ipynb"]
    lines = {line.split(":")[0]: line for line in notebook_summary(missing_02, {SOFTMAX_02})}
    assert lines[SOFTMAX_02].endswith("not submitted")
    assert "waits for your notebook 02" in lines[ATTENTION_03]
    entry = class_data([SavedResult("sam", missing_02)])["help_first"][0]
    assert "02 missing (03 uses it)" in entry["reasons"]


# -- the visible checks, in the student's own kernel -----------------------------------------
def run_check(namespace, function):
    """check() as a notebook cell calls it: the caller's globals are the notebook's."""
    out = io.StringIO()
    with redirect_stdout(out):
        exec(f"check({function!r}, {function})", {"check": checks.check, **namespace})  # noqa: S102
    return out.getvalue()


def test_a_check_in_notebook_03_says_notebook_02_is_not_next_to_it(tmp_path, monkeypatch):
    softmax = placeholder_softmax(tmp_path, monkeypatch)
    space = {"softmax": softmax, **student_03(softmax)}
    text = run_check(space, "scaled_dot_product_attention")
    assert "Your notebook 02 (02_dot_product_softmax.ipynb) is not next to this notebook" in text
    assert "not implemented" not in text
    assert run_check(space, "causal_mask").startswith("✓")


def test_a_check_in_notebook_03_says_a_broken_notebook_02_cannot_be_read(tmp_path, monkeypatch):
    softmax = placeholder_softmax(tmp_path, monkeypatch, content="{ not json")
    assert softmax.course_unavailable["why"] == "unreadable"
    text = run_check({"softmax": softmax, **student_03(softmax)}, "self_attention")
    assert "could not be read as a notebook" in text


def test_the_kernel_knows_a_name_never_defined_when_its_notebook_is_absent():
    names = kernel_unavailable("06_autoregressive_lm", {}, exists=lambda name: False)
    assert names["TransformerBlock"].notebook == "05_transformer_block"
    assert names["TransformerBlock"].reason == MISSING_NOTEBOOK
    assert kernel_unavailable("06_autoregressive_lm", {}, exists=lambda name: True) == {}


def test_the_check_report_gives_the_dependency_message_as_it_is():
    from autograder.results import TestResult

    text = "Your notebook 02 (02_dot_product_softmax.ipynb) is not next to this notebook"
    failed = TestResult("self_attention: c", 0.0, 1.0, text, ATTENTION_03, "self_attention",
                        reason=DEPENDENCY_MISSING, depends_on=SOFTMAX_02)  # fmt: skip
    assert checks.report("self_attention", [failed]) == f"… {text}"
    assert failed.to_json()["depends_on"] == SOFTMAX_02
    assert TestResult.from_json(failed.to_json()) == failed
