"""Verdicts, tables and flags of the quality reports, on small hand-made results frames.

The frames are built here with chosen variances, so the expected admixtures follow from
the definition A = sqrt(1 + Var_noise / Var_pois) - 1 (docs/design.md, section "Admixture"), not from
the code under test: Var_noise / Var_pois = 0.21 gives A = 10 % exactly (1.1^2 = 1.21),
3 gives A = 100 %, 0.0201 gives A = 1 %.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

from demonoise.analysis import verdicts as vd
from demonoise.core import formats as fm
from demonoise.core.errors import ParameterError, ReportError
from demonoise.report.content import summary as S
from demonoise.report.content.notebook import TABLE_MIME


def _row(region, name, level, indicator, sex, age, value, events, exposure, var_pois, ratio, V=1.0, **extra):
    var_noise = var_pois * ratio
    r = {
        "dataset": "hand-made",
        "data_status": "demonstration data: invented for a test",
        "noise_model": "generic",
        "ptable": "",
        "zero_floor": False,
        "granularity": "single",
        "V": V,
        "region": region,
        "region_name": name,
        "nuts_level": level,
        "country": "XX",
        "sex": sex,
        "indicator": indicator,
        "age": age,
        "age_group": "" if age is None or (isinstance(age, float) and math.isnan(age)) else f"Y{int(age)}",
        "value": value,
        "events": events,
        "exposure": exposure,
        "var_pois": var_pois,
        "var_noise": var_noise,
        "var_tot": var_pois + var_noise,
        "sd_pois": math.sqrt(var_pois),
        "sd_noise": math.sqrt(var_noise),
        "sd_tot": math.sqrt(var_pois + var_noise),
        "rel_pois": math.sqrt(var_pois) / value,
        "rel_noise": math.sqrt(var_noise) / value,
        "rel_tot": math.sqrt(var_pois + var_noise) / value,
        "admixture": math.sqrt(1 + ratio) - 1,
        "bias_noise": 0.0,
        "small_count": events < 10,
    }
    r.update(extra)
    return r


REGIONS = [  # code, name, level, population
    ("XX", "Testland", 0, 3_000_000.0),
    ("XX01", "Big/Grand", 2, 2_000_000.0),
    ("XX02", "Middle", 2, 900_000.0),
    ("XX03", "Tiny", 2, 100_000.0),
]
E0_RATIO = {"XX": 0.0201, "XX01": 0.0201, "XX02": 0.21 * 0.25, "XX03": 3.0}  # A: 1 %, 1 %, ~2.6 %, 100 %


def frame(mc: bool = False) -> pd.DataFrame:
    rows = []
    for code, name, level, pop in REGIONS:
        extra = {}
        if mc:
            # z beyond 5 only in the tiny region
            z = 7.0 if code == "XX03" else 1.0
            extra = {"mc_n": 1000, "mc_sd_tot": 0.0, "z_noise": z, "z_pois": 0.5, "z_tot": -0.5, "z_flag": abs(z) > 5}
        rows.append(_row(code, name, level, "e", "T", 0.0, 80.0, pop / 100, pop, 0.01, E0_RATIO[code], **extra))
        rows.append(_row(code, name, level, "e", "F", 0.0, 83.0, pop / 200, pop / 2, 0.02, E0_RATIO[code], **extra))
        rows.append(_row(code, name, level, "e", "M", 0.0, 78.0, pop / 200, pop / 2, 0.02, E0_RATIO[code], **extra))
        rows.append(_row(code, name, level, "tfr", "F", float("nan"), 1.5, pop / 90, pop / 4, 1e-4, 0.0201, **extra))
        # mortality rates: 4 ages; the tiny region has 3 of 4 cells below 10 deaths
        for age, ev in enumerate([200.0, 50.0, 12.0, 900.0] if code != "XX03" else [2.0, 1.0, 5.0, 40.0]):
            rows.append(
                _row(
                    code,
                    name,
                    level,
                    "asmr",
                    "T",
                    float(age),
                    ev / pop,
                    ev,
                    pop,
                    (ev / pop) ** 2 / ev,
                    0.21 if ev >= 10 else 3.0,
                )
            )
    df = pd.DataFrame(rows)
    if mc:
        df["z_flag"] = df["z_flag"].fillna(False).astype(bool)
    return df


# ------------------------------------------------------------------ formatting
def test_formatting():
    assert fm.fmt_pct(0.0123) == "1.2 %"
    assert fm.fmt_pct(0.1) == "10 %"
    assert fm.fmt_pct(2.3171) == "232 %"
    assert fm.fmt_pct(float("nan")) == "\u2014"
    assert fm.fmt_num(0.0000153, 2) == "0.000015"
    assert fm.fmt_num(82.9241, 4) == "82.92"
    assert fm.fmt_num(12_418_855.0) == "12\u202f418\u202f855"
    assert fm.fmt_int(30123.4) == "30\u202f123"
    assert (
        vd.region_label("FRL0", "Provence-Alpes-Côte d’Azur", width=12) == "FRL0 Provence-Al\u2026"
    )  # 12 characters of name
    assert (
        vd.region_label("BE10", "Région de Bruxelles-Capitale/ Brussels Hoofdstedelijk Gewest")
        == "BE10 Région de Bruxelles-Capitale"
    )
    one = pd.DataFrame({"nuts_level": [0], "region_name": ["Suomi/Finland"], "region": ["FI"], "country": ["FI"]})
    assert vd.country_name(one) == "Suomi / Finland"
    assert (
        vd.country_name(one.assign(nuts_level=2, region="MT00", country="MT", region_name="x")) == "Malta"
    )  # NUTS names


# ------------------------------------------------------------------ verdicts
def test_scalar_verdict_counts_regions_and_names_the_smallest():
    v = vd.scalar_verdict(frame(), 1.0, "e", age=0)
    text = " ".join(v.sentences)
    # A = 1 %, 2.6 %, 100 %: noise adds less than 10 % in 2 of the 3 NUTS 2 regions
    assert "in 2 of 3 NUTS 2 regions" in text
    assert v.numbers["regions"] == 3 and v.numbers["regions_below_10"] == 2
    # the smallest region: A = sqrt(1 + 3) - 1 = 100 %, sd_noise = sqrt(3 * 0.01), sd_pois = 0.1
    assert "In the smallest region, XX03 Tiny (100\u202f000 people), it adds 100 %" in text
    assert f"noise sd {fm.fmt_num(math.sqrt(0.03), 2)} years against a Poisson sd of 0.1 years" in text
    assert v.numbers["smallest"] == "XX03" and v.numbers["smallest_admixture"] == pytest.approx(1.0)
    # noise at least as large as Poisson (A >= sqrt(2) - 1) only there
    assert "(A >= 41 %) in 1 region: XX03" in text
    assert v.numbers["regions_at_least_41"] == 1
    # the largest, and the country as a whole (A = sqrt(1.0201) - 1 = 1 %)
    assert "In the largest, XX01 Big (2\u202f000\u202f000 people), it adds 1 %" in text
    assert "For Testland as a whole, noise adds 1 %" in text
    assert v.numbers["median_admixture"] == pytest.approx(math.sqrt(1 + 0.21 * 0.25) - 1)
    assert v.markdown().startswith("- At V = 1, noise adds less than 10 %")


def test_scalar_verdict_all_none_and_single_region():
    df = frame()
    df.loc[df.indicator == "e", "admixture"] = 0.05  # every region below 10 %
    assert "in all 3 NUTS 2 regions" in str(vd.scalar_verdict(df, 1.0, "e", age=0))
    df.loc[df.indicator == "e", "admixture"] = 0.5
    assert (
        "noise adds 10 % or more to the statistical (Poisson) uncertainty of e0 (both sexes) in all 3 NUTS 2 regions"
        in str(vd.scalar_verdict(df, 1.0, "e", age=0))
    )
    one = frame()
    one = one[one.region.isin(["XX", "XX03"])]
    text = str(vd.scalar_verdict(one, 1.0, "e", age=0))
    assert (
        "adds 10 % or more to the statistical (Poisson) uncertainty of e0 (both sexes) in the country's only NUTS 2 "
        "region" in text
    )
    # TFR is about women and carries its unit
    t = str(vd.scalar_verdict(frame(), 1.0, "tfr"))
    assert "uncertainty of TFR in all 3 NUTS 2 regions" in t and "children per woman" in t


def test_age_verdict_cells_and_small_counts():
    v = vd.age_verdict(frame(), 1.0, "asmr")
    text = " ".join(v.sentences)
    # 3 regions x 4 ages = 12 cells; ratio 0.21 (A = 10 %, not < 10 %) where >= 10 deaths, 3 (A = 100 %) below
    assert v.numbers["cells"] == 12
    assert v.numbers["cells_below_10"] == 0
    assert v.numbers["small_cells"] == 3
    assert v.numbers["max_admixture"] == pytest.approx(1.0)
    assert v.numbers["max_admixture_region"] == "XX03"
    assert (
        "on 2 deaths (fewer than 10 events" in text
        or "on 1 death (fewer than 10 events" in text
        or "on 5 deaths (fewer than 10 events" in text
    )
    assert "Among cells with at least 10 deaths, the largest admixture is 10 %" in text
    assert "3 cells (25 %) rest on fewer than 10 deaths" in text


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
    v = vd.scalar_verdict(frame(), 1.0, "e", age=0)
    assert v.numbers["sparse_regions"] == ["XX03"]
    assert (
        "may be unreliable in 1 region where more than half of the single-age cells rest on fewer than 10 events: XX03"
        in str(v)
    )
    table = S.scalar_table(frame(), 1.0, "e", age=0)
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


def test_mc_summary():
    m = vd.mc_summary(frame(mc=True), 1.0, "e", ages=(0,))
    assert (m["n"], m["cells"], m["beyond"]) == (1000, 12, 3)
    assert m["max_abs_z"] == pytest.approx(7.0)
    assert m["rse"] == pytest.approx(1 / math.sqrt(2000))
    assert (
        "disagrees with the analytic standard deviation beyond sampling error (|z| > 5) in 3 cells of 12" in m["text"]
    )
    none = vd.mc_summary(frame(), 1.0, "e")
    assert none["n"] == 0 and "No Monte Carlo" in none["text"]


def test_index_metrics_worst_region():
    m = vd.index_metrics(frame(), 1.0, "e")
    assert m["regions"] == 3 and m["e0_worst_region"] == "XX03"
    assert m["e0_admixture_worst"] == pytest.approx(1.0)
    assert m["e0_rel_noise_worst"] == pytest.approx(math.sqrt(0.03) / 80.0)
    t = vd.index_metrics(frame(), 1.0, "tfr")
    assert t["tfr_admixture_worst"] == pytest.approx(0.01)
    assert set(m).isdisjoint(t)  # the two payloads merge without conflict
    with pytest.raises(ParameterError):
        vd.index_metrics(frame(), 1.0, "asmr")


def test_other_V_is_not_mixed_in():
    df = pd.concat([frame(), frame().assign(V=5.0, admixture=0.9)], ignore_index=True)
    assert vd.scalar_verdict(df, 1.0, "e", age=0).numbers["regions_below_10"] == 2
    assert vd.scalar_verdict(df, 5.0, "e", age=0).numbers["regions_below_10"] == 0
    assert set(vd.across_settings(df, "e", age=0).setting) == {"V = 1", "V = 5"}


def test_drop_duplicate_country():
    df = frame()
    assert set(vd.drop_duplicate_country(df).region) == set(df.region)  # several regions: kept
    one = df[df.region.isin(["XX", "XX03"])].copy()
    one.loc[one.region == "XX", "value"] = one.loc[one.region == "XX03", "value"].to_numpy()
    assert set(vd.drop_duplicate_country(one).region) == {"XX03"}  # one region, same values
    one.loc[one.region == "XX", "value"] += 1.0
    assert set(vd.drop_duplicate_country(one).region) == {"XX", "XX03"}  # different values: kept


def test_tables_and_status_box():
    t = S.regions_overview(frame(), 1.0)
    assert t.frame.region.tolist() == ["XX Testland", "XX01 Big", "XX02 Middle", "XX03 Tiny"]
    assert "<table" in t.to_html() and t.shown["A e0 (%)"].tolist()[-1] == "100.0"  # units in the header
    # one number of decimals per numeric column, one thousands separator (narrow space)
    for col in ("e0 (years)", "noise sd e0 (years)", "A e0 (%)", "TFR (children per woman)"):
        decimals = {len(v.split(".")[1]) if "." in v else 0 for v in t.shown[col] if v != "\u2014"}
        assert len(decimals) == 1, (col, t.shown[col].tolist())
    assert t.shown["population"].tolist()[1] == "2\u202f000\u202f000"
    st = S.scalar_table(frame(), 1.0, "e", age=0)
    assert "noise sd (years)" in st.shown and "e0 (years)" in st.shown and "A (%)" in st.shown
    for col in st.shown.columns[3:-1]:
        decimals = {len(v.split(".")[1]) if "." in v else 0 for v in st.shown[col] if v != "\u2014"}
        assert len(decimals) == 1, (col, st.shown[col].tolist())
    bundle = t._repr_mimebundle_()
    assert bundle["text/html"] == t.to_html() and bundle[TABLE_MIME]["caption"] == t.caption
    assert bundle[TABLE_MIME]["csv"].splitlines()[0].startswith("region,")
    empty = S.HtmlTable(pd.DataFrame(), pd.DataFrame(), caption="c", empty="Nothing to flag.")
    assert "<table" not in empty.to_html() and "Nothing to flag." in empty.to_html()
    box = S.status_box(frame(), setting=5.0, granularity="single")
    assert box.modelled
    html = box._repr_html_()
    assert "demonstration data: invented for a test" in html and "dn-status-modelled" in html
    assert "variance V = 5 (sd 2.24)" in html
    real = S.status_box("population and deaths real (Eurostat)")
    assert not real.modelled and "dn-status-real" in real._repr_html_()
    prov = {"deaths": {"status": "real", "datasets": ["demo_r_magec"], "extracted": "unknown", "source": "Eurostat"}}
    assert (
        "deaths: real \u2014 Eurostat demo_r_magec; extraction date unknown"
        in S.status_box("x", provenance=prov)._repr_html_()
    )


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

    from demonoise.analysis import stored

    reads = []
    real = S.read_results
    monkeypatch.setattr(S, "read_results", lambda p: reads.append(p) or real(p))
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
