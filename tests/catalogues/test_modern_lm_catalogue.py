"""Notebook 07: every catalogued mistake is caught and named by the visible check and by the
grader alike; answers written other ways keep full marks (tests/catalogues/modern_lm_mutants.py).

For each wrong answer, on the visible seed and two hidden seeds (other secrets, other
students): it loses marks, the tests name exactly its expected id (or, without one, the message
says the key phrase), no test names another id, and the hidden runs agree with the visible one.
"""

import modern_lm_mutants as mutants
import pytest
from sweeps import first_of_each_name
from verdicts import ids as _ids
from verdicts import lost as _lost
from verdicts import show as _show

from autograder.checks import VISIBLE_SEED, run_in_process
from autograder.course.misconceptions import CATALOGUE
from autograder.course.probes import derive_seed
from autograder.curriculum import BY_STEM

pytestmark = pytest.mark.usefixtures("one_thread")

HIDDEN = [
    derive_seed("ci-secret-one", "student-17", "07"),
    derive_seed("ci-secret-two", "student-42", "07"),
]


def test_the_catalogue_covers_every_graded_name_and_its_ids_exist():
    names = set(BY_STEM["07_modern_lm"].graded)
    assert {e[1] for e in mutants.WRONG} == names
    assert {n for n, _ in mutants.RIGHT} == names
    assert len({e[0] for e in mutants.WRONG}) == len(mutants.WRONG)
    for _, _, _, expected, phrase in mutants.WRONG:
        assert (expected in CATALOGUE) if expected else phrase


@pytest.mark.slow  # the whole catalogue
@pytest.mark.parametrize("entry", mutants.WRONG, ids=lambda e: e[0])
def test_a_mistake_is_caught_and_named_by_check_and_grader_alike(entry):
    _, name, obj, expected, phrase = entry
    results = run_in_process(name, obj, seed=VISIBLE_SEED)
    assert _lost(results), _show(results)
    want = set() if expected is None else {expected}
    assert _ids(results) == want, _show(results)
    assert all(len(r.misconceptions) <= 1 for r in results)
    if phrase is not None:
        assert any(phrase in r.output for r in results if r.status == "failed"), _show(results)
    for seed in HIDDEN:
        hidden = run_in_process(name, obj, seed=seed)
        assert _lost(hidden) and _ids(hidden) == want, _show(hidden)


@pytest.mark.parametrize(
    ("name", "obj"), first_of_each_name(mutants.RIGHT), ids=lambda v: getattr(v, "__name__", v)
)
def test_right_answers_written_other_ways_keep_full_marks(name, obj):
    for seed in (VISIBLE_SEED, *HIDDEN):
        results = run_in_process(name, obj, seed=seed)
        assert not _lost(results), _show(results)
