"""How well notebook 08's visible check sees the realistic mistakes of tests/catalogues/real_models_mutants.py,
and how many it names with their catalogue id.

    python benchmarks/real_models_catalogue.py [--seed N]

For each wrong answer, on the visible seed (or `--seed`): caught = it loses marks; named = the
tests give exactly one catalogue id, and it is the entry's expected one; unnamed = caught with
no id (the message alone explains it); misnamed = another id. Right answers: full marks. The last
line printed is one JSON object with the counts.
"""

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from autograder.checks import VISIBLE_SEED, run_in_process  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", default=VISIBLE_SEED)
    args = parser.parse_args(argv)
    import real_models_mutants as mutants

    counts = {"wrong": 0, "caught": 0, "named": 0, "unnamed": 0, "misnamed": 0}
    for key, name, obj, expected, _ in mutants.WRONG:
        results = run_in_process(name, obj, seed=args.seed, namespace=mutants.NAMESPACE.get(name))
        lost = sum(r.score for r in results) < sum(r.max_score for r in results)
        ids = {m for r in results for m in r.misconceptions}
        counts["wrong"] += 1
        counts["caught"] += lost
        counts["named"] += bool(expected) and ids == {expected}
        counts["unnamed"] += lost and not ids
        counts["misnamed"] += bool(ids - {expected})
        shown = "named" if expected and ids == {expected} else sorted(ids) or "no id"
        print(f"{key:34s} {'caught' if lost else 'MISSED':7s} {shown}")
    right = [0, 0]
    for name, obj in mutants.RIGHT:
        results = run_in_process(name, obj, seed=args.seed, namespace=mutants.NAMESPACE.get(name))
        right[0] += 1
        right[1] += sum(r.score for r in results) == sum(r.max_score for r in results)
    counts["right"], counts["right_full_marks"] = right
    counts["named_percent"] = round(100 * counts["named"] / counts["wrong"], 1)
    print(json.dumps(counts))


if __name__ == "__main__":
    main()
