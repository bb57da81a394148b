"""Every judge right under every seed: the model answers graded through every hidden test of
every notebook, in this process, under many (secret, student) seeds.

    lost = sweep(seeds)            # [(seed, stem, function, case, points lost, message)]

A notebook takes part as soon as its probes are registered (probes.load), so a new notebook's
hidden tests join without a change here. The answers are autograder.course.model_answers's, served by the
harness in this process exactly as in a student's kernel (checks.run_in_process: the same
requests, the same judges), with every graded name of the course in the namespace, as a
notebook that imports its earlier exercises has them. No sandbox: this checks the judges and
the inputs the probes draw, not the isolation. tests/seed_sweep/test_seed_sweep.py runs a few hundred
seeds; benchmarks/seed_sweep.py thousands.
"""

import importlib
import tempfile
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any

from autograder.checks import SCRATCH
from autograder.course.probes import PROBES, build_cases, derive_seed, load, write_requests
from autograder.curriculum import NOTEBOOKS, Notebook
from autograder.harness import serve
from autograder.judging.answers import judge_cases
from autograder.judging.base import Case
from autograder.results import TestResult


def seeds(count: int, secret: str = "sweep-secret") -> list[tuple[str, str]]:
    """`count` (secret, student) pairs, each a notebook's seed as grading derives it."""
    return [(f"{secret}-{i % 7}", f"student-{i}") for i in range(count)]


def swept_notebooks() -> list[tuple[Notebook, list[str]]]:
    """The notebooks whose hidden tests are registered, with their graded names that have some."""
    out = []
    for notebook in NOTEBOOKS:
        load(notebook.stem)
        names = [name for name in notebook.graded if name in PROBES]
        if names:
            out.append((notebook, names))
    return out


def reference_namespace() -> dict[str, object]:
    """Every graded name of the course, as the model answers define it."""
    reference = importlib.import_module("autograder.course.model_answers")
    names = {name for notebook in NOTEBOOKS for name in notebook.graded}
    namespace = {}
    for name in names:
        try:
            namespace[name] = getattr(reference, name)
        except AttributeError:  # a notebook whose model answers are not written yet
            continue
    return namespace


def trains(case: Case) -> bool:
    """True for a case that trains a model (GPT's short training run): the costly kind."""
    return any(r is not None and r.get("op") == "train" for r in case.requests)


def grade(
    function: str,
    obj: object,
    seed: str,
    namespace: dict[str, Any],
    keep: Callable[[Case], bool] | None = None,
) -> list[TestResult]:
    """The TestResults of one graded name's hidden cases under `seed`, `obj` answering in this
    process (checks.run_in_process, with `keep(case)` choosing the cases to run)."""
    from autograder.curriculum import NOTEBOOK_OF

    cases = build_cases(NOTEBOOK_OF[function].stem, seed, functions={function})
    if keep is not None:
        cases = [case for case in cases if keep(case)]
    namespace = dict(namespace, **{function: obj})
    with tempfile.TemporaryDirectory(prefix="seed-sweep-", dir=SCRATCH) as tmp:
        write_requests(cases, Path(tmp, "requests"))
        if cases:
            serve(namespace, Path(tmp, "requests", function), Path(tmp, "responses", function))
        return judge_cases(cases, Path(tmp, "responses"))


def sweep(
    pairs: Sequence[tuple[str, str]], stems: Collection[str] | None = None, training: bool = True
) -> list[tuple[str, str, str, str, str, float, str]]:
    """[(secret, student, stem, function, case name, points lost, message)] for every case in
    which the model answers lose points, over the notebooks `stems` (default: all that have
    hidden tests); with training=False, without the cases that train a model."""
    namespace = reference_namespace()
    keep = None if training else (lambda case: not trains(case))
    lost = []
    for notebook, names in swept_notebooks():
        if stems is not None and notebook.stem not in stems:
            continue
        for secret, student in pairs:
            seed = derive_seed(secret, student, notebook.stem)
            for name in names:
                if name not in namespace:
                    continue
                for result in grade(name, namespace[name], seed, namespace, keep):
                    if result.score < result.max_score:
                        lost.append(
                            (
                                secret,
                                student,
                                notebook.stem,
                                name,
                                result.name,
                                result.max_score - result.score,
                                result.output,
                            )
                        )
    return lost


def training_cases(pairs: Sequence[tuple[str, str]]) -> list[tuple[str, str, float, str]]:
    """[(secret, student, points lost, message)] of the cases that train a model, alone."""
    namespace = reference_namespace()
    lost = []
    for notebook, names in swept_notebooks():
        probe_seed = derive_seed("which names train", notebook.stem)
        names = [
            name
            for name in names
            if name in namespace
            and any(trains(case) for case in build_cases(notebook.stem, probe_seed, {name}))
        ]
        for secret, student in pairs:
            seed = derive_seed(secret, student, notebook.stem)
            for name in names:
                for result in grade(name, namespace[name], seed, namespace, trains):
                    if result.score < result.max_score:
                        lost.append(
                            (secret, student, result.max_score - result.score, result.output)
                        )
    return lost
