"""benchmarks/train_lm.py --quick: the reference GPT and its PyTorch peer train for 50 steps on
the start of tiny Shakespeare, and the script ends with its JSON line. No timing is asserted (the
machine decides that): only that every number is there, finite, and that training learned
something, i.e. both held-out losses fell below ln(vocab), the loss of a uniform guess.
"""

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHAKESPEARE = REPO.parent / "shared" / "data" / "tinyshakespeare" / "input.txt"
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
