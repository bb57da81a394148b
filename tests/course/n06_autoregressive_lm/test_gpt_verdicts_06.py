"""Issue 29 item 7: notebook 06's GPT judges catch, by behaviour, four mistakes that passed the
visible checks (dropout moved after the final norm, the initialisation run before the layers
exist; in tests/catalogues/training_mutants.py: temperature ignored whenever top_k is given, generate
leaving the model in train mode), and blame notebook 05 only on evidence: a float causal mask
and one block object repeated are the GPT's own faults, said as such. Each is checked by the
visible check and by the grader under two other seeds; GPT's training case is swapped for a
free one (conftest.cheap_training), as in test_torch_catalogue.py.
"""

import pytest
import torch
from fixtures import cheap_training
from torch import nn

from autograder.checks import VISIBLE_SEED, run_in_process
from autograder.course.n05_transformer_block.reference import LayerNorm, TransformerBlock
from autograder.course.n06_autoregressive_lm import cases_gpt as lm_probes
from autograder.course.n06_autoregressive_lm import reference as R
from autograder.course.probes import derive_seed

pytestmark = pytest.mark.usefixtures("one_thread")

SEEDS = [
    VISIBLE_SEED,
    derive_seed("ci-secret-one", "student-17", "06"),
    derive_seed("s", "t", "06"),
]


def _forward(model, idx, mask_dtype=torch.bool, after_norm=False):
    T = idx.shape[-1]
    if T > model.block_size:
        raise ValueError(f"sequence of length {T} is longer than block_size {model.block_size}")
    x = model.tok_emb(idx) + model.pos_emb(torch.arange(T))
    if not after_norm:
        x = model.dropout(x)
    mask = torch.ones(T, T, dtype=mask_dtype).tril()
    for block in model.blocks:
        x = block(x, mask)
    x = model.ln_f(x)
    return model.head(model.dropout(x) if after_norm else x)


class FloatMask(R.GPT):
    def forward(self, idx):
        return _forward(self, idx, mask_dtype=torch.float32)


class DropoutAfterNorm(R.GPT):
    def forward(self, idx):
        return _forward(self, idx, after_norm=True)


class OneBlockRepeated(R.GPT):
    def __init__(
        self, vocab_size, block_size, d_model=128, n_heads=4, n_layers=4, d_ff=None, dropout=0.0
    ):
        super().__init__(vocab_size, block_size, d_model, n_heads, n_layers, d_ff, dropout)
        block = TransformerBlock(d_model, n_heads, d_ff or 4 * d_model, dropout=dropout)
        self.blocks = nn.ModuleList([block] * n_layers)
        self.apply(self._init_weights)


class InitBeforeModules(nn.Module):
    def __init__(
        self, vocab_size, block_size, d_model=128, n_heads=4, n_layers=4, d_ff=None, dropout=0.0
    ):
        super().__init__()
        self.block_size = block_size
        self.apply(R.GPT._init_weights)  # reaches nothing: no layer exists yet
        self.tok_emb = nn.Embedding(vocab_size, d_model)
        self.pos_emb = nn.Embedding(block_size, d_model)
        self.dropout = nn.Dropout(dropout)
        self.blocks = nn.ModuleList(
            TransformerBlock(d_model, n_heads, d_ff or 4 * d_model, dropout=dropout)
            for _ in range(n_layers)
        )
        self.ln_f = LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size, bias=False)

    def forward(self, idx):
        return _forward(self, idx)


CASES = [
    ("float-mask", FloatMask, "mask-not-boolean", "expects a boolean mask"),
    ("dropout-after-norm", DropoutAfterNorm, "dropout-after-final-norm", None),
    ("one-block-repeated", OneBlockRepeated, None, "block object(s) repeated"),
    ("init-before-modules", InitBeforeModules, "init-before-modules", None),
]


def _run(cls, seed):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(lm_probes, "_train_case", cheap_training)
        return run_in_process("GPT", cls, seed=seed)


@pytest.mark.slow  # GPTs graded through every case
@pytest.mark.parametrize("key,cls,expected,phrase", CASES, ids=[c[0] for c in CASES])
def test_caught_named_and_notebook_05_not_blamed(key, cls, expected, phrase):
    for seed in SEEDS:
        results = _run(cls, seed)
        failed = [r for r in results if r.status == "failed"]
        assert failed, f"{key} passes under {seed}"
        ids = {m for r in results for m in r.misconceptions}
        assert ids == ({expected} if expected else set()), (key, seed, ids)
        if phrase:
            assert any(phrase in r.output for r in failed), [r.output for r in failed]
        for r in failed:  # never "fix it there" when notebook 05 is right
            assert "fix it there" not in r.output, r.output


@pytest.mark.slow  # GPTs graded through every case
def test_the_reference_gpt_passes_every_case_but_training():
    for seed in SEEDS:
        results = _run(R.GPT, seed)
        assert all(r.status == "passed" for r in results), [
            r.output for r in results if r.status == "failed"
        ]
