"""What grading produces for one test: the Gradescope test entry plus SPEC's own fields."""

from dataclasses import asdict, dataclass, field, fields


@dataclass
class TestResult:
    name: str  # shown to the student, e.g. "softmax: rows sum to 1 on large inputs"
    score: float
    max_score: float
    output: str  # what went wrong and a hint; never the reference solution
    notebook: str  # e.g. "03_matrix_attention"
    function: str  # SPEC's graded name
    misconceptions: list[str] = field(default_factory=list)  # SPEC's misconception ids

    @property
    def status(self):
        return "passed" if self.score >= self.max_score else "failed"

    def to_json(self):
        return {**asdict(self), "status": self.status}

    @classmethod
    def from_json(cls, data):
        """A test of an earlier results.json (written by to_json)."""
        return cls(**{f.name: data[f.name] for f in fields(cls) if f.name in data})
