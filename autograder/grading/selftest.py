"""The grader proves itself on the machine that grades: the course's solutions must score full
marks and a blank submission (the released notebooks, untouched) 0, in the very sandbox the
run will use, before any student is graded.

    python -m autograder selftest                 # run it now (grading/command.py; exit 1: failed)
    guard(sandbox, settings)                      # in `grade`: once per environment, cached

A machine where the sandbox silently fails (a bubblewrap that rejects an option, a course data
package the sandbox cannot read, a missing package) would otherwise give every student 0 and
report success. The self-test grades the two submissions exactly as students are graded
(grading/student.py's grade_student, the same Sandbox object, its limits and mode) and, when they do not score
full marks and 0, refuses with a message naming the cause: what bubblewrap said, which notebooks
and tests lost points and why, the tail of the sandbox's log.

A pass is remembered in the grader's cache folder ($XDG_CACHE_HOME/autograder/selftest, else
~/.cache/autograder/selftest) under a key that changes with the environment: bubblewrap (path,
version, binary), the sandbox's mode, identity, defences and limits, Python, every installed
package's version, the kernel release, and the course's own code (autograder/, coursedata, the
solutions and released notebooks). An entry is honoured only when it holds that key and the
verdicts of a pass (`cached_pass`); anything else is named and the self-test runs again. Its cost, two students graded once per environment: see
docs/grader.md ("The self-test").

It also measures what the solutions cost here: the CPU seconds of each notebook (its cells and
hidden tests, on the sandbox's own clock), kept with the pass. Unless --timeout was given, each
notebook's time budget becomes Limits.measured_factor times its figure, at least
Limits.measured_floor_seconds (Limits.derive; apply_budgets, printed).

Emergencies only: AUTOGRADER_SKIP_SELFTEST=1 (or `grade --skip-selftest`) grades without it,
with a warning printed before and after grading.
"""

import dataclasses
import fcntl
import hashlib
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from autograder.grading.selftest_record import (  # noqa: F401 - measured_cpu: part of the API
    apply_budgets,
    cached_pass,
    measured_cpu,
)
from autograder.grading.settings import Settings
from autograder.grading.student import grade_student
from autograder.switches import switches

PACKAGE = Path(__file__).resolve().parents[1]  # autograder/
ROOT = PACKAGE.parent
SOLUTIONS = ROOT / "solutions"
BLANK = ROOT / "notebooks"  # the released notebooks, as students get them
SKIP_ENV = "AUTOGRADER_SKIP_SELFTEST"  # read by autograder.switches
SECRET = "autograder-selftest"  # fixed: the same cases every time, so a result is reproducible
STUDENTS = {"solutions": SOLUTIONS, "blank": BLANK}
SKIP_BANNER = (
    "!!! WARNING: the grader's self-test is SKIPPED ({why}). Nothing has checked that this "
    "machine's sandbox grades the course's solutions with full marks and a blank submission "
    "with 0: the grades of this run may be wrong (every student 0, say). Run `python -m "
    "autograder selftest` to find out, and grade again without skipping it. !!!"
)


class SelfTestFailed(Exception):
    """The self-test's verdict: the message names the cause and the way out."""


def skipped_by_env(environ=None):
    return switches(environ).skip_selftest


def skip_banner(why):
    return SKIP_BANNER.format(why=why)


def shipped_files():
    """(path, name under the course's lib folder) of the files the self-test needs beside the
    package (platforms/gradescope.py puts them in the autograder zip)."""
    for folder in (SOLUTIONS, BLANK):
        for path in sorted(folder.glob("*.ipynb")):
            yield path, f"{folder.name}/{path.name}"


# -- the environment's key ----------------------------------------------------------------------
def _tree_digest(digest, folder, suffixes):
    folder = Path(folder)
    for path in sorted(folder.rglob("*")):
        if "__pycache__" in path.parts or path.suffix not in suffixes or not path.is_file():
            continue
        digest.update(str(path.relative_to(folder)).encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")


def installed_paths():
    """Where this interpreter's packages are installed (its site-packages): what a kernel in
    the sandbox imports from. Not sys.path, which the working folder and whatever this process
    imported change (loading an nbgrader course puts setuptools' vendored packages on it), so
    that `grade`, `nbgrader grade` and Gradescope's setup, run from any folder, share one key
    and one self-test."""
    import sysconfig

    return list(dict.fromkeys(sysconfig.get_paths()[kind] for kind in ("purelib", "platlib")))


def environment(sandbox):
    """What the self-test's verdict depends on, as plain data (hashed into the cache key)."""
    import importlib.metadata

    features = getattr(sandbox, "features", None)
    bwrap = {}
    if sandbox.mode == "bwrap" and sandbox.bwrap:
        info = os.stat(sandbox.bwrap)
        bwrap = {
            "path": os.path.realpath(sandbox.bwrap),
            "version": features.version if features else "",
            "missing": sorted(features.missing) if features else [],
            "binary": [info.st_size, info.st_mtime_ns, info.st_ino],
        }
    packages = sorted(
        f"{d.metadata['Name']}=={d.version}"
        for d in importlib.metadata.distributions(path=installed_paths())
    )
    course = hashlib.sha256()
    _tree_digest(course, PACKAGE, {".py", ".j2", ".html", ".json"})
    handed = getattr(sandbox, "course", None)  # the course's packages the sandbox was handed
    course_packages = [folder for _, folder in handed.packages] if handed is not None else []
    for folder in (SOLUTIONS, BLANK, *course_packages):
        if folder is not None and Path(folder).is_dir():
            _tree_digest(course, folder, {".py", ".json", ".ipynb", ".txt"})
    return {
        "sandbox": {
            "class": type(sandbox).__name__,
            "mode": sandbox.mode,
            "identity": getattr(sandbox, "identity", ""),
            "seccomp": getattr(sandbox, "seccomp", None) is not None,
            "cgroups": type(getattr(sandbox, "cgroups", None)).__name__,
            "warm": getattr(sandbox, "warm", None),
            "limits": {  # as given: not the budgets a pass derived from its measurement
                k: v
                for k, v in dataclasses.asdict(sandbox.limits).items()
                if k not in ("measured", "measured_tests")
            },
            "bwrap": bwrap,
        },
        "python": [sys.executable, sys.version],
        "packages": packages,
        "kernel": platform.release(),
        "euid": os.geteuid(),
        "course": course.hexdigest(),
        "skip_demos": switches().skip_demos,
    }


def cache_folder():
    try:
        root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    except (RuntimeError, KeyError):
        return None
    return root / "autograder" / "selftest" if root.is_absolute() else None


# -- grading the two submissions -----------------------------------------------------------------
def run(sandbox, workers=2, work_root=None):
    """Grade the solutions and the blank submission in `sandbox`; returns the report (a dict).
    Raises SelfTestFailed when they do not score full marks and 0."""

    for folder in STUDENTS.values():
        if not any(Path(folder).glob("*.ipynb")):
            raise SelfTestFailed(
                f"the self-test's submissions are missing: no notebooks in {folder} (it needs the "
                "course's solutions/ and its released notebooks/ beside the autograder package)"
            )
    out = Path(tempfile.mkdtemp(prefix="autograder-selftest-", dir=work_root))
    settings = Settings(
        out=out, secret=SECRET, limits=sandbox.limits, force=True, work_root=work_root
    )
    started = time.monotonic()
    try:
        with ThreadPoolExecutor(max_workers=max(1, min(2, workers))) as pool:
            futures = {
                name: pool.submit(grade_student, f"selftest-{name}", folder, settings, sandbox)
                for name, folder in STUDENTS.items()
            }
            results = {name: _payload(future) for name, future in futures.items()}
            cpu = _cpu_per_notebook(futures["solutions"])
            cells = _cpu_per_notebook(futures["solutions"], "cells_cpu_seconds")
        logs = {name: _read_log(out / f"selftest-{name}" / "sandbox.log") for name in STUDENTS}
    finally:
        shutil.rmtree(out, ignore_errors=True)
    report = {
        "scores": {name: [r["score"], r["max_score"]] for name, r in results.items()},
        "seconds": round(time.monotonic() - started, 1),
        "cpu": cpu,  # the solutions' CPU seconds per notebook: the measured time budgets
        "cpu_cells": cells,  # ... of which their cells' (the rest: the hidden tests')
    }
    solved, full = results["solutions"]["score"], results["solutions"]["max_score"]
    broken = any(r.get("not_graded") for r in results.values())
    if broken or full <= 0 or solved < full or results["blank"]["score"] != 0:
        raise SelfTestFailed(explain(sandbox, results, logs))
    return report


def _payload(future):
    """A student's results payload; a grading that raised (the sandbox failed on it twice and
    on the grader's control run: SandboxFailure) is a payload that says so."""
    try:
        return future.result().results
    except Exception as exc:  # noqa: BLE001 - the self-test reports it, whatever it was
        reason = f"{type(exc).__name__}: {exc}"
        return {"score": 0.0, "max_score": 0.0, "notebooks": {}, "tests": [], "not_graded": reason}


def _cpu_per_notebook(future, kind="cpu_seconds"):
    """{stem: CPU seconds} of the solutions' notebooks (`kind`: all of it, or its cells'), as
    their sandbox measured them."""
    try:
        per_notebook = future.result().per_notebook
    except Exception:  # noqa: BLE001 - not graded: _payload says why
        return {}
    return {stem: round(info.get(kind, 0.0), 2) for stem, info in per_notebook.items()}


def _scored(payload):
    """The score as "88.5 / 88.5", or why it was not graded (each distinct reason once: SandboxFailure
    says "stem: reason; stem: reason; ...")."""
    if payload.get("not_graded"):
        kind, _, text = payload["not_graded"].partition(": ")
        reasons = dict.fromkeys(part.split(": ", 1)[-1] for part in text.split("; "))
        return f"nothing (not graded, {kind}: {'; '.join(reasons)[:300]})"
    return f"{payload['score']:g} / {payload['max_score']:g}"


def _read_log(path):
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return ""


def describe(sandbox):
    """One line: the sandbox this grader uses here."""
    if sandbox.mode != "bwrap":
        return f"sandbox: {type(sandbox).__name__} without bubblewrap (mode {sandbox.mode})"
    features = getattr(sandbox, "features", None)
    name = features.name() if features else "bubblewrap"
    return (
        f"sandbox: {name} at {sandbox.bwrap}, identity {getattr(sandbox, 'identity', '?')}, "
        f"Python {platform.python_version()} at {sys.executable}"
    )


def _why(results, stem, info):
    """The first reason a notebook of the solutions lost points: a message about the whole
    notebook, else its first cell error, else its first failing test's output."""
    from autograder.safe_files import printable

    if info.get("messages"):
        return printable(info["messages"][0])[:300]
    if info.get("cell_errors"):
        err = info["cell_errors"][0]
        return f"cell {err['cell'] + 1} raised {err['type']}: {printable(err['message'])[:200]}"
    for test in results.get("tests", []):
        if test.get("notebook") == stem and test["score"] < test["max_score"]:
            return f"test {test['name']}: {printable(test.get('output', ''))[:200]}"
    return "points lost"


def explain(sandbox, results, logs):
    """The refusal: what scored what, and every clue to the cause we have."""
    from autograder.safe_files import printable

    solved = results["solutions"]
    blank = results["blank"]
    lines = [
        "the grader's self-test failed, so it will not grade: in this environment its own "
        f"sandbox gave the course's solutions {_scored(solved)} (full marks expected) and a "
        f"blank submission {_scored(blank)} (0 expected).",
        describe(sandbox),
    ]
    said = [
        line.strip()
        for text in logs.values()
        for line in text.splitlines()
        if line.lstrip().startswith(("bwrap:", "driver:"))
    ]
    features = getattr(sandbox, "features", None)
    for line in dict.fromkeys(said):  # each once, in order
        who = features.name() if features and line.startswith("bwrap:") else "the sandbox"
        lines.append(f"cause: {who} said: {printable(line)[:300]}")
    lost = {}  # notebook of the solutions below full marks -> (score, why)
    for stem, info in solved.get("notebooks", {}).items():
        if info.get("score", 0) < info.get("max_score", 0):
            lost[stem] = (
                f"{info.get('score', 0):g} / {info.get('max_score', 0):g}",
                _why(solved, stem, info),
            )
    if len(lost) > 1 and len({why for _, why in lost.values()}) == 1:
        lines.append(
            f"  solutions, every notebook short of full marks: {next(iter(lost.values()))[1]}"
        )
    else:
        lines += [f"  solutions, {stem}: {score}: {why}" for stem, (score, why) in lost.items()]
    for stem, info in blank.get("notebooks", {}).items():
        if info.get("score", 0) > 0:
            lines.append(
                f"  blank, {stem}: {info['score']:g} (a blank notebook must not score: a judge "
                "or the released notebook is wrong)"
            )
    tail = [line for line in logs.get("solutions", "").splitlines() if line.strip()][-12:]
    if tail:
        lines.append("the end of the sandbox's log for the solutions:")
        lines += [f"  | {printable(line)[:200]}" for line in tail]
    lines.append(
        "Fix the cause, then check with `python -m autograder selftest`. In an emergency only, "
        f"{SKIP_ENV}=1 (or `grade --skip-selftest`) grades without this check."
    )
    return "\n".join(lines)


# -- once per environment ------------------------------------------------------------------------
def guard(sandbox, workers=2, work_root=None, skip=False, fresh=False, out=None):
    """Before grading: pass (cached per environment), or raise SelfTestFailed. `skip` (or
    AUTOGRADER_SKIP_SELFTEST=1) skips it with a loud warning; `fresh` runs it even when this
    environment passed before. Returns the report, or None when skipped."""
    out = out or sys.stderr
    if skip or skipped_by_env():
        why = "--skip-selftest" if skip else f"{SKIP_ENV}={switches().text(SKIP_ENV)}"
        print(skip_banner(why), file=out)
        return None
    key = environment_key(sandbox)
    folder = cache_folder()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        lock = open(folder / f"{key}.lock", "a")  # noqa: SIM115 - held until the pass is kept
    except (AttributeError, OSError):  # no cache folder (no home, read-only): run every time
        report = _run_and_say(sandbox, workers, work_root, out)
        apply_budgets(sandbox.limits, report, out)
        return report
    passed = folder / f"{key}.json"
    with lock:  # a second run waits for the first one's self-test, then reuses its pass
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not fresh and os.path.lexists(passed):
            report, why = cached_pass(folder, passed.name, key)
            if report is not None:
                apply_budgets(sandbox.limits, report, out)
                return report
            print(f"self-test: the cached entry {passed} is ignored ({why}).", file=out)
        report = _run_and_say(sandbox, workers, work_root, out)
        try:
            partial = folder / f".{key}.{os.getpid()}.tmp"
            partial.write_text(json.dumps({**report, "key": key}))
            partial.replace(passed)
        except OSError:
            pass  # not kept: the next run tests again
        apply_budgets(sandbox.limits, report, out)
        return report


def environment_key(sandbox):
    """The cache key of `sandbox`'s environment (environment(), hashed)."""
    return hashlib.sha256(
        json.dumps(environment(sandbox), sort_keys=True, default=str).encode()
    ).hexdigest()[:32]


def recorded(sandbox, out=None):
    """The pass this environment recorded (an earlier `selftest`, `grade` or `nbgrader grade`,
    or Gradescope's setup.sh), its measured budgets applied to sandbox.limits; None when there
    is none. Never runs the self-test: for a grader that grades one submission at a time
    (Gradescope's run_autograder) after its setup proved the environment."""
    folder = cache_folder()
    if folder is None or not folder.is_dir():
        return None
    key = environment_key(sandbox)
    report, _ = cached_pass(folder, f"{key}.json", key)
    if report is not None:
        apply_budgets(sandbox.limits, report, out or sys.stderr)
    return report


def _run_and_say(sandbox, workers, work_root, out):
    print(
        "self-test: grading the solutions and a blank submission once in this environment ...",
        file=out,
    )
    report = run(sandbox, workers=workers, work_root=work_root)
    print(f"self-test passed: {summary(report)}", file=out)
    return report


def summary(report):
    s, b = report["scores"]["solutions"], report["scores"]["blank"]
    return f"solutions {s[0]:g} / {s[1]:g}, blank {b[0]:g} / {b[1]:g}, in {report['seconds']:g} s"
