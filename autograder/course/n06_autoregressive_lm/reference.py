"""Notebook 06: an auto-regressive language model, trained on next-token prediction.

Cook labels from unlabeled text (every prefix predicts the token after it), stack notebook 05's
blocks under a causal mask so every position trains in parallel without peeking ahead, and
sample from the model one token at a time. Training is written from three pieces: a learning
rate for each step, an optimizer that decays only the matrices, and one clipped update.
"""

import math

import torch
import torch.nn.functional as F
from torch import nn

from autograder.course.n05_transformer_block.reference import LayerNorm, TransformerBlock


def make_examples(tokens, context_size):
    """(feature, label) pairs: every prefix, cut to its latest context_size tokens, and the next token."""
    return [(list(tokens[max(0, t - context_size) : t]), tokens[t]) for t in range(1, len(tokens))]


class CharTokenizer:
    """Characters as tokens: ids are the positions of the sorted distinct characters of `text`."""

    def __init__(self, text):
        self.chars = sorted(set(text))
        self.vocab_size = len(self.chars)
        self.stoi = {c: i for i, c in enumerate(self.chars)}

    def encode(self, s):
        unknown = sorted(set(s) - self.stoi.keys())
        if unknown:
            raise ValueError(f"characters not in the vocabulary: {unknown}")
        return [self.stoi[c] for c in s]

    def decode(self, ids):
        return "".join(self.chars[i] for i in ids)


def get_batch(data, batch_size, block_size, generator=None):
    """batch_size random windows of data (N,): x (B, T) and the targets y = x shifted by one."""
    starts = torch.randint(len(data) - block_size, (batch_size,), generator=generator)
    x = torch.stack([data[s : s + block_size] for s in starts])  # (B, T)
    y = torch.stack([data[s + 1 : s + 1 + block_size] for s in starts])  # (B, T)
    return x, y


class GPT(nn.Module):
    """Token and position embeddings, a stack of pre-norm causal blocks, a final norm, logits."""

    def __init__(
        self, vocab_size, block_size, d_model=128, n_heads=4, n_layers=4, d_ff=None, dropout=0.0
    ):
        super().__init__()
        self.block_size = block_size
        self.build_layers(vocab_size, block_size, d_model, n_heads, n_layers, d_ff, dropout)
        self.apply(self._init_weights)  # once every module exists

    def build_layers(self, vocab_size, block_size, d_model, n_heads, n_layers, d_ff, dropout):
        """Every module of the model: the embeddings, dropout, the blocks, the final norm, the head."""
        self.tok_emb = nn.Embedding(vocab_size, d_model)
        self.pos_emb = nn.Embedding(block_size, d_model)
        self.dropout = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(
            TransformerBlock(
                d_model, n_heads, d_ff or 4 * d_model, norm_first=True, dropout=dropout
            )
            for _ in range(n_layers)
        )
        self.ln_f = LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size, bias=False)

    @staticmethod
    def _init_weights(module):
        # Small weights (GPT-2's 0.02) keep the first logits near 0: the initial loss is ln(V).
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def forward(self, idx):
        """idx (B, T) token ids -> logits (B, T, vocab_size)."""
        T = idx.shape[-1]
        if T > self.block_size:
            raise ValueError(f"sequence of length {T} is longer than block_size {self.block_size}")
        positions = torch.arange(T, device=idx.device)
        x = self.dropout(self.tok_emb(idx) + self.pos_emb(positions))  # (B, T, d)
        mask = torch.ones(T, T, dtype=torch.bool, device=idx.device).tril()  # no peeking ahead
        for block in self.blocks:
            x = block(x, mask)
        return self.head(self.ln_f(x))  # (B, T, V)


def lm_loss(logits, targets):
    """Mean next-token cross-entropy of logits (B, T, V) against targets (B, T)."""
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten())


@torch.no_grad()
def generate(model, idx, max_new_tokens, temperature=1.0, top_k=None, top_p=None, generator=None):
    """Extend idx (B, T0) by max_new_tokens sampled tokens -> (B, T0 + max_new_tokens)."""
    was_training = model.training  # the mode generate found, put back at the end
    model.eval()  # no dropout while sampling
    for _ in range(max_new_tokens):
        logits = model(idx[:, -model.block_size :])[:, -1, :] / temperature  # (B, V)
        if top_k is not None:
            kth_largest = torch.topk(logits, min(top_k, logits.shape[-1])).values[:, [-1]]
            logits = logits.masked_fill(logits < kth_largest, float("-inf"))
        if top_p is not None and top_p < 1.0:
            # Most probable first; a stable sort keeps tied tokens in order of id.
            probs, order = logits.softmax(dim=-1).sort(dim=-1, descending=True, stable=True)
            mass_before = probs.cumsum(dim=-1) - probs  # what the more probable tokens hold
            drop = mass_before >= top_p  # the set already held top_p without this token
            drop[:, 0] = False  # the most probable token always stays
            logits = logits.masked_fill(drop.scatter(1, order, drop), float("-inf"))
        next_token = torch.multinomial(logits.softmax(dim=-1), 1, generator=generator)  # (B, 1)
        idx = torch.cat([idx, next_token], dim=1)
    model.train(was_training)
    return idx


def lr_at(step, max_lr, warmup_steps, total_steps, min_lr=0.0):
    """The learning rate of step `step` (from 0): a linear warm-up, then a half-cosine to min_lr."""
    if step < warmup_steps:
        return max_lr * (step + 1) / warmup_steps
    progress = (step - warmup_steps) / max(1, total_steps - 1 - warmup_steps)
    progress = min(max(progress, 0.0), 1.0)  # 0 right after the warm-up, 1 at the last step
    return min_lr + 0.5 * (max_lr - min_lr) * (1 + math.cos(math.pi * progress))


def configure_optimizer(model, lr, weight_decay, betas=(0.9, 0.95)):
    """AdamW whose weight decay pulls matrices and embeddings, never biases or norm gains."""
    parameters = list(model.parameters())  # a tied parameter comes once
    groups = [
        {"params": [p for p in parameters if p.dim() >= 2], "weight_decay": weight_decay},
        {"params": [p for p in parameters if p.dim() < 2], "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=lr, betas=betas)


def train_step(model, optimizer, x, y, clip=1.0):
    """One update on the batch (x, y): returns its loss, measured before the update."""
    model.train()
    optimizer.zero_grad()
    loss = lm_loss(model(x), y)
    loss.backward()
    if clip is not None:
        nn.utils.clip_grad_norm_(model.parameters(), clip)  # rescale so the global norm <= clip
    optimizer.step()
    return loss.item()
