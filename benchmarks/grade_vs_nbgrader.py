"""Grade the same class with our grader and with `nbgrader autograde`, on this machine, in one run.

    python benchmarks/grade_vs_nbgrader.py                 # 8 students, every notebook
    python benchmarks/grade_vs_nbgrader.py --students 4 --profile
    python benchmarks/grade_vs_nbgrader.py --quick         # 2 students, 1 notebook (a smoke test)

The class: students alternate, notebook by notebook, between a correct submission (the released
notebook with the solutions' code filled in, as examples/build_class.py writes it) and the
released stubs, so both graders see the same mix of working code and NotImplementedError.

Ours: `python -m autograder grade CLASS --out DIR --force --quiet` (default workers = cores, the
sandbox in its default mode). nbgrader: a temporary course directory whose source/<assignment>/
holds the solution notebooks, `nbgrader generate_assignment`, the students' notebooks in
submitted/<student>/<assignment>/, then `nbgrader autograde <assignment>`, with the same
per-cell time limit (ExecutePreprocessor.timeout). nbgrader runs each notebook, hidden tests
included (they call autograder.checks.assert_passes, which runs the probes in the kernel);
ours runs the notebooks in a sandbox and the probes through the harness. Both commands are timed
as wholes (start-up included), one after the other, on the same machine.

--profile then runs one correct student's notebooks through autograder.sandbox one by one and
splits each notebook's time into: parent-side set-up (cases, requests), sandbox + kernel
start-up (a one-cell notebook), the notebook's own cells, the probes (serve) and judging.

The LAST line printed is one JSON object:
{"students", "notebooks", "ours_seconds_per_student", "nbgrader_seconds_per_student", "ratio",
 "sandbox", "workers", "nproc", "cpu", ...}; ratio = nbgrader / ours (> 1: we are faster).
"""

import argparse
import importlib.util
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from autograder.curriculum import NOTEBOOKS  # noqa: E402

SOLUTIONS = REPO / "solutions"
ASSIGNMENT = "course"


def _builder():
    spec = importlib.util.spec_from_file_location(
        "build_class", REPO / "examples" / "build_class.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cpu_model():
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def available_notebooks(limit=None):
    found = [nb for nb in NOTEBOOKS if (SOLUTIONS / nb.filename).exists()]
    return found[:limit] if limit else found


# -- the class ----------------------------------------------------------------------------------
def build_class(folder, n_students, notebooks):
    """folder/<student>/<notebook>.ipynb: correct and stub notebooks alternating. -> {student: kinds}"""
    import nbformat

    from autograder.release import release_notebook, render

    builder = _builder()
    correct = builder.BY_NAME["ada"]
    texts = {}
    for nb in notebooks:
        solution = nbformat.read(SOLUTIONS / nb.filename, as_version=4)
        texts[nb.stem] = {
            "correct": render(builder.student_notebook(solution, correct, nb.stem)),
            "stub": render(release_notebook(solution)),
        }
    kinds = {}
    for i in range(n_students):
        student = f"s{i + 1:02d}"
        (folder / student).mkdir(parents=True)
        kinds[student] = {}
        for j, nb in enumerate(notebooks):
            kind = "correct" if (i + j) % 2 == 0 else "stub"
            (folder / student / nb.filename).write_text(texts[nb.stem][kind])
            kinds[student][nb.stem] = kind
    return kinds


# -- ours ---------------------------------------------------------------------------------------
def run_ours(class_dir, out, timeout, workers=None, sandbox=None):
    command = [sys.executable, "-m", "autograder", "grade", str(class_dir), "--out", str(out)]
    command += ["--force", "--quiet", "--timeout", str(timeout)]
    if workers:
        command += ["--workers", str(workers)]
    if sandbox:
        command += ["--sandbox", sandbox]
    env = dict(os.environ, COURSE_SECRET=os.environ.get("COURSE_SECRET", "benchmark-secret"))
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"our grader failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    scores = {}
    for results in sorted(Path(out).glob("*/results.json")):
        payload = json.loads(results.read_text())
        scores[results.parent.name] = payload
    return seconds, scores, done.stderr


# -- nbgrader -----------------------------------------------------------------------------------
NBGRADER_CONFIG = """\
c = get_config()
c.CourseDirectory.root = {root!r}
c.CourseDirectory.course_id = "attention-course"
c.ExecutePreprocessor.timeout = {timeout}
c.Execute.timeout = {timeout}
"""


def nbgrader(course, *args):
    command = [sys.executable, "-m", "nbgrader", *args, "--log-level=WARN"]
    # nbgrader runs `alembic` from PATH: the venv's bin must come first
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    env = dict(os.environ, PATH=path)
    done = subprocess.run(command, cwd=course, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(
            f"nbgrader {' '.join(args)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )
    return done


def setup_nbgrader(course, class_dir, notebooks, timeout):
    """A course directory with the assignment generated and the class submitted (not timed)."""
    course.mkdir(parents=True)
    (course / "nbgrader_config.py").write_text(
        NBGRADER_CONFIG.format(root=str(course), timeout=int(timeout))
    )
    source = course / "source" / ASSIGNMENT
    source.mkdir(parents=True)
    for nb in notebooks:
        shutil.copy2(SOLUTIONS / nb.filename, source / nb.filename)
    nbgrader(course, "generate_assignment", ASSIGNMENT, "--force")
    for student in sorted(p.name for p in class_dir.iterdir() if p.is_dir()):
        target = course / "submitted" / student / ASSIGNMENT
        target.mkdir(parents=True)
        for nb in notebooks:
            shutil.copy2(class_dir / student / nb.filename, target / nb.filename)
        (target / "timestamp.txt").write_text("2025-01-01 12:00:00.000000 UTC")


def run_nbgrader(course):
    started = time.perf_counter()
    nbgrader(course, "autograde", ASSIGNMENT, "--force")
    seconds = time.perf_counter() - started
    return seconds, nbgrader_scores(course)


def nbgrader_scores(course):
    """{student: total score} from nbgrader's gradebook."""
    from nbgrader.api import Gradebook

    url = f"sqlite:///{course / 'gradebook.db'}"
    with Gradebook(url) as gb:
        return {
            s.student_id: float(s.score)
            for s in gb.assignment_submissions(ASSIGNMENT)
            if s.student is not None
        }


# -- where our time goes ------------------------------------------------------------------------
def profile(notebooks, timeout, work_root):
    """Per notebook of one correct student, seconds for each stage (one notebook per sandbox)."""
    import nbformat

    from autograder.grade import DEFAULT_SECRET, registered_probes
    from autograder.probes.base import build_cases, derive_seed, judge_cases, write_requests
    from autograder.release import render
    from autograder.sandbox import Limits, NotebookJob, Sandbox

    builder = _builder()
    ada = builder.BY_NAME["ada"]
    t = time.perf_counter()
    box = Sandbox(Limits(timeout=timeout))
    sandbox_init = time.perf_counter() - t
    rows = []
    try:
        probes = registered_probes()
        # sandbox + driver + kernel start-up and shut-down: a notebook of one empty cell
        empty = work_root / "empty"
        empty.mkdir(parents=True)
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell("pass")]
        nbformat.write(nb, empty / "00_empty.ipynb")
        start_up = []
        for k in range(2):
            (work_root / f"req-empty-{k}").mkdir()
            job = NotebookJob("00_empty", "00_empty.ipynb", work_root / f"req-empty-{k}", {})
            t = time.perf_counter()
            box.run(empty, [job], work_root / f"run-empty-{k}")
            start_up.append(time.perf_counter() - t)
        folder = work_root / "ada"  # every notebook: 06 imports 05's definitions
        folder.mkdir()
        for nb_info in notebooks:
            solution = nbformat.read(SOLUTIONS / nb_info.filename, as_version=4)
            (folder / nb_info.filename).write_text(
                render(builder.student_notebook(solution, ada, nb_info.stem))
            )
        for nb_info in notebooks:
            t = time.perf_counter()
            seed = derive_seed(DEFAULT_SECRET, "profile", nb_info.stem)
            cases = build_cases(nb_info.stem, seed, functions=probes)
            requests = work_root / f"req-{nb_info.stem}"
            write_requests(cases, requests)
            serve = {}
            for case in cases:
                seconds = sum(float(r.get("seconds", case.seconds)) for r in case.requests)
                serve[case.function] = serve.get(case.function, 10.0) + seconds
            setup = time.perf_counter() - t
            job = NotebookJob(nb_info.stem, nb_info.filename, requests, serve)
            work = work_root / f"run-{nb_info.stem}"
            t = time.perf_counter()
            runs = box.run(folder, [job], work)
            sandboxed = time.perf_counter() - t
            status = json.loads((work / "status" / f"{nb_info.stem}.json").read_text())
            t = time.perf_counter()
            results = judge_cases(
                cases, runs[nb_info.stem].responses, dict(runs[nb_info.stem].notes)
            )
            judge = time.perf_counter() - t
            in_driver = float(status.get("seconds", 0.0))
            cells = float(status.get("cells_seconds", 0.0))
            rows.append(
                {
                    "notebook": nb_info.stem,
                    "cases": len(cases),
                    "requests": sum(len(c.requests) for c in cases),
                    "setup_s": round(setup, 2),
                    "sandbox_total_s": round(sandboxed, 2),
                    "kernel_start_and_cells_s": round(cells, 2),
                    "probes_serve_s": round(in_driver - cells, 2),
                    "outside_driver_s": round(sandboxed - in_driver, 2),
                    "judge_s": round(judge, 2),
                    "score": round(sum(r.score for r in results), 2),
                    "max_score": round(sum(r.max_score for r in results), 2),
                }
            )
    finally:
        box.close()
    unsandboxed = notebook_cells_without_sandbox(notebooks, work_root / "ada", work_root)
    for row in rows:
        row["unsandboxed"] = unsandboxed.get(row["notebook"], {})
    return {
        "sandbox_mode": box.mode,
        "sandbox_init_s": round(sandbox_init, 2),
        "empty_notebook_s": [round(s, 2) for s in start_up],
        "notebooks": rows,
    }


def notebook_cells_without_sandbox(notebooks, folder, work_root):
    """Per notebook, with nbclient and no sandbox (checks silenced as in the sandbox): seconds to
    start the kernel, to run all cells, and the slowest cells."""
    code = r"""
import json, sys, time
import nbformat
from nbclient import NotebookClient
out = {}
for path in sys.argv[1:]:
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=True)
    t = time.perf_counter()
    cells = []
    with client.setup_kernel():
        start = time.perf_counter() - t
        for i, cell in enumerate(nb.cells):
            if cell.cell_type == "code":
                c = time.perf_counter()
                client.execute_cell(cell, i)
                first = cell.source.strip().splitlines()[0][:60] if cell.source.strip() else ""
                cells.append((round(time.perf_counter() - c, 2), i, first))
    total = time.perf_counter() - t
    cells.sort(reverse=True)
    out[path] = {"kernel_start_s": round(start, 2), "cells_s": round(sum(c[0] for c in cells), 2),
                 "total_s": round(total, 2), "slowest": cells[:3]}
print(json.dumps(out))
"""
    paths = [str(folder / nb.filename) for nb in notebooks]
    stub_lib = work_root / "stub-lib"
    (stub_lib / "autograder").mkdir(parents=True)
    from autograder.sandbox import STUB_CHECKS, STUB_INIT

    (stub_lib / "autograder" / "__init__.py").write_text(STUB_INIT)
    (stub_lib / "autograder" / "checks.py").write_text(STUB_CHECKS)
    env = dict(
        os.environ,
        PYTHONPATH=str(stub_lib),
        MPLBACKEND="Agg",
        NBGRADER_EXECUTION="autograde",
        OMP_NUM_THREADS="1",
    )
    done = subprocess.run(
        [sys.executable, "-c", code, *paths],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(folder),
    )
    if done.returncode != 0:
        return {}
    timings = json.loads(done.stdout.strip().splitlines()[-1])
    return {Path(p).stem: info for p, info in timings.items()}


def print_profile(prof):
    print()
    print(
        f"profile, one correct student, one sandbox per notebook (sandbox {prof['sandbox_mode']}):"
        f" Sandbox() set-up {prof['sandbox_init_s']} s once; a one-cell notebook (sandbox, driver,"
        f" kernel start and stop) {prof['empty_notebook_s']} s"
    )
    header = (
        "notebook", "setup", "sandbox", "kern+cells", "probes", "outside", "judge",
        "| no sandbox:", "kernel", "cells",
    )  # fmt: skip
    print("{:24s} {:>6s} {:>8s} {:>10s} {:>7s} {:>8s} {:>6s} {:>12s} {:>7s} {:>6s}".format(*header))
    for row in prof["notebooks"]:
        free = row.get("unsandboxed") or {}
        print(
            f"{row['notebook']:24s} {row['setup_s']:6.2f} {row['sandbox_total_s']:8.2f} "
            f"{row['kernel_start_and_cells_s']:10.2f} {row['probes_serve_s']:7.2f} "
            f"{row['outside_driver_s']:8.2f} {row['judge_s']:6.2f} {'':>12s} "
            f"{free.get('kernel_start_s', float('nan')):7.2f} {free.get('cells_s', float('nan')):6.2f}"
        )
        for seconds, index, first in free.get("slowest", []):
            print(f"{'':26s}cell {index + 1:3d}: {seconds:5.2f} s  {first}")
    print(
        "setup: cases and requests (parent); sandbox: the whole sandboxed run; kern+cells: kernel "
        "start + the notebook's cells (driver); probes: the harness answering the requests; "
        "outside: bwrap + driver start-up + teardown; judge: judging in the parent."
    )


# -- main ---------------------------------------------------------------------------------------
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--students", type=int, default=8)
    parser.add_argument("--notebooks", type=int, default=None, help="only the first N notebooks")
    parser.add_argument("--timeout", type=float, default=300.0, help="per notebook / per cell")
    parser.add_argument("--workers", type=int, default=None, help="ours (default: all cores)")
    parser.add_argument("--sandbox", choices=("auto", "bwrap", "none"), default=None)
    parser.add_argument("--quick", action="store_true", help="2 students, 1 notebook")
    parser.add_argument("--profile", action="store_true", help="where our time goes, per notebook")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folders")
    args = parser.parse_args(argv)
    if args.quick:
        args.students, args.notebooks = 2, 1

    notebooks = available_notebooks(args.notebooks)
    if not notebooks:
        raise SystemExit("no solution notebooks found in solutions/")
    machine = {"nproc": os.cpu_count(), "cpu": cpu_model(), "python": platform.python_version()}
    try:
        machine["load_average_at_start"] = [round(x, 2) for x in os.getloadavg()]
    except OSError:
        pass
    print(f"machine: {machine['nproc']} cores, {machine['cpu']}, Python {machine['python']}")
    print(f"class: {args.students} students x {len(notebooks)} notebooks: ", end="")
    print(", ".join(nb.stem for nb in notebooks))

    root = Path(tempfile.mkdtemp(prefix="grade-bench-"))
    try:
        class_dir = root / "class"
        kinds = build_class(class_dir, args.students, notebooks)
        setup_nbgrader(root / "nbgrader", class_dir, notebooks, args.timeout)

        ours_s, ours_results, ours_err = run_ours(
            class_dir, root / "ours-out", args.timeout, args.workers, args.sandbox
        )
        sandbox_mode = "none" if "WITHOUT a filesystem" in ours_err else (args.sandbox or "auto")
        nbg_s, nbg_scores = run_nbgrader(root / "nbgrader")

        n = args.students
        print()
        print(f"{'student':8s} {'kinds':24s} {'ours':>10s} {'nbgrader':>10s}")
        for student in sorted(kinds):
            k = "".join("C" if v == "correct" else "-" for v in kinds[student].values())
            ours_score = ours_results.get(student, {}).get("score")
            print(f"{student:8s} {k:24s} {ours_score!s:>10s} {nbg_scores.get(student)!s:>10s}")
        print("(C = correct notebook, - = released stub; scores on each grader's own scale)")
        print()
        print(f"ours:     {ours_s:7.1f} s for {n} students = {ours_s / n:6.2f} s/student")
        print(f"nbgrader: {nbg_s:7.1f} s for {n} students = {nbg_s / n:6.2f} s/student")
        for student, payload in sorted(ours_results.items()):
            per = {s: v.get("seconds") for s, v in payload.get("notebooks", {}).items()}
            print(
                f"  ours {student}: execution {payload.get('execution_time')} s; per notebook {per}"
            )

        result = {
            "students": n,
            "notebooks": len(notebooks),
            "ours_seconds_per_student": round(ours_s / n, 3),
            "nbgrader_seconds_per_student": round(nbg_s / n, 3),
            "ratio": round(nbg_s / ours_s, 3),
            "ours_seconds": round(ours_s, 2),
            "nbgrader_seconds": round(nbg_s, 2),
            "sandbox": sandbox_mode,
            "ours_scores": {k: v.get("score") for k, v in sorted(ours_results.items())},
            "nbgrader_scores": dict(sorted(nbg_scores.items())),
            "workers": args.workers or os.cpu_count(),
            **machine,
        }
        if args.profile:
            prof = profile(notebooks, args.timeout, root / "profile")
            print_profile(prof)
            result["profile"] = prof
        print(json.dumps(result))
    finally:
        if args.keep:
            print(f"kept {root}", file=sys.stderr)
        else:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
