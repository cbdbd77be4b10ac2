"""Altair chart builders over the tidy results table (:mod:`demonoise.results`).

Every builder takes the results table (or a slice of it) and returns an Altair chart;
nothing is computed here that the library has not computed already. Relative
uncertainties are shown in per cent, admixture in per cent with reference lines at
10 % (noise adds a tenth to the statistical uncertainty) and 41 % (noise as large as
Poisson: ``sqrt(2) - 1``).
"""

from __future__ import annotations

import altair as alt
import numpy as np
import pandas as pd

__all__ = [
    "COMPONENT_COLOURS",
    "uncertainty_by_age",
    "admixture_by_age",
    "value_by_age",
    "regional_intervals",
    "mc_check",
    "uncertainty_vs_population",
]

#: One colour per uncertainty component, the same on every page.
COMPONENT_COLOURS = {"Poisson": "#4c78a8", "noise": "#e45756", "total": "#333333"}
_COMPONENTS = [("rel_pois", "Poisson"), ("rel_noise", "noise"), ("rel_tot", "total")]
_ADMIX_REF = pd.DataFrame({"A": [10.0, 41.4], "label": ["noise adds 10 %", "noise = Poisson (41 %)"]})

INDICATOR_TITLES = {
    "asfr": "age-specific fertility rate",
    "tfr": "total fertility rate",
    "asmr": "age-specific mortality rate",
    "e": "life expectancy",
}


def _region_label(df: pd.DataFrame) -> pd.Series:
    name = df["region_name"].fillna("").astype(str).str.split("/").str[0].str.slice(0, 28)
    return np.where(name != "", df["region"] + " " + name, df["region"])


def _long_components(df: pd.DataFrame) -> pd.DataFrame:
    keep = ["region", "region_name", "sex", "age", "age_group", "events", "small_count"]
    keep = [c for c in keep if c in df]
    parts = []
    for col, label in _COMPONENTS:
        p = df[keep].copy()
        p["component"] = label
        p["rel"] = 100.0 * df[col].to_numpy()
        parts.append(p)
    out = pd.concat(parts, ignore_index=True)
    out["region_label"] = _region_label(out)
    return out


def uncertainty_by_age(df: pd.DataFrame, *, title: str = "", columns: int = 3, width: int = 210, height: int = 130, log: bool = True):
    """Relative uncertainty (Poisson, noise, total; %) by age, one panel per region.

    ``df``: rows of one indicator, one sex, one noise setting. Cells flagged
    ``small_count`` (first order unreliable) are drawn as hollow points.
    """
    d = _long_components(df[np.isfinite(df["rel_tot"]) & (df["rel_tot"] > 0)])
    scale = alt.Scale(type="log") if log else alt.Scale(zero=True)
    colour = alt.Color(
        "component:N",
        scale=alt.Scale(domain=list(COMPONENT_COLOURS), range=list(COMPONENT_COLOURS.values())),
        legend=alt.Legend(title=None, orient="top"),
    )
    base = alt.Chart(d).encode(
        x=alt.X("age:Q", title="age"),
        y=alt.Y("rel:Q", title="relative uncertainty (%)", scale=scale),
        color=colour,
        tooltip=["region_label:N", "age_group:N", "component:N", alt.Tooltip("rel:Q", format=".3g"), "events:Q"],
    )
    lines = base.mark_line(strokeWidth=1.3)
    small = base.transform_filter("datum.small_count").mark_point(size=14, filled=False, opacity=0.7)
    return (
        alt.layer(lines, small, data=d)
        .properties(width=width, height=height)
        .facet(facet=alt.Facet("region_label:N", title=None, header=alt.Header(labelFontSize=10)), columns=columns)
        .resolve_scale(y="shared")
        .properties(title=title or "")
    )


def admixture_by_age(df: pd.DataFrame, *, title: str = "", width: int = 560, height: int = 240):
    """Noise admixture (%) by age, one line per region (log scale), with the 10 % and 41 % lines."""
    d = df[np.isfinite(df["admixture"]) & (df["admixture"] > 0)].copy()
    d["A"] = 100.0 * d["admixture"]
    d["region_label"] = _region_label(d)
    lines = (
        alt.Chart(d)
        .mark_line(strokeWidth=1.2)
        .encode(
            x=alt.X("age:Q", title="age"),
            y=alt.Y("A:Q", title="noise admixture A (%)", scale=alt.Scale(type="log")),
            color=alt.Color("region_label:N", title="region", legend=alt.Legend(orient="right", labelLimit=180)),
            tooltip=["region_label:N", "age_group:N", alt.Tooltip("A:Q", format=".3g"), "events:Q"],
        )
    )
    ref = alt.Chart(_ADMIX_REF).mark_rule(strokeDash=[4, 3], color="#888").encode(y="A:Q")
    ref_text = alt.Chart(_ADMIX_REF).mark_text(align="left", dx=3, dy=-5, fontSize=9, color="#666").encode(y="A:Q", x=alt.value(2), text="label:N")
    return alt.layer(lines, ref, ref_text).properties(width=width, height=height, title=title or "")


def value_by_age(df: pd.DataFrame, *, title: str = "", y_title: str = "", log: bool = False, width: int = 560, height: int = 220):
    """The indicator itself by age, one line per region."""
    d = df[np.isfinite(df["value"])].copy()
    if log:
        d = d[d["value"] > 0]
    d["region_label"] = _region_label(d)
    return (
        alt.Chart(d)
        .mark_line(strokeWidth=1.2)
        .encode(
            x=alt.X("age:Q", title="age"),
            y=alt.Y("value:Q", title=y_title or "value", scale=alt.Scale(type="log") if log else alt.Scale(zero=False)),
            color=alt.Color("region_label:N", title="region", legend=alt.Legend(orient="right", labelLimit=180)),
            tooltip=["region_label:N", "age_group:N", alt.Tooltip("value:Q", format=".4g")],
        )
        .properties(width=width, height=height, title=title or "")
    )


def regional_intervals(df: pd.DataFrame, *, title: str = "", x_title: str = "", width: int = 420):
    """One row per region: the value with 95 % intervals from Poisson alone and in total
    (Poisson + noise), ``value +- 1.96 sd``."""
    d = df.copy()
    d["region_label"] = _region_label(d)
    for col, name in (("sd_pois", "pois"), ("sd_tot", "tot")):
        d[f"lo_{name}"] = d["value"] - 1.96 * d[col]
        d[f"hi_{name}"] = d["value"] + 1.96 * d[col]
    order = d.sort_values("exposure", ascending=False)["region_label"].tolist()
    y = alt.Y("region_label:N", title=None, sort=order)
    tot = alt.Chart(d).mark_rule(color=COMPONENT_COLOURS["total"], strokeWidth=5, opacity=0.25).encode(
        y=y, x=alt.X("lo_tot:Q", title=x_title or "value", scale=alt.Scale(zero=False)), x2="hi_tot:Q"
    )
    pois = alt.Chart(d).mark_rule(color=COMPONENT_COLOURS["Poisson"], strokeWidth=2).encode(y=y, x="lo_pois:Q", x2="hi_pois:Q")
    pt = alt.Chart(d).mark_point(filled=True, color="black", size=25).encode(
        y=y,
        x="value:Q",
        tooltip=["region_label:N", alt.Tooltip("value:Q", format=".4g"), alt.Tooltip("sd_pois:Q", format=".3g"), alt.Tooltip("sd_tot:Q", format=".3g")],
    )
    return alt.layer(tot, pois, pt).properties(width=width, height=max(60, 18 * len(order)), title=title or "")


def mc_check(df: pd.DataFrame, *, title: str = "", width: int = 300, height: int = 260):
    """Analytic against Monte Carlo standard deviation (noise and total), log-log, with y = x.
    Points outside the sampling-error bound (``z_flag``) are drawn in red."""
    parts = []
    for col, mc, z, label in (("sd_noise", "mc_sd_noise", "z_noise", "noise"), ("sd_tot", "mc_sd_tot", "z_tot", "total")):
        if mc not in df:
            continue
        p = df[["region", "region_name", "sex", "age_group", col, mc, z]].rename(columns={col: "analytic", mc: "mc", z: "z"})
        p["component"] = label
        parts.append(p)
    d = pd.concat(parts, ignore_index=True)
    d = d[np.isfinite(d["analytic"]) & np.isfinite(d["mc"]) & (d["analytic"] > 0) & (d["mc"] > 0)]
    d["outside"] = d["z"].abs() > 5
    lo, hi = float(min(d["analytic"].min(), d["mc"].min())), float(max(d["analytic"].max(), d["mc"].max()))
    diag = pd.DataFrame({"analytic": [lo, hi], "mc": [lo, hi]})
    pts = (
        alt.Chart(d)
        .mark_point(filled=True, size=30, opacity=0.8)
        .encode(
            x=alt.X("analytic:Q", title="analytic sd (first order)", scale=alt.Scale(type="log")),
            y=alt.Y("mc:Q", title="Monte Carlo sd", scale=alt.Scale(type="log")),
            shape=alt.Shape("component:N", legend=alt.Legend(title=None, orient="top")),
            color=alt.Color("outside:N", scale=alt.Scale(domain=[False, True], range=["#4c78a8", "#d62728"]), legend=alt.Legend(title="|z| > 5")),
            tooltip=["region:N", "sex:N", "age_group:N", "component:N", alt.Tooltip("analytic:Q", format=".3g"), alt.Tooltip("mc:Q", format=".3g"), alt.Tooltip("z:Q", format=".2f")],
        )
    )
    line = alt.Chart(diag).mark_line(color="#999", strokeDash=[3, 3]).encode(x="analytic:Q", y="mc:Q")
    return alt.layer(line, pts).properties(width=width, height=height, title=title or "")


def uncertainty_vs_population(df: pd.DataFrame, *, title: str = "", width: int = 420, height: int = 300, column: str = "rel_noise"):
    """Relative uncertainty (%) against population (exposure), log-log, one point per
    region; the Poisson uncertainty for reference. ``df``: one indicator/age/sex, any V."""
    d = df.copy()
    d["rel"] = 100.0 * d[column]
    d["rel_p"] = 100.0 * d["rel_pois"]
    d["region_label"] = _region_label(d)
    d["Vlabel"] = "noise, V = " + d["V"].map(lambda v: f"{v:g}")
    base = alt.Chart(d).encode(x=alt.X("exposure:Q", title="population (average, exposure)", scale=alt.Scale(type="log")))
    noise = base.mark_point(filled=True, size=20, opacity=0.7).encode(
        y=alt.Y("rel:Q", title="relative uncertainty (%)", scale=alt.Scale(type="log")),
        color=alt.Color("Vlabel:N", title=None, legend=alt.Legend(orient="top")),
        tooltip=["region_label:N", alt.Tooltip("exposure:Q", format=",.0f"), alt.Tooltip("rel:Q", format=".3g"), "V:Q"],
    )
    pois = base.transform_filter(alt.datum.V == float(d["V"].min())).mark_point(shape="cross", size=20, color=COMPONENT_COLOURS["Poisson"], opacity=0.6).encode(
        y="rel_p:Q", tooltip=["region_label:N", alt.Tooltip("rel_p:Q", format=".3g")]
    )
    return alt.layer(pois, noise).properties(width=width, height=height, title=title or "")
