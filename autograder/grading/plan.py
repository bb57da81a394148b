"""Step 1 of one student's grading: a NotebookPlan per notebook of the course.

    plans = plan_notebooks(student, folder, config, work, placement, kept)

For each notebook not kept from an earlier run (--notebook): the hidden tests' cases drawn from
the course secret and the student id, and either a NotebookJob for the sandbox (the notebook
was found, read within its bounds and written out normalised, its requests written as plain
data) or the note every test of it gets instead, with its reason (autograder.results): missing,
misnamed (several files could be it: submissions.Placement.candidates), corrupt (not a readable
notebook), or not run (could not be prepared).
"""

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autograder import demo_cells
from autograder.config import Config
from autograder.course.probes import PROBES, build_cases, derive_seed
from autograder.curriculum import GRADED_NAMES, NOTEBOOKS, Notebook
from autograder.judging.base import Case, write_requests
from autograder.notebook_files import load_notebook
from autograder.results import CORRUPT, MISNAMED, MISSING_NOTEBOOK, NOT_RUN
from autograder.sandbox import NotebookJob

NOTEBOOK_FILES = {nb.filename for nb in NOTEBOOKS}


@dataclass
class NotebookPlan:
    """What grading does with one notebook of one student."""

    notebook: Notebook
    cases: list[Case]  # drawn from this student's seed
    job: NotebookJob | None  # None: not run, every test gets `note`
    note: str | None = None  # the output of every test when the notebook is not run
    message: str = ""  # about the notebook's file, for the student (may be empty)
    submitted: bool = True  # False: its file is not in the submission (the class page counts it)
    reason: str = NOT_RUN  # its tests' reason when it is not run (autograder.results)
    graded_from: str = ""  # the student's file taken under a near name (submissions.py)
    candidates: tuple[str, ...] = ()  # misnamed: the files that could each be it


def notebook_file(folder: Path | str, filename: str) -> str:
    """'missing' or 'present' (a link, a folder or a FIFO is present: load_notebook says why)."""
    try:
        os.lstat(Path(folder) / filename)
    except FileNotFoundError:
        return "missing"
    except OSError:
        return "present"
    return "present"


def registered_probes() -> set[str]:
    """The graded names that have hidden tests (probe modules may still be being written)."""
    from autograder.course.probes import load_all

    load_all()
    return {name for name in GRADED_NAMES if name in PROBES}


def encodable(name: str) -> str:
    """The name itself, unless the folder's name is not UTF-8 (surrogate escapes): then a
    stable text that can be encoded (the seed is a hash of it)."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def plan_notebooks(
    student: str,
    folder: Path,
    config: Config,
    work: Path,
    placement: Any,
    kept: Mapping[str, Any],
) -> list[NotebookPlan]:
    """A NotebookPlan per notebook not in `kept`; normalised notebooks go to work/prepared."""
    import nbformat

    plans: list[NotebookPlan] = []
    prepared = work / "prepared"
    prepared.mkdir()
    for nb in NOTEBOOKS:
        if nb.stem in kept:
            continue  # --notebook: its verdicts of the last run stand
        seed = derive_seed(config.secret, encodable(student), nb.stem)
        cases = build_cases(nb.stem, seed, functions=registered_probes())
        placed = " ".join(placement.get(nb.stem, []))
        candidates = tuple(getattr(placement, "candidates", {}).get(nb.stem, ()))
        graded_from = getattr(placement, "graded_as", {}).get(nb.stem, "")
        if notebook_file(folder, nb.filename) == "missing":
            note = (
                placed or f"{nb.filename} was not found in your submission, so its tests score 0."
            )
            reason = MISNAMED if candidates else MISSING_NOTEBOOK
            plans.append(
                NotebookPlan(
                    nb, cases, None, note, note, submitted=False, reason=reason,
                    candidates=candidates,
                )
            )  # fmt: skip
            continue
        notebook, message = load_notebook(folder, nb.filename, config.max_notebook_bytes)
        message = " ".join(m for m in (placed, message) if m)
        if notebook is None:
            plans.append(
                NotebookPlan(
                    nb, cases, None, f"not tested: {message}", message, reason=CORRUPT,
                    graded_from=graded_from,
                )
            )  # fmt: skip
            continue
        try:
            # nbformat.v4's writer, without nbformat.write's second validation (load_notebook
            # validated it; the sandbox's driver reads it with nbformat again)
            text = nbformat.v4.writes(notebook)
            (prepared / nb.filename).write_text(text, encoding="utf-8")
        except (ValueError, RecursionError) as exc:  # e.g. cell metadata nbformat cannot write
            message = f"{nb.filename} could not be prepared for grading ({type(exc).__name__})."
            plans.append(
                NotebookPlan(
                    nb, cases, None, f"not tested: {message}", message, graded_from=graded_from
                )
            )
            continue
        request_dir = work / "run" / "requests" / nb.stem
        write_requests(cases, request_dir)
        serve: dict[str, float] = {}
        for case in cases:
            seconds = sum(float(r.get("seconds", case.seconds)) for r in case.requests)
            serve[case.function] = (
                serve.get(case.function, config.limits.serve_base_seconds) + seconds
            )
        # the released demo cells it may skip, read from the very file the sandbox runs
        skip = demo_cells.skip_plan(
            prepared / nb.filename, nb.stem, enabled=config.switches.skip_demos
        )
        job = NotebookJob(nb.stem, nb.filename, request_dir, serve, skip=skip)
        plans.append(NotebookPlan(nb, cases, job, None, message, graded_from=graded_from))
    return plans
