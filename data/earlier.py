"""Use your own answers from earlier notebooks, and say kindly when one is missing.

Notebook 04 builds multi-head attention on the scaled_dot_product_attention YOU wrote in
notebook 03, which calls the softmax YOU wrote in notebook 02:

    import_earlier(
        {
            "02_dot_product_softmax.ipynb": ["softmax"],
            "03_matrix_attention.ipynb": ["attention_scores", "scaled_dot_product_attention"],
        },
        globals(),
    )

Each notebook is read with import_definitions (only its imports, functions, classes and plain
constants run), in the order given, and the names taken from the earlier ones are visible to the
later ones, as if they were one module: notebook 03's scaled_dot_product_attention finds notebook
02's softmax. A notebook's own definition of a name wins (say you pasted a softmax into 03).

It never raises. A notebook that cannot be found, a name it does not define, or a definition that
fails to run is reported in a printed note saying what to do, and the name becomes a placeholder
that raises NotImplementedError: the cells that use it wait, as for an unfinished exercise. A
placeholder carries `course_unavailable` = {"notebook": file name, "why": "missing" |
"unreadable" | "undefined" | "failed"}, so the course's checks can say "your notebook 02 is
missing" rather than "not implemented".
"""

import json
from pathlib import Path

from .notebooks import _notebook_label, import_definitions

__all__ = ["import_earlier"]


def _placeholder(name, label, reason, notebook="", why="failed"):
    """A function called `name` that raises NotImplementedError saying where `name` comes from,
    marked with why it stands in (see the module's docstring)."""
    if not name.isidentifier():
        raise ValueError(f"{name!r} is not a Python name")
    message = f"{name} comes from your {label}, which could not be used: {reason}"
    source = f"def {name}(*args, **kwargs):\n    raise NotImplementedError({message!r})\n"
    namespace = {}
    # compiled under a name of its own, so tracebacks (and the checks) show it as `name`
    exec(compile(source, f"<{name}: not imported from {label}>", "exec"), namespace)
    namespace[name].course_unavailable = {"notebook": Path(notebook).name, "why": why}
    return namespace[name]


def _module_globals(obj):
    """The globals of the notebook module obj was defined in (a function's or a method's)."""
    if hasattr(obj, "__globals__"):
        return obj.__globals__
    for attribute in vars(obj).values() if isinstance(obj, type) else ():
        function = getattr(attribute, "__func__", attribute)
        if hasattr(function, "__globals__"):
            return function.__globals__
    return None


def import_earlier(sources, namespace=None, quiet=False):
    """Put your own definitions from earlier notebooks into `namespace` (pass globals()).

    sources: {notebook file: [names]}, earliest first. Returns {name: object}, with a placeholder
    (raising NotImplementedError) for every name that could not be imported. Prints a note for
    every problem and, unless quiet, one line saying what was imported.
    """
    found, notes, imported = {}, [], []
    for notebook, names in sources.items():
        names = [names] if isinstance(names, str) else list(names)
        label = _notebook_label(Path(notebook))
        try:
            defined = import_definitions(notebook)  # all of them: the names are checked below
        except Exception as err:  # noqa: BLE001 - a student's notebook may fail in any way
            reason, why = str(err), "missing"
            if not isinstance(err, FileNotFoundError):
                reason = f"running its definitions raised {type(err).__name__}: {err}"
                unreadable = isinstance(err, json.JSONDecodeError | UnicodeDecodeError)
                why = "unreadable" if unreadable else "failed"
            notes.append(f"⚠️ Could not use {label} for {', '.join(names)}.\n{reason}")
            found.update({name: _placeholder(name, label, reason, notebook, why) for name in names})
            continue
        missing = [name for name in names if name not in defined]
        if missing:
            reason = (
                f"{Path(notebook).name} does not define {', '.join(missing)}. Finish "
                f"{', '.join(missing)} in {label}, or paste your definition into a cell here."
            )
            notes.append(f"⚠️ {reason}")
            found.update(
                {name: _placeholder(name, label, reason, notebook, "undefined") for name in missing}
            )
        # this notebook's functions see the names taken from the earlier ones (its own win)
        shared = {id(g): g for g in map(_module_globals, defined.values()) if g is not None}
        for module_globals in shared.values():
            for name, obj in found.items():
                module_globals.setdefault(name, obj)
        here = [name for name in names if name in defined]
        found.update({name: defined[name] for name in here})
        if here:
            imported.append(f"{', '.join(here)} ({label})")
    if namespace is not None:
        namespace.update(found)
    for note in notes:
        print(note)
    if imported and not quiet:
        print("Using your own", "; ".join(imported))
    return found
