"""Issue 19, notebooks 05-06: every catalogued mistake is caught, named for what it is, by the
visible check and the grader alike.

The catalogue is test_diagnosis_torch.py's and torch_mutants.py's: realistic wrong answers,
each with the diagnosis it should get (an id, or none and a key phrase of the message). For
each notebook this measures, on the visible seed:
- caught: the answer loses marks;
- named exactly: its expected id and no other (or no id, and the key phrase is said);
- misleading: a test names an id that is not the expected one;
- vague: caught, neither named exactly nor misleading;
and the grader's agreement: under two hidden seeds (other secrets, other students) the answer
is caught exactly when the visible check catches it, with the same ids. The figures are printed
and asserted: >= 97 % caught, >= 85 % named exactly, no misleading message, 100 % agreement.
GPT answers are judged without the training run (conftest.cheap_training), on one thread.
"""

import pytest
import torch_mutants
from fixtures import cheap_training
from sweeps import first_of_each_name
from torch_diagnosis_mutants import CATALOGUE
from torch_probe_mutants import NAMES_05, NAMES_06, show
from verdicts import ids as _ids
from verdicts import lost as _lost

from autograder.checks import VISIBLE_SEED, run_in_process
from autograder.course.n06_autoregressive_lm import cases_gpt as lm_probes
from autograder.course.probes import derive_seed

pytestmark = pytest.mark.usefixtures("one_thread")

ENTRIES = CATALOGUE + torch_mutants.MORE
HIDDEN = [("ci-secret-one", "student-17"), ("ci-secret-two", "student-42")]
NOTEBOOKS = {"05": NAMES_05, "06": NAMES_06}


def _run(name, obj, seed):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(lm_probes, "_train_case", cheap_training)
        return run_in_process(name, obj, seed=seed)


def measure(entry):
    """{caught, named, misleading, agree, why} for one catalogue entry."""
    key, name, obj, expected, phrase = entry
    stem = "05" if name in NAMES_05 else "06"
    results = _run(name, obj, VISIBLE_SEED)
    caught, ids = _lost(results), _ids(results)
    want = set() if expected is None else {expected}
    failed = [r for r in results if r.status == "failed"]
    said = phrase is None or any(phrase in r.output for r in failed)
    one_each = all(len(r.misconceptions) <= 1 for r in results)
    named = caught and ids == want and said and one_each
    misleading = bool(ids - want)
    agree = True
    for secret, student in HIDDEN:
        hidden = _run(name, obj, derive_seed(secret, student, stem))
        agree &= _lost(hidden) == caught and _ids(hidden) == ids
    why = "" if named and agree else show(results)
    return {"caught": caught, "named": named, "misleading": misleading, "agree": agree, "why": why}


_MEASURED = {}


def measured():
    if not _MEASURED:
        for entry in ENTRIES:
            _MEASURED[entry[0]] = (entry[1], measure(entry))
    return _MEASURED


def test_the_catalogue_is_large_and_its_keys_unique():
    keys = [e[0] for e in ENTRIES]
    assert len(keys) == len(set(keys))
    for nb, names in NOTEBOOKS.items():
        per = [e for e in ENTRIES if e[1] in names]
        assert len(per) >= 50, (nb, len(per))
        assert {e[1] for e in per} == set(names)


@pytest.mark.slow  # the whole catalogue under three seeds: minutes of CPU
@pytest.mark.parametrize("nb", sorted(NOTEBOOKS))
def test_caught_named_exactly_never_misleading_and_the_grader_agrees(nb, capsys):
    rows = [m for name, m in measured().values() if name in NOTEBOOKS[nb]]
    n = len(rows)
    caught = sum(m["caught"] for m in rows) / n
    named = sum(m["named"] for m in rows) / n
    misleading = sum(m["misleading"] for m in rows)
    vague = sum(m["caught"] and not m["named"] and not m["misleading"] for m in rows)
    agree = sum(m["agree"] for m in rows) / n
    with capsys.disabled():
        print(
            f"\nnotebook {nb}: {n} mistakes; caught {caught:.1%}, named exactly {named:.1%}, "
            f"vague {vague}, misleading {misleading}, visible check and grader agree {agree:.1%}"
        )
    bad = {k: m["why"] for k, (name, m) in measured().items() if name in NOTEBOOKS[nb] and m["why"]}
    assert caught >= 0.97 and named >= 0.85 and misleading == 0 and agree == 1.0, bad


@pytest.mark.parametrize(
    ("name", "obj"),
    first_of_each_name(torch_mutants.RIGHT),  # the others of a name: slow (each trains a GPT)
    ids=lambda v: getattr(v, "__name__", v),
)
def test_right_answers_in_other_styles_keep_full_marks(name, obj):
    for seed in (VISIBLE_SEED, derive_seed(*HIDDEN[0], "06")):
        results = _run(name, obj, seed)
        assert not _lost(results), show(results)
