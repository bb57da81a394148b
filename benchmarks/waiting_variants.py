"""What building a student's hidden cases costs the grader, with the known-wrong variants'
outputs worked out at once or left to wait until a judge reads them (autograder.judging.later).

    python benchmarks/waiting_variants.py [--students 6] [--runs 3]

For each student the grading process builds every notebook's cases (`build_cases`, the largest
part of its own CPU); a judge reads a case's variants only to name the mistake in a wrong
answer. This script builds the same students' cases in this one process, two ways, side by
side:

- at once: every Later worked out the moment its case is built (how the cases were built
  before variants could wait);
- waiting: as the grader builds them, then reading none of them, as judging a right answer
  reads none.

A wrong answer's case works its variants out when it is judged, at the cost the first way pays
for every case. Both ways build the same students from the same seeds, and the script checks
that both made the same requests (their fingerprints, `same_cases`) and that every variant the
second way left waiting, once worked out, equals the first way's (`same_variants`). It reports
the process's CPU per student for each way, medians over `--runs`, and their ratio (at once /
waiting). The LAST line is one JSON object, with the machine, its cores and the load before
and after.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from autograder.course.probes import build_cases, fingerprints  # noqa: E402
from autograder.curriculum import NOTEBOOKS  # noqa: E402
from autograder.judging.later import Later, resolved  # noqa: E402


def _sibling(name):
    spec = importlib.util.spec_from_file_location(name, REPO / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PEER = _sibling("grade_vs_nbgrader")  # cpu_model, load_average

FIRST_SEED = 2000  # the students' seeds: FIRST_SEED, FIRST_SEED + 1, ...
GRADED = [nb.stem for nb in NOTEBOOKS if nb.graded]


class _AtOnce:
    """While active, every Later is worked out the moment it is made."""

    def __enter__(self):
        self.made = Later.__init__

        def at_once(later, work, *args):
            self.made(later, work, *args)
            later.value  # noqa: B018 - reading it works it out

        Later.__init__ = at_once  # type: ignore[method-assign]

    def __exit__(self, *exc):
        Later.__init__ = self.made  # type: ignore[method-assign]


def class_of(students: int, at_once: bool):
    """(CPU-s a student, every student's cases) for one way of building."""
    seeds = range(FIRST_SEED, FIRST_SEED + students)
    cpu = time.process_time()
    if at_once:
        with _AtOnce():
            made = [[build_cases(stem, seed) for stem in GRADED] for seed in seeds]
    else:
        made = [[build_cases(stem, seed) for stem in GRADED] for seed in seeds]
    return (time.process_time() - cpu) / students, made


def _requests(made):
    return [sorted(fingerprints(cases)) for student in made for cases in student]


def _equal(a, b) -> bool:
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return (
            isinstance(b, list | tuple)
            and len(a) == len(b)
            and all(_equal(x, y) for x, y in zip(a, b, strict=True))
        )
    if isinstance(a, np.ndarray) or hasattr(a, "detach"):
        return np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True)
    return bool(a == b) or (a != a and b != b)


def _variants(made):
    """(how many Laters waited, every case's judge data worked out)."""
    cases = [case for student in made for notebook in student for case in notebook]
    waited = sum(
        isinstance(v, Later) and not v.done
        for case in cases
        for v in getattr(case.judge, "params", {}).values()
    )
    return waited, [resolved(getattr(case.judge, "params", None)) for case in cases]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=6)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    load_before = PEER.load_average()
    for stem in GRADED:  # imports, the probes' registration and the visible cases: once
        build_cases(stem, FIRST_SEED - 1)
    runs: dict[str, list[float]] = {"at_once_cpu": [], "waiting_cpu": []}
    same_cases = same_variants = True
    waited = 0
    for index in range(args.runs):
        # alternate which way goes first, so that neither always meets a warmer machine
        order = [("at_once", True), ("waiting", False)]
        made = {}
        for way, at_once in order if index % 2 == 0 else order[::-1]:
            cpu, made[way] = class_of(args.students, at_once)
            runs[f"{way}_cpu"].append(round(cpu, 4))
            print(f"run {index + 1} {way}: {cpu:.3f} CPU-s a student", flush=True)
        same_cases = same_cases and _requests(made["at_once"]) == _requests(made["waiting"])
        waited, late = _variants(made["waiting"])
        _, early = _variants(made["at_once"])
        same_variants = same_variants and _equal(early, late)
    medians = {name: round(statistics.median(values), 4) for name, values in runs.items()}
    result = {
        "students": args.students,
        "runs": runs,
        **medians,
        "cpu_ratio": round(medians["at_once_cpu"] / medians["waiting_cpu"], 3),
        "waited_per_student": round(waited / args.students, 1),
        "same_cases": same_cases,
        "same_variants": same_variants,
        "cpu": PEER.cpu_model(),
        "nproc": os.cpu_count(),
        "load_average_before": load_before,
        "load_average_after": PEER.load_average(),
    }
    print(json.dumps(result))
    return 0 if same_cases and same_variants and waited > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
