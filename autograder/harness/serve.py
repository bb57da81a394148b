"""Carry out each request of a directory against a namespace; write one response per request.

Ops (request.json's "op"):
  call    target(*args, **kwargs); answers the value, the error, and the args after the call
          (so the parent can see whether inputs were modified in place); with "backward" (a
          cotangent), also the gradients of (value * cotangent).sum() that reached the args.
  object  build target(*init_args, **init) then run "steps" on it: {"attr": name} reads an
          attribute, {"method": name, "args", "kwargs"} calls one. Each step answers alone.
  module  build an nn.Module target(**init), load "state" into the parameters named by SPEC,
          optionally add "jitter" ({"seed", "std"}: Gaussian noise on every parameter, so a
          weight initialised to zero, such as a position table, takes part), then
          run "method" (default forward) in "mode" (eval/train), optionally backpropagate a
          cotangent through output "backward_output" and answer gradients of the inputs and of
          the parameters, plus the module's own state_dict names and shapes. With "roles"
          instead of "state", weights by role whatever the parameters' names (roles.py), and
          with "parts" ({"x", "mask"}) also its own blocks' and final norm's outputs on x.
  train   train a language model class target(**init), one AdamW step per batch of "windows"
          (the parent's batches of token windows); answers the model's logits on
          "eval_idx" before and after training (never a loss: the parent computes that).
  calls   target(*args, **kwargs) for each [args, kwargs] of "calls"; each answers alone.
  optimizer  target(model, *args, **kwargs) on a toy model ("model", see toy.tiny_lm);
          answers its parameter groups as plain data (toy.optimizer_groups).
  step    target(model, optimizer, *args, **kwargs) on a toy model with an SGD optimizer;
          answers what it returned and did (toy.one_step).
  load    build the namespace's class "model" (**"init", seeded), call target(model, "state")
          (a loader such as notebook 08's load_hf_llama), then run the model it was given on
          "args" in eval mode: answers those outputs, and whether the loader returned that model.
A call's answer also says, for each argument that is a module, whether it is in train mode
after the call ("training_after").
Values may also be {"$ref": name} (an object of the namespace), {"$generator": seed} (a seeded
torch.Generator), {"$toy_lm": {...}} (a fixed bigram model, see toy.py), {"$toy_cached_lm":
{...}} (the same with positions and a cache, toy_cached.py), {"$slice": [value,
[[start, stop], ...]]} (value[start:stop, ...], a view: how the notebooks pass logits[:, 2:],
which is not contiguous) or {"$repeat": [tensor, copies]} (copies of a tensor stacked along its
first axis, e.g. one sequence many times for dropout's statistics).
"""

import signal
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from .wire import Reader, Writer


class RequestTimeout(BaseException):  # BaseException: a student's `except Exception` can't eat it
    pass


# a request's wall backstop, x its CPU seconds: the default of Limits.request_wall_factor
# (autograder/sandbox/limits.py; tests/sandbox/test_inside_constants.py pins the two together)
WALL_FACTOR = 4.0


# graded name -> the request folder of its first timeout, in this kernel: a function that has
# run out of time once is not called again with a fresh budget by every later test of it (each
# of them answers a Timeout at once, "after" that first one)
TIMED_OUT: dict[str, str] = {}


def _alarm(signum, frame):
    raise RequestTimeout()


class _Deadline:
    """A request's time limit: `seconds` of the kernel's CPU time (ITIMER_PROF), so a busy
    machine, which slows a call without making it use more CPU, never times out a correct
    answer; and `wall_factor` times as many wall seconds (ITIMER_REAL) for a call that waits
    instead of computing (Limits.request_wall_factor, sent by the driver; WALL_FACTOR for the
    visible checks). Either raises RequestTimeout in the call."""

    def __init__(self, seconds: float | None, wall_factor: float = WALL_FACTOR) -> None:
        self.seconds = seconds or 0.0  # used only when armed
        self.armed = seconds and threading.current_thread() is threading.main_thread()
        self.timers = (
            (signal.ITIMER_PROF, signal.SIGPROF, 1),
            (signal.ITIMER_REAL, signal.SIGALRM, wall_factor),
        )

    def __enter__(self) -> None:
        if self.armed:
            self.previous = []
            for timer, signum, factor in self.timers:
                self.previous.append(signal.signal(signum, _alarm))
                signal.setitimer(timer, self.seconds * factor)

    def __exit__(self, *exc) -> None:
        if self.armed:
            for (timer, signum, _), previous in zip(self.timers, self.previous, strict=True):
                signal.setitimer(timer, 0)
                signal.signal(signum, previous)


class _OneThread:
    """torch on one thread during a request: the tests' tensors are tiny, and on a loaded
    machine (graders in parallel) torch's thread pool made them 10-15 times slower."""

    def __enter__(self) -> None:
        self.torch = sys.modules.get("torch")
        if self.torch is not None:
            self.threads = self.torch.get_num_threads()
            self.torch.set_num_threads(1)

    def __exit__(self, *exc) -> None:
        if self.torch is not None:
            self.torch.set_num_threads(self.threads)


def _error(exc: BaseException | LookupError) -> dict[str, list[str] | str] | dict[str, str]:
    if isinstance(exc, RequestTimeout):
        return {"type": "Timeout", "message": "the call did not finish in time"}
    here = str(Path(__file__).parent)
    where = []  # the student's own frames: not the harness, not an installed library
    for frame, lineno in traceback.walk_tb(exc.__traceback__):
        filename = frame.f_code.co_filename
        if filename.startswith(here) or "-packages" in filename or "/lib/python" in filename:
            continue
        owner = frame.f_locals.get("self")
        name = frame.f_code.co_name
        if owner is not None and name != "<module>":
            name = f"{type(owner).__name__}.{name}"
        where.append(f"line {lineno} in {name}")
    where = where[-3:]
    message = str(exc)
    answer: dict[str, str | list[str]] = {
        "type": type(exc).__name__,
        "message": message[:500] + (" ..." if len(message) > 500 else ""),
        "where": where,
    }
    undefined = getattr(exc, "name", None) if isinstance(exc, NameError) else None
    if isinstance(undefined, str) and len(undefined) <= 100:
        answer["name"] = (
            undefined  # which name was undefined, as data (the grader reads no message)
        )
    return answer


class Session:
    def __init__(
        self,
        namespace: dict[str, Any],
        request_dir: Path,
        response_dir: Path,
        wall_factor: float | None = None,
    ) -> None:
        self.namespace = namespace
        self.wall_factor = WALL_FACTOR if wall_factor is None else wall_factor
        self.reader = Reader(request_dir, as_tensors=True, packed=True)
        self.writer = Writer(response_dir)

    def value(self, data: object) -> Any:
        """Decode a request value, resolving the harness's own special forms."""
        if isinstance(data, list):
            return [self.value(x) for x in data]
        if isinstance(data, dict):
            if "$ref" in data:
                return self.lookup(data["$ref"])
            if "$generator" in data:
                import torch

                return torch.Generator().manual_seed(int(data["$generator"]))
            if "$toy_lm" in data:
                from .toy import ToyLM

                return ToyLM(**self.value(data["$toy_lm"]))
            if "$toy_cached_lm" in data:
                from .toy_cached import ToyCachedLM

                return ToyCachedLM(**self.value(data["$toy_cached_lm"]))
            if "$tuple" in data:
                return tuple(self.value(x) for x in data["$tuple"])
            if "$slice" in data:
                value, bounds = data["$slice"]
                return self.value(value)[tuple(slice(*b) for b in bounds)]
            if "$repeat" in data:
                value, copies = data["$repeat"]
                value = self.value(value)
                return value.repeat(int(copies), *[1] * (value.ndim - 1))
            if not any(k.startswith("$") for k in data):
                return {k: self.value(v) for k, v in data.items()}
        return self.reader.decode(data)

    def lookup(self, name: str) -> Any:
        if name not in self.namespace:
            raise LookupError(f"MISSING:{name}")
        return self.namespace[name]

    def encode(self, obj: object) -> Any:
        return self.writer.encode(obj)

    def run(self, request: dict[str, Any]) -> dict[str, Any]:
        op = request["op"]
        started = time.perf_counter()
        try:
            with _Deadline(request.get("seconds"), self.wall_factor), _OneThread():
                answer = getattr(self, f"op_{op}")(request)
        except LookupError as exc:
            if str(exc).startswith("MISSING:"):
                answer = {"missing": str(exc)[len("MISSING:") :]}
            else:
                answer = {"error": _error(exc)}
        except BaseException as exc:  # noqa: BLE001 - everything the student's code raises is data
            if isinstance(exc, KeyboardInterrupt):
                raise
            answer = {"error": _error(exc)}
        answer["seconds"] = time.perf_counter() - started
        return answer

    def _call(self, fn, args, kwargs, keep=None):
        try:
            out = fn(*args, **kwargs)
            if keep is not None:
                keep.append(out)
            return {"value": self.encode(out)}
        except RequestTimeout:
            raise
        except BaseException as exc:  # noqa: BLE001
            if isinstance(exc, KeyboardInterrupt):
                raise
            return {"error": _error(exc)}

    def op_call(self, request: dict[str, Any]) -> dict[str, Any]:
        fn = self.lookup(request["target"])
        args = self.value(request.get("args", []))
        kwargs = self.value(request.get("kwargs", {}))
        kept: list[object] = []  # what the call returned (its input gradients, if asked)
        answer = self._call(fn, args, kwargs, kept)
        if request.get("backward") is not None and kept:
            answer.update(self._input_grads(kept[0], args, request["backward"]))
        answer["args_after"] = [self.encode(a) for a in args]
        answer["training_after"] = [
            a.training if isinstance(getattr(a, "training", None), bool) else None for a in args
        ]
        return answer

    def op_calls(self, request: dict[str, Any]) -> dict[str, Any]:
        fn = self.lookup(request["target"])
        return {
            "calls": [
                self._call(fn, self.value(args), self.value(kwargs))
                for args, kwargs in request["calls"]
            ]
        }

    def op_optimizer(self, request: dict[str, Any]) -> dict[str, Any]:
        from .toy import optimizer_groups

        fn = self.lookup(request["target"])
        args, kwargs = self.value(request.get("args", [])), self.value(request.get("kwargs", {}))
        return {
            "value": self.encode(optimizer_groups(fn, self.value(request["model"]), args, kwargs))
        }

    def op_step(self, request: dict[str, Any]) -> dict[str, Any]:
        from .toy import one_step

        fn = self.lookup(request["target"])
        args, kwargs = self.value(request.get("args", [])), self.value(request.get("kwargs", {}))
        model, lr = self.value(request["model"]), request["lr"]
        return {"value": self.encode(one_step(fn, model, lr, args, kwargs, request.get("seed", 0)))}

    def _input_grads(self, out, args, cotangent):
        """Backpropagate (out * cotangent).sum(); the gradients that reached the tensor args."""
        import torch

        try:
            (out * self.value(cotangent).to(out.dtype)).sum().backward()
        except RequestTimeout:
            raise
        except BaseException as exc:  # noqa: BLE001
            if isinstance(exc, KeyboardInterrupt):
                raise
            return {"backward_error": _error(exc)}
        return {
            "input_grads": [
                self.encode(a.grad) if isinstance(a, torch.Tensor) else None for a in args
            ]
        }

    def op_object(self, request: dict[str, Any]) -> dict[str, Any]:
        obj = self.lookup(request["target"])(
            *self.value(request.get("init_args", [])), **self.value(request.get("init", {}))
        )
        steps = []
        for step in request.get("steps", []):
            if "attr" in step:
                steps.append(self._call(lambda name=step["attr"]: getattr(obj, name), [], {}))
            else:
                method = getattr(obj, step["method"], None)
                if method is None:
                    steps.append({"missing": f"{request['target']}.{step['method']}"})
                    continue
                args = self.value(step.get("args", []))
                steps.append(self._call(method, args, self.value(step.get("kwargs", {}))))
        return {"steps": steps}

    def op_module(self, request: dict[str, Any]) -> dict[str, Any]:
        import torch

        torch.manual_seed(request.get("seed", 0))
        module = self.lookup(request["target"])(**self.value(request.get("init", {})))
        own = {name: tuple(t.shape) for name, t in module.state_dict().items()}
        answer = {"state_names": self.encode({k: list(v) for k, v in own.items()})}
        state = self.value(request.get("state", {}))
        absent = sorted(set(state) - set(own))
        wrong = sorted(k for k in state if k in own and tuple(state[k].shape) != own[k])
        if absent or wrong:
            answer["state_mismatch"] = {"absent": absent, "wrong_shape": wrong}
            return answer
        with torch.no_grad():
            for name, tensor in module.state_dict().items():
                if name in state:
                    tensor.copy_(state[name].to(tensor.dtype))
        placed = None
        if request.get("roles") is not None:  # weights by role, whatever the names (roles.py)
            from .roles import RoleMismatch, load_roles

            try:
                placed = load_roles(module, self.value(request["roles"]))
            except RoleMismatch as exc:
                answer["role_mismatch"] = self.encode(exc.facts)
                return answer
            answer["tied"] = placed["tied"]
            answer["distinct_blocks"] = len({id(b) for b in placed["blocks"]})
        jitter = request.get("jitter")
        if jitter:
            noise = torch.Generator().manual_seed(int(jitter["seed"]))
            with torch.no_grad():
                for param in module.parameters():
                    param.add_(
                        torch.randn(param.shape, generator=noise, dtype=param.dtype)
                        * float(jitter["std"])
                    )
        dtype = request.get("dtype")
        if dtype:
            module = module.to(getattr(torch, dtype))
        module.train(request.get("mode", "eval") == "train")
        args = self.value(request.get("args", []))
        kwargs = self.value(request.get("kwargs", {}))
        method = getattr(module, request.get("method", "forward"))
        try:
            out = method(*args, **kwargs)
        except RequestTimeout:
            raise
        except BaseException as exc:  # noqa: BLE001
            if isinstance(exc, KeyboardInterrupt):
                raise
            answer["error"] = _error(exc)
            return answer
        answer["value"] = self.encode(out)
        if placed is not None and request.get("parts") is not None:
            answer["parts"] = self._parts(placed, self.value(request["parts"]))
        cotangent = request.get("backward")
        if cotangent is not None:
            index = request.get("backward_output")
            y = out if index is None else out[index]
            try:
                (y * self.value(cotangent).to(y.dtype)).sum().backward()
            except BaseException as exc:  # noqa: BLE001
                if isinstance(exc, (KeyboardInterrupt, RequestTimeout)):
                    raise
                answer["backward_error"] = _error(exc)
                return answer
            answer["input_grads"] = [
                self.encode(a.grad) if isinstance(a, torch.Tensor) else None for a in args
            ]
            answer["param_grads"] = self.encode(
                {n: p.grad for n, p in module.named_parameters() if p.grad is not None}
            )
            # the trainable parameters by name: the parent sees which got no gradient tensor
            answer["params"] = [n for n, p in module.named_parameters() if p.requires_grad]
        return answer

    def _parts(self, placed, parts):
        """The outputs of a model's own blocks and final norm (as load_roles found them) on
        parts["x"], in eval mode: evidence of which part of notebook 05 is wrong. Only for
        the course's own classes (TransformerBlock, LayerNorm), which take our mask convention."""
        import torch

        out: dict[str, Any] = {"blocks": [], "norm_first": [], "ln_f": None}
        with torch.no_grad():
            for block in placed["blocks"]:
                if type(block).__name__ != "TransformerBlock":
                    return out
                flag = getattr(block, "norm_first", None)
                out["norm_first"].append(flag if isinstance(flag, bool) else None)
                out["blocks"].append(self._call(block.eval(), [parts["x"], parts["mask"]], {}))
            ln_f = placed["ln_f"]
            if ln_f is not None and type(ln_f).__name__ == "LayerNorm":
                out["ln_f"] = self._call(ln_f.eval(), [parts["x"]], {})
        return out

    def op_load(self, request: dict[str, Any]) -> dict[str, Any]:
        import torch

        torch.manual_seed(request.get("seed", 0))
        model = self.lookup(request["model"])(**self.value(request.get("init", {})))
        loader, state = self.lookup(request["target"]), self.value(request["state"])
        before = dict(state)  # graded functions never modify their inputs: compare afterwards
        copies = {k: t.clone() for k, t in state.items() if isinstance(t, torch.Tensor)}
        try:
            returned = loader(model, state)
        except RequestTimeout:
            raise
        except BaseException as exc:  # noqa: BLE001
            if isinstance(exc, KeyboardInterrupt):
                raise
            return {"error": _error(exc)}
        model.eval()
        with torch.no_grad():
            answer = self._call(model, self.value(request.get("args", [])), {})
        answer["returned_model"] = returned is model
        answer["inputs_modified"] = sorted(
            str(k)
            for k in set(before) | set(state)
            if k not in before
            or k not in state
            or state[k] is not before[k]
            or (k in copies and not torch.equal(state[k], copies[k]))
        )[:3]
        return answer

    def op_train(self, request: dict[str, Any]) -> dict[str, Any]:
        from .toy import train_lm

        cls = self.lookup(request["target"])
        return {"value": self.encode(train_lm(cls, **self.value(request["config"])))}


def serve(
    namespace: dict[str, Any],
    request_root: Path | str,
    response_root: Path | str,
    wall_factor: float | None = None,
) -> None:
    """Answer every request under request_root (one sub-directory each, in name order).
    wall_factor: each request's wall backstop as a multiple of its CPU seconds. A request whose
    target has timed out before in this kernel (TIMED_OUT) is not carried out: it answers a
    Timeout at once, naming the first."""
    request_root, response_root = Path(request_root), Path(response_root)
    for request_dir in sorted(p for p in request_root.iterdir() if p.is_dir()):
        session = Session(namespace, request_dir, response_root / request_dir.name, wall_factor)
        request = Reader(request_dir).read_json("request.json")
        target = request.get("target")
        answer: dict[str, Any]
        if isinstance(target, str) and target in TIMED_OUT:
            answer = {
                "error": {
                    "type": "Timeout",
                    "message": "not called: it ran out of time on an earlier test",
                    "after": TIMED_OUT[target],
                },
                "seconds": 0.0,
            }
        else:
            answer = session.run(request)
            if isinstance(target, str) and (answer.get("error") or {}).get("type") == "Timeout":
                TIMED_OUT.setdefault(target, f"{request_root.name}/{request_dir.name}")
        session.writer.write_json("response.json", answer)
