"""Atomic writes: complete files only, and the mode ``open()`` would give, also while other
threads create files (the report batch renders in threads).

The umask is read once, at import; writing never changes it. Changing it even briefly
(``os.umask(0)`` then back) lets a file created by another thread in between get mode
0666. That window is a few instructions wide, so the two-thread test checks the modes
under the race while ``test_writing_never_touches_the_umask`` is the deterministic guard
(it fails for the set-and-restore reading).
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading

import pytest

from demonoise.core import atomic
from demonoise.core.atomic import TMP_MARK, atomic_path, atomic_write_text


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def _current_umask() -> int:
    # the test's own reading, independent of the module's (single-threaded here)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


@pytest.fixture
def umask_027():
    old = os.umask(0o027)
    old_module = atomic.UMASK
    atomic.UMASK = 0o027
    yield 0o027
    atomic.UMASK = old_module
    os.umask(old)


def test_two_threads_write_with_the_mode_open_would_give(tmp_path, umask_027):
    expected = 0o666 & ~umask_027  # 0o640
    n = 300
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def atomic_writer():
        try:
            start.wait()
            for i in range(n):
                atomic_write_text(tmp_path / f"atomic-{i}.txt", f"{i}\n")
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    def plain_writer():
        try:
            start.wait()
            for i in range(n):
                with open(tmp_path / f"plain-{i}.txt", "w") as fh:
                    fh.write(f"{i}\n")
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    old_interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible
    try:
        threads = [threading.Thread(target=atomic_writer), threading.Thread(target=plain_writer)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        sys.setswitchinterval(old_interval)
    assert not errors
    modes = {p.name: _mode(p) for p in tmp_path.iterdir()}
    assert len(modes) == 2 * n  # no temporary file left behind
    assert not [name for name in modes if TMP_MARK in name]
    wrong = {name: oct(m) for name, m in modes.items() if m != expected}
    assert not wrong, f"expected {oct(expected)}: {dict(list(wrong.items())[:5])}"
    assert (tmp_path / "atomic-7.txt").read_text() == "7\n"
    assert _current_umask() == umask_027  # the process umask is unchanged


def test_writing_never_touches_the_umask(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(os, "umask", lambda *a: calls.append(a) or 0o022)
    atomic_write_text(tmp_path / "a.txt", "x")
    with atomic_path(tmp_path / "b.bin") as tmp:
        tmp.write_bytes(b"y")
    assert calls == []
    assert _mode(tmp_path / "a.txt") == 0o666 & ~atomic.UMASK


def test_umask_is_read_at_import_without_changing_it():
    code = (
        "import os; os.umask(0o027)\n"
        "from demonoise.core import atomic\n"
        "now = os.umask(0o022)\n"
        "print(oct(atomic.UMASK), oct(now))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["0o27", "0o27"]


def test_umask_fallback_without_proc(monkeypatch):
    def no_proc(*a, **k):
        raise FileNotFoundError("/proc/self/status")

    monkeypatch.setattr(atomic, "open", no_proc, raising=False)
    old = os.umask(0o037)
    try:
        assert atomic._process_umask() == 0o037
        assert _current_umask() == 0o037  # restored after the reading
    finally:
        os.umask(old)


def test_a_failed_write_leaves_the_target_untouched(tmp_path):
    target = tmp_path / "t.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            tmp.write_text("half")
            raise RuntimeError("interrupted")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["t.txt"]


def test_a_directory_replaces_its_target_whole_or_not_at_all(tmp_path):
    """atomic_dir: the old directory stays as it was until the new one is complete; an
    interrupted block leaves it untouched and no temporary directory behind."""
    target = tmp_path / "tables"
    target.mkdir()
    (target / "old.parquet").write_text("old")
    with pytest.raises(KeyboardInterrupt):
        with atomic.atomic_dir(target) as tmp:
            (tmp / "new.parquet").write_text("new")
            assert TMP_MARK in tmp.name and sorted(p.name for p in target.iterdir()) == ["old.parquet"]
            raise KeyboardInterrupt
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tables"]
    assert sorted(p.name for p in target.iterdir()) == ["old.parquet"]
    with atomic.atomic_dir(target) as tmp:
        (tmp / "new.parquet").write_text("new")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tables"]
    assert sorted(p.name for p in target.iterdir()) == ["new.parquet"]
    assert stat.S_IMODE(target.stat().st_mode) == 0o777 & ~atomic.UMASK
