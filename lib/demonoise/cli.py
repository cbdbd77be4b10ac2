"""Command line: a thin layer over the library.

::

    demonoise datasets
    demonoise compute --dataset be-2023 --V 1 5 [--granularity single|5y] [--mc 10000] --out results.parquet
    demonoise fetch --year 2023 [--countries BE FR] [--refresh | --offline] [--cache-dir DIR] [--base-url URL]
    demonoise report --params params/default.yaml [--output output] [--force] [--workers 2] [--no-pdf]

Every command exits with status 0 on success, 2 on bad input or parameters (a
one-line message naming what is wrong), 1 on a failed batch.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from .errors import DemonoiseError

__all__ = ["main", "build_parser"]


def _positive_float(s: str) -> float:
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {s!r}") from None
    if not v > 0 or v != v or v == float("inf"):
        raise argparse.ArgumentTypeError(f"V is a variance and must be a finite number > 0, got {s}")
    return v


def _progress(total: int, label: str):
    """A tqdm progress bar on stderr (silent when stderr is not a terminal and quiet)."""
    from tqdm.auto import tqdm

    bar = tqdm(total=total, desc=label, unit="rep", file=sys.stderr, leave=False)
    state = {"done": 0}

    def update(done: int):
        bar.update(done - state["done"])
        state["done"] = done
        if done >= total:
            bar.close()

    return update


# --------------------------------------------------------------------------- commands
def cmd_datasets(args) -> int:
    from .io.datasets import available

    rows = available()
    if not rows:
        print("no datasets available")
        return 0
    w = max(len(r.name) for r in rows)
    for r in rows:
        print(f"{r.name:<{w}}  {r.kind:<8}  {r.year}  {r.regions:>4} regions  {r.label}")
        if args.verbose:
            for line in r.details:
                print(f"{'':<{w}}    {line}")
    return 0


def cmd_compute(args) -> int:
    from .compute import compute, noise_settings, summarise, write_table
    from .io.datasets import load

    counts = load(args.dataset)
    if args.countries or args.regions:
        codes = list(args.regions or [])
        if args.countries:
            codes += [r.code for r in counts.regions if r.country in set(args.countries) and r.code not in codes]
        counts = counts.select(codes)
    settings = noise_settings(args.V or (), D=args.D, ptables=args.ptable or ())
    t0 = time.perf_counter()
    progress = _progress(args.mc, "Monte Carlo") if args.mc and sys.stderr.isatty() else None
    df = compute(
        counts,
        settings,
        granularity=args.granularity,
        indicators=args.indicators,
        mc=args.mc,
        seed=args.seed,
        zero_floor=args.zero_floor,
        progress=progress,
    )
    out = write_table(df, args.out)
    dt = time.perf_counter() - t0
    print(f"{len(df)} rows ({counts.name}: {len(counts.regions)} regions; {counts.provenance.status_label}) -> {out}  [{dt:.1f} s]")
    summ = summarise(df)
    if len(summ):
        with __import__("pandas").option_context("display.width", 160, "display.max_columns", 20):
            print(summ.to_string(index=False, float_format=lambda x: f"{x:.4g}"))
    return 0


def _download_bar(label: str, total: int | None):
    """A tqdm bar per download on stderr (hidden when stderr is not a terminal)."""
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=label, unit="B", unit_scale=True, unit_divisor=1024, file=sys.stderr, leave=False,
                disable=None)


def cmd_fetch(args) -> int:
    import warnings

    from .io.fetch import COUNT_TABLES, comparison_tables, fetch_counts
    from .errors import FetchError

    kw = dict(cache_dir=args.cache_dir, base_url=args.base_url, refresh=args.refresh, offline=args.offline,
              timeout=args.timeout, endpoint=args.endpoint, progress=_download_bar)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = fetch_counts(args.year, args.countries, skip_incomplete=args.skip_incomplete, **kw)
        comp: dict[str, str] = {}
        if not args.no_comparison:
            for code in ("demo_r_mlifexp", "demo_r_find2"):
                try:
                    df = comparison_tables(args.year, args.countries, tables=(code,), **kw)[code]
                    comp[code] = f"{len(df)} values, downloaded {df.attrs.get('extracted', 'unknown')}"
                except FetchError as e:  # the counts are fetched; a missing comparison table is not fatal
                    comp[code] = f"not available ({e})"
    for w in caught:
        print(f"demonoise fetch: warning: {' '.join(str(w.message).split())}", file=sys.stderr)
    c = res.counts
    n0 = sum(r.level == 0 for r in c.regions)
    n2 = len(c.regions) - n0
    print(f"{c.name}: {len(c.regions)} regions ({n0} {'country' if n0 == 1 else 'countries'}, "
          f"{n2} NUTS 2 region{'' if n2 == 1 else 's'}), reference year {c.year}")
    for measure, (rcode, ncode) in COUNT_TABLES.items():
        er, en = res.entries[rcode], res.entries[ncode]
        when = er.extracted if er.extracted == en.extracted else f"{er.extracted} / {en.extracted}"
        upd = er.updated or "unknown"
        if (en.updated or "unknown") != upd:
            upd += f" / {en.updated or 'unknown'}"
        print(f"  {measure:<11} {rcode} + {ncode}: downloaded {when}; Eurostat update {upd}")
    for code, text in comp.items():
        print(f"  {'comparison':<11} {code}: {text}")
    if res.skipped:
        print(f"  {'skipped':<11} " + "; ".join(f"{k} ({', '.join(v)})" for k, v in res.skipped.items()))
    if res.ignored_codes:
        shown = ", ".join(res.ignored_codes[:10]) + (" ..." if len(res.ignored_codes) > 10 else "")
        print(f"  {'ignored':<11} {len(res.ignored_codes)} NUTS 2 code(s) outside NUTS 2021: {shown}")
    if res.absent:
        shown = ", ".join(res.absent[:10]) + (" ..." if len(res.absent) > 10 else "")
        print(f"  {'absent':<11} {len(res.absent)} NUTS 2021 region(s) without population data for {c.year}: {shown}")
    n_dl = len(res.downloaded)
    print(f"cache: {res.cache} ({len(res.entries)} tables: {n_dl} downloaded, {len(res.entries) - n_dl} reused)")
    return 0


def cmd_report(args) -> int:
    from .report.batch import load_params, run_reports

    params = load_params(args.params)
    rep = run_reports(
        params,
        args.output,
        force=args.force,
        workers=args.workers,
        pdf=False if args.no_pdf else None,
    )
    t = rep.timings
    print(rep.summary())
    print(
        f"  compute {t['compute']:.1f} s, notebooks {t['notebooks']:.1f} s, reports {t['render']:.1f} s "
        f"(HTML {t['html']:.1f} s, PDF {t['pdf']:.1f} s of work)"
    )
    for note in rep.notes:
        print(f"  note: {note}")
    for o in rep.failed:
        first = (o.error or "failed").splitlines()[0]
        print(f"  FAILED {o.spec.label}: {first}", file=sys.stderr)
    print(f"index: {rep.index}")
    return 0 if rep.ok else 1


def _workers(s: str) -> int:
    try:
        v = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {s!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"workers must be >= 1, got {v}")
    return v


def _positive_seconds(s: str) -> float:
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {s!r}") from None
    if not v > 0 or v == float("inf"):
        raise argparse.ArgumentTypeError(f"timeout must be a finite number of seconds > 0, got {s}")
    return v


# --------------------------------------------------------------------------- parser
def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    p = argparse.ArgumentParser(prog="demonoise", description="How much noise-based disclosure control degrades demographic indicators.")
    p.add_argument("--version", action="version", version=f"demonoise {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("datasets", help="list the available datasets (embedded and cached) with their provenance")
    s.add_argument("-v", "--verbose", action="store_true", help="show provenance details")
    s.set_defaults(func=cmd_datasets)

    s = sub.add_parser("compute", help="analytic error propagation (+ Monte Carlo) -> tidy results table")
    s.add_argument("--dataset", required=True, help="dataset name (see `demonoise datasets`)")
    s.add_argument("--V", nargs="+", type=_positive_float, metavar="V", help="noise variance(s) of the generic model, e.g. --V 1 5")
    s.add_argument("--D", type=int, default=None, help="maximum deviation of the generic noise (default: unbounded)")
    s.add_argument("--ptable", nargs="+", metavar="TABLE", help="p-table(s): an embedded name (v01, v03, v04) or a file")
    s.add_argument("--granularity", default="single", choices=["single", "5y", "5y-infant"], help="publication granularity of the noised cells (default: single, Eurostat's NUTS 2 layout)")
    s.add_argument("--indicators", nargs="+", default=["asfr", "tfr", "asmr", "e"], choices=["asfr", "tfr", "asmr", "e"])
    s.add_argument("--countries", nargs="+", metavar="CC", help="restrict to these countries")
    s.add_argument("--regions", nargs="+", metavar="CODE", help="restrict to these regions")
    s.add_argument("--mc", type=int, default=0, metavar="N", help="Monte Carlo replicates for e and TFR (default 0: analytic only)")
    s.add_argument("--seed", type=int, default=20230101)
    s.add_argument("--zero-floor", action="store_true", help="Monte Carlo: floor noisy counts at zero (a different noise model)")
    s.add_argument("--out", required=True, type=Path, help="output file: .parquet, .csv or .csv.gz")
    s.set_defaults(func=cmd_compute)

    s = sub.add_parser("fetch", help="download real Eurostat tables for a year (cached) -> dataset eurostat-<year>")
    s.add_argument("--year", required=True, type=int, help="reference year t (population on 1 January t and t+1)")
    s.add_argument("--countries", nargs="+", metavar="CC", help="NUTS country codes (default: every country)")
    g = s.add_mutually_exclusive_group()
    g.add_argument("--refresh", action="store_true", help="download again even if cached")
    g.add_argument("--offline", action="store_true", help="use the cache only; fail if a table is not cached")
    s.add_argument("--cache-dir", type=Path, default=None, help="cache directory (default: $DEMONOISE_CACHE or ~/.cache/demonoise)")
    s.add_argument("--base-url", default=None, help="API base URL (default: $DEMONOISE_EUROSTAT_URL or Eurostat's dissemination API)")
    s.add_argument("--timeout", type=_positive_seconds, default=60.0, help="seconds allowed to connect and for each read (default 60)")
    s.add_argument("--endpoint", choices=["json", "tsv"], default="json",
                   help="json: filtered JSON-stat from the statistics API (default); tsv: full gzipped TSV datasets")
    s.add_argument("--skip-incomplete", action="store_true", help="drop regions lacking a table or ages (listed) instead of failing")
    s.add_argument("--no-comparison", action="store_true", help="do not fetch the comparison tables demo_r_mlifexp, demo_r_find2")
    s.set_defaults(func=cmd_fetch)

    s = sub.add_parser("report", help="quality reports: notebooks per country and V -> HTML/PDF reports + output/index.html")
    s.add_argument("--params", required=True, type=Path, help="YAML params file, e.g. params/default.yaml")
    s.add_argument("--output", type=Path, default=Path("output"), help="output directory (default: output)")
    s.add_argument("--force", action="store_true", help="execute and render everything again, even if up to date")
    s.add_argument("--workers", type=_workers, default=2, help="parallel kernels / Monte Carlo processes / renderers (default 2)")
    s.add_argument("--no-pdf", action="store_true", help="write HTML reports only")
    s.set_defaults(func=cmd_report)
    return p


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except DemonoiseError as e:
        print(f"demonoise {args.command}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
