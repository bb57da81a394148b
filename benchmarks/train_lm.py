"""Train the reference GPT on a character corpus with nanoGPT's CPU recipe, next to a PyTorch peer.

    python benchmarks/train_lm.py --data ../shared/data/tinyshakespeare/input.txt
    python benchmarks/train_lm.py --data input.txt --recipe best     # our tuned settings
    python benchmarks/train_lm.py --data input.txt --quick           # 50-step smoke test

The defaults are nanoGPT's shakespeare_char line for CPUs (block 64, batch 12, 4 layers of 4
heads, width 128, 2000 steps, no dropout; AdamW lr 1e-3, betas (0.9, 0.99), weight decay 0.1 on
matrices only, 100 warm-up steps then cosine decay to 1e-4, gradients clipped at 1.0), its
90/10 train/val split and its loss estimate (the mean over eval_iters random val batches).

The peer has the same shape but is built from torch.nn.TransformerEncoderLayer, whose
attention runs PyTorch's fused scaled_dot_product_attention. Both models take their steps in
lockstep on the same batches, so a busy machine slows both alike and the ratio stays fair.
With --nanogpt PATH the peer is nanoGPT itself: its own model.py, imported from the checkout
at PATH (nothing of it is copied here), built with its CPU recipe's GPTConfig (bias=False as in
its train.py; --nanogpt-bias for GPT-2's biases, like ours) and trained on the same batches,
with the same optimizer settings and learning-rate schedule, in lockstep with ours:

    git clone https://github.com/karpathy/nanoGPT /tmp/nanogpt
    taskset -c 1 python benchmarks/train_lm.py --data input.txt --nanogpt /tmp/nanogpt \
        --threads 1 --runs 3
    taskset -c 1 python benchmarks/train_lm.py --data input.txt --nanogpt /tmp/nanogpt \
        --threads 1 --recipe best

--runs N repeats the race N times; every figure in the JSON is then the median over the runs,
each run's own figures listed under "runs". --recipe best trains ours with BEST while the peer
trains with nanoGPT's recipe, the peer's steps spread evenly among ours, so both share the
machine alike and "time_ratio" (ours' total seconds / the peer's) says whether our recipe's
loss came within the peer's training time.

Every step is timed in wall seconds and in this process's CPU seconds (time.process_time: with
one thread it is the step's own work, whatever else the machine runs).
The last line printed is one JSON object:
{"steps", "seconds", "ms_per_step", "val_loss", "peer", "peer_steps", "peer_seconds",
 "peer_ms_per_step", "peer_val_loss", "ratio", "median_ratio", "cpu_ratio", "time_ratio", ...,
 "runs", "n_runs", "machine", "cores", "threads", "cpus_allowed", "cpu_flags",
 "load_average": {"before", "after"}}; every ratio is ours / peer (< 1: ours is faster).
Both models use AdamW with fused=True (see adamw).
"""

import argparse
import contextlib
import importlib.util
import json
import math
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import torch
from torch import nn

from autograder.course.model_answers import GPT, CharTokenizer, lm_loss

NANOGPT_CPU = dict(
    steps=2000,
    block_size=64,
    batch_size=12,
    n_layer=4,
    n_head=4,
    d_model=128,
    lr=1e-3,
    min_lr=1e-4,
    warmup=100,
    weight_decay=0.1,
    beta2=0.99,
    grad_clip=1.0,
    eval_iters=20,
)
# Tuned on 2 CPU cores (one thread) to fit in the wall time of NANOGPT_CPU's 2000 steps. On a
# CPU the cost of a token is proportional to the model's size, so that budget buys 1.5 M
# characters for the 0.8 M-parameter model: far fewer than the ~20 tokens per parameter of
# compute-optimal training (Chinchilla). A model half as wide and one layer shallower (0.15 M
# parameters) costs about 0.35x per step, so it sees about 2.5x more text in the same time, and
# it tolerates a 10x higher learning rate. Measured one thread on an Intel Xeon (--no-peer,
# held-out loss at the same time budget): 4 layers of width 64, 4000 steps: 1.723; width 48,
# 5000 steps: 1.711; 3 layers of width 64, 5200 steps: 1.674.
BEST = dict(steps=5000, d_model=64, n_layer=3, lr=1e-2, min_lr=1e-4, warmup=200)


class PeerGPT(nn.Module):
    """The reference GPT's shape, its blocks being torch.nn.TransformerEncoderLayer."""

    def __init__(self, vocab_size, block_size, d_model, n_heads, n_layers):
        super().__init__()
        self.block_size = block_size
        self.tok_emb = nn.Embedding(vocab_size, d_model)
        self.pos_emb = nn.Embedding(block_size, d_model)
        self.blocks = nn.ModuleList(
            nn.TransformerEncoderLayer(
                d_model,
                n_heads,
                4 * d_model,
                dropout=0.0,
                activation="relu",  # our FeedForward's default
                batch_first=True,
                norm_first=True,
            )
            for _ in range(n_layers)
        )
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size, bias=False)
        for name, p in self.named_parameters():
            if p.dim() == 2:  # the reference's init: N(0, 0.02) matrices, zero biases
                nn.init.normal_(p, mean=0.0, std=0.02)
            elif "norm" not in name and "ln_f" not in name:
                nn.init.zeros_(p)

    def forward(self, idx):
        T = idx.shape[-1]
        x = self.tok_emb(idx) + self.pos_emb(torch.arange(T, device=idx.device))
        mask = nn.Transformer.generate_square_subsequent_mask(T, device=idx.device)
        for block in self.blocks:
            x = block(x, src_mask=mask, is_causal=True)  # fused causal attention
        return self.head(self.ln_f(x))


def load_nanogpt(checkout):
    """nanoGPT's model.py, imported from the user's checkout."""
    path = Path(checkout) / "model.py"
    if not path.is_file():
        raise SystemExit(f"--nanogpt: no model.py in {checkout} (point it at a nanoGPT checkout)")
    spec = importlib.util.spec_from_file_location("nanogpt_model", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def nanogpt_model(module, vocab_size, block_size, d_model, n_heads, n_layers, bias=False):
    config = module.GPTConfig(
        block_size=block_size,
        vocab_size=vocab_size,
        n_layer=n_layers,
        n_head=n_heads,
        n_embd=d_model,
        dropout=0.0,
        bias=bias,
    )
    with contextlib.redirect_stdout(sys.stderr):  # it prints its parameter count
        return module.GPT(config)


def ours_loss(model, x, y):
    return lm_loss(model(x), y)


def nanogpt_loss(model, x, y):
    return model(x, y)[1]  # nanoGPT's forward returns (logits, loss) when given targets


def load_splits(path, max_chars=None):
    """nanoGPT's prepare.py: the sorted characters as vocabulary, the first 90 % to train."""
    text = Path(path).read_text(encoding="utf-8")
    if max_chars:
        text = text[:max_chars]
    tokenizer = CharTokenizer(text)
    data = torch.tensor(tokenizer.encode(text), dtype=torch.long)
    n = int(0.9 * len(data))
    return tokenizer, data[:n], data[n:]


def batch(data, batch_size, block_size, generator):
    starts = torch.randint(len(data) - block_size, (batch_size,), generator=generator)
    x = torch.stack([data[s : s + block_size] for s in starts])
    y = torch.stack([data[s + 1 : s + 1 + block_size] for s in starts])
    return x, y


def learning_rate(step, cfg):
    """nanoGPT's schedule: linear warm-up, then cosine decay from lr to min_lr."""
    if step < cfg["warmup"]:
        return cfg["lr"] * (step + 1) / (cfg["warmup"] + 1)
    progress = min(1.0, (step - cfg["warmup"]) / max(1, cfg["steps"] - cfg["warmup"]))
    return cfg["min_lr"] + 0.5 * (1.0 + math.cos(math.pi * progress)) * (cfg["lr"] - cfg["min_lr"])


def adamw(model, cfg):
    """nanoGPT's configure_optimizers: weight decay on matrices and embeddings only.

    fused=True for every model (nanoGPT asks for it on CUDA only): one kernel updates all the
    parameters instead of a Python loop over them, which costs per tensor and so penalised
    models with more (smaller) parameter tensors, such as ours with its biases.
    """
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [
        {"params": [p for p in params if p.dim() >= 2], "weight_decay": cfg["weight_decay"]},
        {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=cfg["lr"], betas=(0.9, cfg["beta2"]), fused=True)


@torch.no_grad()
def estimate_loss(model, data, cfg, seed, loss_of=ours_loss):
    """The mean loss over eval_iters random batches (the same batches for every model)."""
    model.eval()
    g = torch.Generator().manual_seed(seed)
    losses = [
        loss_of(model, x, y).item()
        for x, y in (
            batch(data, cfg["batch_size"], cfg["block_size"], g) for _ in range(cfg["eval_iters"])
        )
    ]
    model.train()
    return sum(losses) / len(losses)


def step(model, optimizer, x, y, lr, grad_clip, loss_of=ours_loss):
    """One training step: (wall seconds, CPU seconds, loss)."""
    for group in optimizer.param_groups:
        group["lr"] = lr
    started, cpu = time.perf_counter(), time.process_time()
    loss = loss_of(model, x, y)
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    if grad_clip:
        nn.utils.clip_grad_norm_(model.parameters(), grad_clip)
    optimizer.step()
    return time.perf_counter() - started, time.process_time() - cpu, loss.item()


def run(
    cfg,
    data_path,
    seed=1337,
    max_chars=None,
    peer=True,
    log_every=100,
    nanogpt=None,
    nanogpt_bias=False,
    peer_cfg=None,
):
    """Train ours with cfg and the peer with peer_cfg (default: cfg), their steps interleaved.

    With equal step counts this is lockstep on the same batches. With different recipes (ours
    --recipe best against nanoGPT's) the peer's steps are spread evenly among ours, so both
    runs share the machine alike from start to end and their total times compare fairly.
    """
    peer_cfg = peer_cfg or cfg
    torch.manual_seed(seed)
    tokenizer, train, val = load_splits(data_path, max_chars)
    cfgs = {"ours": cfg, "peer": peer_cfg}
    models = {"ours": GPT(**shape(cfg, tokenizer), n_layers=cfg["n_layer"])}
    loss_of = {"ours": ours_loss, "peer": ours_loss}
    if peer:
        torch.manual_seed(seed)
        if nanogpt is not None:
            models["peer"] = nanogpt_model(
                load_nanogpt(nanogpt),
                **shape(peer_cfg, tokenizer),
                n_layers=peer_cfg["n_layer"],
                bias=nanogpt_bias,
            )
            loss_of["peer"] = nanogpt_loss
        else:
            models["peer"] = PeerGPT(**shape(peer_cfg, tokenizer), n_layers=peer_cfg["n_layer"])
    optimizers = {name: adamw(m, cfgs[name]) for name, m in models.items()}
    times = {name: [] for name in models}
    cpu_times = {name: [] for name in models}
    generators = {name: torch.Generator().manual_seed(seed) for name in models}
    longest = max(cfgs[name]["steps"] for name in models)
    due = {name: set(spread(cfgs[name]["steps"], longest)) for name in models}
    for it in range(longest):
        losses = {}
        # Alternate which model goes first so neither always inherits the other's warm caches.
        order = list(models) if it % 2 == 0 else list(models)[::-1]
        for name in order:
            if it not in due[name]:
                continue
            c = cfgs[name]
            n_done = len(times[name])
            x, y = batch(train, c["batch_size"], c["block_size"], generators[name])
            seconds, cpu, losses[name] = step(
                models[name],
                optimizers[name],
                x,
                y,
                learning_rate(n_done, c),
                c["grad_clip"],
                loss_of[name],
            )
            times[name].append(seconds)
            cpu_times[name].append(cpu)
        if log_every and (it % log_every == 0 or it == longest - 1):
            shown = "  ".join(f"{n} {v:.3f}" for n, v in losses.items())
            print(f"step {it:5d}  train loss  {shown}", file=sys.stderr, flush=True)
    val_losses = {
        name: estimate_loss(m, val, cfgs[name], seed + 1, loss_of[name])
        for name, m in models.items()
    }
    seconds = sum(times["ours"])
    result = {
        "steps": cfg["steps"],
        "seconds": round(seconds, 2),
        "ms_per_step": round(1000 * seconds / cfg["steps"], 3),
        "cpu_ms_per_step": round(1000 * sum(cpu_times["ours"]) / cfg["steps"], 3),
        "val_loss": round(val_losses["ours"], 4),
    }
    if peer:
        peer_seconds = sum(times["peer"])
        result["peer"] = (
            f"nanoGPT model.py (bias={nanogpt_bias})" if nanogpt else "nn.TransformerEncoderLayer"
        )
        result["peer_steps"] = peer_cfg["steps"]
        result["peer_seconds"] = round(peer_seconds, 2)
        result["peer_ms_per_step"] = round(1000 * peer_seconds / peer_cfg["steps"], 3)
        result["peer_cpu_ms_per_step"] = round(1000 * sum(cpu_times["peer"]) / peer_cfg["steps"], 3)
        result["peer_val_loss"] = round(val_losses["peer"], 4)
        # ours / peer, per step (< 1: ours is faster), and for the whole run (time_ratio)
        result["cpu_ratio"] = round(result["cpu_ms_per_step"] / result["peer_cpu_ms_per_step"], 3)
        result["ratio"] = round(result["ms_per_step"] / result["peer_ms_per_step"], 3)
        # Medians shrug off the odd step another process on the machine interrupted.
        result["median_ratio"] = round(
            statistics.median(times["ours"]) / statistics.median(times["peer"]), 3
        )
        result["time_ratio"] = round(seconds / peer_seconds, 3)
    result["ln_vocab"] = round(math.log(tokenizer.vocab_size), 4)
    result["config"] = cfg
    if peer_cfg is not cfg:
        result["peer_config"] = peer_cfg
    return result


def spread(steps, longest):
    """The iterations (of longest) at which a run of `steps` steps takes them: evenly spread."""
    return [i * longest // steps for i in range(steps)]


def shape(cfg, tokenizer):
    return dict(
        vocab_size=tokenizer.vocab_size,
        block_size=cfg["block_size"],
        d_model=cfg["d_model"],
        n_heads=cfg["n_head"],
    )


def runs(n_runs, **kwargs):
    """run() n_runs times; each ratio is the median over the runs, each run's figures listed."""
    results = []
    for i in range(n_runs):
        results.append(run(**kwargs))
        print(f"run {i + 1}/{n_runs}: {json.dumps(results[-1])}", file=sys.stderr, flush=True)
    result = dict(results[0])
    for key in RUN_FIGURES:
        if key in result:
            result[key] = round(statistics.median(r[key] for r in results), 4)
    result["runs"] = [{key: r[key] for key in RUN_FIGURES if key in r} for r in results]
    return result


RUN_FIGURES = (
    "seconds",
    "ms_per_step",
    "cpu_ms_per_step",
    "peer_seconds",
    "peer_ms_per_step",
    "peer_cpu_ms_per_step",
    "ratio",
    "median_ratio",
    "cpu_ratio",
    "time_ratio",
    "val_loss",
    "peer_val_loss",
)


def machine():
    """What the figures were measured on: CPU model, its flags, cores, threads and load."""
    info = {"machine": cpu_model(), "cores": os.cpu_count(), "threads": torch.get_num_threads()}
    try:
        affinity = sorted(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        affinity = None
    info["cpus_allowed"] = affinity
    info["cpu_flags"] = cpu_flags()
    return info


def measured_on(load_before):
    """machine(), with the load average before the measurement (given) and after it (now)."""
    info = machine()
    info["load_average"] = {
        "before": [round(x, 2) for x in load_before],
        "after": [round(x, 2) for x in os.getloadavg()],
    }
    return info


def cpu_flags():
    """The CPU's feature flags (/proc/cpuinfo), e.g. avx2, avx512f: they decide torch's kernels."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("flags", "Features")):
                return line.split(":", 1)[1].split()
    return []


def cpu_model():
    """The CPU's marketing name (what lscpu calls 'Model name'), with the core count."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return f"{line.split(':', 1)[1].strip()}, {os.cpu_count()} cores"
    except OSError:
        pass
    return f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="a text file, e.g. tiny Shakespeare")
    parser.add_argument("--recipe", choices=("nanogpt", "best"), default="nanogpt")
    parser.add_argument("--quick", action="store_true", help="50 steps: a smoke test")
    parser.add_argument("--no-peer", action="store_true", help="train only the reference GPT")
    parser.add_argument("--max-chars", type=int, default=None, help="use only the start of --data")
    parser.add_argument("--seed", type=int, default=1337)
    parser.add_argument(
        "--runs", type=int, default=1, help="repeat the race; every ratio is the runs' median"
    )
    parser.add_argument(
        "--threads", type=int, default=None, help="torch threads (default: torch's)"
    )
    parser.add_argument(
        "--nanogpt", metavar="PATH", default=None, help="a nanoGPT checkout: race its model.py"
    )
    parser.add_argument(
        "--nanogpt-bias", action="store_true", help="nanoGPT with biases (GPT-2's, like ours)"
    )
    for key, value in NANOGPT_CPU.items():
        parser.add_argument("--" + key.replace("_", "-"), type=type(value), default=None)
    return parser.parse_args(argv)


def config(args, recipe=None):
    cfg = dict(NANOGPT_CPU)
    if (recipe or args.recipe) == "best":
        cfg.update(BEST)
    if args.quick:
        cfg.update(steps=50, warmup=10, eval_iters=5)
    for key in NANOGPT_CPU:  # explicit flags win over the recipe
        if getattr(args, key) is not None:
            cfg[key] = getattr(args, key)
    return cfg


def main(argv=None):
    args = parse_args(argv)
    if args.runs < 1:
        raise SystemExit("--runs: at least 1")
    cfg = config(args)
    if args.threads:
        torch.set_num_threads(args.threads)
    load_before = os.getloadavg()
    result = runs(
        args.runs,
        cfg=cfg,
        data_path=args.data,
        seed=args.seed,
        max_chars=args.max_chars,
        peer=not args.no_peer,
        log_every=10 if args.quick else 100,
        nanogpt=args.nanogpt,
        nanogpt_bias=args.nanogpt_bias,
        # --recipe best races nanoGPT's recipe: does it beat it within nanoGPT's time?
        peer_cfg=config(args, recipe="nanogpt") if args.recipe == "best" else None,
    )
    result["n_runs"] = args.runs
    result["recipe"] = args.recipe
    result.update(measured_on(load_before))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
