"""The NumPy probes (notebooks 01-04) against a catalogue of student answers, right and wrong.

Every answer runs through the real in-process path (autograder.checks.run_in_process: requests
written to disk, the harness calling the function, judges deciding in the parent). Wrong answers
are written the way students write them and must lose marks AND be named with the right
misconception id; right answers written another way (loops, einsum, torch inside, an additive
-1e9 mask, zero-then-renormalise) must get full marks.
"""

import os
import tempfile
from collections import Counter

import numpy as np
import pytest
import torch
from numpy_mutants import CORRECT, MUTANTS, NAMES, WEIRD, run, swap

from autograder.course import model_answers as R
from autograder.course.misconceptions import CATALOGUE
from autograder.results import NOT_IMPLEMENTED

SPEC_IDS = [
    "softmax-unstable", "softmax-wrong-axis", "missing-scale", "wrong-scale", "transposed-scores",
    "softmax-over-queries", "mask-inverted", "mask-after-softmax", "mask-off-by-one",
    "heads-reshape-without-transpose", "missing-output-projection", "heads-averaged",
]  # fmt: skip
NEW_IDS = [
    "cosine-instead-of-dot", "similarity-scaled", "normalised-without-exp", "percent-not-fraction",
    "softmax-missing-keepdims", "causal-flag-ignored", "batch-dims-unsupported", "mask-not-boolean",
    "mask-fills-zero", "mask-ignored", "heads-strided-columns", "modifies-input",
    "softmax-global-max", "token-sees-later-tokens", "token-range-off-by-one", "token-range-reversed",
    "shape-not-tuple", "list-input-unsupported", "softmax-neginf-weight", "log-softmax",
    "heads-count-as-width", "weights-averaged-over-heads", "weights-of-one-head",
    "unknown-key-answered", "unknown-key-wrong-error", "unknown-key-unnamed", "products-not-summed",
    "earlier-exercise-wrong",
]  # fmt: skip
pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the mutants overflow on purpose

OWNED_IDS = SPEC_IDS + NEW_IDS


@pytest.fixture(autouse=True, scope="module")
def _fast_tempdir():
    """Requests and responses go through files: on tmpfs this module runs ~10x faster."""
    saved = tempfile.tempdir
    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
        tempfile.tempdir = "/dev/shm"
    yield
    tempfile.tempdir = saved


def failures(results):
    return "\n".join(f"{r.name}: {r.output}" for r in results if r.status == "failed")


# ------------------------------------------------------------------ helpers students write


# ------------------------------------------------------------------ the mutants (id, name, fn)


@pytest.mark.parametrize(
    "misconception, name, fn", MUTANTS, ids=[f"{m}-{n}-{i}" for i, (m, n, _) in enumerate(MUTANTS)]
)
def test_mutant_loses_marks_and_is_named(misconception, name, fn):
    score, total, ids, results = run(name, fn)
    assert score < total, f"{misconception} mutant of {name} got full marks"
    assert misconception in ids, f"expected {misconception}, named {ids}\n{failures(results)}"


def test_every_owned_id_has_two_mutants():
    from numpy_mutants import NEW_MUTANTS

    counts = Counter(m for m, _, _ in MUTANTS) + Counter(m for _, m, _, _ in NEW_MUTANTS)
    assert set(OWNED_IDS) <= set(CATALOGUE)
    thin = {i: counts[i] for i in OWNED_IDS if counts[i] < 2}
    assert not thin, f"ids with fewer than two mutants: {thin}"


# ------------------------------------------------------------------ correct alternatives


@pytest.mark.parametrize("name, fn", CORRECT, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CORRECT)])
def test_correct_alternative_gets_full_marks(name, fn):
    score, total, ids, results = run(name, fn)
    assert score == total, failures(results)
    assert not ids


def test_every_name_has_two_correct_alternatives():
    counts = Counter(name for name, _ in CORRECT)
    assert {n: counts[n] for n in NAMES if counts[n] < 2} == {}


# ------------------------------------------------------------------ reference, stubs, cheats


@pytest.mark.parametrize("name", NAMES)
def test_reference_gets_full_marks(name):
    score, total, ids, results = run(name, getattr(R, name))
    assert score == total, failures(results)
    assert 1 <= total <= 3
    assert not ids


@pytest.mark.parametrize("name", NAMES)
def test_stub_gets_zero_and_says_not_implemented(name):
    def stub(*args, **kwargs):
        raise NotImplementedError()

    score, total, _, results = run(name, stub)
    assert score == 0 and total > 0
    assert all(r.reason == NOT_IMPLEMENTED for r in results), [(r.name, r.reason) for r in results]


class _Forged:
    def __eq__(self, other):
        return True

    def __array__(self, dtype=None, copy=None):
        return np.zeros(3)


class _Liar(np.ndarray):
    """An ndarray that claims to equal anything and to be close to anything."""

    def __eq__(self, other):
        return np.ones(np.shape(self), dtype=bool)

    def __array_function__(self, func, types, args, kwargs):
        if func in (np.allclose, np.array_equal, np.isclose):
            return True
        return super().__array_function__(func, types, args, kwargs)


def value_score(results):
    """Every point: "leaves its inputs unmodified" too needs the right values, so a forged or
    zero answer earns nothing anywhere."""
    return sum(r.score for r in results)


@pytest.mark.parametrize("name", ["softmax", "attention_scores", "split_heads"])
def test_forged_objects_get_zero(name):
    score, _, _, results = run(name, lambda *a, **k: _Forged())
    assert score == 0
    assert "_Forged" in results[0].output

    def liar(*args, **kwargs):
        shape = np.shape(getattr(R, name)(*args, **kwargs))
        return np.zeros(shape).view(_Liar)

    assert value_score(run(name, liar)[3]) == 0


def test_wrong_return_types_get_clear_messages():
    _, _, _, results = run("softmax", lambda x, axis=-1: R.softmax(x, axis).tolist())
    assert results[0].score == 0 and "Python list" in results[0].output
    _, _, _, results = run("softmax", lambda x, axis=-1: torch.from_numpy(R.softmax(x, axis)))
    assert results[0].score == 0 and "torch tensor" in results[0].output
    _, _, _, results = run("attend", lambda q, K, V: R.attend(q, K, V)[0])
    assert results[0].score == 0 and "tuple of 2" in results[0].output
    _, _, _, results = run("similarity", lambda q, K: None)
    assert "return" in results[0].output


def test_patching_numpy_in_the_students_call_does_not_change_the_verdict():
    saved = (np.allclose, np.isclose, np.array_equal, np.testing.assert_allclose)

    def cheat(x, axis=-1):
        np.allclose = lambda *a, **k: True
        np.isclose = lambda a, b, *r, **k: np.ones(np.broadcast(a, b).shape, dtype=bool)
        np.array_equal = lambda *a, **k: True
        np.testing.assert_allclose = lambda *a, **k: None
        return np.zeros(np.shape(x))

    try:
        score, total, _, results = run("softmax", cheat)
    finally:
        np.allclose, np.isclose, np.array_equal, np.testing.assert_allclose = saved
    assert value_score(results) == 0, failures(results)


def test_float32_answer_is_told_about_precision():
    _, _, _, results = run(
        "attention_scores", lambda Q, K: (R.attention_scores(Q, K) * (1 + 3e-6)).astype(np.float32)
    )
    assert results[0].score < results[0].max_score
    assert "float32" in results[0].output


def test_messages_never_print_the_expected_array():
    _, _, _, results = run("softmax", lambda x, axis=-1: R.softmax(x, axis) * 0.9)
    failed = [r for r in results if r.status == "failed"]
    assert len(failed) == len(results)  # the inputs test too (it says the inputs are fine)
    for r in failed:
        assert "[[" not in r.output and "array(" not in r.output


def test_scale_hint_gives_the_factor():
    _, _, ids, results = run("attention_scores", lambda Q, K: Q @ swap(K))
    assert "2.83x too large for d_k = 8" in results[0].output
    assert ids == {"missing-scale"}


@pytest.mark.parametrize("name", NAMES)
def test_weird_outputs_score_zero_with_a_message_never_a_crash(name):
    for what, fn in WEIRD.items():
        score, _, _, results = run(name, fn)
        assert score == 0, f"{what}: {failures(results)}"
        for r in results:
            assert r.output and "could not check" not in r.output, (what, r.name, r.output)
