"""How to reach Eurostat and where to cache: one :class:`FetchOptions` value.

Every function that may download (:func:`demonoise.io.eurostat_api.fetch_table`,
:func:`demonoise.io.fetch.fetch_counts`, :func:`demonoise.io.fetch.comparison_tables`) takes
one ``FetchOptions`` instead of a list of network keyword arguments; it is checked once, when
it is made, and passed down unchanged.

The cache directory and the API base URL may be left to the environment: ``None`` means
``$DEMONOISE_CACHE`` (else ``~/.cache/demonoise``) and ``$DEMONOISE_EUROSTAT_URL`` (else
:data:`DEFAULT_BASE_URL`), read when they are used, not when the options are made.

Examples
--------
>>> from demonoise.io.options import FetchOptions
>>> opts = FetchOptions(timeout=10, retries=2)
>>> opts.replace(offline=True).offline
True
"""

from __future__ import annotations

import dataclasses
import os
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from demonoise.core.errors import ParameterError

__all__ = [
    "DEFAULT_BASE_URL",
    "DEFAULT_TIMEOUT",
    "DEFAULT_DEADLINE",
    "DEFAULT_MAX_WAIT",
    "ENDPOINTS",
    "ENV_BASE_URL",
    "ENV_CACHE",
    "FetchOptions",
    "base_url_from_env",
    "cache_root",
]

DEFAULT_BASE_URL = "https://ec.europa.eu/eurostat/api/dissemination"
ENV_BASE_URL = "DEMONOISE_EUROSTAT_URL"
ENV_CACHE = "DEMONOISE_CACHE"
#: Seconds allowed for connecting and for each read of the response.
DEFAULT_TIMEOUT = 60.0
#: Seconds one table's download may take in all: every attempt and every wait between them.
DEFAULT_DEADLINE = 600.0
#: Seconds of waiting between attempts one download may spend in all (backoff and Retry-After).
DEFAULT_MAX_WAIT = 60.0
#: ``json``: the statistics API's filtered JSON-stat; ``tsv``: the SDMX 2.1 API's full-dataset TSV.
ENDPOINTS = ("json", "tsv")


def base_url_from_env(base_url: str | None = None) -> str:
    """The API base URL: ``base_url``, else ``$DEMONOISE_EUROSTAT_URL``, else :data:`DEFAULT_BASE_URL`.

    Raises :class:`ParameterError` unless it is an ``http://`` or ``https://`` URL.
    """
    url = (base_url or os.environ.get(ENV_BASE_URL) or DEFAULT_BASE_URL).strip().rstrip("/")
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ParameterError(f"Eurostat base URL must be an http(s) URL, got {url!r}")
    return url


def cache_root(cache_dir: str | os.PathLike | None = None) -> Path:
    """The cache directory: ``cache_dir``, else ``$DEMONOISE_CACHE``, else ``~/.cache/demonoise``."""
    if cache_dir is not None:
        return Path(cache_dir).expanduser()
    env = os.environ.get(ENV_CACHE)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "demonoise"


@dataclass(frozen=True)
class FetchOptions:
    """Network and cache settings of a fetch.

    Parameters
    ----------
    cache_dir : path, optional
        Cache directory; default ``$DEMONOISE_CACHE``, else ``~/.cache/demonoise``.
    base_url : str, optional
        API base URL; default ``$DEMONOISE_EUROSTAT_URL``, else :data:`DEFAULT_BASE_URL`.
    endpoint : {"json", "tsv"}
        ``json``: the statistics API, filtered on the server (falls back to the full TSV
        when the API answers 413); ``tsv``: the SDMX 2.1 API's full-dataset TSV.
    refresh : bool
        Download even if a cached entry exists (it is replaced only on success).
    offline : bool
        Never use the network; a table that is not cached is a :class:`FetchError`.
    timeout : float
        Seconds allowed for connecting and for every read of the response.
    deadline : float
        Seconds one table's download may take in all, attempts and waits included: a server
        that trickles its answer (each read well within ``timeout``) is given up on then.
    max_wait : float
        Seconds of waiting between attempts one download may spend in all (backoff and
        ``Retry-After``); a wait beyond what is left fails at once, saying what it waited for.
    retries : int
        Further attempts after a transient failure (HTTP 5xx or 429, a connection reset,
        a transfer cut short).
    backoff : float
        Delay before the first retry in seconds, doubled at each further retry (a
        ``Retry-After`` header of a 429 or 503 answer takes precedence, up to 60 s).
    progress : callable, optional
        ``progress(label, total_bytes_or_None)`` returning an object with ``update(n)``
        and ``close()`` (a ``tqdm`` bar fits), called once per download.

    Raises
    ------
    ParameterError
        On construction: refresh together with offline, a non-positive timeout or deadline,
        a negative max_wait, negative retries or backoff, an unknown endpoint, a base URL
        that is not http(s).
    """

    cache_dir: str | os.PathLike | None = None
    base_url: str | None = None
    endpoint: str = "json"
    refresh: bool = False
    offline: bool = False
    timeout: float = DEFAULT_TIMEOUT
    deadline: float = DEFAULT_DEADLINE
    max_wait: float = DEFAULT_MAX_WAIT
    retries: int = 3
    backoff: float = 1.0
    progress: Callable | None = dataclasses.field(default=None, compare=False)

    def __post_init__(self):
        if self.endpoint not in ENDPOINTS:
            raise ParameterError(f"endpoint must be one of {', '.join(ENDPOINTS)}, got {self.endpoint!r}")
        if self.refresh and self.offline:
            raise ParameterError("refresh and offline exclude each other")
        if isinstance(self.timeout, bool) or not isinstance(self.timeout, (int, float)) or not self.timeout > 0:
            raise ParameterError(f"timeout must be a positive number of seconds, got {self.timeout!r}")
        for name, least in (("deadline", 1e-9), ("max_wait", 0.0)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not least <= v < float("inf"):
                more = "> 0" if least else ">= 0"
                raise ParameterError(f"{name} must be a finite number of seconds {more}, got {v!r}")
        if isinstance(self.retries, bool) or not isinstance(self.retries, int) or self.retries < 0:
            raise ParameterError(f"retries must be an integer >= 0, got {self.retries!r}")
        if isinstance(self.backoff, bool) or not isinstance(self.backoff, (int, float)) or not self.backoff >= 0:
            raise ParameterError(f"backoff must be a number of seconds >= 0, got {self.backoff!r}")
        if self.base_url is not None:
            base_url_from_env(self.base_url)

    @property
    def root(self) -> Path:
        """The cache directory (see :func:`cache_root`)."""
        return cache_root(self.cache_dir)

    @property
    def api_url(self) -> str:
        """The checked API base URL (see :func:`base_url_from_env`)."""
        return base_url_from_env(self.base_url)

    @property
    def api_url_unchecked(self) -> str:
        """The API base URL as configured, for messages of offline failures."""
        return (self.base_url or os.environ.get(ENV_BASE_URL) or DEFAULT_BASE_URL).strip().rstrip("/")

    def replace(self, **changes) -> FetchOptions:
        """A copy with ``changes`` (checked like a new value)."""
        return dataclasses.replace(self, **changes)
