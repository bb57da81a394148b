"""The judges of notebook 02 (dot products and softmax, one query at a time): later tokens.

Registered under their stored names, "numpy_judges.<name>" (autograder.judging.LEGACY_PREFIXES);
the value and input cases of its functions are judged by numpy_shared/judges.py. Shipped in the
student handout: imports no reference, cases or variants.
"""

from typing import Any

from autograder.course.numpy_shared.judges_calls import got_of, same_outputs, well_formed
from autograder.judging import compare, judge
from autograder.judging.base import Fail, Response


@judge
def token_ignores_the_future(
    responses: list[Response], *, j: int, calls: list[dict[str, Any]]
) -> None:
    """attention_for_token(X, j) on X, on X with later tokens changed, on X with tokens 0..j
    changed, and (when given) on X with only tokens 0..j-1 changed: the first change must not
    matter (the default looks at tokens 0..j), the others must (an answer that returns token j's
    own value vector looks at no other token). Several mistakes look ahead (all tokens, one token too many, tokens j..n-1), so this
    case names none: it says what it saw, in the words of notebook 02 (no masks yet)."""
    function = "attention_for_token"
    outs = []
    for response, call in zip(responses, calls, strict=True):
        out = got_of(response, function, call["where"])
        well_formed(out, function, call)
        outs.append(out)
    a, b, c = outs[:3]
    if not compare.difference_summary(a, c, rtol=1e-7, atol=1e-9):
        raise Fail(
            f"changing token {j} itself (and the ones before it) did not change its output: "
            "the output should depend on the tokens it looks at."
        )
    if len(outs) > 3 and not compare.difference_summary(a, outs[3], rtol=1e-7, atol=1e-9):
        raise Fail(
            f"changing only the tokens before token {j} did not change its output: token {j} "
            f"should look at tokens 0..{j}, not at itself alone."
        )
    same_outputs(
        a,
        b,
        f"changing only the tokens after token {j} changed its output, so token {j} looks at "
        f"later tokens; by default it looks only at tokens 0..{j}",
    )
