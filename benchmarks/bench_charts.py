"""What merging a chart's marks (:mod:`demonoise.report.svgmarks`) buys the PDF.

Run from the repository root after ``make report`` (it reads the results tables the batch
stored)::

    PYTHONPATH=lib python benchmarks/bench_charts.py                 # France, Luxembourg
    PYTHONPATH=lib python benchmarks/bench_charts.py --countries DE --results output/results

For each country the charts of its report's indicator chapters (the same chart functions
and data as the notebooks: values, uncertainty and admixture by age for the ASFR, the
ASMR and e_x, the TFR and e0 by region) are drawn once by vl-convert; each SVG is then
simplified with and without merging (:func:`demonoise.report.notebook.simplify_svg`),
and WeasyPrint draws each set into a PDF, alternately, ``--repeat`` times. Printed: the
elements of each set, the seconds to simplify, the CPU seconds of WeasyPrint
(min/median) and the ratio of the medians, and the largest and mean pixel difference of
resvg's drawings of the two sets (anti-aliasing only: 0 where nothing overlaps).
"""

from __future__ import annotations

import argparse
import base64
import io
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = [{"V": 1.0}, {"V": 5.0}, {"ptable": "v01"}]


def chart_specs(results: Path, country: str) -> list[dict]:
    """The Vega-Lite specs of a country report's chapter charts, from its results table."""
    from demonoise.report import charts, summary

    path = sorted(results.glob(f"*/{country}-single-*.parquet"))
    if not path:
        sys.exit(f"no results table for {country} under {results}: run `make report` (or pass --results)")
    df = summary.load_results(path[0], dataset=path[0].parent.name, country=country, setting=SETTINGS[0])
    labels = [summary.setting_label(s) for s in SETTINGS]
    made = [charts.value_by_age(summary.at(df, SETTINGS[0], "asfr"), title="ASFR", y_title="births per woman")]
    for ind in ("asfr", "asmr", "e"):
        across = summary.across_settings(df, ind, nuts_level=None)
        made.append(charts.uncertainty_by_age_settings(across, settings=labels, title=ind))
        made.append(charts.admixture_settings(across, settings=labels, title=ind))
    return [c.to_dict() for c in made]


def draw(svgs: list[str]) -> float:
    """CPU seconds of WeasyPrint drawing ``svgs`` into one PDF, 16 cm wide each."""
    import weasyprint

    imgs = "".join(
        f'<p><img style="width:16cm" src="data:image/svg+xml;base64,{base64.b64encode(s.encode()).decode()}"></p>'
        for s in svgs
    )
    t = time.process_time()
    weasyprint.HTML(string=f"<html><body>{imgs}</body></html>").write_pdf()
    return time.process_time() - t


def pixels(svg: str):
    import numpy as np
    import vl_convert as vlc
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(vlc.svg_to_png(svg, scale=2.0))).convert("RGB")).astype(int)


def main(argv=None) -> None:
    import numpy as np
    import vl_convert as vlc

    from demonoise.report.notebook import _vl_version, setup_notebook, simplify_svg
    from demonoise.report.theme import FONT, FORMAT_LOCALE

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--countries", nargs="+", default=["FR", "LU"])
    ap.add_argument("--results", type=Path, default=ROOT / "output" / "results")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    setup_notebook()
    for country in args.countries:
        raw = []
        for spec in chart_specs(args.results, country):
            spec["config"] = {"aria": False, "font": FONT, **(spec.get("config") or {})}
            raw.append(vlc.vegalite_to_svg(spec, vl_version=_vl_version(), format_locale=FORMAT_LOCALE))
        t = time.process_time()
        plain = [simplify_svg(s, merge=False) for s in raw]
        t_plain = time.process_time() - t
        t = time.process_time()
        merged = [simplify_svg(s) for s in raw]
        t_merged = time.process_time() - t
        times = {"plain": [], "merged": []}
        for _ in range(args.repeat):
            times["plain"].append(draw(plain))
            times["merged"].append(draw(merged))
        diffs = [np.abs(pixels(a) - pixels(b)).max(axis=2) for a, b in zip(plain, merged, strict=True)]
        count = lambda ss: sum(len(re.findall(r"<[a-zA-Z]", s)) for s in ss)  # noqa: E731
        med = {k: statistics.median(v) for k, v in times.items()}
        print(
            f"{country}: {len(raw)} charts; elements {count(plain)} -> {count(merged)}; simplify "
            f"{t_plain:.2f} s -> {t_merged:.2f} s; WeasyPrint CPU without merging min {min(times['plain']):.2f} "
            f"median {med['plain']:.2f} s, merged min {min(times['merged']):.2f} median {med['merged']:.2f} s: "
            f"ratio {med['merged'] / med['plain']:.3f}; resvg pixels: largest difference "
            f"{max(int(d.max()) for d in diffs)}, mean {statistics.mean(float(d.mean()) for d in diffs):.4f}"
        )


if __name__ == "__main__":
    main()
