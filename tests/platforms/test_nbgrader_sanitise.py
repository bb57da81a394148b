"""The cleaning of student notebooks for nbgrader's pages (autograder/platforms/nbgrader_sanitise),
without a browser: every output kind, metadata, and markdown through nbconvert's own renderer.
tests/attacks/test_nbgrader_hostile.py drives the real pages in Chromium.

Oracles: nbconvert's renderer (what formgrader and the feedback page run) on the cell as the
student wrote it, for the course's own honest markdown; a plain reading of each href/src as a
browser reads schemes, for hostile inputs drawn by hypothesis.
"""

import base64
import html
import re
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autograder.platforms.nbgrader_sanitise import (
    TEXT_TAGS,
    render_markdown,
    safe_markdown,
    sanitise_notebook,
)

REPO = Path(__file__).resolve().parents[2]
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 40).decode()


class Reading(HTMLParser):
    """Tags, attributes, URL targets and visible text of an HTML fragment."""

    def __init__(self, fragment):
        super().__init__(convert_charrefs=True)
        self.tags, self.attributes, self.targets, self.text = [], [], [], []
        self.feed(fragment)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        for name, value in attrs:
            self.attributes.append((tag, name))
            if name in ("href", "src", "action", "data", "formaction", "xlink:href"):
                self.targets.append(value or "")

    def handle_data(self, data):
        self.text.append(data)

    def visible(self):
        return " ".join("".join(self.text).split())


def browser_scheme(value):
    """The scheme a browser takes from an href/src (tabs and newlines dropped, controls and
    spaces trimmed), lower case; "" for a relative URL."""
    value = re.sub(r"[\t\n\r]", "", value).strip("".join(map(chr, range(33))))
    match = re.match(r"([a-zA-Z][a-zA-Z0-9+.\-]*):", value)
    return match.group(1).lower() if match else ""


def known(tags):
    """The tags a browser shows as such (an unknown one, like `<bos>` in prose, shows nothing
    in the page as rendered; the cleaned page drops the tag and keeps its text)."""
    return [t for t in tags if t in TEXT_TAGS]


def assert_inert(fragment):
    reading = Reading(fragment)
    assert set(reading.tags) <= TEXT_TAGS, set(reading.tags) - TEXT_TAGS
    assert not [a for a in reading.attributes if a[1].startswith("on")], reading.attributes
    assert not [a for a in reading.attributes if a[1] in ("id", "name", "srcdoc")]
    for target in reading.targets:
        scheme = browser_scheme(target)
        image = re.match(r"data:image/(png|jpeg|gif);base64,", target.strip(), re.I)
        assert scheme in ("", "http", "https", "mailto") or image, target


# -- markdown: the course's own, honest --------------------------------------------------------
def course_markdown():
    cells = []
    for path in sorted((REPO / "solutions").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        cells += [c.source for c in nb.cells if c.cell_type == "markdown"]
    assert len(cells) > 100
    return cells


def test_the_courses_markdown_shows_as_nbconvert_renders_it():
    """Every markdown cell of the solutions: the same text, links, images and tags as
    nbconvert's rendering of the cell as written."""
    for source in course_markdown():
        original = Reading(render_markdown(source))
        cleaned_source = safe_markdown(source)
        shown = render_markdown(cleaned_source)
        assert shown.strip() == cleaned_source  # passed through as it is
        cleaned = Reading(shown)
        assert cleaned.visible() == original.visible(), source[:80]
        assert cleaned.targets == original.targets, source[:80]
        assert cleaned.tags == ["div", *known(original.tags)], source[:80]


HONEST = [
    r"$\frac{QK^\top}{\sqrt{d_k}}$ and $$\sum_j e^{x_j}$$",
    "| a | b |\n|:-|-:|\n| 1 | 2 |",
    "[paper](https://arxiv.org/abs/1706.03762) and <https://example.org/x?a=1&b=2>",
    "```python\nx = [i for i in range(3)]\n\n\nprint(x)\n```",
    "    indented code\n\n    after a blank line",
    "* one\n* two\n\n1. a\n2. b\n\n> quoted *text*",
    "a < b and c > d & e; 5 * 3 = 15; `a<b>`",
    "<details><summary>Hint</summary>Divide by <b>sqrt(d_k)</b>.</details>",
    "Line with trailing spaces  \nand a break",
]


@pytest.mark.parametrize("source", HONEST)
def test_honest_markdown_keeps_its_text_links_and_structure(source):
    original = Reading(render_markdown(source))
    cleaned = Reading(render_markdown(safe_markdown(source)))
    assert cleaned.visible() == original.visible()
    assert cleaned.targets == original.targets
    assert cleaned.tags == ["div", *known(original.tags)]


def test_a_missing_attachment_is_no_image_and_breaks_nothing():
    """An image pasted into a markdown cell: its attachment is not in the autograded copy.
    nbconvert raises on it (the whole feedback page failed); here it is an image without src."""
    source = "before ![pasted](attachment:image.png) after"
    with pytest.raises(Exception, match="missing attachment"):
        from nbconvert import HTMLExporter

        HTMLExporter().markdown2html({"cell": {"attachments": {}}}, source)
    shown = Reading(render_markdown(safe_markdown(source)))
    assert shown.visible() == "before after" and shown.targets == []


def test_attachments_are_inlined_when_raster_and_dropped_when_svg():
    svg = base64.b64encode(b'<svg onload="alert(1)"/>').decode()
    source = "![p](attachment:p.png) ![s](attachment:s.svg)"
    shown = Reading(
        render_markdown(
            safe_markdown(source, {"p.png": {"image/png": PNG}, "s.svg": {"image/svg+xml": svg}})
        )
    )
    assert shown.targets == [f"data:image/png;base64,{PNG}"]


# -- markdown: hostile, drawn -------------------------------------------------------------------
PIECES = st.sampled_from(
    [
        "<", ">", "</", "/>", "'", '"', "=", " ", "\n", "\t", "&", "&#x09;", "&#58;", "&colon;",
        "&#106;", "javascript:", "JaVaScRiPt:", "vbscript:", "data:text/html,", "jav\tascript:",
        "alert(1)", "<img src=x onerror=", "<a href=", "<svg", " onload=", "<script>",
        "</script>", "<iframe srcdoc=", "<style>", "<math>", "<!--", "-->", "<![CDATA[", "]]>",
        "[x](", "](", ")", "[r]: ", "[r]", "![i](", "<javascript:alert(1)>", "`", "```\n", "$",
        "$$", "\\href{", "}{", "}", "*", "_", "|", "---", "> ", "    ", "\\", "%0a", "\u2028",
        "<details open ontoggle=", "<form action=", "<base href=", "<object data=",
        "<embed src=", "<meta http-equiv=refresh content=", "<textarea>", "<noscript>", "x",
    ]
)  # fmt: skip


@pytest.mark.slow  # a fuzzer rendered through nbconvert
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(PIECES, min_size=1, max_size=24).map("".join))
def test_no_drawn_markdown_renders_to_anything_active(source):
    cleaned = safe_markdown(source)
    shown = render_markdown(cleaned)
    assert shown.strip() == cleaned  # nbconvert's renderer adds nothing
    assert_inert(shown)
    for tag in ("script", "iframe", "svg", "style", "form", "object", "embed", "meta", "base"):
        assert f"<{tag}" not in shown.lower()


@pytest.mark.slow  # a fuzzer rendered through nbconvert
@settings(max_examples=150, deadline=None)
@given(st.lists(PIECES, min_size=1, max_size=24).map("".join))
def test_no_drawn_html_output_keeps_anything_active(fragment):
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("x")
    cell.outputs = [
        nbformat.v4.new_output("display_data", {"text/html": fragment}),
        nbformat.v4.new_output("display_data", {"text/markdown": fragment}),
    ]
    raw = nbformat.v4.new_raw_cell(fragment)
    nb.cells = [cell, raw]
    clean = sanitise_notebook(nb)
    for output in clean.cells[0].outputs:
        assert set(output.data) <= {"text/html"}
        assert_inert(output.data["text/html"])
    assert_inert(clean.cells[1].source)


# -- outputs, metadata --------------------------------------------------------------------------
def test_outputs_keep_text_and_raster_images_and_drop_what_executes():
    cell = nbformat.v4.new_code_cell("x")
    cell.outputs = [
        nbformat.v4.new_output("stream", name="stderr", text="<b>kept as text</b>"),
        nbformat.v4.new_output("error", ename="E", evalue="<i>v</i>", traceback=["t"]),
        nbformat.v4.new_output(
            "display_data",
            {"image/png": PNG, "text/plain": "<Figure>"},
            metadata={"image/png": {"width": "1 onerror=alert(1)"}, "filenames": {"x": "y"}},
        ),
        nbformat.v4.new_output("display_data", {"image/png": base64.b64encode(b"<svg>").decode()}),
        nbformat.v4.new_output("display_data", {"image/svg+xml": "<svg onload=alert(1)/>"}),
        nbformat.v4.new_output("display_data", {"application/javascript": "alert(1)"}),
        nbformat.v4.new_output(
            "display_data", {"application/vnd.jupyter.widget-view+json": {"model_id": "x"}}
        ),
        nbformat.v4.new_output("display_data", {"text/latex": r"$\href{javascript:x}{y}$"}),
        nbformat.v4.new_output("display_data", {"application/pdf": "JVBERi0="}),
        nbformat.v4.new_output(
            "execute_result",
            {"text/html": "<b onclick=alert(1)>bold</b><script>alert(2)</script>"},
            execution_count=3,
        ),
        nbformat.v4.new_output("display_data", {"text/markdown": "[m](javascript:alert(1))"}),
    ]
    nb = nbformat.v4.new_notebook(cells=[cell])
    outputs = sanitise_notebook(nb).cells[0].outputs
    kinds = [(o.output_type, sorted(o.get("data", {}))) for o in outputs]
    assert kinds == [
        ("stream", []),
        ("error", []),
        ("display_data", ["image/png", "text/plain"]),
        ("execute_result", ["text/html"]),
        ("display_data", ["text/html"]),
    ]
    assert outputs[0].text == "<b>kept as text</b>" and outputs[0].name == "stderr"
    assert outputs[2].metadata == {}
    assert Reading(outputs[3].data["text/html"]).tags == ["b"]
    assert outputs[3].execution_count == 3
    assert Reading(outputs[4].data["text/html"]).targets == []
    nbformat.validate(sanitise_notebook(nb))


def test_metadata_keeps_only_safe_tags_nbgrader_fields_and_kernel_names():
    nb = nbformat.v4.new_notebook()
    nb.metadata = {
        "kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)"},
        "language_info": {"name": "python", "pygments_lexer": '"><img src=x>'},
        "widgets": {"application/vnd.jupyter.widget-state+json": {"x": "</script>"}},
        "title": "</title><script>",
    }
    good = nbformat.v4.new_markdown_cell("answer")
    good.metadata = {
        "tags": ["demo", 'x" onmouseover="alert(1)'],
        "nbgrader": {
            "grade": True,
            "solution": True,
            "grade_id": "written_1",
            "points": 2,
            "schema_version": 3,
            "locked": False,
            "checksum": "abc123",
            "extra": "<b>",
        },  # fmt: skip
        "jupyter": {"source_hidden": True},
    }
    bad = nbformat.v4.new_markdown_cell("claims to be graded")
    bad.metadata = {"nbgrader": {"grade": True, "grade_id": '"><img src=x onerror=alert(1)>'}}
    nb.cells = [good, bad]
    clean = sanitise_notebook(nb)
    assert clean.metadata == {
        "kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)"},
        "language_info": {"name": "python"},
    }
    assert clean.cells[0].metadata == {
        "tags": ["demo"],
        "nbgrader": {"grade": True, "solution": True, "locked": False, "grade_id": "written_1",
                     "checksum": "abc123", "points": 2, "schema_version": 3},
    }  # fmt: skip
    assert clean.cells[1].metadata == {}


def test_code_is_never_changed():
    source = '# <img src=x onerror=alert(1)>\nprint("[x](javascript:alert(1))")'
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)])
    assert sanitise_notebook(nb).cells[0].source == source


# -- what the reader's browser would fetch, and what it would show out of order ----------------
PIXEL = "http://127.0.0.1:9/pixel.png"
REMOTE_IMAGES = [
    f"![chart]({PIXEL})",
    f'<img src="{PIXEL}" alt="chart">',
    '<img src="&#104;&#116;&#116;&#112;://127.0.0.1:9/pixel.png" alt="chart">',  # entities
    f'<IMG SRC="  {PIXEL.upper()}" alt="chart">',
    f'<img srcset="{PIXEL} 1x, {PIXEL} 2x" src="data:image/png;base64,{PNG}" alt="chart">',
    f'<p style="background-color: url({PIXEL})">chart</p>',
    f'<span style="color: red; background-color: u\\72l({PIXEL})">chart</span>',
    f"<p style=\"color: /**/red; background: image-set('{PIXEL}' 1x)\">chart</p>",
]


class _Loads(HTMLParser):
    """What a browser would load on its own to show a fragment: an image's src (but data:) and
    srcset, and a style value (CSS fetches with url() and image-set())."""

    def __init__(self, fragment):
        super().__init__(convert_charrefs=True)
        self.loads = []
        self.feed(fragment)
        self.close()

    def handle_starttag(self, tag, attrs):
        for name, value in attrs:
            value = value or ""
            if tag == "img" and name == "src" and browser_scheme(value) != "data":
                self.loads.append(value)
            if name == "srcset" or (name == "style" and re.search(r"url|image|\\", value, re.I)):
                self.loads.append(value)


def _fetched(fragment):
    return _Loads(fragment).loads


@pytest.mark.parametrize("source", REMOTE_IMAGES)
def test_a_remote_image_becomes_a_link_and_is_never_fetched(source):
    """Remote images in a student's markdown were fetched by the instructor's browser from
    formgrader and generate_feedback: a tracking pixel, or a request to any host it reaches."""
    original = render_markdown(source)
    assert _fetched(original)  # nbconvert's own rendering would fetch it
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(source)])
    nb.cells.append(nbformat.v4.new_code_cell("x", outputs=[
        nbformat.v4.new_output("display_data", {"text/html": source, "text/plain": "x"}),
        nbformat.v4.new_output("display_data", {"text/markdown": source}),
    ]))  # fmt: skip
    nb.cells.append(nbformat.v4.new_raw_cell(source))
    clean = sanitise_notebook(nb)
    shown = [render_markdown(clean.cells[0].source), clean.cells[2].source]
    shown += [o.data["text/html"] for o in clean.cells[1].outputs]
    for fragment in shown:
        assert _fetched(fragment) == [], fragment
    reading = Reading(render_markdown(clean.cells[0].source))
    if "srcset" in source:  # the inline image stays, without the remote ones
        assert reading.targets == [f"data:image/png;base64,{PNG}"]
    elif "style" in source:  # the text stays, without the style
        assert reading.visible() == "chart"
    else:  # a link to what it showed
        assert reading.visible() == "[image: chart]"
        assert [t.lower().strip() for t in reading.targets] == [PIXEL]


def test_an_inline_image_stays_an_image():
    source = f"![dot](data:image/png;base64,{PNG})"
    reading = Reading(render_markdown(safe_markdown(source)))
    assert "img" in reading.tags and reading.targets == [f"data:image/png;base64,{PNG}"]


BIDI = "\u202e\u2066\u2067\u2068\u2069\u202a\u202b\u202c\u202d\u200e\u200f\u061c"


def test_bidi_controls_show_as_markers_in_code_text_and_outputs():
    """Trojan Source: `if access_level != "user\u202e \u2066# admin\u2069 \u2066":` shows in
    an order Python does not run. Every control becomes a visible marker, everywhere."""
    code = 'if level != "user\u202e \u2066# admin\u2069 \u2066":\n    grant()'
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell(code, outputs=[
            nbformat.v4.new_output("stream", name="stdout", text="out\u202eput"),
            nbformat.v4.new_output("error", ename="Error\u2066", evalue="v\u202e",
                                   traceback=["line\u2067"]),
            nbformat.v4.new_output("execute_result", {"text/plain": "p\u202b"}),
        ]),
        nbformat.v4.new_markdown_cell(f"text {BIDI} and `code\u202e` ![a\u202ep]({PIXEL})"),
    ])  # fmt: skip
    clean = sanitise_notebook(nb)
    assert clean.cells[0].source == (
        'if level != "user⟨U+202E⟩ ⟨U+2066⟩# admin⟨U+2069⟩ ⟨U+2066⟩":\n    grant()'
    )
    outputs = clean.cells[0].outputs
    assert outputs[0].text == "out⟨U+202E⟩put"
    assert (outputs[1].ename, outputs[1].evalue, outputs[1].traceback) == (
        "Error⟨U+2066⟩", "v⟨U+202E⟩", ["line⟨U+2067⟩"])  # fmt: skip
    assert outputs[2].data["text/plain"] == "p⟨U+202B⟩"
    shown = Reading(render_markdown(clean.cells[1].source)).visible()
    for ch in BIDI:
        assert ch not in shown and f"⟨U+{ord(ch):04X}⟩" in shown
    assert "code⟨U+202E⟩" in shown and "[image: a⟨U+202E⟩p]" in shown
    assert not any(ch in str(clean) for ch in BIDI)


def test_mathjax_links_are_broken_in_text():
    shown = Reading(render_markdown(safe_markdown(r"$\href{javascript:alert(1)}{x}$")))
    assert r"\href" not in shown.visible()
    assert (
        html.unescape(r"\frac")
        in Reading(render_markdown(safe_markdown(r"$\frac{a}{b}$"))).visible()
    )


def test_mathjax_styles_classes_and_boxes_are_broken_in_text():
    # MathJax's Safe extension still lets \style and \bbox set margins (a formula moved over
    # formgrader's score boxes), and \class/\cssId name page elements: none is course maths.
    for macro in (r"\style{margin-top:-900px}{10}", r"\bbox[margin:-9em]{10}",
                  r"\class{MJX-x}{10}", r"\cssId{MJX-y}{10}"):  # fmt: skip
        shown = Reading(render_markdown(safe_markdown(f"${macro}$"))).visible()
        name = macro.split("{")[0].split("[")[0]
        assert name not in shown, macro
    honest = Reading(render_markdown(safe_markdown(r"$\mathrm{softmax}\,\boxed{x}$")))
    assert r"\mathrm{softmax}\,\boxed{x}" in honest.visible()


def test_cell_ids_types_and_counts_are_ones_nbconvert_renders():
    # nbconvert validates the notebook before it renders: one bad field of the student's would
    # leave formgrader's page and the feedback page for that student an error, not their work
    from nbconvert import HTMLExporter

    nb = nbformat.v4.new_notebook()
    code = nbformat.v4.new_code_cell("x = 1")
    code["id"] = 'a"><img src=x onerror=alert(1)>'
    code["execution_count"] = "<img src=x onerror=alert(2)>"
    first = nbformat.v4.new_markdown_cell("first")
    first["id"] = "same"
    second = nbformat.v4.new_markdown_cell("second")
    second["id"] = "same"
    long = nbformat.v4.new_raw_cell("raw")
    long["id"] = "x" * 200
    odd = nbformat.v4.new_markdown_cell("<b>an odd kind of cell</b>")
    odd["cell_type"] = "<script>"
    nb.cells = [code, first, second, long, odd]
    clean = sanitise_notebook(nb)
    nbformat.validate(clean)
    ids = [cell["id"] for cell in clean.cells]
    assert len(set(ids)) == len(ids) and all(re.fullmatch(r"[A-Za-z0-9_-]{1,64}", i) for i in ids)
    assert clean.cells[1]["id"] == "same"  # a valid id is kept
    assert clean.cells[0].execution_count is None and clean.cells[0].source == "x = 1"
    assert clean.cells[4].cell_type == "markdown"
    assert Reading(clean.cells[4].source).tags == ["div", "pre"]
    body, _ = HTMLExporter().from_notebook_node(clean)
    assert "an odd kind of cell" in body and "onerror" not in body


def test_a_notebook_of_huge_markdown_costs_a_bounded_render_and_says_so():
    # rendering and cleaning cost ~20 us a character of a markdown table (20 MB notebooks are
    # read): a student's page is rendered up to a budget ten times the course's largest notebook's
    # markdown; a cell past it is a notice giving its size, and the cells after it still show
    from autograder.platforms.nbgrader_sanitise import MAX_SHOWN_CHARACTERS

    assert MAX_SHOWN_CHARACTERS >= 10 * 36_000
    huge = nbformat.v4.new_markdown_cell("|a|b|\n|-|-|\n" + "|x|y|\n" * (MAX_SHOWN_CHARACTERS // 6))
    raw = nbformat.v4.new_raw_cell("<b>r</b>" * (MAX_SHOWN_CHARACTERS // 8 + 1))
    html_out = nbformat.v4.new_code_cell("x")
    html_out.outputs = [
        nbformat.v4.new_output("display_data", {"text/html": "<i>o</i>" * MAX_SHOWN_CHARACTERS})
    ]
    honest = nbformat.v4.new_markdown_cell("An *honest* answer.")
    nb = nbformat.v4.new_notebook(cells=[huge, raw, html_out, honest])
    clean = sanitise_notebook(nb)
    total = MAX_SHOWN_CHARACTERS // 6 * 6 + 12
    assert "td" not in Reading(clean.cells[0].source).tags
    assert f"{total:,} characters" in Reading(clean.cells[0].source).visible()
    assert "b" not in Reading(clean.cells[1].source).tags
    assert "i" not in Reading(clean.cells[2].outputs[0].data["text/html"]).tags
    assert Reading(clean.cells[3].source).tags == ["div", "p", "em"]
    assert render_markdown(clean.cells[0].source).strip() == clean.cells[0].source
