"""Mistakes in notebook 06's graded names whose cause the checks now name (issue 40, second
round): each written here from the cause, in a way of its own (not a student's code), for
tests/catalogues/test_names06_catalogue.py.

WRONG: (key, graded name, the answer, the id the visible check and the grader must name).
GPT_WRONG: the same for GPT (graded through every case, so run with the slow tests).
"""

import math

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from autograder.course.n06_autoregressive_lm import reference as R

# ================================================================ lr_at


def _warm(step, max_lr, warmup_steps):
    return max_lr * (step + 1) / warmup_steps


def lr_floored_fraction(step, max_lr, warmup_steps, total_steps, min_lr=0.0):
    """The warm-up's fraction rounded down with math.floor: 0 until the last warm-up step."""
    if step < warmup_steps:
        return max_lr * math.floor((step + 1) / warmup_steps)
    return R.lr_at(step, max_lr, warmup_steps, total_steps, min_lr)


def lr_unclipped_numpy(step, max_lr, warmup_steps, total_steps, min_lr=0.0):
    """Past the last step the cosine is left to turn back up."""
    if step < warmup_steps:
        return _warm(step, max_lr, warmup_steps)
    p = (step - warmup_steps) / max(1, total_steps - 1 - warmup_steps)
    return float(min_lr + (max_lr - min_lr) * (1 + np.cos(np.pi * p)) / 2)


def lr_progress_from_start(step, max_lr, warmup_steps, total_steps, min_lr=0.0):
    """The cosine's clock started at step 0, so it is already part-way down after the warm-up."""
    if step < warmup_steps:
        return _warm(step, max_lr, warmup_steps)
    p = min(1.0, step / max(1, total_steps - 1))
    return min_lr + (max_lr - min_lr) * (1 + math.cos(math.pi * p)) / 2


def lr_cos_squared(step, max_lr, warmup_steps, total_steps, min_lr=0.0):
    """cos(pi p) squared: a whole period of cos(2 pi p), back at max_lr at the last step."""
    if step < warmup_steps:
        return _warm(step, max_lr, warmup_steps)
    p = min(max((step - warmup_steps) / max(1, total_steps - 1 - warmup_steps), 0.0), 1.0)
    return min_lr + (max_lr - min_lr) * math.cos(math.pi * p) ** 2


def lr_interp_line(step, max_lr, warmup_steps, total_steps, min_lr=0.0):
    """A straight line from max_lr to min_lr (np.interp clips at both ends)."""
    if step < warmup_steps:
        return _warm(step, max_lr, warmup_steps)
    return float(np.interp(step, [warmup_steps, total_steps - 1], [max_lr, min_lr]))


def lr_span_unguarded(step, max_lr, warmup_steps, total_steps, min_lr=0.0):
    """The cosine's span divided by as it is, with no max(1, ...)."""
    if step < warmup_steps:
        return _warm(step, max_lr, warmup_steps)
    span = total_steps - warmup_steps - 1
    p = min(1.0, max(0.0, (step - warmup_steps) / span))
    return min_lr + 0.5 * (max_lr - min_lr) * (1 + math.cos(math.pi * p))


def lr_as_tensor(step, max_lr, warmup_steps, total_steps, min_lr=0.0):
    """The right rate, handed back as a float64 tensor."""
    return torch.as_tensor(R.lr_at(step, max_lr, warmup_steps, total_steps, min_lr))


# ================================================================ configure_optimizer


def _adamw(decay, other, lr, weight_decay, betas, **extra):
    return torch.optim.AdamW(
        [
            {"params": decay, "weight_decay": weight_decay},
            {"params": other, "weight_decay": 0.0},
        ],
        lr=lr,
        betas=betas,
        **extra,
    )


def opt_vectors_decay(model, lr, weight_decay, betas=(0.9, 0.95)):
    """The vectors (ndim 1) put in the decaying group, the rest in the other."""
    params = list(model.parameters())
    vectors = [p for p in params if p.ndim == 1]
    return _adamw(vectors, [p for p in params if p.ndim != 1], lr, weight_decay, betas)


def opt_tables_only(model, lr, weight_decay, betas=(0.9, 0.95)):
    """Only nn.Embedding tables decay: the linear layers' matrices do not."""
    tables = {id(m.weight) for m in model.modules() if isinstance(m, nn.Embedding)}
    params = list(model.parameters())
    decay = [p for p in params if id(p) in tables]
    return _adamw(decay, [p for p in params if id(p) not in tables], lr, weight_decay, betas)


def _by_dim(model):
    params = list(model.parameters())
    return [p for p in params if p.dim() >= 2], [p for p in params if p.dim() < 2]


def opt_fixed_betas(model, lr, weight_decay, betas=(0.9, 0.95)):
    """GPT-2's betas written in, whatever betas is."""
    return _adamw(*_by_dim(model), lr, weight_decay, (0.9, 0.95))


def opt_no_lr(model, lr, weight_decay, betas=(0.9, 0.95)):
    """Groups and betas right, lr never handed on."""
    decay, other = _by_dim(model)
    groups = [{"params": decay, "weight_decay": weight_decay}, {"params": other}]
    return torch.optim.AdamW(groups, betas=betas, weight_decay=0.0)


def opt_decay_times_lr(model, lr, weight_decay, betas=(0.9, 0.95)):
    """The decay scaled by the rate by hand (AdamW already does it)."""
    return _adamw(*_by_dim(model), lr, lr * weight_decay, betas)


def opt_weights_and_biases_by_name(model, lr, weight_decay, betas=(0.9, 0.95)):
    """Linear and Embedding weights decay, every `bias` does not: a norm's gain is in neither."""
    decay, other = [], []
    for module in model.modules():
        for name, p in module.named_parameters(recurse=False):
            if name == "bias":
                other.append(p)
            elif isinstance(module, nn.Linear | nn.Embedding) and all(p is not q for q in decay):
                decay.append(p)
    return _adamw(decay, other, lr, weight_decay, betas)


# ================================================================ train_step


def _loss(model, x, y):
    return R.lm_loss(model(x), y)


def step_detached(model, optimizer, x, y, clip=1.0):
    """Right, but the loss handed back as a (detached) tensor."""
    model.train()
    optimizer.zero_grad()
    loss = _loss(model, x, y)
    loss.backward()
    if clip is not None:
        nn.utils.clip_grad_norm_(model.parameters(), clip)
    optimizer.step()
    return loss.detach()


def step_model_zero_grad_late(model, optimizer, x, y, clip=1.0):
    """model.zero_grad() called after backward, just before the step."""
    model.train()
    loss = _loss(model, x, y)
    loss.backward()
    if clip is not None:
        nn.utils.clip_grad_norm_(model.parameters(), clip)
    model.zero_grad()
    optimizer.step()
    return loss.item()


def step_clip_one(model, optimizer, x, y, clip=1.0):
    """Clipped to max_norm=1.0 whenever clip is given."""
    model.train()
    optimizer.zero_grad()
    loss = _loss(model, x, y)
    loss.backward()
    if clip is not None:
        nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
    optimizer.step()
    return loss.item()


def step_clip_always(model, optimizer, x, y, clip=1.0):
    """clip_grad_norm_ called with whatever clip is, None included."""
    model.train()
    optimizer.zero_grad()
    loss = _loss(model, x, y)
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), max_norm=clip)
    optimizer.step()
    return loss.item()


def step_loss_module_3d(model, optimizer, x, y, clip=1.0):
    """nn.CrossEntropyLoss on the (B, T, V) logits and (B, T) targets as they come."""
    model.train()
    optimizer.zero_grad()
    loss = nn.CrossEntropyLoss()(model(x), y)
    loss.backward()
    if clip is not None:
        nn.utils.clip_grad_norm_(model.parameters(), clip)
    optimizer.step()
    return loss.item()


def step_gathered_sum(model, optimizer, x, y, clip=1.0):
    """The negative log-likelihood gathered by hand and summed over every position."""
    model.train()
    optimizer.zero_grad()
    logp = F.log_softmax(model(x), dim=-1)
    loss = -logp.gather(-1, y.unsqueeze(-1)).sum()
    loss.backward()
    if clip is not None:
        nn.utils.clip_grad_norm_(model.parameters(), clip)
    optimizer.step()
    return loss.item()


# ================================================================ generate


def gen06(pick="sample", position=-1, axis=-1):
    """The notebook's generate written with a loop of its own; one knob changed at a time."""

    @torch.no_grad()
    def generate(
        model, idx, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None
    ):
        was = model.training
        model.eval()
        for _ in range(max_new_tokens):
            out = model(idx[:, -model.block_size :])
            logits = out.select(1, position if position == 0 else out.shape[1] - 1) / temperature
            if top_k is not None:
                k = min(top_k, logits.shape[-1])
                logits = logits.masked_fill(logits < logits.topk(k).values[:, -1:], -math.inf)
            if top_p is not None and top_p < 1.0:
                probs, order = logits.softmax(-1).sort(dim=-1, descending=True, stable=True)
                drop = probs.cumsum(-1) - probs >= top_p
                drop[:, 0] = False
                logits = logits.masked_fill(drop.scatter(1, order, drop), -math.inf)
            e = torch.exp(logits - logits.max())
            probs = e / e.sum(dim=axis, keepdim=True)
            if pick == "top":
                nxt = probs.topk(1, dim=-1).indices
            else:
                nxt = torch.multinomial(probs, 1, generator=generator)
            idx = torch.cat([idx, nxt], dim=1)
        model.train(was)
        return idx

    return generate


# ================================================================ GPT


class _GPT(R.GPT):
    def embed(self, idx):
        T = idx.shape[-1]
        if T > self.block_size:
            raise ValueError(f"{T} tokens, block_size {self.block_size}")
        return self.tok_emb(idx) + self.pos_emb(torch.arange(T))

    def run(self, x, mask, final=True):
        for block in self.blocks:
            x = block(x, mask)
        return self.head(self.ln_f(x) if final else x)

    def forward(self, idx):
        T = idx.shape[-1]
        return self.run(self.dropout(self.embed(idx)), torch.ones(T, T).tril().bool())


class GPTMaskOfBlock(_GPT):
    """The causal mask made once for block_size tokens."""

    def forward(self, idx):
        mask = torch.tril(torch.ones(self.block_size, self.block_size, dtype=torch.bool))
        return self.run(self.dropout(self.embed(idx)), mask)


class GPTNoLnF(_GPT):
    """ln_f made, never applied."""

    def forward(self, idx):
        T = idx.shape[-1]
        return self.run(self.dropout(self.embed(idx)), torch.ones(T, T).tril().bool(), False)


class GPTPositionsByToken(_GPT):
    """The position table looked up with the token ids (wrapped into its rows)."""

    def embed(self, idx):
        if idx.shape[-1] > self.block_size:
            raise ValueError("too long")
        return self.tok_emb(idx) + self.pos_emb(torch.remainder(idx, self.block_size))


class GPTNoPositions(_GPT):
    """pos_emb made, never added."""

    def embed(self, idx):
        if idx.shape[-1] > self.block_size:
            raise ValueError("too long")
        return self.tok_emb(idx)


class GPTUnchecked(_GPT):
    """No length check: the position lookup fails past block_size instead."""

    def embed(self, idx):
        return self.tok_emb(idx) + self.pos_emb(torch.arange(idx.shape[-1]))


class GPTScaledSum(_GPT):
    """The embeddings' sum multiplied by sqrt(d_model), as the 2017 paper does."""

    def embed(self, idx):
        return super().embed(idx) * self.tok_emb.embedding_dim**0.5


class GPTWithLayers(R.GPT):
    """The notebook's GPT with its layers built another way (post-norm blocks, a head with a
    bias, or d_ff defaulting to d_model)."""

    post_norm = head_bias = narrow = False

    def build_layers(self, vocab_size, block_size, d_model, n_heads, n_layers, d_ff, dropout):
        super().build_layers(vocab_size, block_size, d_model, n_heads, n_layers, d_ff, dropout)
        width = d_ff or (d_model if self.narrow else 4 * d_model)
        self.blocks = nn.ModuleList(
            R.TransformerBlock(
                d_model, n_heads, width, norm_first=not self.post_norm, dropout=dropout
            )
            for _ in range(n_layers)
        )
        self.head = nn.Linear(d_model, vocab_size, bias=self.head_bias)


class GPTPostNorm(GPTWithLayers):
    post_norm = True


class GPTHeadBias(GPTWithLayers):
    head_bias = True


class GPTNarrowFeedForward(GPTWithLayers):
    narrow = True


WRONG = [
    ("lr-floor-fraction", "lr_at", lr_floored_fraction, "warmup-integer-division"),
    ("lr-unclipped-numpy", "lr_at", lr_unclipped_numpy, "cosine-not-clamped"),
    ("lr-progress-from-start", "lr_at", lr_progress_from_start, "cosine-from-step-zero"),
    ("lr-cos-squared", "lr_at", lr_cos_squared, "cosine-full-period"),
    ("lr-interp-line", "lr_at", lr_interp_line, "lr-linear-decay"),
    ("lr-span-unguarded", "lr_at", lr_span_unguarded, "cosine-division-by-zero"),
    ("lr-as-tensor", "lr_at", lr_as_tensor, "tensor-not-float"),
    ("opt-vectors-decay", "configure_optimizer", opt_vectors_decay, "decay-groups-swapped"),
    ("opt-tables-only", "configure_optimizer", opt_tables_only, "decay-skips-matrices"),
    ("opt-fixed-betas", "configure_optimizer", opt_fixed_betas, "optimizer-betas-ignored"),
    ("opt-no-lr", "configure_optimizer", opt_no_lr, "optimizer-lr-ignored"),
    ("opt-decay-times-lr", "configure_optimizer", opt_decay_times_lr, "weight-decay-times-lr"),
    ("opt-gain-in-no-group", "configure_optimizer", opt_weights_and_biases_by_name, "param-in-no-group"),
    ("step-detached", "train_step", step_detached, "tensor-not-float"),
    ("step-zero-grad-late", "train_step", step_model_zero_grad_late, "zero-grad-before-step"),
    ("step-clip-one", "train_step", step_clip_one, "clip-argument-ignored"),
    ("step-clip-always", "train_step", step_clip_always, "clip-none-not-skipped"),
    ("step-loss-module-3d", "train_step", step_loss_module_3d, "cross-entropy-unflattened"),
    ("step-gathered-sum", "train_step", step_gathered_sum, "loss-sum-reduction"),
    ("gen-topk-one", "generate", gen06(pick="top"), "generate-argmax"),
    ("gen-first-position", "generate", gen06(position=0), "generate-first-position"),
    ("gen-normalised-over-batch", "generate", gen06(axis=0), "generate-softmax-wrong-axis"),
]  # fmt: skip

GPT_WRONG = [
    ("gpt-mask-of-block", GPTMaskOfBlock, "gpt-fixed-length"),
    ("gpt-no-ln-f", GPTNoLnF, "gpt-final-norm-unused"),
    ("gpt-positions-by-token", GPTPositionsByToken, "gpt-positions-from-tokens"),
    ("gpt-no-positions", GPTNoPositions, "gpt-positions-unused"),
    ("gpt-unchecked", GPTUnchecked, "gpt-no-length-check"),
    ("gpt-scaled-sum", GPTScaledSum, "gpt-embeddings-scaled"),
    # ids given before, now said in the catalogue's words on the visible check as well
    ("gpt-post-norm-blocks", GPTPostNorm, "norm-order-swapped"),
    ("gpt-head-with-bias", GPTHeadBias, "gpt-head-bias"),
    ("gpt-narrow-feed-forward", GPTNarrowFeedForward, "gpt-d-ff-default"),
]

# right answers written another way, for the families above: the knobs at their right setting
RIGHT = [
    ("gen-own-loop", "generate", gen06()),
]
