"""Where the reference GPT's training step loses to nanoGPT's: the same model with its attention
written in other forms, every form and nanoGPT side by side in one process, one thread.

    taskset -c 1 python benchmarks/attention_forms.py --nanogpt PATH [--rounds 8]

Each form replaces only the reference MultiHeadAttention's forward for self-attention, and
computes the same values (tests/benchmarks/test_benchmarks.py checks each against the reference):

  explicit   the reference: q k^T / sqrt(d_k), the mask added as -inf, softmax, weights @ v
  fused_qkv  the same, the three projections as one matrix product (their weights concatenated)
  baddbmm    the same, with the scale and an additive mask folded into one baddbmm
  sdpa       torch's fused scaled_dot_product_attention (is_causal): no weights to return

nanoGPT's CPU recipe shape (4 layers of width 128, 4 heads, batch 12 of 64 tokens, AdamW fused,
gradients clipped): every form takes `steps` training steps on the same batches, the forms
interleaved, for `rounds` rounds; the figure of each is its median over the rounds, its ratio
that median over nanoGPT's (< 1: faster). The last line printed is one JSON object:
{"ms_per_step": {form: ms}, "ratio": {form: ratio}, "rounds", "steps", "machine", ...}.
"""

import argparse
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parent))
import train_lm  # noqa: E402  (the same batches, optimizer, step and machine facts)

from autograder.course.model_answers import GPT  # noqa: E402
from autograder.course.n05_transformer_block.reference import MultiHeadAttention  # noqa: E402

EXPLICIT = MultiHeadAttention.forward


def _split(t, H):
    return t.unflatten(-1, (H, -1)).transpose(-3, -2)  # (B, n, H*d_k) -> (B, H, n, d_k)


def fused_qkv(self, x, mask=None, context=None):
    if context is not None:
        return EXPLICIT(self, x, mask, context)
    H = self.n_heads
    projections = (self.q_proj, self.k_proj, self.v_proj)
    weight = torch.cat([p.weight for p in projections])
    bias = torch.cat([p.bias for p in projections]) if self.q_proj.bias is not None else None
    q, k, v = F.linear(x, weight, bias).unflatten(-1, (3, H, -1)).permute(2, 0, 3, 1, 4)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores + torch.where(mask, 0.0, float("-inf"))
    attn = scores.softmax(dim=-1)
    return self.out_proj((attn @ v).transpose(-3, -2).flatten(-2)), attn


def baddbmm(self, x, mask=None, context=None):
    if context is not None:
        return EXPLICIT(self, x, mask, context)
    H = self.n_heads
    B, n, d = x.shape
    q, k, v = (
        _split(p(x), H).reshape(B * H, n, -1) for p in (self.q_proj, self.k_proj, self.v_proj)
    )
    scale = 1 / math.sqrt(q.shape[-1])
    if mask is None:
        scores = torch.bmm(q, k.transpose(1, 2)) * scale
    else:
        additive = torch.zeros(mask.shape[-2:]).masked_fill_(
            ~mask.reshape(mask.shape[-2:]), -math.inf
        )
        scores = torch.baddbmm(additive, q, k.transpose(1, 2), alpha=scale)
    attn = scores.softmax(dim=-1)
    z = torch.bmm(attn, v).view(B, H, n, -1).transpose(1, 2).reshape(B, n, d)
    return self.out_proj(z), attn.view(B, H, n, n)


def sdpa(self, x, mask=None, context=None):
    if context is not None:
        return EXPLICIT(self, x, mask, context)
    H = self.n_heads
    q, k, v = (_split(p(x), H) for p in (self.q_proj, self.k_proj, self.v_proj))
    z = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    return self.out_proj(z.transpose(-3, -2).flatten(-2)), None


FORMS = {"explicit": EXPLICIT, "fused_qkv": fused_qkv, "baddbmm": baddbmm, "sdpa": sdpa}


def race(nanogpt, rounds, steps, seed=0):
    cfg = dict(train_lm.NANOGPT_CPU)
    vocab, shape = 65, dict(block_size=64, d_model=128, n_heads=4)
    g = torch.Generator().manual_seed(seed)
    data = torch.randint(vocab, (50_000,), generator=g)
    batches = [train_lm.batch(data, 12, 64, g) for _ in range(steps)]
    contenders = {}
    for name in FORMS:
        torch.manual_seed(seed)
        contenders[name] = (GPT(vocab, n_layers=4, **shape), train_lm.ours_loss)
    if nanogpt is not None:
        torch.manual_seed(seed)
        module = train_lm.load_nanogpt(nanogpt)
        model = train_lm.nanogpt_model(module, vocab, n_layers=4, **shape)
        contenders["nanogpt"] = (model, train_lm.nanogpt_loss)
    optimizers = {name: train_lm.adamw(m, cfg) for name, (m, _) in contenders.items()}

    def steps_of(name):
        model, loss_of = contenders[name]
        MultiHeadAttention.forward = FORMS.get(name, EXPLICIT)
        try:
            started = time.perf_counter()
            for x, y in batches:
                train_lm.step(model, optimizers[name], x, y, cfg["lr"], cfg["grad_clip"], loss_of)
            return 1000 * (time.perf_counter() - started) / len(batches)
        finally:
            MultiHeadAttention.forward = EXPLICIT

    for name in contenders:  # warm-up: first calls allocate and pick kernels
        steps_of(name)
    times = {name: [] for name in contenders}
    for r in range(rounds):
        order = list(contenders) if r % 2 == 0 else list(contenders)[::-1]
        for name in order:
            times[name].append(steps_of(name))
    medians = {name: statistics.median(t) for name, t in times.items()}
    base = medians.get("nanogpt", medians["explicit"])
    return {
        "ms_per_step": {name: round(m, 3) for name, m in medians.items()},
        "ratio": {name: round(m / base, 3) for name, m in medians.items()},
        "against": "nanogpt" if nanogpt is not None else "explicit",
        "rounds": rounds,
        "steps": steps,
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nanogpt", metavar="PATH", default=None, help="a nanoGPT checkout")
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--steps", type=int, default=20, help="training steps per round and form")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    load_before = os.getloadavg()
    result = race(args.nanogpt, args.rounds, args.steps)
    for name, ms in result["ms_per_step"].items():
        print(
            f"{name:10s} {ms:8.2f} ms a step   ratio {result['ratio'][name]:.3f}", file=sys.stderr
        )
    result.update(train_lm.measured_on(load_before))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
