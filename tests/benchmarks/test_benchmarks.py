"""benchmarks/train_lm.py --quick: the reference GPT and its PyTorch peer train for 50 steps on
the start of tiny Shakespeare, and the script ends with its JSON line. No timing is asserted (the
machine decides that): only that every number is there, finite, and that training learned
something, i.e. both held-out losses fell below ln(vocab), the loss of a uniform guess.
"""

import importlib.util
import itertools
import json
import math
import os
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHAKESPEARE = REPO.parent / "shared" / "data" / "tinyshakespeare" / "input.txt"
CPUINFO = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").is_file() else ""
KEYS = {"steps", "seconds", "ms_per_step", "val_loss", "peer_ms_per_step", "ratio"}


@pytest.mark.slow
def test_quick_lm_benchmark_trains_both_models_and_ends_with_its_json_line(tmp_path):
    assert SHAKESPEARE.is_file(), f"tiny Shakespeare is missing: expected it at {SHAKESPEARE}"
    excerpt = tmp_path / "shakespeare_excerpt.txt"
    excerpt.write_text(SHAKESPEARE.read_text(encoding="utf-8")[:100_000], encoding="utf-8")

    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "train_lm.py"), "--data", str(excerpt)]
        + ["--quick", "--threads", "1"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])

    assert KEYS <= set(result), f"missing keys: {sorted(KEYS - set(result))}"
    assert result["steps"] == 50
    for key in ("seconds", "ms_per_step", "peer_ms_per_step", "ratio"):
        assert math.isfinite(result[key]) and result[key] > 0, (key, result[key])
    assert result["ms_per_step"] == pytest.approx(1000 * result["seconds"] / 50, rel=0.01)

    ln_vocab = math.log(len(set(excerpt.read_text(encoding="utf-8"))))
    for key in ("val_loss", "peer_val_loss"):
        assert math.isfinite(result[key]), (key, result[key])
        assert result[key] < ln_vocab - 0.5, (
            f"{key} {result[key]:.3f} after 50 steps: barely below a uniform guess ({ln_vocab:.3f})"
        )


FAKE_NANOGPT = """
from dataclasses import dataclass

import torch.nn.functional as F
from torch import nn


@dataclass
class GPTConfig:
    block_size: int = 1024
    vocab_size: int = 50304
    n_layer: int = 12
    n_head: int = 12
    n_embd: int = 768
    dropout: float = 0.0
    bias: bool = True


class GPT(nn.Module):  # nanoGPT's interface: forward(idx, targets) -> (logits, loss)
    def __init__(self, config):
        super().__init__()
        print("number of parameters: a stand-in")
        self.emb = nn.Embedding(config.vocab_size, config.n_embd)
        self.head = nn.Linear(config.n_embd, config.vocab_size, bias=config.bias)

    def forward(self, idx, targets=None):
        logits = self.head(self.emb(idx))
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten()) if targets is not None else None
        return logits, loss
"""


@pytest.mark.slow
def test_the_nanogpt_mode_races_the_checkouts_model_py_and_ends_with_the_ratio(tmp_path):
    checkout = tmp_path / "nanoGPT"
    checkout.mkdir()
    (checkout / "model.py").write_text(FAKE_NANOGPT)  # a stand-in: no network in tests
    excerpt = tmp_path / "shakespeare_excerpt.txt"
    excerpt.write_text(SHAKESPEARE.read_text(encoding="utf-8")[:20_000], encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "train_lm.py"), "--data", str(excerpt)]
        + ["--nanogpt", str(checkout), "--threads", "1", "--steps", "40", "--warmup", "2"]
        + ["--eval-iters", "2", "--n-layer", "1", "--d-model", "32", "--lr", "0.05", "--runs", "3"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    result = json.loads(lines[-1])
    assert result["peer"] == "nanoGPT model.py (bias=False)"
    assert "number of parameters" not in done.stdout  # the peer's chatter goes to stderr
    for key in ("ms_per_step", "peer_ms_per_step", "cpu_ms_per_step", "peer_cpu_ms_per_step"):
        assert math.isfinite(result[key]) and result[key] > 0, (key, result[key])
    assert result["n_runs"] == 3 and len(result["runs"]) == 3
    for run in result["runs"]:
        assert run["cpu_ratio"] == pytest.approx(
            run["cpu_ms_per_step"] / run["peer_cpu_ms_per_step"], rel=0.01
        )
        assert run["ratio"] == pytest.approx(run["ms_per_step"] / run["peer_ms_per_step"], rel=0.01)
    for key in ("ratio", "median_ratio", "cpu_ratio", "ms_per_step"):  # the runs' medians
        assert result[key] == pytest.approx(statistics.median(r[key] for r in result["runs"]))
    # the machine it ran on, read here from /proc/cpuinfo on its own
    assert result["cores"] == os.cpu_count()
    flags = [line for line in CPUINFO.splitlines() if line.startswith(("flags", "Features"))]
    if flags:
        assert result["cpu_flags"] == flags[0].split(":", 1)[1].split()
    assert set(result["load_average"]) == {"before", "after"}
    # the stand-in (a bigram model) learned from the same batches: its loss is below uniform
    assert result["peer_val_loss"] < result["ln_vocab"]


@pytest.mark.slow  # starts the training benchmark
def test_the_nanogpt_mode_refuses_a_folder_without_model_py(tmp_path):
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "train_lm.py"), "--data", str(SHAKESPEARE)]
        + ["--nanogpt", str(tmp_path), "--steps", "1"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode != 0 and "no model.py" in done.stderr


def load_benchmark():
    spec = importlib.util.spec_from_file_location("train_lm", REPO / "benchmarks" / "train_lm.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(("steps", "longest"), [(7, 7), (3, 7), (2000, 4500), (1, 5)])
def test_a_shorter_run_takes_its_steps_evenly_spread_over_the_longer_one(steps, longest):
    """--recipe best: nanoGPT's 2,000 steps interleaved among our 4,500, so both share the load."""
    due = load_benchmark().spread(steps, longest)
    assert len(due) == steps and len(set(due)) == steps  # every step taken, once
    assert due[0] == 0 and due[-1] < longest
    gaps = [b - a for a, b in itertools.pairwise(due)]
    assert all(longest // steps <= gap <= -(-longest // steps) for gap in gaps), gaps


def load_attention_forms():
    spec = importlib.util.spec_from_file_location(
        "attention_forms", REPO / "benchmarks" / "attention_forms.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow  # runs each attention form the benchmark times
@pytest.mark.parametrize("form", ["fused_qkv", "baddbmm", "sdpa"])
def test_each_attention_form_the_benchmark_times_computes_what_the_reference_does(form):
    """benchmarks/attention_forms.py times other ways to write the reference's self-attention; a
    form that computed something else would make its time meaningless. The reference's own
    explicit forward is the oracle: the output, the weights (where a form returns them) and
    every parameter's gradient agree, under a causal mask and without a mask."""
    import torch

    from autograder.course.n05_transformer_block.reference import MultiHeadAttention

    forms = load_attention_forms()
    torch.manual_seed(0)
    module = MultiHeadAttention(32, 4)
    x = torch.randn(3, 7, 32)
    causal = torch.ones(7, 7, dtype=torch.bool).tril()
    for mask in (causal, None):
        results = []
        for forward in (forms.EXPLICIT, forms.FORMS[form]):
            module.zero_grad()
            y, attn = forward(module, x, mask)
            (y * torch.linspace(-1, 1, y.numel()).view_as(y)).sum().backward()
            grads = {n: p.grad.clone() for n, p in module.named_parameters()}
            results.append((y.detach(), attn, grads))
        (y0, a0, g0), (y1, a1, g1) = results
        torch.testing.assert_close(y1, y0, rtol=1e-5, atol=1e-6)
        if a1 is not None:
            torch.testing.assert_close(a1, a0, rtol=1e-5, atol=1e-6)
        for name in g0:
            torch.testing.assert_close(g1[name], g0[name], rtol=1e-4, atol=1e-6)


@pytest.mark.slow  # runs a benchmark
def test_the_attention_forms_race_ends_with_every_forms_ratio(tmp_path):
    checkout = tmp_path / "nanoGPT"
    checkout.mkdir()
    (checkout / "model.py").write_text(FAKE_NANOGPT)
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "attention_forms.py")]
        + ["--nanogpt", str(checkout), "--rounds", "2", "--steps", "2"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["against"] == "nanogpt"
    forms = {"explicit", "fused_qkv", "baddbmm", "sdpa", "nanogpt"}
    assert set(result["ms_per_step"]) == forms == set(result["ratio"])
    for name in forms:
        ms = result["ms_per_step"][name]
        assert math.isfinite(ms) and ms > 0
        expected = ms / result["ms_per_step"]["nanogpt"]
        assert result["ratio"][name] == pytest.approx(expected, rel=0.01)
    assert result["ratio"]["nanogpt"] == 1.0
    assert result["cores"] == os.cpu_count()
