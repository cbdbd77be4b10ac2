"""The chapter "Change since the previous year": its tables, sentences and data labels,
shown from the library's tables (:func:`demonoise.analysis.change.change_chapter`).

Nothing is computed here: the changes, their z with and without noise, the verdicts, the
smallest detectable changes and the yearly bands come from :mod:`demonoise.analysis.change`;
this module picks rows, formats numbers (fixed decimals, never e-notation) and writes the
sentences. Tables are :class:`~demonoise.report.content.summary.HtmlTable` (HTML and Typst, numbered
by the exporter with a caption and a "Source:" line).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from demonoise.analysis.settings import NoiseSetting, setting_labels, settings_in
from demonoise.analysis.verdicts import region_label
from demonoise.core.formats import fmt_fixed
from demonoise.core.vocabulary import ADMIXTURE_CLASSES, HEADLINES, SEX_WORDS
from demonoise.report.content.notebook import record_shown
from demonoise.report.content.summary import HtmlTable, StatusBox, grouped, status_box

__all__ = [
    "load_change",
    "change_status_box",
    "data_words",
    "verdict_view",
    "detectable_view",
    "series_frame",
    "change_points",
    "detectable_points",
    "DECIMALS",
]

#: Decimals of each headline's values and changes in the tables and sentences.
DECIMALS = {"e0": 2, "e65": 2, "TFR": 3}
_KEY = {h.label: k for k, h in HEADLINES.items()}
_FAMILY_TABLES = {"e": ("population", "deaths"), "tfr": ("population", "births")}
_LOST_COLOUR = ADMIXTURE_CLASSES[1].colour  # amber: a significance the noise takes away
_WORD = {"robust": "yes", "lost": "lost", "not significant": "no", "undefined": "\u2014"}


def load_change(
    *,
    dataset: str,
    country: str,
    settings: Sequence,
    year_from: int | None = None,
    year_to: int | None = None,
    granularity: str = "single",
    alpha: float = 0.05,
    power: float = 0.8,
    confidence=0.95,
):
    """The chapter's tables for ``country`` of the multi-year ``dataset``
    (:func:`demonoise.analysis.change.change_chapter`), computed now (under a second for a
    country of a dozen regions). In a kernel it records what the rows hold (dataset,
    country, settings) as :func:`~demonoise.report.content.summary.load_results` does, for the
    batch's :func:`~demonoise.report.batch.contract.check_shown`. ``confidence``: the level of
    the time series' bands, or the batch's list of levels (its first).

    Raises
    ------
    ParameterError
        A dataset of one year, years not in it, an unknown p-table.
    """
    from demonoise.analysis.change import change_chapter
    from demonoise.analysis.compute import noise_settings
    from demonoise.io.datasets import load_panel

    sets = [NoiseSetting.of(s) for s in settings]
    V = [s.V for s in sets if s.is_generic]
    tables = [s.as_parameter()["ptable"] for s in sets if not s.is_generic]
    if isinstance(confidence, (list, tuple)):
        confidence = confidence[0] if confidence else 0.95
    ch = change_chapter(
        load_panel(dataset),
        noise_settings(V, ptables=tables),
        country=country,
        year_from=year_from,
        year_to=year_to,
        alpha=alpha,
        power=power,
        confidence=confidence,
        granularity=granularity,
    )
    record_shown(ch.table, settings[0])
    return ch


def data_words(ch, headline: str) -> str:
    """``"Data: population and deaths real (Eurostat)"``: what a headline rests on, real or
    modelled, for its tables' and charts' captions."""
    ind = HEADLINES[_KEY.get(headline, headline)].indicator
    st = {t: ch.table_status.get(t, "?") for t in _FAMILY_TABLES[ind]}
    groups: dict[str, list[str]] = {}
    for t, s in st.items():
        groups.setdefault(s, []).append(t)
    parts = [
        f"{' and '.join(ts)} {s}" + (" (Eurostat)" if s == "real" else "")
        for s, ts in sorted(groups.items(), key=lambda kv: kv[0] != "modelled")
    ]
    return "Data: " + "; ".join(parts)


def change_status_box(ch, *, granularity: str | None = None) -> StatusBox:
    """The data-status box of the chapter: the dataset's label (real and modelled tables),
    the years compared and what the data can't say."""
    return status_box(
        ch.data_status,
        details=(f"Change from {ch.year_from} to {ch.year_to}; years shown {_years(ch)}",),
        granularity=granularity,
        implications=ch.implications,
    )


def _years(ch) -> str:
    ys = sorted(ch.series["year"].unique())
    return f"{ys[0]}-{ys[-1]}" if len(ys) > 1 else str(ys[0])


def _settings(frame: pd.DataFrame, settings) -> list[NoiseSetting]:
    """The settings to show: those given (any form of :meth:`NoiseSetting.of`), else the table's."""
    return [NoiseSetting.of(s) for s in settings] if settings else settings_in(frame)


def _order(frame: pd.DataFrame) -> list[str]:
    """Regions: the country first, then the NUTS 2 regions by code."""
    r = frame.drop_duplicates("region").sort_values(["nuts_level", "region"])
    return r["region"].tolist()


def _label_of(frame: pd.DataFrame) -> dict:
    r = frame.drop_duplicates("region")
    return {c: region_label(c, n) for c, n in zip(r["region"], r["region_name"], strict=True)}


def _signed(x: float, k: int) -> str:
    s = fmt_fixed(x, k)
    return s if s.startswith(("-", "\u2014")) else "+" + s


def verdict_view(ch, headline: str = "e0", sex: str = "T", settings=None) -> HtmlTable:
    """Per region: the headline's values in the two years, the change, its z without noise
    and, per setting, its z with noise and whether it is significant (``yes``, ``no``,
    ``lost``: significant without noise but not with this setting's)."""
    v = ch.verdicts[(ch.verdicts["headline"] == headline) & (ch.verdicts["sex"] == sex)]
    sets, k, order = _settings(v, settings), DECIMALS.get(headline, 3), _order(v)
    per = {st: v[st.mask(v)].drop_duplicates("region").set_index("region").reindex(order) for st in sets}
    first, names, n = per[sets[0]], _label_of(v), len(order)
    sig = [
        _WORD["robust" if s else "not significant"] if np.isfinite(z) else "\u2014"
        for s, z in zip(first["significant_poisson"], first["z_poisson"], strict=True)
    ]
    base = {"region": [names[c] for c in order], str(ch.year_from): [fmt_fixed(x, k) for x in first["value_from"]]}
    base |= {str(ch.year_to): [fmt_fixed(x, k) for x in first["value_to"]]}
    base |= {"change": [_signed(x, k) for x in first["change"]]}
    cols = {st.label: {"z": g["z_total"], "signif.": [_WORD[x] for x in g["verdict"]]} for st, g in per.items()}
    cols = {"without noise": {"z": first["z_poisson"], "signif.": sig}} | cols
    shown, groups = grouped(base, [(lab, "", c | {"z": [fmt_fixed(x, 2) for x in c["z"]]}) for lab, c in cols.items()])
    colours, _ = grouped(
        {i: [""] * n for i in range(6)},
        [
            ("", "", {"z": [""] * n, "s": [_LOST_COLOUR if x == "lost" else "" for x in g["verdict"]]})
            for g in per.values()
        ],
    )
    frame = [
        {"region": c, "sex": sex, "headline": headline, "setting": st.key}
        | first.loc[c, ["value_from", "value_to", "change"]].to_dict()
        | g.loc[c, ["sd_poisson", "sd_noise", "sd_total", "z_poisson", "z_total", "verdict"]].to_dict()
        for c in order
        for st, g in per.items()
    ]
    h = HEADLINES[_KEY.get(headline, headline)]
    return HtmlTable(
        pd.DataFrame(frame),
        shown,
        caption=f"Change of {h.label} from {ch.year_from} to {ch.year_to}, {SEX_WORDS[sex]} ({h.unit}): "
        f"significant without noise and with it",
        colours=colours,
        groups=groups,
        note=f"{data_words(ch, headline)}. z = change / sd, sd from Poisson alone (without noise) or from Poisson "
        f"and the setting's noise; signif.: significant, |z| > {ch.z_crit:.2f} ({100 * ch.alpha:g} %, two-sided); "
        "lost (shaded): significant without noise but not with the setting's noise.",
        name=f"change-{headline}-{sex}".lower(),
        keep=True,
    )


def detectable_view(ch, headline: str = "e0", sex: str = "T", settings=None) -> HtmlTable:
    """Per region: the smallest detectable change of the headline without noise and, per
    setting, with it and by how much (per cent) the setting widens it."""
    d = ch.detectable[(ch.detectable["headline"] == headline) & (ch.detectable["sex"] == sex)]
    sets, k, order, names = (
        _settings(d, settings),
        DECIMALS.get(headline, 3),
        _order(ch.verdicts),
        _label_of(ch.verdicts),
    )
    per = {st: d[st.mask(d)].drop_duplicates("region").set_index("region").reindex(order) for st in sets}
    shown, groups = grouped(
        {"region": [names[c] for c in order]},
        [("without noise", "", {"MDC": [fmt_fixed(x, k) for x in per[sets[0]]["mdc_poisson"]]})]
        + [
            (st.label, "", {"MDC": [fmt_fixed(x, k) for x in g["mdc_total"]],
                            "wider by": [_signed(100 * (r - 1), 1) + " %" for r in g["mdc_ratio"]]})
            for st, g in per.items()
        ],
    )  # fmt: skip
    frame = [
        {"region": c, "sex": sex, "headline": headline, "setting": st.key}
        | g.loc[c, ["mdc_poisson", "mdc_total", "mdc_ratio"]].to_dict()
        for c in order
        for st, g in per.items()
    ]
    h = HEADLINES[_KEY.get(headline, headline)]
    return HtmlTable(
        pd.DataFrame(frame),
        shown,
        caption=f"Smallest detectable change of {h.label} from one year to the next, {SEX_WORDS[sex]} ({h.unit})",
        groups=groups,
        note=f"{data_words(ch, headline)}. MDC: the smallest detectable change, {ch.mdc_factor:.2f} sd of the change "
        f"({ch.z_crit:.2f} + {ch.mdc_factor - ch.z_crit:.2f}): a true change this large is found significant "
        f"({100 * ch.alpha:g} %, two-sided) with probability {100 * ch.power:g} %; wider by: how much the setting's "
        "noise widens it.",
        name=f"detectable-{headline}-{sex}".lower(),
        keep=True,
    )


def series_frame(ch, headline: str = "e0", sex: str = "T") -> pd.DataFrame:
    """The yearly rows of one headline and sex, each with its report setting label (what
    :func:`demonoise.report.content.charts.level_series_settings` draws)."""
    s = ch.series[(ch.series["headline"] == headline) & (ch.series["sex"] == sex)]
    return s.assign(setting=setting_labels(s).to_numpy())


def _name(headline: str) -> str:
    """How a sentence names a headline: ``e0``, ``e65``, ``the TFR``."""
    return "the TFR" if headline == "TFR" else headline


def _join(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def change_points(ch, headline: str = "e0", sex: str = "T", settings=None) -> str:
    """Markdown: which regions' changes are significant without noise, and which of them
    are still significant with each setting's noise."""
    v = ch.verdicts[(ch.verdicts["headline"] == headline) & (ch.verdicts["sex"] == sex)]
    sets = _settings(v, settings)
    first = v[sets[0].mask(v)]
    order = _order(v)
    sig = [c for c in order if bool(first.set_index("region").loc[c, "significant_poisson"])]
    what = f"The change of {_name(headline)} ({SEX_WORDS[sex]}) from {ch.year_from} to {ch.year_to}"
    n = len(order)
    n2 = int((v.drop_duplicates("region")["nuts_level"] > 0).sum())
    rows = f"{n} ({'the country and ' if n2 < n else ''}{n2} NUTS 2 regions)"
    out = [
        f"{what} is significant without noise ({100 * ch.alpha:g} %, two-sided) in {len(sig)} of {rows}"
        + (f": {_join(sig)}." if sig and len(sig) < n else ", all of them." if sig else ".")
    ]
    not_sig = [c for c in order if c not in sig]
    if not_sig:
        out.append(f"Not significant even without noise: {_join(not_sig)}.")
    for st in sets:
        s = v[st.mask(v)].set_index("region")
        lost = [c for c in sig if s.loc[c, "verdict"] == "lost"]
        at = st.phrase
        if not sig:
            continue
        if lost:
            detail = _join(
                [
                    f"{c} (z {fmt_fixed(s.loc[c, 'z_poisson'], 2)} without noise, {fmt_fixed(s.loc[c, 'z_total'], 2)} "
                    "with it)"
                    for c in lost
                ]
            )
            out.append(f"{at[0].upper() + at[1:]}, {len(sig) - len(lost)} of them stay significant; noise takes it "
                       f"away from {detail}.")  # fmt: skip
        else:
            out.append(f"{at[0].upper() + at[1:]}, every one of them stays significant.")
    return " ".join(out)


def detectable_points(ch, headline: str = "e0", sex: str = "T", settings=None) -> str:
    """Markdown: per setting, the region whose smallest detectable change the noise widens
    most and the one it widens least, with the numbers."""
    d = ch.detectable[(ch.detectable["headline"] == headline) & (ch.detectable["sex"] == sex)]
    sets = _settings(d, settings)
    k = DECIMALS.get(headline, 3)
    h = HEADLINES[_KEY.get(headline, headline)]
    unit = h.unit
    level = ch.verdicts.drop_duplicates("region").set_index("region")["nuts_level"]
    out = []
    for st in sets:
        g = d[st.mask(d) & np.isfinite(d["mdc_ratio"])]
        if (g["region"].map(level) > 0).any():
            g = g[g["region"].map(level) > 0]  # the NUTS 2 regions; the country alone otherwise
        g = g.sort_values("mdc_ratio", kind="stable")
        if g.empty:
            continue
        hi, lo = g.iloc[-1], g.iloc[0]
        at = st.phrase[:1].upper() + st.phrase[1:]
        out.append(
            f"{at} the smallest change of {_name(headline)} {hi['region']} can detect grows from "
            f"{_from_to(hi['mdc_poisson'], hi['mdc_total'], k)} {unit} "
            f"({_signed(100 * (hi['mdc_ratio'] - 1), 1)} %, the most of the regions); "
            f"{lo['region']}'s from {_from_to(lo['mdc_poisson'], lo['mdc_total'], k)} "
            f"({_signed(100 * (lo['mdc_ratio'] - 1), 1)} %, the least)."
        )
    return " ".join(out)


def _from_to(a: float, b: float, k: int) -> str:
    """``"0.734 to 0.740"``: two values with ``k`` decimals, or as many more (up to 6) as
    it takes for them to differ when they do."""
    while k < 6 and a != b and fmt_fixed(a, k) == fmt_fixed(b, k):
        k += 1
    return f"{fmt_fixed(a, k)} to {fmt_fixed(b, k)}"
