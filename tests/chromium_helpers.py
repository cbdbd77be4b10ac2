"""Headless Chromium for the tests that open a report in a real browser (not a test module).

The one-shot command line (``chromium --headless --dump-dom`` / ``--screenshot``) with the
network off (every host resolves to nothing, a dead proxy) and a net log, read back by
:func:`page_requests`: a page that loads nothing logs no request of its own. Chromium is
not part of demonoise; tests using it skip where it is absent (``report_helpers.chromium``).
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

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")

_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--no-first-run", "--no-default-browser-check", "--disable-sync", "--disable-extensions",
    "--disable-default-apps", "--disable-domain-reliability", "--disable-client-side-phishing-detection",
    "--disable-crash-reporter", "--disable-features=Translate,OptimizationHints,MediaRouter,SpellcheckService",
    "--hide-scrollbars", "--run-all-compositor-stages-before-draw", "--virtual-time-budget=5000",
    "--host-resolver-rules=MAP * ~NOTFOUND", "--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>",
)  # fmt: skip


def run(page, args, *, net_log=None, timeout: float = 120.0) -> bytes:
    """Run Chromium on ``page`` (a path or URL) with ``args``; its stdout. Kills its
    process group on a timeout."""
    url = str(page) if str(page).startswith(("file:", "data:")) else Path(page).resolve().as_uri()
    with tempfile.TemporaryDirectory(prefix="dn-chromium-") as profile:
        cmd = [CHROMIUM, *_FLAGS, f"--user-data-dir={profile}"]
        if net_log is not None:
            cmd += [f"--log-net-log={Path(net_log).resolve()}", "--net-log-capture-mode=Default"]
        proc = subprocess.Popen(
            [*cmd, *args, url], stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
        )
        try:
            out, err = proc.communicate(timeout=timeout)
        finally:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate()
    assert proc.returncode == 0, err.decode("utf-8", "replace")[-2000:]
    return out


def dump_dom(page, *, net_log=None) -> str:
    """The DOM after the page's scripts ran."""
    return run(page, ["--dump-dom"], net_log=net_log).decode("utf-8", "replace")


def screenshot(page, png, *, width: int = 1300, height: int = 2000) -> Path:
    run(page, [f"--screenshot={Path(png).resolve()}", f"--window-size={width},{height}"])
    return Path(png)


def page_requests(net_log) -> list[dict]:
    """Requests made *by the page* (not the browser's own background ones) in a net log:
    ``url``, ``method``, ``net_error`` (negative: failed)."""
    text = Path(net_log).read_text(encoding="utf-8")
    try:
        log = json.loads(text)
    except ValueError:  # Chromium ended before closing the JSON array
        log = json.loads(text.rstrip().rstrip(",") + "]}")
    types = {v: k for k, v in log["constants"]["logEventTypes"].items()}
    starts: dict[int, dict] = {}
    errors: dict[int, int] = {}
    for ev in log.get("events", []):
        params, sid = ev.get("params") or {}, ev.get("source", {}).get("id")
        if types.get(ev.get("type")) == "URL_REQUEST_START_JOB" and "url" in params:
            starts[sid] = params
        elif "net_error" in params and sid in starts:
            errors[sid] = params["net_error"]
    return [
        {"url": p["url"], "method": p.get("method"), "net_error": errors.get(sid)}
        for sid, p in starts.items()
        if str(p.get("network_isolation_key", "")).startswith("file://") or p.get("initiator") == "null"
    ]
