"""What the instructor's browser fetches and shows from a student's notebook and messages, in a
real headless Chromium (tests/support/browser_cdp.py): a remote image in a student's markdown is never
fetched, and bidi control characters show as visible markers, on the notebook pages nbgrader
renders (formgrader's and generate_feedback's, both nbconvert's HTMLExporter over the
sanitised notebook) and on our own feedback page.

The "remote" host is a server on 127.0.0.1 run here, which records every request it gets: the
oracle is what reached it, not what the page's HTML says.

Chromium is Debian's `chromium` (`apt-get install chromium`); see tests/support/headless_chromium.py.
"""

import base64
import functools
import http.server
import threading

import nbformat
import pytest
from browser_cdp import Browser

from autograder.curriculum import NOTEBOOKS
from autograder.platforms.nbgrader_sanitise import sanitise_notebook
from autograder.report import render_feedback

pytestmark = pytest.mark.slow  # a real headless Chromium

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 40).decode()
OVERRIDE = "\u202e"  # RIGHT-TO-LEFT OVERRIDE
TROJAN = 'if level != "user\u202e \u2066# admin\u2069 \u2066":\n    grant()'


class _Recording(http.server.SimpleHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - http.server's name
        self.server.requests.append(self.path)
        super().do_GET()

    def log_message(self, *args):
        pass


@pytest.fixture
def server(tmp_path):
    """A server of tmp_path on 127.0.0.1 that records the path of every request."""
    handler = functools.partial(_Recording, directory=str(tmp_path))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.requests = []
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield httpd
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def _hostile_notebook(host):
    pixel = f"http://{host}/pixel"
    entities = "".join(f"&#{ord(ch)};" for ch in f"{pixel}-entities")
    markdown = "\n\n".join(
        [
            f"![chart]({pixel}-markdown)",
            f'<img src="{pixel}-img" alt="chart">',
            f'<img src="{entities}">',
            f'<img srcset="{pixel}-srcset 1x" src="data:image/png;base64,{PNG}">',
            f'<p style="background-color: url({pixel}-css)">styled</p>',
            f"<span>text{OVERRIDE}reversed</span>",
        ]
    )
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell(markdown),
        nbformat.v4.new_code_cell(
            TROJAN,
            outputs=[
                nbformat.v4.new_output("stream", name="stdout", text=f"out{OVERRIDE}put\n"),
                nbformat.v4.new_output(
                    "display_data", {"text/html": f'<img src="{pixel}-output">', "text/plain": "x"}
                ),
            ],
        ),
    ]
    return nb


def test_the_notebook_pages_fetch_no_remote_image_and_show_bidi_markers(tmp_path, server):
    from nbconvert import HTMLExporter

    host = f"127.0.0.1:{server.server_port}"
    (tmp_path / "pixel").write_bytes(base64.b64decode(PNG))
    page, _ = HTMLExporter().from_notebook_node(sanitise_notebook(_hostile_notebook(host)))
    (tmp_path / "page.html").write_text(page, encoding="utf-8")
    # the oracle works: the same notebook as the student wrote it fetches the pixel
    raw, _ = HTMLExporter().from_notebook_node(_hostile_notebook(host))
    (tmp_path / "raw.html").write_text(raw, encoding="utf-8")
    with Browser(tmp_path / "browser") as browser:
        browser.visit(f"http://{host}/raw.html", interact=False)
        assert [r for r in server.requests if r.startswith("/pixel")]
        server.requests.clear()

        visit = browser.visit(f"http://{host}/page.html")
        text = visit.evaluate("document.body.innerText")
        links = visit.evaluate("Array.from(document.links, a => a.href)")
    asked = [r for r in server.requests if r != "/favicon.ico"]  # the browser's own
    assert asked == ["/page.html"]  # nothing else, pixel or otherwise
    assert "[image: chart]" in text and f"http://{host}/pixel-markdown" in links
    assert OVERRIDE not in text and "\u2066" not in text
    assert '"user⟨U+202E⟩ ⟨U+2066⟩# admin⟨U+2069⟩ ⟨U+2066⟩"' in text
    assert "text⟨U+202E⟩reversed" in text and "out⟨U+202E⟩put" in text


def test_our_feedback_page_shows_bidi_markers(tmp_path, server):
    stem = NOTEBOOKS[0].stem
    message = f"expected 'user{OVERRIDE}nimda' but got 'admin'"
    payload = {
        "score": 0.0,
        "max_score": 1.0,
        "output": "",
        "execution_time": 1.0,
        "student": f"ada{OVERRIDE}",
        "notebooks": {stem: {"ran": True, "executed_ok": True, "cell_errors": [],
                             "messages": [], "score": 0.0, "max_score": 1.0}},
        "tests": [{"name": f"{NOTEBOOKS[0].graded[0]}: one", "score": 0.0, "max_score": 1.0,
                   "status": "failed", "output": message, "notebook": stem,
                   "function": NOTEBOOKS[0].graded[0], "misconceptions": [],
                   "reason": "failed"}],
    }  # fmt: skip
    (tmp_path / "feedback.html").write_text(render_feedback(payload), encoding="utf-8")
    with Browser(tmp_path / "browser") as browser:
        visit = browser.visit(f"http://127.0.0.1:{server.server_port}/feedback.html")
        text = visit.evaluate("document.body.innerText")
    assert OVERRIDE not in text
    assert "user⟨U+202E⟩nimda" in text
