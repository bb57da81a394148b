"""Wrong answers that used to pass every check, and break a later cell, now lose marks.

Each gap (issue 10): the exception type the notebook catches, inputs the notebooks pass later
(slices that are not contiguous, one sequence without a batch axis, a float32 sum), sampling
under a seeded generator, and dropout in train and eval mode, placed on each sublayer's output.
For each, the wrong answer fails exactly the case that checks it, with a message in the
notebook's words, and honest alternatives (another way to write the right thing) keep full
marks. Everything runs through autograder.checks.run_in_process, the visible checks' own path,
which the hidden tests share.
"""

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch_gap_mutants import (
    Block,
    BlockAfterSum,
    BlockAlwaysDrops,
    BlockDropsTheInput,
    BlockKeepProbability,
    BlockNoDropout,
    BlockNotRescaled,
    BlockSeededInside,
    FFThreeAxes,
    GPTDropsInEval,
    TokenizerKeyError,
    loss_view,
    pe_float64,
)
from torch_probe_mutants import (
    BlockSequential,
    GPTTorchLayers,
    R,
    TokenizerDict,
    TokenizerIndex,
    generate_categorical,
    make_generate,
    make_gpt,
    show,
)
from training_mutants import with_top_p

from autograder.checks import VISIBLE_SEED, run_in_process
from autograder.course.n05_transformer_block import cases_block as block_probes
from autograder.course.n05_transformer_block import judges as block_judges
from autograder.course.probes import build_cases

pytestmark = pytest.mark.usefixtures("one_thread")


def run(name, obj, seed=VISIBLE_SEED):
    return run_in_process(name, obj, seed=seed)


def failed_only(results, case_words, *message_words):
    """Exactly one case fails, the one whose name contains case_words, with a message holding
    every one of message_words; it scores 0."""
    failed = [r for r in results if r.status == "failed"]
    assert [case_words in r.name for r in failed] == [True], show(results)
    (case,) = failed
    assert case.score == 0, show(failed)
    for words in message_words:
        assert words in case.output, show(failed)
    assert "SPEC" not in case.output and len(case.output) < 700, case.output
    return case


def full(results):
    failed = [r for r in results if r.status == "failed"]
    assert not failed, show(failed)


# ================================================================ the points stay the notebook's


def test_new_cases_are_paid_inside_each_function_total():
    """The notebooks' points per function did not change: the new cases were rebalanced in."""
    totals = {
        "sinusoidal_positional_encoding": 3.5,
        "FeedForward": 4.5,
        "TransformerBlock": 6.0,
        "CharTokenizer": 3.5,
        "GPT": 7.0,  # the order case (0.5) came out of causality (2.0 -> 1.5)
        "lm_loss": 3.0,
        "generate": 12.0,  # 8.0, then top_p (3.0), temperature with top_k and the mode (0.5 each)
    }
    for name, total in totals.items():
        stem = "05_transformer_block" if name[0] in "sFT" else "06_autoregressive_lm"
        cases = build_cases(stem, "points", functions={name})
        assert sum(c.points for c in cases) == pytest.approx(total), name
        assert any(c.judge.name.startswith(("block_judges.", "lm_judges.")) for c in cases), name


# ================================================================ CharTokenizer


class TokenizerSkipsUnknown(TokenizerDict):
    def encode(self, s):
        return [self.stoi.get(c, -1) for c in s]


class TokenizerNoChars(TokenizerIndex):
    def __init__(self, text):
        super().__init__(text)
        del self.chars


def test_tokenizer_raising_key_error_loses_the_value_error_case():
    failed_only(run("CharTokenizer", TokenizerKeyError), "ValueError", "raised KeyError")


def test_tokenizer_returning_something_for_an_unknown_character_fails_both_error_cases():
    failed = [r for r in run("CharTokenizer", TokenizerSkipsUnknown) if r.status == "failed"]
    assert len(failed) == 2 and all("unknown character" in r.name for r in failed), show(failed)
    assert any("raise a ValueError" in r.output for r in failed), show(failed)


def test_tokenizer_without_chars_loses_the_chars_case():
    failed_only(run("CharTokenizer", TokenizerNoChars), "chars", "self.chars")


@pytest.mark.parametrize("cls", [TokenizerDict, TokenizerIndex])  # chars a list / a str
def test_tokenizer_alternatives_keep_full_marks(cls):
    full(run("CharTokenizer", cls))


# ================================================================ lm_loss


def loss_reshape(logits, targets):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def loss_contiguous_view(logits, targets):
    B, T, V = logits.shape
    return F.cross_entropy(logits.contiguous().view(B * T, V), targets.contiguous().view(B * T))


def test_a_loss_that_views_fails_on_the_sliced_logits_only():
    failed_only(run("lm_loss", loss_view), "sliced", "logits[:, 2:]", ".reshape")


@pytest.mark.parametrize("fn", [loss_reshape, loss_contiguous_view, R.lm_loss])
def test_loss_alternatives_take_sliced_logits(fn):
    full(run("lm_loss", fn))


# ================================================================ generate


def _sample(model, idx, max_new_tokens, temperature, top_k, generator):
    for _ in range(max_new_tokens):
        logits = model(idx[:, -model.block_size :])[:, -1, :] / temperature
        if top_k is not None:
            kth = torch.topk(logits, top_k).values[:, [-1]]
            logits = logits.masked_fill(logits < kth, float("-inf"))
        nxt = torch.multinomial(logits.softmax(-1), 1, generator=generator)
        idx = torch.cat([idx, nxt], dim=1)
    return idx


@with_top_p
def generate_global_rng(model, idx, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    """Right distribution, but draws from torch's global random state."""
    return _sample(model, idx, max_new_tokens, temperature, top_k, None)


@with_top_p
def generate_own_seed(model, idx, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    """Reproducible, but never what the caller's generator asks for."""
    own = torch.Generator().manual_seed(0)
    return _sample(model, idx, max_new_tokens, temperature, top_k, own)


@with_top_p
def _seeded_inside(model, idx, max_new_tokens, temperature=1.0, top_k=None, generator=None):
    torch.manual_seed(1234)
    return _sample(model, idx, max_new_tokens, temperature, top_k, None)


@pytest.mark.parametrize("fn", [generate_global_rng, generate_categorical])
def test_sampling_that_ignores_the_generator_is_not_reproducible(fn):
    failed_only(run("generate", fn), "same seed", "seeded alike", "generator=generator")


def test_sampling_seeded_inside_generate_ignores_the_callers_seed():
    failed_only(run("generate", _seeded_inside), "same seed", "seeded differently")


@pytest.mark.parametrize(
    "fn", [R.generate, make_generate(sampler="gumbel"), make_generate(sampler="cdf")]
)
def test_sampling_alternatives_with_the_generator_keep_full_marks(fn):
    full(run("generate", fn))


def test_generate_own_seed_ignores_the_generator_too():
    """A generate that makes its own Generator(0) each call: the caller's seed changes nothing."""
    failed_only(run("generate", generate_own_seed), "same seed", "seeded differently")


# ================================================================ positional encoding, FeedForward


def test_a_float64_encoding_loses_the_float32_case_only():
    failed_only(run("sinusoidal_positional_encoding", pe_float64), "float32", "float64", ".float()")


def test_a_feed_forward_that_needs_a_batch_axis_fails_on_one_sequence():
    failed_only(run("FeedForward", FFThreeAxes), "one sequence", "ValueError", "leading axes")


# ================================================================ TransformerBlock: dropout


class BlockBernoulli(Block):
    """Its own mask: torch.bernoulli, scaled by 1 / (1 - p)."""

    def drop(self, t):
        p = self.dropout.p
        if not self.training or p == 0:
            return t
        return t * torch.bernoulli(torch.full_like(t, 1 - p)) / (1 - p)


class DroppingAttention(R.MultiHeadAttention):
    """Dropout on the attention weights too (as PyTorch's layer has): allowed extra dropout."""

    p = 0.0

    def forward(self, x, mask=None, context=None):
        context = x if context is None else context
        H = self.n_heads
        q, k, v = (
            proj(t).unflatten(-1, (H, -1)).transpose(-3, -2)
            for proj, t in ((self.q_proj, x), (self.k_proj, context), (self.v_proj, context))
        )
        scores = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        attn = scores.softmax(-1)
        z = F.dropout(attn, self.p, self.training) @ v
        return self.out_proj(z.transpose(-3, -2).flatten(-2)), attn


class DroppingFeedForward(R.FeedForward):
    p = 0.0

    def forward(self, x):
        return self.fc2(F.dropout(F.relu(self.fc1(x)), self.p, self.training))


class BlockExtraDropout(Block):
    """Dropout inside the feed-forward network and on the attention weights, besides the one
    on each sublayer's output: SPEC allows it, and the mean is kept."""

    def __init__(self, d_model, n_heads, d_ff, norm_first=True, dropout=0.0):
        super().__init__(d_model, n_heads, d_ff, norm_first, dropout)
        self.attn = DroppingAttention(d_model, n_heads)
        self.ff = DroppingFeedForward(d_model, d_ff)
        self.attn.p = self.ff.p = dropout


DROPOUT_MUTANTS = [
    (BlockAfterSum, "train mode", ["residual path", "after the residual sum"]),
    (BlockNoDropout, "train mode", ["dropout is not applied"]),
    (BlockAlwaysDrops, "eval mode", ["training=self.training"]),
    (BlockNotRescaled, "train mode", ["1 / (1 - p)", "kept are about 1 times"]),
    (BlockKeepProbability, "train mode", ["about 1 - p"]),
    (BlockDropsTheInput, "train mode", ["dropped (exactly 0)", "before it is added to x"]),
    (BlockSeededInside, "train mode", ["new random mask on every call"]),
]


@pytest.mark.parametrize(
    ("cls", "case", "words"), DROPOUT_MUTANTS, ids=[m[0].__name__ for m in DROPOUT_MUTANTS]
)
@pytest.mark.slow  # each grades a block or a GPT through every case
def test_dropout_mistakes_lose_the_dropout_case_with_their_message(cls, case, words):
    failed_only(run("TransformerBlock", cls), case, *words)


@pytest.mark.slow  # each grades a block or a GPT through every case
@pytest.mark.parametrize("cls", [Block, BlockSequential, BlockBernoulli, BlockExtraDropout])
def test_dropout_alternatives_keep_full_marks(cls):
    full(run("TransformerBlock", cls))


@pytest.mark.slow  # a sweep of secrets
def test_the_dropout_statistics_pass_the_reference_under_many_secrets():
    """The bounds in block_judges make a false failure of the right answer astronomically
    unlikely; here 12 secrets (12 draws of inputs and seeds) all pass, with extra dropout too."""
    for i in range(12):
        cls = R.TransformerBlock if i % 2 else BlockExtraDropout
        results = [
            r for r in run("TransformerBlock", cls, seed=f"secret-{i}") if "dropout" in r.name
        ]
        assert len(results) == 2
        full(results)


def test_the_dropout_bounds_are_far_from_the_mistakes_they_catch():
    """Hoeffding's bounds for the default case (see block_judges' docstring), computed here
    from the constants the probe and the judge use."""
    import math

    p, copies = block_probes.DROPOUT["p"], block_probes.DROPOUT["copies"]
    entries = copies * 5 * 16
    false_zero_fraction = 2 * math.exp(-2 * entries * block_judges.DROP_TOL**2)
    false_mean = 2 * math.exp(-2 * copies * block_judges.MEAN_TOL**2 * (1 - p) ** 2)
    assert false_zero_fraction < 1e-13 and false_mean < 1e-9
    assert abs((1 - p) - 1) > 2 * block_judges.MEAN_TOL  # no rescaling: T = 1 - p
    assert abs((1 - p) - p) > 10 * block_judges.DROP_TOL  # p read as the keep probability


# ================================================================ GPT: dropout


class GPTIgnoresDropout(make_gpt()):
    def __init__(self, vocab_size, block_size, *args, dropout=0.0, **kwargs):
        super().__init__(vocab_size, block_size, *args, dropout=0.0, **kwargs)


@pytest.mark.parametrize(
    ("cls", "words"),
    [(GPTIgnoresDropout, "dropout is not applied"), (GPTDropsInEval, "training=self.training")],
)
@pytest.mark.slow  # each grades a block or a GPT through every case
def test_gpt_dropout_mistakes_lose_the_dropout_case(cls, words, no_training):
    failed_only(run("GPT", cls), "dropout", words)


@pytest.mark.slow  # each grades a block or a GPT through every case
@pytest.mark.parametrize("cls", [R.GPT, make_gpt(), GPTTorchLayers])
def test_gpt_dropout_alternatives_keep_full_marks(cls, no_training):
    full(run("GPT", cls))


# ================================================================ GPT: positions


class GPTWithoutPositions(make_gpt()):
    """Token embeddings only: causal attention still trains, but cannot tell the order apart."""

    def __init__(self, vocab_size, block_size, *args, **kwargs):
        super().__init__(vocab_size, block_size, *args, **kwargs)
        del self.pos

    def forward(self, idx):
        T = idx.shape[1]
        if T > self.block_size:
            raise ValueError("too long")
        x = self.drop(self.tok(idx))
        mask = torch.ones(T, T, dtype=torch.bool).tril()
        for block in self.blocks:
            x = block(x, mask)
        return self.lm_head(self.ln(x))


class GPTZeroPositions(make_gpt()):
    """minGPT's way: a position table that starts at zero (a parameter, learnt in training)."""

    def __init__(self, vocab_size, block_size, *args, **kwargs):
        super().__init__(vocab_size, block_size, *args, **kwargs)
        del self.pos
        self.pos_table = nn.Parameter(torch.zeros(1, block_size, self.tok.embedding_dim))

    def forward(self, idx):
        T = idx.shape[1]
        if T > self.block_size:
            raise ValueError("too long")
        x = self.drop(self.tok(idx) + self.pos_table[:, :T])
        mask = torch.ones(T, T, dtype=torch.bool).tril()
        for block in self.blocks:
            x = block(x, mask)
        return self.lm_head(self.ln(x))


class GPTSinusoidal(GPTZeroPositions):
    """Fixed sine/cosine positions in a buffer (notebook 05's encoding), no learnt table."""

    def __init__(self, vocab_size, block_size, *args, **kwargs):
        super().__init__(vocab_size, block_size, *args, **kwargs)
        del self.pos_table
        self.register_buffer(
            "pos_table", R.sinusoidal_positional_encoding(block_size, self.tok.embedding_dim)[None]
        )


def test_gpt_without_positions_loses_the_order_case(no_training):
    results = run("GPT", GPTWithoutPositions)
    failed = [r for r in results if r.status == "failed"]
    assert {r.name.split(": ", 1)[1] for r in failed} == {
        "the order of the tokens matters (positions)",
        "the notebook's architecture: the same logits as its GPT with the same weights",
    }, show(results)
    assert all("position embedding" in r.output for r in failed), show(failed)


@pytest.mark.slow  # each grades a block or a GPT through every case
def test_gpt_with_fixed_sinusoidal_positions_loses_only_the_architecture_case(no_training):
    """Notebook 06 asks for learned positions (a table of block_size rows)."""
    failed_only(run("GPT", GPTSinusoidal), "architecture", "no position embedding")


@pytest.mark.slow  # each grades a block or a GPT through every case
def test_gpt_position_alternatives_keep_full_marks(no_training):
    full(run("GPT", GPTZeroPositions))


@pytest.mark.slow  # GPT over 12 secrets: minutes of CPU
def test_gpt_order_case_has_a_wide_margin_on_both_sides():
    """Over many secrets: the reference's logits move far above the bound, a GPT without
    positions stays far below it (float rounding only)."""
    moved = {R.GPT: [], GPTWithoutPositions: []}
    for secret in range(12):
        for cls, seen in moved.items():
            results = run("GPT", cls, seed=f"order-{secret}")
            (case,) = [r for r in results if "order of the tokens" in r.name]
            seen.append(case.status)
    assert set(moved[R.GPT]) == {"passed"} and set(moved[GPTWithoutPositions]) == {"failed"}
