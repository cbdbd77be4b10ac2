"""The decision view of a country report: the tables, index cells and CSV files the notebooks
show of :func:`demonoise.analysis.decision.decision_report`, whose tables hold every number;
this module chooses rows and formats. A country of a single NUTS 2 region (LU, MT) shows that
region only (:func:`~demonoise.analysis.decision.one_region`).
"""

from __future__ import annotations

import html as _html
import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from demonoise.analysis.decision import (
    calibration_columns,
    furthest_from_generic,
    headline_bands,
    headline_rows,
    in_report_order,
    median_relative_bias,
    one_region,
    ptable_rows,
    worst_admixture,
)
from demonoise.analysis.settings import NoiseSetting, settings_in
from demonoise.analysis.verdicts import headline_band_rows
from demonoise.core.formats import fmt_fixed, fmt_int, fmt_pct
from demonoise.core.vocabulary import ADMIXTURE_CLASSES, HEADLINES, NO_DATA_COLOUR, SEX_WORDS, admixture_class
from demonoise.report.content import typstsrc
from demonoise.report.content.notebook import Shown, data_bundle
from demonoise.report.content.summary import (
    Coloured,
    HtmlTable,
    by_region,
    fmt_fixed_column,
    fmt_percent_column,
    grouped,
    region_labels,
    setting_blocks,
    settings_table,
)
from demonoise.report.content.theme import admixture_column, admixture_text, column_decimals

#: How the decision table heads its measures.
_MEASURE_LABELS = {"e0": "e0", "e65": "e65", "tfr": "TFR", "asfr": "ASFR med.", "asmr": "ASMR med."}
_SD_SCALE = {"e0": (1.0, "years"), "e65": (1.0, "years"), "tfr": (1000.0, "per 1 000 women")}
_CLASS_COLOUR = {c.key: c.colour for c in ADMIXTURE_CLASSES}
_SUPERSCRIPTS = str.maketrans("-0123456789", "\u207b\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079")


#: A decision table of at most this many regions is printed on one page with its heading
#: and legend (a landscape page holds about 20); a longer one starts under its heading and
#: continues on the next page, its column headers repeated.
KEEP_ROWS = 16


# ===================================================================== the legend
def class_legend() -> Shown:
    """The colours of the admixture classes, shown above the decision table."""
    items = [(c.label, c.colour) for c in ADMIXTURE_CLASSES] + [("not defined (no events)", NO_DATA_COLOUR)]
    html = "".join(f'<span class="dn-swatch" style="background:{c}"></span>{_html.escape(t)}' for t, c in items)
    html = f'<p class="dn-legend"><strong>Noise admixture A:</strong> {html}</p>'
    return Shown(html, typstsrc.call("dn-legend", [(t, typstsrc.colour(c)) for t, c in items]))


# =============================================================== decision table
def _nonzero(shown: str, a: float) -> str:
    """A positive admixture printed as 0 (``"0.00"``) gets its first significant digit: ``0.003`` (in %)."""
    if shown.strip("0.") or not (isinstance(a, float) and 0 < a < math.inf):
        return shown
    return f"{100 * a:.{max(0, -math.floor(math.log10(100 * a)))}f}"


def _decision_cells(wide: pd.DataFrame, col: str) -> Coloured:
    """A decision table column: the admixture (%) and its worst sex (``"2.1 F"``), by class."""
    pct = [_nonzero(p, a) for p, a in zip(admixture_column(wide[col]), wide[col], strict=True)]
    sex = [x if x in ("F", "M", "T") else "" for x in wide[f"{col} sex"]]
    cells = [f"{p} {x}".strip() if p != "\u2014" else "n/a" for p, x in zip(pct, sex, strict=True)]
    return Coloured(cells, [_CLASS_COLOUR.get(c, NO_DATA_COLOUR) for c in wide[f"{col} class"]])


def decision_view(rep) -> HtmlTable:
    """The decision table: one row per region (the country first), for each setting the
    admixture of e0, e65, the TFR and the median admixture of ASFR and ASMR -- the worst
    of women, men and both sexes, that sex named -- coloured by class."""
    wide = one_region(rep.decision_wide)
    measures = rep.decision["measure"].drop_duplicates().tolist()
    year = rep.population["year"].iloc[0] if len(rep.population) else ""
    return grouped(
        wide.drop(columns=["data_status"], errors="ignore"),
        {"region": region_labels(wide), "population (1 Jan.)": [fmt_int(p) for p in wide.population]},
        setting_blocks(
            settings_in(rep.decision),
            lambda s: {_MEASURE_LABELS.get(m, m): _decision_cells(wide, f"{m} {s.key}") for m in measures},
        ),
        caption=(
            f"Decision table: how much noise adds to the Poisson uncertainty (noise admixture A, %), by region "
            f"and setting; e0, e65 and TFR, and the median of A over the ages of the ASFR and ASMR. Each cell "
            f"shows the worst of women (F), men (M) and both sexes (T), and names that sex (fertility: women). "
            f"Population on 1 January {year}."
        ),
        keep=len(wide) <= KEEP_ROWS,
    )


def sex_view(rep, measure: str = "e0") -> HtmlTable:
    """Women, men and both sexes side by side: the noise admixture of one measure (e0,
    e65, ...) per region and setting, from the decision table (``admixture_F/M/T``), each
    cell coloured by its class."""
    dec = one_region(rep.decision[rep.decision["measure"] == measure])
    sets = settings_in(dec)
    first = dec[sets[0].mask(dec)]

    def cells(a: pd.Series) -> Coloured:
        return Coloured(admixture_column(a), [getattr(admixture_class(x), "colour", NO_DATA_COLOUR) for x in a])

    return grouped(
        dec[["region", "region_name", "setting", "measure", "admixture_F", "admixture_M", "admixture_T"]],
        {"region": region_labels(first)},
        setting_blocks(
            sets, lambda s: {x: cells(by_region(dec[s.mask(dec)], first["region"])[f"admixture_{x}"]) for x in "FMT"}
        ),
        caption=f"Noise admixture A of {_MEASURE_LABELS.get(measure, measure)} (%) for women (F), men (M) and both "
        "sexes (T), by region and setting; coloured by class.",
    )


def _vmax_cells(g: pd.DataFrame, head: str) -> list[str]:
    """Largest V's, each naming its sex: ``"0.748 (F)"``."""
    cells = [(str(v), str(x or "")) for v, x in zip(g[f"{head} shown"], g[f"{head} sex"], strict=True)]
    return [v if v in ("> range", "< range", "n/a") or not x else f"{v} ({x})" for v, x in cells]


def vmax_view(rep) -> HtmlTable:
    """Per region and family (generic; each p-table's family), the largest V keeping the
    admixture of e0 and of the TFR at or below each threshold (the smallest over the
    sexes, that sex named); ``"> range"`` where every V searched keeps it."""
    cw = in_report_order(one_region(rep.calibration_wide), rep)
    first = cw[cw["family"] == cw["family"].iloc[0]]
    heads = [c.removesuffix(" shown") for c in cw.columns if c.endswith(" shown")]
    names = {h: f"{HEADLINES[w].label} A \u2264 {fmt_pct(float(t), 3)}" for h in heads for w, t in [h.split(" A<=")]}
    blocks = []
    for fam, g in cw.groupby("family", sort=False):
        label = "generic model" if fam == "generic" else f"p-tables {fam.removeprefix('ptable ')}"
        blocks.append((label, "", {names[h]: _vmax_cells(by_region(g, first["region"]), h) for h in heads}))
    return grouped(
        one_region(rep.calibration).drop(columns=["data_status"], errors="ignore"),
        {"region": region_labels(first), "population (1 Jan.)": [fmt_int(p) for p in first.population]},
        blocks,
        caption=(
            "Largest acceptable V: per region the largest noise variance V keeping the noise admixture of e0 and of "
            "the TFR at or below each threshold, the smallest over women, men and both sexes (that sex named; 3 "
            "significant digits); generic model in closed form, a p-table family numerically over the V it can "
            "reach. \u201c> range\u201d: every V of the range searched keeps the admixture below the threshold."
        ),
        note=_range_note(rep.calibration),
    )


def _range_note(cal: pd.DataFrame) -> str:
    parts = [
        f"p-tables {fam.removeprefix('ptable ')}: V searched from {g['range_lo'].iloc[0]:.3g} to "
        f"{g['range_hi'].iloc[0]:.3g} (the largest variance such a table reaches)"
        for fam, g in cal.groupby("family", sort=False)
        if fam != "generic"
    ]
    return "; ".join(parts) + ("." if parts else "")


def main_points(rep) -> Shown:
    """The sentences of the main points (:func:`demonoise.analysis.decision.main_points`) and
    the notes of the decision report (shown when there are any)."""
    said, notes = list(rep.main_points.sentences), list(rep.notes)
    items = "".join(f"<li>{_html.escape(s)}</li>" for s in said)
    html_notes = "".join(f'<p class="dn-table-note">Note: {_html.escape(n)}</p>' for n in notes)
    return Shown(f'<ul class="dn-main-points">{items}</ul>{html_notes}', typstsrc.call("dn-points", said, notes))


def decision_text(rep) -> Shown | None:
    """The decision text (:func:`demonoise.analysis.decision.decision_text`), a paragraph a
    methodologist can paste, set apart under the main points; ``None`` when there is none."""
    if not (text := rep.decision_text):
        return None
    return Shown(
        f'<p class="dn-decision-text"><strong>Decision text.</strong> {_html.escape(text)}</p>',
        "#block(inset: (left: 8pt, y: 4pt), stroke: (left: 2pt + dn-accent))"
        f"[*Decision text.* {typstsrc.markup(text)}]",
    )


# ==================================================================== error bands
def _band_columns(b: pd.DataFrame, h: str, level: float, sets, regions) -> dict[str, list[str]]:
    """A headline's columns of :func:`bands_summary` at one level (a p-table's bias beside)."""
    hb = headline_bands(b, h, level=level)
    base = by_region(hb[sets[0].mask(hb)], regions)
    cols = {HEADLINES[h].label: fmt_fixed_column(base["value"], significant=4 if h != "tfr" else 3)}
    cols["\u00b1 P"] = fmt_fixed_column(base["half_pois"], significant=2)
    for s in sets:
        g = by_region(hb[s.mask(hb)], regions)
        cols[f"\u00b1 N {s.short}"] = fmt_fixed_column(g["half_noise"], significant=2)
        if (g["noise_model"] == "ptable").any():
            label, values = _scaled(g["bias_noise"], "")
            cols[f"bias {s.short}" + (f" ({label})" if label else "")] = values
    return cols


def bands_summary(rep, headlines: Sequence[str] = ("e0", "e65", "tfr")) -> HtmlTable:
    """Error bands a user can quote: a row per region and level, for e0, e65 (both sexes) and
    the TFR (women) the value and the half-widths from Poisson and from each setting's noise
    (a p-table's bias beside); the CSV has the total and every sex."""
    b = rep.error_bands
    sets = settings_in(b)
    levels = sorted(set(b["level"]))
    first = headline_bands(b, headlines[0], sets[0], levels[0])
    base = {"region": region_labels(first) * len(levels)}
    if len(levels) > 1:
        base["level"] = [fmt_pct(lev, 3) for lev in levels for _ in range(len(first))]
    cols = {h: [_band_columns(b, h, lev, sets, first["region"]) for lev in levels] for h in headlines}
    blocks = [
        (f"{HEADLINES[h].label} ({HEADLINES[h].unit})", "", {c: sum((x[c] for x in cs), []) for c in cs[0]})
        for h, cs in cols.items()
    ]
    names = ", ".join(f"{s.short} = {s.label}" for s in sets if s.short != s.label)
    return grouped(
        b.drop(columns=["data_status"], errors="ignore"),
        base,
        blocks,
        caption=(
            f"Error bands, {', '.join(fmt_pct(x, 3) for x in levels)}: a published value carries \u00b1 the "
            "half-width z sd from Poisson (statistical) variation (P) and from the noise of each setting (N), first "
            "order; e0 and e65 both sexes, the TFR women, in the units of the indicator. A p-table's noise interval is "
            "centred on value + bias; Poisson and noise together: \u00b1 sqrt(P\u00b2 + N\u00b2)"
            + (f" ({names})" if names else "")
            + "."
        ),
    )


def indicator_table(df: pd.DataFrame, bands: pd.DataFrame, setting, headline: str) -> HtmlTable:
    """One setting's table of a headline (both sexes; TFR: women), per region: from ``df`` (the
    results) the events, value, relative uncertainties, admixture and flags, from ``bands``
    (:func:`demonoise.analysis.decision.error_bands`, first level) the half-widths from Poisson
    and noise, a p-table's bias and the Monte Carlo quantiles of the noise interval."""
    hl = HEADLINES[headline]
    d, b, level = headline_band_rows(df, bands, setting, headline)
    has_mc, pt = "mc_n" in b and b["mc_n"].notna().any(), (b["noise_model"] == "ptable").any()
    shown = pd.DataFrame(
        {
            "region": d["label"].to_numpy(),
            "births" if hl.female_only else "deaths": [fmt_int(x) for x in d["events"]],
            hl.label: fmt_fixed_column(d["value"], significant=3 if headline == "tfr" else 4),
            "\u03b4 P (%)": fmt_percent_column(d["rel_pois"]),
            "\u03b4 N (%)": fmt_percent_column(d["rel_noise"]),
            "A (%)": fmt_percent_column(d["admixture"]),
            "\u00b1 P": fmt_fixed_column(b["half_pois"], significant=2),
            "\u00b1 N": fmt_fixed_column(b["half_noise"], significant=2),
        }
    )
    if pt:
        label, values = _scaled(b["bias_noise"], hl.unit)
        shown[f"bias ({label})"] = values
    mc = flags = ""
    if has_mc:
        k = column_decimals(b["half_noise"], significant=2)  # the decimals of its column
        shown["MC N from"] = [fmt_fixed(x, k) for x in b["mc_lo_noise"]]
        shown["MC N to"] = [fmt_fixed(x, k) for x in b["mc_hi_noise"]]
        mc = (
            f"; MC N from / to: the Monte Carlo's {fmt_pct((1 - level) / 2, 3)} and {fmt_pct((1 + level) / 2, 3)} "
            f"quantiles of {fmt_int(float(b['mc_n'].dropna().iloc[0]))} replicate values under noise"
        )
    if (d["flag"] != "").any():
        shown["flags"] = d["flag"].to_numpy()
        flags = (
            " Flags (first order may be unreliable): sparse = more than half of the age cells rest on fewer than "
            "10 events (share given); MC |z| > 5 = the Monte Carlo disagrees beyond sampling error."
        )
    sex = "women" if hl.female_only else "both sexes"
    return HtmlTable(
        d,
        shown,
        caption=(
            f"{hl.title.capitalize()}, {sex}, {NoiseSetting.of(setting).phrase} ({hl.unit}): relative uncertainties "
            "\u03b4 = sd / value from Poisson (P) and noise (N), noise admixture A, and the half-widths z sd of the "
            f"{fmt_pct(level, 3)} intervals from P and N in {hl.unit}"
            + (" (the noise interval centred on value + bias)" if pt else "")
            + f"{mc}.{flags}"
        ),
        flagged=(d["flag"] != "").tolist(),
    )


def indicator_settings(df: pd.DataFrame, bands: pd.DataFrame, settings: Sequence, headline: str) -> HtmlTable:
    """:func:`indicator_table` of every setting as one (:func:`~.summary.settings_table`): per
    region the events, the value and its Poisson half-width, then per setting the admixture,
    the noise half-width (a p-table's bias beside) and the flags."""
    hl = HEADLINES[headline]
    level = float(bands["level"].min()) if len(bands) else 0.95
    return settings_table(
        [indicator_table(df, bands, s, headline) for s in settings],
        settings,
        common=("region", "births" if hl.female_only else "deaths", hl.label, "\u00b1 P"),
        per=("A (%)", "\u00b1 N", "bias", "flags"),
        caption=(
            f"{hl.title.capitalize()}, {'women' if hl.female_only else 'both sexes'}, for each noise setting (a column "
            f"group per setting; {hl.unit}): the half-widths z sd of the {fmt_pct(level, 3)} intervals from "
            "Poisson (\u00b1 P) and from noise (\u00b1 N), with the noise admixture A; a p-table's noise interval is "
            "centred on value + bias. Flags: "
            "sparse = more than half of the age cells rest on fewer than 10 events; MC |z| > 5 = the Monte Carlo "
            "disagrees beyond sampling error."
        ),
    )


# ==================================================================== small cells
def small_cells_view(cells: pd.DataFrame) -> HtmlTable:
    """Cells resting on few events: per region and sex, how many of its age cells hold fewer
    than 10 deaths or births (as :func:`demonoise.analysis.decision.small_cell_text`)."""
    c = one_region(cells)
    regions = c.drop_duplicates("region")
    shown = pd.DataFrame({"region": region_labels(regions)})
    for (ind, word), s in itertools.product((("asmr", "deaths"), ("asfr", "births")), "FMT"):
        g = c[(c["indicator"] == ind) & (c["sex"] == s)].set_index("region").reindex(regions["region"])
        if g["age_cells"].notna().any():
            shown[f"{word}, {s}: < 10 of cells"] = [
                "\u2014" if not np.isfinite(n) else f"{int(k)} of {int(n)} ({fmt_pct(k / n)})"
                for k, n in zip(g["age_cells_under_10_events"], g["age_cells"], strict=True)
            ]
    return HtmlTable(
        c.drop(columns=["data_status"], errors="ignore"),
        shown,
        caption=(
            "Cells resting on few events (first order unreliable there): per region, how many of its age cells "
            "(every published age; the unknown age spread over the known ones) hold fewer than 10 events, of all "
            "its age cells, for women (F), men (M) and both sexes (T); births by age of mother are women only. "
            "The flags tables give the same counts."
        ),
    )


# ============================================================= generic vs p-table
def comparison_view(rep, ptable: str | None = None) -> HtmlTable:
    """Region by region, the noise sd of e0, e65 and the TFR under the generic model at
    the p-table's nominal V against the p-table's own, and their ratio (e0, e65: both
    sexes; TFR: women; the TFR's sd per 1 000 women)."""
    cmp, sel = headline_rows(rep, ptable)
    v = float(sel["V"].iloc[0]) if len(sel) else float("nan")
    blocks = []
    for h, g in _by_headline(sel).items():
        scale, unit = _SD_SCALE[h]
        cols = {"generic": scale * g["sd_generic"], "p-table": scale * g["sd_ptable"], "ratio": g["ratio"]}
        cols = {k: fmt_fixed_column(v, significant=2) for k, v in cols.items()}
        blocks.append((f"noise sd of {HEADLINES[h].label} ({unit})", "", cols))
    return grouped(
        cmp.drop(columns=["data_status"], errors="ignore"),
        {"region": region_labels(sel.drop_duplicates("region"))},
        blocks,
        caption=(
            f"Noise sd under the generic model at the p-table's nominal V = {v:g} and under the p-table itself, "
            "and their ratio (p-table / generic): e0 and e65 both sexes, the TFR women."
        ),
    )


def _by_headline(sel: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The rows of each headline by region, in the order of ``sel``."""
    regions = sel.drop_duplicates("region")["region"]
    return {h: by_region(sel[sel["headline"] == h], regions) for h in sel["headline"].unique()}


def reasons(rep, ptable: str | None = None) -> HtmlTable:
    """Why the two models differ: per region the headline and sex whose ratio of noise sds is
    furthest from 1 (:func:`demonoise.analysis.decision.furthest_from_generic`), that ratio and
    the shares of the generic noise variance from counts 0, small counts and the rest."""
    rows = furthest_from_generic(rep, ptable)
    if rows.empty:
        return HtmlTable(rows, rows, empty="No noised cell behind the indicators: nothing to compare.")
    last = int(rows["I"].iloc[0])
    small = "count 1" if last == 2 else f"counts 1-{last - 1}"
    shown = pd.DataFrame(
        {
            "region": region_labels(rows),
            "indicator (sex)": [f"{h} ({s})" for h, s in zip(rows["headline"], rows["sex"], strict=True)],
            "sd ratio p-table / generic": fmt_fixed_column(rows["ratio"], significant=3),
            "count 0 (%)": fmt_percent_column(rows["zero_var_share"]),
            f"{small}, generic (%)": fmt_percent_column(rows["small_var_share_nonzero"]),
            f"{small}, p-table (%)": fmt_percent_column(rows["small_ptable_var_share"]),
            f"count {last} or more (%)": fmt_percent_column(rows["large_var_share"]),
        }
    )
    V, V_last = float(rows["V"].iloc[0]), float(rows["V_last_class"].iloc[0])
    return HtmlTable(
        rows,
        shown,
        caption=(
            f"Why the two models differ, per region for the indicator and sex furthest from the generic model "
            f"(F women, M men, T both sexes): the ratio of the noise sds at V = {V:g}, and the shares of the "
            f"generic noise variance from cells with count 0, from {small} (and what the p-table gives them, as a "
            f"share of the same generic variance) and from counts of {last} or more, where the p-table's variance "
            f"is {V_last:.3g}."
        ),
        note=(
            "The p-table leaves every count of 0 unchanged and gives small counts their own variance, so its noise "
            "is smaller where zeros and small counts carry much of the generic noise variance: in small regions "
            "and at the ages with few events."
        ),
    )


def ptable_noise_view(rep, ptable: str | None = None) -> HtmlTable:
    """The p-table's count-dependent noise: bias, variance and sd per original count, the
    probability that a count is published unchanged, and the nominal V."""
    t = ptable_rows(rep.ptable_noise, ptable)
    shown = pd.DataFrame(
        {
            "original count": t["count"].astype(str),
            "bias (counts)": fmt_fixed_column(t["bias"], significant=2),
            "variance (counts\u00b2)": fmt_fixed_column(t["variance"], significant=3),
            "sd (counts)": fmt_fixed_column(t["sd"], significant=3),
            "P(unchanged) (%)": fmt_percent_column(t["p_stay"], significant=3),
        }
    )
    nominal = float(t["nominal_V"].iloc[0]) if len(t) else float("nan")
    return HtmlTable(
        t,
        shown,
        caption=(
            f"Noise of the p-table by original count: mean noise (bias), variance and sd, and the probability that "
            f"the count is published unchanged; nominal V = {nominal:g}. A count of 0 stays 0; the last row stands "
            "for every larger count."
        ),
    )


def bias_view(rep, results: pd.DataFrame, ptable: str | None = None) -> HtmlTable:
    """Each headline's first-order bias under the p-table per region, and as a share of its
    noise sd; the median relative bias of the ASFR and ASMR from the ``results`` table."""
    _, sel = headline_rows(rep, ptable)
    regions = sel.drop_duplicates("region")
    shown = pd.DataFrame({"region": region_labels(regions)})
    for h, g in _by_headline(sel).items():
        label, values = _scaled(g["bias_ptable"], HEADLINES[h].unit)
        shown[f"{HEADLINES[h].label} bias ({label})"] = values
        shown[f"{HEADLINES[h].label}: bias / sd (%)"] = fmt_percent_column(g["bias_ptable"] / g["sd_ptable"])
    for ind in ("asfr", "asmr"):
        med = median_relative_bias(results, ind, ptable)
        if med is not None:
            shown[f"{ind.upper()}: median bias / value (%)"] = fmt_percent_column(med.reindex(regions["region"]))
    return HtmlTable(
        sel.drop(columns=["data_status"], errors="ignore"),
        shown,
        caption=(
            "First-order bias of the indicators under the p-table (the mean change its noise makes, to first order: "
            "the table's noise has a mean of its own on small counts), per region and as a share of the noise sd; e0 "
            "and e65 both sexes, the TFR and the ASFR women, the ASMR both sexes (median over ages of bias / value)."
        ),
    )


def _scaled(values, unit: str) -> tuple[str, list[str]]:
    """Small numbers shown in a power of ten of their unit, fixed decimals for the column:
    ``([-4.7e-6, ...], "years")`` -> ``("10\u207b\u2076 years", ["-4.7", ...])``."""
    v = np.asarray(list(values), dtype=float)
    d = column_decimals(v, significant=1, most=99)  # minus the median's order of magnitude, at least 0
    k = -3 * math.ceil(d / 3) if d > 2 else 0
    label = (f"10{str(k).translate(_SUPERSCRIPTS)} {unit}" if k else unit).strip()
    return label, fmt_fixed_column(v / 10.0**k, significant=2)


# ==================================================================== calibration
def calibration_view(rep) -> HtmlTable:
    """The calibration chapter: per region the largest V of each family keeping the admixture
    at or below each threshold, e0 per sex and the TFR (women); the CSV has every row."""
    cal = in_report_order(one_region(rep.calibration), rep)
    regions = cal.drop_duplicates("region")
    blocks = []
    for fam, h, sex, t, cols in calibration_columns(cal, regions["region"]):
        who = f"{'generic' if fam == 'generic' else 'p-tables'}: {HEADLINES[h].label}"
        if sex:  # one sex (the TFR: women): one group, a column per threshold
            blocks.append((f"{who} ({sex})", "", {f"A \u2264 {fmt_pct(float(k), 3)}": v for k, v in cols.items()}))
        else:
            blocks.append((f"{who} A \u2264 {fmt_pct(float(t), 3)}", "", cols))
    fams = [f for f in cal["family"].drop_duplicates().tolist() if f != "generic"]
    return grouped(
        cal.drop(columns=["data_status"], errors="ignore"),
        {"region": region_labels(regions)},
        blocks,
        caption=(
            "Largest V per region keeping the noise admixture at or below each threshold, for women (F), men (M) and "
            "both sexes (T): the generic model in closed form"
            + (f", the p-tables {', '.join(x.removeprefix('ptable ') for x in fams)} numerically" if fams else "")
            + " (3 significant digits; \u201c> range\u201d: every V searched keeps it)."
        ),
        note=_range_note(rep.calibration),
    )


# ========================================================================== index
def _worst(w: pd.Series) -> dict[str, str]:
    """The index's cell of a setting's worst admixture (finite: of a class), coloured by its class."""
    text = f"{admixture_text(w['admixture'])} {_MEASURE_LABELS[w['measure']]} {w['region']} ({w['sex']})"
    return {"text": text, "colour": admixture_class(float(w["admixture"])).colour}


def index_columns(rep) -> dict[str, Any]:
    """The index page's cells of a country: its population on 1 January (the decision
    table's figure), per setting the worst admixture class over the NUTS 2 regions and
    e0, e65 and the TFR (coloured, naming the indicator and region), and the recommended V."""
    pop = rep.population
    country = pop[pop["nuts_level"] == 0]
    out: dict[str, Any] = {
        "population (1 Jan.)": fmt_int(float(country["population"].iloc[0])) if len(country) else "\u2014",
        "NUTS 2 regions": int((pop["nuts_level"] == 2).sum()),
    }
    out |= {f"worst A, {label}": "n/a" if w is None else _worst(w) for label, w in worst_admixture(rep).items()}
    r = rep.recommended[rep.recommended["family"] == "generic"].iloc[0]  # the generic family: always calibrated
    text = str(r["V_shown"])  # the recommended V: "0.748 (LU00, women)"
    if r["range_status"] == "within":
        who = f"{r['region']}, {SEX_WORDS.get(r['sex'], r['sex'])}" if r["sex"] else str(r["region"])
        text = f"{text} ({who})"
    out[f"recommended V ({HEADLINES[r['indicator']].label}, A \u2264 {fmt_pct(float(r['threshold']), 3)})"] = text
    return out


# ======================================================================== CSV files
def data_files(rep) -> Shown:
    """Every table of the decision report (and the column dictionary with their units) as a
    CSV file of its own name next to the report (``decision.csv``, ``calibration.csv`` with
    the columns of ``demonoise calibrate``, ``error_bands.csv``, ...); shows nothing."""
    return Shown(bundle=data_bundle(rep.tables()))
