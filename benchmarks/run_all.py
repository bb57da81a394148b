"""Run All times of the course's notebooks, as a student's machine sees them.

Each notebook of `solutions/` (the finished course, every exercise done) is executed top to
bottom through a real Jupyter kernel (nbclient), one at a time, as a student's "Run All" does,
without the grader's short budgets (NBGRADER_EXECUTION unset). For each notebook it prints the
wall time and the CPU time of the kernel and everything it started.

    python benchmarks/run_all.py                       # every notebook, on the machine as it is
    python benchmarks/run_all.py 06 07                 # some notebooks, by number
    python benchmarks/run_all.py --burners 2 05 06     # beside two CPU-burning processes
    python benchmarks/run_all.py --keep /tmp/ran 06    # and keep the executed notebook to read

`--burners N` starts N processes that spin on the CPU for the whole run and stops them at the
end: the "slow, shared laptop" of the notebooks' headers (each in a session of its own,
benchmarks/burners.py). The machine's core count and load
averages before and after are printed with the figures, since a Run All time means nothing
without them. Tiny Shakespeare is read from TINYSHAKESPEARE_PATH, or downloaded once and
cached by `coursedata`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))  # burners.py, shared with class_of_200.py

from burners import burning  # noqa: E402

SOLUTIONS = ROOT / "solutions"

RUN_ONE = """
import sys, nbformat
from nbclient import NotebookClient
nb = nbformat.read(sys.argv[1], as_version=4)
NotebookClient(nb, timeout=None, kernel_name="python3",
               resources={"metadata": {"path": sys.argv[2]}}).execute()
if sys.argv[3]:
    nbformat.write(nb, sys.argv[3])
"""


def notebooks(selected: list[str]) -> list[Path]:
    found = sorted(SOLUTIONS.glob("[0-9][0-9]*.ipynb"))
    if not selected:
        return found
    return [nb for nb in found if any(nb.name.startswith(s) for s in selected)]


def run_one(notebook: Path, keep: Path | None = None) -> tuple[float, float]:
    """(wall s, CPU s) of one Run All, the kernel's CPU included (it is our child's child)."""
    env = {k: v for k, v in os.environ.items() if k != "NBGRADER_EXECUTION"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", RUN_ONE, str(notebook), str(notebook.parent), str(keep or "")],
        env=env,
        check=True,
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", help="notebook numbers, e.g. 05 06 (default: all)")
    parser.add_argument("--burners", type=int, default=0, help="CPU-burning neighbours")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--keep", type=Path, help="save each executed notebook in this folder")
    args = parser.parse_args()

    rows = []
    with burning(args.burners):
        load_before = os.getloadavg()
        for nb in notebooks(args.notebooks):
            if args.keep:
                args.keep.mkdir(parents=True, exist_ok=True)
            wall, cpu = run_one(nb, args.keep / nb.name if args.keep else None)
            rows.append({"notebook": nb.name, "wall_s": round(wall, 1), "cpu_s": round(cpu, 1)})
            print(f"{nb.name:34s} wall {wall:8.1f} s   CPU {cpu:8.1f} s", flush=True)
    load_after = os.getloadavg()
    machine = {
        "cores": os.cpu_count(),
        "processor": platform.processor() or platform.machine(),
        "python": platform.python_version(),
        "burners": args.burners,
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in load_after],
    }
    print(
        f"machine: {machine['cores']} cores, {args.burners} CPU burners, load averages "
        f"{machine['load_before']} before and {machine['load_after']} after"
    )
    if args.json:
        args.json.write_text(json.dumps({"machine": machine, "notebooks": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
