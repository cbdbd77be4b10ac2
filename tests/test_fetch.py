"""`demonoise fetch` offline: a local HTTP server on 127.0.0.1 plays Eurostat's dissemination
API, serving responses built from real Belgian extracts (tests/data/fetch, provenance in
tests/data/README.md). Failures (404, truncated gzip, stalls, invalid JSON, 5xx) must raise
FetchError naming dataset and URL and leave nothing in the cache; a cached fetch must be
reused without network."""

from __future__ import annotations

import copy
import gzip
import hashlib
import http.server
import json
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from demonoise.cli import main
from demonoise.core.errors import DataError, FetchError, ParameterError
from demonoise.io.assemble import IncompleteRegionWarning
from demonoise.io.eurostat import read_eurostat
from demonoise.io.eurostat_api import fetch_table
from demonoise.io.fetch import cached_datasets, comparison_tables, eurostat_counts, fetch_counts, load_cached
from demonoise.io.options import FetchOptions, cache_root
from demonoise.io.tidy import counts_from_eurostat

FIX = Path(__file__).parent / "data" / "fetch"
E = Path(__file__).parent / "data" / "eurostat"
STAT = "/statistics/1.0/data/"


# ------------------------------------------------------------------ the fake Eurostat
@dataclass
class Reply:
    """One scripted answer. ``body`` is sent as is; ``gzip_encoded`` adds
    ``Content-Encoding: gzip``; ``length`` overrides Content-Length (a larger value cuts
    the transfer short); ``stall`` sleeps before anything (``stall_after=None``) or after
    ``stall_after`` bytes of the body."""

    status: int = 200
    body: bytes = b""
    content_type: str = "application/json"
    gzip_encoded: bool = False
    length: int | None = None
    stall: float = 0.0
    stall_after: int | None = None
    headers: dict = field(default_factory=dict)


def _q(**kw) -> frozenset:
    items = [("format", "JSON"), ("lang", "EN")]
    for k, v in kw.items():
        for x in v if isinstance(v, (list, tuple)) else [v]:
            items.append((k, str(x)))
    return frozenset(items)


def json_reply(name: str, *, identity: bool = False) -> Reply:
    raw = (FIX / "statistics" / name).read_bytes()
    if identity:
        return Reply(body=gzip.decompress(raw))
    return Reply(body=raw, gzip_encoded=True)


def default_routes() -> dict:
    r = {
        (STAT + "demo_r_d2jan", _q(geoLevel="nuts2", time=[2023, 2024])): json_reply(
            "demo_r_d2jan_nuts2_2023-2024.json.gz"
        ),
        # one answer without Content-Encoding, as a server may send it
        (STAT + "demo_pjan", _q(geoLevel="country", time=[2023, 2024])): json_reply(
            "demo_pjan_country_2023-2024.json.gz", identity=True
        ),
        (STAT + "demo_r_magec", _q(geoLevel="nuts2", time=2023)): json_reply("demo_r_magec_nuts2_2023.json.gz"),
        (STAT + "demo_magec", _q(geoLevel="country", time=2023)): json_reply("demo_magec_country_2023.json.gz"),
        (STAT + "demo_r_fagec", _q(geoLevel="nuts2", time=2023)): json_reply("demo_r_fagec_nuts2_2023.json.gz"),
        (STAT + "demo_fagec", _q(geoLevel="country", time=2023)): json_reply("demo_fagec_country_2023.json.gz"),
        (STAT + "demo_r_mlifexp", _q(geoLevel=["country", "nuts2"], time=2021)): json_reply(
            "demo_r_mlifexp_country-nuts2_2021.json.gz"
        ),
        (STAT + "demo_r_find2", _q(geoLevel=["country", "nuts2"], time=2021)): json_reply(
            "demo_r_find2_country-nuts2_2021.json.gz"
        ),
        ("/sdmx/2.1/data/demo_r_d2jan", frozenset({("format", "TSV"), ("compressed", "true")})): Reply(
            body=(FIX / "sdmx" / "demo_r_d2jan.tsv.gz").read_bytes(), content_type="application/octet-stream"
        ),
    }
    return r


class FakeEurostat:
    """http.server on a random free port of 127.0.0.1; routes keyed by (path, query set).
    A route may hold a list of replies (one per request, the last repeats)."""

    def __init__(self, routes: dict):
        self.routes = routes
        self.hits: list[tuple[str, frozenset]] = []
        self.release = threading.Event()
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *a):  # quiet
                pass

            def do_GET(self):
                u = urllib.parse.urlsplit(self.path)
                key = (u.path, frozenset(urllib.parse.parse_qsl(u.query, keep_blank_values=True)))
                fake.hits.append(key)
                rep = fake.routes.get(key)
                if isinstance(rep, list):
                    n = sum(1 for h in fake.hits if h == key)
                    rep = rep[min(n, len(rep)) - 1]
                if rep is None:
                    body = json.dumps({"error": [{"status": 404, "id": 100, "label": "No results found"}]}).encode()
                    rep = Reply(status=404, body=body)
                if rep.stall and rep.stall_after is None:
                    fake.release.wait(rep.stall)
                self.send_response(rep.status)
                self.send_header("Content-Type", rep.content_type)
                if rep.gzip_encoded:
                    self.send_header("Content-Encoding", "gzip")
                self.send_header("Content-Length", str(rep.length if rep.length is not None else len(rep.body)))
                for k, v in rep.headers.items():
                    self.send_header(k, v)
                if rep.length is not None and rep.length > len(rep.body):
                    self.send_header("Connection", "close")
                self.end_headers()
                try:
                    if rep.stall and rep.stall_after is not None:
                        self.wfile.write(rep.body[: rep.stall_after])
                        self.wfile.flush()
                        fake.release.wait(rep.stall)
                        self.wfile.write(rep.body[rep.stall_after :])
                    else:
                        self.wfile.write(rep.body)
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass
                if rep.length is not None and rep.length > len(rep.body):
                    self.close_connection = True

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self.thread.start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.running = True

    def stop(self):
        if self.running:
            self.release.set()
            self.server.shutdown()
            self.server.server_close()
            self.running = False


@pytest.fixture
def eurostat():
    srv = FakeEurostat(default_routes())
    yield srv
    srv.stop()


FAST = dict(timeout=5.0, retries=1, backoff=0.01)


def files_under(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file()) if root.exists() else []


# ------------------------------------------------------------------ independent truth
@pytest.fixture(scope="module")
def truth():
    """The same real values read from the long-CSV / SDMX-CSV extracts by other readers."""
    pop = read_eurostat(E / "demo_r_d2jan_BE_2023_2024.csv.gz")
    dea = read_eurostat(E / "demo_r_magec_BE_2023.csv.gz")
    all11 = sorted(pd.unique(pop["geo"]))
    c = counts_from_eurostat(pop, dea, year=2023, regions=all11, name="truth", check_totals="raise")
    births = read_eurostat(E / "demo_fordagec_sdmx_BE_DE_ES_FR_IT_PL_2023.csv.gz")
    b = births[(births["geo"] == "BE") & (births["time"] == 2023)].set_index("age")["value"]
    return c, b


# ---------------------------------------------------------------------------- happy path
def test_fetch_builds_real_counts(eurostat, tmp_path, truth):
    t0 = time.time()
    res = fetch_counts(2023, ["BE"], FetchOptions(cache_dir=tmp_path, base_url=eurostat.url, **FAST))
    t1 = time.time()
    c = res.counts
    assert c.name == "eurostat-2023-be" and c.year == 2023
    assert c.codes == ("BE", "BE31", "BE34")
    assert [r.level for r in c.regions] == [0, 2, 2] and c.regions[2].name == "Prov. Luxembourg (BE)"
    assert c.ages.labels[0] == "Y_LT1" and c.ages.labels[-2:] == ("Y_GE100", "UNK") and c.ages.size == 102

    ref, births = truth
    for code in ("BE31", "BE34"):
        i, j = c.region_index(code), ref.region_index(code)
        np.testing.assert_array_equal(c.pop_start[i], ref.pop_start[j])
        np.testing.assert_array_equal(c.pop_end[i], ref.pop_end[j])
        np.testing.assert_array_equal(c.deaths[i], ref.deaths[j])
    # the country row of the fixture is the sum of the 11 Belgian regions
    k = c.region_index("BE")
    np.testing.assert_array_equal(c.pop_start[k], ref.pop_start.sum(axis=0))
    np.testing.assert_array_equal(c.deaths[k], ref.deaths.sum(axis=0))
    # national births: real demo_fordagec cells 15..49 and UNK; all cells add up to its TOTAL
    assert c.birth_ages.labels[0] == "Y_LT15" and c.birth_ages.labels[-2:] == ("Y_GE50", "UNK")
    for a in ["Y15", "Y30", "Y49", "UNK"]:
        assert c.births[k, c.birth_ages.index(a)] == births[a]
    assert c.births[k].sum() == births["TOTAL"] == 110785
    # regional births: what the JSON-stat reader gives on the served file
    fr = read_eurostat(FIX / "statistics" / "demo_r_fagec_nuts2_2023.json.gz")
    for code in ("BE31", "BE34"):
        sub = fr[(fr["geo"] == code) & (fr["age"] != "TOTAL")].set_index("age")["value"]
        got = c.births[c.region_index(code)]
        assert all(got[c.birth_ages.index(a)] == sub[a] for a in sub.index)

    # provenance: both datasets, download time from the server's Date header, Eurostat's stamp
    p = c.provenance
    assert p.population.datasets == ("demo_r_d2jan", "demo_pjan") and p.deaths.datasets == (
        "demo_r_magec",
        "demo_magec",
    )
    assert p.births.datasets == ("demo_r_fagec", "demo_fagec") and not p.is_modelled
    ext = pd.Timestamp(p.population.extracted)
    assert ext.tzinfo is not None and t0 - 2 <= ext.timestamp() <= t1 + 1
    assert "2025-10-14T23:00:00+0200" in p.population.note and eurostat.url in p.population.note

    # sidecars: url, sha256 and size of the payload as stored
    assert sorted(res.entries) == [
        "demo_fagec",
        "demo_magec",
        "demo_pjan",
        "demo_r_d2jan",
        "demo_r_fagec",
        "demo_r_magec",
    ]
    for e in res.entries.values():
        side = json.loads((e.path.parent / f"{e.meta['key']}.meta.json").read_text())
        data = e.path.read_bytes()
        assert side["sha256"] == hashlib.sha256(data).hexdigest() and side["size"] == len(data)
        assert side["url"].startswith(eurostat.url + STAT + e.dataset + "?") and side["extracted_from"] == "http-date"
        assert side["updated"] == "2025-10-14T23:00:00+0200" and e.downloaded
    assert res.entries["demo_r_d2jan"].path.name == "json_geoLevel-nuts2_time-2023+2024.json.gz"
    assert res.entries["demo_pjan"].path.name.endswith(".json")  # served without gzip, stored as received
    assert len(eurostat.hits) == 6
    # the fixture has 2 of Belgium's 11 NUTS 2021 regions: the others are listed as absent
    assert res.absent == ["BE10", "BE21", "BE22", "BE23", "BE24", "BE25", "BE32", "BE33", "BE35"]
    assert res.ignored_codes == [] and res.skipped == {}


def test_cache_reused_without_network(eurostat, tmp_path):
    first = eurostat_counts(2023, ["BE"], FetchOptions(cache_dir=tmp_path, base_url=eurostat.url, **FAST))
    before = {p: p.read_bytes() for p in files_under(tmp_path) if "eurostat" in p.parts}
    eurostat.stop()  # any network access would now fail
    res = fetch_counts(2023, ["BE"], FetchOptions(cache_dir=tmp_path, base_url=eurostat.url, **FAST))
    assert res.downloaded == [] and len(eurostat.hits) == 6
    second = res.counts
    assert second.codes == first.codes
    for m in ("pop_start", "pop_end", "deaths", "births"):
        np.testing.assert_array_equal(getattr(second, m), getattr(first, m))
    assert second.provenance == first.provenance
    # offline mode gives the same, too
    third = eurostat_counts(2023, ["BE"], FetchOptions(cache_dir=tmp_path, offline=True))
    np.testing.assert_array_equal(third.deaths, first.deaths)
    # --refresh with the server gone fails clearly and keeps the old entries intact
    with pytest.raises(
        FetchError,
        match=r"demo_r_d2jan: cannot connect .* to http://127\.0\.0\.1:\d+/statistics/1\.0/data/demo_r_d2jan\?",
    ):
        eurostat_counts(2023, ["BE"], FetchOptions(cache_dir=tmp_path, base_url=eurostat.url, refresh=True, **FAST))
    after = {p: p.read_bytes() for p in files_under(tmp_path) if "eurostat" in p.parts}
    assert after == before


def test_offline_with_empty_cache_fails_clearly(tmp_path):
    with pytest.raises(FetchError, match=r"demo_r_d2jan: not in the cache .* offline mode forbids downloading"):
        eurostat_counts(2023, ["BE"], FetchOptions(cache_dir=tmp_path, offline=True))
    assert files_under(tmp_path) == []


def test_selection_is_local_one_download_serves_every_selection(eurostat, tmp_path):
    eurostat_counts(2023, ["BE"], FetchOptions(cache_dir=tmp_path, base_url=eurostat.url, **FAST))
    c = eurostat_counts(2023, None, FetchOptions(cache_dir=tmp_path, base_url=eurostat.url, **FAST))
    assert c.name == "eurostat-2023" and c.codes == ("BE", "BE31", "BE34") and len(eurostat.hits) == 6


# -------------------------------------------------------------------------- failure modes
def _truncated(name):
    raw = (FIX / "statistics" / name).read_bytes()
    return Reply(body=raw[: len(raw) // 2], gzip_encoded=True)


FAILURES = {
    "http404": (
        Reply(status=404, body=b'{"error":[{"status":404,"id":100,"label":"No results found"}]}'),
        r"demo_r_d2jan: HTTP 404 Not Found \(Eurostat: No results found\) from http://127\.0\.0\.1:\d+/statistics/1\.0/data/demo_r_d2jan\?format=JSON",
    ),
    "http400-label": (
        Reply(
            status=400,
            body=json.dumps(
                {
                    "error": [
                        {
                            "status": 400,
                            "id": 150,
                            "label": 'INVALID_QUERY_DIMENSION: Dimension "GEOLEVEL" is not defined',
                        }
                    ]
                }
            ).encode(),
        ),
        r"HTTP 400 Bad Request \(Eurostat: INVALID_QUERY_DIMENSION: Dimension \"GEOLEVEL\" is not defined\)",
    ),
    "truncated-gzip": (
        _truncated("demo_r_d2jan_nuts2_2023-2024.json.gz"),
        r"demo_r_d2jan: truncated or corrupt gzip .* from http://127",
    ),
    "invalid-json": (
        Reply(body=b'{"version": "2.0", "class": "dataset", "value": {"0": 1'),
        r"demo_r_d2jan: invalid JSON \(",
    ),
    "html-page": (
        Reply(body=b"<html><body>Service unavailable</body></html>", content_type="text/html"),
        r"invalid JSON",
    ),
    "empty-body": (Reply(body=b""), r"demo_r_d2jan: empty body"),
    "empty-dataset": (
        Reply(
            body=json.dumps(
                {
                    "version": "2.0",
                    "class": "dataset",
                    "id": ["geo", "time"],
                    "size": [0, 0],
                    "dimension": {},
                    "value": {},
                }
            ).encode()
        ),
        r"empty dataset",
    ),
    "error-in-200": (
        Reply(body=b'{"error":[{"status":400,"id":100,"label":"No results found"}]}'),
        r"an error answer instead of data",
    ),
    "server-error": (
        [Reply(status=500, body=b"oops")],
        r"demo_r_d2jan: HTTP 500 Internal Server Error \(Eurostat: oops\) "
        r"\(after 2 attempts; waited 0.01 s of backoff\)",
    ),
    "brotli": (
        Reply(body=b"\x0b\x02\x80{}\x03", headers={"Content-Encoding": "br"}),
        r"unsupported Content-Encoding 'br'",
    ),
    "cut-short": (
        [Reply(body=b'{"version": "2.0"', length=5000)],
        r"transfer cut short after 17 of 5000 bytes \(after 2 attempts; waited 0.01 s of backoff\)",
    ),
}


@pytest.mark.parametrize("case", sorted(FAILURES))
def test_failure_raises_fetch_error_and_leaves_no_entry(case, tmp_path):
    reply, pattern = FAILURES[case]
    routes = default_routes()
    key = (STAT + "demo_r_d2jan", _q(geoLevel="nuts2", time=[2023, 2024]))
    routes[key] = reply
    srv = FakeEurostat(routes)
    try:
        with pytest.raises(FetchError, match=pattern) as ei:
            eurostat_counts(2023, ["BE"], FetchOptions(cache_dir=tmp_path, base_url=srv.url, **FAST))
        assert ei.value.dataset == "demo_r_d2jan" and ei.value.url.startswith(srv.url + STAT + "demo_r_d2jan?")
        assert "\n" not in str(ei.value)
        n = sum(1 for h in srv.hits if h == key)
        assert n == (2 if isinstance(reply, list) else 1)  # transient errors retried once (retries=1), others never
    finally:
        srv.stop()
    assert files_under(tmp_path) == []  # no payload, no sidecar, no temporary file, no empty folder


@pytest.mark.parametrize("after", [None, 100], ids=["before-headers", "mid-body"])
def test_stalled_server_fails_within_the_timeout(after, tmp_path):
    routes = default_routes()
    key = (STAT + "demo_r_d2jan", _q(geoLevel="nuts2", time=[2023, 2024]))
    rep = copy.copy(routes[key])
    rep.stall, rep.stall_after = 20.0, after
    routes[key] = rep
    srv = FakeEurostat(routes)
    try:
        t0 = time.perf_counter()
        with pytest.raises(FetchError, match=r"demo_r_d2jan: timed out after 0\.5 s .* at http://127"):
            fetch_table(
                "demo_r_d2jan",
                [("geoLevel", "nuts2"), ("time", "2023"), ("time", "2024")],
                FetchOptions(cache_dir=tmp_path, base_url=srv.url, timeout=0.5, retries=2, backoff=0.01),
            )
        dt = time.perf_counter() - t0
    finally:
        srv.stop()
    assert 0.4 < dt < 2.0, dt  # one timeout, not retried
    assert files_under(tmp_path) == []


def test_transient_errors_are_retried_with_backoff(tmp_path):
    routes = default_routes()
    key = (STAT + "demo_r_magec", _q(geoLevel="nuts2", time=2023))
    good = routes[key]
    routes[key] = [Reply(status=503, body=b"busy"), Reply(status=502, body=b""), good]
    srv = FakeEurostat(routes)
    try:
        t0 = time.perf_counter()
        e = fetch_table(
            "demo_r_magec",
            [("geoLevel", "nuts2"), ("time", "2023")],
            FetchOptions(cache_dir=tmp_path, base_url=srv.url, timeout=5, retries=3, backoff=0.05),
        )
        dt = time.perf_counter() - t0
    finally:
        srv.stop()
    assert sum(1 for h in srv.hits if h == key) == 3 and e.downloaded
    assert dt >= 0.05 + 0.1  # backoff 0.05 s, then 0.1 s
    assert e.path.read_bytes() == good.body


def test_413_falls_back_to_the_full_tsv(eurostat, tmp_path, truth):
    key = (STAT + "demo_r_d2jan", _q(geoLevel="nuts2", time=[2023, 2024]))
    eurostat.routes[key] = Reply(
        status=413,
        content_type="text/xml",
        body=(
            b'<S:Fault xmlns:S="http://schemas.xmlsoap.org/soap/envelope/"><faultcode>413</faultcode><faultstring>'
            b"EXTRACTION_TOO_BIG: The requested extraction is too big, estimated 420709314 rows, "
            b"max authorised is 5000000"
            b"</faultstring></S:Fault>"
        ),
    )
    with pytest.warns(RuntimeWarning, match="EXTRACTION_TOO_BIG"):
        res = fetch_counts(2023, ["BE"], FetchOptions(cache_dir=tmp_path, base_url=eurostat.url, **FAST))
    e = res.entries["demo_r_d2jan"]
    assert e.path.name == "tsv_full.tsv.gz" and e.format == "tsv" and e.meta["rows"] == 1236
    ref, _ = truth
    c = res.counts
    assert c.codes == ("BE", "BE31", "BE34")  # the TSV's BE and BE3 rows are not NUTS 2 rows
    for code in ("BE31", "BE34"):
        np.testing.assert_array_equal(c.pop_start[c.region_index(code)], ref.pop_start[ref.region_index(code)])
        np.testing.assert_array_equal(c.pop_end[c.region_index(code)], ref.pop_end[ref.region_index(code)])
    # offline, the TSV entry is what the cache holds for that table
    eurostat.stop()
    again = eurostat_counts(2023, ["BE"], FetchOptions(cache_dir=tmp_path, offline=True))
    np.testing.assert_array_equal(again.pop_start, c.pop_start)


def test_truncated_tsv_gzip(tmp_path):
    routes = default_routes()
    key = ("/sdmx/2.1/data/demo_r_d2jan", frozenset({("format", "TSV"), ("compressed", "true")}))
    raw = routes[key].body
    routes[key] = Reply(body=raw[:-40], content_type="application/octet-stream")
    srv = FakeEurostat(routes)
    try:
        with pytest.raises(
            FetchError,
            match=r"demo_r_d2jan: truncated or corrupt gzip .* from http://127.*/sdmx/2\.1/data/demo_r_d2jan\?format=TSV&compressed=true",
        ):
            fetch_table("demo_r_d2jan", (), FetchOptions(endpoint="tsv", cache_dir=tmp_path, base_url=srv.url, **FAST))
    finally:
        srv.stop()
    assert files_under(tmp_path) == []


# --------------------------------------------------------------------- incomplete regions
def _without(name: str, geo: str, age: str | None = None) -> Reply:
    """A served cube with the values of one region (or one of its ages) removed."""
    d = json.loads(gzip.decompress((FIX / "statistics" / name).read_bytes()))
    ids, size = d["id"], d["size"]
    gi = d["dimension"]["geo"]["category"]["index"][geo]
    ai = d["dimension"]["age"]["category"]["index"][age] if age else None
    keep = {}
    for pos, v in d["value"].items():
        idx = np.unravel_index(int(pos), size)
        hit = idx[ids.index("geo")] == gi and (ai is None or idx[ids.index("age")] == ai)
        if not hit:
            keep[pos] = v
    d["value"] = keep
    return Reply(body=gzip.compress(json.dumps(d).encode()), gzip_encoded=True)


def _with_copied_geo(name: str, src: str, new: str) -> Reply:
    """A served cube with one more geo category carrying the values of ``src``."""
    d = json.loads(gzip.decompress((FIX / "statistics" / name).read_bytes()))
    ids, size = d["id"], list(d["size"])
    g = ids.index("geo")
    cat = d["dimension"]["geo"]["category"]
    si = cat["index"][src]
    cat["index"][new] = size[g]
    cat["label"][new] = new
    new_size = list(size)
    new_size[g] += 1
    value = {}
    for pos, v in d["value"].items():
        idx = list(np.unravel_index(int(pos), size))
        value[str(np.ravel_multi_index(idx, new_size))] = v
        if idx[g] == si:
            idx[g] = size[g]
            value[str(np.ravel_multi_index(idx, new_size))] = v
    d["size"], d["value"], d["status"] = new_size, value, {}
    return Reply(body=gzip.compress(json.dumps(d).encode()), gzip_encoded=True)


def test_codes_of_other_nuts_versions_are_ignored_and_listed(eurostat, tmp_path):
    # NL35 is a NUTS 2024 code (not in NUTS 2021): kept out of the counts, listed
    for code, name, years in (
        ("demo_r_d2jan", "demo_r_d2jan_nuts2_2023-2024.json.gz", [2023, 2024]),
        ("demo_r_magec", "demo_r_magec_nuts2_2023.json.gz", 2023),
    ):
        eurostat.routes[(STAT + code, _q(geoLevel="nuts2", time=years))] = _with_copied_geo(name, "BE34", "NL35")
    res = fetch_counts(2023, None, FetchOptions(cache_dir=tmp_path, base_url=eurostat.url, **FAST))
    assert res.ignored_codes == ["NL35"] and res.counts.codes == ("BE", "BE31", "BE34")
    np.testing.assert_array_equal(
        res.counts.pop_start[2],
        read_eurostat(FIX / "statistics" / "demo_r_d2jan_nuts2_2023-2024.json.gz")
        .pipe(lambda d: d[(d.geo == "BE34") & (d.time == 2023)])
        .pipe(lambda d: d[d.age != "TOTAL"])
        .pivot(index="sex", columns="age", values="value")
        .loc[["F", "M", "T"], [a if a != "Y_GE100" else "Y_OPEN" for a in res.counts.ages.labels]]
        .to_numpy(),
    )


def test_region_lacking_a_table_is_named_or_skipped(eurostat, tmp_path):
    eurostat.routes[(STAT + "demo_r_fagec", _q(geoLevel="nuts2", time=2023))] = _without(
        "demo_r_fagec_nuts2_2023.json.gz", "BE31"
    )
    with pytest.raises(
        DataError, match=r"1 region\(s\) lack a table or some ages: BE31 \(demo_r_fagec: no values for 2023\)"
    ) as ei:
        eurostat_counts(2023, ["BE"], FetchOptions(cache_dir=tmp_path, base_url=eurostat.url, **FAST))
    assert ei.value.region == "BE31" and ei.value.table == "demo_r_fagec"
    with pytest.warns(IncompleteRegionWarning, match="BE31"):
        res = fetch_counts(
            2023, ["BE"], FetchOptions(cache_dir=tmp_path, base_url=eurostat.url, **FAST), skip_incomplete=True
        )
    assert res.counts.codes == ("BE", "BE34") and list(res.skipped) == ["BE31"]
    assert "regions skipped as incomplete: BE31" in res.counts.provenance.births.note
    assert res.downloaded == []  # the first attempt had cached every table


def test_region_lacking_an_age_is_named(eurostat, tmp_path):
    eurostat.routes[(STAT + "demo_r_magec", _q(geoLevel="nuts2", time=2023))] = _without(
        "demo_r_magec_nuts2_2023.json.gz", "BE34", "Y_OPEN"
    )
    with pytest.raises(
        DataError, match=r"BE34 \(demo_r_magec: 3 of 306 cells missing \(first: 2023 sex F age Y_OPEN\)\)"
    ):
        eurostat_counts(2023, ["BE"], FetchOptions(cache_dir=tmp_path, base_url=eurostat.url, **FAST))


# ----------------------------------------------------------------------- registry hooks
def test_registry_hooks_rebuild_from_cache(eurostat, tmp_path):
    assert cached_datasets(tmp_path) == []
    c = eurostat_counts(2023, ["BE"], FetchOptions(cache_dir=tmp_path, base_url=eurostat.url, **FAST))
    eurostat.stop()
    rows = cached_datasets(tmp_path)
    assert len(rows) == 1
    row = rows[0]
    assert row["name"] == "eurostat-2023-be" and row["kind"] == "cached" and row["year"] == 2023 and row["regions"] == 3
    assert "1 country and 2 NUTS 2 regions" in row["label"]
    assert any(line.startswith("population: demo_r_d2jan + demo_pjan") for line in row["details"])
    back = load_cached("eurostat-2023-be", tmp_path)
    assert back.codes == c.codes and back.name == c.name
    np.testing.assert_array_equal(back.births, c.births)
    with pytest.raises(ParameterError, match="no cached dataset named 'eurostat-1999'.*cached: eurostat-2023-be"):
        load_cached("eurostat-1999", tmp_path)
    # a table that left the cache makes the fetch incomplete
    next((tmp_path / "eurostat" / "demo_magec").glob("*.json.gz")).unlink()
    assert cached_datasets(tmp_path) == []
    with pytest.raises(FetchError, match="demo_magec: not in the cache"):
        load_cached("eurostat-2023-be", tmp_path)


def test_corrupted_cache_entry_is_not_used(eurostat, tmp_path):
    eurostat_counts(2023, ["BE"], FetchOptions(cache_dir=tmp_path, base_url=eurostat.url, **FAST))
    p = next((tmp_path / "eurostat" / "demo_r_magec").glob("*.json.gz"))
    data = bytearray(p.read_bytes())
    data[-10] ^= 0xFF
    p.write_bytes(bytes(data))
    with pytest.raises(FetchError, match="does not match its sha256"):
        eurostat_counts(2023, ["BE"], FetchOptions(cache_dir=tmp_path, offline=True))
    res = fetch_counts(
        2023, ["BE"], FetchOptions(cache_dir=tmp_path, base_url=eurostat.url, **FAST)
    )  # downloads that one again
    assert res.downloaded == ["demo_r_magec"]


# ---------------------------------------------------------------------- comparison tables
def test_comparison_tables(eurostat, tmp_path):
    t = comparison_tables(2021, ["BE"], FetchOptions(cache_dir=tmp_path, base_url=eurostat.url, **FAST))
    assert list(t) == ["demo_r_mlifexp", "demo_r_find2"]
    le = t["demo_r_mlifexp"]
    assert set(le["geo"]) == {
        "BE",
        "BE10",
        "BE21",
        "BE22",
        "BE23",
        "BE24",
        "BE25",
        "BE31",
        "BE32",
        "BE33",
        "BE34",
        "BE35",
    }
    # the same value as in the bulk TSV extract, read by the TSV reader
    src = read_eurostat(E / "demo_r_mlifexp_BE_2021.tsv.gz")
    for geo, sex, age in (("BE34", "F", "Y_LT1"), ("BE", "T", "Y65"), ("BE10", "M", "Y_LT1")):
        a = le[(le["geo"] == geo) & (le["sex"] == sex) & (le["age"] == age)]["value"]
        b = src[(src["geo"] == geo) & (src["sex"] == sex) & (src["age"] == age) & (src["time"] == 2021)]["value"]
        assert len(a) == 1 and a.iloc[0] == b.iloc[0]
    assert le.attrs["dataset"] == "demo_r_mlifexp" and le.attrs["updated"] == "2025-10-14T23:00:00+0200"
    assert set(t["demo_r_find2"]["indic_de"]) == {"TOTFERRT", "AGEMOTH"}
    eurostat.stop()
    again = comparison_tables(2021, ["BE"], FetchOptions(cache_dir=tmp_path, offline=True))
    pd.testing.assert_frame_equal(again["demo_r_mlifexp"], le)


# ------------------------------------------------------------------------ settings, CLI
def test_environment_variables(eurostat, tmp_path, monkeypatch):
    monkeypatch.setenv("DEMONOISE_EUROSTAT_URL", eurostat.url)
    monkeypatch.setenv("DEMONOISE_CACHE", str(tmp_path / "c"))
    assert cache_root() == tmp_path / "c"
    c = eurostat_counts(2023, ["BE"], FetchOptions(**FAST))
    assert c.codes == ("BE", "BE31", "BE34") and (tmp_path / "c" / "datasets" / "eurostat-2023-be.json").exists()


def test_bad_parameters():
    with pytest.raises(ParameterError, match="http"):
        fetch_table("demo_r_d2jan", (), FetchOptions(base_url="ftp://example.org"))
    with pytest.raises(ParameterError, match="Eurostat writes Greece as EL"):
        eurostat_counts(2023, ["GR"])
    with pytest.raises(ParameterError, match="timeout"):
        fetch_table("demo_r_d2jan", (), FetchOptions(timeout=0))
    with pytest.raises(ParameterError, match="endpoint"):
        fetch_table("demo_r_d2jan", (), FetchOptions(endpoint="xml"))


def test_cli_fetch_prints_a_summary(eurostat, tmp_path, capsys):
    args = [
        "fetch",
        "--base-url",
        eurostat.url,
        "--year",
        "2023",
        "--countries",
        "BE",
        "--cache-dir",
        str(tmp_path),
        "--timeout",
        "5",
    ]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert out.startswith("eurostat-2023-be: 3 regions (1 country, 2 NUTS 2 regions), reference year 2023")
    assert "population  demo_r_d2jan + demo_pjan: downloaded 20" in out
    assert "Eurostat update 2025-10-14T23:00:00+0200" in out
    # no 2023 comparison fixtures: reported, not fatal
    assert "comparison  demo_r_mlifexp: not available (demo_r_mlifexp: HTTP 404" in out
    assert "absent      9 NUTS 2021 region(s) without population data for 2023: BE10, BE21," in out
    assert f"cache: {tmp_path} (6 tables: 6 downloaded, 0 reused)" in out
    eurostat.stop()
    assert main(args + ["--no-comparison"]) == 0
    assert "(6 tables: 0 downloaded, 6 reused)" in capsys.readouterr().out


def test_cli_fetch_errors_exit_2_with_one_line(eurostat, tmp_path, capsys):
    eurostat.stop()
    code = main(
        ["fetch", "--base-url", eurostat.url, "--year", "2023", "--countries", "BE", "--cache-dir", str(tmp_path)]
    )
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert err.startswith("demonoise fetch: error: demo_r_d2jan: cannot connect") and eurostat.url in err
    code = main(["fetch", "--offline", "--year", "2023", "--cache-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "offline mode forbids downloading" in err


def test_fetched_dataset_flows_through_the_registry_and_compute(eurostat, tmp_path, monkeypatch):
    """A fetch lands in the registry: `demonoise datasets` lists it, `--dataset` loads it
    without network, and the analysis runs on it."""
    from demonoise.cli import main
    from demonoise.io import datasets

    monkeypatch.setenv("DEMONOISE_CACHE", str(tmp_path / "cache"))
    eurostat_counts(2023, ["BE"], FetchOptions(base_url=eurostat.url, **FAST))
    eurostat.stop()
    datasets.clear_cache()
    names = {d.name: d for d in datasets.available()}
    assert names["eurostat-2023-be"].kind == "cached" and "be-2023" in names
    out = tmp_path / "r.csv"
    assert (
        main(["compute", "--dataset", "eurostat-2023-be", "--V", "1", "--indicators", "e", "tfr", "--out", str(out)])
        == 0
    )
    df = pd.read_csv(out)
    assert set(df.region) == {"BE", "BE31", "BE34"} and df.value.notna().all()
    datasets.clear_cache()


# ------------------------------------------------ the reader decides what enters the cache
def _inconsistent_sizes(name: str) -> bytes:
    """A served cube whose ``size`` says one more geo than its categories list: the kind of
    answer a structural check lets through and the reader refuses."""
    d = json.loads(gzip.decompress((FIX / "statistics" / name).read_bytes()))
    d["size"][d["id"].index("geo")] += 1
    return gzip.compress(json.dumps(d).encode(), mtime=0)


def test_answer_the_reader_refuses_never_enters_the_cache(tmp_path):
    routes = default_routes()
    key = (STAT + "demo_r_magec", _q(geoLevel="nuts2", time=2023))
    routes[key] = Reply(body=_inconsistent_sizes("demo_r_magec_nuts2_2023.json.gz"), gzip_encoded=True)
    srv = FakeEurostat(routes)
    try:
        with pytest.raises(FetchError) as ei:
            eurostat_counts(2023, ["BE"], FetchOptions(cache_dir=tmp_path, base_url=srv.url, **FAST))
    finally:
        srv.stop()
    msg = str(ei.value)
    assert msg.startswith("demo_r_magec: JSON-stat dimension 'geo' has 2 categories but size 3 in the response from ")
    assert ei.value.url.startswith(srv.url + STAT + "demo_r_magec?") and "\n" not in msg
    assert not (tmp_path / "eurostat" / "demo_r_magec").exists()  # the tables before it are cached, this one not
    assert (tmp_path / "eurostat" / "demo_r_d2jan").is_dir()
    with pytest.raises(FetchError, match="demo_r_magec: not in the cache"):
        eurostat_counts(2023, ["BE"], FetchOptions(cache_dir=tmp_path, offline=True))


# ---------------------------------------------------- caches written by earlier versions
OLD_CACHE = FIX / "cache-0.2.0.dev0"  # written by demonoise 0.2.0.dev0 (urllib client), see tests/data/README.md


@pytest.fixture
def old_cache(tmp_path):
    import shutil

    root = tmp_path / "cache"
    shutil.copytree(OLD_CACHE, root)
    return root


def test_cache_of_the_previous_version_is_read_as_it_is(old_cache, eurostat, tmp_path, capsys, monkeypatch):
    before = {p: p.read_bytes() for p in files_under(old_cache)}
    assert all("schema" not in json.loads(p.read_text()) for p in old_cache.rglob("*.meta.json"))
    rows = cached_datasets(old_cache)
    assert [(r["name"], r["regions"]) for r in rows] == [("eurostat-2023-be", 3)]
    # the registry lists it, as `demonoise datasets` shows it
    monkeypatch.setenv("DEMONOISE_CACHE", str(old_cache))
    from demonoise.io import datasets

    datasets.clear_cache()
    assert main(["datasets"]) == 0
    listed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("eurostat-2023-be")]
    assert len(listed) == 1 and "cached" in listed[0] and "1 country and 2 NUTS 2 regions" in listed[0]
    datasets.clear_cache()
    # rebuilt offline from the old entries: the same counts as a fresh fetch by this version
    old = load_cached("eurostat-2023-be", old_cache)
    new = fetch_counts(2023, ["BE"], FetchOptions(cache_dir=tmp_path / "new", base_url=eurostat.url, **FAST)).counts
    assert old.codes == new.codes and old.ages == new.ages and old.birth_ages == new.birth_ages
    for m in ("pop_start", "pop_end", "deaths", "births"):
        np.testing.assert_array_equal(getattr(old, m), getattr(new, m))
    assert old.provenance.population.extracted.startswith("2026-")  # the old download time, kept
    # the comparison tables and the full-dataset TSV entry of the old cache, too
    t = comparison_tables(2021, ["BE"], FetchOptions(cache_dir=old_cache, offline=True))
    assert set(t) == {"demo_r_mlifexp", "demo_r_find2"} and len(t["demo_r_mlifexp"]) > 0
    e = fetch_table("demo_r_d2jan", (), FetchOptions(cache_dir=old_cache, endpoint="tsv", offline=True))
    assert e.format == "tsv" and e.written_by == "0.2.0.dev0 or earlier"
    # nothing was rewritten: no migration was needed
    assert {p: p.read_bytes() for p in files_under(old_cache)} == before


def _plant(root: Path, code: str, payload: bytes) -> Path:
    """Replace a cached payload as if the previous version had accepted it: the sidecar's
    and the manifest's size and sha256 follow it."""
    side = next((root / "eurostat" / code).glob("json_*.meta.json"))
    meta = json.loads(side.read_text())
    path = side.parent / meta["file"]
    path.write_bytes(payload)
    meta["size"], meta["sha256"] = len(payload), hashlib.sha256(payload).hexdigest()
    side.write_text(json.dumps(meta))
    for man_path in (root / "datasets").glob("*.json"):
        man = json.loads(man_path.read_text())
        if code in man["entries"]:
            man["entries"][code].update(size=meta["size"], sha256=meta["sha256"])
            man_path.write_text(json.dumps(man))
    return path


def test_cache_entry_the_reader_refuses_says_how_to_refresh(old_cache, eurostat, capsys):
    bad = _plant(old_cache, "demo_r_magec", _inconsistent_sizes("demo_r_magec_nuts2_2023.json.gz"))
    assert [r["name"] for r in cached_datasets(old_cache)] == ["eurostat-2023-be"]  # listed: complete on disk
    with pytest.raises(FetchError) as ei:
        load_cached("eurostat-2023-be", old_cache)
    msg = str(ei.value)
    assert "\n" not in msg and msg.startswith(f"demo_r_magec: the cached table {bad} cannot be read (")
    assert msg.endswith("download it again with `demonoise fetch --year 2023 --refresh`")
    # the CLI says the same in one line and exits 2
    args = ["fetch", "--year", "2023", "--countries", "BE", "--cache-dir", str(old_cache), "--base-url", eurostat.url]
    assert main(args + ["--no-comparison"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--refresh`" in err
    # and the command it names replaces the entry with a readable one (of this version)
    assert main(args + ["--refresh", "--no-comparison", "--timeout", "5"]) == 0
    capsys.readouterr()
    side = json.loads(next((old_cache / "eurostat" / "demo_r_magec").glob("json_*.meta.json")).read_text())
    from demonoise.core.version import __version__

    assert side["schema"] == 2 and side["demonoise"] == __version__
    assert load_cached("eurostat-2023-be", old_cache).codes == ("BE", "BE31", "BE34")


@pytest.mark.slow  # a fresh interpreter importing pandas: a few seconds on a loaded machine
def test_listing_and_loading_cached_datasets_does_not_import_the_http_client(old_cache):
    """The registry reads the cache on every load; requests is imported only to download."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from demonoise.io import datasets\n"
        "names = [d.name for d in datasets.available()]\n"
        "c = datasets.load('eurostat-2023-be')\n"
        "print(names.count('eurostat-2023-be'), c.codes, 'requests' in sys.modules, 'urllib3' in sys.modules)\n"
    )
    env = {**__import__("os").environ, "DEMONOISE_CACHE": str(old_cache)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "1 ('BE', 'BE31', 'BE34') False False"
