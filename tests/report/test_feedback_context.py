"""The feedback page's words (autograder/report/feedback.py), read as a student reads them: no
sentence cut in half, and a failure caused by an earlier notebook blamed on that notebook."""

from autograder.course.misconceptions import CATALOGUE
from autograder.curriculum import BY_STEM
from autograder.judging.dependencies import Unavailable, dependency_message
from autograder.report.feedback import feedback_context, strip_hints
from autograder.results import MISSING_NOTEBOOK

NAME_ERROR = "GPT(...)(idx) raised NameError: name 'TransformerBlock' is not defined"


def _test(notebook, function, name, output, status="failed", ids=(), points=1.0, reason=None):
    return {
        "notebook": notebook, "function": function, "name": f"{function}: {name}",
        "status": status, "output": output, "misconceptions": list(ids),
        "score": points if status == "passed" else 0.0, "max_score": points,
        "reason": reason or status,
    }  # fmt: skip


def test_a_hint_after_a_question_leaves_no_half_sentence():
    m = CATALOGUE["missing-scale"]
    for before in ("your scores are 2.00x too large for d_k = 4: did you divide by sqrt(d_k)?",
                   "the weights are too sharp!", "the scores differ.", "the scores differ;"):  # fmt: skip
        output = f"{before} It looks like {m.mistake}: {m.hint}"
        shown = strip_hints(output, ["missing-scale"])
        assert shown == before.rstrip(";"), shown
        assert "It looks like" not in shown


def test_a_long_lead_in_keeps_its_sentence_and_loses_only_the_hint():
    m = CATALOGUE["missing-scale"]
    output = f"row 2 of the weights is far from what it should be because of {m.hint}"
    shown = strip_hints(output, ["missing-scale"])
    assert m.hint not in shown and shown.startswith("row 2 of the weights is far")


def _missing_05_payload(notebook_05_tests, output=NAME_ERROR, reason=None, depends_on=None):
    gpt = BY_STEM["06_autoregressive_lm"]
    tests = list(notebook_05_tests)
    for name in gpt.graded:
        if name == "GPT":
            tests.append(_test(gpt.stem, name, "logits", output, reason=reason))
            if depends_on:
                tests[-1]["depends_on"] = depends_on
        else:
            tests.append(_test(gpt.stem, name, "values", "", status="passed"))
    return {"student": "sam", "tests": tests, "notebooks": {}}


def test_fix_first_blames_a_missing_earlier_notebook():
    block = BY_STEM["05_transformer_block"]
    missing = f"{block.filename} was not found in your submission, so its tests score 0."
    waiting = dependency_message(
        "GPT", "TransformerBlock", Unavailable(block.stem, MISSING_NOTEBOOK)
    )
    payload = _missing_05_payload(
        (_test(block.stem, name, "values", missing, reason="missing-notebook")
         for name in block.graded),
        waiting, "dependency-missing", block.stem,
    )  # fmt: skip
    context = feedback_context(payload, sections={})
    fix = {f["notebook"]: f for f in context["fix_first"]}
    assert fix["06_autoregressive_lm"]["hint"] == waiting
    assert "Your notebook 05 (05_transformer_block.ipynb) is missing" in waiting
    row = {n["stem"]: n for n in context["notebooks"]}["06_autoregressive_lm"]
    assert row["waits_for"] == [block.filename]


def test_a_name_error_alone_blames_no_earlier_notebook():
    """Without a structured reason, a message's words never decide the cause."""
    block = BY_STEM["05_transformer_block"]
    missing = f"{block.filename} was not found in your submission, so its tests score 0."
    payload = _missing_05_payload(
        _test(block.stem, name, "values", missing, reason="missing-notebook")
        for name in block.graded
    )
    hint = {f["notebook"]: f for f in feedback_context(payload, sections={})["fix_first"]}[
        "06_autoregressive_lm"
    ]["hint"]
    assert hint == NAME_ERROR


def test_fix_first_blames_an_earlier_notebook_not_started():
    block = BY_STEM["05_transformer_block"]
    stub = "TransformerBlock is not implemented yet (it raises NotImplementedError)"
    calls_stub = "GPT is not implemented yet: something it calls (TransformerBlock, line 2)"
    payload = _missing_05_payload(
        (_test(block.stem, n, "values", stub, reason="not-implemented") for n in block.graded),
        calls_stub, "dependency-not-implemented",
    )  # fmt: skip
    hint = {f["notebook"]: f for f in feedback_context(payload, sections={})["fix_first"]}[
        "06_autoregressive_lm"
    ]["hint"]
    assert "05_transformer_block.ipynb, which is not started yet" in hint


def test_fix_first_keeps_the_message_when_the_earlier_notebook_is_complete():
    block = BY_STEM["05_transformer_block"]
    payload = _missing_05_payload(
        _test(block.stem, n, "values", "", status="passed") for n in block.graded
    )
    hint = {f["notebook"]: f for f in feedback_context(payload, sections={})["fix_first"]}[
        "06_autoregressive_lm"
    ]["hint"]
    assert "comes from your" not in hint and "is not defined" in hint
