"""An honest student's score and time (a) alone, (b) next to a CPU-burning neighbour, (c) under
an external load of 4x the cores: verdicts must not depend on the machine's load.

    python benchmarks/load_fairness.py [--tree DIR ...] [--notebooks 02,04] [--timeout 300] [--json]

Each --tree is a checkout of this project with its .venv (default: this one), graded by its own
grader (the neighbour too), so a version can be compared with an earlier one side by side.

(b) grades the honest student (the solutions) while another grading run, started first, grades a
neighbour whose every notebook starts 200 busy processes, each in its own process session, and
then loops (Neighbour; stopped when the honest student is done, so the table does not wait for
the neighbour's own time limits). tests/sandbox/test_load_fairness.py grades the two in one run with
--workers 2. (c) grades the honest student alone while this script runs 4 x cores busy
processes, each in a session of its own (burners.py's burning). Prints one table row per case: the honest student's score,
the wall seconds of its grading (results.json execution_time) and of the whole run, and how many
busy processes were running when its grading started. Scores must be full in every row; times
are the machine's.
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(
    0, str(REPO / "benchmarks")
)  # burners.py, shared with run_all.py and class_of_200.py

from burners import BURN, burning  # noqa: E402

BURNER = (
    "import subprocess\n"
    "burners = [subprocess.Popen(['sh', '-c', 'while :; do :; done'], start_new_session=True)\n"
    "           for _ in range(200)]\n"
    "while True:\n"
    "    pass\n"
)


class Neighbour:
    """Another grading run, of one student whose notebooks burn the CPU; killed on exit."""

    def __init__(self, root, notebooks, tree=REPO):
        self.root, self.notebooks, self.tree = Path(root), notebooks, Path(tree)
        self.proc = None

    def __enter__(self):
        class_dir = self.root / "neighbour-class"
        make_class(class_dir, self.notebooks, neighbour=True)
        shutil.rmtree(class_dir / "honest")
        argv = [python(self.tree), "-m", "autograder", "grade", str(class_dir)]
        argv += ["--out", str(self.root / "neighbour-out"), "--workers", "1", "--quiet"]
        argv += ["--secret", "load-fairness", "--memory", "2"]
        self.proc = subprocess.Popen(
            argv,
            cwd=self.tree,
            start_new_session=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and busy_processes() < 100:  # burning now
            time.sleep(0.5)
        return self

    def __exit__(self, *exc):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:
            pass
        self.proc.wait()


SPINNING = (b"while :; do :; done", BURN[-1].encode())  # the neighbour's and burning()'s loops


def busy_processes():
    count = 0
    for proc in Path("/proc").iterdir():
        try:
            cmdline = (proc / "cmdline").read_bytes() if proc.name.isdigit() else b""
            if any(loop in cmdline for loop in SPINNING):
                count += 1
        except OSError:
            pass
    return count


def notebook_files(notebooks):
    return sorted(p for p in (REPO / "solutions").glob("*.ipynb") if p.name[:2] in notebooks)


def make_class(root, notebooks, neighbour=False):
    """root/honest (the solutions' notebooks) and, with neighbour, root/neighbour (burners)."""
    honest = root / "honest"
    honest.mkdir(parents=True)
    for path in notebook_files(notebooks):
        shutil.copy(path, honest / path.name)
        if neighbour:
            nb = nbformat.v4.new_notebook()
            nb.cells = [nbformat.v4.new_code_cell(BURNER)]
            (root / "neighbour").mkdir(exist_ok=True)
            nbformat.write(nb, root / "neighbour" / path.name)
    return root


def python(tree):
    venv = Path(tree) / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def grade(class_dir, out, workers, timeout, tree=REPO):
    """(the honest student's results.json, the run's wall seconds, the run's exit status)."""
    argv = [python(tree), "-m", "autograder", "grade", str(class_dir), "--out", str(out)]
    argv += ["--workers", str(workers), "--timeout", str(timeout), "--quiet"]
    argv += ["--secret", "load-fairness", "--memory", "2"]
    started = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, cwd=tree, timeout=7200)
    seconds = time.monotonic() - started
    try:
        payload = json.loads((out / "honest" / "results.json").read_text())
    except FileNotFoundError:  # the run failed before writing it: no score, and why
        print(f"grading failed ({done.returncode}): {done.stderr[-1500:]}", file=sys.stderr)
        payload = {"notebooks": {}, "internal_error": True}
    return payload, seconds, done


def honest_score(payload, notebooks):
    """(score, max score) over the honest student's notebooks that were submitted."""
    wanted = [info for stem, info in payload["notebooks"].items() if stem[:2] in notebooks]
    return sum(i["score"] for i in wanted), sum(i["max_score"] for i in wanted)


def run_case(name, notebooks, timeout, load=0, neighbour=False, tree=REPO):
    root = Path(tempfile.mkdtemp(prefix="load-fairness-"))
    try:
        class_dir = make_class(root / "class", notebooks)
        with (
            burning(load),
            Neighbour(root, notebooks, tree) if neighbour else burning(0),
        ):
            busy = busy_processes()
            payload, seconds, done = grade(class_dir, root / "out", 1, timeout, tree)
        score, max_score = honest_score(payload, notebooks)
        return {
            "case": name,
            "score": score,
            "max_score": max_score,
            "honest_seconds": payload.get("execution_time"),
            "run_seconds": round(seconds, 1),
            "exit": done.returncode,
            "not_graded": bool(payload.get("internal_error")),
            "busy_processes": busy,
        }
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tree", action="append", type=Path, help="a checkout (default: this)")
    parser.add_argument("--notebooks", default="01,02,03,04,05,06")
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--json", action="store_true", help="one JSON line per case as well")
    args = parser.parse_args(argv)
    trees = [t.resolve() for t in args.tree or [REPO]]
    notebooks = {n.strip()[:2] for n in args.notebooks.split(",")}
    cores = os.cpu_count() or 1
    cases = [
        ("(a) alone", 0, False),
        ("(b) next to a CPU-burning neighbour", 0, True),
        (f"(c) external load: {4 * cores} busy processes (4x cores)", 4 * cores, False),
    ]
    print(
        f"machine: {cores} cores; notebooks {','.join(sorted(notebooks))}; --timeout {args.timeout:g}"
    )
    print(f"{'tree':<24} {'case':<46} {'score':>11} {'honest s':>9} {'run s':>7} {'busy':>5}")
    rows = []
    for name, load, neighbour in cases:
        for tree in trees:  # the trees take turns: a busy machine weighs on all of them alike
            row = run_case(name, notebooks, args.timeout, load, neighbour, tree)
            row["tree"] = str(tree)
            rows.append(row)
            score = f"{row['score']:g}/{row['max_score']:g}"
            print(
                f"{tree.name[-24:]:<24} {name:<46} {score:>11} {row['honest_seconds']!s:>9} "
                f"{row['run_seconds']:>7} {row['busy_processes']:>5}",
                flush=True,
            )
            if args.json:
                print(json.dumps(row), flush=True)
    return 0 if all(r["score"] == r["max_score"] and not r["not_graded"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
