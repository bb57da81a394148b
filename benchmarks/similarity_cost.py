"""What the similarity report (autograder/report/similarity.py) adds to a class run: the time to
compare N students' notebooks, every graded name of every notebook.

    python benchmarks/similarity_cost.py [--students 200] [--repeat 3] [--keep DIR]

The class is benchmarks/class_cost.py's honest students (the solutions' seven notebooks each),
with one change: the first line of every top-level definition of every student ends with a
comment of its own (`# honest17`), so that no definition's text repeats and the report parses
and fingerprints every student's every definition (its cache of texts met before is of no help:
the worst case, where a real class repeats the released helpers and the common answers). The comparison is timed in this process, as `grade` runs it after
grading: the released notebooks read, each student's notebooks read and parsed, the
fingerprints, the index and the pairs, similarity.csv's text and the page's data. Prints the
machine (cores, load averages), each repetition's wall and CPU seconds (the CPU of the
processes that read the class included: a class of 200 is read by as many as the cores allow,
report/similarity.py), the peak memory, and ends with one JSON line.
"""

import argparse
import importlib.util
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

FIRST_LINE = re.compile(r"^(?:def|class) .*$", re.MULTILINE)  # of a top-level definition
REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # run from a checkout without installing


def _sibling(name):
    spec = importlib.util.spec_from_file_location(name, REPO / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build(root, students):
    """{student: folder}: class_cost.py's honest students, each cell made the student's own."""
    _sibling("class_cost").build(root, students, with_hostile=False)
    folders = {}
    for folder in sorted(Path(root).iterdir()):
        for path in folder.glob("*.ipynb"):
            nb = nbformat.read(path, as_version=4)
            for cell in nb.cells:
                if cell.cell_type == "code":
                    cell.source = FIRST_LINE.sub(rf"\g<0>  # {folder.name}", cell.source)
            nbformat.write(nb, path)
        folders[folder.name] = folder
    return folders


def _children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(folders):
    """(wall s, CPU s, pairs listed) of one comparison of the class; the CPU is this process's
    and its reading processes' (reaped when the comparison ends)."""
    from autograder.report import SavedResult
    from autograder.report.similarity import class_similarity, similarity_csv, similarity_view

    students = [SavedResult(s, {"student": s, "tests": []}) for s in folders]
    wall, cpu = time.perf_counter(), time.process_time() + _children_cpu()
    report = class_similarity(students, folders)
    similarity_csv(report)
    similarity_view(report)
    cpu = time.process_time() + _children_cpu() - cpu
    return time.perf_counter() - wall, cpu, len(report["pairs"])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3, help="timed runs (a fresh process each)")
    parser.add_argument("--keep", help="build the class in this folder and keep it")
    args = parser.parse_args(argv)

    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="similarity-cost-"))
    try:
        folders = build(root / "class", args.students)
        print(f"cores {os.cpu_count()}, load averages before {os.getloadavg()}")
        runs = []
        for _ in range(args.repeat):  # a fresh process: no parse cached from the last run
            code = (
                "import json, sys; sys.path.insert(0, sys.argv[1]);"
                "from similarity_cost import measure; from pathlib import Path;"
                "folders = {p.name: p for p in sorted(Path(sys.argv[2]).iterdir())};"
                "print(json.dumps(measure(folders)))"
            )
            done = subprocess.run(
                [sys.executable, "-c", code, str(REPO / "benchmarks"), str(root / "class")],
                capture_output=True,
                text=True,
                check=True,
                cwd=REPO,
            )
            wall, cpu, pairs = json.loads(done.stdout.strip().splitlines()[-1])
            runs.append({"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "pairs": pairs})
            print(f"{len(folders)} students: {wall:.2f} s wall, {cpu:.2f} s CPU, {pairs} pairs")
        print(f"load averages after {os.getloadavg()}")
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024
        print(json.dumps({"students": len(folders), "runs": runs, "peak_rss_mb": peak}))
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
