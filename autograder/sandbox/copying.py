"""Copying a student's folder into a sandbox's work folder, and the sizes and modes of trees.

copy_submission copies regular files only (no links, no special files, bounded depth and size);
tree_bytes measures a tree; share_read_only makes a tree the grader wrote readable by the
sandbox's uid.
"""

import os
import stat
from pathlib import Path


def copy_submission(source, target, max_file_bytes=64 * 2**20, max_total_bytes=256 * 2**20):
    """Copy the regular files of a student's folder; returns [(relative path, why skipped)].

    Symbolic links and special files are never followed or copied; nothing deeper than
    safe_files.MAX_WALK_DEPTH folders is copied; a file larger than max_file_bytes, or one that
    would take the copy past max_total_bytes, is skipped (sizes are the files' apparent sizes,
    so a sparse file counts as what it would become). Every file is opened without following
    links (autograder.safe_files), and the walk is iterative.
    """
    from autograder.safe_files import UnsafeFile, open_below, walk

    source, target = Path(source), Path(target)
    target.mkdir(parents=True, exist_ok=True)
    skipped, total = [], 0
    for parts, name, info in walk(source):
        rel = "/".join((*parts, name)) if name else "/".join(parts)
        if name is None:
            skipped.append(
                (
                    rel,
                    "folders nested this deep are not copied"
                    if info == "too-deep"
                    else "the folder holds too many files; the rest were not copied",
                )
            )
            continue
        mode = info.st_mode
        if stat.S_ISDIR(mode):
            (target.joinpath(*parts, name)).mkdir(exist_ok=True)
            continue
        if stat.S_ISLNK(mode):
            skipped.append((rel, "it is a symbolic link"))
            continue
        if not stat.S_ISREG(mode):
            skipped.append((rel, "it is not a regular file"))
            continue
        if info.st_size > max_file_bytes:
            skipped.append((rel, f"it is larger than {max_file_bytes // 2**20} MB"))
            continue
        if total + info.st_size > max_total_bytes:
            skipped.append((rel, f"the submission's files exceed {max_total_bytes // 2**20} MB"))
            continue
        try:
            fd = open_below(source, [*parts, name])
        except UnsafeFile as exc:
            skipped.append((rel, exc.message))
            continue
        copied = 0
        with os.fdopen(fd, "rb") as src, open(target.joinpath(*parts, name), "wb") as dst:
            while copied <= info.st_size:  # never more than it said it was
                chunk = src.read(min(2**20, info.st_size + 1 - copied))
                if not chunk:
                    break
                dst.write(chunk)
                copied += len(chunk)
        total += copied
    return skipped


def tree_bytes(root):
    """Total size of the regular files under root (no links followed; iterative)."""
    total, stack = 0, [str(root)]
    while stack:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                stack.append(entry.path)
            elif entry.is_file(follow_symlinks=False):
                total += entry.stat(follow_symlinks=False).st_size
    return total


def share_read_only(root):
    """Make a tree the grader wrote readable (not writable) by the sandbox's uid: a+rX."""
    stack = [str(root)]
    while stack:
        path = stack.pop()
        try:
            os.chmod(path, 0o755)
            entries = list(os.scandir(path))
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                stack.append(entry.path)
            elif entry.is_file(follow_symlinks=False):
                try:
                    mode = entry.stat(follow_symlinks=False).st_mode
                    os.chmod(entry.path, (mode | 0o444) & 0o755)
                except OSError:
                    pass
