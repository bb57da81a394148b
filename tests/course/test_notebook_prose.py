"""Sentences of the notebooks that state a fact the code can check, checked against the code.

Each test reads a sentence from a solution notebook's markdown (so the test fails if the prose is
changed to something false) and compares what it claims with what the model answers compute.
"""

import json
import re
from pathlib import Path

import numpy as np
import pytest

from autograder.course.model_answers import multi_head_attention

SOLUTIONS = Path(__file__).resolve().parents[2] / "solutions"


def markdown_cells(stem):
    nb = json.loads((SOLUTIONS / f"{stem}.ipynb").read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            yield " ".join("".join(cell["source"]).split())  # one line, single spaces


def padding_mask_axes(stem):
    """{'head': axis, 'query': axis} as the padding-mask paragraph of a notebook states them."""
    for text in markdown_cells(stem):
        if "(B, 1, 1, n)" not in text:
            continue
        claims = {
            ("head" if word.startswith("head") else "query"): int(axis)
            for word, axis in re.findall(r"\b(heads?|quer(?:y|ies)) \(axis (\d)\)", text)
        }
        if claims:
            return claims
    raise AssertionError(f"{stem}: no paragraph on the (B, 1, 1, n) mask names its axes")


@pytest.mark.parametrize("stem", ["03_matrix_attention", "05_transformer_block"])
def test_the_padding_mask_sentence_names_the_axes_the_code_uses(stem):
    claims = padding_mask_axes(stem)
    assert set(claims) == {"head", "query"}, claims
    # the two singleton axes of a (B, 1, 1, n) mask are the head and query axes, in some order
    assert sorted(claims.values()) == [1, 2], claims

    rng = np.random.default_rng(0)
    B, H, n, d, d_k = 2, 3, 5, 6, 2  # H differs from n, so the head axis is recognisable
    X = rng.normal(size=(B, n, d))
    W_q, W_k, W_v = (rng.normal(size=(H, d, d_k)) for _ in range(3))
    W_o = rng.normal(size=(H * d_k, d))
    _, A = multi_head_attention(X, W_q, W_k, W_v, W_o)
    assert A.shape[claims["head"]] == H, f"{stem}: axis {claims['head']} of {A.shape} is not H"

    mask = np.ones((n, n), dtype=bool)
    mask[1, 0] = False  # query 1 may not read key 0; every other query may
    _, A_masked = multi_head_attention(X, W_q, W_k, W_v, W_o, mask)
    query_1 = np.take(A_masked, 1, axis=claims["query"])  # (B, H, n_k) if the claim is right
    assert np.all(query_1[..., 0] == 0), f"{stem}: axis {claims['query']} is not the query axis"
    other = np.take(A_masked, 2, axis=claims["query"])
    assert np.all(other[..., 0] > 0)
