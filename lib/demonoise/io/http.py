"""One HTTP GET streamed into a file, with timeouts, retries and a one-line error.

Built on ``requests`` (a session per download, streaming, the proxy settings of the
environment) with urllib3's :class:`~urllib3.util.Retry` mounted on the session's adapter.
``requests`` + ``Retry`` rather than ``pooch``: pooch fits a registry of files whose
checksums are known in advance, names cache files after the URL and retries any failure
after a fixed wait, whereas a Eurostat query is built per fetch, its checksum is learnt on
download, its cache entry carries Eurostat's own time stamps, and the payload must pass
the reader before it may be kept (:mod:`demonoise.io.cache`). What is hand-written here is
only what neither library does: keeping the body as received (gzip is not decoded on the
way in), retrying a body cut short on the same retry budget, and the messages.

Retries (``FetchOptions.retries`` further attempts on one budget):

* HTTP 429 and 5xx answers, a connection reset before or during the answer, a transfer
  cut short (fewer bytes than ``Content-Length``) -- with exponential backoff,
  ``backoff * 2**(k-1)`` seconds before retry ``k``, or the ``Retry-After`` of a 429 or 503
  answer (at most 60 s);
* not: 4xx answers (the query is wrong; 413 is for the caller to handle), a refused
  connection or an unknown host (nothing listens there), timeouts (a stalled server fails
  after ``timeout`` seconds once, not ``retries + 1`` times).

Every failure raises :class:`~demonoise.core.errors.FetchError` in one line naming the
dataset (``label``), the cause and the URL, with attributes ``dataset``, ``url``, ``cause``
and ``status`` (the HTTP status, if any).

References
----------
requests, "Advanced usage: Transport adapters"; urllib3, ``urllib3.util.Retry``.
RFC 9110 sections 8.4 (Content-Encoding), 8.6 (Content-Length), 10.2.3 (Retry-After).
"""

from __future__ import annotations

import hashlib
import ipaddress
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

import requests
import urllib3
from requests.adapters import HTTPAdapter
from urllib3.exceptions import MaxRetryError, ProtocolError, ReadTimeoutError
from urllib3.util.retry import Retry

from demonoise.core.errors import FetchError
from demonoise.core.version import __version__
from demonoise.io.fetch_errors import error_label, fetch_error

__all__ = ["Download", "DownloadRetry", "download", "retry_policy"]

_CHUNK = 1 << 16
#: The longest ``Retry-After`` honoured, in seconds.
MAX_RETRY_AFTER = 60.0
#: Answers worth another attempt.
RETRY_STATUSES = frozenset({429, *range(500, 600)})


# ------------------------------------------------------------------------- retry policy
class DownloadRetry(Retry):
    """urllib3's :class:`Retry` with the policy of this module.

    * backoff ``backoff_factor * 2**(k-1)`` before retry ``k`` (urllib3 waits nothing before
      the first retry);
    * ``Retry-After`` only on 429 and 503 (urllib3 also honours it on 413, which the caller
      answers with another query), capped at :data:`MAX_RETRY_AFTER`;
    * a read timeout is never retried (urllib3 counts it with connection resets).
    """

    RETRY_AFTER_STATUS_CODES = frozenset({429, 503})

    def get_backoff_time(self) -> float:
        n = 0
        for h in reversed(self.history):
            if h.redirect_location is not None:
                break
            n += 1
        if n == 0:
            return 0.0
        return float(min(self.backoff_max, self.backoff_factor * 2 ** (n - 1)))

    def get_retry_after(self, response) -> float | None:
        value = super().get_retry_after(response)
        return None if value is None else min(max(value, 0.0), MAX_RETRY_AFTER)

    def increment(self, method=None, url=None, response=None, error=None, _pool=None, _stacktrace=None):
        if isinstance(error, ReadTimeoutError):
            raise error
        return super().increment(method, url, response, error, _pool, _stacktrace)


def retry_policy(retries: int, backoff: float) -> DownloadRetry:
    """``retries`` further attempts in all (see the module docstring for what is retried)."""
    return DownloadRetry(
        total=retries,
        connect=0,
        read=retries,
        status=retries,
        other=0,
        backoff_factor=backoff,
        status_forcelist=RETRY_STATUSES,
        allowed_methods=frozenset({"GET"}),
        raise_on_status=False,
        respect_retry_after_header=True,
    )


# ---------------------------------------------------------------------------- messages
def _os_reason(exc: BaseException) -> str:
    """The operating system's words for a failed connection (``Connection refused``...)."""
    seen, todo, last = set(), [exc], exc
    while todo:
        e = todo.pop(0)
        if id(e) in seen:
            continue
        seen.add(id(e))
        last = e
        if isinstance(e, OSError) and e.strerror:
            return e.strerror
        nxt = [e.__cause__, e.__context__, getattr(e, "reason", None)] + [
            a for a in e.args if isinstance(a, BaseException)
        ]
        todo += [x for x in nxt if isinstance(x, BaseException)]
    text = str(last)
    return text.split(": ", 1)[-1] if "Failed to establish" in text else text


def _request_failure(e: requests.RequestException, label: str, url: str, timeout: float, retry: Retry) -> FetchError:
    """A :class:`FetchError` for a request that got no answer."""

    def err(cause: str, where: str = "at") -> FetchError:
        return fetch_error(f"{label}: {cause} {where} {url}", dataset=label, url=url, cause=cause)

    if isinstance(e, (requests.ConnectTimeout, requests.ReadTimeout)):
        return err(f"timed out after {timeout:g} s (no answer from the server)")
    if isinstance(e, requests.exceptions.SSLError):
        return err(f"TLS error ({_os_reason(e)})", "with")
    if isinstance(e, requests.exceptions.ProxyError):
        return err(f"proxy error ({_os_reason(e)})", "for")
    reason = e.args[0] if e.args else None
    if isinstance(reason, MaxRetryError):
        reason = reason.reason
    if isinstance(reason, ProtocolError):
        inner = next((a for a in reason.args[1:] if isinstance(a, BaseException)), None)
        kind = type(inner).__name__ if inner is not None else "connection broken"
        n = (retry.total or 0) + len(retry.history) + 1
        tries = f" (after {n} attempts)" if n > 1 else ""
        return err(f"connection reset ({kind}){tries}", "from")
    if isinstance(e, requests.ConnectionError):
        return err(f"cannot connect ({_os_reason(e)})", "to")
    return err(f"request failed ({type(e).__name__}: {_os_reason(e)})", "for")


# ---------------------------------------------------------------------------- download
@dataclass(frozen=True)
class Download:
    """What one successful GET stored: the body as received and the answer's headers."""

    url: str
    final_url: str
    status: int
    size: int
    sha256: str
    content_type: str | None
    content_encoding: str | None
    http_date: str | None
    last_modified: str | None
    attempts: int


class _CutShort(Exception):
    """A body that ended early or broke off: worth another attempt."""

    def __init__(self, cause: str):
        super().__init__(cause)
        self.cause = cause


def _is_loopback(url: str) -> bool:
    host = (urllib.parse.urlsplit(url).hostname or "").lower()
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _session(url: str) -> requests.Session:
    s = requests.Session()
    s.trust_env = not _is_loopback(url)  # never send loopback requests through a proxy
    s.headers.update(
        {
            "User-Agent": f"demonoise/{__version__} (python-requests/{requests.__version__})",
            "Accept-Encoding": "gzip",
        }
    )
    return s


def _check_status(resp: requests.Response, label: str, url: str) -> None:
    if resp.status_code < 400:
        return
    try:
        body = resp.raw.read(65536, decode_content=False)
    except (urllib3.exceptions.HTTPError, OSError):
        body = b""
    msg = error_label(body, resp.headers.get("Content-Encoding"))
    cause = f"HTTP {resp.status_code} {resp.reason}" + (f" (Eurostat: {msg})" if msg else "")
    state = resp.raw.retries
    n = len(state.history) + 1 if state is not None else 1
    tries = f" (after {n} attempts)" if n > 1 and resp.status_code in RETRY_STATUSES else ""
    raise fetch_error(
        f"{label}: {cause}{tries} from {url}", dataset=label, url=url, cause=cause, status=resp.status_code
    )


def _stream(resp: requests.Response, dest: Path, label: str, url: str, timeout: float, progress) -> tuple[int, str]:
    """Write the raw body (not decoded) into ``dest``; returns (bytes, sha256)."""
    enc = (resp.headers.get("Content-Encoding") or "identity").strip().lower()
    if enc not in ("identity", "gzip", "x-gzip"):
        cause = f"unsupported Content-Encoding {enc!r} (only gzip was accepted)"
        raise fetch_error(f"{label}: {cause} from {url}", dataset=label, url=url, cause=cause)
    length = (resp.headers.get("Content-Length") or "").strip()
    total = int(length) if length.isdigit() else None
    bar = progress(label, total) if progress is not None else None
    h, n = hashlib.sha256(), 0
    try:
        with open(dest, "wb") as f:
            try:
                for chunk in resp.raw.stream(_CHUNK, decode_content=False):
                    f.write(chunk)
                    h.update(chunk)
                    n += len(chunk)
                    if bar is not None:
                        bar.update(len(chunk))
            except ReadTimeoutError:
                cause = f"timed out after {timeout:g} s (the server stalled after {n} bytes)"
                raise fetch_error(f"{label}: {cause} at {url}", dataset=label, url=url, cause=cause) from None
            except (ProtocolError, urllib3.exceptions.HTTPError, OSError) as e:
                if total is not None and n < total:
                    raise _CutShort(f"transfer cut short after {n} of {total} bytes") from None
                raise _CutShort(f"connection broken after {n} bytes ({type(e).__name__})") from None
    finally:
        if bar is not None:
            bar.close()
    if total is not None and n < total:
        raise _CutShort(f"transfer cut short after {n} of {total} bytes")
    return n, h.hexdigest()


def download(url: str, dest: Path, options, *, label: str) -> Download:
    """GET ``url`` and stream the body, as received, into ``dest``.

    Parameters
    ----------
    url : str
    dest : Path
        File to (over)write; the caller removes it on failure.
    options : FetchOptions
        ``timeout``, ``retries``, ``backoff`` and ``progress`` are used.
    label : str
        What is downloaded (the Eurostat dataset code): named in messages and progress.

    Returns
    -------
    Download

    Raises
    ------
    FetchError
        One line: ``<label>: <cause> from <url>`` (see the module docstring).
    """
    timeout = float(options.timeout)
    retry = retry_policy(options.retries, options.backoff)
    with _session(url) as session:
        while True:
            adapter = HTTPAdapter(max_retries=retry)
            session.mount("http://", adapter)
            session.mount("https://", adapter)
            try:
                resp = session.get(url, stream=True, timeout=(timeout, timeout))
            except requests.RequestException as e:
                raise _request_failure(e, label, url, timeout, retry) from None
            with resp:
                _check_status(resp, label, url)
                state = resp.raw.retries or retry
                try:
                    size, sha = _stream(resp, dest, label, url, timeout, options.progress)
                except _CutShort as e:
                    try:
                        retry = state.increment(method="GET", url=url, error=ProtocolError(e.cause))
                    except MaxRetryError:
                        n = len(state.history) + 1
                        tries = f" (after {n} attempts)" if n > 1 else ""
                        raise fetch_error(
                            f"{label}: {e.cause}{tries} from {url}", dataset=label, url=url, cause=e.cause
                        ) from None
                    retry.sleep()
                    continue
                hd = resp.headers
                return Download(
                    url=url,
                    final_url=resp.url,
                    status=resp.status_code,
                    size=size,
                    sha256=sha,
                    content_type=hd.get("Content-Type"),
                    content_encoding=hd.get("Content-Encoding"),
                    http_date=hd.get("Date"),
                    last_modified=hd.get("Last-Modified"),
                    attempts=len(state.history) + 1,
                )
