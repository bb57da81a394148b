"""One escaping function per medium for text a student controls (ids, messages, exceptions).

    terminal(text)          # printed to an instructor's terminal, or put in a Markdown file
    csv_cell(value)         # one cell of a CSV file a spreadsheet will open
    csv_row(cells)          # a whole CSV line: text cells quoted, numbers bare
    bidi_markers(text)      # on a page: every bidi control as a visible marker, ⟨U+202E⟩

HTML is escaped by jinja2's autoescape (autograder/report/__init__.py), after bidi_markers
(the report's jinja2 `finalize`; nbgrader_sanitise for the notebooks formgrader shows): a
right-to-left override or isolate in a student's code or message would show the code in an
order Python does not run (CVE-2021-42574, "Trojan Source"); results.json is JSON
(json.dumps escapes what JSON needs); each platform's gradebook has its own module.

Why a CSV cell needs more than quoting. Quotes only delimit a field: a spreadsheet still reads
the field's content `=2+5` (or `+`, `-`, `@`, a leading tab or carriage return) as a formula,
quoted or not. And the file may be opened with another separator than the one it was written
with: a spreadsheet whose list separator is `;` (most European locales) or tab, or an importer
told to ignore quotes, splits `x;=2+5;` into `x`, `=2+5` - so a formula can start after any
separator inside the text, not only at its start. csv_cell therefore puts an apostrophe (which
spreadsheets show as "this is text") before every formula start that follows the cell's start
or any separator (`,` `;` tab `|`, optionally after spaces), escapes control characters (no raw
newline forges a row), and csv_row quotes every text cell.
"""

import re
from collections.abc import Iterable

FORMULA_STARTS = "=+-@\t\r"
SEPARATORS = ",;\t|"  # the list separators spreadsheets use (comma, semicolon, tab, pipe)

# the start of the text or a separator, any spaces, then a character that starts a formula
_FORMULA = re.compile(rf"(^|[{re.escape(SEPARATORS)}])([ ]*)([{re.escape(FORMULA_STARTS)}])")


def terminal(text: object) -> str:
    """`text` with every control or invisible formatting character escaped (\\x1b, \\u202e, ...),
    safe to print on a terminal or to put in a Markdown file: no escape sequence, no raw newline,
    no right-to-left override reaches the reader."""
    out = []
    for ch in str(text):
        if ch.isprintable() or ch == " ":
            out.append(ch)
        elif ord(ch) < 0x100:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) < 0x10000:
            out.append(f"\\u{ord(ch):04x}")
        else:  # includes lone surrogates from a file name that is not UTF-8
            out.append(f"\\U{ord(ch):08x}")
    return "".join(out)


def _neutralise(text: str) -> str:
    # a tab or CR at the start is escaped by terminal() below, so it never reaches the sheet raw
    return _FORMULA.sub(lambda m: f"{m.group(1)}{m.group(2)}'{m.group(3)}", text)


def csv_cell(value: object) -> str:
    """A cell a spreadsheet shows as it is: numbers stay numbers (`1.5`); any other value is
    text with no control character and no formula, at its start or after any separator."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return f"{value:g}"
    return terminal(_neutralise(str(value)))


def csv_row(cells: Iterable[object], separator: str = ",") -> str:
    """One CSV line (no line end): text cells quoted ("" inside), numbers bare."""
    out = []
    for value in cells:
        cell = csv_cell(value)
        if isinstance(value, int | float) and not isinstance(value, bool):
            out.append(cell)
        else:
            out.append('"' + cell.replace('"', '""') + '"')
    return separator.join(out)


# the Unicode bidirectional controls: embeddings, overrides, isolates and the implicit marks
BIDI_CONTROLS = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
_BIDI_MARKERS = {ord(ch): f"\u27e8U+{ord(ch):04X}\u27e9" for ch in BIDI_CONTROLS}


def bidi_markers(text: object) -> str:
    """`text` with each bidirectional control character (U+202E RIGHT-TO-LEFT OVERRIDE, the
    isolates U+2066-2069, ...) replaced by a visible marker such as ⟨U+202E⟩: on a page, the
    characters around it are shown in the order they are stored, as Python reads them."""
    return str(text).translate(_BIDI_MARKERS)
