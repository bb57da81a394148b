"""One diagnosis, the right one: a catalogue of wrong answers to notebooks 01-04, each with the
exact misconception its failed tests must name (or None where no id is specific to what the
answer does, and the messages must instead say what was observed).

Every mutant runs through the real in-process path (test_probes_numpy.run: the visible cases,
the harness calling the function, the judges deciding from stored data). Each must lose marks,
name exactly its expected id and no other anywhere in its results, and speak only the words of
its notebook: the messages of notebooks 01 and 02 never mention masks, causality or the future
(02 cuts the keys off at token i; masks and batches come in 03), and no message mentions "SPEC".
The mutants are written as students write them (loops, einsum, torch-free NumPy idioms), and
include answers that coincide with a known variant on some inputs only, answers whose output
looks like another mistake's (a query projected with W_k; the global maximum subtracted), and
mistakes no variant describes. (The right answers written other ways keep full marks:
test_probes_numpy.py::test_correct_alternative_gets_full_marks, with these same judges.)
"""

import re

import pytest
from numpy_diagnosis_mutants import (
    MUTANTS,
    attend_by_d_v,
    self_attention_query_with_w_k,
    softmax_axis_zero,
    softmax_in_place,
)
from numpy_mutants import _token_project_all, run, stable_softmax

from autograder.checks import run_in_process
from autograder.curriculum import NOTEBOOK_OF

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the mutants overflow on purpose

EARLY = {"01_soft_lookup", "02_dot_product_softmax"}  # no masks, no causality taught yet
# 02's attention_for_token has a keyword argument named `causal` (its exercise says what it does),
# so a call written out as `causal=False` is the student's own word; any other "causal" is not.
# Batches (leading dimensions) come in 03 too.
EARLY_WORDS = re.compile(r"mask|future|language model|batch|causal(?!=(True|False))", re.IGNORECASE)


# ------------------------------------------------------------------ notebook 01


# ------------------------------------------------------------------ notebook 02


# ------------------------------------------------------------------ notebook 03


# ------------------------------------------------------------------ notebook 04


# ------------------------------------------------------------------ the catalogue


LABELS = [f"{name}-{fn.__name__}-{i}" for i, (name, _, fn) in enumerate(MUTANTS)]


@pytest.fixture(scope="module")
def graded():
    """Each mutant graded once: {label: (score, total, ids, results)}."""
    return {label: run(name, fn) for label, (name, _, fn) in zip(LABELS, MUTANTS, strict=True)}


def _named(results):
    return [(r.name, i) for r in results for i in r.misconceptions]


def problems(name, expected, graded_run):
    """What is wrong with one mutant's diagnosis: [] when exactly right."""
    score, total, _, results = graded_run
    found = []
    if score >= total:
        found.append("got full marks")
    named = {i for _, i in _named(results)}
    want = set() if expected is None else {expected}
    if named != want:
        found.append(f"named {sorted(named) or 'nothing'}, expected {expected}")
    for r in results:
        if r.status != "failed":
            continue
        if len(r.misconceptions) > 1:
            found.append(f"{r.name}: several ids {r.misconceptions}")
        if "SPEC" in r.output:
            found.append(f"{r.name}: mentions SPEC")
        if NOTEBOOK_OF[name].stem in EARLY and EARLY_WORDS.search(r.output):
            found.append(f"{r.name}: words notebook {NOTEBOOK_OF[name].stem} has not taught")
        if expected is None and not r.output:
            found.append(f"{r.name}: fails without a message")
    return found


def _report(results):
    return "\n".join(f"  {r.name} {r.misconceptions}: {r.output}" for r in results if r.output)


@pytest.mark.slow  # grades the whole NumPy mistake catalogue (module fixture)
@pytest.mark.parametrize("label", LABELS)
def test_mutant_gets_exactly_its_diagnosis(graded, label):
    name, expected, _ = MUTANTS[LABELS.index(label)]
    found = problems(name, expected, graded[label])
    assert not found, "; ".join(found) + "\n" + _report(graded[label][3])


# The grader draws its inputs from a course secret: the diagnosis must not hold for the public
# seed only. Two more seeds, as a grader would draw them (derive_seed of a secret and a student).
OTHER_SEEDS = ("secret-a\x1fstudent-1", "secret-b\x1fstudent-2")


def _precision(runs):
    right = sum(
        not problems(name, expected, runs[label])
        for label, (name, expected, _) in zip(LABELS, MUTANTS, strict=True)
    )
    return right, right / len(MUTANTS)


def _graded_with(seed):
    out = {}
    for label, (name, _, fn) in zip(LABELS, MUTANTS, strict=True):
        results = run_in_process(name, fn, seed=seed)
        score, total = sum(r.score for r in results), sum(r.max_score for r in results)
        out[label] = (score, total, None, results)
    return out


@pytest.mark.slow  # the whole catalogue under two more seeds
def test_catalogue_precision_is_one(graded):
    lines = []
    for seed, runs in [("visible", graded)] + [(s, _graded_with(s)) for s in OTHER_SEEDS]:
        caught = sum(score < total for score, total, _, _ in runs.values())
        right, precision = _precision(runs)
        lines.append(
            f"seed {seed!r}: {len(MUTANTS)} wrong answers, {caught} caught, {right} with exactly "
            f"their diagnosis (one right id, or none where none is specific): "
            f"precision {precision:.3f}"
        )
    print("\ndiagnosis catalogue, notebooks 01-04\n" + "\n".join(lines))
    assert all(line.endswith("precision 1.000") for line in lines), lines


def test_the_catalogue_covers_every_graded_name_of_01_to_04():
    from numpy_mutants import NAMES

    assert {name for name, _, _ in MUTANTS} == set(NAMES)
    assert len(MUTANTS) >= 40
    assert sum(expected is None for _, expected, _ in MUTANTS) >= 10


def test_the_early_word_check_sees_the_words_it_forbids():
    assert EARLY_WORDS.search("a language model must not see the future")
    assert EARLY_WORDS.search("It looks like blocking the positions: True in the mask")
    assert EARLY_WORDS.search("a causal mask") and EARLY_WORDS.search("causality")
    assert not EARLY_WORDS.search("by default token 3 looks only at tokens 0..3")
    assert not EARLY_WORDS.search("attention_for_token(X (6, 5), i=3, causal=False): 3 of 3")


# ------------------------------------------------------------------ "leaves its inputs unmodified"


def test_a_wrong_value_is_not_told_it_modified_its_inputs():
    """A wrong answer that leaves its inputs alone is told so on the inputs test, which names no
    misconception and sends it to the value tests (its points need the right values too: zeros
    earn nothing); an answer that modifies its inputs fails it with modifies-input."""
    wrong = {r.name: r for r in run("softmax", softmax_axis_zero)[3]}
    told = wrong["softmax: leaves its inputs unmodified"]
    assert told.status == "failed" and told.misconceptions == []
    assert "left its inputs as they were" in told.output and "in place" not in told.output
    in_place = {r.name: r for r in run("softmax", softmax_in_place)[3]}
    failed = in_place["softmax: leaves its inputs unmodified"]
    assert failed.status == "failed" and failed.misconceptions == ["modifies-input"]
    assert "modified in place" in failed.output
    for name, fn in [("self_attention", self_attention_query_with_w_k), ("attend", attend_by_d_v)]:
        unmodified = [
            r for r in run(name, fn)[3] if r.name.endswith("leaves its inputs unmodified")
        ]
        assert unmodified and all(
            r.misconceptions == [] and "left its inputs as they were" in r.output
            for r in unmodified
        ), _report(unmodified)
    right = {r.name: r for r in run("softmax", stable_softmax)[3]}
    assert right["softmax: leaves its inputs unmodified"].status == "passed"


def test_a_call_that_returns_nothing_usable_still_fails_the_inputs_test():
    results = run("softmax", lambda x, axis=-1: None)[3]
    unmodified = [r for r in results if r.name.endswith("leaves its inputs unmodified")]
    assert unmodified[0].status == "failed" and "return" in unmodified[0].output
    results = run("merge_heads", lambda X: X[..., 0, :, :])[3]
    unmodified = [r for r in results if r.name.endswith("leaves its inputs unmodified")]
    assert unmodified[0].status == "failed" and "shape" in unmodified[0].output


def test_a_token_that_looks_only_at_itself_fails_the_causal_case():
    """Returning token i's own value vector ignores the future, but the past too: the causal
    case changes only the earlier tokens as well, and says so."""

    def own_value(X, i, W_q, W_k, W_v, causal=True):
        return X[i] @ W_v

    results = run("attention_for_token", own_value)[3]
    (case,) = [r for r in results if r.name.endswith("later tokens do not change a causal output")]
    assert case.status == "failed" and "before token" in case.output, _report([case])
    right = run("attention_for_token", _token_project_all)[3]
    assert all(r.status == "passed" for r in right), _report(right)
