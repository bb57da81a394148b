"""The judges of notebook 01 (a dictionary as a soft lookup): the hard lookup's cases.

Registered under their stored names, "numpy_judges.<name>" (autograder.judging.LEGACY_PREFIXES);
the value and input cases of similarity, percentages and soft_lookup are judged by
numpy_shared/judges.py. Shipped in the student handout: imports no reference, cases or variants.
"""

from typing import Any

import numpy as np

from autograder.course.numpy_shared.judges_calls import short
from autograder.course.numpy_shared.signatures import explain
from autograder.judging import judge
from autograder.judging.base import Fail, Response


@judge
def lookup_present(responses: list[Response], *, lookups: list[dict[str, Any]]) -> None:
    """Each lookup returns the value stored under its key and leaves the table's keys alone.

    lookups: one {"key", "want", "keys"} per response (keys: the table's keys).
    """
    for response, lookup in zip(responses, lookups, strict=True):
        key, want = lookup["key"], lookup["want"]
        if response.error:
            e = response.error
            raise Fail(f"lookup(table, {key!r}) raised {e['type']}: {e['message']}")
        got = response.decode(response.raw.get("value"))
        same = (
            isinstance(got, np.ndarray)
            and got.shape == want.shape
            and bool(((got == want) | ((got != got) & (want != want))).all())
            if isinstance(want, np.ndarray)
            else isinstance(got, str) and got == want
        )
        if not same:
            raise Fail(
                f"lookup(table, {key!r}) returned {short(got)}, not the value stored under {key!r}."
            )
        after = response.decode(response.raw["args_after"][0])
        if not isinstance(after, dict) or set(after) != set(lookup["keys"]):
            raise Fail(f"lookup(table, {key!r}) changed the table's keys: it must only read it.")


@judge
def lookup_absent(
    responses: list[Response], *, absent: str, present: dict[str, Any] | None = None
) -> None:
    """Looking up a key the table does not hold raises KeyError naming it; and (present: one
    lookup_present entry, answered by the second response) a key it holds returns its value, so
    that an answer raising KeyError for every key earns nothing here."""
    response = responses[0]
    if present is not None:
        lookup_present(responses[1:2], lookups=[present])
    error = response.error
    if not error:
        got = response.decode(response.raw.get("value"))
        ids = ["unknown-key-answered"]
        raise Fail(
            f"lookup(table, {absent!r}) returned {short(got)} for a key the table does not "
            "hold." + explain(ids),
            ids,
        )
    if error["type"] != "KeyError":
        ids = ["unknown-key-wrong-error"]
        raise Fail(
            f"lookup(table, {absent!r}) raised {error['type']}." + explain(ids),
            ids,
        )
    if absent not in error["message"]:
        ids = ["unknown-key-unnamed"]
        raise Fail(
            f"lookup(table, {absent!r}) raised KeyError, but its message "
            f"({error['message'][:80]!r}) does not name the key {absent!r}." + explain(ids),
            ids,
        )
    after = response.decode(response.raw["args_after"][0])
    if not isinstance(after, dict) or absent in after:
        raise Fail(f"lookup(table, {absent!r}) added the unknown key to the table.")
