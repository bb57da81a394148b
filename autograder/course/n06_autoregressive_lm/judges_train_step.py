"""The judges of notebook 06's train_step (registered as "training_judges.<name>", like
judges_training.py's, and named by the Judgements of cases_training.py).

train_step's answer is what one call did to the harness's toy model under plain SGD: the
gradient an update used is the change of each parameter divided by the rate, compared here with
the batch's gradient clipped as it should be and with the known mistakes'. The loss a
train_step returns is compared with the loss the parent computed; it decides nothing else.
"""

import math

import numpy as np

from autograder.course.n06_autoregressive_lm.judges_training import _message, _number
from autograder.judging import judge
from autograder.judging.base import Fail
from autograder.judging.compare import Tolerance, error_message, fmt

GRAD_TOL: Tolerance = {
    "rtol": 1e-3,
    "atol": 1e-5,
}  # a float32 update of parameters of order 1, by SGD


# ================================================================ train_step


def _stepped(r, what):
    """The harness's account of one train_step call, checked for shape."""
    if r.error:
        said = error_message(r, what)
        if "target size" in r.error.get("message", ""):  # (B, T, V) logits into F.cross_entropy
            raise Fail(
                _message("cross-entropy-unflattened", said.rstrip(".")),
                ["cross-entropy-unflattened"],
            )
        raise Fail(said)
    value = r.decode(r.raw.get("value"))
    if not isinstance(value, dict) or not isinstance(value.get("after"), dict):
        raise Fail(f"{what}: what the call did could not be read.")
    return value


def _loss_returned(value, what):
    out = value.get("returned")
    if isinstance(out, np.generic) and out.dtype.kind == "f":
        out = float(out)
    if isinstance(out, np.ndarray):
        raise Fail(
            _message(
                "tensor-not-float",
                f"{what} returned a tensor; it should return the loss as a Python float "
                "(loss.item())",
            ),
            ["tensor-not-float"],
        )
    if not _number(out):
        raise Fail(f"{what} returned {type(out).__name__}; it should return the loss (a float).")
    return float(out)


def _used(value, before, lr, what):
    """{name: the gradient the update used}, from the parameters before and after."""
    used = {}
    for name, start in before.items():
        end = value["after"].get(name)
        if not isinstance(end, np.ndarray) or end.shape != np.shape(start):
            raise Fail(f"{what}: the model's parameter {name} changed shape or went missing.")
        used[name] = (np.asarray(start, dtype=np.float64) - end.astype(np.float64)) / lr
    return used


def _grads_close(got, want):
    return all(
        np.allclose(
            got[n],
            np.asarray(want[n], dtype=np.float64),
            rtol=GRAD_TOL["rtol"],
            atol=GRAD_TOL["atol"],
        )
        for n in want
    )


def _left(value, want):
    grads = value.get("grads") or {}
    return all(isinstance(grads.get(n), np.ndarray) for n in want) and _grads_close(
        {n: grads[n].astype(np.float64) for n in want}, want
    )


def _update_verdict(value, what, before, lr, used, variants, norm, clip_note=""):
    """Fail unless the update used `used`; name the known mistake it matches."""
    unchanged = all(np.array_equal(np.asarray(before[n]), value["after"][n]) for n in before)
    if value.get("steps") == 0:
        if unchanged:
            raise Fail(f"{what}: the parameters did not change: call optimizer.step().")
        raise Fail(
            f"{what}: the parameters changed, but not by the optimizer it was given: use the "
            "optimizer passed in (optimizer.step()), not a new one."
        )
    if unchanged:  # the optimizer stepped, with every .grad empty (or zero) at that moment
        raise Fail(
            _message(
                "zero-grad-before-step",
                f"{what}: optimizer.step() was called, but no parameter changed: every "
                "gradient was empty when it ran",
            ),
            ["zero-grad-before-step"],
        )
    got = _used(value, before, lr, what)
    if _grads_close(got, used):
        return
    matches = [v for v in variants if _grads_close(got, v[3])]
    if len(matches) > 1:  # clipping after the step and not clipping update alike: the
        # gradients left behind tell them apart, unless they were cleared after the step
        matches = [v for v in matches if _left(value, v[4])] or [v for v in matches if v[1] is None]
    if matches:
        key, id_, message, _, _ = matches[0]
        raise Fail(_message(id_, f"{what}: {message}"), [id_] if id_ else [])
    got_norm = math.sqrt(sum(float((g**2).sum()) for g in got.values()))
    raise Fail(
        f"{what}: the update is not the batch's gradient{clip_note}: its global norm is "
        f"{fmt(got_norm)}, the batch's gradient has norm {fmt(norm)}. One step is: zero the "
        "gradients, loss = lm_loss(model(x), y), loss.backward(), clip, optimizer.step()."
    )


def _lm_loss_blamed(responses, logits_loss, what):
    """'' or why the student's own lm_loss (which train_step calls) is at fault."""
    if len(responses) < 2 or responses[1].error or responses[1].missing or responses[1].lost:
        return ""
    try:
        value = float(np.asarray(responses[1].decode(responses[1].raw.get("value"))))
    except (TypeError, ValueError):
        return ""
    if math.isclose(value, logits_loss, rel_tol=1e-4, abs_tol=1e-5):
        return ""
    return (
        f"{what}: train_step computes its loss with your lm_loss, which gives {fmt(value)} "
        f"where the mean cross-entropy is {fmt(logits_loss)}: fix lm_loss first (its own "
        "checks say how)."
    )


@judge
def one_update(
    responses,
    *,
    what,
    before,
    lr,
    loss,
    loss_after,
    used,
    left,
    norm,
    variants,
    logits_loss,
    optional=(),
    batch_shape=(),
):
    """One call with stale gradients and an active clip: the update used the batch's fresh
    gradient clipped to the global norm, and the loss returned is the loss before it."""
    r = responses[0]
    blame = _lm_loss_blamed(responses, logits_loss, what)
    if r.error and blame:
        raise Fail(blame)
    value = _stepped(r, what)
    returned = _loss_returned(value, what)
    try:
        _update_verdict(value, what, before, lr, used, variants, norm, ", clipped")
    except Fail:
        if blame:
            raise Fail(blame) from None
        raise
    if math.isclose(returned, loss, rel_tol=1e-4, abs_tol=1e-5):
        return
    if blame:
        raise Fail(blame)
    if math.isclose(returned, loss_after, rel_tol=1e-4, abs_tol=1e-5):
        raise Fail(
            _message(
                "loss-after-update",
                f"{what} returned {fmt(returned, 5)}, the loss of the updated model; the "
                f"batch's loss before the update is {fmt(loss, 5)}",
            ),
            ["loss-after-update"],
        )
    summed = _summed_over(returned, loss, batch_shape)
    if summed:
        raise Fail(
            _message(
                "loss-sum-reduction",
                f"{what} returned {fmt(returned, 5)}, the batch's loss {fmt(loss, 5)} summed "
                f"over {summed}",
            ),
            ["loss-sum-reduction"],
        )
    raise Fail(
        f"{what} returned {fmt(returned, 5)}; the batch's loss (the mean cross-entropy before "
        f"the update) is {fmt(loss, 5)}."
    )


@judge
def unclipped_updates(
    responses, *, what, before, lr, loss, loss_after, used, left, norm, variants, batch_shape=()
):
    """clip=None and a clip above the gradient's norm: both updates use the batch's gradient
    as it is."""
    first, rest = responses[0], responses[1:]
    if (
        first.error
        and first.error.get("type") == "TypeError"
        and "None" in first.error.get("message", "")
        and rest
        and not rest[0].error
    ):  # the same batch with a number for clip works: None reached the clipping
        raise Fail(
            _message("clip-none-not-skipped", error_message(first, what).rstrip(".")),
            ["clip-none-not-skipped"],
        )
    for i, r in enumerate(responses):
        value = _stepped(r, what)
        _loss_returned(value, what)
        got = _used(value, before, lr, what)
        if _grads_close(got, used):
            continue
        got_norm = math.sqrt(sum(float((g**2).sum()) for g in got.values()))
        scale = _summed_over(got_norm, norm, batch_shape)
        if scale:
            raise Fail(
                _message(
                    "loss-sum-reduction",
                    f"{what}: the update's gradient has norm {fmt(got_norm)}, the batch's mean "
                    f"loss gives {fmt(norm)}: the loss was summed over {scale}",
                ),
                ["loss-sum-reduction"],
            )
        if got_norm == 0.0 and value.get("steps"):
            raise Fail(
                _message(
                    "zero-grad-before-step",
                    f"{what}: optimizer.step() was called, but no parameter changed",
                ),
                ["zero-grad-before-step"],
            )
        if i > 0 and norm > CLIP_DEFAULT and math.isclose(got_norm, CLIP_DEFAULT, rel_tol=1e-3):
            raise Fail(
                _message(
                    "clip-argument-ignored",
                    f"{what}: the update's gradient has norm {fmt(got_norm)}, clipped to 1.0, "
                    f"although the clip asked for is above the batch's {fmt(norm)}",
                ),
                ["clip-argument-ignored"],
            )
        if i == 0:
            raise Fail(
                f"{what}: with clip=None the update's gradient has norm {fmt(got_norm)}, the "
                f"batch's {fmt(norm)}: clip=None means no clipping at all."
            )
        if math.isclose(got_norm, norm, rel_tol=1e-3):
            raise Fail(
                f"{what}: with a clip above the gradient's norm the update changed the gradient's direction."
            )
        raise Fail(
            f"{what}: the gradient's norm is {fmt(norm)}, below the clip, so it should stay as "
            f"it is; the update used a gradient of norm {fmt(got_norm)}. Clipping only ever "
            "scales a gradient down (torch.nn.utils.clip_grad_norm_)."
        )


CLIP_DEFAULT = 1.0  # train_step's default clip, what a clip written as a constant gives


def _summed_over(got, mean, batch_shape):
    """'' or which positions a value `got` sums where `mean` averages them (B * T, B, or T),
    as a loss with reduction="sum" (or divided by one axis only) gives."""
    if len(batch_shape) != 2 or not mean:
        return ""
    B, T = batch_shape
    for count, said in (
        (B * T, f"all {B * T} positions"),
        (B, f"the {B} rows"),
        (T, f"{T} positions"),
    ):
        if count > 1 and math.isclose(got, mean * count, rel_tol=1e-3):
            return said
    return ""


@judge
def train_mode(responses, *, what, eval_loss):
    """A model handed over in eval mode: every forward of the step in train mode, and the model
    left in train mode."""
    value = _stepped(responses[0], what)
    returned = _loss_returned(value, what)
    modes = value.get("modes")
    if not isinstance(modes, list) or not modes:
        raise Fail(f"{what}: the model was never run: train_step computes lm_loss(model(x), y).")
    if not all(m is True for m in modes) or value.get("training") is not True:
        same = math.isclose(returned, eval_loss, rel_tol=1e-5, abs_tol=1e-6)
        raise Fail(
            _message(
                "eval-mode-training",
                f"{what}: the forward pass ran in eval mode"
                + (
                    f" (the loss returned, {fmt(returned, 5)}, is the loss with dropout off)"
                    if same
                    else ""
                ),
            ),
            ["eval-mode-training"],
        )
