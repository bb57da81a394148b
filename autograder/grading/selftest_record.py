"""What a self-test pass leaves behind, and what a later run may believe of it.

A pass is cached under its environment's key (autograder.grading.selftest). An entry is believed
only when it is a pass of that very key (`cached_pass`): a file named after the key proves
nothing by its name. The solutions' CPU seconds per notebook, measured by the pass, become each
notebook's time budget (`measured_cpu`, read back one value at a time; `apply_budgets`, through
Limits.derive), unless --timeout was given.
"""

from pathlib import Path
from typing import Any, TextIO

from autograder.sandbox.limits import Limits


def measured_cpu(report: Any, kind: str = "cpu") -> dict[str, float]:
    """The report's {stem: CPU seconds} (`kind` "cpu": each notebook's; "cpu_cells": its
    cells'), each a finite number >= 0 of a notebook of the course (a cache file is read back:
    anything else is dropped)."""
    import math

    from autograder.curriculum import NOTEBOOKS

    stems = {nb.stem for nb in NOTEBOOKS}
    cpu = report.get(kind) if isinstance(report, dict) else None
    return {
        stem: float(value)
        for stem, value in (cpu.items() if isinstance(cpu, dict) else ())
        if stem in stems
        and type(value) in (int, float)
        and math.isfinite(value)
        and 0 <= value < 1e6
    }


def apply_budgets(limits: Limits, report: dict[str, Any] | None, out: TextIO) -> dict:
    """Each notebook's budget from the solutions' measured CPU (Limits.derive), said on `out`;
    nothing when --timeout was given or nothing was measured."""
    budgets = {}
    if report:
        budgets = limits.derive(measured_cpu(report), measured_cpu(report, "cpu_cells"))
    if budgets:
        shown = ", ".join(
            f"{stem[:2]} {cells:g}+{tests:g}" for stem, (cells, tests) in sorted(budgets.items())
        )
        print(
            f"time budgets (CPU s per notebook: its cells + its hidden tests; "
            f"{limits.measured_factor:g}x the solutions' measured cost, each at least "
            f"{limits.measured_floor_seconds:g}): {shown}",
            file=out,
        )
    return budgets


def cached_pass(folder: Path, name: str, key: str) -> tuple[dict[str, Any] | None, str]:
    """(report, "") for a cache entry that is a pass of this very key: the key it claims is
    `key`, and its verdicts are a pass (the solutions at full marks above 0, the blank at 0);
    (None, why) for anything else: a file named after the key proves nothing by its name."""
    import math

    from autograder.safe_files import UnsafeFile, read_json

    try:
        entry = read_json(folder, [name], limit=64 * 2**10)
    except UnsafeFile as exc:
        return None, exc.message
    if not isinstance(entry, dict):
        return None, "it is not a self-test's report"
    if entry.get("key") != key:
        return None, "it does not hold the key it is named after"
    scores = entry.get("scores")

    def pair(name):
        value = scores.get(name) if isinstance(scores, dict) else None
        if not (isinstance(value, list) and len(value) == 2):
            return None
        ok = all(
            isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)
            for x in value
        )
        return value if ok else None

    solutions, blank = pair("solutions"), pair("blank")
    if solutions is None or blank is None:
        return None, "it holds no scores of the solutions and the blank submission"
    if not (solutions[1] > 0 and solutions[0] == solutions[1] and blank[0] == 0):
        return None, "its scores are not a pass"
    seconds = entry.get("seconds")
    if not isinstance(seconds, int | float) or isinstance(seconds, bool):
        return None, "it holds no duration"
    report = {"scores": {"solutions": solutions, "blank": blank}, "seconds": seconds}
    # the measured budgets, checked one by one
    return {**report, "cpu": measured_cpu(entry), "cpu_cells": measured_cpu(entry, "cpu_cells")}, ""
