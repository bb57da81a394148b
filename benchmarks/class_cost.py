"""What hostile students add to a class's cost: CPU and wall of grading N honest students alone,
against the same N plus an infinite loop, a sleeper, a flood of stderr, a cell of busy threads
and budget-maxers, side by side.

    nice python benchmarks/class_cost.py [--students 20] [--maxers 1] [--workers 2] [--timeout S]
    nice python benchmarks/class_cost.py --also sleeper-everywhere    # one more hostile student

The honest students are copies of the solutions. The others are the solutions with one change
each: "loop" redefines softmax (notebook 02) as `while True: pass` right where it is defined, so
the notebook's own checks and every hidden test of it call the loop; "sleeper" sleeps 18 s in a
cell of notebook 01 and 2 s in every call of its graded functions; "flood" writes 64 KB blocks to
stderr for ever in a cell of notebook 01; "threads" starts four busy threads per core (hashing,
which lets go of the GIL) in a cell of notebook 01 and waits for them for ever; each "maxer"
reads its budgets from the sandbox's job file (found through its processes' command lines) and,
in every notebook, burns about 85 % of the cells' CPU budget in its first cell (in its first
notebook, 85 % of the spare seconds all notebooks share as well) and 85 % of the hidden tests'
budget in the first call of each graded function under test. Each run is `python -m autograder grade`
with the same options; its CPU is user+sys of the whole process tree, sandboxes included, read
from a cgroup of its own (benchmarks/grade_vs_nbgrader.py's CpuMeter; rusage where none can be
made, which misses the sandboxes' reaped processes). The self-test runs first, outside the
measurement, so that both runs grade under the budgets it measures (unless --timeout is given).
Prints the machine (cores, CPU model, load averages), one row per run, the ratios (the goal:
1.5 or less for both), each hostile student's score, and ends with one JSON line.
"""

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parent.parent
SOLUTIONS = REPO / "solutions"
SECRET = "class-cost-benchmark"


def _sibling(name):
    spec = importlib.util.spec_from_file_location(name, REPO / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PEER = _sibling("grade_vs_nbgrader")  # CpuMeter, cpu_model, load_average

LOOP = "\n\ndef softmax(x, axis=-1):\n    while True:\n        pass\n"
SLEEP_CELL = "import time\ntime.sleep(18)"
SLEEP_CALLS = """\
import functools as _functools
import time as _time


def _slowly(function):
    @_functools.wraps(function)
    def wrapper(*args, **kwargs):
        _time.sleep(2)
        return function(*args, **kwargs)

    return wrapper


for _name in {names!r}:
    if _name in globals():
        globals()[_name] = _slowly(globals()[_name])
"""
FLOOD = "import os\nblock = b'x' * 65536\nwhile True:\n    os.write(2, block)"
THREADS = """\
import hashlib, os, threading
_block = b"x" * (1 << 20)
def _spin():
    while True:
        hashlib.sha256(_block).digest()
_threads = [threading.Thread(target=_spin, daemon=True) for _ in range(4 * (os.cpu_count() or 1))]
for _t in _threads:
    _t.start()
for _t in _threads:
    _t.join()
"""
MAXER_FIND = """\
import json as _json, os as _os, time as _time


def _my_budgets(stem):
    pid = _os.getpid()
    for _ in range(12):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                args = handle.read().split(bytes(1))
            with open(f"/proc/{pid}/stat") as handle:
                parent = int(handle.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            break
        for arg in args:
            if arg.endswith(b"job.json"):
                with open(arg) as handle:
                    job = _json.load(handle)
                for index, spec in enumerate(job["notebooks"]):
                    if spec["stem"] == stem:  # the spare seconds: all spent in the first one
                        spare = job.get("times", {}).get("spare_cpu_seconds", 0.0)
                        return {**spec, "spare": float(spare or 0.0) if index == 0 else 0.0}
        pid = parent
    return {"cells_seconds": 0.0, "tests_seconds": 0.0, "serve": {}}


def _burn(seconds):
    end = _time.process_time() + seconds
    while _time.process_time() < end:
        pass


_budget = _my_budgets(STEM)
_burn(0.85 * (float(_budget.get("cells_seconds") or 0.0) + _budget.get("spare", 0.0)))
"""
MAXER_TESTS = """\
import functools as _functools

_serve = _budget.get("serve") or {}
_share = float(_budget.get("tests_seconds") or 0.0) / max(1, len(_serve))


def _maxing(name, function):
    burnt = []

    @_functools.wraps(function)
    def wrapper(*args, **kwargs):
        if not burnt and "__autograder_serve__" in globals():  # under the hidden tests only
            burnt.append(True)
            _burn(0.85 * min(_share, float(_serve.get(name, 0.0))))
        return function(*args, **kwargs)

    return wrapper


for _name in NAMES:
    if _name in globals():
        globals()[_name] = _maxing(_name, globals()[_name])
"""
KINDS = ("loop", "sleeper", "flood", "threads")


def graded_names(stem):
    from autograder.curriculum import BY_STEM

    return list(BY_STEM[stem].graded)


def _defining_cell(nb, name):
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and any(
            f"{kind} {name}{end}" in cell.source for kind in ("def", "class") for end in "(:"
        ):
            return index
    raise SystemExit(f"no cell defines {name}")


def maxer(folder):
    """The solutions, each notebook spending about 85 % of each of its budgets."""
    folder.mkdir(parents=True)
    from autograder.curriculum import BY_STEM

    for path in sorted(SOLUTIONS.glob("*.ipynb")):
        if path.stem not in BY_STEM:  # an optional notebook, not graded: as it is
            shutil.copy(path, folder / path.name)
            continue
        nb = nbformat.read(path, as_version=4)
        names = graded_names(path.stem)
        if names:
            last = max(_defining_cell(nb, name) for name in names)
            tests = MAXER_TESTS.replace("NAMES", repr(names))
            nb.cells.insert(last + 1, nbformat.v4.new_code_cell(tests))
        find = MAXER_FIND.replace("STEM)", repr(path.stem) + ")")
        nb.cells.insert(0, nbformat.v4.new_code_cell(find))
        nbformat.write(nb, folder / path.name)


def hostile(kind, folder):
    """Write the solutions with one student's change into `folder`."""
    if kind.startswith("maxer"):
        return maxer(folder)
    folder.mkdir(parents=True)
    for path in sorted(SOLUTIONS.glob("*.ipynb")):
        shutil.copy(path, folder / path.name)
    if kind == "sleeper-everywhere":  # every graded notebook: a sleeping cell, sleeping calls
        from autograder.curriculum import BY_STEM

        for path in sorted(folder.glob("*.ipynb")):
            names = graded_names(path.stem) if path.stem in BY_STEM else []
            if not names:
                continue
            nb = nbformat.read(path, as_version=4)
            last = max(_defining_cell(nb, name) for name in names)
            nb.cells.insert(last + 1, nbformat.v4.new_code_cell(SLEEP_CALLS.format(names=names)))
            nb.cells.insert(1, nbformat.v4.new_code_cell(SLEEP_CELL))
            nbformat.write(nb, path)
        return
    if kind == "loop":
        path = folder / "02_dot_product_softmax.ipynb"
        nb = nbformat.read(path, as_version=4)
        nb.cells[_defining_cell(nb, "softmax")].source += LOOP
    else:
        path = folder / "01_soft_lookup.ipynb"
        nb = nbformat.read(path, as_version=4)
        names = graded_names("01_soft_lookup")
        last = max(_defining_cell(nb, name) for name in names)
        if kind == "sleeper":
            nb.cells.insert(last + 1, nbformat.v4.new_code_cell(SLEEP_CALLS.format(names=names)))
            nb.cells.insert(1, nbformat.v4.new_code_cell(SLEEP_CELL))
        elif kind == "threads":
            nb.cells.insert(last + 1, nbformat.v4.new_code_cell(THREADS))
        else:
            nb.cells.insert(last + 1, nbformat.v4.new_code_cell(FLOOD))
    nbformat.write(nb, path)


def hostile_kinds(maxers, also=()):
    return [*KINDS, *(f"maxer{i + 1}" for i in range(maxers)), *also]


def build(root, students, kinds=()):
    for i in range(students):
        folder = root / f"honest{i + 1:02d}"
        folder.mkdir(parents=True)
        for path in sorted(SOLUTIONS.glob("*.ipynb")):
            shutil.copy(path, folder / path.name)
    for kind in kinds:
        hostile(kind, root / kind)
    return root


def options(args):
    """The sandbox's options, the same for the self-test and both runs (its cache key)."""
    found = ["--workers", str(args.workers), "--memory", str(args.memory)]
    if args.timeout is not None:
        found += ["--timeout", str(args.timeout)]
    return found


def grade(class_dir, out, args):
    argv = [sys.executable, "-m", "autograder", "grade", str(class_dir), "--out", str(out)]
    argv += ["--force", "--quiet", "--secret", SECRET, *options(args)]
    started = time.perf_counter()
    with PEER.CpuMeter() as cpu:
        done = subprocess.run(argv, capture_output=True, text=True, cwd=REPO)
    wall = time.perf_counter() - started
    scores, cpu_each = {}, {}
    for results in sorted(Path(out).glob("*/results.json")):
        payload = json.loads(results.read_text())
        scores[results.parent.name] = (payload["score"], payload["max_score"])
        cpu_each[results.parent.name] = payload.get("cpu_seconds")
    budgets = [line for line in done.stderr.splitlines() if line.startswith("time budgets")]
    return {
        "cpu": cpu.seconds,
        "wall": wall,
        "method": cpu.method,
        "status": done.returncode,
        "scores": scores,
        "cpu_each": cpu_each,  # the parent's count of each student's sandbox CPU seconds
        "budgets": budgets[0] if budgets else "",
        "stderr": done.stderr[-2000:],
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--students", type=int, default=20, help="honest students (default 20)")
    parser.add_argument("--maxers", type=int, default=1, help="budget-maxers (default 1)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--memory", type=float, default=2.0, help="GB per sandbox process")
    parser.add_argument(
        "--timeout", type=float, default=None, help="default: the self-test's measured budgets"
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary folders")
    parser.add_argument(
        "--also",
        action="append",
        default=[],
        choices=["sleeper-everywhere"],
        help="another hostile student: sleeper-everywhere sleeps 18 s in a cell of every graded "
        "notebook and 2 s in every call of its graded functions",
    )
    args = parser.parse_args(argv)

    machine = {
        "nproc": os.cpu_count(),
        "cpu": PEER.cpu_model(),
        "load_average_at_start": PEER.load_average(),
        "niceness": os.nice(0),
    }
    print(
        f"machine: {machine['nproc']} cores, {machine['cpu']}, load average "
        f"{machine['load_average_at_start']}, nice {machine['niceness']}"
    )
    env_check = subprocess.run(
        [sys.executable, "-m", "autograder", "selftest", *options(args)],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    if env_check.returncode != 0:
        raise SystemExit(f"the self-test failed:\n{env_check.stdout}\n{env_check.stderr}")
    print(env_check.stdout.strip().splitlines()[-1])

    root = Path(tempfile.mkdtemp(prefix="class-cost-"))
    try:
        honest = grade(build(root / "honest", args.students), root / "out-honest", args)
        print(f"{args.students} honest: {honest['cpu']:.1f} CPU-s, {honest['wall']:.1f} s wall")
        kinds = hostile_kinds(args.maxers, args.also)
        mixed = grade(build(root / "mixed", args.students, kinds), root / "out-mixed", args)
        print(
            f"{args.students} honest + {', '.join(kinds)}: {mixed['cpu']:.1f} CPU-s, "
            f"{mixed['wall']:.1f} s wall"
        )
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
        else:
            print(f"kept: {root}")
    for run in (honest, mixed):
        if run["status"] not in (0, 1):
            print(run["stderr"], file=sys.stderr)
    machine["load_average_at_end"] = PEER.load_average()
    cpu_ratio = mixed["cpu"] / honest["cpu"]
    wall_ratio = mixed["wall"] / honest["wall"]
    full = [s for name, s in honest["scores"].items() if s[0] == s[1]]
    print(f"budgets: {mixed['budgets'] or 'as --timeout says'}")
    print(f"honest students with full marks: {len(full)} of {len(honest['scores'])}")
    for kind in kinds:
        score, cpu = mixed["scores"].get(kind), mixed["cpu_each"].get(kind)
        spent = f", {cpu:.1f} CPU-s" if isinstance(cpu, int | float) else ""
        print(f"  {kind}: {score[0]:g} / {score[1]:g}{spent}" if score else f"  {kind}: no results")
    print(
        f"ratio (with the {len(kinds)} / honest alone): CPU {cpu_ratio:.2f}, wall {wall_ratio:.2f} "
        f"(goal: 1.5 or less); measured by {honest['method']}; load average at the end "
        f"{machine['load_average_at_end']}"
    )
    print(
        json.dumps(
            {
                "students": args.students,
                "workers": args.workers,
                "honest_cpu": round(honest["cpu"], 2),
                "honest_wall": round(honest["wall"], 2),
                "mixed_cpu": round(mixed["cpu"], 2),
                "mixed_wall": round(mixed["wall"], 2),
                "cpu_ratio": round(cpu_ratio, 3),
                "wall_ratio": round(wall_ratio, 3),
                "hostile_scores": {k: mixed["scores"].get(k) for k in kinds},
                "hostile_cpu": {k: mixed["cpu_each"].get(k) for k in kinds},
                "honest_full_marks": len(full),
                "budgets": mixed["budgets"],
                "method": honest["method"],
                **machine,
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
