"""Hidden inputs come from the secret, and they separate every known mistake.

1. No hidden request equals a visible one (the student handout ships the visible checks' cases
   and answers: a notebook that looks answers up there must earn nothing hidden), for two
   different secrets and several students each, in every notebook (build_cases draws again
   while a request repeats a visible one).
2. Every known-wrong variant of notebooks 01-04 (autograder/course/n0[1-4]_*/variants.py)
   is told apart from the right answer by the hidden cases of every student: some call of some
   value case gives the variant an output that differs from the reference's (or makes it raise).
   Otherwise that student's grader would give the mistake full marks while the visible check
   catches it.
"""

import numpy as np
import pytest

from autograder.checks import VISIBLE_SEED
from autograder.course.probes import build_cases, derive_seed, fingerprints
from autograder.curriculum import BY_STEM, NOTEBOOKS
from autograder.judging.compare import is_close

NUMPY_STEMS = [nb.stem for nb in NOTEBOOKS[:4]]
SECRETS = ("course-secret-one", "another secret, 2026")
STUDENTS = ("ada", "grace", "alan", "edsger", "barbara")


@pytest.mark.slow  # cases drawn for many secrets and students
@pytest.mark.parametrize("stem", [nb.stem for nb in NOTEBOOKS])
def test_no_hidden_request_equals_a_visible_one(stem):
    visible = set(fingerprints(build_cases(stem, VISIBLE_SEED)))
    assert visible, "no visible requests at all"
    repeated = []
    for secret in SECRETS:
        for student in STUDENTS:
            for case in build_cases(stem, derive_seed(secret, student, stem)):
                if not visible.isdisjoint(fingerprints([case])):
                    repeated.append(f"{secret}/{student}: {case.function}: {case.name}")
    assert not repeated, "hidden requests equal to visible ones:\n" + "\n".join(repeated)


def test_the_fingerprint_tells_requests_apart():
    """Equal values, equal fingerprints; any change of value, dtype, shape or target, not."""
    from autograder.course.probes import request_fingerprint as fp

    x = np.arange(6.0).reshape(2, 3)
    base = {"op": "call", "target": "softmax", "args": [x], "kwargs": {}}
    assert fp(base) == fp({**base, "args": [x.copy()]})
    for changed in (
        {**base, "args": [x + 1e-12]},
        {**base, "args": [x.astype(np.float32)]},
        {**base, "args": [x.reshape(3, 2)]},
        {**base, "target": "percentages"},
        {**base, "kwargs": {"axis": 0}},
        {**base, "args": [x.tolist()]},
    ):
        assert fp(changed) != fp(base)


# ------------------------------------------------------------------ variants told apart


def _value_calls(cases, function):
    """Every call (its stored data) of the function's value cases."""
    for case in cases:
        if case.function != function or case.judge.name != "numpy_judges.value":
            continue
        yield from case.judge.params["calls"]


def _told_apart(calls, index):
    for call in calls:
        variant = call["variants"][index][1]
        if variant is None:  # the variant raises on these inputs
            return True
        expected = call["expected"]
        pairs = zip(variant, expected, strict=True) if isinstance(expected, tuple) else None
        try:
            same = (
                all(is_close(v, e) for v, e in pairs)
                if pairs is not None
                else is_close(variant, expected)
            )
        except (TypeError, ValueError):
            same = False
        if not same:
            return True
    return False


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("stem", NUMPY_STEMS)
def test_every_variant_is_told_apart_for_every_student(stem):
    seeds = [VISIBLE_SEED] + [
        derive_seed(secret, f"student-{k}", stem) for secret in SECRETS for k in range(15)
    ]
    blind = []
    for seed in seeds:
        cases = build_cases(stem, seed)
        for function in BY_STEM[stem].graded:
            calls = list(_value_calls(cases, function))
            if not calls:
                continue
            for index, (id_, _) in enumerate(calls[0]["variants"]):
                if not _told_apart(calls, index):
                    blind.append(f"seed {seed}: {function} variant {index} ({id_})")
    assert not blind, "hidden cases that cannot tell a variant from the right answer:\n" + (
        "\n".join(blind)
    )
