"""A test's state is a field, set where the verdict is made (autograder/results.py lists the
reasons): the checks, the feedback page and the class page read it, never the message's words."""

import ast
from pathlib import Path

import pytest

from autograder.checks import report
from autograder.judging import Judgement
from autograder.judging.answers import judge_cases
from autograder.judging.base import Case, Fail, Response, judgement, verdict
from autograder.report.feedback import notebook_state
from autograder.results import REASONS, reason_of
from autograder.results import TestResult as Result

PACKAGE = Path(__file__).resolve().parents[2] / "autograder"


def case(judge=None, seconds=20.0):
    return Case(
        "softmax", "rows sum to 1", 2.0, [{"op": "call"}], judge or (lambda r: None), seconds
    )


def answer(**raw):
    return [Response(raw)]


def not_implemented(*where):
    return answer(error={"type": "NotImplementedError", "message": "", "where": list(where)})


def failing(responses):
    raise Fail("the rows do not sum to 1")


def stub(responses):
    raise Fail("GPT cannot be checked", reason="not-implemented")


@pytest.mark.parametrize(
    ("responses", "judge", "reason"),
    [
        (answer(value=1), None, "passed"),
        (answer(value=1), failing, "failed"),
        (answer(value=1), stub, "not-implemented"),
        (answer(lost="the kernel died"), None, "lost"),
        (answer(missing="softmax"), None, "missing-name"),
        (answer(error={"type": "Timeout", "message": "slow"}), None, "timeout"),
        (not_implemented("line 3 in softmax"), None, "not-implemented"),
        (
            not_implemented("line 3 in softmax", "line 9 in helper"),
            None,
            "dependency-not-implemented",
        ),
        (answer(value=1), lambda r: 1 / 0, "failed"),  # a judge that crashes: not passed
    ],
)
def test_the_verdict_comes_with_its_reason(responses, judge, reason):
    fraction, message, ids, why = judgement(case(judge), responses)
    assert why == reason
    assert (fraction == 1.0) == (reason == "passed")
    assert verdict(case(judge), responses) == (fraction, message, ids)


def test_a_notebook_that_did_not_run_gives_its_tests_the_planned_reason():
    cases = [case(Judgement("numpy_judges.value", {})), case()]
    results = judge_cases(cases, None, {"*": "not there"}, reason="missing-notebook")
    assert [r.reason for r in results] == ["missing-notebook"] * 2
    assert [r.output for r in results] == ["not there"] * 2
    assert judge_cases(cases, None, {"*": "?"})[0].reason == "lost"


def test_a_result_without_a_reason_is_passed_or_failed_by_its_score():
    assert Result("t", 1.0, 1.0, "", "01_soft_lookup", "softmax").reason == "passed"
    assert Result("t", 0.5, 1.0, "", "01_soft_lookup", "softmax").reason == "failed"
    assert reason_of({"score": 0.0, "max_score": 1.0, "output": "not implemented yet"}) == "failed"
    assert reason_of({"score": 0.0, "max_score": 1.0, "reason": "timeout"}) == "timeout"
    saved = Result("t", 0.0, 1.0, "x", "01_soft_lookup", "softmax", reason="not-implemented")
    assert Result.from_json(saved.to_json()) == saved
    assert saved.to_json()["reason"] == "not-implemented"


def _result(reason, output="whatever the words", score=0.0):
    return Result("softmax: c", score, 1.0, output, "01_soft_lookup", "softmax", reason=reason)


def test_the_visible_check_reads_the_reason_not_the_words():
    stubbed = report("softmax", [_result("not-implemented", "some other wording")])
    # pinned: the wording a student meets on an empty exercise
    assert stubbed == (
        "… softmax is not implemented yet: fill in the exercise, then run this cell again."
    )
    worded = report("softmax", [_result("failed", "softmax is not implemented yet, it says")])
    assert worded.startswith("✗ softmax: 0 of 1 checks pass.")
    calls = report("softmax", [_result("dependency-not-implemented", "helper still raises")])
    assert calls == "… helper still raises"


def test_the_feedback_page_reads_the_reason_not_the_words():
    def test(reason, output):
        return {"status": "failed", "score": 0.0, "max_score": 1.0, "output": output,
                "reason": reason}  # fmt: skip

    assert notebook_state([test("not-implemented", "x"), test("not-implemented", "y")])[0] == (
        "not-started"
    )
    assert notebook_state([test("failed", "not implemented yet")])[0] == "one-reason"


def test_every_reason_is_listed_once():
    assert len(set(REASONS)) == len(REASONS)
    text = (PACKAGE / "results.py").read_text(encoding="utf-8")
    for reason in REASONS:
        assert f"| {reason} " in text, f"{reason} is not in results.py's table"


PHRASES = ("not implemented yet", "was not found in your submission", "not found in your")


def test_no_code_decides_a_state_from_a_messages_words():
    """No `"<phrase>" in <text>` (or `.startswith`/`==` on one) anywhere in the package."""
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        named = {  # names bound to such a phrase (NOT_IMPLEMENTED = "not implemented yet")
            target.id
            for node in ast.walk(tree)
            if isinstance(node, ast.Assign) and _phrase(node.value)
            for target in node.targets
            if isinstance(target, ast.Name)
        }
        for node in ast.walk(tree):
            texts = []
            if isinstance(node, ast.Compare):
                texts = [node.left, *node.comparators]
            elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") in (
                "startswith",
                "endswith",
                "find",
                "count",
            ):
                texts = node.args
            for text in texts:
                if _phrase(text) or (isinstance(text, ast.Name) and text.id in named):
                    offenders.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}")
    assert not offenders, offenders


def _phrase(node):
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and any(phrase in node.value for phrase in PHRASES)
    )


OUR_TEXTS = {"output", "notes", "not_graded", "messages", "note"}  # the grader's own sentences


def _our_text(node):
    """x.output, x["output"], x.get("output") (likewise notes, not_graded, messages, note)."""
    if isinstance(node, ast.Attribute):
        return node.attr in OUR_TEXTS
    if isinstance(node, ast.Subscript):
        key = node.slice
        return isinstance(key, ast.Constant) and key.value in OUR_TEXTS
    if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "get" and node.args:
        key = node.args[0]
        return isinstance(key, ast.Constant) and key.value in OUR_TEXTS
    return False


def text_tests(tree):
    """Lines that test a literal against the grader's own sentences: `"..." in r.output`,
    `t["output"].startswith("...")`, `run.not_graded == "..."`."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and any(_our_text(c) for c in node.comparators):
            if isinstance(node.left, ast.Constant) and isinstance(node.left.value, str):
                yield node.lineno
        elif isinstance(node, ast.Compare) and _our_text(node.left):
            if any(
                isinstance(c, ast.Constant) and isinstance(c.value, str) for c in node.comparators
            ):
                yield node.lineno
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") in (
            "startswith",
            "endswith",
            "find",
            "count",
        ):
            if _our_text(node.func.value):
                yield node.lineno


def test_the_finder_sees_a_test_of_the_words():
    code = (
        'a = "not yet" in r.output\n'
        'b = t["output"].startswith("x")\n'
        'c = run.not_graded == "x"\n'
        'd = "x" in t.get("output", "")\n'
        'e = r.reason == "lost"\n'
        'f = "broadcast" in message\n'  # a student's exception text: not the grader's sentence
    )
    assert list(text_tests(ast.parse(code))) == [1, 2, 3, 4]


def test_no_code_reads_a_state_from_the_graders_own_sentences():
    offenders = [
        f"{path.relative_to(PACKAGE.parent)}:{line}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for line in text_tests(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert not offenders, offenders
