"""The tables of the chapter "Change since the previous year": the changes, their z with and
without noise, the verdicts and the smallest detectable changes come from
:mod:`demonoise.analysis.change` (:func:`~demonoise.analysis.change.country_chapter`); this
module picks rows and formats numbers (fixed decimals, never e-notation)."""

from __future__ import annotations

from collections.abc import Sequence

from demonoise.analysis.change import DECIMALS, chapter_rows, country_chapter, data_words
from demonoise.core.formats import fmt_fixed, fmt_signed
from demonoise.core.vocabulary import ADMIXTURE_CLASSES, HEADLINES, SEX_WORDS
from demonoise.report.content.notebook import record_shown
from demonoise.report.content.summary import Coloured, HtmlTable, by_region, grouped, region_labels, status_box

_LOST = {"lost": ADMIXTURE_CLASSES[1].colour}  # amber: a significance the noise takes away
_WORD = {"robust": "yes", "lost": "lost", "not significant": "no", "undefined": "\u2014"}
#: Significant without noise, read off any setting's verdict: a robust or lost change is.
_WITHOUT = _WORD | {"lost": "yes"}


def load_change(*, dataset: str, country: str, settings: Sequence, **options):
    """The chapter's tables for ``country`` of the multi-year ``dataset``
    (:func:`demonoise.analysis.change.country_chapter`; ``options``: its years, ``alpha``,
    ``power``, ``confidence``, ``granularity``); in a kernel it records what the rows hold,
    as :func:`~demonoise.report.content.summary.load_results` does.

    Raises
    ------
    ParameterError
        A dataset of one year, years not in it, an unknown p-table.
    """
    ch = country_chapter(dataset, country, settings, **options)
    record_shown(ch.table, settings[0])
    return ch


def change_status_box(ch, *, granularity: str | None = None):
    """The data-status box of the chapter: the dataset's label (real and modelled tables),
    the years compared and what the data can't say."""
    ys = ch.series["year"]  # every year of the panel: two or more
    details = [f"Change from {ch.year_from} to {ch.year_to}; years shown {ys.min()}-{ys.max()}"]
    return status_box(ch.data_status, details, granularity=granularity, implications=ch.implications)


def verdict_view(ch, headline: str = "e0", sex: str = "T", settings=None) -> HtmlTable:
    """Per region: the headline's values in the two years, the change, its z without noise
    and, per setting, its z with noise and whether it is significant (``yes``, ``no``,
    ``lost``: significant without noise but not with this setting's)."""
    columns = ["value_from", "value_to", "change", "sd_poisson", "sd_noise", "sd_total", "z_poisson", "z_total"]
    per, frame = chapter_rows(ch, "verdicts", headline, sex, settings, [*columns, "verdict"])
    first = next(iter(per.values()))
    base = {"region": region_labels(by_region(ch.verdicts, first.index).reset_index())}
    k, h = DECIMALS.get(headline, 3), HEADLINES[headline.lower()]
    base |= {str(ch.year_from): [fmt_fixed(x, k) for x in first["value_from"]]}
    base |= {str(ch.year_to): [fmt_fixed(x, k) for x in first["value_to"]]}
    base |= {"change": [fmt_signed(x, k) for x in first["change"]]}
    sig = [_WITHOUT[x] for x in first["verdict"]]
    blocks = [("without noise", "", {"z": [fmt_fixed(x, 2) for x in first["z_poisson"]], "signif.": sig})]
    for st, g in per.items():
        signif = Coloured([_WORD[x] for x in g["verdict"]], [_LOST.get(x, "") for x in g["verdict"]])
        blocks.append((st.label, "", {"z": [fmt_fixed(x, 2) for x in g["z_total"]], "signif.": signif}))
    return grouped(
        frame,
        base,
        blocks,
        caption=f"Change of {h.label} from {ch.year_from} to {ch.year_to}, {SEX_WORDS[sex]} ({h.unit}): "
        f"significant without noise and with it",
        note=f"{data_words(ch, headline)}. z = change / sd, sd from Poisson alone (without noise) or from Poisson "
        f"and the setting's noise; signif.: significant, |z| > {ch.z_crit:.2f} ({100 * ch.alpha:g} %, two-sided); "
        "lost (shaded): significant without noise but not with the setting's noise.",
        name=f"change-{headline}-{sex}".lower(),
        keep=True,
    )


def detectable_view(ch, headline: str = "e0", sex: str = "T", settings=None) -> HtmlTable:
    """Per region: the smallest detectable change of the headline without noise and, per
    setting, with it and by how much (per cent) the setting widens it."""
    per, frame = chapter_rows(ch, "detectable", headline, sex, settings, ["mdc_poisson", "mdc_total", "mdc_ratio"])
    first = next(iter(per.values()))
    k, h = DECIMALS.get(headline, 3), HEADLINES[headline.lower()]
    blocks = [("without noise", "", {"MDC": [fmt_fixed(x, k) for x in first["mdc_poisson"]]})]
    for st, g in per.items():
        wider = [fmt_signed(100 * (r - 1), 1) + " %" for r in g["mdc_ratio"]]
        blocks.append((st.label, "", {"MDC": [fmt_fixed(x, k) for x in g["mdc_total"]], "wider by": wider}))
    return grouped(
        frame,
        {"region": region_labels(by_region(ch.verdicts, first.index).reset_index())},
        blocks,
        caption=f"Smallest detectable change of {h.label} from one year to the next, {SEX_WORDS[sex]} ({h.unit})",
        note=f"{data_words(ch, headline)}. MDC: the smallest detectable change, {ch.mdc_factor:.2f} sd of the change "
        f"({ch.z_crit:.2f} + {ch.mdc_factor - ch.z_crit:.2f}): a true change this large is found significant "
        f"({100 * ch.alpha:g} %, two-sided) with probability {100 * ch.power:g} %; wider by: how much the setting's "
        "noise widens it.",
        name=f"detectable-{headline}-{sex}".lower(),
        keep=True,
    )
