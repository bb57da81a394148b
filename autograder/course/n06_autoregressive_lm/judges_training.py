"""The judges of notebook 06's training pieces: lr_at, configure_optimizer (train_step's are
in judges_train_step.py).

Registered as "training_judges.<name>" and named by the Judgements of
cases_training.py. lr_at's values are compared with the formula's, worked out
when the case was built, and with the known-wrong schedules'. configure_optimizer's answer is
its parameter groups, described by the harness (harness/toy.py: the names of the parameters in
each group and the group's settings).
"""

import math
import numbers

import numpy as np

from autograder.course.torch_shared.checks import explain
from autograder.judging import judge
from autograder.judging.base import Fail
from autograder.judging.compare import describe_encoded, error_message, fmt
from autograder.results import NOT_IMPLEMENTED

LR_TOL = {"rel": 1e-9, "abs": 1e-12}  # a formula of Python floats


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
            said = f"lr_at({shown}) raised {err.get('type')}: {err.get('message')}"
            step, warmup, total = args[0], args[2], args[3]
            if err.get("type") == "ZeroDivisionError" and step >= warmup == total - 1:
                # the cosine's span total_steps - 1 - warmup_steps is 0 at this call
                raise Fail(_message("cosine-division-by-zero", said), ["cosine-division-by-zero"])
            raise Fail(said)
        value = responses[0].decode(answer.get("value"))
        if isinstance(value, np.generic) and value.dtype.kind == "f":
            value = float(value)
        if not _number(value):
            said = (
                f"lr_at(step {args[0]}, ...) returned {describe_encoded(answer.get('value'))}; "
                "it should return "
                "a float (a number an optimizer's param_groups take as their lr)"
            )
            if _is_tensor(answer.get("value")):
                raise Fail(_message("tensor-not-float", said), ["tensor-not-float"])
            raise Fail(said + ".")
        got.append(float(value))
    if _same_rates(got, expected):
        return
    matches = [(id_, message) for id_, message, values in variants if _same_rates(got, values)]
    if matches and len({id_ for id_, _ in matches}) == 1:  # one cause, or none is named
        id_, message = matches[0]
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


def _is_tensor(encoded):
    """True if a wire-encoded value is a torch tensor (a 0-dim one included)."""
    return isinstance(encoded, dict) and "$tensor" in encoded


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
        said = (
            f"{what}: {', '.join(absent)} is in no parameter group, so it would never be "
            "trained: every parameter belongs to one of the two groups"
            + (
                ". Here the norm is a layer norm of the course's own kind (notebook 05's "
                "LayerNorm), not nn.LayerNorm"
                if norm
                else ""
            )
        )
        raise Fail(_message("param-in-no-group", said), ["param-in-no-group"])
    decays = {n: _wd(seen[n][0]) for n in dims}
    small = [n for n in dims if dims[n] < 2]
    large = [n for n in dims if dims[n] >= 2]
    decayed_small = sorted(n for n in small if decays[n] != 0.0)
    if decayed_small:
        shown = ", ".join(decayed_small)
        said = f"{what}: {shown} decay with weight_decay {fmt(decays[decayed_small[0]])}"
        if all(_close(decays[n], weight_decay) for n in small) and all(
            decays[n] == 0.0 for n in large
        ):
            said += ", and the matrices and embeddings do not decay at all"
            raise Fail(_message("decay-groups-swapped", said), ["decay-groups-swapped"])
        raise Fail(_message("decay-on-biases", said), ["decay-on-biases"])
    undecayed = sorted(n for n in large if not _close(decays[n], weight_decay))
    if undecayed:
        tables = [n for n in undecayed if "emb" in n]
        only_tables = bool(tables) and len(tables) == len(undecayed)
        kind = "the embedding tables" if only_tables else "matrices"
        said = (
            f"{what}: {', '.join(undecayed)} ({kind}, with dim >= 2) decay by "
            f"{fmt(decays[undecayed[0]])}; every parameter with dim >= 2, embeddings "
            f"included, decays by weight_decay = {fmt(weight_decay)}"
        )
        if all(_close(decays[n], weight_decay * lr) for n in undecayed):
            raise Fail(_message("weight-decay-times-lr", said), ["weight-decay-times-lr"])
        if all(decays[n] == 0.0 for n in undecayed):
            id_ = "decay-skips-embeddings" if only_tables else "decay-skips-matrices"
            raise Fail(_message(id_, said), [id_])
        raise Fail(said + ".")
    for group in got["groups"]:
        if group["names"] and not _close(group.get("lr"), lr):
            said = f"{what}: a group's learning rate is {group.get('lr')}; expected {fmt(lr)}"
            if _close(group.get("lr"), ADAMW_DEFAULT_LR):
                raise Fail(_message("optimizer-lr-ignored", said), ["optimizer-lr-ignored"])
            raise Fail(said + ".")
        got_betas = group.get("betas")
        if group["names"] and not _same_betas(got_betas, betas):
            said = f"{what}: the optimizer's betas are {got_betas}; expected {tuple(betas)}" + (
                " (GPT-2's (0.9, 0.95) by default)" if betas == [0.9, 0.95] else ""
            )
            # AdamW's own default, or the notebook's default when others were asked for
            if _same_betas(got_betas, ADAMW_DEFAULT_BETAS) or _same_betas(got_betas, [0.9, 0.95]):
                raise Fail(_message("optimizer-betas-ignored", said), ["optimizer-betas-ignored"])
            raise Fail(said + ".")


ADAMW_DEFAULT_LR = 1e-3  # torch.optim.AdamW's defaults, what an argument not passed on gives
ADAMW_DEFAULT_BETAS = [0.9, 0.999]


def _same_betas(got, want):
    return (
        isinstance(got, list)
        and len(got) == 2
        and all(_close(g, b) for g, b in zip(got, want, strict=True))
    )


def _wd(group):
    value = group.get("weight_decay")
    return float(value) if _number(value) else float("nan")


def _close(a, b):
    return _number(a) and math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-15)
