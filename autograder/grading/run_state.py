"""What a grading run learns as it goes, apart from its Config (autograder/config.py), which it
was told at the door and never changes.

    run = RunState()                   # one per class run (grading/classrun.py), or a default
    run.work_root = ...                # the run's work folder, once made
    grade_student(..., run=run)        # reads the digest and the fingerprint of each student

The self-test's measured budgets are the sandbox's own: they are applied to the sandbox's copy
of the Limits (grading/sandboxes.py makes it), never to the Config's.
"""

from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class RunState:
    work_root: Path | None = None  # this run's work folder (grading/workspace.py)
    memory_ceiling: int | None = None  # the RLIMIT_AS set for the parent (memory_ceiling.py)
    # student -> the content digest of what is graded in full (submissions.content_digest)
    submission_digests: dict[str, str] = field(default_factory=dict)
    fingerprint: str | None = None  # grading/fingerprint.py: how it is graded, once per run
