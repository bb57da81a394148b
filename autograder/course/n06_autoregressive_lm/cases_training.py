"""Hidden tests of notebook 06's training pieces: lr_at, configure_optimizer, train_step.

lr_at is a plain function of numbers: its values over whole schedules are compared with the
formula's, and the known-wrong schedules' values (variants_training.py) name a
mistake. configure_optimizer and train_step are called on the harness's TinyLM (harness/toy.py),
a small model with every kind of parameter they tell apart (embeddings, matrices, biases, a
norm's gain, optionally a head tied to the token table), so that neither depends on the
student's GPT. train_step gets a plain SGD optimizer from the harness: the change of each
parameter is then lr times the gradient the update used, which shows whether the gradients
were zeroed and clipped before the step. The judges are in judges_training.py and judges_train_step.py.
"""

import numpy as np
import torch

from autograder.course.n06_autoregressive_lm import variants_training as trv
from autograder.course.probes import Case
from autograder.course.torch_shared.tools import np_, torch_probe
from autograder.harness.toy import TinyLM
from autograder.judging import Judgement

# ---------------------------------------------------------------- lr_at


def _lr_case(name, points, calls, what):
    right = [trv.schedule(*a, **k) for a, k in calls]
    judge = Judgement(
        "training_judges.lr_schedule",
        {
            "what": what,
            "calls": [[list(a), dict(k)] for a, k in calls],
            "expected": right,
            "variants": [list(v) for v in trv.lr_variants(calls)],
        },
    )
    return Case("lr_at", name, points, [{"op": "calls", "calls": calls}], judge)


def _lr_settings(rng):
    max_lr = float(np.round(rng.uniform(1e-3, 1e-2), 6))
    warmup = int(rng.integers(3, 8))
    total = int(rng.integers(20, 40))
    min_lr = float(np.round(max_lr * rng.uniform(0.05, 0.2), 7))
    return max_lr, warmup, total, min_lr


@torch_probe("lr_at")
def lr_at_cases(rng):
    max_lr, w, total, min_lr = _lr_settings(rng)

    def call(step, **kw):
        return [[step, max_lr, w, total], {"min_lr": min_lr, **kw}]

    # each case's steps stay inside its title: the warm-up alone, then the cosine alone
    warm = [call(s) for s in range(w)]
    after = [call(s) for s in range(w, total)]
    no_min = [
        [[s, max_lr, w, total], {}] for s in (w, w + 1, total - 2, total - 1, total, total + 5)
    ]
    w0_total = int(rng.integers(10, 20))
    no_warm = [[[s, max_lr, 0, w0_total], {"min_lr": min_lr}] for s in range(w0_total)]
    # a warm-up that ends one step before the last: the cosine has no steps left to fall over
    short = int(rng.integers(3, 6))
    edge = [[[s, max_lr, short - 1, short], {"min_lr": min_lr}] for s in range(short + 1)]
    sig = f"max_lr={max_lr:g}, warmup_steps={w}, total_steps={total}"
    return [
        _lr_case(
            "a linear warm-up: step s gives max_lr * (s + 1) / warmup_steps",
            0.75,
            warm,
            f"lr_at(step, {sig}, min_lr={min_lr:g}) for steps 0 to {w - 1}",
        ),
        _lr_case(
            "from step warmup_steps (max_lr) a half-cosine down to min_lr at the last step",
            1.0,
            after,
            f"lr_at(step, {sig}, min_lr={min_lr:g}) for steps {w} to {total - 1}",
        ),
        _lr_case(
            "min_lr defaults to 0, and the rate stays there after the last step",
            0.5,
            no_min,
            f"lr_at(step, {sig}) for steps {w} to {total + 5}",
        ),
        _lr_case(
            "no warm-up (warmup_steps=0), or one that lasts to the step before the last",
            0.25,
            no_warm + edge,
            f"lr_at(step, max_lr={max_lr:g}, warmup_steps=0, total_steps={w0_total}, "
            f"min_lr={min_lr:g}) and lr_at(step, max_lr={max_lr:g}, warmup_steps={short - 1}, "
            f"total_steps={short}, min_lr={min_lr:g})",
        ),
    ]


# ---------------------------------------------------------------- the toy model

TINY = {"vocab_size": 7, "block_size": 6, "d_model": 8}


def tiny_state(rng, tied=False):
    """TinyLM's parameters, drawn (by name, as named_parameters gives them)."""
    model = TinyLM(**TINY, tied=tied)
    state = {}
    for name, param in model.named_parameters():
        scale = 0.2 if name.endswith("bias") else 0.6
        shift = 1.0 if name == "ln.weight" else 0.0
        state[name] = (rng.normal(shift, scale, size=tuple(param.shape))).astype(np.float32)
    return state


def tiny_model(state, tied=False, dropout=0.0, mode="train"):
    model = TinyLM(**TINY, tied=tied, dropout=dropout)
    with torch.no_grad():
        for name, param in model.named_parameters():
            param.copy_(torch.from_numpy(state[name]))
    return model.train(mode == "train")


def _dims(tied):
    return {n: p.dim() for n, p in TinyLM(**TINY, tied=tied).named_parameters()}


# ---------------------------------------------------------------- configure_optimizer


def _optimizer_request(tied, args, kwargs=None):
    return {
        "op": "optimizer",
        "model": {"init": {**TINY, "tied": tied}, "state": {}},
        "args": args,
        "kwargs": kwargs or {},
    }


@torch_probe("configure_optimizer")
def configure_optimizer_cases(rng):
    lr = float(np.round(rng.uniform(1e-4, 3e-3), 6))
    wd = float(np.round(rng.uniform(0.02, 0.3), 3))
    betas = [
        float(np.round(rng.uniform(0.7, 0.89), 2)),
        float(np.round(rng.uniform(0.96, 0.999), 3)),
    ]

    def judge(tied, want_betas):
        return Judgement(
            "training_judges.optimizer_groups",
            {
                "what": f"configure_optimizer(model, lr={lr:g}, weight_decay={wd:g}"
                + (f", betas={tuple(want_betas)})" if want_betas != [0.9, 0.95] else ")"),
                "dims": _dims(tied),
                "tied": [["embed.weight", "unembed.weight"]] if tied else [],
                "lr": lr,
                "weight_decay": wd,
                "betas": list(want_betas),
            },
        )

    return [
        Case(
            "configure_optimizer",
            "matrices and embeddings decay, biases and norm gains do not",
            1.0,
            [_optimizer_request(False, [lr, wd])],
            judge(False, [0.9, 0.95]),
        ),
        Case(
            "configure_optimizer",
            "a weight tied to the token table is in the optimizer once",
            0.75,
            [_optimizer_request(True, [lr, wd])],
            judge(True, [0.9, 0.95]),
        ),
        Case(
            "configure_optimizer",
            "an AdamW with the learning rate and betas asked for",
            0.5,
            [_optimizer_request(False, [lr, wd], {"betas": {"$tuple": betas}})],
            judge(False, betas),
        ),
    ]


# ---------------------------------------------------------------- train_step

STEP_LR = 1.0  # SGD's rate: the change of a parameter is the gradient the update used
STALE = 0.5  # the gradient left in every parameter before a call, where a case puts one


def _batch(rng, B=4):
    T, V = TINY["block_size"], TINY["vocab_size"]
    x = torch.from_numpy(rng.integers(0, V, size=(B, T))).long()
    y = torch.from_numpy(rng.integers(0, V, size=(B, T))).long()
    return x, y


def _step_request(state, x, y, clip, mode="train", stale=None, dropout=0.0, seed=0):
    kwargs = {} if clip == "default" else {"clip": clip}
    return {
        "op": "step",
        "model": {
            "init": {**TINY, "dropout": dropout},
            "state": state,
            "mode": mode,
            "stale_grads": stale,
        },
        "lr": STEP_LR,
        "args": [x, y],
        "kwargs": kwargs,
        "seed": seed,
    }


def _expected_step(state, x, y, clip, stale):
    """What a right train_step does, and what each known mistake does, as plain data."""
    model = tiny_model(state)
    fresh, loss = trv.gradients(model, x, y)
    right = trv.clipped(fresh, clip)
    variants = trv.step_variants(fresh, STALE if stale else 0.0, clip)
    if not stale:
        variants = [v for v in variants if v[0] != "no-zero-grad"]
    if clip is None:
        variants = [v for v in variants if v[0] in ("no-zero-grad",)]
    after = tiny_model({n: state[n] - STEP_LR * np_(right[n]) for n in state})
    with torch.no_grad():
        loss_after = float(trv.tiny_lm_loss(after, x, y))
    return {
        "loss": loss,
        "loss_after": loss_after,
        "used": {n: np_(g) for n, g in right.items()},
        "left": {n: np_(g) for n, g in right.items()},
        "norm": trv.global_norm(fresh),
        "batch_shape": list(x.shape),
        "variants": [
            [
                key,
                id_,
                message,
                {n: np_(g) for n, g in used.items()},
                {n: np_(g) for n, g in left.items()},
            ]
            for key, id_, message, used, left in variants
        ],
    }


def _step_judge(name, what, state, expected, **more):
    return Judgement(
        f"training_judges.{name}",
        {"what": what, "before": state, "lr": STEP_LR, **expected, **more},
    )


@torch_probe("train_step")
def train_step_cases(rng):
    cases = []
    state = tiny_state(rng)
    x, y = _batch(rng)
    fresh = trv.gradients(tiny_model(state), x, y)[0]
    norm = trv.global_norm(fresh)
    largest = max(float(g.abs().max()) for g in fresh.values())
    # active for the global norm, and below the largest entry: clipping entry by entry
    # (clip_grad_value_) then changes the gradient too, and shows
    clip = float(np.round(min(norm * rng.uniform(0.2, 0.5), largest * rng.uniform(0.5, 0.8)), 4))
    expected = _expected_step(state, x, y, clip, stale=True)
    with torch.no_grad():
        logits = tiny_model(state)(x)
    what = f"train_step(model, optimizer, x, y, clip={clip:g})"
    cases.append(
        Case(
            "train_step",
            "one update: fresh gradients, their global norm clipped, the loss before the update",
            1.5,
            [
                _step_request(state, x, y, clip, stale=STALE),
                {"op": "call", "target": "lm_loss", "args": [logits, y]},
            ],
            _step_judge(
                "one_update",
                what + " (every .grad held 0.5 before the call)",
                state,
                expected,
                logits_loss=expected["loss"],
                optional=[1],
            ),
        )
    )

    state2 = tiny_state(rng)
    x2, y2 = _batch(rng)
    norm2 = trv.global_norm(trv.gradients(tiny_model(state2), x2, y2)[0])
    above = float(np.round(norm2 * rng.uniform(2.0, 4.0), 3))
    cases.append(
        Case(
            "train_step",
            "clip=None, or a clip above the gradient's norm, leaves the gradient as it is",
            0.75,
            [
                _step_request(state2, x2, y2, None),
                _step_request(state2, x2, y2, above),
            ],
            _step_judge(
                "unclipped_updates",
                f"train_step(model, optimizer, x, y, clip=None), then clip={above:g}",
                state2,
                _expected_step(state2, x2, y2, None, stale=False),
            ),
        )
    )

    state3 = tiny_state(rng)
    x3, y3 = _batch(rng)
    seed = int(rng.integers(2**31))
    cases.append(
        Case(
            "train_step",
            "trains in train mode (dropout on), even when the model comes in eval mode",
            0.75,
            [
                _step_request(state3, x3, y3, "default", mode="eval", dropout=0.5, seed=seed),
            ],
            Judgement(
                "training_judges.train_mode",
                {
                    "what": "train_step(model in eval mode with dropout 0.5, optimizer, x, y)",
                    "eval_loss": _eval_loss(state3, x3, y3),
                },
            ),
        )
    )
    return cases


def _eval_loss(state, x, y):
    with torch.no_grad():
        return float(trv.tiny_lm_loss(tiny_model(state, mode="eval"), x, y))
