"""PyTorch's raw errors reach a student in the words notebook 05 teaches (judging.compare)."""

import math

import pytest
import torch
from torch import nn

from autograder.checks import report, run_in_process
from autograder.course.n05_transformer_block import reference as ref
from autograder.judging.compare import plain_error_text


def raised(fn):
    try:
        fn()
    except RuntimeError as err:
        return str(err)
    raise AssertionError("expected PyTorch to raise")


t = torch.randn(2, 3, 4)
# (the error PyTorch raises, words the plain text must contain, words it must not)
CASES = [
    (lambda: t.transpose(0, 1).view(3, 8), ["`.view`", "contiguous", "`.reshape"], "subspaces"),
    (lambda: 1 - (t > 0), ["~mask"], "operator"),
    (lambda: -(t > 0), ["~mask"], "operator"),
    (lambda: nn.Linear(5, 2)(t), ["last axis has size 4", "second-to-last 5"], "mat1"),
    (lambda: t + torch.randn(2, 3, 5), ["sizes 4 and 5", "axis 2", "size of 1"], "tensor a"),
    (lambda: nn.Linear(4, 2)(t.double()), ["float32", "`.float()`"], "mat1"),
    (lambda: t.masked_fill(torch.ones(4), 0.0), ["boolean", "`.bool()`"], "masked_fill_"),
    (lambda: torch.where(torch.ones(4), t, 0.0), ["boolean"], "condition"),
]


@pytest.mark.parametrize("make, words, raw", CASES, ids=[w[0] for _, w, _ in CASES])
def test_a_torch_error_is_said_in_the_notebooks_words(make, words, raw):
    text = plain_error_text(raised(make))
    for word in words:
        assert word in text, text
    assert raw not in text, text


def test_an_unknown_error_is_left_as_it_is():
    assert plain_error_text("something else entirely") == "something else entirely"


class ViewAfterTranspose(ref.MultiHeadAttention):
    """A student's MultiHeadAttention that merges the heads with .view after a transpose."""

    def forward(self, x, mask=None, context=None):
        context = x if context is None else context
        H = self.n_heads
        q = self.q_proj(x).unflatten(-1, (H, -1)).transpose(-3, -2)
        k = self.k_proj(context).unflatten(-1, (H, -1)).transpose(-3, -2)
        v = self.v_proj(context).unflatten(-1, (H, -1)).transpose(-3, -2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        attn = scores.softmax(dim=-1)
        z = attn @ v
        return self.out_proj(z.transpose(-3, -2).view(*x.shape)), attn


def test_the_visible_check_of_a_view_bug_names_the_fix_not_the_stride_rule():
    text = report("MultiHeadAttention", run_in_process("MultiHeadAttention", ViewAfterTranspose))
    assert text.startswith("✗ MultiHeadAttention"), text
    assert "`.reshape(...)`" in text and "contiguous" in text, text
    assert "contiguous subspaces" not in text, text
