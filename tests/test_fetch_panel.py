"""`demonoise fetch --year 2021 2022 2023`: a multi-year dataset from Eurostat's API, offline.

A local HTTP server on 127.0.0.1 (tests/test_fetch.py's) answers the statistics API's
queries with JSON-stat 2.0 cubes of BE and three of its NUTS 2 regions for 2021-2023
(tests/data/fetch/make_panel_fixtures.py, provenance in tests/data/README.md). The truth the
panel is checked against is read from the served files with :mod:`json` alone, not with the
project's reader.
"""

from __future__ import annotations

import gzip
import json
import time

import numpy as np
import pandas as pd
import pytest

from demonoise.cli import main
from demonoise.core.errors import DataError, FetchError, ParameterError
from demonoise.io.fetch import fetch_counts, fetch_panel, load_cached, load_cached_panel
from demonoise.io.options import FetchOptions
from demonoise.io.template import write_panel_csv
from test_fetch import FAST, FIX, STAT, FakeEurostat, _q, default_routes, files_under, json_reply

YEARS = [2021, 2022, 2023]
REGIONS = ("BE", "BE31", "BE34", "BE35")
TABLES = {
    "population": ("demo_r_d2jan", "demo_pjan"),
    "deaths": ("demo_r_magec", "demo_magec"),
    "births": ("demo_r_fagec", "demo_fagec"),
}


def _tag(years) -> str:
    return "-".join(map(str, years))


def panel_routes(served=YEARS, asked=YEARS) -> dict:
    """The default routes plus the answers of the 2021-2023 cubes (``served``) to the queries of
    the years ``asked`` (the same years, unless a test makes the API answer other years)."""
    r = default_routes()
    for measure, (rcode, ncode) in TABLES.items():
        extra = [served[-1] + 1] if measure == "population" else []
        ask = [*asked, asked[-1] + 1] if measure == "population" else list(asked)
        r[(STAT + rcode, _q(geoLevel="nuts2", time=ask))] = json_reply(
            f"{rcode}_nuts2_{_tag([*served, *extra])}.json.gz"
        )
        r[(STAT + ncode, _q(geoLevel="country", time=ask))] = json_reply(
            f"{ncode}_country_{_tag([*served, *extra])}.json.gz"
        )
    return r


@pytest.fixture
def eurostat():
    srv = FakeEurostat(panel_routes())
    yield srv
    srv.stop()


def options(srv, tmp_path, **kw) -> FetchOptions:
    return FetchOptions(cache_dir=tmp_path, base_url=srv.url, **FAST, **kw)


# ------------------------------------------------------------------ independent truth
def served(code: str, level: str, years) -> tuple[dict, str]:
    """The cells of a served cube, ``{(geo, sex, age, year): value}`` (sex ``T`` where the
    cube has none), read with json alone; and its ``updated`` stamp."""
    d = json.loads(gzip.decompress((FIX / "statistics" / f"{code}_{level}_{_tag(years)}.json.gz").read_bytes()))
    cats = []
    for k in d["id"]:
        idx = d["dimension"][k]["category"]["index"]
        cats.append(sorted(idx, key=idx.get))
    out = {}
    for pos, v in d["value"].items():
        key = dict(
            zip(d["id"], (c[i] for c, i in zip(cats, np.unravel_index(int(pos), d["size"]), strict=True)), strict=True)
        )
        out[(key["geo"], key.get("sex", "T"), key["age"], int(key["time"]))] = v
    return out, d["updated"]


def truth_cells(measure: str) -> dict:
    rcode, ncode = TABLES[measure]
    years = [*YEARS, YEARS[-1] + 1] if measure == "population" else YEARS
    cells = served(rcode, "nuts2", years)[0]
    cells.update(served(ncode, "country", years)[0])
    return cells


def _code(label: str) -> str:
    """The panel's age label as Eurostat writes it (the open interval is Y_OPEN)."""
    return "Y_OPEN" if label.startswith("Y_GE") and label != "Y_GE50" else label


# ---------------------------------------------------------------------------- the panel
def test_panel_holds_the_served_numbers_with_each_stock_once(eurostat, tmp_path):
    t0 = time.perf_counter()
    res = fetch_panel(YEARS, ["BE"], options(eurostat, tmp_path))
    elapsed = time.perf_counter() - t0
    p = res.panel
    assert p.name == "eurostat-2021-2023-be" and p.years == (2021, 2022, 2023) and p.codes == REGIONS
    assert res.counts.year == 2023 and res.years == (2021, 2022, 2023)
    # one query per table for every year: each 1 January stock fetched once
    asked = [dict(h[1]) for h in eurostat.hits if h[0] == STAT + "demo_r_d2jan"]
    assert len(eurostat.hits) == 6 and len(asked) == 1
    assert sorted(v for k, v in next(h[1] for h in eurostat.hits if h[0] == STAT + "demo_r_d2jan") if k == "time") == [
        "2021",
        "2022",
        "2023",
        "2024",
    ]
    # the stocks: 4 of them (1 January 2021..2024), not 2 per year
    assert p.stocks.shape == (4, 4, 3, p.ages.size) and p.stock_years == (2021, 2022, 2023, 2024)
    pop, dea, bir = truth_cells("population"), truth_cells("deaths"), truth_cells("births")
    for r, geo in enumerate(p.codes):
        for s, sex in enumerate(p.sexes):
            for i, y in enumerate(p.stock_years):
                want = [pop[(geo, sex, _code(a), y)] for a in p.ages.labels]
                np.testing.assert_array_equal(p.stocks[i, r, s], want)
            for i, y in enumerate(p.years):
                want = [dea[(geo, sex, _code(a), y)] for a in p.ages.labels]
                np.testing.assert_array_equal(p.deaths[i, r, s], want)
        for i, y in enumerate(p.years):
            np.testing.assert_array_equal(p.births[i, r], [bir[(geo, "T", a, y)] for a in p.birth_ages.labels])
    # the shared stock is one cell: the end of 2021 is the start of 2022, and nothing else is shared
    assert p.shared(2021, 2022) == (("pop", 2022),) and p.shared(2021, 2023) == ()
    np.testing.assert_array_equal(p.year(2021).pop_end, p.year(2022).pop_start)
    np.testing.assert_array_equal(p.year(2022).pop_start, p.stock(2022))
    # written as the multi-year template, a stock is one row per cell
    df = pd.read_csv(write_panel_csv(p, tmp_path / "panel.csv"), comment="#")
    pop22 = df[(df["measure"] == "population") & (df["year"] == 2022)]
    assert len(pop22) == len(p.codes) * 3 * p.ages.size and not pop22.duplicated(["region", "sex", "age"]).any()
    assert sorted(df.loc[df["measure"] == "population", "year"].unique()) == [2021, 2022, 2023, 2024]
    assert elapsed < 30  # a local fetch of 6 small tables


def test_provenance_records_each_code_with_its_years_and_update(eurostat, tmp_path):
    res = fetch_panel(YEARS, ["BE"], options(eurostat, tmp_path))
    prov = res.panel.provenance
    for measure, (rcode, ncode) in TABLES.items():
        t = getattr(prov, measure)
        years = [*YEARS, 2024] if measure == "population" else YEARS
        want = {c: served(c, lv, years)[1] for c, lv in ((rcode, "nuts2"), (ncode, "country"))}
        assert dict(t.updated) == want and t.datasets == (rcode, ncode)
        span = "1 January 2021-2024" if measure == "population" else "2021-2023"
        assert f"{rcode} (NUTS 2, {span}): downloaded" in t.note and f"{ncode} (countries, {span})" in t.note
    assert dict(prov.deaths.updated)["demo_magec"] == "2025-10-14T23:00:00+0200"
    assert dict(prov.population.updated)["demo_r_d2jan"] == "2025-03-28T23:00:00+0100"
    man = json.loads(res.manifest.read_text())
    assert man["name"] == "eurostat-2021-2023-be" and man["years"] == YEARS and man["year"] == 2023
    assert man["params"]["years"] == YEARS
    assert man["entries"]["demo_r_d2jan"]["years"] == [2021, 2022, 2023, 2024]
    assert man["entries"]["demo_fagec"]["years"] == YEARS
    assert man["entries"]["demo_magec"]["updated"] == "2025-10-14T23:00:00+0200"
    assert man["label"].startswith("Eurostat 2021-2023: 1 country and 3 NUTS 2 regions")


def test_cached_panel_rebuilds_without_network_and_loads_by_name(eurostat, tmp_path, monkeypatch):
    from demonoise.io import datasets

    first = fetch_panel(YEARS, ["BE"], options(eurostat, tmp_path)).panel
    eurostat.stop()  # any download would now fail
    again = fetch_panel(YEARS, ["BE"], options(eurostat, tmp_path))
    assert again.downloaded == [] and len(eurostat.hits) == 6
    rebuilt = load_cached_panel("eurostat-2021-2023-be", tmp_path)
    for m in ("stocks", "deaths", "births"):
        np.testing.assert_array_equal(getattr(rebuilt, m), getattr(first, m))
    assert rebuilt.provenance == first.provenance and rebuilt.years == first.years
    np.testing.assert_array_equal(load_cached("eurostat-2021-2023-be", tmp_path).deaths, first.year(2023).deaths)
    monkeypatch.setenv("DEMONOISE_CACHE", str(tmp_path))
    datasets.clear_cache()
    try:
        assert datasets.years("eurostat-2021-2023-be") == (2021, 2022, 2023)
        assert datasets.load_panel("eurostat-2021-2023-be").years == (2021, 2022, 2023)
        assert datasets.load("eurostat-2021-2023-be").year == 2023
        row = next(d for d in datasets.available() if d.name == "eurostat-2021-2023-be")
        assert row.kind == "cached" and row.year == 2023 and row.regions == 4
        # a report on it gets the chapter "Change since the previous year", as be-2015-2023's does
        from demonoise.report.batch.stages import _dataset_facts

        change = {d: _dataset_facts(d)["change"] for d in ("eurostat-2021-2023-be", "be-2015-2023", "be-2023")}
        assert change == {"eurostat-2021-2023-be": True, "be-2015-2023": True, "be-2023": False}
    finally:
        datasets.clear_cache()


# ------------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    "years, match",
    [
        ([2021, 2023], r"must be consecutive: got 2021, 2023 \(missing 2022\)"),
        ([2022, 2022, 2023], r"year 2022 given twice"),
        ([2021, 1899], r"year 1899 is outside"),
    ],
)
def test_years_must_be_consecutive(tmp_path, years, match):
    with pytest.raises(ParameterError, match=match):
        fetch_panel(years, ["BE"], FetchOptions(cache_dir=tmp_path, offline=True))
    assert files_under(tmp_path) == []


def test_a_year_the_api_does_not_answer_names_the_years(eurostat, tmp_path):
    """Eurostat answers "not found" for a year it does not publish (no route here)."""
    with pytest.raises(FetchError) as e:
        fetch_panel([2023, 2024], ["BE"], options(eurostat, tmp_path))
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("demo_r_d2jan: HTTP 404 Not Found (Eurostat: No results found)")
    assert "time=2025" in msg and msg.endswith(
        "years asked: population on 1 January 2023-2025 (Eurostat may not publish the last of them yet)"
    )
    assert e.value.status == 404 and e.value.dataset == "demo_r_d2jan"
    assert not (tmp_path / "datasets").exists() and not list(tmp_path.rglob("*.part"))


def test_a_year_missing_from_the_answer_names_table_and_year(tmp_path):
    """Eurostat answers the query but its cube lacks the last year: a typed error naming both."""
    srv = FakeEurostat(panel_routes(served=YEARS, asked=[2022, 2023, 2024]))
    try:
        with pytest.raises(DataError) as e:
            fetch_panel([2022, 2023, 2024], ["BE"], options(srv, tmp_path))
    finally:
        srv.stop()
    msg = str(e.value)
    assert "\n" not in msg
    assert msg.startswith("Eurostat's answer has no population on 1 January for 2025 (of the years asked, 2022-2025,")
    assert e.value.dataset == "demo_r_d2jan" and e.value.year == 2025
    assert not (tmp_path / "datasets").exists()


def test_a_region_missing_in_one_year_is_refused_or_dropped(tmp_path):
    """BE35 without population on 1 January 2021 (the first year): refused naming region and year;
    dropped from every year with skip_incomplete."""
    routes = panel_routes()
    key = (STAT + "demo_r_d2jan", _q(geoLevel="nuts2", time=[2021, 2022, 2023, 2024]))
    d = json.loads(gzip.decompress(routes[key].body))
    ids, size = d["id"], d["size"]
    gi, ti = ids.index("geo"), ids.index("time")
    geo = d["dimension"]["geo"]["category"]["index"]["BE35"]
    t21 = d["dimension"]["time"]["category"]["index"]["2021"]
    d["value"] = {
        p: v
        for p, v in d["value"].items()
        if not (np.unravel_index(int(p), size)[gi] == geo and np.unravel_index(int(p), size)[ti] == t21)
    }
    routes[key] = type(routes[key])(body=gzip.compress(json.dumps(d).encode()), gzip_encoded=True)
    srv = FakeEurostat(routes)
    try:
        with pytest.raises(DataError, match=r"BE35 has data for 2022-2023 only \(not 2021\)") as e:
            fetch_panel(YEARS, ["BE"], options(srv, tmp_path))
        assert e.value.region == "BE35" and e.value.year == 2021
        res = fetch_panel(YEARS, ["BE"], options(srv, tmp_path), skip_incomplete=True)
    finally:
        srv.stop()
    assert res.panel.codes == ("BE", "BE31", "BE34") and "BE35" in res.skipped
    assert "BE35 (data for 2022-2023 only)" in res.panel.provenance.population.note


# ---------------------------------------------------------------------------------- CLI
def test_cli_fetch_several_years_then_change(eurostat, tmp_path, capsys, monkeypatch):
    from demonoise.io import datasets

    cache = tmp_path / "cache"
    args = ["fetch", "--base-url", eurostat.url, "--year", "2021", "2022", "2023", "--countries", "BE"]
    args += ["--cache-dir", str(cache), "--no-comparison"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert out.startswith(
        "eurostat-2021-2023-be: 4 regions (1 country, 3 NUTS 2 regions), reference years 2021-2023 "
        "(population on 1 January 2021-2024: each stock one cell"
    )
    assert "population  demo_r_d2jan + demo_pjan 2021-2024: downloaded 20" in out
    assert "deaths      demo_r_magec + demo_magec 2021-2023: downloaded" in out
    assert "Eurostat update 2025-03-14T23:00:00+0100 / 2025-10-14T23:00:00+0200" in out

    monkeypatch.setenv("DEMONOISE_CACHE", str(cache))
    datasets.clear_cache()
    try:
        out_csv = tmp_path / "change.csv"
        change = ["change", "--dataset", "eurostat-2021-2023-be", "--from", "2022", "--to", "2023", "--V", "1"]
        assert main([*change, "--out", str(out_csv)]) == 0
        df = pd.read_csv(out_csv)
        panel = load_cached_panel("eurostat-2021-2023-be", cache)
    finally:
        datasets.clear_cache()
    assert set(df["region"]) == set(REGIONS) and set(df["year_from"]) == {2022} and set(df["year_to"]) == {2023}
    e0 = df[(df["indicator"] == "e") & (df["age"] == 0) & (df["sex"] == "T")].set_index("region")
    np.testing.assert_allclose(e0["change"], e0["value_to"] - e0["value_from"], atol=1e-9)
    # the deaths of BE34 2023 are the served ones: the change table ran on the fetched numbers
    assert panel.deaths[2, panel.codes.index("BE34"), 2].sum() == sum(
        v
        for (g, s, a, y), v in truth_cells("deaths").items()
        if g == "BE34" and s == "T" and y == 2023 and a != "TOTAL"
    )


def test_cli_non_consecutive_years_exit_2_with_one_line(tmp_path, capsys):
    code = main(["fetch", "--offline", "--year", "2021", "2023", "--cache-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert err.startswith("demonoise fetch: error: the years of a multi-year dataset must be consecutive")
    assert "2021, 2023 (missing 2022)" in err


def test_one_year_is_unchanged(tmp_path):
    """`--year 2023` alone still makes the single-year dataset of the same queries."""
    srv = FakeEurostat(default_routes())
    try:
        res = fetch_counts(2023, ["BE"], options(srv, tmp_path))
    finally:
        srv.stop()
    assert res.panel is None and res.years == (2023,) and res.counts.name == "eurostat-2023-be"
    man = json.loads(res.manifest.read_text())
    assert "years" not in man and man["params"]["year"] == 2023
    assert dict(res.counts.provenance.population.updated) == {
        "demo_r_d2jan": "2025-10-14T23:00:00+0200",
        "demo_pjan": "2025-10-14T23:00:00+0200",
    }


def test_panel_agrees_with_the_embedded_multi_year_dataset(eurostat, tmp_path):
    """The real population and deaths fetched for 2021-2023 are those of be-2015-2023, which the
    build tool made from the same public extracts by another path (its country row is the sum of
    the 11 regions, as the served country cubes)."""
    from demonoise.io.datasets import load_panel

    p = fetch_panel(YEARS, ["BE"], options(eurostat, tmp_path)).panel
    ref = load_panel("be-2015-2023").window(2021, 2023).select(list(REGIONS))
    assert ref.ages == p.ages and ref.stock_years == p.stock_years
    np.testing.assert_array_equal(p.stocks, ref.stocks)
    np.testing.assert_array_equal(p.deaths, ref.deaths)


def test_offline_without_the_tables_names_the_command_of_every_year(tmp_path):
    with pytest.raises(FetchError) as e:
        fetch_panel(YEARS, ["BE"], FetchOptions(cache_dir=tmp_path, offline=True))
    msg = str(e.value)
    assert msg.startswith("demo_r_d2jan: not in the cache") and "\n" not in msg
    assert "(download it with `demonoise fetch --year 2021 2022 2023`)" in msg
    assert files_under(tmp_path) == []
