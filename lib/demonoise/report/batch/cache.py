"""Fingerprints and stamps: the one place that decides whether something is up to date.

Every cached artefact of a batch -- a results table, an executed notebook, a rendered
report -- carries a *key*: the sha256 of a JSON document naming what it was made from
(:func:`digest`). The parts are

* :func:`source_fingerprint` (from :mod:`demonoise.runtime.fingerprint`) -- the version and a
  hash of the package's sources (all of them for notebooks and reports; without the
  presentation layer for results, so that a chart change re-renders but does not
  recompute);
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
from pathlib import Path

from demonoise.core.atomic import atomic_write_text
from demonoise.runtime.fingerprint import digest, source_fingerprint

__all__ = ["digest", "source_fingerprint", "tree_fingerprint", "file_digest", "read_stamp", "write_stamp", "is_current"]


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
