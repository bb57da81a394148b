"""The grader's own work for a student, done by several worker threads at once or one at a time.

    python benchmarks/parent_threads.py [--students 6] [--threads 3] [--runs 3]

In a class run, each worker thread of the grading process draws its student's hidden cases
(every notebook's `build_cases`, the largest part of the parent's own CPU), waits for her
sandbox, then judges her answers. Drawing cases is Python holding the GIL most of the time.
This script draws the same students' cases in this one process, two ways, side by side:

- at once: `--threads` threads, each drawing whole students, all free to run together;
- in turns: the same threads, each taking grading/student.py's PARENT_TURN lock around a
  student's cases, as the grader does.

Both draw the same students from the same seeds, and the script checks that both ways made
the same requests (their fingerprints, `same_cases`). It reports the process's CPU (all its
threads) and the wall time per student for each way, medians over `--runs`, and their ratios
(at once / in turns). The LAST line is one JSON object, with the machine, its cores and the load
before and after.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import json
import os
import statistics
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from autograder.course.probes import build_cases, fingerprints  # noqa: E402
from autograder.curriculum import NOTEBOOKS  # noqa: E402
from autograder.grading.student import PARENT_TURN  # noqa: E402


def _sibling(name):
    spec = importlib.util.spec_from_file_location(name, REPO / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PEER = _sibling("grade_vs_nbgrader")  # cpu_model, load_average

FIRST_SEED = 1000  # the students' seeds: FIRST_SEED, FIRST_SEED + 1, ...


def one_student(seed: int, turn: threading.Lock | None) -> list[str]:
    """Every notebook's cases for the student of `seed`, as their fingerprints (drawn holding
    `turn`, when one is given)."""
    with turn or contextlib.nullcontext():
        return [f for nb in NOTEBOOKS for f in fingerprints(build_cases(nb.stem, seed))]


def class_of(students: int, threads: int, turn: threading.Lock | None):
    """(CPU-s a student, wall s a student, the fingerprints) for one way of drawing."""
    seeds = range(FIRST_SEED, FIRST_SEED + students)
    cpu, wall = time.process_time(), time.perf_counter()
    with ThreadPoolExecutor(max_workers=threads) as pool:
        made = list(pool.map(lambda seed: one_student(seed, turn), seeds))
    return (
        (time.process_time() - cpu) / students,
        (time.perf_counter() - wall) / students,
        made,
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=6)
    parser.add_argument("--threads", type=int, default=3, help="the grader's default on 2 cores")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    load_before = PEER.load_average()
    for nb in NOTEBOOKS:  # imports, the probes' registration and the visible cases: once
        build_cases(nb.stem, FIRST_SEED - 1)
    runs: dict[str, list[float]] = {
        "at_once_cpu": [],
        "at_once_wall": [],
        "in_turns_cpu": [],
        "in_turns_wall": [],
    }
    same = True
    for index in range(args.runs):
        # alternate which way goes first, so that neither always meets a warmer machine
        order = [("at_once", None), ("in_turns", PARENT_TURN)]
        made = {}
        for way, turn in order if index % 2 == 0 else order[::-1]:
            cpu, wall, made[way] = class_of(args.students, args.threads, turn)
            runs[f"{way}_cpu"].append(round(cpu, 4))
            runs[f"{way}_wall"].append(round(wall, 4))
            print(f"run {index + 1} {way}: {cpu:.3f} CPU-s, {wall:.3f} s a student", flush=True)
        same = same and made["at_once"] == made["in_turns"]
    medians = {name: round(statistics.median(values), 4) for name, values in runs.items()}
    result = {
        "students": args.students,
        "threads": args.threads,
        "runs": runs,
        **medians,
        "cpu_ratio": round(medians["at_once_cpu"] / medians["in_turns_cpu"], 3),
        "wall_ratio": round(medians["at_once_wall"] / medians["in_turns_wall"], 3),
        "same_cases": same,
        "cpu": PEER.cpu_model(),
        "nproc": os.cpu_count(),
        "load_average_before": load_before,
        "load_average_after": PEER.load_average(),
    }
    print(json.dumps(result))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
