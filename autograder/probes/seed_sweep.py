"""Every judge right under every seed: the model answers graded through every hidden test of
every notebook, in this process, under many (secret, student) seeds.

    lost = sweep(seeds)            # [(seed, stem, function, case, points lost, message)]

A notebook takes part as soon as its probes are registered (probes.load), so a new notebook's
hidden tests join without a change here. The answers are autograder.reference's, served by the
harness in this process exactly as in a student's kernel (checks.run_in_process: the same
requests, the same judges), with every graded name of the course in the namespace, as a
notebook that imports its earlier exercises has them. No sandbox: this checks the judges and
the inputs the probes draw, not the isolation. tests/test_seed_sweep.py runs a few hundred
seeds; benchmarks/seed_sweep.py thousands.
"""

import importlib

from autograder.checks import run_in_process
from autograder.curriculum import NOTEBOOKS
from autograder.probes import load
from autograder.probes.base import PROBES, derive_seed


def seeds(count, secret="sweep-secret"):
    """`count` (secret, student) pairs, each a notebook's seed as grading derives it."""
    return [(f"{secret}-{i % 7}", f"student-{i}") for i in range(count)]


def swept_notebooks():
    """The notebooks whose hidden tests are registered, with their graded names that have some."""
    out = []
    for notebook in NOTEBOOKS:
        load(notebook.stem)
        names = [name for name in notebook.graded if name in PROBES]
        if names:
            out.append((notebook, names))
    return out


def reference_namespace():
    """Every graded name of the course, as the model answers define it."""
    reference = importlib.import_module("autograder.reference")
    names = {name for notebook in NOTEBOOKS for name in notebook.graded}
    namespace = {}
    for name in names:
        try:
            namespace[name] = getattr(reference, name)
        except AttributeError:  # a notebook whose model answers are not written yet
            continue
    return namespace


def sweep(pairs, skip=None):
    """[(secret, student, stem, function, case name, points lost, message)] for every case in
    which the model answers lose points; `skip(function)` leaves graded names out."""
    namespace = reference_namespace()
    lost = []
    for notebook, names in swept_notebooks():
        for secret, student in pairs:
            seed = derive_seed(secret, student, notebook.stem)
            for name in names:
                if (skip and skip(name)) or name not in namespace:
                    continue
                for result in run_in_process(name, namespace[name], seed=seed, namespace=namespace):
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
