"""The commands `python -m autograder grade PATH` (the class run, grading/classrun.py, and what it
prints) and `python -m autograder selftest` (grading/selftest.py, now, in this machine's sandbox).

`grade` exits 0 when grading completed, whatever the scores; 1 when a student was not graded;
128 + N when signal N stopped it (130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP: what was
finished is kept, and the same command resumes; grading/classrun.py prints what was kept).
"""

import sys
import time
from collections.abc import Callable
from typing import Any

from autograder.config import config_from_args
from autograder.grading import selftest
from autograder.grading.classrun import grade_class
from autograder.grading.sandboxes import open_sandbox
from autograder.report import not_graded
from autograder.safe_files import printable


def grade_command(args: Any) -> int:
    config = config_from_args(args)
    started = time.monotonic()
    done, summary = grade_class(
        args.path,
        config,
        progress=not getattr(args, "quiet", False),
        layout=getattr(args, "layout", "auto"),
    )
    elapsed = time.monotonic() - started
    graded = [r for r in done if not r.skipped and not r.error and not r.refused]
    skipped = [r for r in done if r.skipped]
    failed = [r for r in done if r.error]
    refused = not_graded.unique([r for r in done if r.refused])  # bob/ and bob.zip: named once
    print(summary["text"])
    print(
        f"graded {len(graded)} student(s), skipped {len(skipped)} up to date, "
        f"{len(refused)} not graded, {len(failed)} internal error(s) in {elapsed:.1f} s -> "
        f"{printable(config.out)}"
    )
    for line in summary.get("skipped_entries", []):  # escaped where they were found
        print(f"skipped entry {line}", file=sys.stderr)
    for r in failed:
        shown = "\n".join(printable(line) for line in r.error.splitlines())
        print(f"INTERNAL ERROR grading {printable(r.student)}:\n{shown}", file=sys.stderr)
    for r in refused:
        print(f"NOT GRADED {printable(r.student)}: {r.refused}", file=sys.stderr)
    if failed or refused:
        names = ", ".join(printable(r.student) for r in failed + refused)
        print(f"NOT GRADED (the next run grades them again): {names}")
        print(
            f"error: {len(failed) + len(refused)} student(s) not graded: {names}", file=sys.stderr
        )
    if config.skipping_selftest:
        print(selftest.skip_banner("these grades were made without it"), file=sys.stderr)
    return 1 if failed or refused else 0


# -- the command line ----------------------------------------------------------------------------
def add_selftest_arguments(commands: Any, sandbox_options: Callable[[Any], None]) -> None:
    cmd = commands.add_parser(
        "selftest",
        help="grade the solutions and a blank submission in this machine's sandbox: full marks "
        "and 0, or a message naming the cause (exit 1)",
    )
    sandbox_options(cmd)
    cmd.add_argument(
        "--platform",
        choices=("standalone", "gradescope"),
        default="standalone",
        help="gradescope: the sandbox run_autograder uses (bubblewrap, else the unprivileged "
        "user `student`)",
    )


def selftest_command(args: Any) -> int:
    from autograder.sandbox.bubblewrap import BubblewrapUnsupported

    # the self-test grades with its own secret: no word about COURSE_SECRET
    config = config_from_args(args, platform=args.platform, needs_secret=False)
    try:
        sandbox = open_sandbox(config)
    except (RuntimeError, BubblewrapUnsupported) as exc:
        print(f"self-test failed: {exc}", file=sys.stderr)
        return 1
    try:
        print(selftest.describe(sandbox))
        report = selftest.guard(sandbox, config, workers=args.workers, fresh=True, out=sys.stdout)
    except selftest.SelfTestFailed as exc:
        print(f"self-test failed: {exc}", file=sys.stderr)
        return 1
    finally:
        sandbox.close()
    return 0 if report else 1
