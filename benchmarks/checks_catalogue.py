"""How well the visible checks and the hidden tests see realistic mistakes in notebook 06's
training pieces (lr_at, configure_optimizer, train_step, generate) and notebook 07, and whether
every right answer keeps full marks.

    python benchmarks/checks_catalogue.py [--hidden 2] [--only KEY_PART]

The class: tests/catalogues/training_mutants.py, tests/catalogues/modern_lm_mutants.py (the existing catalogues) and
tests/catalogues/issue40_mutants.py (every item of issue 40 and RegexBPETokenizer's mistakes, with the
mistakes no behaviour shows kept as KNOWN_MISSES). For each wrong answer: caught (loses marks)
by the visible check (the public seed) and by the hidden tests (`--hidden` other secrets);
named = exactly its expected id (for an entry without one: no id at all, and its message says
the key phrase); misnamed = another id. Right answers: full marks under every seed. The last
line printed is one JSON object with the counts and percentages.
"""

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "catalogues")]

from autograder.checks import VISIBLE_SEED, run_in_process  # noqa: E402
from autograder.course.n06_autoregressive_lm import reference as R06  # noqa: E402
from autograder.course.probes import derive_seed  # noqa: E402

NOTEBOOK_06 = {"lr_at", "configure_optimizer", "train_step", "generate"}


def _class():
    import issue40_mutants as i40
    import modern_lm_mutants as m07
    import training_mutants as t06

    # the two catalogues already hold issue 40's entries (tests/catalogues/issue40_mutants.py)
    wrong = [(*e, True) for e in t06.MUTANTS + m07.WRONG]
    wrong += [(key, name, obj, None, None, False) for key, name, obj in i40.KNOWN_MISSES]
    right = [(key, name, obj) for key, name, obj in t06.RIGHT]
    right += [(f"{name}:{getattr(obj, '__name__', '?')}", name, obj) for name, obj in m07.RIGHT]
    assert len({e[0] for e in wrong}) == len(wrong), "a key twice in the class"
    return wrong, right


def _run(name, obj, seed):
    stem = "06" if name in NOTEBOOK_06 else "07"
    namespace = {"lm_loss": R06.lm_loss} if stem == "06" else None
    return run_in_process(name, obj, seed=seed, namespace=namespace)


def _verdict(results, expected, phrase):
    lost = sum(r.score for r in results) < sum(r.max_score for r in results)
    ids = {m for r in results for m in r.misconceptions}
    failed = [r for r in results if r.status == "failed"]
    if expected is not None:
        named = ids == {expected}
    else:
        named = not ids and (phrase is None or any(phrase in r.output for r in failed))
    misnamed = bool(ids - ({expected} if expected else set()))
    return lost, named, misnamed, ids, failed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hidden", type=int, default=2, help="hidden secrets per answer")
    parser.add_argument("--only", default="", help="only entries whose key contains this")
    args = parser.parse_args()
    wrong, right = _class()
    seeds = {
        stem: [derive_seed(f"secret-{i}", f"student-{i}", stem) for i in range(args.hidden)]
        for stem in ("06", "07")
    }
    tally = {"wrong": 0, "visible_caught": 0, "visible_named": 0, "visible_misnamed": 0}
    tally.update(hidden_runs=0, hidden_caught=0, hidden_named=0, hidden_misnamed=0)
    tally.update(right=0, right_full=0)
    for key, name, obj, expected, phrase, _asserted in wrong:
        if args.only not in key:
            continue
        lost, named, misnamed, ids, failed = _verdict(
            _run(name, obj, VISIBLE_SEED), expected, phrase
        )
        tally["wrong"] += 1
        tally["visible_caught"] += lost
        tally["visible_named"] += lost and named
        tally["visible_misnamed"] += misnamed
        hidden = []
        stem = "06" if name in NOTEBOOK_06 else "07"
        for seed in seeds[stem]:
            h_lost, h_named, h_misnamed, h_ids, _ = _verdict(
                _run(name, obj, seed), expected, phrase
            )
            tally["hidden_runs"] += 1
            tally["hidden_caught"] += h_lost
            tally["hidden_named"] += h_lost and h_named
            tally["hidden_misnamed"] += h_misnamed
            hidden.append(
                "MISSED" if not h_lost else "named" if h_named else f"not named {sorted(h_ids)}"
            )
        shown = failed[0].output[:160].replace("\n", " ") if failed else ""
        print(
            f"{key:32} visible {'caught' if lost else 'MISSED':6} "
            f"{'-' if not lost else 'named' if named else 'MISNAMED' if misnamed else 'UNNAMED':8} "
            f"ids={sorted(ids)} "
            f"want={expected} hidden={hidden} | {shown}"
        )
    for key, name, obj in right:
        if args.only not in key:
            continue
        stem = "06" if name in NOTEBOOK_06 else "07"
        full = all(
            sum(r.score for r in _run(name, obj, seed))
            == sum(r.max_score for r in _run(name, obj, seed))
            for seed in [VISIBLE_SEED, *seeds[stem]]
        )
        tally["right"] += 1
        tally["right_full"] += full
        print(f"{key:32} right answer: {'full marks' if full else 'LOST MARKS'}")

    def pct(a, b):
        return round(100 * a / b, 1) if b else None

    tally["percent"] = {
        "visible_caught": pct(tally["visible_caught"], tally["wrong"]),
        "visible_named": pct(tally["visible_named"], tally["wrong"]),
        "hidden_caught": pct(tally["hidden_caught"], tally["hidden_runs"]),
        "hidden_named": pct(tally["hidden_named"], tally["hidden_runs"]),
        "right_full": pct(tally["right_full"], tally["right"]),
    }
    print(json.dumps(tally))


if __name__ == "__main__":
    main()
