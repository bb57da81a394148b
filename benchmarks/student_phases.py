"""Where one student's grading CPU goes, phase by phase: the table of docs/maintainers.md.

    python benchmarks/student_phases.py                      # examples/class/ada and blank
    python benchmarks/student_phases.py --students ada --runs 3

Grades each student alone (`python -m autograder grade ... --workers 1 --keep-work`, the
self-test skipped: it is paid once per environment) and splits the CPU of the whole process tree
(a cgroup of its own: grade_vs_nbgrader.py's CpuMeter) into the parent's and the sandbox's; the
sandbox's is split again by the readings of its own CPU clock that the driver writes into each
notebook's status at each phase's start (sandbox/inside/driver.py, status["clock"]):

- start: bubblewrap's start and the driver's own (its imports, the zygote's fork) up to its first
  notebook;
- kernel: from asking for a notebook's kernel to its first cell (the fork, IPKernelApp, the
  harness's watch). The zygote imports while the first kernel is asked for (numpy, ipykernel,
  matplotlib: in the first notebook's kernel phase) and torch when the first notebook that uses
  it asks (in that notebook's): the JSON has each notebook's kernel phase;
- cells: the notebook's own cells (its demonstration cells skipped);
- tests: the integrity facts, the harness's start and the hidden tests of its graded names;
- shutdown: the kernel's end and the driver's bookkeeping until the next notebook.

"rest" is what the clock readings miss: the driver's end after its last notebook. The JSON of
every run is the LAST line.
"""

import argparse
import importlib.util
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PHASES = ("kernel", "cells", "tests", "shutdown")


def _sibling(name: str):
    spec = importlib.util.spec_from_file_location(name, REPO / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def grade_one(student: Path, root: Path) -> dict:
    """Grade `student` alone; {"total", "sandbox", "parent", "start", "end", phases...} in CPU-s."""
    meter_module = _sibling("grade_vs_nbgrader")
    folder = root / "class"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    shutil.copytree(student, folder / student.name)
    work = root / "work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    env = dict(os.environ, AUTOGRADER_WORK_DIR=str(work))
    argv = [sys.executable, "-m", "autograder", "grade", str(folder), "--out", str(root / "out")]
    argv += ["--workers", "1", "--force", "--quiet", "--skip-selftest", "--keep-work"]
    with meter_module.CpuMeter() as meter:
        done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"grading failed ({done.returncode}):\n{done.stderr[-3000:]}")
    results = json.loads((root / "out" / student.name / "results.json").read_text())
    statuses = sorted(work.glob("**/run/status/*.json"))
    row = {
        "total": meter.seconds,
        "sandbox": float(results["cpu_seconds"]),
        "score": results["score"],
    }
    row["parent"] = row["total"] - row["sandbox"]
    row.update({phase: 0.0 for phase in PHASES})
    clocks = [json.loads(p.read_text()).get("clock") for p in statuses]
    clocks = sorted((c for c in clocks if c), key=lambda c: c["kernel"])
    row["kernel_by_notebook"], row["tests_by_notebook"] = [], []
    for clock, after in zip(clocks, clocks[1:] + [None], strict=True):
        marks = [clock["kernel"], clock.get("cells"), clock.get("tests"), clock.get("shutdown")]
        ends = marks[1:] + [after["kernel"] if after else clock.get("ended")]
        for phase, begin, end in zip(PHASES, marks, ends, strict=True):
            if begin is not None and end is not None:
                row[phase] += end - begin
        if marks[1] is not None:
            row["kernel_by_notebook"].append(round(marks[1] - marks[0], 3))
        if marks[2] is not None and marks[3] is not None:
            row["tests_by_notebook"].append(round(marks[3] - marks[2], 3))
    row["start"] = clocks[0]["kernel"] if clocks else 0.0
    row["rest"] = row["sandbox"] - row["start"] - sum(row[p] for p in PHASES)
    row["notebooks"] = len(clocks)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--students", default="ada,blank", help="examples/class folders")
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    rows: dict[str, list[dict]] = {}
    with tempfile.TemporaryDirectory(prefix="student-phases-") as tmp:
        for _ in range(args.runs):
            for name in args.students.split(","):
                student = REPO / "examples" / "class" / name
                rows.setdefault(name, []).append(grade_one(student, Path(tmp) / name))
    columns = ("total", "parent", "sandbox", "start", *PHASES, "rest")
    print(f"{'student':<10}" + "".join(f"{c:>10}" for c in columns) + "   (CPU-s, median of runs)")
    medians = {}
    for name, runs in rows.items():
        medians[name] = {c: round(statistics.median(r[c] for r in runs), 2) for c in columns}
        print(f"{name:<10}" + "".join(f"{medians[name][c]:>10.2f}" for c in columns))
    machine = {
        "nproc": os.cpu_count(),
        "cpu": platform.processor() or platform.machine(),
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
    }
    print(json.dumps({"medians": medians, "runs": rows, **machine}))


if __name__ == "__main__":
    main()
