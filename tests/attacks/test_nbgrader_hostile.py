"""A hostile student in an nbgrader course: the pages the instructor grades on and the feedback
pages nbgrader makes run none of the student's script, and still show honest work (issue 29).

One course with notebook 01 as its only assignment, set up as `nbgrader init` does, graded by
`python -m autograder nbgrader grade`. One student, mallory, hands in notebook 01 solved (with
a wrong `percentages`, so that a test cell carries a long failing verdict) and loaded with
payloads: raw HTML, markdown link syntax, raw cells, outputs of every mime type, attachments,
hostile metadata, an exception message. Each payload calls alert(N) when it runs. Both pages
are opened in a real headless Chromium (tests/support/browser_cdp.py): formgrader's grading page
(served by Jupyter, logged in as the instructor) and `nbgrader generate_feedback`'s page. Every
element is hovered and focused and every non-http(s) link clicked; no dialog may open, and the
notebook's part of the page may hold no script, frame, form, style, event handler or
javascript:/vbscript:/data: target. The same notebook's honest markdown (maths, a table, a
https link, emphasis) shows, and its remote image as a link to it that the page never fetches
(issue 39). The verdicts wrap at laptop width and their failures are red, measured in the same
browser (issue 28, item 7).
"""

import base64
import contextlib
import http.server
import shutil
import struct
import sys
import threading
import zlib
from pathlib import Path

import nbformat
import pytest
from browser_cdp import Browser
from fixtures import (
    NB01,
    TIMESTAMP,
    UNNORMALISED,
    formgrader_server,
    released_with,
    run,
    without_venv_on_path,
)

pytestmark = pytest.mark.slow  # grades an nbgrader course in the sandbox, drives Chromium

REPO = Path(__file__).resolve().parents[2]
SECRET = "hostile-test-secret"
STUDENT = "mallory"


def png(width=8, height=8):
    """A small red PNG, made here (the honest image)."""
    row = b"\x00" + b"\xd0\x20\x20" * width
    chunks = [
        (b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)),
        (b"IDAT", zlib.compress(row * height)),
        (b"IEND", b""),
    ]
    out = b"\x89PNG\r\n\x1a\n"
    for kind, data in chunks:
        out += struct.pack(">I", len(data)) + kind + data
        out += struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    return out


# -- the payloads: each calls alert(N) if it ever runs -------------------------------------------
HTML_PAYLOADS = {  # raw HTML inside markdown
    1: "<img src=x onerror=alert(1)>",
    2: "<script>alert(2)</script>",
    3: "<svg onload=alert(3)>",
    4: '<a href="javascript:alert(4)">plain javascript link</a>',
    5: '<a href="jav&#x09;ascript:alert(5)">entity tab link</a>',
    6: '<a href="JaVaScRiPt:alert(6)">mixed case link</a>',
    7: '<a href=" &#14; javascript:alert(7)">leading control link</a>',
    8: '<iframe src="javascript:alert(8)"></iframe>',
    9: '<iframe srcdoc="<script>parent.alert(9)</script>"></iframe>',
    10: '<object data="javascript:alert(10)"></object>',
    11: '<embed src="javascript:alert(11)">',
    12: '<form action="javascript:alert(12)"><button>go</button></form>',
    13: "<details open ontoggle=alert(13)><summary>s</summary>d</details>",
    14: "<body onload=alert(14)>",
    15: "<svg><script>alert(15)</script></svg>",
    16: '<svg><a xlink:href="javascript:alert(16)"><text x="10" y="20">svg link</text></a></svg>',
    17: "<math><mtext><table><mglyph><style><img src=x onerror=alert(17)></style></mglyph>",
    18: '<meta http-equiv="refresh" content="0;url=javascript:alert(18)">',
    19: '<base href="javascript:alert(19)//"><a href="relative">based link</a>',
    20: '<img src=x onerror="&#97;lert(20)">',
    21: "<IMG SRC=x OnErRoR=alert(21)>",
    22: "<img/src=x/onerror=alert(22)>",
    23: "<<img src=x onerror=alert(23)>>",
    24: '<img src="x"\nonerror="alert(24)">',
    25: "<input autofocus onfocus=alert(25)>",
    26: "<video><source onerror=alert(26)></video>",
    27: '<noscript><p title="</noscript><img src=x onerror=alert(27)>"></noscript>',
    28: '<!--<img src="--><img src=x onerror=alert(28)//">',
    29: '<a href="data:text/html;base64,PHNjcmlwdD5hbGVydCgyOSk8L3NjcmlwdD4=">data link</a>',
    30: '<a href="vbscript:alert(30)">vbscript link</a>',
    31: '<div style="width:100%;height:100%" onmouseover="alert(31)">hover me</div>',
    32: '<a href="#" onclick="alert(32)">onclick link</a>',
    33: "<style>@import 'javascript:alert(33)';</style>",
    34: '<img src="data:image/svg+xml;base64,'
    + base64.b64encode(b'<svg xmlns="http://www.w3.org/2000/svg" onload="alert(34)"/>').decode()
    + '">',
    35: "<xmp><img src=x onerror=alert(35)></xmp>",
    36: "<textarea><img src=x onerror=alert(36)></textarea>",
}
MARKDOWN_PAYLOADS = {  # markdown syntax the renderer turns into links and images
    40: "[markdown link](javascript:alert(40))",
    41: "[markdown upper](JAVASCRIPT:alert(41))",
    42: "<javascript:alert(42)>",
    43: "[reference link][r43]\n\n[r43]: javascript:alert(43)",
    44: "[markdown entity](&#106;avascript:alert(44))",
    45: "[markdown colon](javascript&#58;alert(45))",
    46: '![markdown image](x" onerror="alert(46))',
    47: "[markdown spaces](<javascript:alert(47)>)",
    48: r"Maths link: $\href{javascript:alert(48)}{maths link}$",
}
SVG_ATTACHMENT = base64.b64encode(
    b'<svg xmlns="http://www.w3.org/2000/svg" onload="alert(70)"><script>alert(71)</script></svg>'
).decode()


def honest_markdown(image_url):
    return (
        "## My notes\n\n"
        r"The scaled scores are $\frac{QK^\top}{\sqrt{d_k}}$, with **bold**, *italic* and `code`."
        "\n\n| query | key | score |\n|:--|:-:|--:|\n| orange | lemon | 0.9 |\n\n"
        "See [the attention paper](https://arxiv.org/abs/1706.03762).\n\n"
        f"![a chart]({image_url})\n\n"
        r"$$\mathrm{softmax}(x)_i = \frac{e^{x_i}}{\sum_j e^{x_j}}$$"
        "\n"
    )


def hostile_notebook(image_url):
    nb = released_with(NB01, {"lookup": "solution", "similarity": "solution",
                              "percentages": UNNORMALISED, "soft_lookup": "solution"})  # fmt: skip
    md = nbformat.v4.new_markdown_cell
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "written_nearest_key":
            # the written answer the instructor opens to grade
            cell.source = "My answer: the nearest key wins.\n\n" + "\n\n".join(
                [HTML_PAYLOADS[1], HTML_PAYLOADS[4], MARKDOWN_PAYLOADS[40]]
            )
    html_cell = md("\n\n".join(f"{n}. {p}" for n, p in HTML_PAYLOADS.items()))
    markdown_cell = md("\n\n".join(MARKDOWN_PAYLOADS.values()))
    attachment_cell = md("![svg attachment](attachment:evil.svg)")
    attachment_cell["attachments"] = {"evil.svg": {"image/svg+xml": SVG_ATTACHMENT}}
    tagged = md("a cell with hostile tags")
    tagged.metadata["tags"] = ['x" onmouseover="alert(80)', "<img src=x onerror=alert(81)>"]
    tagged["id"] = '"><img src=x onerror=alert(86)>'  # nbformat would refuse to render it
    fake_answer = md("a cell claiming to be an answer")
    fake_answer.metadata["nbgrader"] = {
        "solution": True,
        "grade": True,
        "points": 1,
        "grade_id": '"><img src=x onerror=alert(82)>',
        "schema_version": 3,
    }
    raw_plain = nbformat.v4.new_raw_cell("<img src=x onerror=alert(50)><script>alert(51)</script>")
    raw_html = nbformat.v4.new_raw_cell('<a href="javascript:alert(52)">raw link</a>')
    raw_html.metadata["raw_mimetype"] = "text/html"
    raw_md = nbformat.v4.new_raw_cell("[raw markdown](javascript:alert(53))")
    raw_md.metadata["raw_mimetype"] = "text/markdown"
    outputs = nbformat.v4.new_code_cell("print('outputs of every kind')")
    outputs.outputs = [
        nbformat.v4.new_output("display_data", {"text/html": "<img src=x onerror=alert(60)>"}),
        nbformat.v4.new_output(
            "display_data",
            {"image/svg+xml": '<svg onload="alert(61)"><script>alert(62)</script></svg>'},
        ),
        nbformat.v4.new_output("display_data", {"text/markdown": "[out](javascript:alert(63))"}),
        nbformat.v4.new_output("display_data", {"application/javascript": "alert(64)"}),
        nbformat.v4.new_output(
            "display_data",
            {"application/vnd.jupyter.widget-view+json": {"model_id": "');alert(65);//"}},
        ),
        nbformat.v4.new_output(
            "display_data",
            {"image/png": base64.b64encode(png()).decode(), "text/plain": "<Figure>"},
            metadata={"image/png": {"width": "1 onerror=alert(66)"}},
        ),
        nbformat.v4.new_output("execute_result", {"text/html": "<svg onload=alert(67)>"}),
    ]
    code_with_html = nbformat.v4.new_code_cell("# <img src=x onerror=alert(90)>\nx = 1")
    raiser = nbformat.v4.new_code_cell('raise ValueError("<img src=x onerror=alert(91)>")')
    nb.cells += [
        md(honest_markdown(image_url)),
        html_cell,
        markdown_cell,
        attachment_cell,
        tagged,
        fake_answer,
        raw_plain,
        raw_html,
        raw_md,
        outputs,
        code_with_html,
        raiser,
    ]
    nb.metadata["widgets"] = {
        "application/vnd.jupyter.widget-state+json": {"x": "</script><script>alert(83)</script>"}
    }
    nb.metadata["title"] = "</title><script>alert(84)</script>"
    nb.metadata["language_info"] = {
        "name": "python",
        "pygments_lexer": '"><img src=x onerror=alert(85)>',
    }
    return nb


class _Quiet(http.server.SimpleHTTPRequestHandler):
    asked = []  # every path requested, in order: what the pages made the browser fetch

    def do_GET(self):  # noqa: N802 - http.server's name
        _Quiet.asked.append(self.path)
        super().do_GET()

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def static_server(folder):
    """The course folder over http on 127.0.0.1 (the honest image, the feedback pages)."""
    handler = lambda *a, **k: _Quiet(*a, directory=str(folder), **k)  # noqa: E731
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """The graded course, its generated feedback, a static server and formgrader."""
    from autograder.platforms.nbgrader import generate_assignments, write_config

    course = tmp_path_factory.mktemp("hostile") / "hostile_course"
    (course / "source" / NB01).mkdir(parents=True)
    write_config(course)
    shutil.copy2(REPO / "solutions" / f"{NB01}.ipynb", course / "source" / NB01)
    generate_assignments(course, [NB01])
    (course / "chart.png").write_bytes(png(40, 20))
    with contextlib.ExitStack() as stack:
        static = stack.enter_context(static_server(course))
        folder = course / "submitted" / STUDENT / NB01
        folder.mkdir(parents=True)
        nbformat.write(hostile_notebook(f"{static}/chart.png"), folder / f"{NB01}.ipynb")
        (folder / "timestamp.txt").write_text(TIMESTAMP)
        graded = run(
            [sys.executable, "-m", "autograder", "nbgrader", "grade", str(course)]
            + ["--secret", SECRET, "--workers", "1", "--quiet"],
            env=without_venv_on_path(),
        )
        assert graded.returncode == 0, graded.stdout + graded.stderr
        feedback = run(["nbgrader", "generate_feedback", NB01], cwd=course)
        assert feedback.returncode == 0, feedback.stdout + feedback.stderr
        formgrader = stack.enter_context(
            formgrader_server(course, tmp_path_factory.mktemp("hostile-home"))
        )
        browser = stack.enter_context(Browser(tmp_path_factory.mktemp("hostile-browser")))
        yield {"path": course, "static": static, "formgrader": formgrader, "browser": browser}


# What the notebook part of a page may not hold, read from the DOM the browser built.
FORBIDDEN_IN_NOTEBOOK = r"""
(() => {
  const root = document.querySelector('#notebook-container') || document.body;
  const found = [];
  const banned = 'script, iframe, frame, object, embed, form, meta, base, link, style, svg, '
    + 'math, applet, noscript, template, xmp, textarea, input, button, select, video, audio, '
    + 'source';
  const ours = new Set(Array.from(root.querySelectorAll(
    '.score-saved, .scoring-buttons, .scoring-buttons *, input.score, input.extra-credit, '
    + 'textarea.comment, .panel-footer *')));  // formgrader's own grading controls
  for (const el of root.querySelectorAll(banned)) {
    if (!ours.has(el)) found.push('element ' + el.outerHTML.slice(0, 120));
  }
  for (const el of root.querySelectorAll('*')) {
    for (const attr of el.attributes) {
      const name = attr.name.toLowerCase();
      if (name.startsWith('on')) found.push('handler ' + el.outerHTML.slice(0, 120));
      if (['href', 'src', 'xlink:href', 'action', 'formaction', 'data', 'srcdoc', 'background',
           'poster', 'srcset'].includes(name)) {
        let protocol = '';
        try { protocol = new URL(attr.value, document.baseURI).protocol; } catch (e) {}
        const image = /^data:image\/(png|jpeg|gif);base64,/i.test(attr.value.trim());
        if (['javascript:', 'vbscript:', 'data:', 'file:'].includes(protocol) && !image) {
          found.push('target ' + el.outerHTML.slice(0, 120));
        }
      }
    }
  }
  return found;
})()
"""

HONEST = r"""
(() => {
  const root = document.querySelector('#notebook-container') || document.body;
  const text = root.innerText;
  const link = Array.from(root.querySelectorAll('a'))
    .find(a => a.getAttribute('href') === 'https://arxiv.org/abs/1706.03762');
  const image = Array.from(root.querySelectorAll('img')).find(i => i.alt === 'a chart');
  const imageLink = Array.from(root.querySelectorAll('a'))
    .find(a => a.innerText === '[image: a chart]');
  const table = Array.from(root.querySelectorAll('table'))
    .find(t => t.innerText.includes('orange'));
  const cells = table ? Array.from(table.querySelectorAll('td')).map(td => td.innerText.trim()) : [];
  const strong = Array.from(root.querySelectorAll('strong, b')).map(b => b.innerText);
  return {
    inline_maths: text.includes('\\frac{QK^\\top}{\\sqrt{d_k}}'),
    display_maths: text.includes('\\frac{e^{x_i}}{\\sum_j e^{x_j}}'),
    link: link ? link.innerText : null,
    image_width: image ? image.naturalWidth : null,
    image_link: imageLink ? new URL(imageLink.href).pathname : null,
    table: cells,
    bold: strong.includes('bold'),
    answer: text.includes('My answer: the nearest key wins.'),
    payload_text_shown: text.includes('markdown link') && text.includes('plain javascript link'),
  };
})()
"""

# Each verdict's box: does it scroll sideways, would it without wrapping, are failures red?
VERDICTS = r"""
(() => {
  const root = document.querySelector('#notebook-container') || document.body;
  const boxes = [];
  for (const area of root.querySelectorAll('.output_area')) {
    if (!area.innerText.includes("points from the course's hidden tests")) continue;
    const box = area.querySelector('.output_subarea');
    const pre = box.querySelector('pre') || box;
    const unwrapped = pre.cloneNode(true);
    for (const el of [unwrapped, ...unwrapped.querySelectorAll('*')]) {
      el.style.whiteSpace = 'pre';
      el.style.overflowWrap = 'normal';
      el.style.wordBreak = 'normal';
    }
    unwrapped.style.overflow = 'auto';
    box.appendChild(unwrapped);
    const wouldScroll = unwrapped.scrollWidth > unwrapped.clientWidth;
    unwrapped.remove();
    const scrolls = [box, pre].some(el => el.scrollWidth > el.clientWidth);
    const red = [];
    const walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      if (!node.data.includes('✗')) continue;
      const [r, g, b] = getComputedStyle(node.parentElement).color.match(/\d+/g).map(Number);
      red.push(r >= 150 && g <= 90 && b <= 90);
    }
    boxes.push({text: area.innerText.slice(0, 80), wouldScroll, scrolls, red});
  }
  const page = document.scrollingElement;
  return {boxes, pageScrolls: page.scrollWidth > page.clientWidth};
})()
"""


def formgrader_page(hostile):
    from fixtures import formgrader_api

    [submission] = formgrader_api(hostile["formgrader"], f"submitted_notebooks/{NB01}/{NB01}")
    base, token = hostile["formgrader"]
    return f"{base}/login?token={token}&next=/formgrader/submissions/{submission['id']}/"


def feedback_page(hostile):
    return f"{hostile['static']}/feedback/{STUDENT}/{NB01}/{NB01}.html"


PAGES = {"formgrader": formgrader_page, "feedback": feedback_page}


@pytest.mark.parametrize("page", PAGES)
def test_no_script_of_the_students_runs_in_the_page(hostile, page):
    visit = hostile["browser"].visit(PAGES[page](hostile))
    assert visit.evaluate("document.body.innerText").strip(), "the page rendered nothing"
    assert visit.dialogs == [], f"the student's script ran: alert({', '.join(visit.dialogs)})"
    forbidden = visit.evaluate(FORBIDDEN_IN_NOTEBOOK)
    assert forbidden == [], "\n".join(forbidden)


@pytest.mark.parametrize("page", PAGES)
def test_honest_markdown_still_shows(hostile, page):
    _Quiet.asked.clear()
    visit = hostile["browser"].visit(PAGES[page](hostile), interact=False)
    shown = visit.evaluate(HONEST)
    assert "/chart.png" not in _Quiet.asked  # the student's image was not fetched
    assert shown == {
        "inline_maths": True,
        "display_maths": True,
        "link": "the attention paper",
        "image_width": None,  # a remote image is a link to it, never fetched (issue 39)
        "image_link": "/chart.png",
        "table": ["orange", "lemon", "0.9"],
        "bold": True,
        "answer": True,
        "payload_text_shown": True,
    }


@pytest.mark.parametrize("page", PAGES)
def test_verdicts_wrap_at_laptop_width_and_failures_are_red(hostile, page):
    visit = hostile["browser"].visit(PAGES[page](hostile), width=1280, interact=False)
    measured = visit.evaluate(VERDICTS)
    boxes = measured["boxes"]
    assert len(boxes) == 4, boxes  # notebook 01's four graded names
    assert any(box["wouldScroll"] for box in boxes), "no verdict is long enough to test wrapping"
    for box in boxes:
        assert not box["scrolls"], box
    failing = [box for box in boxes if box["red"]]
    assert failing, "no failing verdict found"
    for box in failing:
        assert all(box["red"]), box
    assert not measured["pageScrolls"]


def test_the_autograded_notebook_keeps_the_students_code_as_text(hostile):
    """Sanitising touches what is rendered as HTML, never the code the instructor reads."""
    nb = nbformat.read(
        hostile["path"] / "autograded" / STUDENT / NB01 / f"{NB01}.ipynb", as_version=4
    )
    sources = [c.source.strip() for c in nb.cells if c.cell_type == "code"]
    assert "# <img src=x onerror=alert(90)>\nx = 1" in sources
    assert UNNORMALISED.strip() in sources
