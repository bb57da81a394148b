"""What grading produces for one test: the Gradescope test entry plus SPEC's own fields, and a
structured reason, set where the verdict is made (judging.base.judgement, judging.answers).

The reasons, the one place they are listed (results.json's `tests[].reason`; whatever reads a
test's state reads this field, never its English `output`):

| reason                       | the test ...                                                  |
| ---------------------------- | ------------------------------------------------------------- |
| passed                       | scored full marks                                             |
| failed                       | was judged wrong (a judge's Fail, or an answer it could not check) |
| not-implemented              | met a graded name that itself still raises NotImplementedError |
| dependency-not-implemented   | met a graded name whose callee still raises NotImplementedError |
| missing-name                 | found the graded name undefined after the notebook ran        |
| dependency-missing           | met a name from an earlier notebook that is missing, misnamed or unreadable (`depends_on` names it) |
| timeout                      | did not finish within its own time limit                      |
| lost                         | got no readable answer back (the kernel died, a time limit, an unsafe file) |
| missing-notebook             | could not run: its notebook is not in the submission          |
| misnamed                     | could not run: no file could be taken as its notebook (a misspelt name, or different copies) |
| corrupt                      | could not run: its file is not a readable notebook (not JSON, empty, a link, too large) |
| not-run                      | could not run: its notebook could not be prepared             |

Results written before reasons existed have none: TestResult.from_json reads them as passed or
failed by their score. A test of a notebook that could not run because of its file carries one of
MISSING_NOTEBOOK, MISNAMED, CORRUPT or NOT_RUN (its notebook's own state); a dependency-missing test also says which earlier notebook it
needed, in `depends_on` (a notebook's stem; the field is written only when set).
"""

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Protocol, Self, TypedDict

PASSED = "passed"
FAILED = "failed"
NOT_IMPLEMENTED = "not-implemented"
DEPENDENCY_NOT_IMPLEMENTED = "dependency-not-implemented"
MISSING_NAME = "missing-name"
DEPENDENCY_MISSING = "dependency-missing"
TIMEOUT = "timeout"
LOST = "lost"
MISSING_NOTEBOOK = "missing-notebook"
MISNAMED = "misnamed"
CORRUPT = "corrupt"
NOT_RUN = "not-run"
REASONS = (
    PASSED,
    FAILED,
    NOT_IMPLEMENTED,
    DEPENDENCY_NOT_IMPLEMENTED,
    MISSING_NAME,
    DEPENDENCY_MISSING,
    TIMEOUT,
    LOST,
    MISSING_NOTEBOOK,
    MISNAMED,
    CORRUPT,
    NOT_RUN,
)
UNFINISHED = (NOT_IMPLEMENTED, DEPENDENCY_NOT_IMPLEMENTED)  # the exercise is not done yet
UNAVAILABLE = (MISSING_NOTEBOOK, MISNAMED, CORRUPT)  # a later notebook cannot use this one


def reason_of(test: Mapping[str, Any]) -> str:
    """A results.json test's reason; by its score for a test written before reasons existed."""
    reason = test.get("reason")
    if reason in REASONS:
        return reason
    return PASSED if test.get("score", 0) >= test.get("max_score", 0) else FAILED


@dataclass
class TestResult:
    name: str  # shown to the student, e.g. "softmax: rows sum to 1 on large inputs"
    score: float
    max_score: float
    output: str  # what went wrong and a hint; never the reference solution
    notebook: str  # e.g. "03_matrix_attention"
    function: str  # SPEC's graded name
    misconceptions: list[str] = field(default_factory=list)  # SPEC's misconception ids
    reason: str = ""  # one of REASONS; "" (not given): passed or failed by the score
    depends_on: str = ""  # dependency-missing: the earlier notebook's stem it needed

    def __post_init__(self) -> None:
        if self.reason not in REASONS:
            self.reason = PASSED if self.score >= self.max_score else FAILED

    @property
    def status(self) -> str:
        return "passed" if self.score >= self.max_score else "failed"

    def to_json(self) -> dict[str, object]:
        data = {**asdict(self), "status": self.status}
        if not self.depends_on:
            del data["depends_on"]  # only dependency-missing tests carry it
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Self:
        """A test of an earlier results.json (written by to_json)."""
        return cls(**{f.name: data[f.name] for f in fields(cls) if f.name in data})


class ResultsJson(TypedDict, total=False):
    """A student's results.json: grading/payload.py writes it, deadlines.py adds the late
    penalty, the reports read it (every key may be missing from an older or a refused one)."""

    student: str
    score: float
    max_score: float
    output: str
    execution_time: float
    cpu_seconds: float  # every sandbox of the student, as the grading parent measured it
    submission_messages: list[str]
    notebooks: dict[str, dict[str, Any]]  # stem -> its state, errors, messages, integrity
    tests: list[dict[str, Any]]  # TestResult.to_json() each
    late: dict[str, Any]  # deadlines.apply_late_policy
    handed_in_flags: list[dict[str, str]]
    internal_error: str
    submission_digest: str
    grading_fingerprint: str


class ReportedStudent(Protocol):
    """A student as the class report reads one: report.SavedResult (graded, from its
    results.json) or report.not_graded.Refused (refused before grading)."""

    @property
    def student(self) -> str: ...
    @property
    def results(self) -> ResultsJson: ...
    @property
    def folder(self) -> str | None: ...
    @property
    def refused(self) -> str: ...  # why not graded, "" for a graded student
