"""Late penalties in an nbgrader course, exactly where and how `nbgrader autograde` makes them.

`python -m autograder nbgrader grade` replaces autograde, so it also does autograde's last step:
for each submitted notebook, nbgrader's own AssignLatePenalties rule with the plugin the course
configures (`c.AssignLatePenalties.plugin_class`, default nbgrader's LateSubmissionPlugin with
`c.LateSubmissionPlugin.penalty_method` "none" or "zero"), on the submission's
`total_seconds_late` (nbgrader's due date of the assignment, with extensions, against the
submission's timestamp). The penalty goes into the gradebook's `late_submission_penalty`, where
formgrader and `nbgrader export` read it.

`PointsPerPeriod` is the standalone policy's "per-period" method (autograder/deadlines.py) as an
nbgrader plugin, so one course can use the same rule on both paths:

    c.AssignLatePenalties.plugin_class = "autograder.platforms.nbgrader_late.PointsPerPeriod"
    c.PointsPerPeriod.points = 1.0
    c.PointsPerPeriod.period_hours = 24
"""

from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from nbgrader.plugins import BasePlugin
from nbgrader.preprocessors import AssignLatePenalties
from traitlets import Float

from autograder.deadlines import LatePolicy


class PointsPerPeriod(BasePlugin):
    """`points` off for each started `period_hours` late (autograder/deadlines.py's rule)."""

    points = Float(1.0, help="points off per started period late").tag(config=True)
    period_hours = Float(24.0, help="the period, in hours").tag(config=True)

    def late_submission_penalty(
        self, student_id: str, score: float, total_seconds_late: float
    ) -> float | None:
        policy = LatePolicy(
            method="per-period", points=self.points, period=timedelta(hours=self.period_hours)
        )
        return policy.penalty(score, total_seconds_late)


def assign_late_penalties(
    gradebook: Any, config: Any, assignment: str, student: str, notebooks: Iterable[str]
) -> dict[str, float]:  # gradebook, config: nbgrader's Gradebook and Config (untyped)
    """AssignLatePenalties.preprocess's rule for each of `notebooks` (names) of one submission,
    with the course's configured plugin; the caller commits. Returns {notebook: penalty}."""
    assigner = AssignLatePenalties(config=config)
    assigner.init_plugin()
    submission = gradebook.find_submission(assignment, student)
    penalties = {}
    for name in notebooks:
        notebook = gradebook.find_submission_notebook(name, assignment, student)
        notebook.late_submission_penalty = None
        if submission.total_seconds_late > 0:
            penalty = assigner.plugin_inst.late_submission_penalty(
                student, notebook.score, submission.total_seconds_late
            )
            if penalty is not None:
                notebook.late_submission_penalty = assigner._check_late_penalty(notebook, penalty)
        penalties[name] = notebook.late_submission_penalty or 0.0
    return penalties
