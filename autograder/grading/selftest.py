"""The grader proves itself on the machine that grades: the course's solutions must score full
marks and a blank submission (the released notebooks, untouched) 0, in the very sandbox the
run will use, before any student is graded.

    python -m autograder selftest                 # run it now (grading/command.py; exit 1: failed)
    guard(sandbox, config)                        # in `grade`: once per environment, cached

A machine where the sandbox silently fails (a bubblewrap that rejects an option, a course data
package the sandbox cannot read, a missing package) would otherwise give every student 0 and
report success. The self-test grades the two submissions exactly as students are graded
(grading/student.py's grade_student, the same Sandbox object, its limits and mode) and, when they do not score
full marks and 0, refuses with a message naming the cause: what bubblewrap said, which notebooks
and tests lost points and why, the tail of the sandbox's log.

A pass is remembered in the grader's cache folder (the Config's, config.cache_root:
$XDG_CACHE_HOME/autograder/selftest, else ~/.cache/autograder/selftest) under a key that changes
with the environment: bubblewrap (path, version, binary), the sandbox's mode, identity, defences
and limits, Python, every installed package's version, the kernel release, the demo-cell switch,
and the course's own code (autograder/, coursedata, the solutions and released notebooks). An
entry is honoured only when it holds that key and the verdicts of a pass (`cached_pass`);
anything else is named and the self-test runs again. Its cost, two students graded once per
environment: see docs/grader.md ("The self-test").

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
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, TextIO

from autograder.config import Config
from autograder.grading.run_state import RunState
from autograder.grading.selftest_explain import (  # noqa: F401 - describe: part of the API
    SKIP_ENV,
    describe,
    explain,
)
from autograder.grading.selftest_record import (  # noqa: F401 - measured_cpu: part of the API
    apply_budgets,
    cached_pass,
    measured_cpu,
)
from autograder.grading.student import StudentResult, grade_student
from autograder.sandbox import Sandbox

PACKAGE = Path(__file__).resolve().parents[1]  # autograder/
ROOT = PACKAGE.parent
SOLUTIONS = ROOT / "solutions"
BLANK = ROOT / "notebooks"  # the released notebooks, as students get them
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


def skip_banner(why: str) -> str:
    return SKIP_BANNER.format(why=why)


def shipped_files() -> Iterator[tuple[Path, str]]:
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


def installed_paths() -> list[str]:
    """Where this interpreter's packages are installed (its site-packages): what a kernel in
    the sandbox imports from. Not sys.path, which the working folder and whatever this process
    imported change (loading an nbgrader course puts setuptools' vendored packages on it), so
    that `grade`, `nbgrader grade` and Gradescope's setup, run from any folder, share one key
    and one self-test."""
    import sysconfig

    return list(dict.fromkeys(sysconfig.get_paths()[kind] for kind in ("purelib", "platlib")))


def environment(sandbox: Sandbox, config: Config) -> dict[str, Any]:
    """What the self-test's verdict depends on, as plain data (hashed into the cache key)."""
    import importlib.metadata

    features = getattr(sandbox, "features", None)
    bwrap: dict[str, Any] = {}
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
        "skip_demos": config.switches.skip_demos,
    }


def cache_folder(config: Config) -> Path | None:
    """Where passes are kept: the grader's cache folder's selftest/ (None: no cache here)."""
    return config.cache / "selftest" if config.cache is not None else None


# -- grading the two submissions -----------------------------------------------------------------
def run(
    sandbox: Sandbox, config: Config, workers: int = 2, work_root: Path | None = None
) -> dict[str, Any]:
    """Grade the solutions and the blank submission in `sandbox` as `config` grades students
    (its switches), with the self-test's own secret; returns the report (a dict).
    Raises SelfTestFailed when they do not score full marks and 0."""

    for folder in STUDENTS.values():
        if not any(Path(folder).glob("*.ipynb")):
            raise SelfTestFailed(
                f"the self-test's submissions are missing: no notebooks in {folder} (it needs the "
                "course's solutions/ and its released notebooks/ beside the autograder package)"
            )
    out = Path(tempfile.mkdtemp(prefix="autograder-selftest-", dir=work_root))
    own = dataclasses.replace(
        config,
        out=out,
        secret=SECRET,
        limits=sandbox.limits,
        force=True,
        keep_work=False,
        notebooks=(),
        deadlines=None,
        handed_in=None,
    )
    state = RunState(work_root=work_root)
    started = time.monotonic()
    try:
        with ThreadPoolExecutor(max_workers=max(1, min(2, workers))) as pool:
            futures = {
                name: pool.submit(
                    grade_student, f"selftest-{name}", folder, own, sandbox, run=state
                )
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


def _payload(future: "Future[StudentResult]") -> dict[str, Any]:
    """A student's results payload; a grading that raised (the sandbox failed on it twice and
    on the grader's control run: SandboxFailure) is a payload that says so."""
    try:
        return future.result().results
    except Exception as exc:  # noqa: BLE001 - the self-test reports it, whatever it was
        reason = f"{type(exc).__name__}: {exc}"
        return {"score": 0.0, "max_score": 0.0, "notebooks": {}, "tests": [], "not_graded": reason}


def _cpu_per_notebook(
    future: "Future[StudentResult]", kind: str = "cpu_seconds"
) -> dict[str, float]:
    """{stem: CPU seconds} of the solutions' notebooks (`kind`: all of it, or its cells'), as
    their sandbox measured them."""
    try:
        per_notebook = future.result().per_notebook
    except Exception:  # noqa: BLE001 - not graded: _payload says why
        return {}
    return {stem: round(info.get(kind, 0.0), 2) for stem, info in per_notebook.items()}


def _read_log(path):
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return ""


# -- once per environment ------------------------------------------------------------------------
def guard(
    sandbox: Sandbox,
    config: Config,
    workers: int = 2,
    work_root: Path | None = None,
    fresh: bool = False,
    out: TextIO | None = None,
) -> dict[str, Any] | None:
    """Before grading: pass (cached per environment), or raise SelfTestFailed. The Config's
    --skip-selftest (or AUTOGRADER_SKIP_SELFTEST=1) skips it with a loud warning; `fresh` runs
    it even when this environment passed before. Returns the report, or None when skipped.
    The measured budgets are applied to sandbox.limits (the sandbox's own copy)."""
    out = out or sys.stderr
    if config.skipping_selftest:
        skipped = config.switches.text(SKIP_ENV)
        why = "--skip-selftest" if config.skip_selftest else f"{SKIP_ENV}={skipped}"
        print(skip_banner(why), file=out)
        return None
    key = environment_key(sandbox, config)
    folder = cache_folder(config)
    try:
        if folder is None:
            raise OSError("no cache folder")
        folder.mkdir(parents=True, exist_ok=True)
        lock = open(folder / f"{key}.lock", "a")  # noqa: SIM115 - held until the pass is kept
    except OSError:  # no cache folder (no home, read-only): run every time
        report = _run_and_say(sandbox, config, workers, work_root, out)
        apply_budgets(sandbox.limits, report, out)
        return report
    passed = folder / f"{key}.json"
    with lock:  # a second run waits for the first one's self-test, then reuses its pass
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not fresh and os.path.lexists(passed):
            kept, why = cached_pass(folder, passed.name, key)
            if kept is not None:
                apply_budgets(sandbox.limits, kept, out)
                return kept
            print(f"self-test: the cached entry {passed} is ignored ({why}).", file=out)
        report = _run_and_say(sandbox, config, workers, work_root, out)
        try:
            partial = folder / f".{key}.{os.getpid()}.tmp"
            partial.write_text(json.dumps({**report, "key": key}))
            partial.replace(passed)
        except OSError:
            pass  # not kept: the next run tests again
        apply_budgets(sandbox.limits, report, out)
        return report


def environment_key(sandbox: Sandbox, config: Config) -> str:
    """The cache key of `sandbox`'s environment (environment(), hashed)."""
    return hashlib.sha256(
        json.dumps(environment(sandbox, config), sort_keys=True, default=str).encode()
    ).hexdigest()[:32]


def recorded(sandbox: Sandbox, config: Config, out: TextIO | None = None) -> dict[str, Any] | None:
    """The pass this environment recorded (an earlier `selftest`, `grade` or `nbgrader grade`,
    or Gradescope's setup.sh), its measured budgets applied to sandbox.limits; None when there
    is none. Never runs the self-test: for a grader that grades one submission at a time
    (Gradescope's run_autograder) after its setup proved the environment."""
    folder = cache_folder(config)
    if folder is None or not folder.is_dir():
        return None
    key = environment_key(sandbox, config)
    report, _ = cached_pass(folder, f"{key}.json", key)
    if report is not None:
        apply_budgets(sandbox.limits, report, out or sys.stderr)
    return report


def _run_and_say(
    sandbox: Sandbox, config: Config, workers: int, work_root: Path | None, out: TextIO
) -> dict[str, Any]:
    print(
        "self-test: grading the solutions and a blank submission once in this environment ...",
        file=out,
    )
    report = run(sandbox, config, workers=workers, work_root=work_root)
    print(f"self-test passed: {summary(report)}", file=out)
    return report


def summary(report: dict[str, Any]) -> str:
    s, b = report["scores"]["solutions"], report["scores"]["blank"]
    return f"solutions {s[0]:g} / {s[1]:g}, blank {b[0]:g} / {b[1]:g}, in {report['seconds']:g} s"
