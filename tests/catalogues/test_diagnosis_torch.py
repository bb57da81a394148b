"""One diagnosis, the right one: notebooks 05-06's checks against a catalogue of wrong answers.

Each mutant is a mistake written the way a student would write it (loops, vectorised code,
nn.Module styles), with its EXACT expected diagnosis: one misconception id, or None (no id at
all, and a message that says what was observed, checked by a key phrase). Every mutant must lose
marks and carry its expected id and no other anywhere in its results; no message says "SPEC"
(students never see it). The precision (right diagnosis / mutants) is printed and must be 1.0.

GPT mutants are judged without the training run (it costs 10-20 s and is not where a mask or a
layer is diagnosed), as in test_probes_torch.py's no_training fixture.
"""

import pytest
from fixtures import cheap_training
from torch_diagnosis_mutants import CATALOGUE
from torch_probe_mutants import (
    show,
)

from autograder.checks import run_in_process
from autograder.course.n06_autoregressive_lm import cases_gpt as lm_probes

pytestmark = pytest.mark.usefixtures("one_thread")


# ================================================================ 05: layer_norm


# ================================================================ 05: positional encoding


# ================================================================ 05: MultiHeadAttention


# ================================================================ 05: FeedForward


# ================================================================ 05: TransformerBlock


# ================================================================ 06: data


# ================================================================ 06: lm_loss


# ================================================================ 06: generate


# ================================================================ 06: GPT


# ================================================================ the catalogue


KEYS = [key for key, *_ in CATALOGUE]
assert len(set(KEYS)) == len(KEYS)
# the first mistake of each graded name in the fast subset, the whole catalogue in the slow one
FIRST = {row[1]: row[0] for row in reversed(CATALOGUE)}
PARAMS = [
    pytest.param(key, marks=() if key == FIRST[name] else pytest.mark.slow)
    for key, name, *_ in CATALOGUE
]


_GRADED = {}


def graded(key):
    """The results of one mutant, graded once per test session (the GPT without training)."""
    if key not in _GRADED:
        _, name, obj, *_ = CATALOGUE[KEYS.index(key)]
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(lm_probes, "_train_case", cheap_training)
            _GRADED[key] = run_in_process(name, obj)
    return _GRADED[key]


def verdict(key):
    """(right, why): whether the mutant got exactly its expected diagnosis."""
    _, _, _, expected, phrase = CATALOGUE[KEYS.index(key)]
    results = graded(key)
    if sum(r.score for r in results) >= sum(r.max_score for r in results):
        return False, "kept full marks"
    named = {m for r in results for m in r.misconceptions}
    want = set() if expected is None else {expected}
    if named != want:
        return False, f"named {sorted(named)}, expected {sorted(want)}"
    if any(len(r.misconceptions) > 1 for r in results):
        return False, "a test names more than one misconception"
    failed = [r for r in results if r.status == "failed"]
    if phrase is not None and not any(phrase in r.output for r in failed):
        return False, f"no failed test says {phrase!r}"
    if any("SPEC" in r.output or "SPEC" in r.name for r in results):
        return False, "a test's name or message mentions SPEC"
    return True, ""


@pytest.mark.parametrize("key", PARAMS)
def test_each_mutant_loses_marks_with_exactly_its_diagnosis(key):
    right, why = verdict(key)
    assert right, f"{key}: {why}\n{show(graded(key))}"


def test_the_catalogue_covers_every_graded_name_of_05_and_06():
    from torch_probe_mutants import NAMES_05, NAMES_06

    assert {name for _, name, *_ in CATALOGUE} == set(NAMES_05 + NAMES_06)
    assert len(CATALOGUE) >= 35


@pytest.mark.slow  # the whole catalogue
def test_precision_of_the_catalogue(capsys):
    right = [key for key in KEYS if verdict(key)[0]]
    caught = [
        key
        for key in KEYS
        if sum(r.score for r in graded(key)) < sum(r.max_score for r in graded(key))
    ]
    precision = len(right) / len(KEYS)
    with capsys.disabled():
        print(
            f"\ndiagnosis catalogue (notebooks 05-06): {len(KEYS)} mutants, {len(caught)} "
            f"caught, {len(right)} named exactly once and correctly (or, without an id, "
            f"said as observed): precision {precision:.3f}"
        )
    assert precision == 1.0, sorted(set(KEYS) - set(right))


# ================================================================ tests named for one property


def test_a_value_mistake_is_not_told_it_modified_its_inputs():
    """Tests named "... leaves its inputs unchanged" say "modified in place" only when an input
    was modified; a value mistake fails them (no free points for a wrong answer) with no
    misconception and a message that says the inputs and gradients are fine."""
    for key in ("loss-sum", "loss-softmax"):  # the layer norm mistakes are close on that input
        (case,) = [r for r in graded(key) if "inputs unchanged" in r.name]
        assert case.status == "failed" and case.misconceptions == [], show([case])
        assert "leaves its inputs unchanged and gradients reach them" in case.output
        assert "in place" not in case.output, show([case])
    (case,) = [r for r in graded("ln-in-place") if "inputs unchanged" in r.name]
    assert case.status == "failed" and "x was modified in place" in case.output, show([case])


def test_a_block_with_mistaken_wiring_is_not_sent_to_fix_its_sub_modules():
    for key in ("block-norm-inside", "block-ln1-twice", "block-mask-not-passed", "block-parallel"):
        for r in graded(key):
            assert "fix them first" not in r.output, show([r])
