"""A real headless Chromium driven through the DevTools protocol, to see what a page's script did.

    with Browser(tmp_path) as browser:
        visit = browser.visit(url, width=1280)   # loads, hovers and focuses everything, clicks
        visit.dialogs                             # every alert/confirm/prompt message shown
        visit.evaluate("document.title")         # the page as the reader's browser holds it

A page "runs script" when anything it carries calls alert() (or confirm/prompt), so the
hostile payloads the tests plant call alert(N) with a number naming them. Every document the
page makes, frames included, gets alert replaced before its own script runs by one that logs
"ALERT-RAN N" to the console (the protocol reports it) without blocking: a payload that would
alert again on every dialog (an autofocused input's onfocus) cannot stall the page. A dialog
that opens all the same (a document made before the replacement) is recorded and accepted. After the page has loaded (images failed, frames loaded), every element is hovered and
focused (inline on* handlers a reader's mouse would fire) and every link or area whose target
is not an http(s) page is clicked, as a curious grader would; then the page is given a short
while to act. Nothing reaches the network: every host but 127.0.0.1 resolves to nothing.

Debian's Chromium (`apt-get install chromium`), with the flags the other browser tests use, a
fresh profile per browser. The protocol is spoken with websocket-client (a dependency of
jupyter_server).
"""

import json
import subprocess
import time
import urllib.request
from pathlib import Path

from headless_chromium import CHROMIUM_FLAGS, chromium

RECORD_ALERTS = r"""
(() => {
  const record = (answer) => function (message) {
    console.debug('ALERT-RAN ' + String(message));
    return answer;
  };
  window.alert = record(undefined);
  window.confirm = record(false);
  window.prompt = record(null);
})();
"""
RAN = "ALERT-RAN "
HOVER_AND_CLICK = r"""
(async () => {
  const fire = (el, type, Kind) => {
    try { el.dispatchEvent(new Kind(type, {bubbles: true, cancelable: true})); } catch (e) {}
  };
  for (const el of document.querySelectorAll('*')) {
    for (const type of ['mouseover', 'mouseenter', 'mousemove', 'pointerover']) {
      fire(el, type, MouseEvent);
    }
    fire(el, 'focus', FocusEvent);
    fire(el, 'animationstart', Event);
  }
  let clicked = 0;
  for (const el of document.querySelectorAll('a, area')) {
    let href = el.href;
    if (href && typeof href === 'object') href = href.animVal;  // an SVG <a>
    if (!href) href = el.getAttribute('href') || el.getAttribute('xlink:href') || '';
    let protocol = '';
    try { protocol = new URL(href, document.baseURI).protocol; } catch (e) { continue; }
    if (protocol === 'http:' || protocol === 'https:') continue;  // a page: leaves this one
    fire(el, 'click', MouseEvent);
    clicked += 1;
  }
  for (const form of document.querySelectorAll('form')) {
    try { form.requestSubmit(); } catch (e) {}
  }
  await new Promise(resolve => setTimeout(resolve, 1500));
  return clicked;
})()
"""


class Visit:
    def __init__(self, browser):
        self.browser, self.dialogs, self.clicked = browser, [], 0

    def evaluate(self, expression):
        return self.browser.evaluate(expression)


class Browser:
    def __init__(self, tmp_path):
        self.profile = Path(tmp_path) / "cdp-profile"
        self.profile.mkdir(parents=True, exist_ok=True)
        self.process = self.socket = None
        self._next_id = 0
        self._dialogs = []

    def __enter__(self):
        import websocket

        (self.profile / "DevToolsActivePort").unlink(missing_ok=True)
        self.process = subprocess.Popen(
            [chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={self.profile}"]
            + [
                "--remote-debugging-port=0",
                "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
                "about:blank",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        port_file = self.profile / "DevToolsActivePort"
        for _ in range(600):  # a bound for a browser that never starts, not a timing check
            if port_file.exists() and port_file.read_text().strip():
                break
            assert self.process.poll() is None, "chromium stopped before it listened"
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=30) as r:
            pages = [t for t in json.loads(r.read()) if t["type"] == "page"]
        self.socket = websocket.create_connection(
            pages[0]["webSocketDebuggerUrl"], timeout=60, suppress_origin=True
        )
        self.call("Page.enable")
        self.call("Runtime.enable")
        self.call("Page.addScriptToEvaluateOnNewDocument", {"source": RECORD_ALERTS})
        return self

    def __exit__(self, *exc):
        if self.socket is not None:
            self.socket.close()
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def _handle(self, message):
        method, params = message.get("method"), message.get("params", {})
        if method == "Page.javascriptDialogOpening":
            self._dialogs.append(params.get("message", ""))
            self._send("Page.handleJavaScriptDialog", {"accept": True})
        if method == "Runtime.consoleAPICalled":
            for arg in params.get("args", []):
                value = arg.get("value")
                if isinstance(value, str) and value.startswith(RAN):
                    self._dialogs.append(value[len(RAN) :])

    def _send(self, method, params=None):
        self._next_id += 1
        self.socket.send(
            json.dumps({"id": self._next_id, "method": method, "params": params or {}})
        )
        return self._next_id

    def call(self, method, params=None):
        sent = self._send(method, params)
        while True:
            message = json.loads(self.socket.recv())
            self._handle(message)
            if message.get("id") == sent:
                assert "error" not in message, message
                return message.get("result", {})

    def wait_for(self, event):
        while True:
            message = json.loads(self.socket.recv())
            self._handle(message)
            if message.get("method") == event:
                return message

    def evaluate(self, expression):
        result = self.call(
            "Runtime.evaluate",
            {"expression": expression, "awaitPromise": True, "returnByValue": True},
        )
        assert "exceptionDetails" not in result, result
        return result["result"].get("value")

    def visit(self, url, width=1280, height=900, interact=True):
        """Load url at width x height, hover, focus and click as a reader would; the Visit."""
        self._dialogs = []
        self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )
        self.call("Page.navigate", {"url": url})
        self.wait_for("Page.loadEventFired")
        visit = Visit(self)
        if interact:
            visit.clicked = self.evaluate(HOVER_AND_CLICK)
            self.evaluate("new Promise(resolve => setTimeout(resolve, 500))")
        visit.dialogs = list(self._dialogs)
        return visit
