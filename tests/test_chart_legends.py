"""No series hidden in a chart, every mark named in its legend: the Vega-Lite specs of the
charts across the settings, read back.

The truth is taken from the data, not from the chart builders: two settings coincide when
their relative noise (or admixture) agrees within 1 % at most points (the p-table v01 has a
noise variance close to 1, so on Finland's real ASFR and ASMR its series lies on the V = 1
series); a coinciding pair must then differ in line pattern (or ring against dot), and every
value of a colour field a data layer draws must be in a legend."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import demonoise as dn
from demonoise.analysis.verdicts import across_settings
from demonoise.report.content import charts

LABELS = ["V = 1", "V = 5", "p-table v01"]
_STYLE = ("color", "fill", "stroke", "shape", "strokeDash", "size")


@pytest.fixture(scope="module")
def fi():
    """Finland's results for the three settings (analytic only), with their setting labels."""
    counts = dn.load("ess-2023").select(country="FI")
    return dn.compute(counts, dn.noise_settings(V=[1, 5], ptables=["v01"]))


# ------------------------------------------------------------------ reading a spec back
def _units(node: dict, data=None, datasets=None):
    """``(unit spec, its data rows)`` for every mark of a (layered, faceted) spec."""
    datasets = node.get("datasets", datasets)
    d = node.get("data")
    if d is not None:
        data = datasets[d["name"]] if "name" in d else d.get("values", data)
    if "mark" in node:
        yield node, data or []
    for key in ("layer", "hconcat", "vconcat", "concat"):
        for child in node.get(key, []):
            yield from _units(child, data, datasets)
    if "spec" in node:
        yield from _units(node["spec"], data, datasets)


def _is_reference(unit: dict) -> bool:
    """A reference rule (placed by a ``datum``) or a text label: no data series of its own."""
    enc = unit.get("encoding", {})
    mark = unit["mark"]["type"] if isinstance(unit["mark"], dict) else unit["mark"]
    return mark == "text" or any("datum" in enc.get(c, {}) for c in ("x", "y"))


def legend_gaps(spec: dict) -> list[str]:
    """What a reader cannot look up: a data layer with no legend'd style channel, or a value
    of a legend'd field that is not in its legend's domain."""
    gaps = []
    for unit, rows in _units(spec):
        if _is_reference(unit):
            continue
        enc = unit.get("encoding", {})
        named = [c for c in _STYLE if "field" in enc.get(c, {}) and enc[c].get("legend", {}) is not None]
        merged = {enc[c]["field"] for c in named}
        if not named:
            gaps.append(f"{unit['mark']}: no legend entry")
        for c in _STYLE:
            ch = enc.get(c, {})
            if ch.get("field") in merged and "domain" in ch.get("scale", {}):
                drawn = {r[ch["field"]] for r in rows if ch["field"] in r}
                missing = drawn - set(ch["scale"]["domain"])
                if missing:
                    gaps.append(f"{c}: {sorted(missing)} not in the legend")
    return gaps


def _style_of(spec: dict, channel: str) -> dict:
    """``{legend entry: range value}`` of ``channel`` in the first unit that encodes it."""
    for unit, _ in _units(spec):
        ch = unit.get("encoding", {}).get(channel, {})
        if "scale" in ch and "range" in ch["scale"]:
            return dict(zip(ch["scale"]["domain"], ch["scale"]["range"], strict=True))
    return {}


def _coincide(df: pd.DataFrame, col: str, a: str, b: str) -> bool:
    """Independent truth: at most points the two settings agree within 1 %."""
    w = df.pivot_table(index=["region", "age"], columns="setting", values=col)
    ok = w[[a, b]].replace(0, np.nan).dropna()
    return bool(((ok[a] / ok[b] - 1).abs() < 0.01).mean() > 0.5)


# --------------------------------------------------------------------------- the charts
@pytest.mark.parametrize(("indicator", "sex"), [("asfr", "F"), ("asmr", "T")])
def test_coinciding_lines_by_age_are_dashed_over_each_other_and_said_so(fi, indicator, sex):
    d = across_settings(fi, indicator, sex=sex, nuts_level=None)
    assert _coincide(d, "rel_noise", "V = 1", "p-table v01")
    assert not _coincide(d, "rel_noise", "V = 1", "V = 5")
    spec = charts.uncertainty_by_age_settings(d, settings=LABELS, title="t").to_dict()
    dash = _style_of(spec, "strokeDash")
    colour = _style_of(spec, "color")
    assert set(dash) == set(colour) == {"Poisson", *(f"noise, {s}" for s in LABELS)}
    assert dash["noise, V = 1"] != dash["noise, p-table v01"]
    assert dash["noise, V = 1"] == dash["noise, V = 5"] == dash["Poisson"]  # the rest stay solid
    assert "p-table v01 (dashed) lies on V = 1" in spec["title"]["subtitle"]
    assert legend_gaps(spec) == []
    adm = charts.admixture_settings(d, settings=LABELS, title="t").to_dict()
    dash = _style_of(adm, "strokeDash")
    assert dash["V = 1"] != dash["p-table v01"] and dash["V = 1"] == dash["V = 5"]
    assert "p-table v01 (dashed) lies on V = 1" in adm["title"]["subtitle"]
    assert legend_gaps(adm) == []


def test_series_that_do_not_coincide_are_all_solid_and_the_caption_says_nothing(fi):
    d = across_settings(fi, "asmr", sex="T", nuts_level=None)
    d = d[d["setting"] != "p-table v01"]
    spec = charts.uncertainty_by_age_settings(d, settings=LABELS[:2], title="t").to_dict()
    assert len({tuple(v) for v in _style_of(spec, "strokeDash").values()}) == 1
    assert "lies on" not in spec["title"]["subtitle"]


def test_an_exact_copy_of_a_series_is_drawn_visibly_over_it(fi):
    """A setting renamed is the same line at every point: dashed, whichever settings."""
    d = across_settings(fi, "asmr", sex="T", nuts_level=None)
    copy = d[d["setting"] == "V = 5"].assign(setting="V = 5 again")
    d = pd.concat([d[d["setting"] == "V = 5"], copy, d[d["setting"] == "V = 1"]], ignore_index=True)
    spec = charts.uncertainty_by_age_settings(d, settings=["V = 5", "V = 5 again", "V = 1"], title="t").to_dict()
    dash = _style_of(spec, "strokeDash")
    assert dash["noise, V = 5"] != dash["noise, V = 5 again"]
    assert dash["noise, V = 5"] == dash["noise, V = 1"]
    assert legend_gaps(spec) == []


@pytest.mark.parametrize(("indicator", "age"), [("tfr", None), ("e", 0)])
def test_each_interval_of_a_region_has_its_own_row_and_legend_entry(fi, indicator, age):
    """The Poisson interval is no longer drawn over a setting's bar: every bar of a region
    has its own offset, Poisson alone included, and each is a legend entry."""
    d = across_settings(fi, indicator, age=age, nuts_level=None)
    spec = charts.regional_intervals_settings(d, settings=LABELS, title="t", x_title="x").to_dict()
    assert legend_gaps(spec) == []
    bars = [u for u, _ in _units(spec) if "yOffset" in u.get("encoding", {})]
    assert len(bars) == 1
    enc = bars[0]["encoding"]
    assert enc["yOffset"]["field"] == enc["color"]["field"] == "series"
    entries = enc["color"]["scale"]["domain"]
    assert entries == ["Poisson alone", *(f"Poisson and noise, {s}" for s in LABELS)]
    rows = next(r for u, r in _units(spec) if u is bars[0])
    per_region = pd.DataFrame(rows).groupby("region_label")["series"].agg(sorted)
    assert all(v == sorted(entries) for v in per_region)  # one bar per entry in every region's row
    # no other layer draws an interval
    assert [u for u, _ in _units(spec) if "x2" in u.get("encoding", {})] == bars


def test_coinciding_dots_against_population_are_drawn_as_rings(fi):
    d = across_settings(fi, "tfr")
    w = d.pivot_table(index="region", columns="setting", values="rel_noise")
    assert ((w["p-table v01"] / w["V = 1"] - 1).abs() < 0.03).mean() > 0.5  # the truth: on top of each other
    spec = charts.uncertainty_vs_population(d, settings=LABELS).to_dict()
    fill, size = _style_of(spec, "fill"), _style_of(spec, "size")
    assert fill["noise, p-table v01"] == "transparent" and fill["noise, V = 1"] != "transparent"
    assert size["noise, p-table v01"] > size["noise, V = 1"]
    assert "p-table v01 (rings) lies on V = 1 in most regions" in spec["title"]["subtitle"]
    assert legend_gaps(spec) == []
