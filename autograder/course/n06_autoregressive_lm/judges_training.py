"""The judges of notebook 06's training pieces: lr_at, configure_optimizer, train_step.

Registered as "training_judges.<name>" and named by the Judgements of
cases_training.py. lr_at's values are compared with the formula's, worked out
when the case was built, and with the known-wrong schedules'. configure_optimizer's answer is
its parameter groups, described by the harness (harness/toy.py: the names of the parameters in
each group and the group's settings). train_step's is what one call did to the harness's toy
model under plain SGD: the gradient an update used is the change of each parameter divided by
the rate, compared here with the batch's gradient clipped as it should be and with the known
mistakes'. The loss a train_step returns is compared with the loss the parent computed; it
decides nothing else.
"""

import math
import numbers

import numpy as np

from autograder.course.torch_shared.checks import explain
from autograder.judging import judge
from autograder.judging.base import Fail
from autograder.judging.compare import Tolerance, describe_encoded, error_message, fmt
from autograder.results import NOT_IMPLEMENTED

LR_TOL = {"rel": 1e-9, "abs": 1e-12}  # a formula of Python floats
GRAD_TOL: Tolerance = {
    "rtol": 1e-3,
    "atol": 1e-5,
}  # a float32 update of parameters of order 1, by SGD


def _message(id_, text):
    return f"{text}. " + explain([id_]) if id_ else f"{text}."


# ================================================================ lr_at


def _number(value):
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _same_rates(got, want):
    return all(
        math.isclose(g, w, rel_tol=LR_TOL["rel"], abs_tol=LR_TOL["abs"])
        for g, w in zip(got, want, strict=True)
    )


@judge
def lr_schedule(responses, *, what, calls, expected, variants):
    """lr_at's value at every step of the case, against the formula's; a known-wrong schedule
    that matches every value names the mistake."""
    answers = responses[0].raw.get("calls")
    if not isinstance(answers, list) or len(answers) != len(calls):
        raise Fail(f"{what}: the calls gave no answers back.")
    got = []
    for (args, kwargs), answer in zip(calls, answers, strict=True):
        if not isinstance(answer, dict):
            raise Fail(f"{what}: an answer could not be read.")
        if answer.get("error"):
            err = answer["error"]
            if err.get("type") == "NotImplementedError":
                raise Fail(
                    "lr_at is not implemented yet (it raises NotImplementedError).",
                    reason=NOT_IMPLEMENTED,
                )
            shown = ", ".join(map(str, args)) + "".join(f", {k}={v}" for k, v in kwargs.items())
            raise Fail(f"lr_at({shown}) raised {err.get('type')}: {err.get('message')}")
        value = responses[0].decode(answer.get("value"))
        if isinstance(value, np.generic) and value.dtype.kind == "f":
            value = float(value)
        if not _number(value):
            raise Fail(
                f"lr_at(step {args[0]}, ...) returned {describe_encoded(answer.get('value'))}; "
                "it should return "
                "a float (a number an optimizer's param_groups take as their lr)."
            )
        got.append(float(value))
    if _same_rates(got, expected):
        return
    for id_, message, values in variants:
        if _same_rates(got, values):
            raise Fail(_message(id_, f"{what}: {message}"), [id_] if id_ else [])
    i = next(
        i
        for i, (g, w) in enumerate(zip(got, expected, strict=True))
        if not math.isclose(g, w, rel_tol=LR_TOL["rel"], abs_tol=LR_TOL["abs"])
    )
    step = calls[i][0][0]
    warmup = calls[i][0][2]
    where = "during the warm-up" if step < warmup else "after the warm-up"
    raise Fail(
        f"{what}: at step {step} ({where}) the rate is {fmt(got[i], 6)}; expected "
        f"{fmt(expected[i], 6)}."
    )


# ================================================================ configure_optimizer


def _described(r, what):
    if r.error:
        raise Fail(error_message(r, what))
    value = r.decode(r.raw.get("value"))
    if not isinstance(value, dict) or not isinstance(value.get("groups"), list):
        raise Fail(f"{what}: the optimizer it returned could not be described.")
    return value


@judge
def optimizer_groups(responses, *, what, dims, tied, lr, weight_decay, betas):
    """Each parameter of the toy model (`dims`: name -> ndim) in exactly one group, decaying by
    weight_decay if its ndim >= 2 and not at all otherwise; lr and betas as asked; an AdamW."""
    got = _described(responses[0], what)
    if not got.get("is_adamw"):
        kind = str(got.get("type"))
        said = (
            f"{what} returned {kind}; it should return torch.optim.AdamW (its "
            "weight decay shrinks the weights directly, whatever their gradients' history)."
        )
        if kind.rsplit(".", 1)[-1] == "Adam":  # Adam itself: its decay goes through the moments
            raise Fail(_message("adam-not-adamw", said.removesuffix(".")), ["adam-not-adamw"])
        raise Fail(said)
    seen: dict[str, list[dict]] = {}
    for group in got["groups"]:
        if not isinstance(group, dict) or not isinstance(group.get("names"), list):
            raise Fail(f"{what}: a parameter group could not be read.")
        for name in group["names"]:
            seen.setdefault(str(name), []).append(group)
    strangers = seen.pop("?", [])
    if strangers:
        raise Fail(
            f"{what}: the optimizer holds {len(strangers)} tensor(s) that are not the model's "
            "parameters (copies?): give it the parameters themselves."
        )
    twice = sorted(n for n, groups in seen.items() if len(groups) > 1)
    if twice:
        tied_names = {n for pair in tied for n in pair}
        id_ = "tied-parameter-twice" if set(twice) & tied_names else None
        shown = ", ".join(twice)
        if id_:
            raise Fail(
                _message(
                    id_,
                    f"{what}: {shown} (the token table, which the head shares) is in the "
                    f"optimizer {len(seen[twice[0]])} times",
                ),
                [id_],
            )
        raise Fail(f"{what}: {shown} is in the optimizer more than once: each parameter once.")
    absent = sorted(set(dims) - set(seen))
    if absent:
        norm = [n for n in absent if n.startswith("ln.")]
        raise Fail(
            f"{what}: {', '.join(absent)} is in no parameter group, so it would never be "
            "trained: every parameter belongs to one of the two groups."
            + (
                " Here the norm is a layer norm of the course's own kind (notebook 05's "
                "LayerNorm), not nn.LayerNorm: tell the parameters apart by their dim, whatever "
                "module holds them."
                if norm
                else ""
            )
        )
    decayed_small = sorted(n for n in dims if dims[n] < 2 and _wd(seen[n][0]) != 0.0)
    if decayed_small:
        shown = ", ".join(decayed_small)
        raise Fail(
            _message(
                "decay-on-biases",
                f"{what}: {shown} decay with weight_decay {fmt(_wd(seen[decayed_small[0]][0]))}",
            ),
            ["decay-on-biases"],
        )
    undecayed = sorted(
        n for n in dims if dims[n] >= 2 and not _close(_wd(seen[n][0]), weight_decay)
    )
    if undecayed:
        tables = [n for n in undecayed if "emb" in n]
        only_tables = bool(tables) and len(tables) == len(undecayed)
        kind = "the embedding tables" if only_tables else "matrices"
        said = (
            f"{what}: {', '.join(undecayed)} ({kind}, with dim >= 2) decay by "
            f"{fmt(_wd(seen[undecayed[0]][0]))}; every parameter with dim >= 2, embeddings "
            f"included, decays by weight_decay = {fmt(weight_decay)}"
        )
        if only_tables and _wd(seen[undecayed[0]][0]) == 0.0:
            raise Fail(_message("decay-skips-embeddings", said), ["decay-skips-embeddings"])
        raise Fail(said + ".")
    for group in got["groups"]:
        if group["names"] and not _close(group.get("lr"), lr):
            raise Fail(f"{what}: a group's learning rate is {group.get('lr')}; expected {fmt(lr)}.")
        got_betas = group.get("betas")
        if group["names"] and not (
            isinstance(got_betas, list)
            and len(got_betas) == 2
            and all(_close(g, b) for g, b in zip(got_betas, betas, strict=True))
        ):
            raise Fail(
                f"{what}: the optimizer's betas are {got_betas}; expected {tuple(betas)}"
                + (" (GPT-2's (0.9, 0.95) by default)." if betas == [0.9, 0.95] else ".")
            )


def _wd(group):
    value = group.get("weight_decay")
    return float(value) if _number(value) else float("nan")


def _close(a, b):
    return _number(a) and math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-15)


# ================================================================ train_step


def _stepped(r, what):
    """The harness's account of one train_step call, checked for shape."""
    if r.error:
        raise Fail(error_message(r, what))
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
            f"{what} returned a tensor; it should return the loss as a Python float "
            "(loss.item()): a tensor keeps its whole graph alive in a list of losses."
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
    if value.get("steps") == 0:
        if all(np.array_equal(np.asarray(before[n]), value["after"][n]) for n in before):
            raise Fail(f"{what}: the parameters did not change: call optimizer.step().")
        raise Fail(
            f"{what}: the parameters changed, but not by the optimizer it was given: use the "
            "optimizer passed in (optimizer.step()), not a new one."
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
    raise Fail(
        f"{what} returned {fmt(returned, 5)}; the batch's loss (the mean cross-entropy before "
        f"the update) is {fmt(loss, 5)}."
    )


@judge
def unclipped_updates(responses, *, what, before, lr, loss, loss_after, used, left, norm, variants):
    """clip=None and a clip above the gradient's norm: both updates use the batch's gradient
    as it is."""
    for i, r in enumerate(responses):
        value = _stepped(r, what)
        _loss_returned(value, what)
        got = _used(value, before, lr, what)
        if _grads_close(got, used):
            continue
        got_norm = math.sqrt(sum(float((g**2).sum()) for g in got.values()))
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
