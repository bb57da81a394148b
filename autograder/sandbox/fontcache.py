"""matplotlib's font cache for the sandboxes, built once per machine and matplotlib version.

    warm(folder)    # folder (the sandboxes' MPLCONFIGDIR source) now holds fontlist-*.json

A kernel that finds no font cache scans the system's fonts first (seconds per kernel), so every
sandbox gets a copy of one. Building it means importing matplotlib in a child process (about
0.9 CPU-s), which every grading run paid: on Gradescope, one run per submission. The built cache
is now kept in the grader's own cache folder (autograder/config.py's cache_root:
$XDG_CACHE_HOME/autograder, else ~/.cache/autograder, a place no sandbox can write), per
matplotlib version, and later runs copy it. A kept file that is not a regular file, too large or not JSON is ignored and rebuilt.
"""

import os
import subprocess
import sys
from pathlib import Path
from typing import Literal

PATTERN = "fontlist-*.json"
MAX_BYTES = 16 * 2**20  # matplotlib's own is ~40 KB


def kept_folder(cache: Path | None) -> Path | None:
    """Where the built cache is kept for this matplotlib version in `cache` (the grader's cache
    folder, config.cache_root); None without matplotlib."""
    from importlib.metadata import PackageNotFoundError, version

    if cache is None:
        return None
    try:
        release = version("matplotlib")
    except PackageNotFoundError:
        return None
    return Path(cache) / f"matplotlib-{release}"


def _read(path: Path) -> bytes | None:
    """The bytes of a font cache file, or None (a link, not a regular file, too large, not JSON)."""
    from autograder.safe_files import UnsafeFile, parse_json, read_bytes

    try:
        data = read_bytes(path.parent, [path.name], MAX_BYTES)
        parse_json(data, path.name)  # a sandbox wrote it: values bounded too
    except (UnsafeFile, OSError, ValueError):
        return None
    return data


def _copy(source: Path, target: Path) -> bool:
    """Copy the font cache files of source into target (each written whole, then renamed)."""
    copied = 0
    for path in sorted(Path(source).glob(PATTERN)):
        data = _read(path)
        if data is None:
            continue
        partial = Path(target) / f".{path.name}.{os.getpid()}.tmp"
        partial.write_bytes(data)
        partial.replace(Path(target) / path.name)
        copied += 1
    return copied > 0


def _build(target: Path) -> None:
    env = dict(os.environ, MPLCONFIGDIR=str(target), MPLBACKEND="Agg")
    try:
        subprocess.run(
            [sys.executable, "-c", "import matplotlib.font_manager"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=120,
        )
    except (OSError, subprocess.TimeoutExpired):
        pass


def warm(target: Path, kept: Path | Literal[False] | None = False) -> bool:
    """Put matplotlib's font cache into target; True if target now holds one.

    kept: the folder the built cache is kept in (kept_folder()); None or False: keep none."""
    target = Path(target)
    target.mkdir(parents=True, exist_ok=True)
    if kept and Path(kept).is_dir() and _copy(kept, target):
        return True
    _build(target)
    built = any(target.glob(PATTERN))
    if built and kept:
        try:
            Path(kept).mkdir(parents=True, exist_ok=True)
            _copy(target, kept)
        except OSError:
            pass  # a read-only home: the next run builds it again
    return built
