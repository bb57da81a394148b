"""A grading run's settings: what the `grade` options (and the nbgrader and Gradescope commands)
decide, in one dataclass the steps read.

    settings = settings_from_args(args)      # from argparse's namespace
    limits = limits_from_args(args)          # the sandbox's Limits alone (selftest)
"""

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from autograder.notebook_files import MAX_NOTEBOOK_BYTES
from autograder.sandbox.limits import Limits

DEFAULT_SECRET = "course-default-secret"


@dataclass
class Settings:
    out: Path
    secret: str
    limits: Limits
    workers: int = 1
    force: bool = False
    sandbox_mode: str = "auto"
    keep_work: bool = False
    similarity: bool = True  # the class report compares the answers (--no-similarity: off)
    max_notebook_bytes: int = MAX_NOTEBOOK_BYTES
    work_root: Path | None = None  # this run's work folder (made by grade_class)
    notebooks: tuple = ()  # --notebook: regrade only these stems, keep the others' verdicts
    deadlines: object = None  # autograder.deadlines.LatePolicy, or None: no late penalties
    # --handed-in: {student_ids.key(student): {stem: time}}; None: the files' own times
    handed_in: dict | None = None
    skip_selftest: bool = False  # emergencies only (grading/selftest.py): loudly warned
    parent_memory: int | None = None  # the parent's own memory budget (default: by workers)
    memory_ceiling: int | None = None  # RLIMIT_AS set from it for this run (by grade_class)
    submission_digests: dict = field(default_factory=dict)  # student -> content digest (classrun)
    fingerprint: str | None = None  # grading/fingerprint.py, made once by the class run
    roster: list = field(default_factory=list)  # [roster.Person] (--roster): the page's sections


def settings_from_args(args):
    """Settings from the `grade` options (also used by the nbgrader and Gradescope commands)."""
    secret = getattr(args, "secret", None) or os.environ.get("COURSE_SECRET")
    if not secret:
        secret = DEFAULT_SECRET
        print(
            "warning: COURSE_SECRET is not set; using the public default, so students could "
            "predict the hidden tests' inputs. Set COURSE_SECRET (or --secret) for real grading.",
            file=sys.stderr,
        )
    deadlines, handed_in = None, None
    if getattr(args, "deadlines", None):
        from autograder.deadlines import PolicyError, load_handed_in, load_policy

        try:
            deadlines = load_policy(args.deadlines)
            if getattr(args, "handed_in", None):
                handed_in = load_handed_in(args.handed_in)
        except PolicyError as exc:
            raise SystemExit(f"error: {exc}") from None
        if deadlines.due and handed_in is None:  # hand-in times from the files themselves
            from autograder.deadlines import FILE_TIMES_NOTE

            print(FILE_TIMES_NOTE, file=sys.stderr)
    elif getattr(args, "handed_in", None):
        raise SystemExit("error: --handed-in needs --deadlines (the due dates and the penalty)")
    roster = []
    if getattr(args, "roster", None):
        from autograder.roster import RosterError, read_roster

        try:
            roster = read_roster(args.roster)
        except RosterError as exc:
            raise SystemExit(f"error: {exc}") from None
    return Settings(
        roster=roster,
        out=Path(args.out).resolve(),
        secret=secret,
        limits=limits_from_args(args),
        workers=int(args.workers),
        force=bool(args.force),
        sandbox_mode=getattr(args, "sandbox", None) or "auto",
        keep_work=bool(getattr(args, "keep_work", False)),
        notebooks=tuple(getattr(args, "notebook", None) or ()),
        deadlines=deadlines,
        handed_in=handed_in,
        skip_selftest=bool(getattr(args, "skip_selftest", False)),
        similarity=not getattr(args, "no_similarity", False),
        parent_memory=int(float(args.parent_memory) * 2**30)
        if getattr(args, "parent_memory", None)
        else None,
    )


def limits_from_args(args):
    """The sandbox's Limits from the --timeout and --memory options. Without --timeout, the
    self-test's measurement of the solutions sets each notebook's budget (Limits.derive,
    grading/selftest.py); Limits.timeout is the budget until then, or when it is skipped."""
    timeout = getattr(args, "timeout", None)
    limits = Limits() if timeout is None else Limits(timeout=float(timeout))
    limits.timeout_given = timeout is not None
    if getattr(args, "memory", None):
        limits.memory_bytes = int(float(args.memory) * 2**30)
    return limits
