"""Plain data on disk: JSON with arrays as .npy files (never pickles).

encode() turns a value into JSON-able data, saving arrays beside it; decode() does the reverse.
A value from student code that is not plain data (an ndarray subclass, an object with a forged
__eq__, a tensor) is converted into plain data or described by its type name: the parent never
receives an object of the student's.
"""

import json
import math
import os
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

try:  # the grading parent: never follow a path the student controls (see safe_files)
    from autograder import safe_files
except ImportError:  # inside the sandbox the stub package has none; the harness reads requests
    safe_files = None  # type: ignore[assignment]  # checked before each use

MAX_JSON_BYTES = 8 * 2**20  # one response.json (arrays are separate files)
MAX_ARRAY_BYTES = 64 * 2**20  # one .npy file
# A request's arrays in one file, one .npy record after another, named "#0", "#1", ... in its
# JSON: the parent writes some 750 arrays per student, and one file each (created, copied into
# the sandbox, removed) cost it about 0.7 CPU-s per student, mostly in the file system. Only
# requests are packed (written by the parent, read by the harness); responses, which the parent
# reads from untrusted hands, stay one file an array, read by safe_files.
PACKED = "arrays.npys"


def _type_name(obj: object) -> str:
    t = type(obj)
    return t.__name__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


class Writer:
    def __init__(self, directory: Path | str, packed: bool = False) -> None:
        self.directory = Path(directory)
        self.arrays = self.directory / "arrays"
        self.count = 0
        self.packed: list[np.ndarray] | None = (
            [] if packed else None
        )  # arrays for PACKED, written by write_json

    def _save_array(self, arr: np.ndarray) -> str:
        if self.packed is not None:
            self.packed.append(arr)
            return f"#{len(self.packed) - 1}"
        if self.count == 0:  # the first array makes the folder (one mkdir, not one per array)
            self.arrays.mkdir(parents=True, exist_ok=True)
        name = f"a{self.count}"
        self.count += 1
        np.save(self.arrays / f"{name}.npy", arr, allow_pickle=False)
        return name

    def encode(self, obj: Any, depth: int = 0) -> Any:  # any value a student returns
        if depth > 20:
            return {"$object": _type_name(obj), "repr": "<nested too deep>"}
        if obj is None or type(obj) in (bool, str):  # exact types: no student subclasses
            return obj
        if type(obj) is int:
            return obj if abs(obj) < 2**53 else {"$object": "int", "repr": str(obj)[:100]}
        if type(obj) is float:
            return obj if math.isfinite(obj) else {"$float": repr(obj)}
        if isinstance(obj, np.generic) and obj.dtype.kind in "biuf":
            return {"$scalar": self._save_array(np.asarray(obj.item())), "type": _type_name(obj)}
        if isinstance(obj, np.ndarray):
            arr = np.array(obj, copy=True, subok=False)  # drops any subclass
            if arr.dtype.kind not in "biufc":
                return {"$object": _type_name(obj), "repr": f"array of dtype {arr.dtype}"}
            return {"$array": self._save_array(arr), "type": _type_name(obj)}
        torch = _torch_if_loaded()
        if torch is not None and isinstance(obj, torch.Tensor):
            t = obj.detach().cpu()
            if t.dtype == torch.bfloat16 or t.dtype == torch.float16:
                t = t.float()
            return {
                "$tensor": self._save_array(np.array(t.numpy(), copy=True)),
                "type": _type_name(obj),
                "dtype": str(obj.dtype).replace("torch.", ""),
                "requires_grad": bool(obj.requires_grad),
                "has_grad_fn": obj.grad_fn is not None,
            }
        if type(obj) in (list, tuple):
            items = [self.encode(x, depth + 1) for x in obj[:100_000]]
            return items if type(obj) is list else {"$tuple": items}
        if type(obj) is dict:
            return {
                "$dict": [
                    [self.encode(k, depth + 1), self.encode(v, depth + 1)] for k, v in obj.items()
                ]
            }
        try:
            shown = repr(obj)[:200]
        except Exception:  # a student's __repr__ may raise
            shown = "<unprintable>"
        return {"$object": _type_name(obj), "repr": shown}

    def write_json(self, name: str, payload: object) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        if self.packed:
            with open(self.directory / PACKED, "wb") as handle:
                for arr in self.packed:
                    np.lib.format.write_array(handle, arr, allow_pickle=False)
        tmp = self.directory / f".{name}.tmp"
        tmp.write_text(json.dumps(payload))
        tmp.replace(self.directory / name)


def _torch_if_loaded() -> ModuleType | None:
    import sys

    return sys.modules.get("torch")


class Reader:
    """Decodes what a Writer wrote. as_tensors=True rebuilds tensors (inside the harness only).

    In the parent, `root` is a folder the parent trusts and `directory` lies below it: every
    component below `root` is opened without following links, only regular files under a size
    cap are read, and an array's name cannot leave the folder (autograder.safe_files). Whatever
    is refused raises safe_files.UnsafeFile (a ValueError) with a message for the student.
    """

    def __init__(
        self,
        directory: Path | str,
        as_tensors: bool = False,
        root: Path | str | None = None,
        packed: bool = False,
    ) -> None:
        self.directory = Path(directory)
        self.as_tensors = as_tensors
        self.root = Path(root) if root is not None else self.directory
        self.below = self.directory.relative_to(self.root).parts
        self.packed = packed  # a request (the harness): "#k" names the k-th array of PACKED
        self._unpacked: list[np.ndarray] | None = None

    def _packed_array(self, name: str) -> np.ndarray:
        if self._unpacked is None:
            arrays = []
            with open(self.directory / PACKED, "rb") as handle:
                size = os.fstat(handle.fileno()).st_size
                while handle.tell() < size:
                    arrays.append(np.lib.format.read_array(handle, allow_pickle=False))
            self._unpacked = arrays
        return self._unpacked[int(name[1:])].copy()  # a fresh array each time, as np.load's

    def load_array(self, name: str) -> np.ndarray:
        if self.packed and isinstance(name, str) and name.startswith("#"):
            return self._packed_array(name)
        if safe_files is None:
            return np.load(self.directory / "arrays" / f"{name}.npy", allow_pickle=False)
        safe_files.check_name(name)
        return safe_files.load_npy(
            self.root, [*self.below, "arrays", f"{name}.npy"], MAX_ARRAY_BYTES, f"array {name}"
        )

    def read_json(self, name: str) -> Any:
        if safe_files is None:
            return json.loads((self.directory / name).read_text())
        return safe_files.read_json(self.root, [*self.below, name], MAX_JSON_BYTES, name)

    def decode(self, data: object) -> Any:
        if isinstance(data, list):
            return [self.decode(x) for x in data]
        if not isinstance(data, dict):
            return data
        if "$array" in data:
            return self.load_array(data["$array"])
        if "$scalar" in data:
            return self.load_array(data["$scalar"])[()]
        if "$tensor" in data:
            arr = self.load_array(data["$tensor"])
            if not self.as_tensors:
                return arr
            import torch

            t = torch.from_numpy(arr)
            if data.get("requires_grad"):
                t.requires_grad_(True)
            return t
        if "$float" in data:
            return float(data["$float"])
        if "$tuple" in data:
            return tuple(self.decode(x) for x in data["$tuple"])
        if "$dict" in data:
            return {_hashable(self.decode(k)): self.decode(v) for k, v in data["$dict"]}
        if "$object" in data:
            return Opaque(data["$object"], data.get("repr", ""))
        return {k: self.decode(v) for k, v in data.items()}


def _hashable(key: object) -> object:
    return tuple(key) if isinstance(key, list) else key


class Opaque:
    """Stands for a value the student returned that is not plain data: only its type and repr."""

    def __init__(self, type_name: str, shown: str) -> None:
        self.type_name = type_name
        self.shown = shown

    def __repr__(self) -> str:
        return f"<{self.type_name}: {self.shown}>"
