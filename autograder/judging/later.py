"""Judge data worked out only when a judge first reads it.

    params = {"expected": out, "variants": Later(llama_variants, init, state, idx)}
    resolved(params)   # the same data with every Later replaced by its list: plain again

The known-wrong variants' outputs are read only to name the mistake in a wrong answer, and most
answers are right: working them out for every student when the case was built was about half of
what building a student's cases cost the grader (benchmarks/waiting_variants.py). A Later holds the
function and its arguments, and runs it once, on the first read, in the process that built the
case (the parent, or the student's own visible check). It reads as the list it stands for
(iteration, len, indexing), so judges need not know. Only data that did not decide how a case
was drawn may wait: a probe that redraws its inputs until the variants differ computes them at
once.

Stored cases (judging.store) are plain data: save_cases writes resolved(params).
"""

import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any


class Later(Sequence[Any]):
    """A list worked out by work(*args) on its first read, once (thread-safe)."""

    def __init__(self, work: Callable[..., Sequence[Any]], *args: Any) -> None:
        self._work: Callable[..., Sequence[Any]] | None = work
        self._args: tuple[Any, ...] | None = args
        self._value: list[Any] | None = None
        self._lock = threading.Lock()

    @property
    def value(self) -> list[Any]:
        with self._lock:
            if self._value is None:
                assert self._work is not None and self._args is not None
                self._value = list(self._work(*self._args))
                self._work = self._args = None  # its inputs are no longer held
            return self._value

    @property
    def done(self) -> bool:
        """Whether it has been worked out (a read, or resolved())."""
        return self._value is not None

    def __getitem__(self, index: Any) -> Any:
        return self.value[index]

    def __len__(self) -> int:
        return len(self.value)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.value)

    def __add__(self, other: Sequence[Any]) -> list[Any]:
        return self.value + list(other)

    def __eq__(self, other: object) -> bool:
        return self.value == (other.value if isinstance(other, Later) else other)

    __hash__ = None  # type: ignore[assignment]  # a list's equality, so no hash

    def __repr__(self) -> str:
        return f"Later({self._value!r})" if self.done else "Later(<not worked out>)"


def resolved(value: Any) -> Any:
    """value with every Later in it (in dicts, lists and tuples) replaced by its list."""
    if isinstance(value, Later):
        return [resolved(v) for v in value.value]
    if isinstance(value, dict):
        return {k: resolved(v) for k, v in value.items()}
    if isinstance(value, list):
        return [resolved(v) for v in value]
    if isinstance(value, tuple):
        return tuple(resolved(v) for v in value)
    return value
