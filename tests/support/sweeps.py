"""Which members of a sweep stay in the fast subset (`pytest -m "not slow"`).

A sweep over a catalogue of right answers keeps the first answer of each graded name fast and
runs the others with the slow tests (docs/maintainers.md, "Inner loop"): every graded name is
still checked by the fast subset, and the full suite checks every answer.
"""

import pytest


def first_of_each_name(entries):
    """pytest parameters for entries (graded name, answer, ...): the first of each name as it is,
    every later one of the same name marked slow."""
    seen = set()
    params = []
    for entry in entries:
        name = entry[0]
        params.append(pytest.param(*entry, marks=pytest.mark.slow) if name in seen else entry)
        seen.add(name)
    return params
