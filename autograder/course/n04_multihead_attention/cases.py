"""Hidden tests of notebook 04 (multi-head attention: heads and shapes): 8.5 points.

    mha_shapes            1.5  small sizes like the lecture's n=2, d=4, d_k=3, H=5 (0.5); other
                               sizes (1.0)
    split_heads           2.0  (n, H*d_k) with H = 3 (1.0); leading batch dimensions (0.5);
                               inputs unmodified (0.5)
    merge_heads           2.0  undoes split_heads (1.0); leading batch dimensions (0.5); inputs
                               unmodified (0.5)
    multi_head_attention  3.0  H = 2, d_k = 4, d = 6 (1.0); a causal mask broadcast over the heads
                               and a mask per head (H, n, n) (0.5); a batch with a causal mask
                               (0.5); H = 3 with H*d_k = d, and large scores (0.5); inputs
                               unmodified (0.5)

mha_shapes gives each shape as a tuple of integers (NumPy integers too), as the exercise asks:
the notebook's table cell compares them with tuples.
"""

import numpy as np

from autograder.course.n04_multihead_attention import reference as ref
from autograder.course.numpy_shared.cases import (
    call,
    causal_mask_of,
    loud,
    random_mask,
    unmodified_case,
    value_case,
)
from autograder.course.probes import Case, probe
from autograder.judging import Judgement


def _shapes_case(name, points, n, d, d_k, H):
    sizes = {"n": n, "d": d, "d_k": d_k, "H": H}
    return Case(
        "mha_shapes",
        name,
        points,
        [call(n, d, d_k, H)],
        Judgement("numpy_judges.mha_shapes", sizes | {"expected": ref.mha_shapes(n, d, d_k, H)}),
    )


@probe("mha_shapes")
def mha_shapes_cases(rng: np.random.Generator) -> list[Case]:
    # sizes like the lecture's n=2, d=4, d_k=3, H=5 (n < d_k < d < H*d_k, every size distinct),
    # drawn like every hidden input: the lecture's own table is the notebook's table cell
    n = int(rng.integers(2, 4))
    d_k = int(rng.integers(n + 1, 6))
    d = int(rng.integers(d_k + 1, 9))
    H = int(rng.choice([h for h in range(3, 8) if h * d_k > d and h not in (n, d_k, d)]))
    big = [int(x) for x in rng.choice(np.arange(6, 20), size=4, replace=False)]
    return [
        _shapes_case("small sizes like the lecture's (n < d_k < d < H*d_k)", 0.5, n, d, d_k, H),
        _shapes_case("other sizes", 1.0, *big),
    ]  # fmt: skip


@probe("split_heads")
def split_heads_cases(rng: np.random.Generator) -> list[Case]:
    X = rng.standard_normal((5, 12))
    Xb = rng.standard_normal((2, 4, 6))
    Xu = rng.standard_normal((3, 8))
    return [
        value_case("split_heads", "(5, 12) into 3 heads of width 4", 1.0, [X, 3]),
        value_case("split_heads", "leading batch dimensions", 0.5, [Xb, 2], batched=True),
        unmodified_case("split_heads", 0.5, [Xu, 4]),
    ]


@probe("merge_heads")
def merge_heads_cases(rng: np.random.Generator) -> list[Case]:
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
def multi_head_attention_cases(rng: np.random.Generator) -> list[Case]:
    f = "multi_head_attention"

    def weights(H, d, d_k):
        r = rng.standard_normal
        return [r((H, d, d_k)), r((H, d, d_k)), r((H, d, d_k)), r((H * d_k, d))]

    n, d = 5, 6
    X, W = rng.standard_normal((n, d)), weights(2, d, 4)
    Xc, Wc = rng.standard_normal((n, d)), weights(2, d, 4)
    Xh, Wh = rng.standard_normal((n, d)), weights(2, d, 4)
    Xb, Wb = rng.standard_normal((2, n, d)), weights(2, d, 4)
    X3, W3 = rng.standard_normal((n, d)), weights(3, d, 2)
    Xl = rng.standard_normal((n, d))
    Xu, Wu = rng.standard_normal((4, d)), weights(2, d, 3)
    mask = causal_mask_of(n)
    return [
        value_case(f, "H = 2 heads, d_k = 4, d = 6", 1.0, [X, *W]),
        value_case(
            f,
            "a causal (n, n) mask shared by the heads, and a mask per head (H, n, n)",
            0.5,
            calls=[([Xc, *Wc], {"mask": mask}), ([Xh, *Wh], {"mask": random_mask(rng, (2, n, n))})],
        ),
        value_case(
            f, "a batch of 2 with a causal mask", 0.5, [Xb, *Wb], {"mask": mask}, batched=True
        ),
        value_case(
            f,
            "H = 3 heads with H*d_k = d; and large scores",
            0.5,
            calls=[([X3, *W3], {}), ([loud(Xl, W[0][0], W[1][0]), *W], {})],
            large=True,
        ),
        unmodified_case(f, 0.5, [Xu, *Wu], {"mask": random_mask(rng, (4, 4))}),
    ]
