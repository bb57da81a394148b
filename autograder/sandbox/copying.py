"""Copying a student's folder into a sandbox's work folder, and the sizes and modes of trees.

copy_submission copies regular files only (no links, no special files, bounded depth and size);
tree_bytes measures a tree; share_read_only makes a tree the grader wrote readable by the
sandbox's uid.
"""

import os
import stat
from collections.abc import Iterator
from pathlib import Path

MAX_FILE_BYTES = 64 * 2**20  # one file of a student's folder copied into the sandbox
MAX_TOTAL_BYTES = 256 * 2**20  # all of them
_CUT_SHORT = {
    "too-deep": "folders nested this deep are not copied",
    "too-many": "the folder holds too many files; the rest were not copied",
    "unreadable": "it could not be read",
}


def submission_files(
    source: Path, max_file_bytes: int = MAX_FILE_BYTES, max_total_bytes: int = MAX_TOTAL_BYTES
) -> Iterator[tuple]:
    """What a student's folder gives the sandbox, in the walk's order: ("folder", parts),
    ("file", parts, size) or ("skipped", relative path, why). One rule for the copy and for
    the digest of what is graded (autograder/submissions.py): regular files only; symbolic
    links (loops too), FIFOs, sockets, devices, unreadable entries and what lies deeper than
    safe_files.MAX_WALK_DEPTH folders are skipped and named, never followed or opened; a file
    larger than max_file_bytes, or one that would take the total past max_total_bytes, is
    skipped (apparent sizes: a sparse file counts as what it would become)."""
    from autograder.safe_files import walk

    total = 0
    for parts, name, info in walk(source):
        if name is None:
            yield ("skipped", "/".join(parts), _CUT_SHORT.get(info, "it was not read"))
            continue
        rel = "/".join((*parts, name))
        mode = info.st_mode
        if stat.S_ISDIR(mode):
            yield ("folder", (*parts, name))
        elif stat.S_ISLNK(mode):
            yield ("skipped", rel, "it is a symbolic link")
        elif not stat.S_ISREG(mode):
            yield ("skipped", rel, "it is not a regular file")
        elif info.st_size > max_file_bytes:
            yield ("skipped", rel, f"it is larger than {max_file_bytes // 2**20} MB")
        elif total + info.st_size > max_total_bytes:
            yield ("skipped", rel, f"the submission's files exceed {max_total_bytes // 2**20} MB")
        else:
            total += info.st_size
            yield ("file", (*parts, name), info.st_size)


def read_chunks(source: Path, parts: tuple[str, ...], size: int) -> Iterator[bytes]:
    """The bytes of the regular file source/parts, at most `size` (what it said it was), in
    chunks; opened without following links (autograder.safe_files; UnsafeFile if refused)."""
    from autograder.safe_files import open_below

    fd = open_below(source, list(parts))
    with os.fdopen(fd, "rb") as src:
        done = 0
        while done < size:
            chunk = src.read(min(2**20, size - done))
            if not chunk:
                break
            done += len(chunk)
            yield chunk


def copy_submission(
    source: Path | str,
    target: Path | str,
    max_file_bytes: int = MAX_FILE_BYTES,
    max_total_bytes: int = MAX_TOTAL_BYTES,
) -> list[tuple[str, str]]:
    """Copy the regular files of a student's folder (submission_files' rule); returns
    [(relative path, why skipped)]. Every file is opened without following links
    (autograder.safe_files), and the walk is iterative."""
    from autograder.safe_files import UnsafeFile

    source, target = Path(source), Path(target)
    target.mkdir(parents=True, exist_ok=True)
    skipped = []
    for item in submission_files(source, max_file_bytes, max_total_bytes):
        if item[0] == "skipped":
            skipped.append(item[1:])
        elif item[0] == "folder":
            target.joinpath(*item[1]).mkdir(exist_ok=True)
        else:
            _, parts, size = item
            try:
                with open(target.joinpath(*parts), "wb") as dst:
                    for chunk in read_chunks(source, parts, size):
                        dst.write(chunk)
            except UnsafeFile as exc:
                target.joinpath(*parts).unlink(missing_ok=True)
                skipped.append(("/".join(parts), exc.message))
            except OSError as exc:
                target.joinpath(*parts).unlink(missing_ok=True)
                skipped.append(("/".join(parts), f"it could not be read ({exc.strerror})"))
    return skipped


def tree_bytes(root: Path) -> int:
    """Total size of the regular files under root (no links followed; iterative). The tree may
    be changing while it is walked (a git fetch, a running sandbox): what is gone between the
    listing and its look counts nothing, never an error."""
    total, stack = 0, [str(root)]
    while stack:
        try:
            entries = list(os.scandir(stack.pop()))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                elif entry.is_file(follow_symlinks=False):
                    total += entry.stat(follow_symlinks=False).st_size
            except OSError:  # removed since the listing (a lock file, a temporary object)
                continue
    return total


def share_read_only(root: Path) -> None:
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
