"""Command line: a thin layer over the library.

::

    demonoise datasets
    demonoise compute --dataset be-2023 --V 1 5 [--granularity single|5y] [--mc 10000] --out results.parquet

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
