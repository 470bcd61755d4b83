"""tools/dev.py, the README's two commands: the parts that keep a second run
on the same machine working."""

import importlib.util
import os
import shutil
import subprocess
from pathlib import Path

import pytest

TOOL = Path(__file__).resolve().parent.parent / "tools" / "dev.py"


@pytest.fixture(scope="module")
def dev():
    spec = importlib.util.spec_from_file_location("cassette_dev_tool", TOOL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


needs_mount = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("mount") is None,
    reason="bind mounts need root and mount(8)")


@needs_mount
def test_a_mount_left_by_a_deleted_checkout_is_replaced(dev, tmp_path):
    # CI clones main again at the same path for each run; the Debian root's
    # mounts stay between runs, so the one of the checkout must be checked
    # against the directory there now, or the chroot sees the deleted one
    # and `python -m venv` cannot create anything in it.
    checkout, root = tmp_path / "checkout", tmp_path / "root"
    checkout.mkdir()
    root.mkdir()
    target = root / checkout.relative_to("/")
    try:
        with dev.mounted(root, [checkout]):
            pass
        assert str(target) in dev.mount_points()
        (checkout / "first").write_text("1")
        assert (target / "first").read_text() == "1"

        shutil.rmtree(str(checkout))
        checkout.mkdir()            # cloned again: a new directory, same path
        assert not dev.same_file(checkout, target)
        with dev.mounted(root, [checkout]):
            pass
        assert dev.same_file(checkout, target)
        (target / "second").write_text("2")
        assert (checkout / "second").read_text() == "2"

        with dev.mounted(root, [checkout]):     # a live mount is reused
            pass
        mounts = Path("/proc/self/mounts").read_text().split("\n")
        assert sum(1 for line in mounts if line.split()[1:2] == [str(target)]) == 1
    finally:
        dev.unmount_all(root)
    assert str(target) not in dev.mount_points()


def test_same_file_tells_a_directory_from_another(dev, tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    assert dev.same_file(first, first)
    assert dev.same_file(first, tmp_path / "b" / ".." / "a")
    assert not dev.same_file(first, second)
    assert not dev.same_file(first, tmp_path / "missing")
