"""A failed fetch in one line: :class:`~demonoise.core.errors.FetchError` with its facts, and
the server's own explanation of an error answer.

Shared by the client (:mod:`demonoise.io.http`), the API layer
(:mod:`demonoise.io.eurostat_api`) and the cache without importing the HTTP library, which
costs a noticeable fraction of a second to import: the dataset registry reads the cache on
every ``load`` and must not pay for it.
"""

from __future__ import annotations

import gzip
import json
import re
import zlib

from demonoise.core.errors import FetchError

__all__ = ["fetch_error", "error_label"]

_GZIP_MAGIC = b"\x1f\x8b"


def fetch_error(msg: str, *, dataset: str, url: str | None, cause: str, status: int | None = None) -> FetchError:
    """A one-line :class:`FetchError` with ``dataset``, ``url``, ``cause``, ``status`` attributes."""
    err = FetchError(" ".join(msg.split()))
    err.dataset, err.url, err.cause, err.status = dataset, url, cause, status
    return err


def error_label(body: bytes, encoding: str | None = None) -> str:
    """The explanation in an error body: the ``label`` of a JSON ``{"error": [{...}]}`` (as
    Eurostat's APIs send), a SOAP ``faultstring``, else the text without tags (300 chars)."""
    if not body:
        return ""
    if (encoding or "").lower() in ("gzip", "x-gzip") or body[:2] == _GZIP_MAGIC:
        try:
            body = gzip.decompress(body)
        except (OSError, EOFError, zlib.error):
            return ""
    text = body.decode("utf-8", "replace").strip()
    label = ""
    try:
        d = json.loads(text)
        err = d.get("error") if isinstance(d, dict) else None
        if isinstance(err, list) and err:
            err = err[0]
        if isinstance(err, dict):
            label = str(err.get("label") or err.get("message") or "")
    except ValueError:
        m = re.search(r"<faultstring>(.*?)</faultstring>", text, re.S)
        label = m[1] if m else re.sub(r"<[^>]+>", " ", text)
    label = " ".join(label.split())
    return label[:300] + ("..." if len(label) > 300 else "")
