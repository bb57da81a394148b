"""The hidden inputs of notebooks 05-06, drawn for many students under two secrets:
- they tell every known mistake from the right answer, for every student (issue 19, item 2):
  each stored variant output differs from the expected one in some case of its function, and
  the catalogue's mistakes whose detection depends on drawn inputs lose marks for each id;
- no hidden request equals a visible one (issue 18, item 4), for two different secrets.
"""

import numpy as np
import pytest
from torch_diagnosis_mutants import CATALOGUE
from torch_mutants import MORE
from torch_probe_mutants import show

from autograder.checks import VISIBLE_SEED, run_in_process
from autograder.course.probes import build_cases, derive_seed
from autograder.course.torch_shared.tools import fingerprints

pytestmark = pytest.mark.usefixtures("one_thread")

STEMS = ("05_transformer_block", "06_autoregressive_lm")
SECRETS = ("first-course-secret", "second-course-secret")
STUDENTS = [f"student-{i:03d}" for i in range(6)]
_BUILT = {}


def cases(stem, seed):
    if (stem, seed) not in _BUILT:
        _BUILT[(stem, seed)] = build_cases(stem, seed)
    return _BUILT[(stem, seed)]


def seeds(stem):
    return [derive_seed(secret, student, stem) for secret in SECRETS for student in STUDENTS]


def _differs(out, expected):
    if isinstance(expected, tuple | list) and not isinstance(expected, np.ndarray):
        if not isinstance(out, tuple | list) or len(out) != len(expected):
            return True
        return any(_differs(o, e) for o, e in zip(out, expected, strict=True))
    if isinstance(expected, str | int) or isinstance(out, str | int):
        return out != expected
    out, expected = np.asarray(out, dtype=float), np.asarray(expected, dtype=float)
    if out.shape != expected.shape:
        return True
    with np.errstate(invalid="ignore"):
        return not np.allclose(out, expected, rtol=1e-4, atol=1e-5, equal_nan=True)


def separated(built):
    """{(function, label): True if some case's stored output for it differs from expected}."""
    seen = {}
    for case in built:
        params = getattr(case.judge, "params", {})
        variants, expected = params.get("variants"), params.get("expected", params.get("right"))
        if variants is None or expected is None:
            continue
        for entry in variants:
            label, out = entry[0], entry[1]
            if out is None:
                continue
            key = (case.function, label)
            seen[key] = seen.get(key, False) or _differs(out, expected)
    return seen


@pytest.mark.slow  # a sweep of students
@pytest.mark.parametrize("stem", STEMS)
def test_every_stored_variant_is_told_apart_for_every_student(stem):
    visible = separated(cases(stem, VISIBLE_SEED))
    assert all(visible.values()), [k for k, v in visible.items() if not v]
    for seed in seeds(stem):
        hidden = separated(cases(stem, seed))
        assert set(hidden) >= set(visible), (seed, set(visible) - set(hidden))
        blind = [key for key, told in hidden.items() if not told]
        assert not blind, (seed, blind)


# the mistakes whose detection rests on drawn data rather than on stored variant outputs
DRAWN = {"CharTokenizer", "generate", "make_examples", "get_batch"}


@pytest.mark.parametrize(
    "entry", [e for e in CATALOGUE + MORE if e[1] in DRAWN], ids=lambda e: e[0]
)
@pytest.mark.slow  # a sweep of students
def test_data_dependent_mistakes_lose_marks_for_every_student(entry):
    key, name, obj, *_ = entry
    for secret in SECRETS:
        for student in STUDENTS[:3]:
            results = run_in_process(name, obj, seed=derive_seed(secret, student, "06"))
            lost = sum(r.score for r in results) < sum(r.max_score for r in results)
            assert lost, f"{key} keeps full marks for {student} under {secret}:\n{show(results)}"


@pytest.mark.slow  # cases drawn for many secrets and students
@pytest.mark.parametrize("stem", STEMS)
def test_no_hidden_request_equals_a_visible_one(stem):
    visible = {}
    for case in cases(stem, VISIBLE_SEED):
        visible.setdefault(case.function, set()).update(fingerprints([case]))
    for seed in seeds(stem):
        for case in cases(stem, seed):
            assert visible[case.function].isdisjoint(fingerprints([case])), (seed, case.name)


def test_a_probe_with_a_fixed_request_is_refused_and_a_repeated_draw_is_redrawn():
    """The guarantee is real: a request that repeats the visible one is drawn again, and a
    probe whose request never changes raises instead of handing out visible inputs."""
    import torch

    from autograder.course.probes import PROBES, Case
    from autograder.course.torch_shared import tools as torch_tools

    def fixed(rng):
        return [Case("toy", "fixed", 1.0, [{"op": "call", "args": [torch.zeros(2)]}], None)]

    def small(rng):
        n = int(rng.integers(0, 3))  # three values: often the visible one
        return [Case("toy", "small", 1.0, [{"op": "call", "args": [n]}], None)]

    try:
        for build, refused in ((fixed, True), (small, False)):
            torch_tools._VISIBLE.pop("toy", None)
            torch_tools.torch_probe("toy")(build)
            visible = fingerprints(build(torch_tools._visible_rng("toy")))
            for student in range(20):
                rng = np.random.default_rng(derive_seed("secret", student, "toy"))
                if refused:
                    with pytest.raises(RuntimeError, match="keeps drawing a visible request"):
                        PROBES["toy"](rng)
                else:
                    assert visible.isdisjoint(fingerprints(PROBES["toy"](rng)))
    finally:
        PROBES.pop("toy", None)
        torch_tools._VISIBLE.pop("toy", None)
