"""autograder/sandbox/copying.py's tree_bytes on a tree that changes while it is walked: gather
measures a clone while git writes it, and git's lock files and temporary objects come and go."""

import os

from autograder.sandbox import copying
from autograder.sandbox.copying import tree_bytes


def test_a_file_gone_between_the_listing_and_its_look_counts_nothing(tmp_path, monkeypatch):
    (tmp_path / "kept").write_bytes(b"x" * 10)
    (tmp_path / "objects").mkdir()
    (tmp_path / "objects" / "pack").write_bytes(b"y" * 100)
    (tmp_path / "objects" / "maintenance.lock").write_bytes(b"z" * 1000)
    real_scandir = os.scandir

    def scandir_then_unlock(path):
        entries = list(real_scandir(path))  # listed while the lock was there ...
        lock = os.path.join(path, "maintenance.lock")
        if os.path.exists(lock):
            os.unlink(lock)  # ... and gone before it is looked at
        return iter(entries)

    monkeypatch.setattr(copying.os, "scandir", scandir_then_unlock)
    assert tree_bytes(tmp_path) == 110


def test_sizes_add_up_and_links_are_not_followed(tmp_path):
    (tmp_path / "a").write_bytes(b"x" * 7)
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "b").write_bytes(b"y" * 5)
    (tmp_path / "link").symlink_to(tmp_path / "a")
    (tmp_path / "dirlink").symlink_to(tmp_path / "d")
    assert tree_bytes(tmp_path) == 12
