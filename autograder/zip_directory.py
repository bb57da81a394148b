"""A zip's central directory checked from its end record, before zipfile reads any of it.

    problem = zip_directory.problem(handle, max_members=2000)   # None, or why not to open it

zipfile.ZipFile reads the whole central directory into one ZipInfo object per member as it
opens the file, whatever the count, and it does not trust the end record's count (it parses
until the directory's size is used up). A 57 MB upload listing a million members cost the
parent 447 MB and 7 CPU-s before a member cap could apply. Here, reading at most the last
64 KB and the directory itself (only once its size is known to be small):

- the end record is found as zipfile finds it (at the very end, else the last signature in the
  last 64 KB + 22 bytes), and so is the zip64 one (used whenever its locator precedes the end
  record);
- its member count and directory size are bounded (MAX_ENTRY_BYTES a member), and the
  directory must lie inside the file;
- the directory is walked entry by entry (46-byte headers, names, extras, comments): it must
  hold as many entries as the end record says, no more.
"""

import os
import struct
from typing import BinaryIO

MAX_ENTRY_BYTES = 1024  # per member: 46-byte header + name + extra + comment, generously
_END = struct.Struct("<4s4H2LH")  # end of central directory record, 22 bytes
_END_SIGNATURE = b"PK\x05\x06"
_LOCATOR = struct.Struct("<4sLQL")  # zip64 end record locator, 20 bytes
_END64 = struct.Struct("<4sQ2H2L4Q")  # zip64 end of central directory record, 56 bytes
_ENTRY = struct.Struct("<4s6H3L5H2L")  # central directory file header, 46 bytes
_ENTRY_SIGNATURE = b"PK\x01\x02"


def problem(handle: BinaryIO, max_members: int) -> str | None:
    """None when the zip open on `handle` (a binary file) lists at most max_members members in
    a central directory of sane size; otherwise why not, in words for the student."""
    try:
        return _problem(handle, max_members)
    except (OSError, struct.error) as exc:
        return f"its end record could not be read ({exc})"


def _problem(handle: BinaryIO, max_members: int) -> str | None:
    handle.seek(0, os.SEEK_END)
    size = handle.tell()
    found = _end_record(handle, size)
    if found is None:
        return "it has no zip end record (not a zip file, or cut short)"
    where, record = found
    count, directory_size, directory_offset = record[4], record[5], record[6]
    directory_end = where  # zipfile reads the directory just before the end record(s)
    zip64 = _zip64_record(handle, where)  # zipfile prefers it whenever its locator is there
    if zip64 is not None:
        directory_end, count, directory_size = zip64
    elif 0xFFFF == count or 0xFFFFFFFF in (directory_size, directory_offset):
        return "its zip64 end record is missing or damaged"
    if count > max_members:
        return f"it holds {count:,} files (at most {max_members:,} are read)"
    if directory_size > max(count, 1) * MAX_ENTRY_BYTES or directory_size > directory_end:
        return (
            f"its directory is {directory_size:,} bytes for {count:,} files: damaged or made to "
            "exhaust the grader"
        )
    handle.seek(directory_end - directory_size)
    directory = handle.read(directory_size)
    entries, offset = 0, 0
    while offset < len(directory):
        if len(directory) - offset < _ENTRY.size:
            return "its directory ends inside an entry"
        header = _ENTRY.unpack_from(directory, offset)
        if header[0] != _ENTRY_SIGNATURE:
            return "its directory holds something that is not a directory entry"
        entries += 1
        if entries > count:
            return f"its directory lists more files than the {count:,} its end record says"
        offset += _ENTRY.size + header[10] + header[11] + header[12]  # name, extra, comment
    return None


def _end_record(handle: BinaryIO, size: int) -> tuple[int, tuple] | None:
    """(position, fields) of the end of central directory record, as zipfile finds it."""
    if size < _END.size:
        return None
    handle.seek(size - _END.size)
    data = handle.read(_END.size)
    if data[:4] == _END_SIGNATURE and data[-2:] == b"\0\0":
        return size - _END.size, _END.unpack(data)
    start = max(size - (1 << 16) - _END.size, 0)
    handle.seek(start)
    tail = handle.read()
    at = tail.rfind(_END_SIGNATURE)
    if at < 0 or len(tail) - at < _END.size:
        return None
    return start + at, _END.unpack_from(tail, at)


def _zip64_record(handle: BinaryIO, where: int) -> tuple[int, int, int] | None:
    """(position, member count, directory size) from the zip64 end record, or None."""
    if where < _LOCATOR.size + _END64.size:
        return None
    handle.seek(where - _LOCATOR.size)
    locator = _LOCATOR.unpack(handle.read(_LOCATOR.size))
    if locator[0] != b"PK\x06\x07":
        return None
    position = where - _LOCATOR.size - _END64.size
    handle.seek(position)
    record = _END64.unpack(handle.read(_END64.size))
    if record[0] != b"PK\x06\x06":
        return None
    return position, record[7], record[8]  # total entries, directory size
