"""Torch helpers the harness builds for requests: a fixed toy language model and a trainer."""

import time

import numpy as np
import torch
from torch import nn


class ToyLM(nn.Module):
    """A bigram model with fixed logits: logits[b, t] = table[idx[b, t]].

    It records the longest context it was given, so the parent can check that generate crops
    the context to block_size.
    """

    def __init__(self, table, block_size):
        super().__init__()
        # a (frozen) parameter, so code like next(model.parameters()).device works on it
        self.table = nn.Parameter(
            torch.as_tensor(np.asarray(table), dtype=torch.float32), requires_grad=False
        )
        self.block_size = int(block_size)
        self.longest_context = 0

    def forward(self, idx):
        self.longest_context = max(self.longest_context, idx.shape[-1])
        if idx.shape[-1] > self.block_size:
            raise ValueError(f"context of {idx.shape[-1]} tokens > block_size {self.block_size}")
        return self.table[idx]


def train_lm(cls, init, windows, eval_idx, lr=1e-3, seed=0):
    """Train cls(**init) with AdamW, one step per batch of `windows` (steps, batch, T + 1: inputs
    [:, :-1], next tokens [:, 1:], all chosen by the parent); the model's logits on eval_idx
    before and after training.

    The logits are all the parent uses: it computes the losses itself against targets it kept,
    so a model (or code run by its constructor) that changes how losses are computed or
    reported here cannot change the verdict. Runs on one thread: a small model gains nothing
    from more, and on a loaded machine (graders in parallel) torch's thread pool can make it
    ten times slower.
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _train_lm(cls, init, windows, eval_idx, lr, seed)
    finally:
        torch.set_num_threads(threads)


def _train_lm(cls, init, windows, eval_idx, lr, seed):
    torch.manual_seed(seed)
    windows = torch.as_tensor(np.asarray(windows), dtype=torch.long)
    eval_idx = torch.as_tensor(np.asarray(eval_idx), dtype=torch.long)
    model = cls(**init)

    def logits():
        model.eval()
        with torch.no_grad():
            out = model(eval_idx.clone())
        model.train()
        return out

    started = time.perf_counter()
    before = logits()
    opt = torch.optim.AdamW(model.parameters(), lr=lr)  # after a first forward: a stub raises there
    model.train()
    for batch in windows:
        x, y = batch[:, :-1], batch[:, 1:]
        scores = model(x)
        # the negative log-likelihood of the next tokens, as log-sum-exp minus the right logit
        loss = (torch.logsumexp(scores, -1) - scores.gather(-1, y[..., None])[..., 0]).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return {
        "logits_before": before,
        "logits_after": logits(),
        "seconds": time.perf_counter() - started,
    }
