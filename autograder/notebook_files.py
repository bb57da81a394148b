"""Reading a notebook a student controls, in the trusted parent, with bounded cost; and the one
rule for which file names count as which notebook.

    nb, message = load_notebook(folder, "01_soft_lookup.ipynb")   # (NotebookNode | None, text)
    matched = match_name("02_dot_product_softmax (1).ipynb")      # Match(stem, exact=False)
    name = locate(folder, "02_dot_product_softmax.ipynb")         # the one file there, or None

Names the grader accepts (docs/instructors.md): a notebook's own file name, and near names that
can only mean it: another letter case, Colab's and Google Drive's `Copy of ` in front, and one
copy suffix a browser or a file manager adds (` (1)`, `(2)`, `-1`, ` copy`, ` - Copy`). Where a file sits (one extra folder, a zip's top
folder) is the folder walk's business (submissions.py). Only the name is compared: a file is
never looked for outside the student's own folder, and links are never followed.

Bytes, values and cells are all bounded before nbformat sees anything. The file is read through
safe_files (no link followed, a regular file of at most MAX_NOTEBOOK_BYTES) and decoded under
safe_files' bound on JSON values (a 5 MB file can hold 1.7 million empty objects). Then what
grading never uses is dropped from the plain decoded dict: outputs, attachments, execution
counts, and every metadata key but a cell's `tags` and the notebook's kernel and language
names (and, for nbgrader's autograded copy, a cell's `nbgrader` metadata: a few short
scalars). nbformat's reader (version conversion, validation) sees only this slim notebook: its
validation costs ~1 KB and ~30 us for every value it walks, so a metadata bomb within the value
bound once cost 470 MB and 10 CPU-s.
"""

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from autograder.curriculum import NOTEBOOKS
from autograder.safe_files import MB, UnsafeFile, parse_json, read_bytes

if TYPE_CHECKING:  # imported when a notebook is read (a v4 one needs none of it)
    from nbformat import NotebookNode

MAX_NOTEBOOK_BYTES = 20 * MB  # a notebook larger than this is not read (with a message)
MAX_CELLS = 5_000  # the course's notebooks have fewer than 100
MAX_TAGS = 50
_KEPT_NOTEBOOK_METADATA = ("kernelspec", "language_info")
CLEAR_OUTPUTS = "Clear the outputs (Kernel > Restart & Clear Output), save, and submit it again."


_STEMS = {nb.stem.casefold(): nb.stem for nb in NOTEBOOKS}
# one copy suffix, as browsers ("name (1).ipynb"), macOS ("name copy.ipynb", "name copy 2"),
# Windows ("name - Copy.ipynb", "name - Copy (2)") and some uploaders ("name-1.ipynb") add it
_COPY_SUFFIX = re.compile(
    r"(?: ?\(\d{1,3}\)| copy(?: \d{1,3})?| - copy(?: \(\d{1,3}\))?|-\d{1,3})$"
)
# Colab's "File > Save a copy in Drive" and Google Drive's "Make a copy" ("Copy of name.ipynb")
_COPY_PREFIX = "copy of "
MAX_LISTED = 5_000  # entries of a folder looked at by locate()


@dataclass(frozen=True)
class Match:
    stem: str  # the course notebook the name means, e.g. "02_dot_product_softmax"
    exact: bool  # the name is the notebook's own file name, byte for byte


def match_name(name: str) -> Match | None:
    """The Match of a file name (no folder), or None when it names no course notebook.

    Exact: "02_dot_product_softmax.ipynb". Near: any letter case, with at most one `Copy of `
    in front and at most one copy suffix before the extension ("Copy of 02_dot_product_softmax
    (1).ipynb", "02_Dot_Product_Softmax.IPYNB")."""
    if not isinstance(name, str) or not name.casefold().endswith(".ipynb"):
        return None
    base = name[: -len(".ipynb")].casefold().removeprefix(_COPY_PREFIX)
    stem = _STEMS.get(base) or _STEMS.get(_COPY_SUFFIX.sub("", base, count=1))
    if stem is None:
        return None
    return Match(stem, exact=name == f"{stem}.ipynb")


def locate(folder: Path | str, filename: str) -> str | None:
    """The file name in `folder` (its top level) to read as the notebook `filename`: the name
    itself when an entry has it, else the one entry with a near name (match_name), else None
    (none, or several). Entries are names only: nothing is opened or followed here."""
    stem = filename[: -len(".ipynb")]
    try:
        os.lstat(os.path.join(folder, filename))
        return filename
    except OSError:
        pass
    near = []
    try:
        with os.scandir(folder) as scan:
            for i, entry in enumerate(scan):
                if i >= MAX_LISTED:
                    return None
                matched = match_name(entry.name)
                if matched is not None and matched.stem == stem:
                    near.append(entry.name)
    except OSError:
        return None
    return near[0] if len(near) == 1 else None


def load_notebook(
    folder: Path | str,
    filename: str,
    max_bytes: int = MAX_NOTEBOOK_BYTES,
    nbgrader_metadata: bool = False,
) -> tuple["NotebookNode | None", str]:
    """(NotebookNode or None, message for the student or ""). Never raises.

    The notebook returned has no outputs and only the metadata grading uses (with
    nbgrader_metadata, also each cell's `nbgrader` metadata when it is a few short scalars); it
    holds a code cell with source (otherwise None and why)."""
    try:
        return _load_notebook(folder, filename, max_bytes, nbgrader_metadata)
    except (RecursionError, MemoryError) as exc:
        return (
            None,
            f"{filename} could not be read: it is too large or too deeply nested "
            f"({type(exc).__name__}).",
        )
    except Exception as exc:  # noqa: BLE001 - a file we cannot read is that student's message
        return (
            None,
            f"{filename} could not be read as a notebook ({type(exc).__name__}: {str(exc)[:120]}).",
        )


def _load_notebook(folder, name, max_bytes, nbgrader_metadata=False):
    import nbformat

    try:
        raw = read_bytes(folder, [name], max_bytes)
    except UnsafeFile as exc:
        if exc.kind == "symlink":
            return None, f"{name} is a symbolic link; upload the file itself."
        if exc.kind == "too-large":
            return None, f"{exc.message}: a notebook this large is not graded. {CLEAR_OUTPUTS}"
        if exc.kind in ("special", "directory"):
            return None, f"{exc.message}; upload the notebook file itself."
        return None, f"{name} could not be read ({exc.message})."
    if not raw.strip():
        return None, f"{name} is empty (0 bytes): save the notebook in Jupyter and submit it again."
    try:
        data = parse_json(raw.decode("utf-8", errors="replace"), name)
    except UnsafeFile as exc:
        if exc.kind == "too-deep":
            return None, f"{name} is not a notebook Jupyter saved: {exc.message}."
        if exc.kind == "too-many":
            return None, (
                f"{exc.message}: it is not graded (a notebook Jupyter saves holds far fewer). "
                + CLEAR_OUTPUTS
            )
        return None, (
            f"{name} is not a valid notebook file ({exc.message}). "
            "Was it saved from Jupyter, or renamed from another file?"
        )
    del raw
    if not isinstance(data, dict) or "nbformat" not in data:
        return None, f"{name} is JSON but not a Jupyter notebook (no nbformat field)."
    problem = _slim(data, nbgrader_metadata)
    if problem:
        return None, f"{name} {problem}"
    message = ""
    try:
        version = int(data.get("nbformat", 0))
        nb = nbformat.reads(json.dumps(data), as_version=4)
        if version != 4:
            message = f"{name} was saved in notebook format v{version}; it was converted to v4."
    except Exception as exc:  # noqa: BLE001 - nbformat raises many kinds
        return (
            None,
            f"{name} could not be read as a notebook ({type(exc).__name__}: {str(exc)[:120]}).",
        )
    try:
        nbformat.validator.normalize(nb)
    except Exception:  # noqa: BLE001
        pass
    cells = nb.get("cells")
    if not isinstance(cells, list):
        return None, f"{name} has no list of cells, so none of its functions are defined."
    for cell in cells:
        if not isinstance(cell, dict):
            return None, f"{name} has a cell that is not a cell object; save it again in Jupyter."
        if cell.get("cell_type") == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
            if not isinstance(cell.get("source", ""), str):
                return None, f"{name} has a code cell whose source is not text."
    if not any(c.get("cell_type") == "code" and c.get("source", "").strip() for c in cells):
        return None, f"{name} has no code cells, so none of its functions are defined."
    return nb, message


def _slim(data, nbgrader_metadata=False) -> str:
    """Drop, in place, what grading never reads; "" or why the notebook is refused."""
    metadata = data.get("metadata")
    data["metadata"] = {
        key: value
        for key, value in (metadata.items() if isinstance(metadata, dict) else ())
        if key in _KEPT_NOTEBOOK_METADATA and _small_names(value)
    }
    cell_lists = []
    if isinstance(data.get("cells"), list):  # v4
        cell_lists.append(data["cells"])
    for sheet in data.get("worksheets") or ():  # v3 and before
        if isinstance(sheet, dict) and isinstance(sheet.get("cells"), list):
            sheet.pop("metadata", None)
            cell_lists.append(sheet["cells"])
    if sum(len(cells) for cells in cell_lists) > MAX_CELLS:
        return f"has more than {MAX_CELLS} cells; it is not graded."
    for cells in cell_lists:
        for cell in cells:
            if not isinstance(cell, dict):
                continue
            metadata = cell.get("metadata")
            tags = metadata.get("tags") if isinstance(metadata, dict) else None
            kept = {"tags": tags} if _tags(tags) else {}
            nbgrader = metadata.get("nbgrader") if isinstance(metadata, dict) else None
            if nbgrader_metadata and _small_names(nbgrader, nested=False):
                kept["nbgrader"] = nbgrader
            cell["metadata"] = kept
            cell.pop("attachments", None)
            if "outputs" in cell:
                cell["outputs"] = []
            for count in ("execution_count", "prompt_number"):
                if count in cell:
                    cell[count] = None
    return ""


def _tags(value) -> bool:
    return (
        isinstance(value, list)
        and len(value) <= MAX_TAGS
        and all(isinstance(t, str) and len(t) <= 100 for t in value)
    )


def _small_names(value, nested=True) -> bool:
    """kernelspec / language_info as Jupyter writes them: a few short strings and numbers, one
    level of nesting (language_info's codemirror_mode)."""
    if not isinstance(value, dict) or len(value) > 20:
        return False
    return all(
        (isinstance(v, str | int | float) and len(str(v)) <= 200)
        or (nested and _small_names(v, nested=False))
        for v in value.values()
    )


def code_sources(
    folder: Path | str, filename: str, max_bytes: int = MAX_NOTEBOOK_BYTES
) -> list[str]:
    """The sources of a notebook's code cells (v4, or the worksheets of v3), read as
    load_notebook reads the file (safe_files: no link followed, bounded bytes and values) but
    without nbformat, for what only reads the code (the similarity report); [] when the file is
    not there or not a notebook. Never raises."""
    name = locate(folder, filename)
    if name is None:
        return []
    try:
        data = parse_json(read_bytes(folder, [name], max_bytes).decode("utf-8", "replace"), name)
    except (UnsafeFile, RecursionError, MemoryError):
        return []
    if not isinstance(data, dict):
        return []
    cell_lists = [data.get("cells")]
    cell_lists += [s.get("cells") for s in data.get("worksheets") or () if isinstance(s, dict)]
    sources: list[str] = []
    for cells in cell_lists:
        for cell in cells if isinstance(cells, list) else ():
            if len(sources) >= MAX_CELLS:
                return sources
            if not isinstance(cell, dict) or cell.get("cell_type") != "code":
                continue
            source = cell.get("source", cell.get("input", ""))
            if isinstance(source, list) and all(isinstance(part, str) for part in source):
                source = "".join(source)
            if isinstance(source, str):
                sources.append(source)
    return sources
