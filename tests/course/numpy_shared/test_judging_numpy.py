"""The NumPy notebooks' cases judged from stored data alone, exactly as the live cases judge.

The probes of notebooks 01-04 build each case with the model answers and the known-wrong
variants, and keep what those return in the case's Judgement; the judges
(autograder/course/numpy_shared/judges*.py, each notebook folder's judges.py) decide from that
data. So the visible checks' cases can be stored
(judging.store) and judged where neither the model answers nor the probes are installed. This
file checks that every visible case is storable, that a stored case gives every answer of the
catalogues in test_probes_numpy.py and test_diagnosis_numpy.py (the reference, the wrong answers,
the right alternatives, the odd return values) the very TestResult the live case gives, and that the judging package never
imports the model answers, the probes or the variants.
"""

import ast
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest
from numpy_diagnosis_mutants import MUTANTS as DIAGNOSED
from numpy_mutants import CORRECT, MUTANTS, NAMES, NUMPY_STEMS, WEIRD

from autograder.checks import VISIBLE_SEED, run_in_process
from autograder.course import model_answers as R
from autograder.course.probes import build_cases
from autograder.curriculum import NOTEBOOK_OF, NOTEBOOKS
from autograder.harness import serve
from autograder.judging import Judgement
from autograder.judging.answers import judge_cases
from autograder.judging.store import load_cases, request_dir, save_cases

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the mutants overflow on purpose

ROOT = Path(__file__).resolve().parents[3]
JUDGING = ROOT / "autograder" / "judging"
# What the student handout does not have: the model answers, the probes, the variants.
FORBIDDEN = (
    "autograder.course.model_answers",
    "autograder.course.probes",
    "autograder.course.n05_transformer_block.variants",
    *(
        f"autograder.course.{folder}.{kind}"
        for folder in ("numpy_shared", *(nb.package for nb in NOTEBOOKS if nb.framework == "numpy"))
        for kind in ("reference", "cases", "variants")
    ),
)
# The one import of a forbidden module allowed in judging/: save_cases writes the requests with
# the probes' writer, on the instructor's side (it is never called where cases are loaded).
INSTRUCTOR_ONLY = {("store.py", "save_cases", "autograder.course.probes")}


def _stub(*args, **kwargs):
    raise NotImplementedError()


ANSWERS = [
    pytest.param(name, answer, fn, id=f"{name}-{answer}")
    for name, answer, fn in (
        [(name, "reference", getattr(R, name)) for name in NAMES]
        + [(name, "stub", _stub) for name in NAMES]
    )
] + [  # the whole catalogue: minutes of CPU (`pytest -m "not slow"` keeps the two above)
    pytest.param(name, answer, fn, id=f"{name}-{answer}", marks=pytest.mark.slow)
    for name, answer, fn in (
        [(name, f"{m}-{i}", fn) for i, (m, name, fn) in enumerate(MUTANTS)]
        + [(name, f"right-{i}", fn) for i, (name, fn) in enumerate(CORRECT)]
        + [(name, f"diagnosed-{fn.__name__}-{i}", fn) for i, (name, _, fn) in enumerate(DIAGNOSED)]
        + [(name, f"returns {what}", fn) for name in NAMES for what, fn in WEIRD.items()]
    )
]


@pytest.fixture(scope="module")
def stored():
    """The visible cases of every NumPy graded name, saved once: {name: folder}."""
    with tempfile.TemporaryDirectory(prefix="judging-numpy-", dir=_scratch()) as tmp:
        folders = {}
        for name in NAMES:
            folders[name] = Path(tmp, name)
            save_cases(build_cases(NOTEBOOK_OF[name].stem, VISIBLE_SEED, {name}), folders[name])
        yield folders


def _scratch():
    return "/dev/shm" if os.access("/dev/shm", os.W_OK) else None


def judged_from_store(folder, name, fn):
    """The TestResults of `fn` on the stored cases: no probe, no reference involved."""
    with tempfile.TemporaryDirectory(prefix="judging-numpy-", dir=_scratch()) as tmp:
        serve({name: fn}, request_dir(folder, name), Path(tmp, name))
        return judge_cases(load_cases(folder, name), tmp)


def _fields(results):
    return [dataclasses.asdict(r) for r in results]


@pytest.mark.parametrize("stem", NUMPY_STEMS)
def test_every_visible_case_is_a_judgement_of_plain_data(stem, tmp_path):
    cases = build_cases(stem, VISIBLE_SEED)
    assert cases and all(isinstance(case.judge, Judgement) for case in cases)
    assert all(case.judge.name.startswith("numpy_judges.") for case in cases)
    save_cases(cases, tmp_path)  # raises NotStorable for a closure or an object in the data
    for function in dict.fromkeys(case.function for case in cases):
        own = [case for case in cases if case.function == function]
        loaded = load_cases(tmp_path, function)
        assert [(c.name, c.points, len(c.requests), c.judge.name) for c in loaded] == [
            (c.name, c.points, len(c.requests), c.judge.name) for c in own
        ]


@pytest.mark.parametrize("name, answer, fn", ANSWERS)
def test_stored_cases_judge_like_the_live_ones(stored, name, answer, fn):
    live = run_in_process(name, fn)
    assert _fields(judged_from_store(stored[name], name, fn)) == _fields(live)


def test_a_stored_case_tells_a_mistake_from_a_right_answer(stored):
    """The equality above is not vacuous: stored cases pass the reference, name a mistake."""
    right = judged_from_store(stored["causal_mask"], "causal_mask", R.causal_mask)
    assert all(r.score == r.max_score for r in right)
    wrong = judged_from_store(
        stored["causal_mask"], "causal_mask", lambda n: np.triu(np.ones((n, n), dtype=bool), k=1)
    )
    assert wrong[0].score == 0 and wrong[0].misconceptions == ["mask-inverted"]


# ------------------------------------------------------------------ the import boundary


def _imports(path):
    """(enclosing function or '', absolute module name) of every import in one judging module."""
    tree = ast.parse(path.read_text())
    found = []

    def visit(node, function):
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, ast.FunctionDef) else function
            if isinstance(child, ast.Import):
                found.extend((function, alias.name) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:  # relative to autograder.judging
                    package = ["autograder", "judging"][: 3 - child.level]
                    base = ".".join(package + ([base] if base else []))
                found.extend((function, f"{base}.{alias.name}") for alias in child.names)
                found.append((function, base))
            visit(child, inner)

    visit(tree, "")
    return found


def _instructor_only(filename, function, module):
    return any(
        (filename, function) == (f, fn) and (module == m or module.startswith(m + "."))
        for f, fn, m in INSTRUCTOR_ONLY
    )


def test_judging_modules_import_no_model_answer_probe_or_variant():
    modules = sorted(JUDGING.glob("*.py"))
    assert {"compare.py", "store.py"} <= {p.name for p in modules}
    bad = [
        (path.name, function, module)
        for path in modules
        for function, module in _imports(path)
        if module.startswith(FORBIDDEN) and not _instructor_only(path.name, function, module)
    ]
    assert bad == []


def test_a_course_folders_judges_import_no_model_answer_case_or_variant():
    """autograder/course/<folder>/judges.py is the one file of its folder the handout ships: it
    imports neither its folder's reference, cases or variants, nor what judging/ may not."""
    paths = sorted((ROOT / "autograder" / "course").glob("*/judges*.py"))
    assert paths, "no notebook folder with judges"
    for path in paths:
        own = tuple(f"autograder.course.{path.parent.name}.{m}" for m in ("reference", "cases", "variants"))  # fmt: skip
        tree = ast.parse(path.read_text())
        assert not [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level]
        bad = [m for _, m in _imports(path) if m.startswith(FORBIDDEN + own)]
        assert bad == [], path


def test_the_import_scan_sees_a_forbidden_import(tmp_path):
    planted = tmp_path / "planted.py"
    planted.write_text(
        "def judge(r):\n    from ..course.model_answers import softmax\n    return softmax\n"
        "import autograder.course.n03_matrix_attention.variants as nv\n"
    )
    modules = {module for _, module in _imports(planted)}
    assert "autograder.course.model_answers.softmax" in modules
    assert "autograder.course.n03_matrix_attention.variants" in modules


# A student's answer with a typical mistake, run on both sides.
MASK_AFTER_SOFTMAX = """
def mask_after_softmax(Q, K, V, mask=None):
    S = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    e = np.exp(S - S.max(axis=-1, keepdims=True))
    A = e / e.sum(axis=-1, keepdims=True)
    if mask is not None:
        A = A * mask
    return A @ V, A
"""

STUDENT_SIDE = """
import importlib.abc, json, sys

FORBIDDEN = {forbidden!r}

class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.startswith(FORBIDDEN):
            raise ImportError(f"{{name}} is not in the handout")
        return None

sys.meta_path.insert(0, Block())

import numpy as np
from autograder.harness import serve
from autograder.judging.answers import judge_cases
from autograder.judging.store import load_cases, request_dir

{answer}
folder, responses = sys.argv[1], sys.argv[2]
name = "scaled_dot_product_attention"
serve({{name: mask_after_softmax}}, request_dir(folder, name), responses + "/" + name)
results = judge_cases(load_cases(folder, name), responses)
assert not [m for m in sys.modules if m.startswith(FORBIDDEN)]
assert "autograder.course.numpy_shared.judges" in sys.modules  # found by the stored name
print(json.dumps([[r.name, r.score, r.output, r.misconceptions] for r in results]))
"""


def test_stored_cases_are_judged_with_the_model_answers_and_probes_out_of_reach(stored, tmp_path):
    """In a process where importing a model answer, a probe or a variant fails, as on a student's
    machine, the stored cases judge a wrong answer exactly as the live cases do."""
    name = "scaled_dot_product_attention"
    script = STUDENT_SIDE.format(forbidden=FORBIDDEN, answer=MASK_AFTER_SOFTMAX)
    out = subprocess.run(
        [sys.executable, "-c", script, str(stored[name]), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert out.returncode == 0, out.stderr

    namespace = {"np": np}
    exec(MASK_AFTER_SOFTMAX, namespace)
    live = run_in_process(name, namespace["mask_after_softmax"])
    got = json.loads(out.stdout)
    assert got == [[r.name, r.score, r.output, r.misconceptions] for r in live]
    assert any("mask-after-softmax" in ids for *_, ids in got)
