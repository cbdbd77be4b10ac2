"""Fingerprints and stamps: the one place that decides whether something is up to date.

Every cached artefact of a batch -- a results table, an executed notebook, a rendered
report -- carries a *key*: the sha256 of a JSON document naming what it was made from
(:func:`digest`). The parts are

* :func:`source_fingerprint` -- the version and a hash of the package's sources (all of
  them for notebooks and reports; without the presentation layer for results, so that a
  chart change re-renders but does not recompute);
* :func:`tree_fingerprint` -- the files of a directory (the nbconvert template);
* :func:`file_digest` -- one file's bytes (an input notebook, a calibration table);
* a dataset's own fingerprint (:func:`demonoise.io.datasets.fingerprint`).

:func:`read_stamp` / :func:`write_stamp` keep a key (and whatever else) in a JSON sidecar
written atomically; :func:`is_current` compares it and checks the outputs exist.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any

from demonoise.core.atomic import atomic_write_text

__all__ = ["digest", "source_fingerprint", "tree_fingerprint", "file_digest", "read_stamp", "write_stamp", "is_current"]

_PRESENTATION = ("report/", "cli.py")


def digest(payload: Any, length: int = 64) -> str:
    """sha256 of ``payload`` as canonical JSON (sorted keys; other types by ``str``)."""
    text = json.dumps(payload, sort_keys=True, default=str, allow_nan=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:length]


@lru_cache(maxsize=4)
def _package_hash(presentation: bool) -> str:
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for p in sorted(root.rglob("*.py")):
        rel = p.relative_to(root).as_posix()
        if not presentation and rel.startswith(_PRESENTATION):
            continue
        h.update(rel.encode())
        h.update(b"\0")
        h.update(p.read_bytes())
    return h.hexdigest()[:12]


def source_fingerprint(*, presentation: bool = True) -> str:
    """``demonoise <version>+<hash>`` of the package sources; ``presentation=False``
    leaves out ``report/`` and ``cli.py`` (what decides the numbers only)."""
    from demonoise.core.version import __version__

    return f"demonoise {__version__}+{_package_hash(bool(presentation))}"


def tree_fingerprint(root: Path) -> str:
    """Hash of every file under ``root`` (names and bytes)."""
    root = Path(root)
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file():
            h.update(p.relative_to(root).as_posix().encode())
            h.update(hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()[:16]


def file_digest(path: Path, length: int = 16) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:length]


def read_stamp(path: Path) -> dict:
    """The JSON sidecar at ``path`` (``{}`` if missing or unreadable)."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def write_stamp(path: Path, stamp: dict) -> Path:
    return atomic_write_text(path, json.dumps(stamp, indent=1, default=str))


def is_current(stamp_path: Path, key: str, outputs: Iterable[Path] = ()) -> bool:
    """The stamp carries ``key`` and every output exists."""
    return read_stamp(stamp_path).get("key") == key and all(Path(p).is_file() for p in outputs)
