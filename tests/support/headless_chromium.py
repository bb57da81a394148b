"""Debian's headless Chromium, as every browser test here starts it: the flags, the binary (or
a clear failure saying how to install it), and one run that prints the page's DOM.

Chromium is Debian's `chromium` (`apt-get install chromium`; `.ci/run` installs it). Without it
a test fails, saying so, unless FEEDBACK_BROWSER_OPTIONAL=1 is set (then it is skipped: never in
CI).
"""

import json
import os
import shutil
import subprocess
from html.parser import HTMLParser

import pytest

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
]
INSTALL = "apt-get install -y chromium"


def chromium():
    found = (
        os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    )
    if found:
        return found
    message = f"Chromium is not installed, so the feedback page cannot be checked: run `{INSTALL}`"
    if os.environ.get("FEEDBACK_BROWSER_OPTIONAL") == "1":
        pytest.skip(message + " (skipped because FEEDBACK_BROWSER_OPTIONAL=1)")
    pytest.fail(message + " (or set FEEDBACK_BROWSER_OPTIONAL=1 to skip this file locally)")


def run_chromium(args, tmp_path):
    profile = tmp_path / "chromium-profile"
    profile.mkdir(exist_ok=True)
    run = subprocess.run(
        [chromium(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        text=True,
        timeout=120,  # a safety bound: a page renders in a few seconds
    )
    assert run.returncode == 0, f"chromium failed ({run.returncode}):\n{run.stderr[-2000:]}"
    return run.stdout


class _Probe(HTMLParser):
    def __init__(self, element_id):
        super().__init__()
        self.element_id, self.inside, self.data = element_id, False, []

    def handle_starttag(self, tag, attrs):
        self.inside = tag == "pre" and ("id", self.element_id) in attrs

    def handle_endtag(self, tag):
        self.inside = False

    def handle_data(self, data):
        if self.inside:
            self.data.append(data)


def probe_report(dom, element_id="probe-report"):
    """The JSON a page's probe script wrote into <pre id=element_id>, read from the DOM
    Chromium dumped (`--dump-dom`)."""
    parser = _Probe(element_id)
    parser.feed(dom)
    return json.loads("".join(parser.data))
