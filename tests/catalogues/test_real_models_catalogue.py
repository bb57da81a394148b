"""Notebook 08: every catalogued mistake is caught and named by the visible check and by the
grader alike; answers written other ways keep full marks (tests/catalogues/real_models_mutants.py).

For each wrong answer, on the visible seed and two hidden seeds (other secrets, other
students): it loses marks, the tests name exactly its expected id (or, without one, the message
says the key phrase), no test names another id, and the hidden runs agree with the visible one.
"""

import pytest
import real_models_mutants as mutants
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
    derive_seed("ci-secret-one", "student-17", "08"),
    derive_seed("ci-secret-two", "student-42", "08"),
]


def _run(name, obj, seed):
    return run_in_process(name, obj, seed=seed, namespace=mutants.NAMESPACE.get(name))


def test_the_catalogue_covers_every_graded_name_and_its_ids_exist():
    names = set(BY_STEM["08_real_models"].graded)
    assert {e[1] for e in mutants.WRONG} == names
    assert {n for n, _ in mutants.RIGHT} == names
    assert len({e[0] for e in mutants.WRONG}) == len(mutants.WRONG)
    for _, _, _, expected, phrase in mutants.WRONG:
        assert (expected in CATALOGUE) if expected else phrase


@pytest.mark.slow  # the whole catalogue
@pytest.mark.parametrize("entry", mutants.WRONG, ids=lambda e: e[0])
def test_a_mistake_is_caught_and_named_by_check_and_grader_alike(entry):
    _, name, obj, expected, phrase = entry
    results = _run(name, obj, VISIBLE_SEED)
    assert _lost(results), _show(results)
    want = set() if expected is None else {expected}
    assert _ids(results) == want, _show(results)
    assert all(len(r.misconceptions) <= 1 for r in results)
    if phrase is not None:
        assert any(phrase in r.output for r in results if r.status == "failed"), _show(results)
    for seed in HIDDEN:
        hidden = _run(name, obj, seed)
        assert _lost(hidden) and _ids(hidden) == want, _show(hidden)


@pytest.mark.parametrize(
    ("name", "obj"), first_of_each_name(mutants.RIGHT), ids=lambda v: getattr(v, "__name__", v)
)
def test_right_answers_written_other_ways_keep_full_marks(name, obj):
    for seed in (VISIBLE_SEED, *HIDDEN):
        results = _run(name, obj, seed)
        assert not _lost(results), _show(results)


def _entry(key):
    return next(e for e in mutants.WRONG if e[0] == key)


@pytest.mark.parametrize("key", ["llama-d-ff-gpt", "gqa-kv-full-width"])
def test_a_layer_of_the_wrong_width_is_told_its_width_not_to_rename_it(key):
    _, name, obj, _, _ = _entry(key)
    results = _run(name, obj, VISIBLE_SEED)
    failed = [r.output for r in results if r.status == "failed"]
    assert failed, _show(results)
    for output in failed:
        assert "attribute names" not in output and "returned None" not in output, output


def test_a_llama_with_another_d_ff_still_passes_the_block_size_check_it_gets_right():
    _, name, obj, _, _ = _entry("llama-d-ff-gpt")
    results = _run(name, obj, VISIBLE_SEED)
    raises = [r for r in results if "raise ValueError" in r.name]
    assert len(raises) == 1 and raises[0].status == "passed", _show(results)
