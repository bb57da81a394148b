"""Grade the same class with our grader and with `nbgrader autograde`, on this machine, in one run.

    python benchmarks/grade_vs_nbgrader.py                 # 8 students, every notebook
    python benchmarks/grade_vs_nbgrader.py --students 4 --profile
    python benchmarks/grade_vs_nbgrader.py --quick         # 2 students, 1 notebook (a smoke test)

The class: students alternate, notebook by notebook, between a correct submission (the released
notebook with the solutions' code filled in, as examples/build_class.py writes it) and the
released stubs, so both graders see the same mix of working code and NotImplementedError.

Ours: `python -m autograder grade CLASS --out DIR --force --quiet --workers 1` (the sandbox in its
default mode; --workers N to compare wall times on N cores). nbgrader: a temporary course directory whose source/<assignment>/
holds the solution notebooks, `nbgrader generate_assignment`, the students' notebooks in
submitted/<student>/<assignment>/, then `nbgrader autograde <assignment>`, with the same
per-cell time limit (ExecutePreprocessor.timeout). nbgrader runs each notebook, hidden tests
included (they call autograder.checks.assert_passes, which runs the probes in the kernel);
ours runs the notebooks in a sandbox and the probes through the harness. Both commands are timed
as wholes (start-up included), one after the other, on the same machine.

--one-cpu grades one full submission (examples/class/ada: the six solutions, sandboxed) with
`taskset -c 0 python -m autograder grade ADA --out DIR --workers 1 --force`, --runs times (default
3), and reports the median wall time, each run's CPU-seconds and the load average around the runs
(the Gradescope budget: one submission on one CPU); its last line is that JSON object.

--profile then runs one correct student's notebooks through autograder.sandbox one by one and
splits each notebook's time into: parent-side set-up (cases, requests), sandbox + kernel
start-up (a one-cell notebook), the notebook's own cells, the probes (serve) and judging.

CPU time: each grader's whole process tree is measured as user+sys CPU-seconds, in a cgroup of
its own where this machine lets us make one (cgroup v1 cpuacct or v2, as root): getrusage's
RUSAGE_CHILDREN cannot see the sandbox's processes, which its own pid namespace reaps (it
reported 7 of the 35 CPU-seconds one sandboxed student really cost). Without a cgroup the script
falls back to RUSAGE_CHILDREN and says so ("cpu_method"). Ours runs with --workers 1 by default,
like nbgrader's serial autograde, so both per-student figures are per CPU.

The LAST line printed is one JSON object:
{"students", "notebooks", "ours_seconds_per_student", "nbgrader_seconds_per_student", "ratio",
 "ours_cpu_seconds_per_student", "nbgrader_cpu_seconds_per_student", "cpu_ratio", "cpu_method",
 "sandbox", "workers", "nproc", "cpu", "load_average_at_start", "load_average_at_end", ...};
ratio = nbgrader / ours in wall time, cpu_ratio = the same in CPU time (> 1: we are cheaper).
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


class CpuMeter:
    """User+sys CPU-seconds of this process and every process started inside the `with` block.

    A fresh cgroup (v1 cpuacct, else v2) holds this process for the duration, so children,
    grandchildren and processes reaped in another pid namespace all count. Where no cgroup can be
    made (not root, no cgroupfs), RUSAGE_SELF + RUSAGE_CHILDREN, which misses processes that were
    not waited for by a descendant of ours (the sandbox's)."""

    V1 = Path("/sys/fs/cgroup/cpuacct")
    V2 = Path("/sys/fs/cgroup")

    def __init__(self):
        self.seconds = 0.0
        self.method = "rusage"
        self._group = self._home = None

    def _make_group(self):
        name = f"grade-bench-{os.getpid()}-{time.monotonic_ns()}"
        for root, usage in ((self.V1, "cpuacct.usage"), (self.V2, "cpu.stat")):
            try:
                if not (root / usage).exists() and not (root / "cgroup.procs").exists():
                    continue
                group = root / name
                group.mkdir()
                if (group / usage).exists():
                    return root, group, usage
                group.rmdir()
            except OSError:
                continue
        return None

    def __enter__(self):
        self._rusage = self._rusage_now()
        made = self._make_group()
        if made is not None:
            root, group, usage = made
            try:
                self._home = self._own_group(root)
                (group / "cgroup.procs").write_text(str(os.getpid()))
                self._root, self._group, self._usage = root, group, usage
                self.method = "cgroup v1 cpuacct" if usage == "cpuacct.usage" else "cgroup v2"
            except OSError:
                group.rmdir()
        return self

    @staticmethod
    def _rusage_now():
        import resource

        total = 0.0
        for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
            usage = resource.getrusage(who)
            total += usage.ru_utime + usage.ru_stime
        return total

    @staticmethod
    def _own_group(root):
        """This process's cgroup under `root` (read before it moves)."""
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            if (root == CpuMeter.V1 and "cpuacct" in controllers.split(",")) or (
                root == CpuMeter.V2 and controllers == ""
            ):
                return root / path.lstrip("/")
        return root

    def _read(self):
        text = (self._group / self._usage).read_text()
        if self._usage == "cpuacct.usage":
            return int(text) / 1e9
        fields = dict(line.split() for line in text.splitlines())
        return int(fields["usage_usec"]) / 1e6

    def __exit__(self, *exc):
        if self._group is None:
            self.seconds = self._rusage_now() - self._rusage
            return False
        self.seconds = self._read()
        try:
            (self._home / "cgroup.procs").write_text(str(os.getpid()))
            for _ in range(50):  # the sandbox's last processes may take a moment to go
                try:
                    self._group.rmdir()
                    break
                except OSError:
                    time.sleep(0.1)
        except OSError:
            pass
        return False


def load_average():
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


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
    # the self-test (autograder/grading/selftest.py) is paid once per environment, not per class: the
    # benchmark measures grading alone
    command += ["--force", "--quiet", "--timeout", str(timeout), "--skip-selftest"]
    if workers:
        command += ["--workers", str(workers)]
    if sandbox:
        command += ["--sandbox", sandbox]
    env = dict(os.environ, COURSE_SECRET=os.environ.get("COURSE_SECRET", "benchmark-secret"))
    started = time.perf_counter()
    with CpuMeter() as cpu:
        done = subprocess.run(command, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"our grader failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    scores = {}
    for results in sorted(Path(out).glob("*/results.json")):
        payload = json.loads(results.read_text())
        scores[results.parent.name] = payload
    return seconds, cpu, scores, done.stderr


def whole_names_score(payload, notebooks):
    """A student's points counted as nbgrader's test cells count them: all of a graded name's
    points when every one of its tests passed, none otherwise (our results.json gives each test
    its share, so a name can score part of its points)."""
    stems = {nb.stem for nb in notebooks}
    names: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for test in payload.get("tests", []):
        if test.get("notebook", "") not in stems:
            continue
        name = test.get("function") or str(test.get("name", "")).split(":", 1)[0]
        names.setdefault((test["notebook"], name), []).append(
            (float(test["score"]), float(test["max_score"]))
        )
    return sum(
        sum(top for _, top in cases)
        for cases in names.values()
        if all(abs(got - top) < 1e-9 for got, top in cases)
    )


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
    with CpuMeter() as cpu:
        nbgrader(course, "autograde", ASSIGNMENT, "--force")
    seconds = time.perf_counter() - started
    return seconds, cpu, nbgrader_scores(course)


def nbgrader_scores(course):
    """{student: (code score, max code score)} from nbgrader's gradebook: the automatic part
    (the notebooks' written answers are graded by hand in nbgrader and by neither grader here)."""
    from nbgrader.api import Gradebook

    url = f"sqlite:///{course / 'gradebook.db'}"
    with Gradebook(url) as gb:
        return {
            s.student_id: (float(s.code_score), float(s.max_code_score))
            for s in gb.assignment_submissions(ASSIGNMENT)
            if s.student is not None
        }


# -- one submission on one CPU ------------------------------------------------------------------
ONE_SUBMISSION = REPO / "examples" / "class" / "ada"  # the six solutions, as a student submits


def one_cpu(runs, timeout, student=ONE_SUBMISSION, cpu="0"):
    """Grade one full submission pinned to one CPU (`taskset -c CPU`), `runs` times."""
    import statistics

    taskset = shutil.which("taskset")
    if taskset is None:
        raise SystemExit("--one-cpu needs taskset (util-linux)")
    env = dict(os.environ, COURSE_SECRET=os.environ.get("COURSE_SECRET", "benchmark-secret"))
    walls, cpus, loads, scores = [], [], [load_average()], set()
    print(
        f"one submission ({student.name}, {len(list(student.glob('*.ipynb')))} notebooks) on CPU {cpu}:"
    )
    for run in range(runs):
        out = Path(tempfile.mkdtemp(prefix="grade-one-cpu-"))
        command = [taskset, "-c", cpu, sys.executable, "-m", "autograder", "grade", str(student)]
        command += ["--out", str(out), "--workers", "1", "--force", "--quiet"]
        command += ["--timeout", str(timeout), "--skip-selftest"]  # as in run_ours
        try:
            started = time.perf_counter()
            with CpuMeter() as meter:
                done = subprocess.run(command, capture_output=True, text=True, env=env)
            wall = time.perf_counter() - started
            if done.returncode != 0:
                raise SystemExit(f"grading failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
            payload = json.loads((out / student.name / "results.json").read_text())
        finally:
            shutil.rmtree(out, ignore_errors=True)
        walls.append(round(wall, 2))
        cpus.append(round(meter.seconds, 2))
        loads.append(load_average())
        scores.add((payload["score"], payload["max_score"]))
        print(
            f"  run {run + 1}: {wall:6.1f} s wall, {meter.seconds:6.2f} CPU-s ({meter.method}), "
            f"score {payload['score']}/{payload['max_score']}, load {loads[-1]}"
        )
    ((score, max_score),) = scores if len(scores) == 1 else (sorted(scores)[0],)
    print(
        f"median {statistics.median(walls):.1f} s wall, {statistics.median(cpus):.2f} CPU-s on one "
        f"CPU (load average {loads[0]} before, {loads[-1]} after)"
    )
    return {
        "student": student.name,
        "runs": runs,
        "one_cpu_wall_seconds_median": statistics.median(walls),
        "one_cpu_wall_seconds": walls,
        "one_cpu_cpu_seconds_median": statistics.median(cpus),
        "one_cpu_cpu_seconds": cpus,
        "cpu_method": meter.method,
        "score": score,
        "max_score": max_score,
        "same_score_every_run": len(scores) == 1,
        "load_averages": loads,
    }


# -- where our time goes ------------------------------------------------------------------------
def profile(notebooks, timeout, work_root):
    """CPU-seconds (and wall seconds) of each stage, per notebook of one correct student.

    start-up: a sandbox running a one-cell notebook (bubblewrap, the driver, the zygote's
    standard imports, one kernel); imports: the same with `import torch` (the course's imports,
    preloaded by the zygote once per sandbox), minus start-up; cells: the notebook run without
    its hidden tests, minus start-up; probes: the same run with them, minus the run without;
    setup and judging: the parent's own CPU time. Finally the whole student as `grade` grades
    her (grade_student: one sandbox, judging, her results.json and feedback page), and the
    parent's CPU for the reports alone (her feedback page and results, a class page of one)."""
    import nbformat

    from autograder import demo_cells
    from autograder.config import DEFAULT_SECRET
    from autograder.course.probes import build_cases, derive_seed, judge_cases, write_requests
    from autograder.grading.course_files import course_files
    from autograder.grading.plan import registered_probes
    from autograder.release import render
    from autograder.sandbox import Limits, NotebookJob, Sandbox

    builder = _builder()
    ada = builder.BY_NAME["ada"]
    box = Sandbox(Limits(timeout=timeout), course=course_files())
    counter = iter(range(10**6))

    def sandboxed(folder, jobs):
        work = work_root / f"run-{next(counter)}"
        started = time.perf_counter()
        with CpuMeter() as cpu:
            runs = box.run(folder, jobs, work)
        # the sandboxes' own cgroups, counted by the grader (they are not in the meter's: the
        # sandbox's cgroup tree was found before the meter existed), and this process's part
        inside = max((run.sandbox_cpu_seconds for run in runs.values()), default=0.0)
        return runs, cpu.seconds + inside, time.perf_counter() - started, cpu.method

    rows = []
    try:
        probes = registered_probes()
        empty = work_root / "empty"
        empty.mkdir(parents=True)
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell("pass")]
        nbformat.write(nb, empty / "00_empty.ipynb")
        (work_root / "req-empty").mkdir()
        job = NotebookJob("00_empty", "00_empty.ipynb", work_root / "req-empty", {})
        _, start_cpu, start_wall, method = sandboxed(empty, [job])
        imports = work_root / "imports"
        imports.mkdir()
        nb.cells = [nbformat.v4.new_code_cell("import numpy, torch")]
        nbformat.write(nb, imports / "00_empty.ipynb")
        _, imports_cpu, _, _ = sandboxed(imports, [job])
        folder = work_root / "ada"  # every notebook: 06 imports 05's definitions
        folder.mkdir()
        for nb_info in notebooks:
            solution = nbformat.read(SOLUTIONS / nb_info.filename, as_version=4)
            (folder / nb_info.filename).write_text(
                render(builder.student_notebook(solution, ada, nb_info.stem))
            )
        jobs, all_cases = [], {}
        for nb_info in notebooks:
            t = time.process_time()
            seed = derive_seed(DEFAULT_SECRET, "profile", nb_info.stem)
            cases = build_cases(nb_info.stem, seed, functions=probes)
            requests = work_root / f"req-{nb_info.stem}"
            write_requests(cases, requests)
            serve = {}
            for case in cases:
                seconds = sum(float(r.get("seconds", case.seconds)) for r in case.requests)
                serve[case.function] = serve.get(case.function, 10.0) + seconds
            setup = time.process_time() - t
            # the next student's cases: what each further student of a class costs (the first
            # pays the probes' imports and the visible cases, once per grading run)
            t = time.process_time()
            build_cases(nb_info.stem, derive_seed(DEFAULT_SECRET, "next", nb_info.stem), probes)
            setup_next = time.process_time() - t
            skip = demo_cells.skip_plan(folder / nb_info.filename, nb_info.stem)
            bare = NotebookJob(nb_info.stem, nb_info.filename, requests, {}, skip=skip)
            _, cells_cpu, cells_wall, _ = sandboxed(folder, [bare])
            job = NotebookJob(nb_info.stem, nb_info.filename, requests, serve, skip=skip)
            runs, full_cpu, full_wall, _ = sandboxed(folder, [job])
            t = time.process_time()
            results = judge_cases(
                cases, runs[nb_info.stem].responses, dict(runs[nb_info.stem].notes)
            )
            judge = time.process_time() - t
            jobs.append(job)
            all_cases[nb_info.stem] = cases
            rows.append(
                {
                    "notebook": nb_info.stem,
                    "cases": len(cases),
                    "setup_cpu_s": round(setup, 2),
                    "setup_next_cpu_s": round(setup_next, 2),
                    "start_up_cpu_s": round(start_cpu, 2),
                    "cells_cpu_s": round(cells_cpu - start_cpu, 2),
                    "probes_cpu_s": round(full_cpu - cells_cpu, 2),
                    "judge_cpu_s": round(judge, 2),
                    "sandbox_cpu_s": round(full_cpu, 2),
                    "sandbox_wall_s": round(full_wall, 2),
                    "score": round(sum(r.score for r in results), 2),
                    "max_score": round(sum(r.max_score for r in results), 2),
                }
            )
        _, whole_cpu, whole_wall, _ = sandboxed(folder, jobs)
        graded, reports_cpu = _graded_with_reports(folder, box, work_root, probes)
    finally:
        box.close()
    return {
        "sandbox_mode": box.mode,
        "cpu_method": method,
        "start_up_cpu_s": round(start_cpu, 2),
        "start_up_wall_s": round(start_wall, 2),
        "imports_cpu_s": round(imports_cpu - start_cpu, 2),
        "grade_student_cpu_s": round(graded[0], 2),
        "grade_student_wall_s": round(graded[1], 2),
        "reports_cpu_s": round(reports_cpu, 3),
        "whole_student_one_sandbox_cpu_s": round(whole_cpu, 2),
        "whole_student_one_sandbox_wall_s": round(whole_wall, 2),
        "load_average": load_average(),
        "notebooks": rows,
    }


def _graded_with_reports(folder, box, work_root, probes):
    """((CPU, wall) of grading the student in `folder` as `grade` does, sandboxes included),
    and the parent's CPU seconds for her reports alone (median of 3): her feedback page and
    results.json, and a class report of one."""
    from autograder.config import DEFAULT_SECRET, Config
    from autograder.grading.run_state import RunState
    from autograder.grading.student import grade_student
    from autograder.report import SavedResult, write_class, write_student

    out = work_root / "graded"
    config = Config(out=out, secret=DEFAULT_SECRET, limits=box.limits)
    started = time.perf_counter()
    with CpuMeter() as cpu:
        result = grade_student("ada", folder, config, box, run=RunState(work_root=work_root))
    inside = float(result.results.get("cpu_seconds") or 0.0)  # her sandboxes (see sandboxed)
    graded = (cpu.seconds + inside, time.perf_counter() - started)
    spent = []
    for i in range(3):
        target = work_root / f"reports-{i}"
        t = time.process_time()
        write_student(target / "ada", result.results)
        write_class(target, [SavedResult("ada", result.results)])
        spent.append(time.process_time() - t)
    return graded, sorted(spent)[1]


def print_profile(prof):
    print()
    print(
        f"profile, one correct student (sandbox {prof['sandbox_mode']}, CPU by "
        f"{prof['cpu_method']}, load {prof['load_average']}): start-up (a sandbox running a "
        f"one-cell notebook) {prof['start_up_cpu_s']} CPU-s; the whole student in one sandbox "
        f"{prof['whole_student_one_sandbox_cpu_s']} CPU-s; the course's imports (torch, once "
        f"per sandbox) {prof['imports_cpu_s']} CPU-s; graded as `grade` does "
        f"{prof['grade_student_cpu_s']} CPU-s, of which her reports {prof['reports_cpu_s']}"
    )
    header = ("notebook", "setup", "next", "start-up", "cells", "probes", "judge", "sandbox")
    print(
        "{:24s} {:>6s} {:>5s} {:>9s} {:>6s} {:>7s} {:>6s} {:>8s} {:>10s}".format(*header, "score")
    )
    for row in prof["notebooks"]:
        print(
            f"{row['notebook']:24s} {row['setup_cpu_s']:6.2f} {row['setup_next_cpu_s']:5.2f} "
            f"{row['start_up_cpu_s']:9.2f} "
            f"{row['cells_cpu_s']:6.2f} {row['probes_cpu_s']:7.2f} {row['judge_cpu_s']:6.2f} "
            f"{row['sandbox_cpu_s']:8.2f} {row['score']:>5}/{row['max_score']:<4}"
        )
    print(
        "CPU-seconds. setup: cases and requests (parent), the first student of a run; next: "
        "the cases of a further student; start-up: a sandbox with one kernel; "
        "cells: the notebook's own cells; probes: the harness answering the hidden tests; "
        "judge: judging in the parent; sandbox: the notebook's whole sandboxed run on its own."
    )


# -- main ---------------------------------------------------------------------------------------
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--students", type=int, default=8)
    parser.add_argument("--notebooks", type=int, default=None, help="only the first N notebooks")
    parser.add_argument("--timeout", type=float, default=300.0, help="per notebook / per cell")
    parser.add_argument("--workers", type=int, default=1, help="ours (default 1, as nbgrader)")
    parser.add_argument("--sandbox", choices=("auto", "bwrap", "none"), default=None)
    parser.add_argument("--quick", action="store_true", help="2 students, 1 notebook")
    parser.add_argument("--profile", action="store_true", help="where our time goes, per notebook")
    parser.add_argument("--profile-only", action="store_true", help="only --profile's table")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folders")
    parser.add_argument(
        "--one-cpu", action="store_true", help="one full submission under taskset -c 0 (only)"
    )
    parser.add_argument("--runs", type=int, default=3, help="--one-cpu's runs (median)")
    args = parser.parse_args(argv)
    if args.quick:
        args.students, args.notebooks = 2, 1

    notebooks = available_notebooks(args.notebooks)
    if not notebooks:
        raise SystemExit("no solution notebooks found in solutions/")
    machine = {"nproc": os.cpu_count(), "cpu": cpu_model(), "python": platform.python_version()}
    machine["load_average_at_start"] = load_average()
    print(
        f"machine: {machine['nproc']} cores, {machine['cpu']}, Python {machine['python']}, "
        f"load average {machine['load_average_at_start']}"
    )
    print(f"class: {args.students} students x {len(notebooks)} notebooks: ", end="")
    print(", ".join(nb.stem for nb in notebooks))

    if args.one_cpu:
        result = one_cpu(args.runs, args.timeout)
        print(json.dumps({**result, **machine}))
        return 0
    root = Path(tempfile.mkdtemp(prefix="grade-bench-"))
    if args.profile_only:
        try:
            prof = profile(notebooks, args.timeout, root / "profile")
            print_profile(prof)
            print(json.dumps({"profile": prof, **machine}))
        finally:
            shutil.rmtree(root, ignore_errors=True)
        return 0
    try:
        class_dir = root / "class"
        kinds = build_class(class_dir, args.students, notebooks)
        setup_nbgrader(root / "nbgrader", class_dir, notebooks, args.timeout)

        ours_s, ours_cpu, ours_results, ours_err = run_ours(
            class_dir, root / "ours-out", args.timeout, args.workers, args.sandbox
        )
        sandbox_mode = "none" if "WITHOUT a filesystem" in ours_err else (args.sandbox or "auto")
        nbg_s, nbg_cpu, nbg_scores = run_nbgrader(root / "nbgrader")

        n = args.students
        print()
        print(f"{'student':8s} {'kinds':24s} {'ours':>14s} {'nbgrader':>14s} {'ours whole':>12s}")
        agree = True
        verdicts_agree = True
        for student in sorted(kinds):
            k = "".join("C" if v == "correct" else "-" for v in kinds[student].values())
            graded = ours_results.get(student, {}).get("notebooks", {})
            mine = {  # over the class's notebooks only (the others are missing: 0 of their max)
                key: sum(graded[nb.stem][key] for nb in notebooks if nb.stem in graded)
                for key in ("score", "max_score")
            }
            ours_frac = mine["score"] / mine["max_score"] if mine["max_score"] else None
            score, top = nbg_scores.get(student, (None, None))
            nbg_frac = score / top if top else None
            agree &= ours_frac is not None and nbg_frac is not None
            agree &= bool(agree) and abs(ours_frac - nbg_frac) < 1e-6
            shown = [
                f"{a}/{b}" for a, b in ((mine.get("score"), mine.get("max_score")), (score, top))
            ]
            whole = whole_names_score(ours_results.get(student, {}), notebooks)
            verdicts_agree &= score is not None and abs(whole - score) < 1e-6
            print(f"{student:8s} {k:24s} {shown[0]:>14s} {shown[1]:>14s} {whole:>12g}")
        print(
            "(C = correct notebook, - = released stub; each grader's own points; 'ours whole': our\n"
            " points counted as nbgrader counts them, a graded name's points only when all of its\n"
            " tests passed, since each of nbgrader's test cells scores all or nothing)"
        )
        print(f"same fraction of the points for every student: {agree}")
        print(f"same verdict for every graded name of every student: {verdicts_agree}")
        print()
        cpu_note = f"CPU measured by {ours_cpu.method}"
        print(
            f"ours (--workers {args.workers}): {ours_s:7.1f} s wall, {ours_cpu.seconds:7.1f} CPU-s"
        )
        print(
            f"nbgrader (serial): {nbg_s:7.1f} s wall, {nbg_cpu.seconds:7.1f} CPU-s   ({cpu_note})"
        )
        print(
            f"per student: ours {ours_cpu.seconds / n:6.2f} CPU-s, nbgrader "
            f"{nbg_cpu.seconds / n:6.2f} CPU-s: {nbg_cpu.seconds / ours_cpu.seconds:.2f}x cheaper; "
            f"wall {ours_s / n:6.2f} against {nbg_s / n:6.2f} s/student"
        )
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
            "ours_cpu_seconds_per_student": round(ours_cpu.seconds / n, 3),
            "nbgrader_cpu_seconds_per_student": round(nbg_cpu.seconds / n, 3),
            "cpu_ratio": round(nbg_cpu.seconds / ours_cpu.seconds, 3),
            "cpu_method": ours_cpu.method,
            "ours_seconds": round(ours_s, 2),
            "nbgrader_seconds": round(nbg_s, 2),
            "sandbox": sandbox_mode,
            "ours_scores": {k: v.get("score") for k, v in sorted(ours_results.items())},
            "nbgrader_scores": {k: v[0] for k, v in sorted(nbg_scores.items())},
            "same_fractions": bool(agree),
            "same_verdicts_per_name": bool(verdicts_agree),
            "workers": args.workers,
            **machine,
        }
        if args.profile:
            prof = profile(notebooks, args.timeout, root / "profile")
            print_profile(prof)
            result["profile"] = prof
        result["load_average_at_end"] = load_average()
        print(json.dumps(result))
    finally:
        if args.keep:
            print(f"kept {root}", file=sys.stderr)
        else:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
