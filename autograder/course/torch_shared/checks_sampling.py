"""What the PyTorch judges share about losses and sampling: the cross-entropy worked out
in the parent, and the chi-square test of sampled counts. Plain data only, like checks.py."""

import math

import numpy as np
from numpy.typing import ArrayLike

# ---------------------------------------------------------------- losses and sampling


def cross_entropy(logits: ArrayLike, targets: ArrayLike) -> float:
    """Mean cross-entropy of logits (..., V) against integer targets (...), in float64 NumPy.

    Computed here, in the parent, from the logits a model returned: never a loss the student's
    process reports.
    """
    z = np.asarray(logits, dtype=np.float64).reshape(-1, np.shape(logits)[-1])
    t = np.asarray(targets, dtype=np.int64).reshape(-1)
    with np.errstate(invalid="ignore", over="ignore"):
        top = z.max(axis=-1, keepdims=True)
        lse = top[:, 0] + np.log(np.exp(z - top).sum(axis=-1))
        return float(np.mean(lse - z[np.arange(len(t)), t]))


def chi_square(counts: ArrayLike, p: ArrayLike, min_expected: float = 5.0) -> tuple[float, int]:
    """Pearson's statistic of counts against probabilities p (rare cells pooled) and its dof."""
    counts = np.asarray(counts, dtype=float)
    expected = counts.sum() * np.asarray(p, dtype=float)
    if np.any((expected == 0) & (counts > 0)):
        return math.inf, 1
    order = np.argsort(expected)
    pooled_c, pooled_e, cells_c, cells_e = 0.0, 0.0, [], []
    for i in order:
        if expected[i] == 0:
            continue
        if expected[i] < min_expected:
            pooled_c += counts[i]
            pooled_e += expected[i]
        else:
            cells_c.append(counts[i])
            cells_e.append(expected[i])
    if pooled_e > 0:
        cells_c.append(pooled_c)
        cells_e.append(pooled_e)
    c, e = np.array(cells_c), np.array(cells_e)
    return float(((c - e) ** 2 / e).sum()), max(len(c) - 1, 1)


def chi_square_limit(dof: int) -> float:
    """A generous acceptance bound (about p = 1e-6) for Pearson's statistic with dof degrees."""
    # Wilson-Hilferty: chi2 quantile ~ dof * (1 - 2/(9 dof) + z sqrt(2/(9 dof)))^3, z(1e-6) = 4.75
    a = 2.0 / (9.0 * dof)
    return dof * (1 - a + 4.75 * math.sqrt(a)) ** 3


def sample_fit(counts: ArrayLike, p: ArrayLike) -> tuple[float, bool]:
    """The sampling check of notebooks 06 and 07: Pearson's statistic of the tokens' `counts`
    against the distribution p, and whether chance explains it (chi_square_limit)."""
    stat, dof = chi_square(counts, np.asarray(p))
    return stat, stat <= chi_square_limit(dof)
