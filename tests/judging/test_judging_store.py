"""judging.store: a stored case judges a student's answers exactly as the case it was made from."""

import numpy as np
import pytest

from autograder.harness import serve
from autograder.judging import JUDGES, Judgement, judge
from autograder.judging.answers import judge_cases
from autograder.judging.base import Case, Fail
from autograder.judging.store import NotStorable, load_cases, request_dir, save_cases


@judge
def doubled(responses, *, expected, hint):
    got = np.asarray(responses[0].value())
    if got.shape != expected.shape or not np.allclose(got, expected):
        raise Fail(f"not doubled; {hint}", ["made-up-id"])


def _cases():
    x = np.arange(6.0).reshape(2, 3)
    request = {"op": "call", "args": [x], "kwargs": {}, "target": "similarity", "seconds": 5.0}
    judgement = Judgement("test_judging_store.doubled", {"expected": 2 * x, "hint": "times two"})
    return [Case("similarity", "doubles", 1.5, [request], judgement)]


def _run(cases_folder, student, tmp_path):
    responses = tmp_path / "responses"
    serve(
        {"similarity": student}, request_dir(cases_folder, "similarity"), responses / "similarity"
    )
    return judge_cases(load_cases(cases_folder, "similarity"), responses)


def test_a_stored_case_passes_a_right_answer_and_fails_a_wrong_one(tmp_path):
    assert "test_judging_store.doubled" in JUDGES
    save_cases(_cases(), tmp_path / "stored")
    (right,) = _run(tmp_path / "stored", lambda x: x * 2, tmp_path / "a")
    (wrong,) = _run(tmp_path / "stored", lambda x: x + 2, tmp_path / "b")
    assert (right.score, right.max_score, right.output) == (1.5, 1.5, "")
    assert (wrong.score, wrong.output, wrong.misconceptions) == (
        0.0,
        "not doubled; times two",
        ["made-up-id"],
    )
    assert right.name == "similarity: doubles" and right.notebook == "01_soft_lookup"


def test_a_judge_that_is_a_closure_cannot_be_stored(tmp_path):
    case = _cases()[0]
    case.judge = lambda responses: None
    with pytest.raises(NotStorable, match="similarity: doubles"):
        save_cases([case], tmp_path / "stored")


def test_a_judge_whose_data_is_an_object_cannot_be_stored(tmp_path):
    case = _cases()[0]
    case.judge.params["hint"] = object()
    with pytest.raises(NotStorable, match="not plain data"):
        save_cases([case], tmp_path / "stored")
