"""The HTTP client of `demonoise fetch` (demonoise.io.http) against a scripted server on
127.0.0.1: what is retried (5xx, 429, resets, bodies cut short) on one budget with
exponential backoff or Retry-After, what is not (4xx, refused connections, timeouts), and
that the body is stored exactly as sent. Every request the server sees is counted."""

from __future__ import annotations

import gzip
import hashlib
import http.server
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from urllib3.exceptions import ProtocolError

from demonoise.core.errors import FetchError
from demonoise.io.http import download, retry_policy
from demonoise.io.options import FetchOptions

BODY = b"freq,unit,sex,age,geo\\TIME_PERIOD\t2023 \n" + b"A,NR,T,TOTAL,BE\t11763650 \n" * 200


@dataclass
class Answer:
    """One scripted answer: a status with a body; ``length`` overrides Content-Length (a
    larger value cuts the body short); ``drop`` closes the connection without answering."""

    status: int = 200
    body: bytes = BODY
    headers: dict = field(default_factory=dict)
    length: int | None = None
    drop: bool = False
    trickle: float = 0.0  # seconds between single bytes of the answer, status line included...
    trickle_body: bool = False  # ... or of its body only


class Scripted:
    """http.server on a free port of 127.0.0.1 giving the scripted answers in turn (the last
    one repeats) and counting the requests."""

    def __init__(self, answers: list[Answer]):
        self.answers, self.requests = answers, 0
        srv = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):
                pass

            def do_GET(self):
                srv.requests += 1
                a = srv.answers[min(srv.requests, len(srv.answers)) - 1]
                if a.drop:
                    self.close_connection = True
                    return
                if a.trickle:
                    self.close_connection = True
                    head = f"HTTP/1.1 {a.status} OK\r\nContent-Length: {len(a.body)}\r\n\r\n".encode()
                    whole, at = head + a.body, len(head) if a.trickle_body else 0
                    try:
                        self.wfile.write(whole[:at])
                        for i in range(at, len(whole)):
                            self.wfile.write(whole[i : i + 1])
                            self.wfile.flush()
                            time.sleep(a.trickle)
                    except (BrokenPipeError, ConnectionResetError):
                        pass
                    return
                self.send_response(a.status)
                self.send_header("Content-Length", str(a.length if a.length is not None else len(a.body)))
                for k, v in a.headers.items():
                    self.send_header(k, v)
                if a.length is not None:
                    self.send_header("Connection", "close")
                    self.close_connection = True
                self.end_headers()
                try:
                    self.wfile.write(a.body)
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/data/demo_r_d2jan?format=TSV"

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def serve():
    servers = []

    def start(*answers: Answer) -> Scripted:
        s = Scripted(list(answers))
        servers.append(s)
        return s

    yield start
    for s in servers:
        s.stop()


def opts(retries=3, backoff=0.05, **kw) -> FetchOptions:
    return FetchOptions(timeout=5, retries=retries, backoff=backoff, **kw)


class Bar:
    """A progress callback that records what it is told."""

    def __init__(self):
        self.bars: list[dict] = []

    def __call__(self, label, total):
        bar = {"label": label, "total": total, "bytes": 0, "closed": False}
        self.bars.append(bar)

        class Handle:
            def update(self, n):
                bar["bytes"] += n

            def close(self):
                bar["closed"] = True

        return Handle()


# ---------------------------------------------------------------------------- retried
def test_503_twice_then_200_is_retried_with_backoff(serve, tmp_path):
    srv = serve(Answer(503, b"busy"), Answer(503, b"busy"), Answer(200))
    dest = tmp_path / "payload"
    t0 = time.perf_counter()
    got = download(srv.url, dest, opts(retries=3, backoff=0.05), label="demo_r_d2jan")
    dt = time.perf_counter() - t0
    assert srv.requests == 3 and got.attempts == 3 and got.status == 200
    assert dest.read_bytes() == BODY and got.size == len(BODY) and got.sha256 == hashlib.sha256(BODY).hexdigest()
    assert dt >= 0.05 + 0.10  # backoff 0.05 s before the first retry, 0.10 s before the second


def test_retry_after_of_a_503_is_honoured(serve, tmp_path):
    srv = serve(Answer(503, b"", headers={"Retry-After": "1"}), Answer(200))
    t0 = time.perf_counter()
    download(srv.url, tmp_path / "p", opts(retries=1, backoff=0.0), label="demo_r_d2jan")
    assert srv.requests == 2 and time.perf_counter() - t0 >= 1.0


def test_a_server_that_stays_down_exhausts_the_retries(serve, tmp_path):
    srv = serve(Answer(503, b'{"error":[{"status":503,"label":"Service temporarily unavailable"}]}'))
    with pytest.raises(FetchError) as ei:
        download(srv.url, tmp_path / "p", opts(retries=2, backoff=0.01), label="demo_r_d2jan")
    assert srv.requests == 3
    e = ei.value
    assert str(e) == (
        "demo_r_d2jan: HTTP 503 Service Unavailable (Eurostat: Service temporarily unavailable) "
        f"(after 3 attempts; waited 0.03 s of backoff) from {srv.url}"
    )
    assert e.status == 503 and e.dataset == "demo_r_d2jan" and e.url == srv.url


def test_connection_dropped_before_the_answer_is_retried(serve, tmp_path):
    srv = serve(Answer(drop=True), Answer(200))
    got = download(srv.url, tmp_path / "p", opts(), label="demo_r_d2jan")
    assert srv.requests == 2 and got.attempts == 2 and (tmp_path / "p").read_bytes() == BODY


def test_a_connection_dropped_every_time_fails_after_the_retries(serve, tmp_path):
    srv = serve(Answer(drop=True))
    with pytest.raises(FetchError) as ei:
        download(srv.url, tmp_path / "p", opts(retries=2, backoff=0.01), label="demo_r_d2jan")
    assert srv.requests == 3
    assert str(ei.value) == f"demo_r_d2jan: connection reset (RemoteDisconnected) (after 3 attempts) from {srv.url}"


def test_body_cut_short_is_downloaded_again(serve, tmp_path):
    srv = serve(Answer(body=BODY[:100], length=len(BODY)), Answer(200))
    bar = Bar()
    got = download(srv.url, tmp_path / "p", opts(progress=bar), label="demo_r_d2jan")
    assert srv.requests == 2 and got.attempts == 2 and (tmp_path / "p").read_bytes() == BODY
    # one bar per attempt, told the announced size and what arrived, and closed
    assert [(b["total"], b["bytes"], b["closed"]) for b in bar.bars] == [
        (len(BODY), 100, True),
        (len(BODY), len(BODY), True),
    ]
    assert {b["label"] for b in bar.bars} == {"demo_r_d2jan"}


def test_status_and_body_failures_share_one_budget(serve, tmp_path):
    srv = serve(Answer(502, b""), Answer(body=BODY[:10], length=len(BODY)))
    with pytest.raises(
        FetchError,
        match=rf"transfer cut short after 10 of {len(BODY)} bytes \(after 2 attempts; waited 0.01 s of backoff\)",
    ):
        download(srv.url, tmp_path / "p", opts(retries=1, backoff=0.01), label="demo_r_d2jan")
    assert srv.requests == 2


# ------------------------------------------------------------------------ not retried
def test_client_errors_are_not_retried(serve, tmp_path):
    srv = serve(Answer(404, b'{"error":[{"status":404,"id":100,"label":"No results found"}]}'))
    with pytest.raises(FetchError) as ei:
        download(srv.url, tmp_path / "p", opts(), label="demo_r_d2jan")
    assert srv.requests == 1 and ei.value.status == 404
    assert str(ei.value) == f"demo_r_d2jan: HTTP 404 Not Found (Eurostat: No results found) from {srv.url}"


def test_refused_connection_fails_at_once(tmp_path):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/data/x"
    t0 = time.perf_counter()
    with pytest.raises(FetchError) as ei:
        download(url, tmp_path / "p", opts(retries=3, backoff=1.0), label="demo_pjan")
    assert time.perf_counter() - t0 < 1.0  # no backoff: not retried
    assert str(ei.value) == f"demo_pjan: cannot connect (Connection refused) to {url}"


# ----------------------------------------------------------------------------- bodies
def test_gzip_body_is_kept_as_received(serve, tmp_path):
    packed = gzip.compress(BODY, mtime=0)
    srv = serve(Answer(body=packed, headers={"Content-Encoding": "gzip", "Content-Type": "text/tab-separated-values"}))
    got = download(srv.url, tmp_path / "p", opts(), label="demo_r_d2jan")
    assert (tmp_path / "p").read_bytes() == packed and got.size == len(packed)
    assert got.content_encoding == "gzip" and got.content_type == "text/tab-separated-values"
    assert got.http_date  # the server's Date header, for the cache's download time


def test_loopback_requests_bypass_the_proxy_of_the_environment(serve, tmp_path, monkeypatch):
    with socket.socket() as s:  # a proxy address where nothing listens
        s.bind(("127.0.0.1", 0))
        proxy = f"http://127.0.0.1:{s.getsockname()[1]}"
    for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy"):
        monkeypatch.setenv(name, proxy)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    srv = serve(Answer(200))
    download(srv.url, tmp_path / "p", opts(), label="demo_r_d2jan")
    assert srv.requests == 1


def test_backoff_doubles_from_the_first_retry():
    r = retry_policy(retries=4, backoff=0.5)
    waits = []
    for _ in range(3):
        r = r.increment(method="GET", url="/", error=ProtocolError("connection reset"))
        waits.append(r.get_backoff_time())
    assert waits == [0.5, 1.0, 2.0]


def test_downloaded_file_path_is_reused(serve, tmp_path):
    dest = tmp_path / "p"
    dest.write_bytes(b"x" * 10_000)  # a longer earlier attempt
    srv = serve(Answer(200, b"short"))
    download(srv.url, dest, opts(), label="demo_r_d2jan")
    assert Path(dest).read_bytes() == b"short"


# ---------------------------------------------------------------------------- bounded
@pytest.mark.parametrize("body_only", [False, True])
def test_a_trickling_server_is_given_up_at_the_deadline(serve, tmp_path, body_only):
    """A byte every 0.2 s never trips the 5 s per-read timeout; the 1.5 s deadline of the
    download ends it (the watchdog shuts the socket), whether the headers or only the body
    trickle. Not retried."""
    srv = serve(Answer(trickle=0.2, trickle_body=body_only))
    t0 = time.perf_counter()
    with pytest.raises(FetchError, match=r"demo_r_d2jan: gave up at the 1\.5 s deadline of a download") as ei:
        download(srv.url, tmp_path / "p", opts(retries=3, deadline=1.5), label="demo_r_d2jan")
    dt = time.perf_counter() - t0
    assert 1.4 < dt < 3.0, dt
    assert srv.requests == 1 and "\n" not in str(ei.value)


def test_a_retry_after_beyond_the_waiting_budget_fails_saying_what_it_waited_for(serve, tmp_path):
    """429 with Retry-After: 1, five retries allowed, 1.5 s of waiting in all: one wait of
    1 s, then the second would pass the budget -- fails at once, after 2 attempts."""
    srv = serve(Answer(429, b"slow down", headers={"Retry-After": "1"}))
    t0 = time.perf_counter()
    with pytest.raises(FetchError) as ei:
        download(srv.url, tmp_path / "p", opts(retries=5, max_wait=1.5), label="demo_r_d2jan")
    dt = time.perf_counter() - t0
    assert srv.requests == 2 and 1.0 <= dt < 2.0, (srv.requests, dt)
    assert str(ei.value) == (
        "demo_r_d2jan: HTTP 429 (after 2 attempts); the next attempt would wait 1 s more (Retry-After), "
        f"beyond the 1.5 s of waiting allowed from {srv.url}"
    )


def test_a_retry_after_beyond_the_deadline_fails_at_once(serve, tmp_path):
    srv = serve(Answer(503, b"busy", headers={"Retry-After": "30"}))
    t0 = time.perf_counter()
    match = r"HTTP 503 \(after 1 attempt\); .* wait 30 s more \(Retry-After\), beyond the 2 s deadline"
    with pytest.raises(FetchError, match=match):
        download(srv.url, tmp_path / "p", opts(retries=3, deadline=2), label="demo_r_d2jan")
    assert time.perf_counter() - t0 < 1.0 and srv.requests == 1


def test_a_gzip_bomb_stops_at_the_decoded_limit_in_little_memory(serve, tmp_path):
    """256 MiB of zeros gzipped to 255 KB, in two gzip members, sent as a gzip body: the
    download stops beyond 64 MiB decoded, holding at most a few MiB at a time (traced)."""
    import tracemalloc

    half = gzip.compress(bytes(128 << 20), compresslevel=9)
    bomb = half + half
    srv = serve(Answer(body=bomb, headers={"Content-Encoding": "gzip"}))
    tracemalloc.start()
    try:
        with pytest.raises(FetchError, match=r"the answer decodes to more than 64 MiB \(a gzip bomb"):
            download(srv.url, tmp_path / "p", opts(retries=3), label="demo_r_d2jan", max_bytes=64 << 20)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 8 << 20, peak
    assert srv.requests == 1


def test_what_a_body_decodes_to_is_counted_exactly(serve, tmp_path):
    """Below the limit nothing changes: the body is kept as received; the limit counts the
    decoded bytes (gzip of two members, or plain), so one byte less refuses."""
    data = BODY * 50
    two = gzip.compress(data[:1000]) + gzip.compress(data[1000:])
    for body, enc in ((two, {"Content-Encoding": "gzip"}), (data, {})):
        srv = serve(Answer(body=body, headers=enc))
        d = download(srv.url, tmp_path / "p", opts(), label="x", max_bytes=len(data))
        assert (tmp_path / "p").read_bytes() == body and d.size == len(body)
        with pytest.raises(FetchError, match=r"decodes to more than"):
            download(srv.url, tmp_path / "q", opts(), label="x", max_bytes=len(data) - 1)
