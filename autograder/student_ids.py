"""A student id is checked once, where a submission's name enters the grader.

    problem = student_ids.problem(name)   # None, or why this name cannot be a student id
    key = student_ids.key(name)           # names that are one student to a person or a disk

The id is the name of the student's folder or upload (an LMS or nbgrader export names it). It
reaches the instructor's terminal, grades.csv, the gradebook, file names under OUT and the
seed of the hidden tests, so it is refused - never rewritten - unless it is:

- text: a folder name that is not UTF-8 (Python hands it over with surrogate escapes) is refused;
- visible: no control character (newline, escape, tab, DEL, C1) and no invisible formatting
  character (right-to-left override, zero-width space, ...; Unicode categories Cc Cf Cs Co Cn
  Zl Zp), no space at either end;
- a name a folder can have: not ".", "..", no "/", at most MAX_CHARS characters and 255 bytes.

Refused, not normalised: a rewritten id would match no roster (the gradebook or the LMS import
would reject or, worse, misfile the grade), and two raw names could rewrite to one. The
student is listed with the reason (the name shown escaped) and the run ends non-zero; the
instructor renames the folder and grades again. Everyone else is graded.
"""

import unicodedata

MAX_CHARS = 200  # e-mail addresses are at most 254 bytes; LMS ids are far shorter
MAX_BYTES = 255  # a file name's limit on Linux and macOS
_INVISIBLE = {"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"}


def problem(name: str) -> str | None:
    """None when `name` can be a student id; otherwise why not, in words for the instructor."""
    if not isinstance(name, str) or not name:
        return "an empty name is not a student id"
    try:
        encoded = name.encode("utf-8")
    except UnicodeEncodeError:
        return "its name is not UTF-8 text; rename the folder or file in UTF-8"
    if name in (".", "..") or "/" in name:
        return "it is not a name a folder can have"
    for ch in name:
        if unicodedata.category(ch) in _INVISIBLE:
            return (
                f"its name holds the control or invisible character U+{ord(ch):04X}; rename it "
                "to the student's id as the roster writes it"
            )
    if name != name.strip():
        return "its name starts or ends with a space; rename it without"
    if len(name) > MAX_CHARS or len(encoded) > MAX_BYTES:
        return f"its name is longer than {MAX_CHARS} characters ({MAX_BYTES} bytes)"
    return None


def key(name: str) -> str:
    """What makes two ids one student: the same text once Unicode-normalised (macOS writes
    "é" as e + accent) and case-folded (OUT/Alice and OUT/alice are one folder on a
    case-insensitive disk)."""
    return unicodedata.normalize("NFC", name).casefold()
