"""Seconds to run one tiny notebook (one cell, cold kernel) through Sandbox.run, start to teardown.

    python benchmarks/sandbox_start.py [--tree DIR ...] [--rounds 2] [--runs 3]

Each --tree is a checkout of this project (default: this one); the trees take turns (rounds), so
a busy machine weighs on all of them alike. Prints one line per tree: the median and every run.
Used for the per-sandbox cost of the isolation (user namespace, seccomp, cgroup, tmpfs mounts)
in docs/grader.md: the checkout before it against the one after it.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ONE_TREE = r"""
import json, sys, tempfile, time, warnings
from pathlib import Path
warnings.simplefilter("ignore")
import nbformat
from autograder.sandbox import Limits, NotebookJob, Sandbox
box = Sandbox(Limits(timeout=30), warm=False)
tmp = Path(tempfile.mkdtemp(prefix="sandbox-start-"))
(tmp / "student").mkdir()
(tmp / "requests").mkdir()
nb = nbformat.v4.new_notebook()
nb.cells = [nbformat.v4.new_code_cell("x = 1")]
nbformat.write(nb, tmp / "student" / "01_soft_lookup.ipynb")
job = NotebookJob("01_soft_lookup", "01_soft_lookup.ipynb", tmp / "requests", {})
times = []
for i in range(int(sys.argv[1])):
    started = time.monotonic()
    runs = box.run(tmp / "student", [job], tmp / f"work{i}")
    times.append(time.monotonic() - started)
    assert runs["01_soft_lookup"].executed_ok, runs
box.close()
import shutil
shutil.rmtree(tmp, ignore_errors=True)
print(json.dumps(times))
"""


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", action="append", default=[])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    trees = args.tree or [str(Path(__file__).resolve().parent.parent)]
    seconds = {tree: [] for tree in trees}
    for _ in range(args.rounds):
        for tree in trees:
            done = subprocess.run(
                [sys.executable, "-c", ONE_TREE, str(args.runs)],
                env=dict(os.environ, PYTHONPATH=tree),
                cwd=tree,
                capture_output=True,
                text=True,
                check=True,
            )
            seconds[tree] += json.loads(done.stdout.strip().splitlines()[-1])
    for tree, values in seconds.items():
        runs = ", ".join(f"{v:.2f}" for v in values)
        print(f"{tree}: median {statistics.median(values):.2f} s ({runs})")


if __name__ == "__main__":
    main()
