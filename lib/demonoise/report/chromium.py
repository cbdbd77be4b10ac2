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
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path
from typing import Sequence

from ..errors import ReportError
from ..atomic import atomic_path

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
    res = run_chromium(
        html, ["--dump-dom"], chromium=chromium, budget_ms=budget_ms, net_log=net_log, timeout=timeout
    )
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
