"""Notebook 06's graded names name the causes issue 40's second round gave ids (the catalogue:
tests/catalogues/names06_mutants.py, mistakes written here from each cause): the visible check
(the public seed, the words a student reads: "This is what happens with ...") and the grader
under another seed both name the one expected id, and no other. Right answers written another
way keep full marks under both.
"""

import names06_mutants as nm
import pytest
from fixtures import cheap_training
from verdicts import ids, lost, show

from autograder.checks import VISIBLE_SEED, run_in_process
from autograder.course.misconceptions import CATALOGUE
from autograder.course.n06_autoregressive_lm import cases_gpt
from autograder.course.n06_autoregressive_lm import reference as R
from autograder.course.probes import derive_seed

pytestmark = pytest.mark.usefixtures("one_thread")

SEEDS = [VISIBLE_SEED, derive_seed("names06-secret", "student-5", "06")]
NAMESPACE = {"lm_loss": R.lm_loss}


def _named(results, expected):
    """The results lost points, name `expected` alone, and say it in the catalogue's words."""
    assert lost(results), show(results)
    assert ids(results) == {expected}, show(results)
    mistake = CATALOGUE[expected].mistake
    said = [r.output for r in results if expected in r.misconceptions]
    assert all(f"This is what happens with {mistake}" in out for out in said), show(results)


@pytest.mark.parametrize("entry", nm.WRONG, ids=[e[0] for e in nm.WRONG])
def test_each_cause_is_named_by_the_visible_check_and_the_grader(entry):
    key, name, obj, expected = entry
    assert expected in CATALOGUE
    for seed in SEEDS:
        _named(run_in_process(name, obj, seed=seed, namespace=NAMESPACE), expected)


@pytest.mark.slow  # GPTs graded through every case (the training case swapped for a free one)
@pytest.mark.parametrize("entry", nm.GPT_WRONG, ids=[e[0] for e in nm.GPT_WRONG])
def test_each_gpt_cause_is_named(entry, monkeypatch):
    key, cls, expected = entry
    monkeypatch.setattr(cases_gpt, "_train_case", cheap_training)
    for seed in SEEDS:
        _named(run_in_process("GPT", cls, seed=seed), expected)


@pytest.mark.parametrize("entry", nm.RIGHT, ids=[e[0] for e in nm.RIGHT])
def test_the_same_code_with_the_knobs_right_gets_full_marks(entry):
    key, name, obj = entry
    for seed in SEEDS:
        results = run_in_process(name, obj, seed=seed, namespace=NAMESPACE)
        assert not lost(results), show(results)
