"""The command line: `python -m autograder release`, `grade PATH`, `handout --out DIR`,
`nbgrader init|grade COURSE`, `gradescope --out autograder.zip`, `classroom gather REPOS`,
`export --roster ROSTER --format canvas|moodle --grades OUT` and `selftest`."""

import argparse
import os
import sys

from autograder.config import DEFAULT_MEMORY_GB, DEFAULT_TIMEOUT
from autograder.curriculum import NOTEBOOKS
from autograder.sandbox.limits import Limits

_LIMITS = Limits()  # the defaults the help texts quote


def default_workers() -> int:
    """One student more than the CPUs this process may use: each sandbox is capped at one CPU,
    and while the parent builds a student's cases, judges and writes the reports, or a kernel
    starts, that student's CPU would sit idle. 40 students of benchmarks/class_of_200.py on 2
    CPUs: 276 s with 2 workers, 198 s with 3, 200 s with 4, the same grades (docs/maintainers.md).
    bound_workers still lowers it to what the machine's memory holds."""
    usable = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    return (len(usable) if usable else os.cpu_count() or 1) + 1


def sandbox_options(cmd: argparse.ArgumentParser) -> None:
    """The options of the sandbox itself (`grade`, `nbgrader grade`, `selftest`)."""
    cmd.add_argument("--workers", type=int, default=default_workers())
    cmd.add_argument(
        "--timeout",
        type=float,
        default=None,
        help="CPU seconds for each notebook's cells, and as many for its hidden tests (default: "
        f"{_LIMITS.measured_factor:g}x what the solutions' cells and tests use, measured by the "
        f"self-test, at least {_LIMITS.measured_floor_seconds:g}; {DEFAULT_TIMEOUT:g} without it; "
        f"and {_LIMITS.spare_cpu_seconds:g} spare seconds per student that a budget which runs "
        "out may go on into, once for all notebooks)",
    )
    cmd.add_argument(
        "--memory",
        type=float,
        default=DEFAULT_MEMORY_GB,
        help="address-space limit per process, in GB",
    )
    cmd.add_argument(
        "--parent-memory",
        type=float,
        help="GB the grading parent itself may add while grading "
        "(default: 3 + 0.5 per worker; past it, that student's files are an internal error)",
    )
    cmd.add_argument(
        "--sandbox",
        choices=("auto", "bwrap", "none"),
        default="auto",
        help="auto: bubblewrap when it works, else rlimits only (with a warning)",
    )


def grade_options(cmd: argparse.ArgumentParser) -> None:
    """The grading options `grade` shares with `nbgrader grade`."""
    sandbox_options(cmd)
    cmd.add_argument("--force", action="store_true", help="regrade up-to-date students")
    cmd.add_argument(
        "--secret", help="course secret seeding the hidden tests (default: $COURSE_SECRET)"
    )
    cmd.add_argument(
        "--deadlines",
        help="a TOML file of due dates and a late penalty (see autograder/deadlines.py)",
    )
    cmd.add_argument(
        "--handed-in",
        help="a CSV of student,notebook,handed_in times (else the files' own times)",
    )
    cmd.add_argument(
        "--roster",
        help="the course roster (CSV, see autograder/roster.py): its sections give the class "
        "page's means and help list per section",
    )
    cmd.add_argument(
        "--skip-selftest",
        action="store_true",
        help="EMERGENCIES ONLY: grade without first checking that this machine's sandbox gives "
        "the solutions full marks and a blank 0 (a loud warning is printed)",
    )
    cmd.add_argument("--keep-work", action="store_true", help="keep the sandbox folders")
    cmd.add_argument("--quiet", action="store_true", help="no progress bar")
    cmd.add_argument(
        "--no-similarity",
        action="store_true",
        help="do not compare the students' answers (OUT/similarity.csv and class.html's section)",
    )


def main(argv: list[str] | None = None) -> int:
    from autograder.format_checkers import skip_format_checkers

    skip_format_checkers()  # the grading parent's own speed, before nbformat is imported
    parser = argparse.ArgumentParser(prog="python -m autograder", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)

    release_cmd = commands.add_parser("release", help="generate notebooks/ from solutions/")
    release_cmd.add_argument(
        "--check", action="store_true", help="only report whether notebooks/ is stale (exit 1)"
    )

    grade_cmd = commands.add_parser("grade", help="grade one submission folder or a class")
    grade_cmd.add_argument(
        "path",
        help="a folder of student folders (or zips), one student's folder or .zip upload, "
        "or an nbgrader course (its submitted/ tree)",
    )
    grade_cmd.add_argument("--out", default="grades", help="output folder (default: grades)")
    grade_cmd.add_argument(
        "--layout",
        choices=("auto", "class", "student"),
        default="auto",
        help="auto: guess; class: PATH holds one folder or zip per student; student: PATH is "
        "one student's upload (notebooks loose, in sub-folders or zips)",
    )
    grade_cmd.add_argument(
        "--notebook",
        action="append",
        choices=[nb.stem for nb in NOTEBOOKS],
        help="regrade only this notebook (repeatable); the others keep their last verdicts",
    )
    grade_options(grade_cmd)

    from autograder.grading.command import add_selftest_arguments
    from autograder.platforms import classroom, gradescope, nbgrader

    nbgrader.add_arguments(commands, grade_options)
    gradescope.add_arguments(commands)
    classroom.add_arguments(commands)
    add_selftest_arguments(commands, sandbox_options)

    from autograder import export

    export.add_arguments(commands)

    handout_cmd = commands.add_parser(
        "handout", help="build what students get: notebooks, data and a checker without answers"
    )
    handout_cmd.add_argument("--out", required=True, help="an empty or new folder")
    handout_cmd.add_argument(
        "--stage", type=int, help="only notebooks 01..STAGE (a weekly release); default: all"
    )
    handout_cmd.add_argument(
        "--repository",
        help="where the handout will be published (https://github.com/ORG/NAME), for the "
        "Colab cell and links; default: pyproject.toml's [project.urls] Handout",
    )

    args = parser.parse_args(argv)
    if args.command == "release":
        from autograder.release import release

        stale = release(check=args.check)
        verb = "stale" if args.check else "written"
        for name in stale:
            print(f"{verb}: notebooks/{name}")
        if not stale:
            print("notebooks/ is up to date with solutions/")
        return 1 if (args.check and stale) else 0
    if args.command == "grade":
        from autograder.grading.command import grade_command

        return grade_command(args)
    if args.command == "nbgrader":
        from autograder.platforms import nbgrader

        return nbgrader.run(args)
    if args.command == "classroom":
        from autograder.platforms import classroom

        return classroom.run(args)
    if args.command == "gradescope":
        from autograder.platforms import gradescope

        return gradescope.run(args)
    if args.command == "selftest":
        from autograder.grading.command import selftest_command

        return selftest_command(args)
    if args.command == "export":
        from autograder import export

        return export.run(args)
    if args.command == "handout":
        from autograder.handout import PlaceholderRepository, build_handout, describe

        try:
            files = build_handout(args.out, stage=args.stage, repository=args.repository)
        except PlaceholderRepository as exc:
            raise SystemExit(f"error: {exc}") from None
        print(describe(files, args.out))
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
