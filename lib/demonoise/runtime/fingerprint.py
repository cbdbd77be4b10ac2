"""The library's fingerprint: its version and a hash of its sources.

What decides whether a cached artefact is up to date (:mod:`demonoise.analysis.stored`) and
whether a Dask worker runs the same demonoise as its client
(:mod:`demonoise.runtime.cluster`): ``demonoise <version>+<hash of the package's .py files>``.
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

__all__ = ["digest", "source_fingerprint"]

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
