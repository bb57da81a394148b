"""Hidden tests of notebook 04 (multi-head attention: heads and shapes): 8.5 points.

    mha_shapes            1.5  the lecture's n=2, d=4, d_k=3, H=5 (0.5); other sizes (1.0)
    split_heads           2.0  (n, H*d_k) with H = 3 (1.0); leading batch dimensions (0.5);
                               inputs unmodified (0.5)
    merge_heads           2.0  undoes split_heads (1.0); leading batch dimensions (0.5); inputs
                               unmodified (0.5)
    multi_head_attention  3.0  H = 2, d_k = 4, d = 6 (1.0); a causal mask broadcast over the heads
                               (0.5); a batch with a causal mask (0.5); H = 3 with H*d_k = d (0.5);
                               inputs unmodified (0.5)

mha_shapes accepts tuples or lists of integers (NumPy integers too).
"""

import numbers

import numpy as np

from autograder import reference as ref
from autograder.harness.wire import Opaque
from autograder.judging import compare
from autograder.probes.base import Case, Fail, probe
from autograder.probes.numpy_common import (
    call,
    causal_mask_of,
    random_mask,
    unmodified_case,
    value_case,
)

KEYS = ("W_q", "W_k", "W_v", "W_o", "input", "q", "k", "v", "A", "z", "concat", "output")


def _as_shape(value):
    """A tuple of ints from a tuple/list of integers, else None."""
    if not isinstance(value, tuple | list):
        return None
    out = []
    for x in value:
        if isinstance(x, bool) or not isinstance(x, numbers.Integral | np.integer):
            return None
        out.append(int(x))
    return tuple(out)


def _judge_shapes(response, n, d, d_k, H):
    where = f"mha_shapes(n={n}, d={d}, d_k={d_k}, H={H})"
    if response.error:
        raise Fail(compare.error_message(response, where))
    got = response.decode(response.raw.get("value"))
    if not isinstance(got, dict):
        seen = got.type_name if isinstance(got, Opaque) else type(got).__name__
        raise Fail(f"{where} returned a {seen}; it should return a dict from names to shapes.")
    expected = ref.mha_shapes(n, d, d_k, H)
    missing = [k for k in KEYS if k not in got]
    if missing:
        raise Fail(f"{where} has no entry for {', '.join(map(repr, missing))}.")
    wrong, notes, ids = [], [], []
    for key in KEYS:
        shape = _as_shape(got[key])
        if shape is None:
            wrong.append(key)
            notes.append(f"{key!r} is {got[key]!r}, not a tuple of integers")
            continue
        if shape == expected[key]:
            continue
        wrong.append(key)
        if len(shape) == 2 and shape == expected[key][::-1]:
            notes.append(
                f"{key!r} = {shape} has its sizes in the wrong order (the lecture's column "
                "convention? we use rows: X @ W)"
            )
        else:
            notes.append(f"{key!r} = {shape} is not right")
        if key == "concat" and shape == (n, d_k):
            ids.append("heads-averaged")
        if key == "output" and shape == (n, H * d_k) and H * d_k != d:
            ids.append("missing-output-projection")
    if wrong:
        from autograder.misconceptions.numpy_variants import explain

        raise Fail(
            f"{where}: {len(wrong)} of {len(KEYS)} shapes are wrong: "
            + "; ".join(notes)
            + "."
            + explain(ids),
            ids,
        )


@probe("mha_shapes")
def mha_shapes_cases(rng):
    n, d, d_k, H = (int(x) for x in rng.choice(np.arange(6, 20), size=4, replace=False))

    def judge_lecture(responses):
        _judge_shapes(responses[0], 2, 4, 3, 5)

    def judge_other(responses):
        _judge_shapes(responses[0], n, d, d_k, H)

    return [
        Case(
            "mha_shapes",
            "the lecture's n=2, d=4, d_k=3, H=5",
            0.5,
            [call(2, 4, 3, 5)],
            judge_lecture,
        ),
        Case("mha_shapes", "other sizes", 1.0, [call(n, d, d_k, H)], judge_other),
    ]


@probe("split_heads")
def split_heads_cases(rng):
    X = rng.standard_normal((5, 12))
    Xb = rng.standard_normal((2, 4, 6))
    Xu = rng.standard_normal((3, 8))
    return [
        value_case("split_heads", "(5, 12) into 3 heads of width 4", 1.0, [X, 3]),
        value_case("split_heads", "leading batch dimensions", 0.5, [Xb, 2], batched=True),
        unmodified_case("split_heads", 0.5, [Xu, 4]),
    ]


@probe("merge_heads")
def merge_heads_cases(rng):
    X = ref.split_heads(rng.standard_normal((5, 12)), 3)  # (3, 5, 4)
    Xb = rng.standard_normal((2, 2, 4, 3))
    Xu = rng.standard_normal((4, 3, 2))
    return [
        value_case(
            "merge_heads", "undoes split_heads: 3 heads of (5, 4)", 1.0, [np.ascontiguousarray(X)]
        ),
        value_case("merge_heads", "leading batch dimensions", 0.5, [Xb], batched=True),
        unmodified_case("merge_heads", 0.5, [Xu]),
    ]


@probe("multi_head_attention")
def multi_head_attention_cases(rng):
    f = "multi_head_attention"

    def weights(H, d, d_k):
        r = rng.standard_normal
        return [r((H, d, d_k)), r((H, d, d_k)), r((H, d, d_k)), r((H * d_k, d))]

    n, d = 5, 6
    X, W = rng.standard_normal((n, d)), weights(2, d, 4)
    Xc, Wc = rng.standard_normal((n, d)), weights(2, d, 4)
    Xb, Wb = rng.standard_normal((2, n, d)), weights(2, d, 4)
    X3, W3 = rng.standard_normal((n, d)), weights(3, d, 2)
    Xu, Wu = rng.standard_normal((4, d)), weights(2, d, 3)
    mask = causal_mask_of(n)
    return [
        value_case(f, "H = 2 heads, d_k = 4, d = 6", 1.0, [X, *W]),
        value_case(f, "a causal mask shared by the heads", 0.5, [Xc, *Wc], {"mask": mask}),
        value_case(
            f, "a batch of 2 with a causal mask", 0.5, [Xb, *Wb], {"mask": mask}, batched=True
        ),
        value_case(f, "H = 3 heads with H*d_k = d", 0.5, [X3, *W3]),
        unmodified_case(f, 0.5, [Xu, *Wu], {"mask": random_mask(rng, (4, 4))}),
    ]
