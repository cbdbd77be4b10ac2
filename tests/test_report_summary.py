"""Tables and flags of the quality reports (demonoise.report.content.summary), on small
hand-made results frames (tests/_fixtures_results.py; the verdicts are in test_verdicts.py).

The frames are built with chosen variances, so the expected admixtures follow from
the definition A = sqrt(1 + Var_noise / Var_pois) - 1 (docs/design.md, section "Admixture"), not from
the code under test: Var_noise / Var_pois = 0.21 gives A = 10 % exactly (1.1^2 = 1.21),
3 gives A = 100 %, 0.0201 gives A = 1 %.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

from _fixtures_results import frame
from demonoise.analysis import verdicts as vd
from demonoise.core.errors import ReportError
from demonoise.report.content import summary as S
from demonoise.report.content.notebook import TABLE_MIME, TYPST_MIME


def test_age_profile_table_medians_and_largest_by_region():
    """Medians and largest admixtures of the mortality rates per region, from the rows'
    definition: A = sqrt(1 + ratio) - 1, rel. total = sqrt((1 + ratio) / deaths)."""
    t = S.age_profile_table(frame(), 1.0, "asmr")
    f = t.frame.set_index("region")
    assert list(f.index) == ["XX", "XX01", "XX02", "XX03"]  # country first, then by population
    big = f.loc["XX01"]  # 200, 50, 12, 900 deaths, ratio 0.21 everywhere: A = 10 % at every age
    assert big["A_median_T"] == pytest.approx(0.1) and big["A_max"] == pytest.approx(0.1)
    assert big["A_max_age"] == "Y0" and big["A_max_reliable_age"] == "Y0"  # the first of equals
    tiny = f.loc["XX03"]  # 2, 1, 5, 40 deaths: ratio 3, 3, 3, 0.21
    assert tiny["A_median_T"] == pytest.approx(1.0) and tiny["A_max"] == pytest.approx(1.0)
    assert tiny["A_max_age"] == "Y0"
    assert tiny["A_max_reliable"] == pytest.approx(0.1) and tiny["A_max_reliable_age"] == "Y3"
    rel = sorted(math.sqrt((1 + r) / ev) for ev, r in ((2, 3), (1, 3), (5, 3), (40, 0.21)))
    assert tiny["rel_tot_median"] == pytest.approx((rel[1] + rel[2]) / 2)
    assert tiny["population"] == 100_000 and tiny["label"] == "XX03 Tiny" and tiny["nuts_level"] == 2
    # a region whose every cell rests on fewer than 10 events has no reliable largest
    few = frame()
    few.loc[few["region"] == "XX03", "small_count"] = True
    shown = S.age_profile_table(few, 1.0, "asmr").shown
    assert shown.iloc[3, -1] == "\u2014" and shown.iloc[3, -2] == "100 % (Y0)"


def test_sparse_regions_and_flags():
    sp = vd.sparse_regions(frame(), 1.0, "e")
    tiny = sp[sp.region == "XX03"].iloc[0]
    assert (tiny["cells"], tiny["small"]) == (4, 3) and tiny["small_share"] == pytest.approx(0.75) and tiny["sparse"]
    assert not sp[sp.region == "XX01"].iloc[0]["sparse"]
    v = vd.scalar_verdict(frame(), 1.0, "e", sex="T", age=0)
    assert v.numbers["sparse_regions"] == ["XX03"]
    # the worst sex of every region is women's here (F, M, T tie; F first): the frame has mortality
    # cells of both sexes only, so no region's women are counted sparse
    assert vd.scalar_verdict(frame(), 1.0, "e", age=0).numbers["sparse_regions"] == []
    assert (
        "may be unreliable in 1 region where more than half of the single-age cells rest on fewer than 10 events: XX03"
        in str(v)
    )
    table = _e0_table(frame())
    flagged = dict(zip(table.frame.region, table.flagged, strict=True))
    assert flagged == {"XX": False, "XX01": False, "XX02": False, "XX03": True}
    html = table.to_html()
    assert html.count('class="dn-flagged"') == 1 and "sparse (75 %)" in html
    # Monte Carlo disagreement is a flag of its own
    ft = S.flag_table(frame(mc=True), 1.0, "e", ages=(0,))
    why = ft.frame.why.tolist()
    assert sum("Monte Carlo sd differs" in w for w in why) == 3  # XX03: T, F, M
    # the sparse region's row states its counts with their denominator (the one definition of every count)
    sparse = [w for w in why if "rest on fewer than 10 deaths" in w]
    assert len(sparse) == 1 and sparse[0].startswith("3 of 4 age cells (75 %) rest on fewer than 10 deaths")


def _e0_table(df, **mc):
    """The e0 table of a chapter (decisions.indicator_table) at V = 1, its 95 % half-widths
    z sd made here from the frame's sds (``mc``: Monte Carlo columns of the bands)."""
    from demonoise.report.content.decisions import indicator_table

    e0 = df[(df["indicator"] == "e") & (df["age"] == 0) & (df["sex"] == "T")]
    z = 1.959963984540054
    bands = e0[["region", "nuts_level", "noise_model", "V", "ptable", "value"]].assign(
        headline="e0", sex="T", level=0.95, z=z, half_pois=z * e0["sd_pois"], half_noise=z * e0["sd_noise"],
        half_tot=z * e0["sd_tot"], lo_noise=e0["value"] - z * e0["sd_noise"], hi_noise=e0["value"] + z * e0["sd_noise"],
        bias_noise=0.0,
    )  # fmt: skip
    return indicator_table(df, bands.assign(**mc), 1.0, "e0")


def test_tables_and_status_box():
    t = _e0_table(frame())
    assert t.shown["region"].tolist() == ["XX Testland", "XX01 Big", "XX02 Middle", "XX03 Tiny"]
    assert "<table" in t.to_html() and {"\u00b1 N", "e0", "A (%)"} <= set(t.shown)
    # the half-widths are z sd of the frame's own sds: 1.96 sqrt(Var_pois) in the region XX03
    xx03 = t.frame.set_index("region").loc["XX03"]
    assert xx03["half_pois"] == pytest.approx(1.959963984540054 * math.sqrt(xx03["var_pois"]))
    # one number of decimals per numeric column, one thousands separator (narrow space)
    for col in t.shown.columns[1:-1]:
        decimals = {len(v.split(".")[1]) if "." in v else 0 for v in t.shown[col] if v != "\u2014"}
        assert len(decimals) == 1, (col, t.shown[col].tolist())
    assert t.shown["deaths"].tolist() == ["30\u202f000", "20\u202f000", "9\u202f000", "1\u202f000"]
    bundle = t._repr_mimebundle_()
    assert bundle["text/html"] == t.to_html() and bundle[TABLE_MIME]["caption"] == t.caption
    header = bundle[TABLE_MIME]["csv"].splitlines()[0].split(",")
    assert {"region", "admixture", "half_pois", "half_noise"} <= set(header)
    empty = S.HtmlTable(pd.DataFrame(), pd.DataFrame(), caption="c", empty="Nothing to flag.")
    assert "<table" not in empty.to_html() and "Nothing to flag." in empty.to_html()
    box = S.status_box(frame(), granularity="single")._repr_mimebundle_()
    html = box["text/html"]
    assert "demonstration data: invented for a test" in html and "dn-status-modelled" in html
    assert "Cells published by single ages" in html and "modelled: true" in box[TYPST_MIME]
    real = S.status_box("population and deaths real (Eurostat)")._repr_mimebundle_()
    assert "dn-status-real" in real["text/html"] and "modelled: false" in real[TYPST_MIME]


def _decimals(column) -> set[int]:
    return {len(v.split(".")[1]) if "." in v else 0 for v in column}


def test_monte_carlo_interval_ends_carry_the_decimals_of_the_noise_half_width():
    """The Monte Carlo's noise interval printed to the decimals of its "\u00b1 N" column, so
    that its ends show the half-width (value -/+ half-width, rounded to those decimals)."""
    df = frame()
    e0 = df[(df["indicator"] == "e") & (df["age"] == 0) & (df["sex"] == "T")]
    value, half = e0["value"].to_numpy(), 1.959963984540054 * e0["sd_noise"].to_numpy()
    mc = {"mc_lo_noise": value - half, "mc_hi_noise": value + half, "mc_lo_tot": value, "mc_hi_tot": value}
    t = _e0_table(df, mc_n=500, **mc)
    (k,) = _decimals(t.shown["\u00b1 N"])
    for col, ends in (("MC N from", value - half), ("MC N to", value + half)):
        assert _decimals(t.shown[col]) == {k}
        assert [float(v) for v in t.shown[col]] == pytest.approx(ends, abs=0.5 * 10.0**-k + 1e-12)
    assert "quantiles of 500 replicate values" in t.caption


def test_load_results_checks_the_table(tmp_path):
    path = tmp_path / "r.parquet"
    frame().to_parquet(path)
    df = S.load_results(path, dataset="hand-made", country="XX", setting=1.0, granularity="single")
    assert len(df) == len(frame())
    with pytest.raises(ReportError, match="country 'YY'"):
        S.load_results(path, dataset="hand-made", country="YY", setting=1.0)
    with pytest.raises(ReportError, match=r"V = 5 \(has \['V = 1'\]\)"):
        S.load_results(path, dataset="hand-made", country="XX", setting={"V": 5.0})
    with pytest.raises(ReportError, match=r"p-table v01 \(has \['V = 1'\]\)"):
        S.load_results(path, dataset="hand-made", country="XX", setting={"ptable": "v01"})
    with pytest.raises(ReportError, match="granularity '5y'"):
        S.load_results(path, dataset="hand-made", country="XX", setting=1.0, granularity="5y")
    with pytest.raises(ReportError, match="not found"):
        S.load_results(tmp_path / "missing.parquet", dataset="hand-made", country="XX", setting=1.0)


def test_load_results_parses_a_table_once_whatever_its_copy(tmp_path, monkeypatch):
    """The notebooks of a country each read their own copy of its results table (a task
    carries it as bytes): a reused kernel parses it once; a different table is parsed."""
    import shutil

    from demonoise.analysis import compute, stored

    reads = []
    real = compute.read_results
    monkeypatch.setattr(compute, "read_results", lambda p: reads.append(p) or real(p))
    monkeypatch.setattr(stored, "_ONCE", {})
    first = tmp_path / "a" / "in0-r.parquet"
    first.parent.mkdir()
    frame().to_parquet(first)
    copy = tmp_path / "b" / "in0-r.parquet"
    copy.parent.mkdir()
    shutil.copy(first, copy)
    a = S.load_results(first, dataset="hand-made", country="XX", setting=1.0)
    b = S.load_results(copy, dataset="hand-made", country="XX", setting=1.0)
    assert len(reads) == 1
    pd.testing.assert_frame_equal(a, b)
    other = frame()
    other["value"] = other["value"] * 2
    other.to_parquet(copy)
    c = S.load_results(copy, dataset="hand-made", country="XX", setting=1.0)
    assert len(reads) == 2
    assert (c["value"] == 2 * a["value"]).all()


def _one_region_two_settings() -> pd.DataFrame:
    """The hand-made frame cut to one NUTS 2 region, at V = 1 and at V = 5
    (noise variance five times larger: ratio 0.21 -> 1.05)."""
    one = frame()
    one = one[one["region"] == "XX01"]
    five = one.assign(V=5.0, var_noise=one["var_noise"] * 5)
    five["admixture"] = (1 + five["var_noise"] / five["var_pois"]) ** 0.5 - 1
    return pd.concat([one, five], ignore_index=True)


def test_a_country_of_one_region_gets_one_table_across_settings():
    """A one-region country: the per-setting one-row tables become one table with a row per
    setting, each row that setting's table's row (A = 10 % at V = 1, sqrt(2.05) - 1 at V = 5)."""
    df = _one_region_two_settings()
    assert vd.single_region(df) and not vd.single_region(frame())
    settings = [{"V": 1.0}, {"V": 5.0}]
    per = [S.age_profile_table(df, s, "asmr") for s in settings]
    t = S.across_settings(per, settings)
    assert list(t.shown["setting"]) == ["V = 1", "V = 5"] and "region" not in t.shown
    assert t.frame["A_median_T"].tolist() == pytest.approx([0.1, math.sqrt(2.05) - 1])
    for k, one in enumerate(per):  # the row of each setting is that setting's table's first row
        assert t.shown.drop(columns="setting").iloc[k].tolist() == one.shown.drop(columns="region").iloc[0].tolist()
    assert "for each noise setting" in t.caption and "at V = 1" not in t.caption


def test_a_positive_admixture_is_never_printed_as_zero():
    from demonoise.report.content.decisions import _nonzero

    assert _nonzero("0.00", 0.0000312) == "0.003"  # 0.00312 %: its first significant digit
    assert _nonzero("0.1", 0.001) == "0.1" and _nonzero("0.00", 0.0) == "0.00" and _nonzero("\u2014", 0.5) == "\u2014"
