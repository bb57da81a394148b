"""Wrong and right answers to notebook 06's training pieces (lr_at, configure_optimizer,
train_step) and to generate's top_p and mode, for tests/catalogues/test_training_catalogue.py.

MUTANTS: (key, graded name, the answer, expected id or None, key phrase of the message or
None). Without an id the phrase is required: the message must say what was seen.
RIGHT: (key, graded name, a right answer written another way).
"""

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from autograder.course.n06_autoregressive_lm import reference as R

# ================================================================ lr_at


def lr_knobs(
    warm="right", span="right", low="min", clamp=True, shape="cosine", kind=float, guard=True
):
    def lr_at(step, max_lr, warmup_steps, total_steps, min_lr=0.0):
        if warm == "from-zero" and step < warmup_steps:
            return kind(max_lr * step / warmup_steps)
        if warm == "one-longer" and step <= warmup_steps:
            return kind(max_lr * (step + 1) / warmup_steps)
        if step < warmup_steps:
            return kind(max_lr * (step + 1) / warmup_steps)
        denominator = (
            total_steps - warmup_steps if span == "one-short" else total_steps - 1 - warmup_steps
        )
        p = (step - warmup_steps) / (max(1, denominator) if guard else denominator)
        if clamp:
            p = min(max(p, 0.0), 1.0)
        floor = min_lr if low == "min" else 0.0
        if shape == "linear":
            return kind(floor + (max_lr - floor) * (1 - p))
        return kind(floor + 0.5 * (max_lr - floor) * (1 + math.cos(math.pi * p)))

    return lr_at


def lr_tensor(step, max_lr, warmup_steps, total_steps, min_lr=0.0):
    return torch.tensor(R.lr_at(step, max_lr, warmup_steps, total_steps, min_lr))


def lr_by_torch_schedulers(step, max_lr, warmup_steps, total_steps, min_lr=0.0):
    """Right: torch's own LinearLR then CosineAnnealingLR, stepped `step` times (the cosine's
    steps counted up to the last one, after which the rate stays)."""
    param = nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([param], lr=max_lr)
    cosine_steps = max(1, total_steps - 1 - warmup_steps)
    cosine = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=cosine_steps, eta_min=min_lr)
    if warmup_steps > 0:
        warm = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: (s + 1) / warmup_steps)
        for _ in range(min(step, warmup_steps - 1)):
            opt.step()
            warm.step()
        if step < warmup_steps:
            return opt.param_groups[0]["lr"]
        for group in opt.param_groups:
            group["lr"] = max_lr
        cosine = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=cosine_steps, eta_min=min_lr)
    for _ in range(min(step - warmup_steps, cosine_steps)):
        opt.step()
        cosine.step()
    return opt.param_groups[0]["lr"]


def lr_numpy(step, max_lr, warmup_steps, total_steps, min_lr=0.0):
    """Right: np.clip and np.cos, returning a NumPy float."""
    if step < warmup_steps:
        return np.float64(max_lr) * (step + 1) / warmup_steps
    p = np.clip((step - warmup_steps) / max(1, total_steps - 1 - warmup_steps), 0, 1)
    return min_lr + (max_lr - min_lr) * (1 + np.cos(np.pi * p)) / 2


# ================================================================ configure_optimizer


def opt_all_decay(model, lr, weight_decay, betas=(0.9, 0.95)):
    return torch.optim.AdamW(model.parameters(), lr=lr, betas=betas, weight_decay=weight_decay)


def opt_by_name(model, lr, weight_decay, betas=(0.9, 0.95)):
    """Decay whatever is called a weight: the norm's gain too."""
    named = list(model.named_parameters())
    decay = [p for n, p in named if n.endswith("weight")]
    other = [p for n, p in named if not n.endswith("weight")]
    groups = [
        {"params": decay, "weight_decay": weight_decay},
        {"params": other, "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=lr, betas=betas)


def opt_by_module(model, lr, weight_decay, betas=(0.9, 0.95)):
    """minGPT's rule: only nn.Linear weights decay (embeddings do not)."""
    decay, other = [], []
    for module in model.modules():
        for name, p in module.named_parameters(recurse=False):
            (decay if isinstance(module, nn.Linear) and name == "weight" else other).append(p)
    seen, groups = set(), []
    for params, wd in ((decay, weight_decay), (other, 0.0)):
        unique = [p for p in params if id(p) not in seen and not seen.add(id(p))]
        groups.append({"params": unique, "weight_decay": wd})
    return torch.optim.AdamW(groups, lr=lr, betas=betas)


def opt_modules_loop(model, lr, weight_decay, betas=(0.9, 0.95)):
    """Every module's own parameters: a tied weight comes once per module that holds it."""
    decay, other = [], []
    for module in model.modules():
        for p in module.parameters(recurse=False):
            (decay if p.dim() >= 2 else other).append(p)
    groups = [
        {"params": decay, "weight_decay": weight_decay},
        {"params": other, "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=lr, betas=betas)


def opt_no_dedup(model, lr, weight_decay, betas=(0.9, 0.95)):
    named = list(model.named_parameters(remove_duplicate=False))
    groups = [
        {"params": [p for _, p in named if p.dim() >= 2], "weight_decay": weight_decay},
        {"params": [p for _, p in named if p.dim() < 2], "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=lr, betas=betas)


def opt_betas_ignored(model, lr, weight_decay, betas=(0.9, 0.95)):
    return R.configure_optimizer(model, lr, weight_decay)


def opt_adam(model, lr, weight_decay, betas=(0.9, 0.95)):
    params = list(model.parameters())
    groups = [
        {"params": [p for p in params if p.dim() >= 2], "weight_decay": weight_decay},
        {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
    ]
    return torch.optim.Adam(groups, lr=lr, betas=betas)


def opt_no_biases(model, lr, weight_decay, betas=(0.9, 0.95)):
    """Only the decaying group: biases and gains never trained."""
    decay = [p for p in model.parameters() if p.dim() >= 2]
    return torch.optim.AdamW(decay, lr=lr, betas=betas, weight_decay=weight_decay)


def opt_nanogpt(model, lr, weight_decay, betas=(0.9, 0.95)):
    """Right: nanoGPT's own configure_optimizers, by name."""
    param_dict = {pn: p for pn, p in model.named_parameters() if p.requires_grad}
    decay = [p for n, p in param_dict.items() if p.dim() >= 2]
    nodecay = [p for n, p in param_dict.items() if p.dim() < 2]
    groups = [
        {"params": decay, "weight_decay": weight_decay},
        {"params": nodecay, "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=lr, betas=betas)


def opt_one_group_each(model, lr, weight_decay, betas=(0.9, 0.95)):
    """Right: one group per parameter, each with its own decay."""
    groups = [
        {"params": [p], "weight_decay": weight_decay if p.ndim > 1 else 0.0}
        for p in model.parameters()
    ]
    return torch.optim.AdamW(groups, lr=lr, betas=betas, eps=1e-8)


# ================================================================ train_step


def step_knobs(
    zero="before", clip_at="before", clip_kind="norm", report="before", mode="train", kind="item"
):
    def train_step(model, optimizer, x, y, clip=1.0):
        if mode == "train":
            model.train()
        elif mode == "eval":
            model.eval()
        if zero == "before":
            optimizer.zero_grad()
        loss = R.lm_loss(model(x), y)
        loss.backward()

        def clip_now():
            if clip_kind == "none-clips" and clip is None:
                nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            elif clip is None:
                return
            elif clip_kind == "norm":
                nn.utils.clip_grad_norm_(model.parameters(), clip)
            elif clip_kind == "value":
                nn.utils.clip_grad_value_(model.parameters(), clip)
            elif clip_kind == "per-parameter":
                for p in model.parameters():
                    nn.utils.clip_grad_norm_([p], clip)
            elif clip_kind == "rescale":
                norm = torch.sqrt(sum((p.grad**2).sum() for p in model.parameters()))
                for p in model.parameters():
                    p.grad *= clip / norm
            elif clip_kind == "none-clips":
                nn.utils.clip_grad_norm_(model.parameters(), clip)

        if clip_at == "before":
            clip_now()
        optimizer.step()
        if clip_at == "after":
            clip_now()
        if zero == "after":
            optimizer.zero_grad()
        if report == "after":
            with torch.no_grad():
                loss = R.lm_loss(model(x), y)
        return loss.item() if kind == "item" else loss

    return train_step


def step_own_optimizer(model, optimizer, x, y, clip=1.0):
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    return R.train_step(model, optimizer, x, y, clip)


def step_manual(model, optimizer, x, y, clip=1.0):
    """Right: set_to_none=False, the global norm by hand, float(loss)."""
    model.train()
    for p in model.parameters():
        if p.grad is not None:
            p.grad.zero_()
    logits = model(x)
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
    loss.backward()
    if clip is not None:
        grads = [p.grad for p in model.parameters() if p.grad is not None]
        norm = torch.sqrt(sum(g.pow(2).sum() for g in grads))
        if norm > clip:
            for g in grads:
                g.mul_(clip / (norm + 1e-6))
    optimizer.step()
    return float(loss.detach())


def step_param_groups(model, optimizer, x, y, clip=1.0):
    """Right: clips the optimizer's own parameters, foreach."""
    model.train()
    model.zero_grad(set_to_none=True)
    loss = R.lm_loss(model(x), y)
    loss.backward()
    if clip is not None:
        params = [p for g in optimizer.param_groups for p in g["params"]]
        nn.utils.clip_grad_norm_(params, max_norm=clip, foreach=True)
    optimizer.step()
    return loss.detach().item()


# ================================================================ generate: top_p and mode


def gen_knobs(
    top_p_at="after", boundary="keep", renorm=True, ties="stable", tk_temp=True, mode="keep"
):
    @torch.no_grad()
    def generate(
        model, idx, max_new_tokens, temperature=1.0, top_k=None, generator=None, top_p=None
    ):
        was_training = model.training
        if mode != "keep":
            model.eval()
        for _ in range(max_new_tokens):
            raw = model(idx[:, -model.block_size :])[:, -1, :]
            logits = raw / temperature if (tk_temp or top_k is None) else raw
            if top_k is not None:
                kth = torch.topk(logits, min(top_k, logits.shape[-1])).values[:, [-1]]
                logits = logits.masked_fill(logits < kth, float("-inf"))
            chosen = None
            if top_p is not None and top_p < 1.0 and top_p_at != "never":
                basis = logits if top_p_at == "after" else logits * temperature
                probs = basis.softmax(-1)
                if ties == "stable":
                    sorted_p, order = probs.sort(dim=-1, descending=True, stable=True)
                else:  # the reverse of an ascending stable sort: ties by higher id first
                    sorted_p, order = probs.flip(-1).sort(dim=-1, descending=True, stable=True)
                    order = probs.shape[-1] - 1 - order
                cum = sorted_p.cumsum(-1)
                drop = (cum >= top_p) if boundary == "exclude" else (cum - sorted_p >= top_p)
                drop[:, 0] = False
                if not renorm:
                    kept = logits.softmax(-1).gather(-1, order).masked_fill(drop, 0.0)
                    u = torch.rand(kept.shape[0], 1, generator=generator)
                    pos = (kept.cumsum(-1) < u).sum(-1, keepdim=True).clamp(max=kept.shape[-1] - 1)
                    chosen = order.gather(-1, pos)
                else:
                    logits = logits.masked_fill(drop.scatter(1, order, drop), float("-inf"))
            if chosen is None:
                chosen = torch.multinomial(logits.softmax(-1), 1, generator=generator)
            idx = torch.cat([idx, chosen], 1)
        if mode == "train-after":
            model.train()
        elif mode == "restore":
            model.train(was_training)
        return idx

    return generate


def gen_numpy_loop(
    model, idx, max_new_tokens, temperature=1.0, top_k=None, generator=None, top_p=None
):
    """Right: the nucleus found row by row with a Python loop over sorted ids."""
    with torch.no_grad():
        for _ in range(max_new_tokens):
            logits = model(idx[:, -model.block_size :])[:, -1, :] / temperature
            if top_k is not None:
                kth = torch.topk(logits, min(top_k, logits.shape[-1])).values[:, [-1]]
                logits = logits.masked_fill(logits < kth, float("-inf"))
            probs = logits.softmax(-1)
            if top_p is not None:
                for b in range(probs.shape[0]):
                    row = probs[b].tolist()
                    ids = sorted(range(len(row)), key=lambda i: (-row[i], i))
                    total, keep = 0.0, []
                    for i in ids:
                        keep.append(i)
                        total += row[i]
                        if total >= top_p:
                            break
                    mask = torch.ones_like(probs[b], dtype=torch.bool)
                    mask[keep] = False
                    probs[b] = probs[b].masked_fill(mask, 0.0)
                probs = probs / probs.sum(-1, keepdim=True)
            idx = torch.cat([idx, torch.multinomial(probs, 1, generator=generator)], 1)
    return idx


# ================================================================ the entries

MUTANTS = [
    ("lr-warm-from-zero", "lr_at", lr_knobs(warm="from-zero"), "warmup-off-by-one", None),
    ("lr-warm-one-longer", "lr_at", lr_knobs(warm="one-longer"), "warmup-off-by-one", None),
    ("lr-cos-one-short", "lr_at", lr_knobs(span="one-short"), "cosine-not-reaching-min", None),
    ("lr-min-ignored", "lr_at", lr_knobs(low="zero"), "cosine-not-reaching-min", "ends at 0 instead of min_lr"),
    ("lr-not-clamped", "lr_at", lr_knobs(clamp=False), "cosine-not-clamped", "climbs back up"),
    ("lr-linear", "lr_at", lr_knobs(shape="linear"), "lr-linear-decay", "straight line"),
    ("lr-tensor", "lr_at", lr_tensor, "tensor-not-float", "returned a torch tensor"),
    ("lr-no-guard", "lr_at", lr_knobs(guard=False), "cosine-division-by-zero", "ZeroDivisionError"),
    ("opt-all-decay", "configure_optimizer", opt_all_decay, "decay-on-biases", None),
    ("opt-by-name", "configure_optimizer", opt_by_name, "decay-on-biases", None),
    ("opt-by-module", "configure_optimizer", opt_by_module, "decay-skips-embeddings", "embedding tables"),
    ("opt-modules-loop", "configure_optimizer", opt_modules_loop, "tied-parameter-twice", None),
    ("opt-no-dedup", "configure_optimizer", opt_no_dedup, "tied-parameter-twice", None),
    ("opt-betas-ignored", "configure_optimizer", opt_betas_ignored, "optimizer-betas-ignored", "betas"),
    ("opt-adam", "configure_optimizer", opt_adam, "adam-not-adamw", "torch.optim.AdamW"),
    ("opt-no-biases", "configure_optimizer", opt_no_biases, "param-in-no-group", "never be trained"),
    ("step-no-zero", "train_step", step_knobs(zero="never"), "no-zero-grad", None),
    ("step-zero-after", "train_step", step_knobs(zero="after"), "no-zero-grad", None),
    ("step-clip-after", "train_step", step_knobs(clip_at="after"), "clip-after-step", None),
    ("step-no-clip", "train_step", step_knobs(clip_at="never"), None, "unclipped gradient"),
    ("step-clip-each", "train_step", step_knobs(clip_kind="per-parameter"), "clip-per-parameter", None),
    ("step-clip-value", "train_step", step_knobs(clip_kind="value"), "clip-by-value", "clip the global norm"),
    ("step-rescale", "train_step", step_knobs(clip_kind="rescale"), None, "scales a gradient down"),
    ("step-none-clips", "train_step", step_knobs(clip_kind="none-clips"), None, "clip=None"),
    ("step-loss-after", "train_step", step_knobs(report="after"), "loss-after-update", None),
    ("step-no-train", "train_step", step_knobs(mode="as-given"), "eval-mode-training", None),
    ("step-eval", "train_step", step_knobs(mode="eval"), "eval-mode-training", None),
    ("step-tensor", "train_step", step_knobs(kind="tensor"), "tensor-not-float", "loss.item()"),
    ("step-own-opt", "train_step", step_own_optimizer, None, "optimizer passed in"),
    ("gen-top-p-boundary", "generate", gen_knobs(boundary="exclude"), "top-p-excludes-boundary", None),
    ("gen-top-p-untempered", "generate", gen_knobs(top_p_at="before"), "top-p-before-temperature", None),
    ("gen-top-p-no-renorm", "generate", gen_knobs(renorm=False), "top-p-no-renormalise", None),
    ("gen-top-p-ignored", "generate", gen_knobs(top_p_at="never"), "top-p-ignored", "whole distribution"),
    ("gen-top-p-ties", "generate", gen_knobs(ties="reversed"), "top-p-ties-unstable", "HIGHER id"),
    ("gen-top-k-no-temp", "generate", gen_knobs(tk_temp=False), None, "temperature were 1"),
    ("gen-train-after", "generate", gen_knobs(mode="train-after"), "generate-leaves-train-mode", None),
]  # fmt: skip

RIGHT = [
    ("lr-torch-schedulers", "lr_at", lr_by_torch_schedulers),
    ("lr-numpy", "lr_at", lr_numpy),
    ("opt-nanogpt", "configure_optimizer", opt_nanogpt),
    ("opt-one-group-each", "configure_optimizer", opt_one_group_each),
    ("step-manual", "train_step", step_manual),
    ("step-param-groups", "train_step", step_param_groups),
    ("gen-loop", "generate", gen_numpy_loop),
    ("gen-restores-mode", "generate", gen_knobs(mode="restore")),
    ("gen-knobs", "generate", gen_knobs()),
]


# ================================================================ older generates, given top_p


class _Nucleus(nn.Module):
    """A model whose last position's logits outside the top_p set are -inf (the set found after
    the temperature and top_k, as SPEC orders them): how `with_top_p` gives top_p to a generate
    written before it existed."""

    def __init__(self, model, temperature, top_k, top_p):
        super().__init__()
        self.model, self.block_size = model, model.block_size
        self.temperature, self.top_k, self.top_p = temperature, top_k, top_p

    def forward(self, idx):
        logits = self.model(idx)
        last = logits[:, -1, :] / self.temperature
        if self.top_k is not None:
            kth = torch.topk(last, min(self.top_k, last.shape[-1])).values[:, [-1]]
            last = last.masked_fill(last < kth, float("-inf"))
        probs, order = last.softmax(-1).sort(dim=-1, descending=True, stable=True)
        drop = probs.cumsum(-1) - probs >= self.top_p
        drop[:, 0] = False
        out = logits.clone()
        out[:, -1, :] = logits[:, -1, :].masked_fill(drop.scatter(1, order, drop), float("-inf"))
        return out


def with_top_p(fn):
    """A generate(model, idx, max_new_tokens, temperature, top_k, generator) given SPEC's
    top_p, for the catalogues' answers written before top_p: their own mistakes unchanged."""

    def generate(
        model, idx, max_new_tokens, temperature=1.0, top_k=None, generator=None, top_p=None
    ):
        if top_p is not None and top_p < 1.0:
            model = _Nucleus(model, temperature, top_k, top_p)
        return fn(model, idx, max_new_tokens, temperature, top_k, generator)

    generate.__name__ = generate.__qualname__ = fn.__name__
    generate.__doc__ = fn.__doc__
    return generate


# issue 40's mistakes in notebook 06's training pieces and generate (tests/catalogues/issue40_mutants.py)
from issue40_mutants import NOTEBOOK_06_RIGHT, NOTEBOOK_06_WRONG  # noqa: E402

MUTANTS += NOTEBOOK_06_WRONG
RIGHT += NOTEBOOK_06_RIGHT
