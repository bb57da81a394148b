"""How many paths a commit's tree expands to, counted without listing them.

A tree object may name the same subtree many times, and that subtree may do the same: nine
levels of ten entries, each pointing at one shared subtree, are a few kilobytes on disk and
10^9 paths for `git ls-tree -r` (a "tree bomb"). Listing such a commit takes minutes and
gigabytes, whatever the repository's size. Here each distinct tree object is read once (`git
cat-file --batch`) and its number of paths is remembered, so the count costs what the
repository holds, not what it expands to, and it stops as soon as it passes the limit.
"""

import os
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path

GIT = ["git", "-c", "core.hooksPath=/dev/null"]
TREE_MODE = b"40000"


class TooManyPaths(Exception):
    """The tree expands to more paths than allowed (or could not be read in time)."""


def count_paths(
    clone: Path | str,
    commit: str,
    limit: int,
    seconds: float,
    env: Mapping[str, str] | None = None,
) -> int:
    """The number of paths (files, links and submodules, as `git ls-tree -r` lists them) in
    `commit` of the repository `clone`; TooManyPaths once the count passes `limit`, or after
    `seconds`."""
    env = {**os.environ, **(env or {})}
    root = subprocess.run(
        [*GIT, "rev-parse", "--verify", "--quiet", f"{commit}^{{tree}}"],
        cwd=clone,
        capture_output=True,
        timeout=seconds,
        env=env,
        check=True,
    ).stdout.strip()
    raw_length = len(root) // 2  # 20 bytes (SHA-1) or 32 (SHA-256)
    ends = time.monotonic() + seconds
    with subprocess.Popen(
        [*GIT, "cat-file", "--batch"],
        cwd=clone,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    ) as reader:
        try:
            return _count(reader, root, raw_length, limit, ends)
        finally:
            assert reader.stdin is not None  # stdin=PIPE
            reader.stdin.close()
            reader.kill()


def _count(reader: subprocess.Popen[bytes], root: bytes, raw_length: int, limit, ends):
    entries: dict[
        bytes, tuple[int, list[bytes]]
    ] = {}  # tree id -> (paths that are not trees, [subtree ids, with repeats])
    counted: dict[bytes, int] = {}  # tree id -> paths it expands to
    stack = [root]
    while stack:
        if time.monotonic() > ends:
            raise TooManyPaths("counting its paths took too long")
        tree = stack[-1]
        if tree in counted:
            stack.pop()
            continue
        if tree not in entries:
            entries[tree] = _read_tree(reader, tree, raw_length)
        leaves, subtrees = entries[tree]
        missing = {s for s in subtrees if s not in counted}
        if missing:
            stack.extend(missing)
            continue
        total = leaves + sum(counted[s] for s in subtrees)
        if total > limit:
            raise TooManyPaths(f"its files number more than {limit:,}")
        counted[tree] = total
        stack.pop()
    return counted[root]


def _read_tree(reader, tree, raw_length):
    reader.stdin.write(tree + b"\n")
    reader.stdin.flush()
    header = reader.stdout.readline().split()
    if len(header) != 3 or header[1] != b"tree":
        raise TooManyPaths(f"tree {tree[:10].decode()} cannot be read")
    size = int(header[2])
    data = reader.stdout.read(size + 1)[:size]  # the object, then a newline
    leaves, subtrees, at = 0, [], 0
    while at < len(data):
        space = data.index(b" ", at)
        name_end = data.index(b"\0", space)
        oid = data[name_end + 1 : name_end + 1 + raw_length]
        if data[at:space] == TREE_MODE:
            subtrees.append(oid.hex().encode())
        else:
            leaves += 1
        at = name_end + 1 + raw_length
    return leaves, subtrees
