"""Notebook 01: a dictionary as a soft lookup.

A Python dict answers only for keys it holds. Embed the keys and the query as vectors, compare
them by dot product, turn the scores into percentages, and merge the values in proportion:
that "reasonable merging" is, very roughly, what attention does.
"""

import numpy as np


def lookup(table, query):
    """The hard lookup: the value stored under `query`; an unknown key raises KeyError."""
    return table[query]


def similarity(query, keys):
    """Dot product of the query (d,) with every key (m, d) -> scores (m,)."""
    return keys @ query


def percentages(scores):
    """Exp-normalised scores (m,) -> weights (m,), non-negative and summing to 1."""
    e = np.exp(scores - np.max(scores))  # subtracting the max changes nothing but overflow
    return e / e.sum()


def soft_lookup(query, keys, values):
    """Soft lookup of query (d,) in keys (m, d) -> (weights (m,), output (d_v,)).

    The output is the weighted merge of the values (m, d_v): sum_j weights[j] * values[j].
    """
    weights = percentages(similarity(query, keys))  # (m,)
    return weights, weights @ values  # (m,), (d_v,)
