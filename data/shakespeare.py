"""Tiny Shakespeare: 1 MB of plays, the classic corpus for a first character-level model.

The course does not ship the text; this loader finds it or downloads it once, and checks every
copy byte for byte (size and SHA-256), so a truncated download or a different file fails loudly
instead of quietly training on the wrong data.
"""

import hashlib
import os
import urllib.request
import warnings
from pathlib import Path

__all__ = ["load_tinyshakespeare", "tiny_shakespeare_path"]

URL = "https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt"
N_BYTES = 1_115_394
SHA256 = "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"
ENV_VAR = "TINYSHAKESPEARE_PATH"
CACHE_NAME = "tinyshakespeare.txt"
# The course repository is checked out with a `shared/` folder beside it (as CI does).
REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_PATH = REPO_ROOT.parent / "shared" / "data" / "tinyshakespeare" / "input.txt"
TIMEOUT_SECONDS = 20


def default_cache_dir():
    """$XDG_CACHE_HOME/attention-course, or ~/.cache/attention-course."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "attention-course"


def _check(data, origin):
    digest = hashlib.sha256(data).hexdigest()
    if len(data) != N_BYTES or digest != SHA256:
        raise ValueError(
            f"{origin} is not tiny Shakespeare: it has {len(data):,} bytes and SHA-256 {digest}, "
            f"expected {N_BYTES:,} bytes and SHA-256 {SHA256}. It may be truncated or a different "
            f"file: replace it with a fresh download of {URL}"
        )


def _cache_file(cache_dir):
    return Path(cache_dir if cache_dir is not None else default_cache_dir()) / CACHE_NAME


def tiny_shakespeare_path(cache_dir=None):
    """The local file load_tinyshakespeare() would read (not yet verified), or None.

    None means it would have to download. An explicit $TINYSHAKESPEARE_PATH is returned even
    if the file is missing: loading then says so rather than silently looking elsewhere.
    """
    if os.environ.get(ENV_VAR):
        return Path(os.environ[ENV_VAR])
    for candidate in (SHARED_PATH, _cache_file(cache_dir)):
        if candidate.is_file():
            return candidate
    return None


def _read_verified(path, how):
    if not path.is_file():
        raise FileNotFoundError(f"{how} points to {path}, which is not a file")
    data = path.read_bytes()
    _check(data, path)
    return data.decode("utf-8")


def _help(cache_file, reason):
    return (
        f"Tiny Shakespeare not found ({reason}).\n"
        f"Download it from\n    {URL}\n"
        f"and save it as\n    {cache_file}\n"
        f"or pass its location: load_tinyshakespeare(path='.../input.txt'), "
        f"or set the environment variable {ENV_VAR}=.../input.txt"
    )


def load_tinyshakespeare(path=None, cache_dir=None, download=True):
    """The text of tiny Shakespeare (1,115,394 characters) as a str.

    Looks, in order, at: `path`; the file named by $TINYSHAKESPEARE_PATH; the course's shared
    copy (../shared/data/tinyshakespeare/input.txt next to the repository); the cache
    (`cache_dir`, default default_cache_dir(), file tinyshakespeare.txt); and finally, if
    `download`, fetches it into the cache. Each copy is verified; a wrong one raises ValueError,
    and FileNotFoundError says what to do when there is no copy and no network.
    """
    if path is not None:
        return _read_verified(Path(path), "path=")
    local = tiny_shakespeare_path(cache_dir)
    if local is not None:
        return _read_verified(local, f"${ENV_VAR}" if os.environ.get(ENV_VAR) else "the local copy")
    cache_file = _cache_file(cache_dir)
    if not download:
        raise FileNotFoundError(_help(cache_file, "no local copy, and download=False"))

    try:
        with urllib.request.urlopen(URL, timeout=TIMEOUT_SECONDS) as response:
            data = response.read()
    except OSError as err:  # URLError, timeouts and refused connections are all OSErrors
        raise FileNotFoundError(
            _help(cache_file, f"no local copy, and the download failed: {err}")
        ) from err
    _check(data, URL)
    try:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        # write then rename, so an interrupted write never leaves a half file in the cache
        partial = cache_file.with_name(CACHE_NAME + ".part")
        partial.write_bytes(data)
        os.replace(partial, cache_file)
    except OSError as err:
        warnings.warn(f"could not cache tiny Shakespeare in {cache_file}: {err}", stacklevel=2)
    return data.decode("utf-8")
