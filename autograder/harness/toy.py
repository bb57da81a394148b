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


class AdamW:
    """torch.optim.AdamW's defaults and update (torch's own functional `adamw`, one tensor at a
    time, as the class does on CPU): the same parameters, bit for bit.

    Not the class itself: constructing it imports torch's compiler stack (torch._dynamo, about
    2 CPU-seconds per graded notebook 06) for decorators that only matter under torch.compile.
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
        self.params = list(params)
        if not self.params:
            raise ValueError("optimizer got an empty parameter list")  # as torch.optim says
        self.lr, self.betas, self.eps, self.weight_decay = lr, betas, eps, weight_decay
        self.state = {}  # id(param) -> (step, exp_avg, exp_avg_sq), made at its first gradient

    def zero_grad(self):
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self):
        from torch.optim.adamw import adamw

        live = [p for p in self.params if p.grad is not None]
        for p in live:
            if id(p) not in self.state:
                zeros = torch.zeros_like(p, memory_format=torch.preserve_format)
                self.state[id(p)] = (torch.tensor(0.0), zeros, zeros.clone())
        states = [self.state[id(p)] for p in live]
        adamw(
            live,
            [p.grad for p in live],
            [s[1] for s in states],
            [s[2] for s in states],
            [],
            [s[0] for s in states],
            foreach=False,
            amsgrad=False,
            beta1=self.betas[0],
            beta2=self.betas[1],
            lr=self.lr,
            weight_decay=self.weight_decay,
            eps=self.eps,
            maximize=False,
        )


def train_lm(cls, init, windows, eval_idx, lr=1e-3, seed=0, stop_below=None, stop_window=None):
    """Train cls(**init) with AdamW, one step per batch of `windows` (steps, batch, T + 1: inputs
    [:, :-1], next tokens [:, 1:], all chosen by the parent); the model's logits on eval_idx
    before and after training.

    With `stop_below` and `stop_window` (given together), training ends early once the mean loss
    of the last `stop_window` batches is below `stop_below`: a model that has learned the text needs no more steps (most working GPTs stop
    after a third to a half of the batches). Stopping early only decides how long to train; the
    verdict still comes from the logits, so a model that fakes its losses to stop early only
    stops learning sooner.

    The logits are all the parent uses: it computes the losses itself against targets it kept,
    so a model (or code run by its constructor) that changes how losses are computed or
    reported here cannot change the verdict. Runs on one thread: a small model gains nothing
    from more, and on a loaded machine (graders in parallel) torch's thread pool can make it
    ten times slower.
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _train_lm(cls, init, windows, eval_idx, lr, seed, stop_below, stop_window)
    finally:
        torch.set_num_threads(threads)


def _train_lm(cls, init, windows, eval_idx, lr, seed, stop_below, stop_window):
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
    opt = AdamW(model.parameters(), lr=lr)  # after a first forward: a stub raises there
    model.train()
    recent = []  # the last stop_window batch losses
    for batch in windows:
        x, y = batch[:, :-1], batch[:, 1:]
        scores = model(x)
        # the negative log-likelihood of the next tokens, as log-sum-exp minus the right logit
        loss = (torch.logsumexp(scores, -1) - scores.gather(-1, y[..., None])[..., 0]).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if stop_below is not None:
            recent = [*recent[-(stop_window - 1) :], float(loss.detach())]
            if len(recent) == stop_window and sum(recent) / stop_window < stop_below:
                break
    return {
        "logits_before": before,
        "logits_after": logits(),
        "seconds": time.perf_counter() - started,
    }
