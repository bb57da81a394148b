"""The bulk downloads of an LMS's submissions: which student each entry belongs to.

    entry = canvas_file("adalovelace_LATE_1234_56789_01_soft_lookup-1.ipynb")
    entry.student, entry.name, entry.order, entry.late   # "1234", "01_soft_lookup-1.ipynb", 56789
    student, why = moodle_folder("Ada Lovelace_123456_assignsubmission_file_")

Canvas ("Download Submissions" on an assignment) writes one flat folder: each file is
`<name>_<user id>_<attachment id>_<file name>`, with `LATE_` before the user id when Canvas
marked the submission late; `<name>` is the student's sortable name, lower-cased, without spaces
or punctuation. A file a student uploaded again under the same name gets Canvas's `-1`, `-2` in
front of its extension. The student id is the Canvas user id (the gradebook's `ID` column,
the roster's `canvas_id`); attachment ids grow with time, so the highest one of a notebook is
the latest upload, and the others are named as earlier uploads, not graded.

Moodle ("Download all submissions") writes one folder per student and submission plugin,
`<Full Name>_<participant id>_assignsubmission_<plugin>_/` (the default since Moodle 3.1), or,
with "Download submissions in folders" off, flat files `<Full Name>_<participant id>_
assignsubmission_file_<file name>`. Moodle puts spaces where the name had `_`, so the id before
`_assignsubmission_` is unambiguous: the student id is `<Full Name>_<participant id>` (Moodle's
own label, unique by its number). Only the file plugin holds notebooks: the folders of other
plugins (online text, comments) are not a student's notebooks.
"""

import re
from dataclasses import dataclass

_CANVAS = re.compile(
    r"^(?P<login>[^_]*)_(?P<late>LATE_)?(?P<user>\d{1,20})_(?P<attachment>\d{1,20})_(?P<name>.+)$"
)
_MOODLE = re.compile(
    r"^(?P<student>.+_\d{1,20})_assignsubmission_(?P<plugin>[a-z]{1,40})_(?P<name>.*)$"
)
NOTEBOOK_SUFFIXES = (".ipynb", ".zip")


@dataclass(frozen=True)
class BulkFile:
    student: str  # the id graded: Canvas's user id, or Moodle's "Full Name_participant id"
    name: str  # the file's own name, as the student uploaded it
    order: int = 0  # Canvas: the attachment id (later uploads have higher ones)
    late: bool = False  # Canvas marked the submission late
    lms: str = ""  # "Canvas": the file's date is the download's; `late` is the hand-in's mark


def canvas_file(filename):
    """The BulkFile of a Canvas bulk download's file name, or None when it is not one."""
    found = _CANVAS.match(filename)
    if found is None or not found["name"].lower().endswith(NOTEBOOK_SUFFIXES):
        return None
    return BulkFile(
        found["user"],
        found["name"],
        order=int(found["attachment"]),
        late=bool(found["late"]),
        lms="Canvas",
    )


def moodle_file(filename):
    """The BulkFile of a flat Moodle download's file name, or None when it is not one."""
    found = _MOODLE.match(filename)
    if found is None or found["plugin"] != "file" or not found["name"]:
        return None
    if not found["name"].lower().endswith(NOTEBOOK_SUFFIXES):
        return None
    return BulkFile(found["student"], found["name"])


def moodle_folder(name):
    """(student id, "") for a Moodle download's folder of submitted files; (None, why) for a
    folder of another plugin; (None, "") for a name that is not Moodle's."""
    found = _MOODLE.match(name)
    if found is None or found["name"]:
        return None, ""
    if found["plugin"] != "file":  # the name itself is shown, escaped, by the caller
        return None, f"Moodle's {found['plugin']} submission (not files); skipped"
    return found["student"], ""


def bulk_file(filename):
    """A Canvas or a flat Moodle download's BulkFile for this file name, or None."""
    return moodle_file(filename) or canvas_file(filename)
