"""The sandboxes' matplotlib font cache (autograder/sandbox/fontcache.py) is built once and kept
per matplotlib version in the grader's cache folder; later runs copy it instead of importing
matplotlib again, and a kept file that is a link or not JSON is never copied."""

import json

import pytest

from autograder.sandbox import fontcache

FONTS = {"_version": 390, "ttflist": [{"fname": "/usr/share/fonts/x.ttf", "name": "X"}]}


@pytest.fixture
def builds(monkeypatch):
    """Counts the builds; a build writes FONTS as matplotlib would."""
    calls = []

    def build(target):
        calls.append(target)
        (target / "fontlist-v390.json").write_text(json.dumps(FONTS))

    monkeypatch.setattr(fontcache, "_build", build)
    return calls


def test_the_cache_is_built_once_and_then_copied(tmp_path, builds):
    kept = tmp_path / "kept"
    assert fontcache.warm(tmp_path / "run1", kept)
    assert fontcache.warm(tmp_path / "run2", kept)
    assert len(builds) == 1
    assert json.loads((tmp_path / "run2" / "fontlist-v390.json").read_text()) == FONTS
    assert [p.name for p in kept.iterdir()] == ["fontlist-v390.json"]  # no partial file left


@pytest.mark.parametrize("kind", ["link", "not json"])
def test_a_kept_file_that_is_a_link_or_not_json_is_rebuilt(tmp_path, builds, kind):
    kept = tmp_path / "kept"
    kept.mkdir()
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"secret": 1}))
    if kind == "link":
        (kept / "fontlist-v390.json").symlink_to(secret)
    else:
        (kept / "fontlist-v390.json").write_text("{not json")
    assert fontcache.warm(tmp_path / "run", kept)
    assert len(builds) == 1
    assert json.loads((tmp_path / "run" / "fontlist-v390.json").read_text()) == FONTS


def test_without_a_kept_folder_every_run_builds(tmp_path, builds):
    assert fontcache.warm(tmp_path / "a", kept=False)
    assert fontcache.warm(tmp_path / "b", kept=False)
    assert len(builds) == 2


@pytest.mark.slow  # builds matplotlib's font cache
def test_a_real_build_writes_matplotlibs_font_list(tmp_path):
    kept = tmp_path / "kept"
    assert fontcache.warm(tmp_path / "run", kept)
    (built,) = (tmp_path / "run").glob("fontlist-*.json")
    assert "ttflist" in json.loads(built.read_text())
    assert (kept / built.name).read_bytes() == built.read_bytes()


def test_the_kept_folder_is_per_matplotlib_version_under_the_cache_home(tmp_path):
    from importlib.metadata import version

    from autograder.config import cache_root

    folder = fontcache.kept_folder(cache_root({"XDG_CACHE_HOME": str(tmp_path)}))
    assert folder == tmp_path / "autograder" / f"matplotlib-{version('matplotlib')}"


def test_no_cache_folder_without_an_absolute_home():
    from autograder.config import cache_root

    assert cache_root({"XDG_CACHE_HOME": "relative/cache"}) is None
