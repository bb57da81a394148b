"""Student notebooks made safe for the pages nbgrader renders from them.

    nb = sanitise_notebook(nb)         # what we write to autograded/<student>/<assignment>/
    html = clean_html(fragment)        # an allow-listed, fully escaped HTML fragment
    source = safe_markdown(text)       # a markdown cell's source, pre-rendered and cleaned

formgrader's grading page (/formgrader/submissions/<id>) and `nbgrader generate_feedback`'s
pages are nbconvert renderings of the autograded notebooks, under the instructor's Jupyter
login. Their templates put a markdown cell through nbconvert's markdown renderer and into the
page as it comes out: raw HTML passes (`<img onerror>`, `<script>`, `<svg onload>`), and
markdown syntax makes links and images of any target (`[x](javascript:...)`, `<javascript:...>`,
reference links), after anything could have looked at the source as HTML. So the source is
never trusted as markdown either:

1. Each markdown cell is rendered here by nbconvert's own renderer (HTMLExporter's, attachments
   inlined), exactly as formgrader would.
2. That HTML goes through an allow-list sanitiser (nh3, i.e. ammonia over html5ever, the
   browsers' parsing rules): a few text tags, no script, style, frame, object, form, meta, base,
   SVG or MathML (their content dropped), no event handler, no id or name (a student's element
   must not stand in for one of formgrader's), classes only code highlighting's, styles only
   colour, alignment and wrapping. href is http(s), mailto, or relative; img src is http(s) or
   a PNG/JPEG/GIF data URL (never SVG), and an http(s) image is written as a link (step 3). Entity-encoded, mixed-case and whitespace-split schemes
   are decoded before they are judged.
3. The result is written again by our own serialiser: on one line, inside one <div>, every
   character with a meaning to HTML or markdown (`& < >`, quotes in attribute values, brackets,
   parentheses, `$`, `\\`, `*`, `_`, newlines, ...) as a numeric character reference. The markdown renderer reads that
   as one HTML block and passes it through untouched; this is checked for every cell by
   rendering the new source again and comparing, and a cell that does not pass is shown as its
   escaped source text instead (and, failing that, as a notice).
4. In the text, MathJax's `\\href`, `\\require`, `\\style`, `\\bbox`, `\\class` and `\\cssId` are
   broken (the pages' MathJax runs its Safe extension too, which still allows margins): a
   formula cannot become a link, nor be moved over formgrader's own boxes.

Raw cells are cleaned like HTML (nbconvert's HTML exporters emit those of mimetype text/html
or none as they are); a text/markdown raw cell becomes its cleaned rendering. Outputs keep text/plain, stream
and error text (nbconvert escapes them), PNG/JPEG/GIF images whose bytes are what they claim,
and text/html and text/markdown cleaned as above; SVG, LaTeX, JavaScript, widget views and every
other mime type are dropped, and so is output metadata (nbconvert puts image widths and file
names into attributes). Cell metadata keeps only safe tags and nbgrader's own scalar fields;
notebook metadata only the kernelspec and language names.

Every cell leaves with a kind nbformat knows (else it becomes markdown showing its source as
text), a valid, unique id, and a code cell's count a number or none: nbconvert validates the
notebook before it renders, and one bad field would leave the student's page an error.

Markdown, raw cells and HTML outputs are rendered up to MAX_SHOWN_CHARACTERS a notebook (ten
times the course's largest): a cell past it is a notice of its size, so a 20 MB notebook of
markdown tables costs seconds of the grading run, not minutes.

A code cell's source is kept as the student wrote it, but for bidirectional control characters
(U+202E, the isolates U+2066-2069, ...), shown as visible markers such as ⟨U+202E⟩ there and in
every text of the page (escaping.bidi_markers): they would show code in an order Python does
not run. Remote images (`![](http://...)`, `<img src>`, whatever their encoding; srcset is
never kept) become links to what they show, so the reader's browser fetches nothing a student
chose; a style that could fetch (CSS `url()`) is dropped.
"""

import base64
import binascii
import copy
import functools
import html
import math
import re
from html.parser import HTMLParser

import nh3
from nbformat.notebooknode import NotebookNode

from autograder.escaping import bidi_markers

# -- the allow-list --------------------------------------------------------------------------------
TEXT_TAGS = {
    "a", "abbr", "b", "blockquote", "br", "caption", "cite", "code", "col", "colgroup", "dd",
    "del", "details", "div", "dl", "dt", "em", "figcaption", "figure", "h1", "h2", "h3", "h4",
    "h5", "h6", "hr", "i", "img", "ins", "kbd", "li", "mark", "ol", "p", "pre", "q", "s", "samp",
    "small", "span", "strike", "strong", "sub", "summary", "sup", "table", "tbody", "td", "tfoot",
    "th", "thead", "tr", "tt", "u", "ul", "var",
}  # fmt: skip
VOID_TAGS = {"br", "col", "hr", "img"}
DROPPED_WITH_CONTENT = {
    "script", "style", "svg", "math", "iframe", "frame", "frameset", "object", "embed", "applet",
    "noscript", "noembed", "noframes", "template", "textarea", "select", "title", "xmp",
    "plaintext", "head", "audio", "video",
}  # fmt: skip
ATTRIBUTES = {
    "a": {"href", "title"},
    "abbr": {"title"},
    "img": {"src", "alt", "title", "width", "height"},
    "td": {"style", "colspan", "rowspan", "align"},
    "th": {"style", "colspan", "rowspan", "align"},
    "ol": {"start"},
    "pre": {"style"},
    "span": {"style"},
    "div": {"style"},
    "p": {"style"},
}
STYLE_PROPERTIES = {
    "text-align", "color", "background-color", "font-weight", "font-style", "white-space",
    "overflow-wrap", "word-break",
}  # fmt: skip


def _highlight_classes() -> set[str]:
    from pygments.token import STANDARD_TYPES

    return {name for name in STANDARD_TYPES.values() if name}


CLASSES = {"span": _highlight_classes(), "div": {"highlight"}, "a": {"anchor-link"}}
URL_SCHEMES = {"http", "https", "mailto", "data"}  # data: only for raster images, below
IMAGE_DATA = re.compile(r"data:image/(png|jpeg|gif);base64,([A-Za-z0-9+/=\s]*)", re.I)
IMAGE_MAGIC = {
    "png": (b"\x89PNG\r\n\x1a\n",),
    "jpeg": (b"\xff\xd8\xff",),
    "gif": (b"GIF87a", b"GIF89a"),
}
SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")
SIZE = re.compile(r"\d{1,5}(px|%)?")
NUMBER = re.compile(r"\d{1,4}")


def url_scheme(value: str) -> str:
    """The scheme a browser reads in an href/src value (lower case), "" for a relative URL: as
    the URL standard parses it (leading and trailing C0 controls and spaces stripped, every tab
    and newline removed); the value reaches here with its character references decoded."""
    value = "".join(ch for ch in value if ch not in "\t\n\r").strip("\x00- ")
    match = SCHEME.match(value)
    return match.group(1).lower() if match else ""


def safe_image_data(value: str) -> bool:
    """True when value is a data: URL of a PNG, JPEG or GIF whose bytes start as one does."""
    match = IMAGE_DATA.fullmatch(value.strip())
    if not match:
        return False
    try:
        head = base64.b64decode(re.sub(r"\s", "", match.group(2))[:64] + "==", validate=False)
    except (binascii.Error, ValueError):
        return False
    return head.startswith(IMAGE_MAGIC[match.group(1).lower()])


def _attribute_filter(tag, attribute, value):
    if attribute == "href":
        return value if url_scheme(value) in ("", "http", "https", "mailto") else None
    if attribute == "src":
        scheme = url_scheme(value)
        if scheme in ("http", "https") or (scheme == "data" and safe_image_data(value)):
            return value
        return None
    if attribute in ("width", "height"):
        return value if SIZE.fullmatch(value.strip()) else None
    if attribute in ("colspan", "rowspan", "start"):
        return value if NUMBER.fullmatch(value.strip()) else None
    if attribute == "align":
        return value if value.strip().lower() in ("left", "right", "center") else None
    return value


_CLEANER = nh3.Cleaner(
    tags=TEXT_TAGS,
    clean_content_tags=DROPPED_WITH_CONTENT,
    attributes=ATTRIBUTES,
    attribute_filter=_attribute_filter,
    strip_comments=True,
    link_rel="noopener noreferrer nofollow",
    url_schemes=URL_SCHEMES,
    allowed_classes=CLASSES,
    filter_style_properties=STYLE_PROPERTIES,
)


# -- our serialiser: one line, every meaningful character escaped ---------------------------------
ESCAPED = set("&<>`*_[](){}!$\\~|#+-=:;^%@\n\r\t\x0b\x0c")  # in text
ESCAPED_IN_VALUES = set("&<>\"'`\n\r\t\x0b\x0c")
MATHJAX_UNSAFE = re.compile(r"\\(?=(?:href|require|style|bbox|class|cssId)(?![A-Za-z]))")


def _escape(text, escaped: set[str] = ESCAPED) -> str:
    return "".join(f"&#{ord(ch)};" if ch in escaped else ch for ch in text)


class _Serialiser(HTMLParser):
    """Reads the sanitiser's output (well-formed, spec-serialised HTML) and writes it again with
    nothing left for another parser to read differently: allowed tags and attributes only,
    values quoted and escaped, text escaped, no comment or declaration."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in TEXT_TAGS:
            return
        if tag == "img" and _remote_image(attrs):
            self._image_as_link(dict(attrs))
            return
        allowed = ATTRIBUTES.get(tag, set()) | ({"class"} if tag in CLASSES else set())
        parts = [tag]
        for name, value in attrs:
            if name == "style" and CSS_FETCHES.search(value or ""):
                continue  # url(), image-set(), or an escape that could spell them
            if name in allowed or (name == "rel" and tag == "a"):
                shown = bidi_markers(value or "")
                parts.append(f'{name}="{_escape(shown, ESCAPED_IN_VALUES)}"')
        self.out.append(f"<{' '.join(parts)}>")

    def _image_as_link(self, attrs) -> None:
        """A remote image is never fetched by the reader's browser (a tracking pixel, or a
        request to any host the instructor can reach): it becomes a link to it."""
        src = attrs.get("src") or ""
        words = (attrs.get("alt") or "").strip() or src
        self.out.append(
            f'<a href="{_escape(src, ESCAPED_IN_VALUES)}" rel="noopener noreferrer nofollow">'
            f"{_escape(bidi_markers(f'[image: {words}]'))}</a>"
        )

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag in TEXT_TAGS and tag not in VOID_TAGS:
            self.out.append(f"</{tag}>")

    def handle_endtag(self, tag: str) -> None:
        if tag in TEXT_TAGS and tag not in VOID_TAGS:
            self.out.append(f"</{tag}>")

    def handle_data(self, data: str) -> None:
        self.out.append(_escape(bidi_markers(MATHJAX_UNSAFE.sub("\\\\\u200b", data))))


# a style value that could make the browser fetch something: url(...), image-set(...), or a CSS
# escape (`u\72l(`) or comment that could spell one
CSS_FETCHES = re.compile(r"url\s*\(|image|\\|/\*", re.I)


def _remote_image(attrs):
    """True for an <img> whose src is not a data: URL (the cleaner keeps http(s) and raster data
    only): the browser would fetch it."""
    src = dict(attrs).get("src") or ""
    return bool(src) and url_scheme(src) != "data"


def clean_html(fragment: str) -> str:
    """An HTML fragment through the allow-list, written on one line with everything escaped."""
    writer = _Serialiser()
    writer.feed(_CLEANER.clean(str(fragment)))
    writer.close()
    return "".join(writer.out)


# -- markdown cells -------------------------------------------------------------------------------
@functools.cache
def _exporter_settings() -> tuple[str, bool]:
    """HTMLExporter's heading-anchor settings (making an exporter costs ~60 ms: once)."""
    from nbconvert.exporters import HTMLExporter

    exporter = HTMLExporter()
    return exporter.anchor_link_text, exporter.exclude_anchor_links


def render_markdown(source: str, attachments: dict[str, dict[str, str]] | None = None) -> str:
    """nbconvert's rendering of a markdown cell, as HTMLExporter (formgrader's and the feedback
    page's) makes it; an attachment: the cell does not hold becomes no image at all."""
    from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath

    anchor_link_text, exclude_anchor_links = _exporter_settings()
    held = dict(attachments or {})

    class Renderer(IPythonRenderer):
        def _embed_image_or_attachment(self, src) -> str:
            if src.startswith("attachment:") and src[len("attachment:") :] not in held:
                return ""
            return super()._embed_image_or_attachment(src)

    renderer = Renderer(
        escape=False,
        attachments=held,
        embed_images=False,
        anchor_link_text=anchor_link_text,
        exclude_anchor_links=exclude_anchor_links,
    )
    return MarkdownWithMath(renderer=renderer).render(source)


UNSHOWABLE = "<div><p><em>(This cell could not be shown safely here.)</em></p></div>"
# Rendering and cleaning cost up to ~20 us a character (a markdown table), in the grading parent:
# a notebook's markdown, raw cells and HTML outputs are shown up to ten times the course's
# largest notebook's markdown (36,000 characters); a cell past that is a notice of its size.
MAX_SHOWN_CHARACTERS = 400_000


def too_long(size: int) -> str:
    """The notice shown for a cell (or an output) of `size` characters past the budget."""
    return (
        f"<div><p><em>(This holds {size:,} characters, more than this page shows of a "
        "notebook: open the notebook itself to read it.)</em></p></div>"
    )


def _passes_through(block: str):
    """True when nbconvert's renderer gives back exactly this HTML block."""
    try:
        return render_markdown(block).strip() == block
    except Exception:  # noqa: BLE001 - the renderer's failure is a refusal
        return False


def safe_markdown(source: str, attachments: dict[str, dict[str, str]] | None = None) -> str:
    """A markdown cell's new source: its rendering, cleaned, as one HTML block that nbconvert's
    renderer passes through unchanged (else the source shown as text, else a notice)."""
    candidates = []
    try:
        candidates.append(clean_html(render_markdown(str(source), _raster(attachments))))
    except Exception:  # noqa: BLE001 - a source the renderer cannot read is shown as text
        pass
    candidates.append(clean_html(f"<pre>{html.escape(str(source))}</pre>"))
    for body in candidates:
        block = f"<div>{body}</div>"
        if _passes_through(block):
            return block
    return UNSHOWABLE


def safe_text(source: str) -> str:
    """A markdown cell's source showing text as it is (a block nbconvert passes through)."""
    block = f"<div>{clean_html(f'<pre>{html.escape(str(source))}</pre>')}</div>"
    return block if _passes_through(block) else UNSHOWABLE


def _raster(attachments) -> dict[str, dict[str, str]]:
    """A cell's attachments as nbconvert inlines them, keeping PNG/JPEG/GIF images only."""
    kept = {}
    for name, bundle in (attachments or {}).items():
        if not isinstance(name, str) or not isinstance(bundle, dict):
            continue
        for mime in ("image/png", "image/jpeg", "image/gif"):
            data = bundle.get(mime)
            if isinstance(data, str) and safe_image_data(f"data:{mime};base64,{data}"):
                kept[name] = {mime: data}
                break
    return kept


# -- outputs --------------------------------------------------------------------------------------
RASTER = ("image/png", "image/jpeg", "image/gif")


def _text(value) -> str:
    if isinstance(value, list):
        return "".join(str(v) for v in value)
    return str(value) if value is not None else ""


def _safe_data(data, budget):
    """A display bundle with only what renders safely; {} if nothing does."""
    kept: dict[str, str] = {}
    if not isinstance(data, dict):
        return kept
    if "text/plain" in data:
        kept["text/plain"] = bidi_markers(_text(data["text/plain"]))
    for mime in RASTER:
        value = _text(data.get(mime)) if mime in data else None
        if value and safe_image_data(f"data:{mime};base64,{value}"):
            kept[mime] = re.sub(r"\s", "", value)
    for mime in ("text/html", "text/markdown"):
        if mime in data:
            text = _text(data[mime])
            if not budget.take(len(text)):
                kept["text/html"] = too_long(len(text))
            elif mime == "text/html":
                kept["text/html"] = clean_html(text)
            else:
                kept["text/html"] = clean_html(render_markdown(text))
            break
    return kept


class Budget:
    """What is left of MAX_SHOWN_CHARACTERS for one notebook."""

    def __init__(self, left: int = MAX_SHOWN_CHARACTERS) -> None:
        self.left = left

    def take(self, size: int) -> bool:
        """True (and spent) when `size` characters still fit."""
        if size > self.left:
            return False
        self.left -= size
        return True


def safe_output(output: dict, budget: Budget | None = None) -> NotebookNode | None:
    """One output made safe, or None when nothing of it may be shown."""
    budget = budget if budget is not None else Budget()
    kind = output.get("output_type")
    from nbformat.v4 import new_output

    if kind == "stream":
        name = output.get("name") if output.get("name") in ("stdout", "stderr") else "stdout"
        return new_output("stream", name=name, text=bidi_markers(_text(output.get("text"))))
    if kind == "error":
        return new_output(
            "error",
            ename=bidi_markers(_text(output.get("ename"))),
            evalue=bidi_markers(_text(output.get("evalue"))),
            traceback=[bidi_markers(_text(line)) for line in output.get("traceback") or []],
        )
    if kind in ("display_data", "execute_result"):
        data = _safe_data(output.get("data"), budget)
        if not data:
            return None
        if kind == "execute_result":
            count = output.get("execution_count")
            count = count if isinstance(count, int) and not isinstance(count, bool) else None
            return new_output("execute_result", data, execution_count=count)
        return new_output("display_data", data)
    return None


# -- metadata -------------------------------------------------------------------------------------
SAFE_WORD = re.compile(r"[A-Za-z0-9_\-]{1,100}")
MIMETYPE = re.compile(r"[a-z]{1,20}/[a-z0-9.+\-]{1,60}")
SAFE_NAME = re.compile(r"[A-Za-z0-9_.+\- ()]{0,100}")
NBGRADER_FLAGS = ("grade", "solution", "locked", "task")
NBGRADER_WORDS = ("grade_id", "checksum", "cell_type")


def _safe_nbgrader(meta):
    """nbgrader's cell metadata with only its own fields, each of its own type; None if its
    grade id is not one nbgrader could have written (formgrader puts it into HTML unescaped)."""
    if not isinstance(meta, dict):
        return None
    kept = {}
    for key in NBGRADER_FLAGS:
        if isinstance(meta.get(key), bool):
            kept[key] = meta[key]
    for key in NBGRADER_WORDS:
        value = meta.get(key)
        if isinstance(value, str) and SAFE_WORD.fullmatch(value):
            kept[key] = value
        elif key in meta:
            return None
    points = meta.get("points")
    if isinstance(points, int | float) and not isinstance(points, bool) and math.isfinite(points):
        kept["points"] = points
    version = meta.get("schema_version")
    if isinstance(version, int) and not isinstance(version, bool):
        kept["schema_version"] = version
    return kept


def _safe_cell_metadata(metadata, cell_type) -> dict[str, list[str]]:
    kept = {}
    tags = metadata.get("tags")
    if isinstance(tags, list):
        tags = [t for t in tags if isinstance(t, str) and SAFE_WORD.fullmatch(t)]
        if tags:
            kept["tags"] = tags
    nbgrader = _safe_nbgrader(metadata.get("nbgrader"))
    if nbgrader is not None and "nbgrader" in metadata:
        kept["nbgrader"] = nbgrader
    return kept


def _safe_names(value) -> dict[str, str] | None:
    if not isinstance(value, dict):
        return None
    kept = {
        k: v
        for k, v in value.items()
        if isinstance(k, str)
        and SAFE_WORD.fullmatch(k)
        and isinstance(v, str)
        and SAFE_NAME.fullmatch(v)
    }
    return kept or None


# -- the notebook ---------------------------------------------------------------------------------
def sanitise_notebook(nb: NotebookNode) -> NotebookNode:
    """A copy of nb safe to render as HTML: see the module's docstring."""
    nb = copy.deepcopy(nb)
    metadata = {}
    for key in ("kernelspec", "language_info"):
        names = _safe_names(nb.get("metadata", {}).get(key))
        if names:
            metadata[key] = names
    nb["metadata"] = type(nb.get("metadata", {}))(metadata) if nb.get("metadata") else metadata
    taken: set[str] = set()
    budget = Budget()
    for index, cell in enumerate(nb.cells):
        kind = cell.get("cell_type")
        if kind not in ("markdown", "code", "raw"):  # shown as its source, as text
            source = _text(cell.get("source"))
            shown = safe_text(source) if budget.take(len(source)) else too_long(len(source))
            cell.clear()
            cell.update(cell_type="markdown", metadata={}, source=shown)
        _give_id(cell, index, taken, nb.get("nbformat_minor"))
        old = cell.get("metadata") if isinstance(cell.get("metadata"), dict) else {}
        cell.metadata = _safe_cell_metadata(old, kind)
        if kind in ("markdown", "raw") and not budget.take(len(_text(cell.get("source")))):
            cell.source = too_long(len(_text(cell.get("source"))))
            if kind == "raw":
                cell.metadata["raw_mimetype"] = "text/html"
        elif kind == "markdown":
            cell.source = safe_markdown(_text(cell.get("source")), cell.get("attachments"))
        elif kind == "raw":
            mimetype = str(old.get("raw_mimetype", "")).lower()
            source = _text(cell.get("source"))
            if mimetype == "text/markdown":  # cleaned HTML, whatever an exporter does with it
                cell.source, mimetype = clean_html(render_markdown(source)), "text/html"
            else:
                cell.source = clean_html(source)
            if MIMETYPE.fullmatch(mimetype):
                cell.metadata["raw_mimetype"] = mimetype
        elif kind == "code":
            cell.source = bidi_markers(_text(cell.get("source")))
            count = cell.get("execution_count")
            if not isinstance(count, int) or isinstance(count, bool) or count < 0:
                cell.execution_count = None
            outputs = [
                safe_output(o, budget) for o in cell.get("outputs") or [] if isinstance(o, dict)
            ]
            cell.outputs = [o for o in outputs if o is not None]
        cell.pop("attachments", None)
    return nb


CELL_ID = re.compile(r"[A-Za-z0-9_\-]{1,64}")


def _give_id(cell, index: int, taken, minor) -> None:
    """A cell id nbformat accepts and no other cell holds (kept when it is one already); none
    before nbformat 4.5, which has no ids."""
    if not isinstance(minor, int) or minor < 5:
        cell.pop("id", None)
        return
    given = cell.get("id")
    if not (isinstance(given, str) and CELL_ID.fullmatch(given)) or given in taken:
        given = f"cell-{index}"
        while given in taken:
            given += "-"
        cell["id"] = given
    taken.add(given)
