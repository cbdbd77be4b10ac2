"""Headless Chromium: print an offline HTML report to PDF, dump its DOM, screenshot it.

Chromium is driven through its command line (no extra Python dependency):

``chromium --headless --no-sandbox --disable-gpu --no-pdf-header-footer
--disable-background-networking --disable-component-update --no-first-run
--virtual-time-budget=MS --print-to-pdf=OUT file:///.../report.html``

* ``--no-sandbox``: Chromium refuses to run as root otherwise (containers, CI).
* the ``--disable-*`` flags stop the browser's own background traffic (updates,
  sync); ``--host-resolver-rules="MAP * ~NOTFOUND"`` and a dead proxy make sure that
  *nothing* reaches the network, even a resource a report should not reference.
* ``--virtual-time-budget``: the page runs on virtual time, which advances only when
  the page is idle, and the PDF/DOM is taken once the budget is used up. So scripts
  that typeset (MathJax) or draw (Vega) after the load event have finished before
  printing, however slow the machine. The report template marks the end of MathJax
  typesetting with ``<html data-dn-math="done">``; :func:`dump_dom` lets tests check it.
* every call gets its own temporary ``--user-data-dir`` (parallel calls would
  otherwise fight over one profile) and runs in its own process group, killed as a
  whole on timeout.

Page-initiated network requests can be logged with ``--log-net-log`` and listed with
:func:`page_requests` (requests whose network isolation key is the ``file://`` page;
the browser's own background requests carry another key and are ignored).

:class:`Browser` keeps one Chromium open and prints many pages through the DevTools
protocol on a pipe, which saves the start-up of a browser per PDF in a batch.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from demonoise.core.atomic import atomic_path
from demonoise.core.errors import ReportError

__all__ = [
    "DEFAULT_CHROMIUM",
    "ENV_VAR",
    "ChromiumNotFoundError",
    "find_chromium",
    "chromium_flags",
    "run_chromium",
    "print_pdf",
    "dump_dom",
    "screenshot",
    "page_requests",
    "Browser",
]

DEFAULT_CHROMIUM = "/usr/bin/chromium"
ENV_VAR = "DEMONOISE_CHROMIUM"
_CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
#: Virtual milliseconds granted to scripts (MathJax, Vega) before the page is captured.
DEFAULT_BUDGET_MS = 15_000

_BASE_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-pdf-header-footer",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-sync",
    "--disable-extensions",
    "--disable-default-apps",
    "--disable-domain-reliability",
    "--disable-client-side-phishing-detection",
    "--disable-crash-reporter",
    "--disable-features=Translate,OptimizationHints,MediaRouter,SpellcheckService",
    "--hide-scrollbars",
    "--run-all-compositor-stages-before-draw",
)
_OFFLINE_FLAGS = (
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--proxy-server=127.0.0.1:9",
    "--proxy-bypass-list=<-loopback>",
)


class ChromiumNotFoundError(ReportError):
    """No Chromium executable: HTML can still be rendered, PDF cannot."""


def find_chromium(chromium: str | os.PathLike | None = None) -> Path:
    """Locate the Chromium executable.

    Order: the ``chromium`` argument, ``$DEMONOISE_CHROMIUM``, then ``chromium``,
    ``chromium-browser``, ``google-chrome``, ``google-chrome-stable`` on ``PATH``.

    Raises
    ------
    ChromiumNotFoundError
        With the reason, e.g. ``"no PDF: chromium not found at /usr/bin/chromium;
        install the Debian package chromium"``.
    """
    explicit = chromium if chromium is not None else os.environ.get(ENV_VAR)
    if explicit:
        p = Path(explicit)
        if p.is_file() and os.access(p, os.X_OK):
            return p
        found = shutil.which(str(explicit))
        if found:
            return Path(found)
        raise ChromiumNotFoundError(
            f"no PDF: chromium not found at {explicit}; install the Debian package chromium "
            f"(apt-get install --no-install-recommends chromium) or set {ENV_VAR}"
        )
    for name in _CANDIDATES:
        found = shutil.which(name)
        if found:
            return Path(found)
    if Path(DEFAULT_CHROMIUM).is_file():
        return Path(DEFAULT_CHROMIUM)
    raise ChromiumNotFoundError(
        f"no PDF: chromium not found at {DEFAULT_CHROMIUM} (nor {', '.join(_CANDIDATES)} on PATH); "
        f"install the Debian package chromium (apt-get install --no-install-recommends chromium) "
        f"or set {ENV_VAR}"
    )


def chromium_flags(*, budget_ms: int | None = DEFAULT_BUDGET_MS, offline: bool = True) -> list[str]:
    """The flags used for every call (see the module docstring)."""
    flags = list(_BASE_FLAGS)
    if offline:
        flags += _OFFLINE_FLAGS
    if budget_ms:
        flags.append(f"--virtual-time-budget={int(budget_ms)}")
    return flags


def _url(page: str | os.PathLike) -> str:
    s = str(page)
    if s.startswith(("file:", "data:", "about:")):
        return s
    return Path(page).resolve().as_uri()


def run_chromium(
    page: str | os.PathLike,
    args: Sequence[str],
    *,
    chromium: str | os.PathLike | None = None,
    budget_ms: int | None = DEFAULT_BUDGET_MS,
    offline: bool = True,
    net_log: str | os.PathLike | None = None,
    timeout: float = 180.0,
) -> subprocess.CompletedProcess:
    """Run headless Chromium on ``page`` with extra ``args``; return the finished process.

    Raises
    ------
    ChromiumNotFoundError
        No executable.
    ReportError
        Timeout (the whole process group is killed) or a non-zero exit status, with
        the end of Chromium's stderr.
    """
    exe = find_chromium(chromium)
    with tempfile.TemporaryDirectory(prefix="dn-chromium-") as profile:
        cmd = [str(exe), *chromium_flags(budget_ms=budget_ms, offline=offline), f"--user-data-dir={profile}"]
        if net_log is not None:
            cmd += [f"--log-net-log={Path(net_log).resolve()}", "--net-log-capture-mode=Default"]
        cmd += [*args, _url(page)]
        proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, cwd=profile
        )
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # the group of the process we started
            proc.communicate()
            raise ReportError(f"chromium timed out after {timeout:.0f} s on {page}") from None
        except BaseException:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise
    result = subprocess.CompletedProcess(cmd, proc.returncode, out, err)
    if proc.returncode != 0:
        tail = err.decode("utf-8", "replace").strip().splitlines()[-8:]
        raise ReportError(f"chromium exited with status {proc.returncode} on {page}:\n" + "\n".join(tail))
    return result


def print_pdf(
    html: str | os.PathLike,
    pdf: str | os.PathLike,
    *,
    chromium: str | os.PathLike | None = None,
    budget_ms: int | None = DEFAULT_BUDGET_MS,
    timeout: float = 180.0,
) -> Path:
    """Print ``html`` to ``pdf`` (A4 and margins come from the page's ``@page`` CSS).

    Written atomically; on any failure the previous ``pdf`` (if any) is untouched.

    Raises
    ------
    ChromiumNotFoundError, ReportError
    """
    pdf = Path(pdf)
    with atomic_path(pdf) as tmp:
        tmp.unlink()  # Chromium must create it: an empty leftover must not pass as output
        run_chromium(html, [f"--print-to-pdf={tmp}"], chromium=chromium, budget_ms=budget_ms, timeout=timeout)
        if not tmp.is_file() or tmp.stat().st_size == 0:
            raise ReportError(f"chromium wrote no PDF for {html}")
        with open(tmp, "rb") as fh:
            if fh.read(5) != b"%PDF-":
                raise ReportError(f"chromium wrote something that is not a PDF for {html}")
    return pdf


def dump_dom(
    html: str | os.PathLike,
    *,
    chromium: str | os.PathLike | None = None,
    budget_ms: int | None = DEFAULT_BUDGET_MS,
    net_log: str | os.PathLike | None = None,
    timeout: float = 180.0,
) -> str:
    """The DOM of ``html`` after its scripts ran (``--dump-dom``), as HTML text."""
    res = run_chromium(html, ["--dump-dom"], chromium=chromium, budget_ms=budget_ms, net_log=net_log, timeout=timeout)
    return res.stdout.decode("utf-8", "replace")


def screenshot(
    html: str | os.PathLike,
    png: str | os.PathLike,
    *,
    width: int = 1100,
    height: int = 2400,
    chromium: str | os.PathLike | None = None,
    budget_ms: int | None = DEFAULT_BUDGET_MS,
    timeout: float = 180.0,
) -> Path:
    """Screenshot the top ``width`` x ``height`` CSS pixels of ``html`` into ``png``."""
    png = Path(png)
    with atomic_path(png) as tmp:
        tmp.unlink()
        run_chromium(
            html,
            [f"--screenshot={tmp}", f"--window-size={int(width)},{int(height)}"],
            chromium=chromium,
            budget_ms=budget_ms,
            timeout=timeout,
        )
        if not tmp.is_file() or tmp.stat().st_size == 0:
            raise ReportError(f"chromium wrote no screenshot for {html}")
    return png


def page_requests(net_log: str | os.PathLike) -> list[dict]:
    """Network requests made *by the page* according to a Chromium net log.

    Returns one dict per request: ``url``, ``method`` and ``net_error`` (Chromium's
    error code, e.g. -105 name not resolved; ``None`` if none was logged). A request is
    the page's when its network isolation key is the page's site (``file://``); the
    browser's own background requests (update checks, ...) carry other keys.
    """
    with open(net_log, encoding="utf-8") as fh:
        text = fh.read()
    try:
        log = json.loads(text)
    except ValueError:  # Chromium killed before closing the JSON array
        log = json.loads(text.rstrip().rstrip(",") + "]}")
    types = {v: k for k, v in log["constants"]["logEventTypes"].items()}
    starts: dict[int, dict] = {}
    errors: dict[int, int] = {}
    for ev in log.get("events", []):
        kind = types.get(ev.get("type"))
        params = ev.get("params") or {}
        sid = ev.get("source", {}).get("id")
        if kind == "URL_REQUEST_START_JOB" and "url" in params:
            starts[sid] = params
        elif "net_error" in params and sid in starts:
            errors[sid] = params["net_error"]
    out = []
    for sid, p in starts.items():
        nik = str(p.get("network_isolation_key", ""))
        if nik.startswith("file://") or p.get("initiator") == "null":
            out.append({"url": p["url"], "method": p.get("method"), "net_error": errors.get(sid)})
    return out


# ================================================================ kept-open browser
class Browser:
    """One headless Chromium kept open and driven over the DevTools protocol (CDP) on a
    pipe (``--remote-debugging-pipe``: commands on the child's fd 3, replies on fd 4;
    no port, no extra Python package).

    Printing many reports through one browser saves Chromium's start-up (about 0.9 s
    per PDF on 2 cores). Same flags as the command-line path (offline: every host
    resolves to nothing, a dead proxy). A page counts as ready once its ``load`` event
    has fired and, if it uses MathJax, once ``<html data-dn-math="done">`` is set (the
    template's signal); pre-typeset pages (``data-dn-math="static"``) are ready at load.

    Not thread-safe: use one browser per thread. Use as a context manager, or call
    :meth:`close`.

    Raises
    ------
    ChromiumNotFoundError
        No executable.
    ReportError
        Chromium did not start, or a command failed or timed out.
    """

    def __init__(self, chromium: str | os.PathLike | None = None, *, offline: bool = True, timeout: float = 120.0):
        import itertools

        exe = find_chromium(chromium)
        self.timeout = timeout
        self._ids = itertools.count(1)
        self._profile = tempfile.mkdtemp(prefix="dn-chromium-")
        self._session: str | None = None
        self._buf = b""
        cmd_r, self._cmd_w = os.pipe()
        self._res_r, res_w = os.pipe()
        devnull = os.open(os.devnull, os.O_RDWR)
        self._log_fd = os.open(os.path.join(self._profile, "chromium.log"), os.O_WRONLY | os.O_CREAT, 0o600)
        argv = [
            str(exe),
            # without --no-pdf-header-footer: that flag puts headless Chromium in its
            # one-shot command mode, which ends the page after the first command
            *(f for f in chromium_flags(budget_ms=None, offline=offline) if f != "--no-pdf-header-footer"),
            f"--user-data-dir={self._profile}",
            "--remote-debugging-pipe",
            "about:blank",
        ]
        try:
            # posix_spawn: the child gets the pipes as fds 3 and 4 without running any
            # Python between fork and exec (safe with threads, unlike preexec_fn).
            self.pid = os.posix_spawn(
                str(exe),
                argv,
                dict(os.environ),
                file_actions=[
                    (os.POSIX_SPAWN_DUP2, devnull, 0),
                    (os.POSIX_SPAWN_DUP2, devnull, 1),
                    (os.POSIX_SPAWN_DUP2, self._log_fd, 2),
                    (os.POSIX_SPAWN_DUP2, cmd_r, 3),
                    (os.POSIX_SPAWN_DUP2, res_w, 4),
                ],
                setsid=True,
            )
        except OSError as e:
            shutil.rmtree(self._profile, ignore_errors=True)
            raise ReportError(f"chromium did not start: {e}") from None
        finally:
            for fd in (cmd_r, res_w, devnull, self._log_fd):
                os.close(fd)
        self._closed = False

    # ---------------------------------------------------------------- protocol
    def _send(self, method: str, params: dict | None = None, *, session: str | None = None) -> int:
        i = next(self._ids)
        msg = {"id": i, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        data = json.dumps(msg).encode() + b"\0"
        try:
            while data:
                n = os.write(self._cmd_w, data)
                data = data[n:]
        except OSError as e:  # BrokenPipeError when chromium has died: a ReportError like any other failure
            raise ReportError(f"chromium closed the DevTools pipe (it crashed or exited): {e}") from None
        return i

    def _read(self, deadline: float) -> dict:
        import select
        import time

        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ReportError(f"chromium did not answer within {self.timeout:.0f} s")
            ready, _, _ = select.select([self._res_r], [], [], left)
            if not ready:
                continue
            try:
                chunk = os.read(self._res_r, 1 << 20)
            except OSError as e:
                raise ReportError(f"chromium closed the DevTools pipe (it crashed or exited): {e}") from None
            if not chunk:
                raise ReportError("chromium closed the DevTools pipe (it crashed or exited)")
            self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def call(
        self, method: str, params: dict | None = None, *, session: str | None = None, events: list | None = None
    ) -> dict:
        """Send one command and wait for its result (events seen meanwhile go to ``events``)."""
        import time

        i = self._send(method, params, session=session)
        deadline = time.monotonic() + self.timeout
        while True:
            msg = self._read(deadline)
            if msg.get("id") == i:
                if "error" in msg:
                    raise ReportError(f"chromium {method} failed: {msg['error'].get('message')}")
                return msg.get("result", {})
            if events is not None and "method" in msg:
                events.append(msg)

    def _wait_event(self, name: str, session: str, events: list, deadline: float) -> None:
        for e in events:
            if e.get("method") == name and e.get("sessionId") == session:
                return
        while True:
            msg = self._read(deadline)
            if msg.get("method") == name and msg.get("sessionId") == session:
                return

    # ---------------------------------------------------------------- pages
    def _tab(self) -> str:
        if self._session is None:
            target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
            self._session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
            self.call("Page.enable", session=self._session)
        return self._session

    def open(self, page: str | os.PathLike) -> str:
        """Load ``page`` in the browser's tab and wait until it is ready (see the class
        docstring); returns the session id."""
        import time

        s = self._tab()
        deadline = time.monotonic() + self.timeout
        events: list = []
        res = self.call("Page.navigate", {"url": _url(page)}, session=s, events=events)
        if res.get("errorText"):
            raise ReportError(f"chromium could not load {page}: {res['errorText']}")
        self._wait_event("Page.loadEventFired", s, events, deadline)
        probe = "document.documentElement.getAttribute('data-dn-math') || (window.MathJax ? 'pending' : 'none')"
        while True:
            state = self.call("Runtime.evaluate", {"expression": probe, "returnByValue": True}, session=s)
            if state.get("result", {}).get("value") != "pending":
                return s
            if time.monotonic() > deadline:
                raise ReportError(f"MathJax did not finish on {page} within {self.timeout:.0f} s")
            time.sleep(0.05)

    def print_pdf(self, html: str | os.PathLike, pdf: str | os.PathLike) -> Path:
        """Print ``html`` to ``pdf`` like :func:`print_pdf` (A4 and margins from the
        page's ``@page`` CSS, backgrounds printed, no browser header/footer). Atomic."""
        import base64

        s = self.open(html)
        res = self.call(
            "Page.printToPDF",
            {"printBackground": True, "preferCSSPageSize": True, "displayHeaderFooter": False},
            session=s,
        )
        data = base64.b64decode(res.get("data", ""))
        if data[:5] != b"%PDF-":
            raise ReportError(f"chromium wrote something that is not a PDF for {html}")
        pdf = Path(pdf)
        with atomic_path(pdf) as tmp:
            tmp.write_bytes(data)
        return pdf

    # ---------------------------------------------------------------- shutdown
    def close(self) -> None:
        """Close the browser (politely, then by force) and remove its profile."""
        import time

        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(Exception):
            self._send("Browser.close")
        deadline = time.monotonic() + 5.0
        done = False
        while time.monotonic() < deadline:
            try:
                pid, _ = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # already reaped
                pid = self.pid
            if pid:
                done = True
                break
            time.sleep(0.05)
        # the browser's helpers (renderer, GPU, zygote) live in the process group we
        # created (setsid); end them too, so that none writes into the profile later
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        if not done:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self.pid, 0)
        for fd in (self._cmd_w, self._res_r):
            with contextlib.suppress(OSError):
                os.close(fd)
        for _ in range(20):
            shutil.rmtree(self._profile, ignore_errors=True)
            if not os.path.exists(self._profile):
                break
            time.sleep(0.05)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):  # pragma: no cover - safety net
        with contextlib.suppress(Exception):
            self.close()
