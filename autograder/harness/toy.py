"""Torch helpers the harness builds for requests: a fixed toy language model and a trainer."""

import contextlib
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt
import torch
from torch import nn


class ToyLM(nn.Module):
    """A bigram model with fixed logits: logits[b, t] = table[idx[b, t]].

    It records the longest context it was given, so the parent can check that generate crops
    the context to block_size.
    """

    def __init__(self, table: npt.ArrayLike, block_size: int, training: bool = True) -> None:
        super().__init__()
        # a (frozen) parameter, so code like next(model.parameters()).device works on it
        self.table = nn.Parameter(
            torch.as_tensor(np.asarray(table), dtype=torch.float32), requires_grad=False
        )
        self.block_size = int(block_size)
        self.longest_context = 0
        self.train(bool(training))

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
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

    def __init__(
        self,
        params: Iterable[torch.Tensor],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
    ) -> None:
        self.params = list(params)
        if not self.params:
            raise ValueError("optimizer got an empty parameter list")  # as torch.optim says
        self.lr, self.betas, self.eps, self.weight_decay = lr, betas, eps, weight_decay
        self.state: dict[
            int, tuple[torch.Tensor, torch.Tensor, torch.Tensor]
        ] = {}  # id(param) -> (step, exp_avg, exp_avg_sq), made at its first gradient

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        from torch.optim.adamw import adamw

        live = [p for p in self.params if p.grad is not None]
        for p in live:
            if id(p) not in self.state:
                zeros = torch.zeros_like(p, memory_format=torch.preserve_format)
                self.state[id(p)] = (torch.tensor(0.0), zeros, zeros.clone())
        states = [self.state[id(p)] for p in live]
        adamw(
            live,
            [p.grad for p in live],  # type: ignore[misc]  # `live`: only those with a grad
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


def train_lm(
    cls: Callable[..., nn.Module],
    init: dict[str, Any],
    windows: npt.ArrayLike,
    eval_idx: npt.ArrayLike,
    lr: float = 1e-3,
    seed: int = 0,
    stop_below: float | None = None,
    stop_window: int | None = None,
) -> dict[str, Any]:
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
    recent: list[float] = []  # the last stop_window batch losses
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


class LayerNorm(nn.Module):
    """A layer norm written as notebook 05 writes it: a module of its own with a gain `weight`
    and a shift `bias`, not nn.LayerNorm, so that an optimizer which finds the norms by
    isinstance(module, nn.LayerNorm) misses it, as it would miss the course's own."""

    def __init__(self, d_model: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))
        self.bias = nn.Parameter(torch.zeros(d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.layer_norm(x, x.shape[-1:], self.weight, self.bias, self.eps)


class TinyLM(nn.Module):
    """A small trainable language model for the training exercises (lr_at's neighbours
    configure_optimizer and train_step): every kind of parameter they tell apart, an embedding
    table, a matrix with its bias, a norm's gain and bias and the head, which may be tied to the
    token table. It records the mode (train or eval) of every forward call in `modes`."""

    def __init__(
        self,
        vocab_size: int,
        block_size: int,
        d_model: int,
        tied: bool = False,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        self.block_size = int(block_size)
        self.embed = nn.Embedding(vocab_size, d_model)
        self.pos_embed = nn.Embedding(block_size, d_model)
        self.drop = nn.Dropout(dropout)
        self.fc = nn.Linear(d_model, d_model)
        self.ln = LayerNorm(d_model)  # the course's kind, not nn.LayerNorm
        self.unembed = nn.Linear(d_model, vocab_size, bias=False)
        if tied:
            self.unembed.weight = self.embed.weight
        self.modes: list[bool] = []

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        self.modes.append(self.training)
        positions = torch.arange(idx.shape[-1], device=idx.device)
        x = self.drop(self.embed(idx) + self.pos_embed(positions))
        x = x + torch.tanh(self.fc(x))
        return self.unembed(self.ln(x))


def tiny_lm(
    init: dict[str, Any],
    state: Mapping[str, npt.ArrayLike],
    mode: str = "train",
    stale_grads: float | None = None,
) -> TinyLM:
    """TinyLM(**init) with `state` (its parameters by name) loaded, in `mode`; with
    `stale_grads` (a number), every parameter starts with a left-over gradient of that value."""
    model = TinyLM(**init)
    given = {name: torch.as_tensor(np.asarray(value)) for name, value in state.items()}
    model.load_state_dict(given, strict=False)  # the parameters `state` names; the rest as made
    if stale_grads is not None:
        for param in model.parameters():
            param.grad = torch.full_like(param, float(stale_grads))
    model.train(mode == "train")
    return model


class SGD:
    """Plain gradient descent, p -= lr * p.grad: the parent reads the gradient an update used
    from the change of the parameters. The methods an optimizer is called with in a training
    step (zero_grad, step) and its param_groups."""

    def __init__(self, params: Iterable[nn.Parameter], lr: float) -> None:
        self.param_groups: list[dict[str, Any]] = [{"params": list(params), "lr": lr}]
        self.steps = 0

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.param_groups[0]["params"]:
            if set_to_none:
                p.grad = None
            elif p.grad is not None:
                p.grad.zero_()

    @torch.no_grad()
    def step(self, closure: object = None) -> None:
        self.steps += 1
        group = self.param_groups[0]
        for p in group["params"]:
            if p.grad is not None:
                p.sub_(group["lr"] * p.grad)


def _names(model: TinyLM):
    """id(parameter) -> its first name (a tied parameter has several)."""
    names: dict[int, str] = {}
    for name, param in model.named_parameters(remove_duplicate=False):
        names.setdefault(id(param), name)
    return names


def optimizer_groups(
    make: Callable[..., Any], model_spec: dict[str, Any], args: list, kwargs: dict[str, Any]
) -> dict[str, Any]:
    """Call make(model, *args, **kwargs) (configure_optimizer) on a TinyLM; describe what it
    returned as plain data: its class, whether it is an AdamW, and each parameter group's
    settings and parameters by name ("?" for a tensor that is not the model's)."""
    model = tiny_lm(**model_spec)
    with _compiler_not_imported():
        optimizer = make(model, *args, **kwargs)
    names = _names(model)
    groups = []
    for group in getattr(optimizer, "param_groups", None) or []:
        groups.append(
            {
                "names": [names.get(id(p), "?") for p in group.get("params", [])],
                **{k: _plain(group.get(k)) for k in ("lr", "weight_decay", "betas", "eps")},
            }
        )
    return {
        "type": type(optimizer).__name__,
        "is_adamw": isinstance(optimizer, torch.optim.AdamW),
        "groups": groups,
        "parameters": [n for n, _ in model.named_parameters()],
    }


@contextlib.contextmanager
def _compiler_not_imported() -> Iterator[None]:
    """While configure_optimizer runs: torch.optim.Optimizer's methods that torch wraps in
    `torch._disable_dynamo` (add_param_group, which every optimizer's constructor calls,
    zero_grad, state_dict, load_state_dict) call their function directly instead of importing
    torch's compiler stack first (about 1.1 CPU-seconds, for a wrapper that only matters under
    torch.compile). What they do is unchanged: outside torch.compile the wrapper calls the same
    function. Only the wrappers that have not run yet are touched, and only for the call: a
    wrapper keeps its function as `__dynamo_disable` once it has run, and loses it afterwards.
    Does nothing if torch's wrapper is not the one this was written for."""
    marker = torch._disable_dynamo(lambda: None).__code__
    preset = []
    for attr in vars(torch.optim.Optimizer).values():
        function = getattr(attr, "__wrapped__", None)
        if getattr(attr, "__code__", None) is not marker or not callable(function):
            continue
        if getattr(function, "__dynamo_disable", None) is None:
            setattr(function, "__dynamo_disable", function)
            preset.append(function)
    try:
        yield
    finally:
        for function in preset:
            if getattr(function, "__dynamo_disable", None) is function:
                delattr(function, "__dynamo_disable")


def _plain(value):
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        return float(value)
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, bool | int | float) or value is None:
        return value
    return repr(value)[:100]


def one_step(
    step: Callable[..., Any],
    model_spec: dict[str, Any],
    lr: float,
    args: list,
    kwargs: dict[str, Any],
    seed: int = 0,
) -> dict[str, Any]:
    """Call step(model, optimizer, *args, **kwargs) (train_step) once on a TinyLM with an SGD
    optimizer; answer what it returned and the evidence of what it did: the parameters after,
    the gradients left behind, the model's mode after and of each forward call, the optimizer's
    steps."""
    model = tiny_lm(**model_spec)
    optimizer = SGD(model.parameters(), lr)
    torch.manual_seed(seed)
    out = step(model, optimizer, *args, **kwargs)
    return {
        "returned": out,
        "after": {n: p.detach().clone() for n, p in model.named_parameters()},
        "grads": {
            n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None
        },
        "training": model.training,
        "modes": list(model.modes),
        "steps": optimizer.steps,
    }
