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

Bounds of one download, whatever the server does:

* ``FetchOptions.deadline`` seconds in all, attempts and waits included: when it passes, a
  watchdog shuts the download's sockets down, which ends a read blocked on a server that
  trickles its answer (a byte every few seconds never trips the per-read ``timeout``);
* ``FetchOptions.max_wait`` seconds of waiting between attempts in all (backoff and
  ``Retry-After``): a wait beyond what is left of it, or of the deadline, fails at once, and
  the message says what was waited for (``after 3 attempts; waited 60 s for Retry-After``);
* ``max_bytes`` of body once decoded: a gzip body is decompressed as it streams in, by
  pieces of at most 1 MiB, only to count, and the download stops beyond the limit (a 1 MB
  gzip bomb costs a megabyte of memory, not gigabytes); a plain body counts as it is.

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
import socket
import threading
import time
import urllib.parse
import zlib
from dataclasses import dataclass
from pathlib import Path

import requests
import urllib3
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
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
#: Decoded bytes counted at a time (:class:`_Decoded`).
_DECODE_PIECE = 1 << 20
#: Bytes of body a download may decode to when the caller sets no limit.
DEFAULT_MAX_BYTES = 1 << 32


def _mib(n: float) -> str:
    return f"{n / 2**20:,.0f} MiB"


# ---------------------------------------------------------------------- time of a download
class _OutOfTime(Exception):
    """The deadline or the waiting budget of a download is spent (never retried)."""


class _Clock:
    """The time budget of one download (module notes): its deadline, enforced by a watchdog
    that shuts the download's sockets down, and the waits between attempts, by kind."""

    def __init__(self, deadline: float, max_wait: float):
        self.deadline, self.max_wait = float(deadline), float(max_wait)
        self.t0 = time.monotonic()
        self.waited = {"Retry-After": 0.0, "backoff": 0.0}
        self.expired = False
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._timer = threading.Timer(self.deadline, self._expire)
        self._timer.daemon = True

    def __enter__(self) -> _Clock:
        self._timer.start()
        return self

    def __exit__(self, *exc) -> None:
        self._timer.cancel()

    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def add(self, sock: socket.socket) -> None:
        """A socket of this download (shut down at once if the deadline has passed)."""
        with self._lock:
            self._sockets.append(sock)
            if self.expired:
                _shut(sock)

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for sock in self._sockets:
                _shut(sock)

    def wait(self, seconds: float, why: str) -> None:
        """Sleep ``seconds`` before the next attempt, or raise :class:`_OutOfTime` when that
        would go beyond ``max_wait`` in all or beyond the deadline."""
        budget = self.max_wait - sum(self.waited.values())
        left = self.deadline - self.elapsed()
        if seconds > min(budget, left):
            what = f"the {self.max_wait:g} s of waiting allowed"
            if left < budget:
                what = f"the {self.deadline:g} s deadline"
            raise _OutOfTime(f"the next attempt would wait {seconds:g} s more ({why}), beyond {what}")
        time.sleep(seconds)
        self.waited[why] += seconds

    def spent(self) -> str:
        """What the download waited for (``waited 60 s for Retry-After and 3 s of backoff``), or ''."""
        parts = [f"{v:g} s for Retry-After" if k == "Retry-After" else f"{v:g} s of backoff"
                 for k, v in self.waited.items() if v > 0]  # fmt: skip
        return "waited " + " and ".join(parts) if parts else ""


def _shut(sock: socket.socket) -> None:
    """End a socket's reads and writes: a read blocked on it returns at once."""
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def _adapter(retry: Retry, clock: _Clock) -> HTTPAdapter:
    """An adapter whose connections register their sockets with ``clock`` (its watchdog)."""

    def watched(base):
        class Conn(base):
            def _new_conn(self):
                sock = super()._new_conn()
                clock.add(sock)
                return sock

        return Conn

    class Pool(HTTPConnectionPool):
        ConnectionCls = watched(HTTPConnection)

    class SPool(HTTPSConnectionPool):
        ConnectionCls = watched(HTTPSConnection)

    class Adapter(HTTPAdapter):
        def init_poolmanager(self, *args, **kwargs):
            super().init_poolmanager(*args, **kwargs)
            self.poolmanager.pool_classes_by_scheme = {"http": Pool, "https": SPool}

        def proxy_manager_for(self, *args, **kwargs):
            manager = super().proxy_manager_for(*args, **kwargs)
            manager.pool_classes_by_scheme = {"http": Pool, "https": SPool}
            return manager

    return Adapter(max_retries=retry)


# ---------------------------------------------------------------------- size of a body
class _TooBig(Exception):
    """A body that decodes to more than the limit (never retried)."""


class _Decoded:
    """Counts the bytes a body decodes to as it streams in (gzip, possibly several members,
    decompressed by pieces of at most :data:`_DECODE_PIECE` and dropped; a plain body as it
    is) and raises :class:`_TooBig` beyond ``limit``. A body that is not valid gzip is left
    to the reader to judge (counting stops)."""

    def __init__(self, limit: int):
        self.limit, self.n, self.head = int(limit), 0, b""
        self.z: zlib._Decompress | None = None
        self.plain: bool | None = None

    def feed(self, chunk: bytes) -> None:
        if self.plain is None:
            self.head += chunk
            if len(self.head) < 2:
                return
            self.plain = self.head[:2] != b"\x1f\x8b"
            self.z = None if self.plain else zlib.decompressobj(16 + zlib.MAX_WBITS)
            chunk, self.head = self.head, b""
        if self.plain:
            self._count(len(chunk))
        elif self.z is not None:
            self._inflate(chunk)

    def _inflate(self, data: bytes) -> None:
        while data and self.z is not None:
            try:
                self._count(len(self.z.decompress(data, _DECODE_PIECE)))
            except zlib.error:
                self.z = None  # not gzip after all: the reader says what is wrong
                return
            data = self.z.unconsumed_tail
            if self.z.eof:  # a further gzip member, or trailing bytes
                data = self.z.unused_data + data
                self.z = zlib.decompressobj(16 + zlib.MAX_WBITS)

    def _count(self, n: int) -> None:
        self.n += n
        if self.n > self.limit:
            why = "a gzip bomb, or not the table asked for"
            raise _TooBig(f"the answer decodes to more than {_mib(self.limit)} ({why})")


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

    def __init__(self, *args, clock: _Clock | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.clock = clock

    def new(self, **kw) -> DownloadRetry:
        retry = super().new(**kw)
        retry.clock = self.clock
        return retry

    def sleep(self, response=None) -> None:
        """Wait before the next attempt: the answer's ``Retry-After`` (429, 503) or the
        backoff, through the download's :class:`_Clock` (which may refuse to)."""
        after = None
        if response is not None and response.status in self.RETRY_AFTER_STATUS_CODES:
            after = self.get_retry_after(response)
        seconds, why = (after, "Retry-After") if after else (self.get_backoff_time(), "backoff")
        if self.clock is None:
            if seconds > 0:
                time.sleep(seconds)
            return
        try:
            self.clock.wait(seconds, why)
        except _OutOfTime as e:
            last = f"HTTP {response.status}" if response is not None else "a broken transfer"
            n = len(self.history)
            raise _OutOfTime(f"{last} (after {n} attempt{'s' if n != 1 else ''}); {e}") from None

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


def retry_policy(retries: int, backoff: float, clock: _Clock | None = None) -> DownloadRetry:
    """``retries`` further attempts in all (see the module docstring for what is retried),
    their waits through ``clock`` when given."""
    return DownloadRetry(
        clock=clock,
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
    """A body that ended early or broke off (after ``n`` bytes): worth another attempt."""

    def __init__(self, cause: str, n: int):
        super().__init__(cause)
        self.cause, self.n = cause, n


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


def _tries(n: int, clock: _Clock) -> str:
    """`` (after 4 attempts; waited 7 s of backoff)``, or '' for a first attempt that waited nothing."""
    parts = [f"after {n} attempts"] if n > 1 else []
    parts += [clock.spent()] if clock.spent() else []
    return f" ({'; '.join(parts)})" if parts else ""


def _check_status(resp: requests.Response, label: str, url: str, clock: _Clock) -> None:
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
    tries = _tries(n, clock) if resp.status_code in RETRY_STATUSES else ""
    raise fetch_error(
        f"{label}: {cause}{tries} from {url}", dataset=label, url=url, cause=cause, status=resp.status_code
    )


def _stream(resp: requests.Response, dest: Path, label: str, url: str, timeout: float, progress, decoded: _Decoded):
    """Write the raw body (not decoded) into ``dest``, counting what it decodes to;
    returns (bytes, sha256)."""
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
                    decoded.feed(chunk)
                    if bar is not None:
                        bar.update(len(chunk))
            except ReadTimeoutError:
                cause = f"timed out after {timeout:g} s (the server stalled after {n} bytes)"
                raise fetch_error(f"{label}: {cause} at {url}", dataset=label, url=url, cause=cause) from None
            except (ProtocolError, urllib3.exceptions.HTTPError, OSError) as e:
                if total is not None and n < total:
                    raise _CutShort(f"transfer cut short after {n} of {total} bytes", n) from None
                raise _CutShort(f"connection broken after {n} bytes ({type(e).__name__})", n) from None
    finally:
        if bar is not None:
            bar.close()
    if total is not None and n < total:
        raise _CutShort(f"transfer cut short after {n} of {total} bytes", n)
    return n, h.hexdigest()


def _past_deadline(label: str, url: str, clock: _Clock, n: int | None) -> FetchError:
    got = "no complete answer" if n is None else f"{n} bytes of the answer"
    cause = f"gave up at the {clock.deadline:g} s deadline of a download ({got} by then)"
    return fetch_error(f"{label}: {cause} from {url}", dataset=label, url=url, cause=cause)


def _get(session, url: str, label: str, timeout: float, retry: DownloadRetry, clock: _Clock):
    """The answer's headers (the body still to stream), or FetchError."""
    adapter = _adapter(retry, clock)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    try:
        return session.get(url, stream=True, timeout=(timeout, timeout))
    except _OutOfTime as e:
        if clock.expired:
            raise _past_deadline(label, url, clock, None) from None
        raise fetch_error(f"{label}: {e} from {url}", dataset=label, url=url, cause=str(e)) from None
    except requests.RequestException as e:
        if clock.expired:
            raise _past_deadline(label, url, clock, None) from None
        raise _request_failure(e, label, url, timeout, retry) from None


def _again(state: DownloadRetry, e: _CutShort, label: str, url: str, clock: _Clock) -> DownloadRetry:
    """The retry state for another attempt after a body cut short (having waited), or FetchError."""
    if clock.expired:
        raise _past_deadline(label, url, clock, e.n)
    try:
        retry = state.increment(method="GET", url=url, error=ProtocolError(e.cause))
    except MaxRetryError:
        raise fetch_error(
            f"{label}: {e.cause}{_tries(len(state.history) + 1, clock)} from {url}", dataset=label, url=url,
            cause=e.cause,
        ) from None  # fmt: skip
    try:
        retry.sleep()
    except _OutOfTime as oot:
        raise fetch_error(f"{label}: {e.cause}; {oot} from {url}", dataset=label, url=url, cause=e.cause) from None
    return retry


def download(url: str, dest: Path, options, *, label: str, max_bytes: int | None = None) -> Download:
    """GET ``url`` and stream the body, as received, into ``dest``.

    Parameters
    ----------
    url : str
    dest : Path
        File to (over)write; the caller removes it on failure.
    options : FetchOptions
        ``timeout``, ``deadline``, ``max_wait``, ``retries``, ``backoff`` and ``progress``
        are used.
    label : str
        What is downloaded (the Eurostat dataset code): named in messages and progress.
    max_bytes : int, optional
        Most bytes the body may decode to (default :data:`DEFAULT_MAX_BYTES`).

    Returns
    -------
    Download

    Raises
    ------
    FetchError
        One line: ``<label>: <cause> from <url>`` (see the module docstring).
    """
    timeout = float(options.timeout)
    limit = DEFAULT_MAX_BYTES if max_bytes is None else int(max_bytes)
    with _Clock(options.deadline, options.max_wait) as clock, _session(url) as session:
        retry = retry_policy(options.retries, options.backoff, clock)
        while True:
            resp = _get(session, url, label, timeout, retry, clock)
            with resp:
                _check_status(resp, label, url, clock)
                state = resp.raw.retries or retry
                try:
                    size, sha = _stream(resp, dest, label, url, timeout, options.progress, _Decoded(limit))
                except _CutShort as e:
                    retry = _again(state, e, label, url, clock)
                    continue
                except _TooBig as e:
                    raise fetch_error(f"{label}: {e} from {url}", dataset=label, url=url, cause=str(e)) from None
                return _record(resp, url, size, sha, state)


def _record(resp: requests.Response, url: str, size: int, sha: str, state: Retry) -> Download:
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
