"""Command line: a thin layer over the library.

::

    demonoise datasets
    demonoise compute --dataset be-2023 --V 1 5 [--granularity single|5y] [--mc 10000] --out results.parquet
    demonoise calibrate --dataset be-2023 [--thresholds 0.1 0.5 1] [--ptable-D 3 --ptable-js 0] --out calib.csv

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


def _number(s: str) -> float:
    """A float as typed; range checks are the library's (ParameterError -> exit 2)."""
    try:
        return float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {s!r}") from None


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


def _load_counts(name: str):
    """A dataset by registry name, or a counts template CSV file (``.csv``, ``.csv.gz``)."""
    path = Path(name)
    if path.name.lower().endswith((".csv", ".csv.gz")):
        if not path.is_file():
            from .errors import DataError

            raise DataError("counts file not found", file=str(path))
        from .io.template import read_counts_csv

        return read_counts_csv(path)
    try:
        from .io.datasets import load
    except ModuleNotFoundError:  # the registry is not part of this installation
        from .errors import ParameterError

        raise ParameterError(f"unknown dataset {name!r}: no dataset registry available; pass a counts CSV file") from None
    return load(name)


def _select(counts, regions, countries):
    """Restrict to region codes and/or countries; unknown codes raise DataError naming them."""
    from .errors import DataError

    if not (regions or countries):
        return counts
    codes = []
    for code in regions or []:
        if code not in counts.codes:
            raise DataError("unknown region code", dataset=counts.name, region=code)
        codes.append(code)
    for cc in countries or []:
        hit = [r.code for r in counts.regions if r.country == cc]
        if not hit:
            raise DataError("no region of this country in the dataset", dataset=counts.name, region=cc)
        codes += [c for c in hit if c not in codes]
    return counts.select(codes)


def cmd_calibrate(args) -> int:
    from .calibration import calibrate, calibration_summary, check_thresholds
    from .compute import write_table
    from .errors import ParameterError

    # every parameter is checked before any data are read or anything is written
    thresholds = check_thresholds(args.thresholds)
    name = args.out.name.lower()
    if not (name.endswith(".parquet") or name.endswith(".csv") or name.endswith(".csv.gz")):
        raise ParameterError(f"output {args.out}: use a .parquet, .csv or .csv.gz extension")
    ptable_opts = args.ptable_D is not None or args.ptable_js is not None or args.pstay is not None
    if args.family == "generic" and ptable_opts and args.ptable_D is None:
        raise ParameterError("--ptable-js/--pstay need --ptable-D (the p-table family's maximum deviation)")
    if args.family == "ptable" or args.ptable_D is not None:
        if args.ptable_D is None:
            raise ParameterError("--family ptable needs --ptable-D (maximum deviation)")
        from .calibration import PTableFamily

        family = PTableFamily(args.ptable_D, args.ptable_js or 0, args.pstay)
    else:
        family = "generic"
    counts = _select(_load_counts(args.dataset), args.regions, args.countries)
    t0 = time.perf_counter()
    df = calibrate(counts, thresholds, family=family, granularity=args.granularity, indicators=args.indicators, e_ages=args.e_ages)
    out = write_table(df, args.out)
    dt = time.perf_counter() - t0
    fam = df.attrs.get("family", "generic")
    extra = ""
    if "v_top" in df.attrs:
        extra = f"; family V range [{df.attrs['v_lo']:.6g}, {df.attrs['v_top']:g}], tables constant from V = {df.attrs['v_sat']:.6g}"
    print(f"{len(df)} rows ({counts.name}: {len(counts.regions)} regions; {fam}{extra}) -> {out}  [{dt:.1f} s]")
    summ = calibration_summary(df)
    for ind, g in summ.groupby("indicator", sort=False):
        parts = []
        for r in g.itertuples():
            if not r.region:
                txt = f"A<={r.threshold:g}: -"
            elif r.V_max_min == float("inf"):
                txt = f"A<={r.threshold:g}: every V (no table of the family reaches it)"
            else:
                txt = f"A<={r.threshold:g}: {r.V_max_min:.4g} ({r.region} {r.sex})"
            if r.infeasible:
                txt += f", no table of the family meets it for {r.infeasible} of {r.items} (e.g. {r.infeasible_region} {r.infeasible_sex})"
            parts.append(txt)
        print(f"{ind}: smallest V_max by threshold -- " + "; ".join(parts))
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

    s = sub.add_parser("calibrate", help="largest noise variance V keeping the noise admixture below thresholds -> table")
    s.add_argument("--dataset", required=True, help="dataset name (see `demonoise datasets`) or a counts template CSV file")
    s.add_argument("--thresholds", nargs="+", type=_number, default=[0.1, 0.5, 1.0], metavar="A",
                   help="admixture thresholds as fractions in (0, 10] (default 0.1 0.5 1)")
    s.add_argument("--family", choices=["generic", "ptable"], default="generic",
                   help="generic integer noise of variance V (closed form, default) or a p-table family (numeric)")
    s.add_argument("--ptable-D", type=int, default=None, metavar="D", help="p-table family: maximum deviation (implies --family ptable)")
    s.add_argument("--ptable-js", type=int, default=None, metavar="JS", help="p-table family: no results in 1..js (default 0)")
    s.add_argument("--pstay", type=float, default=None, help="p-table family: preset probability of no change")
    s.add_argument("--granularity", default="single", choices=["single", "5y", "5y-infant"], help="publication granularity of the noised cells")
    s.add_argument("--indicators", nargs="+", default=None, choices=["asfr", "tfr", "asmr", "e"], help="default: all the dataset supports")
    s.add_argument("--e-ages", nargs="+", type=int, default=[0, 65], metavar="K", help="ages k of e_k (default 0 65)")
    s.add_argument("--countries", nargs="+", metavar="CC", help="restrict to these countries")
    s.add_argument("--regions", nargs="+", metavar="CODE", help="restrict to these regions")
    s.add_argument("--out", required=True, type=Path, help="output file: .parquet, .csv or .csv.gz (written atomically)")
    s.set_defaults(func=cmd_calibrate)
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
