"""Wrong answers to notebooks 05-06 that the visible checks once let through (dropout, the
tokenizer's errors, views of the loss). A data module, not a test file: tests/course/torch_shared/test_checks_gaps.py
grades them; test_judging_torch.py and torch_mutants.py reuse them."""

import torch
import torch.nn.functional as F
from torch import nn
from torch_probe_mutants import (
    R,
    TokenizerDict,
    make_ff,
    make_gpt,
)


class TokenizerKeyError(TokenizerDict):
    """The dictionary lookup's KeyError (it names the character): the demo cell crashes."""

    def encode(self, s):
        return [self.stoi[c] for c in s]


def loss_view(logits, targets):
    return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))


def pe_float64(n_positions, d_model, base=10000.0):
    return R.sinusoidal_positional_encoding(n_positions, d_model, base).double()


class FFThreeAxes(make_ff(style="module")):
    """Unpacks B, n, d = x.shape: fine on (B, n, d), an error on one sequence (n, d)."""

    def forward(self, x):
        B, n, d = x.shape
        return super().forward(x.reshape(B * n, d)).reshape(B, n, -1)


class Block(nn.Module):
    """SPEC's block with the dropout placed by `where` (a mistake) or the right place."""

    where = "sublayer"

    def __init__(self, d_model, n_heads, d_ff, norm_first=True, dropout=0.0):
        super().__init__()
        self.norm_first = norm_first
        self.attn = R.MultiHeadAttention(d_model, n_heads)
        self.ff = R.FeedForward(d_model, d_ff)
        self.ln1, self.ln2 = R.LayerNorm(d_model), R.LayerNorm(d_model)
        self.dropout = nn.Dropout(dropout)

    def drop(self, t):
        return self.dropout(t)

    def forward(self, x, mask=None):
        out, res = (
            (self.drop, lambda t: t) if self.where == "sublayer" else (lambda t: t, self.drop)
        )
        if self.norm_first:
            x = res(x + out(self.attn(self.ln1(x), mask)[0]))
            return res(x + out(self.ff(self.ln2(x))))
        x = self.ln1(res(x + out(self.attn(x, mask)[0])))
        return self.ln2(res(x + out(self.ff(x))))


class BlockAfterSum(Block):
    where = "residual"


class BlockNoDropout(Block):
    def drop(self, t):
        return t


class BlockAlwaysDrops(Block):
    """F.dropout without training=self.training: dropout also in eval mode."""

    def drop(self, t):
        return F.dropout(t, self.dropout.p)


class BlockNotRescaled(Block):
    def drop(self, t):
        return t * (torch.rand_like(t) >= self.dropout.p) if self.training else t


class BlockKeepProbability(Block):
    """nn.Dropout(1 - p): p read as the probability of keeping."""

    def drop(self, t):
        return F.dropout(t, 1 - self.dropout.p, self.training) if self.dropout.p else t


class BlockDropsTheInput(Block):
    """Dropout on x before the sublayer, pre-norm: x + attn(ln1(dropout(x)))."""

    def forward(self, x, mask=None):
        if not self.norm_first:
            return super().forward(x, mask)
        x = x + self.attn(self.ln1(self.dropout(x)), mask)[0]
        return x + self.ff(self.ln2(self.dropout(x)))


class BlockSeededInside(Block):
    def forward(self, x, mask=None):
        torch.manual_seed(0)
        return super().forward(x, mask)


class GPTDropsInEval(make_gpt()):
    """Embedding dropout with F.dropout's default training=True."""

    def __init__(self, vocab_size, block_size, *args, dropout=0.0, **kwargs):
        super().__init__(vocab_size, block_size, *args, dropout=dropout, **kwargs)
        self.p = dropout

    def forward(self, idx):
        T = idx.shape[1]
        if T > self.block_size:
            raise ValueError("too long")
        x = F.dropout(self.tok(idx) + self.pos(torch.arange(T)), self.p)
        mask = torch.ones(T, T, dtype=torch.bool).tril()
        for block in self.blocks:
            x = block(x, mask)
        return self.lm_head(self.ln(x))
