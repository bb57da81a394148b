"""The one place that chooses which sandbox grades, for every platform (`grade`, `nbgrader
grade`, `selftest`, Gradescope's run_autograder and its setup's self-test).

    sandbox = open_sandbox(config)            # from the run's Config; lib_root=... for a class run
    kinds(platform, mode, root)               # the kinds tried, in order (the rule itself)

The kinds: "bwrap" (bubblewrap: namespaces, seccomp, a user namespace per sandbox where it can),
"student-user" (no bubblewrap, but the grader is root: the driver runs as an unprivileged user,
sandbox/student_user.py) and "none" (rlimits and timeouts only, after a printed warning).

| platform   | mode  | grader  | kinds tried, in order  |
| ---------- | ----- | ------- | ---------------------- |
| any        | bwrap | any     | bwrap (else an error)  |
| standalone | auto  | any     | bwrap, none            |
| standalone | none  | any     | none                   |
| gradescope | auto  | root    | bwrap, student-user    |
| gradescope | none  | root    | student-user           |
| gradescope | auto  | no root | bwrap, none            |
| gradescope | none  | no root | none (a test run)      |

A bubblewrap that cannot create namespaces here (RuntimeError) moves on to the next kind; one
too old for the sandbox (BubblewrapUnsupported) never falls back silently: it is raised.

Each sandbox gets its own copy of the Config's Limits: the self-test's measured budgets are
applied to the sandbox's copy (selftest.apply_budgets), never to the Config.
"""

import dataclasses
import os
from pathlib import Path
from typing import Any

from autograder.config import Config
from autograder.grading.course_files import course_files
from autograder.sandbox import Sandbox
from autograder.sandbox.student_user import STUDENT_USER, StudentUserSandbox

BWRAP, STUDENT, NONE = "bwrap", "student-user", "none"


def kinds(platform: str, mode: str, root: bool) -> tuple[str, ...]:
    """The sandbox kinds to try, in order, for `platform` and the mode asked for (auto, bwrap,
    none) when the grader is root or not."""
    if mode == BWRAP:
        return (BWRAP,)
    fallback = STUDENT if platform == "gradescope" and root else NONE
    return (BWRAP, fallback) if mode == "auto" else (fallback,)


def open_sandbox(config: Config, lib_root: Path | None = None) -> Sandbox:
    """The sandbox this run grades in, the first of kinds() that works here. Raises the last
    kind's RuntimeError (bubblewrap asked for and unusable here), or BubblewrapUnsupported."""
    tried = kinds(config.platform, config.sandbox_mode, os.geteuid() == 0)
    options: dict[str, Any] = {
        "lib_root": lib_root,
        "course": course_files(),
        "warm": config.switches.warm_kernels,
        "userns": config.switches.userns,
        "cgroups": config.switches.cgroups,
        "cache": config.cache,
    }
    for kind in tried:
        limits = dataclasses.replace(config.limits)  # the sandbox's own: measured budgets go here
        try:
            if kind == BWRAP:
                return Sandbox(limits, mode="bwrap", **options)
            if kind == STUDENT:
                user = config.switches.student_user or STUDENT_USER
                return StudentUserSandbox(limits, user, **options)
            return Sandbox(limits, mode="none", **options)
        except RuntimeError:
            if kind == tried[-1]:
                raise
    raise AssertionError("kinds() names at least one kind")  # pragma: no cover
