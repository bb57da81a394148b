"""A grading run's configuration: made once, at the door, from the command's options and the
environment, then passed down and never written to.

    config = config_from_args(args)          # grade, nbgrader grade, selftest, Gradescope's runner

This module is the grader's one reader of its settings from the environment: `COURSE_SECRET`,
the `AUTOGRADER_*` switches (parsed by autograder/switches.py, its private parser),
`XDG_CACHE_HOME` (and the home folder) for the cache, and whether `TMPDIR` is set
(tests/config/test_config.py keeps it so). Two kinds of code are other processes and keep their own
reads, each commented: what runs in the student's kernel (autograder/checks.py, the handout's
Colab cell) and inside the sandbox (autograder/sandbox/inside/). Handing the environment on to
a child process (`env={**os.environ, ...}`) is not a read.

What the run learns as it goes (its work folder, the submissions' digests, the self-test's
measured budgets) is not configuration: grading/run_state.py's RunState and the sandbox's own
copy of the Limits hold it.

Every default is defined once: the sandbox's time and memory in Limits (sandbox/limits.py),
named here as DEFAULT_TIMEOUT and DEFAULT_MEMORY_GB for the options and Gradescope's zip.
"""

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from autograder.notebook_files import MAX_NOTEBOOK_BYTES
from autograder.sandbox.limits import Limits
from autograder.switches import Switches, switches

if TYPE_CHECKING:
    from autograder.deadlines import HandedIn, LatePolicy

DEFAULT_SECRET = "course-default-secret"
DEFAULT_TIMEOUT: float = Limits.timeout  # CPU s of a notebook's cells without a measurement
DEFAULT_MEMORY_GB: float = Limits.memory_bytes / 2**30  # --memory, Gradescope's memory_gb
GB = 2**30
PLATFORMS = ("standalone", "gradescope")
SECRET_WARNING = (
    "warning: COURSE_SECRET is not set; using the public default, so students could "
    "predict the hidden tests' inputs. Set COURSE_SECRET (or --secret) for real grading."
)


def cache_root(environ: Mapping[str, str]) -> Path | None:
    """The grader's own cache folder ($XDG_CACHE_HOME/autograder, else ~/.cache/autograder):
    None when there is no home folder or the path is relative ("~" left unexpanded: never a
    folder relative to the working folder)."""
    try:
        root = Path(environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    except (RuntimeError, KeyError):  # no home directory to be found
        return None
    return root / "autograder" if root.is_absolute() else None


def _environ_switches() -> Switches:
    return switches(os.environ)


def _environ_cache() -> Path | None:
    return cache_root(os.environ)


def _environ_tmpdir() -> bool:
    return bool(os.environ.get("TMPDIR"))


@dataclass(frozen=True)
class Config:
    """What a grading run is told: its options, the switches and the sandbox's Limits.

    Made at the door by config_from_args. A Config made directly (a test, a library caller)
    takes the environment's switches, cache folder and TMPDIR when it is made, here too."""

    out: Path = Path("grades")
    secret: str = DEFAULT_SECRET
    limits: Limits = field(default_factory=Limits)  # as given: the measured budgets are not here
    workers: int = 1
    force: bool = False
    platform: str = "standalone"  # which sandboxes may grade: grading/sandboxes.py
    sandbox_mode: str = "auto"  # auto / bwrap / none
    keep_work: bool = False
    similarity: bool = True  # the class report compares the answers (--no-similarity: off)
    max_notebook_bytes: int = MAX_NOTEBOOK_BYTES
    notebooks: tuple[str, ...] = ()  # --notebook: regrade only these stems, keep the others'
    deadlines: "LatePolicy | None" = None  # None: no late penalties
    # --handed-in: {student_ids.key(student): {stem: time}}; None: the files' own times
    handed_in: "dict[str, HandedIn] | None" = None  # --handed-in: student -> stem -> time
    skip_selftest: bool = False  # --skip-selftest (emergencies only; grading/selftest.py)
    parent_memory: int | None = None  # the parent's own memory budget (default: by workers)
    roster: tuple[Any, ...] = ()  # (roster.Person, ...) (--roster): the class page's sections
    switches: Switches = field(default_factory=_environ_switches)
    cache: Path | None = field(default_factory=_environ_cache)  # cache_root()
    tmpdir_set: bool = field(default_factory=_environ_tmpdir)  # TMPDIR chosen by the user

    @property
    def skipping_selftest(self) -> bool:
        """--skip-selftest or AUTOGRADER_SKIP_SELFTEST: grading goes on without it."""
        return self.skip_selftest or self.switches.skip_selftest


def limits_from_args(args: Any) -> Limits:
    """The sandbox's Limits from the --timeout and --memory options. Without --timeout, the
    self-test's measurement of the solutions sets each notebook's budget (Limits.derive,
    grading/selftest.py); Limits.timeout is the budget until then, or when it is skipped."""
    timeout = getattr(args, "timeout", None)
    limits = Limits() if timeout is None else Limits(timeout=float(timeout))
    limits.timeout_given = timeout is not None
    if getattr(args, "memory", None):
        limits.memory_bytes = int(float(args.memory) * GB)
    return limits


def config_from_args(
    args: Any,
    environ: Mapping[str, str] | None = None,
    *,
    platform: str = "standalone",
    needs_secret: bool = True,
) -> Config:
    """The run's Config from the command's options (argparse's namespace, or Gradescope's
    settings in one) and the environment (default: os.environ, read now, once).

    `needs_secret`: the command seeds students' hidden tests (grade, nbgrader grade, Gradescope);
    without --secret or COURSE_SECRET it warns and takes the public default. The self-test uses
    its own fixed secret and says nothing of it."""
    env: Mapping[str, str] = os.environ if environ is None else environ
    if platform not in PLATFORMS:
        raise ValueError(f"platform is one of {PLATFORMS}, not {platform!r}")
    parsed = switches(env)
    secret = given_secret(args, env)
    if not secret:
        secret = DEFAULT_SECRET
        if needs_secret:
            print(SECRET_WARNING, file=sys.stderr)
    deadlines, handed_in = _late_policy(args)
    mode = getattr(args, "sandbox", None)
    if not mode:  # Gradescope's runner has no --sandbox: AUTOGRADER_SANDBOX says
        mode = parsed.sandbox if platform == "gradescope" else "auto"
    out = getattr(args, "out", None)
    parent_memory = getattr(args, "parent_memory", None)
    return Config(
        # a command that writes no OUT (selftest) grades into folders of its own
        out=Path(out).resolve() if out else Path("grades").resolve(),
        secret=secret,
        limits=limits_from_args(args),
        workers=int(getattr(args, "workers", None) or 1),
        force=bool(getattr(args, "force", False)),
        platform=platform,
        sandbox_mode=mode,
        keep_work=bool(getattr(args, "keep_work", False)),
        similarity=not getattr(args, "no_similarity", False),
        notebooks=tuple(getattr(args, "notebook", None) or ()),
        deadlines=deadlines,
        handed_in=handed_in,
        skip_selftest=bool(getattr(args, "skip_selftest", False)),
        parent_memory=int(float(parent_memory) * GB) if parent_memory else None,
        roster=_roster(args),
        switches=parsed,
        cache=cache_root(env),
        tmpdir_set=bool(env.get("TMPDIR")),
    )


def given_secret(args: Any, environ: Mapping[str, str] | None = None) -> str:
    """The course secret: --secret, else $COURSE_SECRET, else "" (none given)."""
    env: Mapping[str, str] = os.environ if environ is None else environ
    return getattr(args, "secret", None) or env.get("COURSE_SECRET") or ""


def _late_policy(args: Any) -> "tuple[LatePolicy | None, dict[str, HandedIn] | None]":
    """(--deadlines' LatePolicy or None, --handed-in's record or None)."""
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
    return deadlines, handed_in


def _roster(args: Any) -> tuple[Any, ...]:
    if not getattr(args, "roster", None):
        return ()
    from autograder.roster import RosterError, read_roster

    try:
        return tuple(read_roster(args.roster))
    except RosterError as exc:
        raise SystemExit(f"error: {exc}") from None
