"""Known-wrong versions of notebook 06's training pieces and of top-p sampling, computed in the
trusted parent when the probes build their cases (cases_training.py).

Each variant is (misconception id or None, what it does in the course's words, its output on
the case's inputs). A student's answer that matches a variant, and not the right answer, is
named by it.
"""

import math

import numpy as np
import torch

# ---------------------------------------------------------------- lr_at


def schedule(step, max_lr, warmup_steps, total_steps, min_lr=0.0, variant=None):
    """The learning rate of `step`, right (variant None) or with one known mistake."""
    w, T = warmup_steps, total_steps
    if variant == "warmup-from-zero" and step < w:
        return max_lr * step / w
    if variant == "warmup-zero-to-max" and step < w:  # 0 at step 0, max_lr one step early
        return max_lr * step / max(1, w - 1)
    if variant == "warmup-one-longer" and step <= w and w > 0:
        return max_lr * (step + 1) / w
    if variant == "warmup-floor" and step < w:  # max_lr * (step + 1) // warmup_steps
        return max_lr * (step + 1) // w
    if variant == "warmup-floor-fraction" and step < w:  # (step + 1) // warmup_steps * max_lr
        return (step + 1) // w * max_lr
    if step < w:
        return max_lr * (step + 1) / w
    span = {"cosine-one-short": max(1, T - w), "cosine-from-zero": max(1, T - 1)}.get(
        variant, max(1, T - 1 - w)
    )
    p = (step if variant == "cosine-from-zero" else step - w) / span
    if variant != "not-clamped":
        p = min(max(p, 0.0), 1.0)
    if variant == "linear-decay":
        return min_lr + (max_lr - min_lr) * (1 - p)
    low = 0.0 if variant == "min-lr-ignored" else min_lr
    turns = 2.0 if variant == "full-period" else 1.0
    return low + 0.5 * (max_lr - low) * (1 + math.cos(turns * math.pi * p))


LR_VARIANTS = [
    ("warmup-from-zero", "warmup-off-by-one", "the warm-up starts at 0 (step / warmup_steps)"),
    (
        "warmup-zero-to-max",
        "warmup-off-by-one",
        "the warm-up starts at 0 at step 0 and reaches max_lr one step early "
        "(step / (warmup_steps - 1))",
    ),
    (
        "warmup-one-longer",
        "warmup-off-by-one",
        "the warm-up lasts one step too long: step warmup_steps goes above max_lr",
    ),
    (
        "cosine-one-short",
        "cosine-not-reaching-min",
        "the half-cosine divides by total_steps - warmup_steps, so the last step stays above min_lr",
    ),
    (
        "min-lr-ignored",
        "cosine-not-reaching-min",
        "the half-cosine ends at 0 instead of min_lr: min_lr + 0.5 * (max_lr - min_lr) * (1 + cos)",
    ),
    (
        "warmup-floor",
        "warmup-integer-division",
        "the warm-up's rates are rounded down to whole numbers (//)",
    ),
    (
        "warmup-floor-fraction",
        "warmup-integer-division",
        "the warm-up's fraction (step + 1) / warmup_steps is rounded down to a whole number (//)",
    ),
    (
        "not-clamped",
        "cosine-not-clamped",
        "after total_steps the rate climbs back up",
    ),
    (
        "linear-decay",
        "lr-linear-decay",
        "the rate decays along a straight line",
    ),
    (
        "cosine-from-zero",
        "cosine-from-step-zero",
        "the cosine's progress counts from step 0",
    ),
    (
        "full-period",
        "cosine-full-period",
        "the rate falls to min_lr halfway through the cosine's steps and climbs back to max_lr "
        "at the last step",
    ),
]


def lr_variants(calls):
    """[(id, message, values)] of every known-wrong schedule on the same calls ([args, kwargs])."""
    out = []
    for key, id_, message in LR_VARIANTS:
        out.append((id_, message, [schedule(*a, **(k | {"variant": key})) for a, k in calls]))
    return out


# ---------------------------------------------------------------- generate's top_p


def _nucleus(p, top_p, exclude_boundary=False):
    """Boolean keep-mask of the smallest most-probable set reaching top_p (ties by id)."""
    order = np.argsort(-p, kind="stable")
    sorted_p = p[order]
    before = np.cumsum(sorted_p) - sorted_p
    keep_sorted = before < top_p
    if exclude_boundary:
        keep_sorted = np.cumsum(sorted_p) < top_p
    keep_sorted[0] = True
    keep = np.zeros_like(keep_sorted)
    keep[order] = keep_sorted
    return keep, order


def _softmax(z):
    e = np.exp(z - z[np.isfinite(z)].max())
    e[~np.isfinite(z)] = 0.0
    return e / e.sum()


def _tempered(row, temperature, top_k):
    z = np.asarray(row, dtype=float) / temperature
    if top_k is not None:
        kth = np.sort(z)[-min(top_k, z.size)]
        z = np.where(z < kth, -np.inf, z)
    return z


def top_p_distribution(row, temperature=1.0, top_k=None, top_p=None, variant=None):
    """The distribution generate samples from (float64), right or with one top-p mistake."""
    if variant == "top-k-off-by-one" and top_k is not None and top_k > 1:
        top_k -= 1  # the k-th largest dropped too
    z = _tempered(row, temperature, top_k)
    p = _softmax(z)
    if top_p is None or top_p >= 1.0:
        return p
    if variant == "before-top-k" and top_k is not None:
        # the set counted on the whole distribution, then top_k applied to what is left
        keep, _ = _nucleus(_softmax(_tempered(row, temperature, None)), top_p)
        q = np.where(keep & np.isfinite(z), p, 0.0)
        return q / q.sum() if q.sum() > 0 else p
    if variant == "before-temperature":
        keep, _ = _nucleus(_softmax(_tempered(row, 1.0, top_k)), top_p)
    else:
        keep, order = _nucleus(p, top_p, exclude_boundary=variant == "excludes-boundary")
    if variant == "no-renormalise":
        # an inverse-CDF draw over the kept probabilities as they are, most probable first: a
        # draw beyond the mass they hold runs off the end, onto the least probable token
        q = np.where(keep, p, 0.0)
        q[order[-1]] += 1.0 - q.sum()
        return q
    q = np.where(keep, p, 0.0)
    return q / q.sum()


TOP_P_VARIANTS = [
    ("excludes-boundary", "top-p-excludes-boundary"),
    ("before-temperature", "top-p-before-temperature"),
    ("no-renormalise", "top-p-no-renormalise"),
    ("before-top-k", "top-p-before-top-k"),
    ("top-k-off-by-one", "top-k-off-by-one"),
]


def distinct(right, named, margin=0.05):
    """True if every named distribution differs from the right one and from each other by at
    least `margin` somewhere (so 4,000 samples name one of them, or none)."""
    dists = [np.asarray(right)] + [np.asarray(q) for _, q in named]
    return all(np.abs(a - b).max() >= margin for i, a in enumerate(dists) for b in dists[i + 1 :])


# ---------------------------------------------------------------- train_step


def tiny_lm_loss(model, x, y):
    logits = model(x)
    return torch.nn.functional.cross_entropy(logits.flatten(0, 1), y.flatten())


def gradients(model, x, y):
    """{name: gradient of the mean next-token loss} and the loss, in the model's mode."""
    model.zero_grad()
    loss = tiny_lm_loss(model, x, y)
    loss.backward()
    return {n: p.grad.detach().clone() for n, p in model.named_parameters()}, loss.item()


def global_norm(grads):
    return float(torch.sqrt(sum((g.double() ** 2).sum() for g in grads.values())))


def clipped(grads, clip):
    """torch's clip_grad_norm_: every gradient scaled by clip / (norm + 1e-6) when above clip."""
    if clip is None:
        return dict(grads)
    scale = min(1.0, clip / (global_norm(grads) + 1e-6))
    return {n: g * scale for n, g in grads.items()}


def step_variants(fresh, stale, clip):
    """[(key, id, message, gradient the update used, gradients left after)] of train_step's
    known mistakes, from the batch's fresh gradients and the stale ones already there."""
    with_stale = {n: g + stale for n, g in fresh.items()}
    right = clipped(fresh, clip)
    per_param = {
        n: g * min(1.0, clip / (float(g.norm()) + 1e-6)) if clip is not None else g
        for n, g in fresh.items()
    }
    by_value = {n: g.clamp(-clip, clip) if clip is not None else g for n, g in fresh.items()}
    # a clip written as the constant 1.0 (the default) shows only where clipping to 1.0 changes
    # the gradient, and clipping to `clip` gives another one
    fixed = []
    norm = global_norm(fresh)
    if clip is not None and norm > 1.05 and abs(clip - 1.0) > 0.05:
        one = clipped(fresh, 1.0)
        fixed = [
            (
                "clip-fixed",
                "clip-argument-ignored",
                "the update used the gradient clipped to a global norm of 1.0, whatever clip "
                "was passed",
                one,
                one,
            )
        ]
    return fixed + [
        (
            "no-zero-grad",
            "no-zero-grad",
            "the update used the batch's gradient plus what was already in .grad",
            clipped(with_stale, clip),
            clipped(with_stale, clip),
        ),
        (
            "clip-after-step",
            "clip-after-step",
            "the update used the unclipped gradient, and the gradients were clipped after it",
            fresh,
            right,
        ),
        (
            "no-clip",
            None,
            "the update used the unclipped gradient: clip the global norm before the step",
            fresh,
            fresh,
        ),
        (
            "clip-per-parameter",
            "clip-per-parameter",
            "each parameter's gradient was clipped to norm clip on its own",
            per_param,
            per_param,
        ),
        (
            "clip-by-value",
            "clip-by-value",
            "every gradient entry was clipped to [-clip, clip] (clip_grad_value_); clip the "
            "global norm instead (clip_grad_norm_)",
            by_value,
            by_value,
        ),
    ]
