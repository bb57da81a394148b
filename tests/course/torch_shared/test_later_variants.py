"""The known-wrong variants' outputs wait until a judge reads them (autograder.judging.later).

What they hold must not depend on when they are worked out: each PyTorch notebook's cases are
built twice for a few students, once as the grader builds them (variants left to wait, worked
out after the whole notebook's cases were built) and once with every variant worked out the
moment its case is built (as before they waited), and every judge's data must be the same.
A right answer never needs them, so judging one leaves them waiting; a wrong one gets its
mistake named from them.
"""

import tempfile
from pathlib import Path

import numpy as np
import pytest
import real_models_mutants as mutants

from autograder.course.n08_real_models import reference as ref
from autograder.course.probes import build_cases
from autograder.harness.serve import serve
from autograder.judging import later as later_module
from autograder.judging.answers import judge_cases
from autograder.judging.base import write_requests
from autograder.judging.later import Later, resolved

pytestmark = pytest.mark.usefixtures("one_thread")

STEMS = ("05_transformer_block", "06_autoregressive_lm", "07_modern_lm", "08_real_models")
SEEDS = ("later-student-a", "later-student-b", "later-student-c")


def _same(a, b, where):
    if isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), where
        for key in a:
            _same(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, list | tuple):
        assert isinstance(b, list | tuple) and len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _same(x, y, f"{where}[{i}]")
    elif isinstance(a, np.ndarray) or hasattr(a, "detach"):
        a, b = np.asarray(a), np.asarray(b)
        assert a.shape == b.shape and np.array_equal(a, b, equal_nan=True), where
    else:
        assert a == b or (a != a and b != b), where  # NaN equals NaN here


def _eager(monkeypatch):
    """Later worked out the moment it is made."""
    made = later_module.Later.__init__

    def at_once(self, work, *args):
        made(self, work, *args)
        self.value  # noqa: B018 - reading it works it out

    monkeypatch.setattr(later_module.Later, "__init__", at_once)


def _waiting(cases):
    return [
        (case.function, case.name, key)
        for case in cases
        for key, value in getattr(case.judge, "params", {}).items()
        if isinstance(value, Later)
    ]


@pytest.mark.slow  # builds four notebooks' cases six times
@pytest.mark.parametrize("stem", STEMS)
def test_variants_worked_out_late_equal_those_worked_out_at_once(stem, monkeypatch):
    waited = 0
    for seed in SEEDS:
        late = build_cases(stem, seed)
        waited += len(_waiting(late))
        late_params = [resolved(case.judge.params) for case in late]  # after the whole build
        with monkeypatch.context() as patch:
            _eager(patch)
            early = build_cases(stem, seed)
        assert [(c.function, c.name) for c in early] == [(c.function, c.name) for c in late]
        for case, params in zip(early, late_params, strict=True):
            _same(resolved(case.judge.params), params, f"{seed}: {case.function}: {case.name}")
    assert waited > 0  # this notebook has variants that wait


def test_a_later_is_worked_out_once_on_first_read():
    calls = []

    def work(a, b):
        calls.append((a, b))
        return [("id", a + b)]

    waiting = Later(work, 1, 2)
    assert calls == [] and not waiting.done
    assert list(waiting) == [("id", 3)] and len(waiting) == 1 and waiting[0] == ("id", 3)
    assert waiting == [("id", 3)] and waiting + [("x", 0)] == [("id", 3), ("x", 0)]
    assert calls == [(1, 2)] and waiting.done
    nested = {"blocks": [{"variants": Later(lambda: [("a", np.zeros(2))])}], "n": 1}
    plain = resolved(nested)
    assert type(plain["blocks"][0]["variants"]) is list and plain["n"] == 1


def _graded(name, obj, seed):
    """(cases, TestResults) of one graded name as the grader judges them: cases built here,
    answers from the harness (here in this process, as the visible check runs them)."""
    cases = build_cases("08_real_models", seed, functions={name})
    with tempfile.TemporaryDirectory() as tmp:
        write_requests(cases, Path(tmp, "requests"))
        namespace = {**mutants.NAMESPACE.get(name, {}), name: obj}
        serve(namespace, Path(tmp, "requests", name), Path(tmp, "responses", name))
        return cases, judge_cases(cases, Path(tmp, "responses"))


def _variants(cases):
    return [
        value for case in cases for value in case.judge.params.values() if isinstance(value, Later)
    ]


def test_a_right_answer_leaves_the_variants_waiting_and_a_wrong_one_is_named():
    cases, results = _graded("Llama", ref.Llama, "later-judging")
    assert results and all(r.status == "passed" for r in results)
    assert _variants(cases) and not any(v.done for v in _variants(cases))
    cases, results = _graded("Llama", mutants.LlamaBaseNotPassed, "later-judging")
    named = {i for r in results for i in r.misconceptions}
    assert named == {"rope-base-ignored"}, [r.output for r in results]
    assert any(v.done for v in _variants(cases))
