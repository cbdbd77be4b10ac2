"""Command line: a thin layer over the library (``demonoise --help``, ``demonoise CMD --help``).

Exit status: 0 on success, 2 on bad input or parameters (one line naming what is wrong, an
output location that cannot be written included), 1 on a failed batch or a failing system,
130 when interrupted (Ctrl-C, SIGTERM or SIGHUP: one line, nothing half-written, no process left).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import signal
import sys
import time
import warnings
from collections import defaultdict
from importlib import import_module
from pathlib import Path

from demonoise.core.errors import DemonoiseError, ParameterError
from demonoise.core.vocabulary import CALIBRATION_THRESHOLDS, GRANULARITIES, INDICATORS, SEXES
from demonoise.runtime.budget import MonteCarloProgress, processes
from demonoise.runtime.cluster import ClusterLost
from demonoise.runtime.signals import SIGNALS, interruptible

__all__ = ["main", "build_parser"]


def _checked(parse, *checks):
    """An argparse type: ``parse(s)``, then each ``(ok, message)`` check (``message`` formatted with ``s``, ``v``)."""

    def check(s: str):
        try:
            v = parse(s)
            for ok, message in checks:
                if not ok(v):
                    raise ParameterError(message.format(s=s, v=v))
        except ParameterError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
        except ValueError:  # from parse
            raise argparse.ArgumentTypeError(f"not {'an integer' if parse is int else 'a number'}: {s!r}") from None
        return v

    return check


def _int_option(lo: int, hi: int | None = None, most: str = ""):
    """An integer in ``lo..hi`` (``most``: the message's words for ``hi``)."""
    low = (lambda v: v >= lo, f"must be >= {lo}, got {{v}}")
    return _checked(int, low, (lambda v: hi is None or v <= hi, f"must be at most {most or hi}, got {{s}}"))


def _within(most: float, message: str):
    """A number in (0, ``most``] (nan and inf refused: no comparison holds), else ``message``."""
    return _checked(float, (lambda v: 0 < v <= most, message))


_float = _checked(float)
_nonneg_int = _int_option(0)
_mc_replicates = _int_option(0, 10**9, "10^9 replicates (a Monte Carlo check needs 10^3 to 10^5)")
_cell_keys = _int_option(1, 10**7, "10^7 cell keys (Eurostat's tables use 10^5; the table holds K per count class)")
#: A noise variance: the library's check (finite, > 0, at most its limit), imported when read (numpy).
_variance = _checked(lambda s: import_module("demonoise.noise.ptable").check_variance(float(s)))
_population = _within(1e10, "a size-class edge is a population and must be a finite number in (0, 10^10], got {s}")
_workers = _checked(
    int,
    (lambda v: v >= 1, "workers must be >= 1, got {v}"),
    (lambda v: v <= 64, "workers must be <= 64: each worker is a process with its own Python and data, got {v}"),
)


# --------------------------------------------------------------------------- commands
def cmd_datasets(args) -> int:
    """List the available datasets (embedded, registered, cached) with their provenance; add one."""
    from demonoise.io import datasets as reg

    if args.datasets_command == "add":
        info = reg.add(args.name, args.file, source=args.source)
        print(f"{info.name}: {info.regions} regions, {info.year}; {info.label}")
        print(f"{info.name}: registered ({info.details[0]}); use it as --dataset {info.name}")
    elif args.datasets_command == "remove":
        reg.remove(args.name)
        print(f"{args.name}: removed")
    elif not (rows := reg.available()):
        print("no datasets available")
    else:
        w = max(len(r.name) for r in rows)
        for r in rows:
            print(f"{r.name:<{w}}  {r.kind:<8}  {r.year}  {r.regions:>4} regions  {r.label}")
            more = [f"what it means: {r.implications}"] if r.implications else []
            for line in more + (r.details if args.verbose else []):
                print(f"{'':<{w}}    {line}")
    return 0


def _load_counts(args, panel: bool = False):
    """``--dataset``'s counts (``panel``: its panel), restricted to ``--regions``/``--countries``/``--level``."""
    from demonoise.io.datasets import load, load_panel

    counts = (load_panel if panel else load)(args.dataset)
    if args.regions or args.countries:
        codes = [*(args.regions or []), *(c for cc in args.countries or [] for c in counts.select(country=cc).codes)]
        counts = counts.select(list(dict.fromkeys(codes)))
    if getattr(args, "level", None) is not None:
        counts = counts.select(level=args.level)
    return counts


def _given(args, names: str) -> dict:
    """The options ``names`` (space-separated) as keywords of the library call."""
    return {name: getattr(args, name) for name in names.split()}


def cmd_compute(args) -> int:
    """Analytic error propagation (+ Monte Carlo) -> tidy results table."""
    from demonoise.analysis.compute import compute, noise_settings, summarise
    from demonoise.analysis.results import check_confidence

    _check_table_out(args)
    check_confidence(args.confidence)
    with _cluster(args) as cluster:  # a --scheduler is reached (or refused) before any work
        counts = _load_counts(args)
        settings = noise_settings(args.V or (), D=args.D, ptables=args.ptable or ())
        t0 = time.perf_counter()
        names = [s.model.name for s in settings]
        progress = MonteCarloProgress("demonoise compute", names, len(counts.regions), processes(cluster), args.yes)
        kw = _given(args, "granularity indicators mc seed zero_floor confidence")
        df = compute(counts, settings, progress=progress, cluster=cluster, **kw)
    _write_table(df, args, counts, t0, counts.provenance.status_label)
    if len(summ := summarise(df)):
        print(summ.to_string(index=False, float_format="{:.4g}".format))
    return 0


def _check_table_out(args) -> None:
    """The output table of a table command (and its ``--note``), checked before any work."""
    from demonoise.analysis.compute import check_table_path
    from demonoise.core.atomic import check_output_file

    check_output_file(check_table_path(args.out))
    if getattr(args, "note", None) is not None:
        check_output_file(args.note)


def _write_table(df, args, data, t0: float, what: str, note: str = "") -> None:
    """Write the table and its ``--note`` (both or neither: the note's temporary file, the table,
    then the note in place); say what it wrote, from what (``data``, ``what``), in how long."""
    from demonoise.analysis.compute import write_results
    from demonoise.core.atomic import atomic_path

    note_path = getattr(args, "note", None)
    with atomic_path(note_path) if note_path is not None else contextlib.nullcontext() as tmp:
        if tmp is not None:
            tmp.write_text(note + "\n", encoding="utf-8")
        out = write_results(df, args.out)
    dt = time.perf_counter() - t0
    print(f"{len(df)} rows ({data.name}: {len(data.regions)} regions; {what}) -> {out}  [{dt:.1f} s]")


def cmd_fetch(args) -> int:
    """Download real Eurostat tables for a year (cached) -> dataset eurostat-<year>; for
    consecutive years -> the multi-year dataset eurostat-<first>-<last>."""
    from tqdm.auto import tqdm

    from demonoise.io.fetch import fetch_counts, fetch_panel
    from demonoise.io.options import FetchOptions

    def bar(label: str, total: int | None):  # per download, on stderr; hidden when it is not a terminal
        kw = dict(unit="B", unit_scale=True, unit_divisor=1024, file=sys.stderr, leave=False, disable=None)
        return tqdm(total=total, desc=label, **kw)

    options = FetchOptions(progress=bar, **_given(args, "cache_dir base_url refresh offline timeout deadline endpoint"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fetch, years = (fetch_counts, args.year[0]) if len(args.year) == 1 else (fetch_panel, args.year)
        res = fetch(years, args.countries, options, skip_incomplete=args.skip_incomplete)
        comp = {} if args.no_comparison else _fetch_comparison(args, res.years, options)
    for w in caught:
        print(f"demonoise fetch: warning: {' '.join(str(w.message).split())}", file=sys.stderr)
    _print_fetch(res, comp)
    return 0


def _fetch_comparison(args, years, options) -> dict[str, str]:
    """Eurostat's own indicators of each year, for comparison; a missing one is not fatal."""
    from demonoise.core.errors import FetchError
    from demonoise.io.eurostat_api import COMPARISON_TABLES
    from demonoise.io.fetch import comparison_tables

    comp: dict[str, str] = {}
    for code in COMPARISON_TABLES:
        for year in years:
            key = code if len(years) == 1 else f"{code} {year}"
            try:
                df = comparison_tables(year, args.countries, options, tables=(code,))[code]
                comp[key] = f"{len(df)} values, downloaded {df.attrs.get('extracted', 'unknown')}"
            except FetchError as e:
                comp[key] = f"not available ({e})"
    return comp


def _print_fetch(res, comp: dict[str, str]) -> None:
    from demonoise.io.assemble import table_years, years_text
    from demonoise.io.eurostat_api import COUNT_TABLES

    c, p = res.counts, res.panel
    n0 = sum(r.level == 0 for r in c.regions)
    n2 = len(c.regions) - n0
    what = f"reference year {c.year}"
    if p is not None:
        stocks = f"population on 1 January {years_text(p.stock_years)}: each stock one cell"
        what = f"reference years {years_text(p.years)} ({stocks}, the end of one year and the start of the next)"
    print(
        f"{(p or c).name}: {len(c.regions)} regions ({n0} {'country' if n0 == 1 else 'countries'}, "
        f"{n2} NUTS 2 region{'' if n2 == 1 else 's'}), {what}"
    )
    for measure, codes in COUNT_TABLES.items():
        r, n = (res.entries[code] for code in codes)
        when = " / ".join(dict.fromkeys(f"{e.extracted}" for e in (r, n)))
        upd = " / ".join(dict.fromkeys(e.updated or "unknown" for e in (r, n)))
        ys = f" {years_text(table_years(measure, res.years))}" if p is not None else ""
        print(f"  {measure:<11} {' + '.join(codes)}{ys}: downloaded {when}; Eurostat update {upd}")
    rows = [("comparison", f"{code}: {text}") for code, text in comp.items()]
    if res.skipped:
        rows.append(("skipped", "; ".join(f"{k} ({', '.join(v)})" for k, v in res.skipped.items())))
    ignored = ("ignored", res.ignored_codes, "NUTS 2 code(s) outside NUTS 2021")
    absent = ("absent", res.absent, f"NUTS 2021 region(s) without population data for {years_text(res.years)}")
    for label, codes, what in (ignored, absent):
        if codes:
            rows.append((label, f"{len(codes)} {what}: {', '.join(codes[:10])}{' ...' if len(codes) > 10 else ''}"))
    for label, text in rows:
        print(f"  {label:<11} {text}")
    n_dl = len(res.downloaded)
    print(f"cache: {res.cache} ({len(res.entries)} tables: {n_dl} downloaded, {len(res.entries) - n_dl} reused)")


def _parameter_value(text: str):
    """A ``-p NAME VALUE`` value: JSON if it parses (``4``, ``[1, 5]``, ``null``), else the text (``BE34``)."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: nested too deeply to be a parameter value
        return text


def cmd_notebook(args) -> int:
    """Execute an extra notebook (whatif, teaching) with parameters and render it to HTML/PDF."""
    from demonoise.core.atomic import check_output_dir
    from demonoise.report.batch.extras import extra_run, render_further

    params = {name: _parameter_value(value) for name, value in args.parameter or []}  # names checked by extra_run
    check_output_dir(args.out_dir)
    res = render_further(extra_run(args.name, params, args.out_dir), pdf=not args.no_pdf, force=args.force)
    print(f"{args.name}: {res.html} ({res.html_bytes / 1e6:.1f} MB, {res.html_seconds:.1f} s)")
    if res.pdf is not None:
        print(f"{args.name}: {res.pdf} ({res.pdf_seconds:.1f} s)")
    elif not args.no_pdf:
        print(f"{args.name}: {res.pdf_error}", file=sys.stderr)


def cmd_overview(args) -> int:
    """The Europe overview report: every NUTS 2 region, the V's side by side -> DIR/overview.html (+ PDF)."""
    from demonoise.core.atomic import check_output_dir
    from demonoise.io.datasets import as_name
    from demonoise.report.batch.extras import overview_run, render_further

    check_output_dir(args.out_dir)
    t0 = time.perf_counter()
    dataset = as_name(args.dataset, origin="demonoise overview")
    options = {"dataset": dataset, "ptables": args.ptable or (), **_given(args, "V countries sex mc")}
    with _cluster(args) as cluster:
        run = overview_run(options, args.out_dir, store=args.store, force=args.force, cluster=cluster)
        r = render_further(run, pdf=not args.no_pdf, force=args.force, cluster=cluster)
    pdf = f", {r.pdf}" if r.pdf else f" ({r.pdf_error})" if r.pdf_error else ""
    print(f"Europe overview -> {r.html}{pdf}  [{time.perf_counter() - t0:.1f} s]")
    return 0


def cmd_report(args) -> int:
    """Quality reports: notebooks per country and V -> HTML/PDF reports + output/index.html."""
    from demonoise.report.batch.params import load_params
    from demonoise.report.batch.stages import STAGES, run_reports

    params = load_params(args.params)
    with _cluster(args, params.scheduler) as cluster:
        pdf = False if args.no_pdf else None
        rep = run_reports(params, args.out_dir, pdf=pdf, cluster=cluster, **_given(args, "force workers yes"))
    t, pages = rep.timings, sum(o.pages for o in rep.outcomes.values())
    stages = ", ".join(f"{k} {t[k]:.1f} s" for k in STAGES)
    work = {"compute": "compute_work", "notebooks": "notebooks", "HTML": "html", "PDF": "pdf"}
    print(rep.summary())
    print(f"  stages: {stages} (work: {', '.join(f'{w} {t[k]:.1f} s' for w, k in work.items())}, {pages} pages)")
    for note in rep.notes:
        print(f"  note: {note}")
    for r, o in rep.failed:
        print(f"  FAILED {r.label}: {(o.error or 'failed').splitlines()[0]}", file=sys.stderr)
    print(f"index: {rep.index}")
    return 0 if rep.ok else 1


def _cluster(args, default_address: str | None = None):
    """``--scheduler`` (else ``default_address``)'s cluster, connected now (a bad address fails
    before any work); else a local one of ``--workers``, started when something fans out."""
    from demonoise.runtime.budget import local_workers
    from demonoise.runtime.cluster import Cluster

    address = args.scheduler if args.scheduler is not None else default_address  # "" is refused, not local
    workers = args.workers if address else local_workers(args.workers, f"demonoise {args.command}")
    cluster = Cluster(address, workers=workers)
    if cluster.address:
        cluster.client()
    return cluster


def _print_moments(table, V=None, why: str = "") -> None:
    """The table's description and per-count moments; a warning (then ``why``) where V is not reached."""
    V = table.V if V is None else V
    nv = "?" if V is None else f"{V:g}"
    print(_describe_table(table, nv))
    print(f"{'i':>4}  {'bias':>11}  {'variance':>11}  {'E v^2':>11}  {'P(v=0)':>9}  {'nominal V':>9}  reached?")
    warn = ["nominal V unknown (the file does not store it): pass --V to check it"] if V is None else []
    for r in table.moments(table.resolution, None if V is None else float(V)).itertuples():
        label, above = f"{r.i}" if r.i < table.I else f">={r.i}", r.variance_minus_V
        if r.i == 0:
            reached = "zeros stay zero"
        elif V is None:
            reached = "?"
        elif r.V_reached:
            reached = "yes" if above <= table.resolution else f"yes (above V by {above:.4g})"
        else:
            reached = f"NO (short by {-above:.4g})"
            warn.append(f"V = {nv} is not reached at count {label}: variance {r.variance:.6g}")
        mean = round(float(r.mean), 12) + 0.0  # show 5.6e-17 as 0
        print(
            f"{label:>4}  {mean:>11.6g}  {r.variance:>11.6g}  {r.second_moment:>11.6g}  {r.p_stay:>9.6f}  {nv:>9}  "
            f"{reached}"
        )
    for w in warn:
        print(f"WARNING: {w}{why}", file=sys.stderr)


def _describe_table(table, nv: str) -> str:
    """One line: the table's classes, largest noise, parameters (``nv``: its V) and source."""
    parts = [
        f"{table.label}: classes 0..{table.I} (the last stands for every count >= {table.I}), max |noise| "
        f"{table.max_deviation}",
        table.n_keys and f"K = {table.n_keys} cell keys",
        table.D is not None and f"D = {table.D}",
        nv != "?" and f"V = {nv}",
        table.js and f"js = {table.js}",
        table.pstay is not None and f"pstay = {', '.join(f'{x:g}' for x in table.pstay)}",
        f"source: {table.source}",
    ]
    return "; ".join(p for p in parts if p)


def cmd_ptable_build(args) -> int:
    """Build a p-table as the R package ptable does (maximum entropy) and write it."""
    from demonoise.analysis.ptables import write_ptable
    from demonoise.core.atomic import atomic_path, check_output_file
    from demonoise.noise.ptable import build_ptable

    check_output_file(args.out)
    pstay = args.pstay[0] if args.pstay and len(args.pstay) == 1 else args.pstay
    table = build_ptable(args.D, args.V, args.js, pstay, label=args.label, warn=False)  # reported below, per count
    with atomic_path(args.out) as tmp:
        write_ptable(table, tmp, args.format, K=args.K)
    why = (
        " -- the construction treats V as an upper bound (as the R package ptable does) and keeps the "
        "maximum-entropy law of the other constraints, whose variance is smaller here"
    )
    _print_moments(table, why=why)
    keys = f", K = {args.K or 100000} cell keys" if args.format == "eurostat" else ""
    print(f"-> {args.out} ({args.format} format{keys})")
    return 0


def cmd_ptable_show(args) -> int:
    """Per-count moments of a p-table: bias, variance, nominal V, reached?"""
    from demonoise.analysis.ptables import resolve_ptable

    _print_moments(resolve_ptable(args.table), args.V)
    return 0


def cmd_compare(args) -> int:
    """Noise sd under the generic model vs under a p-table, per region and indicator."""
    from demonoise.analysis.ptables import resolve_ptable
    from demonoise.uncertainty.comparison import compare_noise, comparison_note, summarise_comparison

    _check_table_out(args)
    with _cluster(args) as cluster:  # a --scheduler is reached (or refused) before any work
        counts = _load_counts(args)
        table = resolve_ptable(args.ptable)
        t0 = time.perf_counter()
        names = [table.label, "generic noise with a zero floor"]
        progress = MonteCarloProgress("demonoise compare", names, len(counts.regions), processes(cluster), args.yes)
        kw = _given(args, "V granularity indicators e_ages mc seed size_edges")
        df = compare_noise(counts, table, progress=progress, cluster=cluster, **kw)
    note = comparison_note(df)
    _write_table(df, args, counts, t0, counts.provenance.status_label, note)
    summ = summarise_comparison(df)
    birth_labels = set(df.loc[(df.indicator == "e") & (df.age == 0), "age_group"])  # Y_LT1, or Y_LT5 for 5-year cells
    head = summ[(summ.indicator == "tfr") | ((summ.indicator == "e") & summ.age_group.isin(birth_labels))]
    print((head if len(head) else summ).to_string(index=False, float_format="{:.3f}".format))
    print()
    print(note)


def cmd_calibrate(args) -> int:
    """Largest noise variance V keeping the noise admixture below thresholds -> table."""
    from demonoise.uncertainty.calibration import PTableFamily, calibrate, calibration_summary, check_thresholds

    # every parameter is checked before any data are read or anything is written
    thresholds = check_thresholds(args.thresholds)
    _check_table_out(args)
    if args.ptable_D is None and (args.family == "ptable" or args.ptable_js is not None or args.pstay is not None):
        needs = "--family ptable needs" if args.family == "ptable" else "--ptable-js/--pstay need"
        raise ParameterError(f"{needs} --ptable-D (the p-table family's maximum deviation)")
    family = "generic" if args.ptable_D is None else PTableFamily(args.ptable_D, args.ptable_js or 0, args.pstay)
    counts = _load_counts(args)
    t0 = time.perf_counter()
    df = calibrate(counts, thresholds, family=family, **_given(args, "granularity indicators e_ages"))
    a = df.attrs
    what = a.get("family", "generic")
    if "v_top" in a:
        what += f"; family V range [{a['v_lo']:.6g}, {a['v_top']:g}], tables constant from V = {a['v_sat']:.6g}"
    _write_table(df, args, counts, t0, what)
    for ind, g in calibration_summary(df).groupby("indicator", sort=False):
        print(f"{ind}: smallest V_max by threshold -- " + "; ".join(map(_smallest_v_max, g.itertuples())))
    return 0


def _smallest_v_max(r) -> str:
    """One threshold of a line of ``calibrate``: the smallest V_max, where, and where none is."""
    every = "every V (no table of the family reaches it)"
    text = "-" if not r.region else every if r.V_max_min == math.inf else f"{r.V_max_min:.4g} ({r.region} {r.sex})"
    if r.infeasible:
        text += f", no table of the family meets it for {r.infeasible} of {r.items} "
        text += f"(e.g. {r.infeasible_region} {r.infeasible_sex})"
    return f"A<={r.threshold:g}: {text}"


def cmd_change(args) -> int:
    """Change of every indicator between two years (or pooled windows): sd, z and detectable change."""
    from demonoise.analysis.change import change_table
    from demonoise.analysis.compute import noise_settings
    from demonoise.runtime import budget

    _check_table_out(args)
    panel = _load_counts(args, panel=True)
    settings = noise_settings(args.V or (), D=args.D, ptables=args.ptable or ())
    kw = _given(args, "year_from year_to granularity indicators seed")
    if args.mc:  # sized by a probe of the first setting and window before it runs
        per = budget.probe_seconds(lambda mc: change_table(panel, settings[:1], pools=args.pools[:1], mc=mc, **kw))
        runs = len(settings) * len(args.pools)
        size = f"{runs} run(s) x {args.mc} replicates over {len(panel.regions)} regions"
        budget.check_budget(per * args.mc * runs, size, "in this process", args.yes)
        budget.say("demonoise change", f"Monte Carlo {size}, estimated {budget.duration(per * args.mc * runs)}")
    t0 = time.perf_counter()
    progress = budget.Ticker("demonoise change", args.mc) if args.mc else None
    df = change_table(panel, settings, progress=progress, **kw, **_given(args, "pools alpha power mc"))
    _write_table(df, args, panel, t0, panel.provenance.status_label)
    e0 = df[(df["indicator"] == "e") & (df["age"] == 0) & (df["sex"] == "T")]
    if len(e0):
        cols = ["region", "setting", "pool", "window_from", "window_to", "change", "sd_noise", "sd_poisson"]
        cols += ["z_total", "z_poisson", "mdc_total", "mdc_poisson"]
        print(f"e0, both sexes (MDC at {args.alpha:g} two-sided, power {args.power:g}):")
        print(e0[cols].to_string(index=False, float_format="{:.3f}".format))
    return 0


# --------------------------------------------------------------------------- the parser
def build_parser() -> argparse.ArgumentParser:
    from demonoise.core.version import __version__

    p = argparse.ArgumentParser(
        prog="demonoise", description="How much noise-based disclosure control degrades demographic indicators."
    )
    p.add_argument("--version", action="version", version=f"demonoise {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    s = _command(sub, cmd_datasets)
    s.add_argument("-v", "--verbose", action="store_true", help="show provenance details")
    dsub = s.add_subparsers(dest="datasets_command")
    a = dsub.add_parser("add", help="register a counts file by name (validated once, packed into the user cache)")
    a.add_argument("name", help="the name --dataset will take (letters, digits, '_', '.', '-')")
    a.add_argument("file", type=Path, help="counts template file (docs/csv_template.md)")
    a.add_argument("--source", help="who published the counts (default: the file's '# source:' line)")
    a = dsub.add_parser("remove", help="remove a registered dataset from the user cache")
    a.add_argument("name")

    s = _command(sub, cmd_compute)
    _data_args(s)
    mc = "Monte Carlo replicates for e and TFR (default 0: analytic only)"
    _add(s, "--V --D --ptable --granularity --indicators --countries --regions --mc --seed", mc=mc)
    s.add_argument(
        "--zero-floor", action="store_true", help="Monte Carlo: floor noisy counts at zero (a different noise model)"
    )
    s.add_argument(
        "--confidence",
        nargs="+",
        type=_float,
        default=[0.95],
        metavar="C",
        help="Monte Carlo: levels of the quantile intervals kept, in (0, 1) (default 0.95)",
    )
    _add(s, "--out --scheduler --workers --yes")

    s = _command(sub, cmd_change)
    _data_args(s)
    s.add_argument("--from", dest="year_from", required=True, type=int, metavar="YEAR", help="earlier year")
    s.add_argument("--to", dest="year_to", required=True, type=int, metavar="YEAR", help="later year")
    s.add_argument(
        "--pool",
        dest="pools",
        nargs="+",
        type=_int_option(1, 50),
        default=[1],
        metavar="K",
        help="window length(s): compare the K years ending with --from and --to (default 1: year on year)",
    )
    _add(s, "--V --D --ptable --granularity --indicators --countries --regions")
    s.add_argument("--alpha", type=_float, default=0.05, help="two-sided significance level (default 0.05)")
    s.add_argument("--power", type=_float, default=0.8, help="power of the smallest detectable change (default 0.8)")
    _add(s, "--mc --seed --yes --out", mc="Monte Carlo replicates (e and TFR)")

    s = _command(sub, cmd_fetch)
    s.add_argument(
        "--year",
        required=True,
        nargs="+",
        type=int,
        metavar="T",
        help="reference year t (population on 1 January t and t+1), or consecutive years t0 .. t1 "
        "(population on 1 January t0 .. t1+1, deaths and births t0 .. t1)",
    )
    s.add_argument("--countries", nargs="+", metavar="CC", help="NUTS country codes (default: every country)")
    g = s.add_mutually_exclusive_group()
    g.add_argument("--refresh", action="store_true", help="download again even if cached")
    g.add_argument("--offline", action="store_true", help="use the cache only; fail if a table is not cached")
    s.add_argument("--cache-dir", type=Path, help="cache directory (default: $DEMONOISE_CACHE or ~/.cache/demonoise)")
    s.add_argument("--base-url", help="API base URL (default: $DEMONOISE_EUROSTAT_URL or Eurostat's dissemination API)")
    s.add_argument(
        "--timeout",
        type=_within(3600, "timeout must be a number of seconds in (0, 3600], got {s}"),
        default=60.0,
        help="seconds allowed to connect and for each read (default 60)",
    )
    s.add_argument(
        "--deadline",
        type=_within(86400, "deadline must be a number of seconds in (0, 86400], got {s}"),
        default=600.0,
        help="seconds one table's download may take in all, retries and their waits included (default 600)",
    )
    s.add_argument(
        "--endpoint",
        choices=["json", "tsv"],
        default="json",
        help="json: filtered JSON-stat from the statistics API (default); tsv: full gzipped TSV datasets",
    )
    s.add_argument(
        "--skip-incomplete",
        action="store_true",
        help="drop regions lacking a table or ages (listed) instead of failing",
    )
    s.add_argument(
        "--no-comparison", action="store_true", help="do not fetch the comparison tables demo_r_mlifexp, demo_r_find2"
    )

    s = sub.add_parser("ptable", help="perturbation tables of the cell key method: build, show")
    psub = s.add_subparsers(dest="ptable_command", required=True)
    b = _command(psub, cmd_ptable_build, "build")
    b.add_argument("--D", type=int, required=True, help="maximum deviation (1 to 10^4)")
    b.add_argument("--V", type=_variance, required=True, help="noise variance (an upper bound in the construction)")
    b.add_argument("--js", type=int, default=0, help="perturbed values 1..js are not allowed (default 0)")
    b.add_argument(
        "--pstay",
        type=float,
        nargs="+",
        metavar="P",
        help="preset probability of no change (one value, or one per count class)",
    )
    b.add_argument(
        "--format",
        default="transition",
        choices=["transition", "eurostat"],
        help="transition: R ptable layout i,j,p,v,p_int_lb,p_int_ub,type (default); "
        "eurostat: pcv;ckey;pvalue with K integer keys",
    )
    b.add_argument("--K", type=_cell_keys, help="number of cell keys for --format eurostat (default 100000)")
    b.add_argument("--label", default="", help="short name used in results tables")
    b.add_argument(
        "--out", required=True, type=Path, metavar="FILE", help="output file (.gz: gzipped); written atomically"
    )
    w = _command(psub, cmd_ptable_show, "show")
    w.add_argument("table", help="an embedded table (v01, v03, v04) or a p-table file (either format)")
    w.add_argument("--V", type=_variance, help="nominal V to check against (files do not store it)")

    s = _command(sub, cmd_compare)
    _data_args(s)
    s.add_argument(
        "--ptable", required=True, metavar="TABLE", help="an embedded table (v01, v03, v04) or a p-table file"
    )
    s.add_argument("--V", type=_variance, help="variance of the generic model (default: the table's nominal V)")
    indicators = "default: e and, when the dataset has births, tfr"
    _add(s, "--granularity --indicators --e-ages --countries --regions", indicators=indicators)
    s.set_defaults(indicators=None)
    s.add_argument(
        "--level", type=int, choices=[0, 1, 2, 3], help="restrict to one NUTS level (0: countries, 2: NUTS 2)"
    )
    s.add_argument(
        "--size-classes",
        dest="size_edges",
        nargs="+",
        type=_population,
        default=[200_000, 1_000_000],
        metavar="POP",
        help="population size-class edges (default 200000 1000000)",
    )
    mc = "noise-only Monte Carlo replicates: p-table and generic noise with a zero floor (default 0)"
    _add(s, "--mc --seed --out", mc=mc)
    s.add_argument(
        "--note",
        type=Path,
        metavar="FILE",
        help="also write the closing note to this text file (both files are written, or neither)",
    )
    _add(s, "--scheduler --workers --yes")

    s = _command(sub, cmd_calibrate)
    _data_args(s)
    s.add_argument(
        "--thresholds",
        nargs="+",
        type=_float,
        default=list(CALIBRATION_THRESHOLDS),
        metavar="A",
        help="admixture thresholds as fractions in (0, 10] "
        f"(default {' '.join(f'{a:g}' for a in CALIBRATION_THRESHOLDS)})",
    )
    s.add_argument(
        "--family",
        choices=["generic", "ptable"],
        default="generic",
        help="generic integer noise of variance V (closed form, default) or a p-table family (numeric)",
    )
    s.add_argument(
        "--ptable-D", type=int, metavar="D", help="p-table family: maximum deviation (implies --family ptable)"
    )
    s.add_argument(
        "--ptable-js", type=_nonneg_int, metavar="JS", help="p-table family: no results in 1..js (default 0)"
    )
    s.add_argument("--pstay", type=float, help="p-table family: preset probability of no change")
    indicators = "default: all the dataset supports"
    _add(s, "--granularity --indicators --e-ages --countries --regions --out", indicators=indicators)
    s.set_defaults(indicators=None)

    s = _command(sub, cmd_notebook)
    s.add_argument("name", help="notebook name: whatif or teaching (notebooks/<name>.ipynb)")
    s.add_argument(
        "-p",
        "--parameter",
        nargs=2,
        action="append",
        metavar=("NAME", "VALUE"),
        help="papermill parameter; VALUE is read as JSON if it parses (4, 0.5, [1, 5], null), else as text (BE34)",
    )
    _document_args(s, "execute even if the executed notebook is up to date", "--out")

    s = _command(sub, cmd_overview)
    _data_args(s, default="ess-2023")
    s.add_argument(
        "--V", nargs="+", type=_variance, default=[1.0, 5.0], metavar="V", help="noise variances (default 1 5)"
    )
    s.add_argument("--countries", nargs="+", metavar="CC", help="restrict to these countries' NUTS 2 regions")
    _add(s, "--ptable", ptable=" shown beside the V's")
    s.add_argument(
        "--sex",
        default="worst",
        choices=[*SEXES, "worst"],
        help="sex of the mortality indicators (default worst: per region the worst of F, M and T, as the reports)",
    )
    _add(s, "--mc", mc="Monte Carlo replicates for a check of e0/TFR (default 0)")
    s.add_argument("--store", type=Path, help="results store (default OUT_DIR/results)")
    _document_args(s, "recompute and re-execute even if up to date", "--out")
    _add(s, "--scheduler --workers", scheduler="the Monte Carlo blocks and the notebook")

    s = _command(sub, cmd_report)
    s.add_argument("--params", required=True, type=Path, help="YAML params file, e.g. params/default.yaml")
    _document_args(s, "execute and render everything again, even if up to date", "--output", "--out")
    scheduler = "the Monte Carlo blocks, notebooks and renderings (also: scheduler: in the params)"
    yes = "a batch above 200 notebook executions or an estimated 30 minutes"
    _add(s, "--scheduler --workers --yes", scheduler=scheduler, yes=yes)
    return p


def _command(sub, func, name: str | None = None) -> argparse.ArgumentParser:
    """The subcommand ``name`` (default: ``func``'s without ``cmd_``), its help ``func``'s docstring."""
    doc = " ".join(func.__doc__.split()).removesuffix(".")
    s = sub.add_parser(name or func.__name__.removeprefix("cmd_"), help=doc[0].lower() + doc[1:])
    s.set_defaults(func=func)
    return s


#: Options several commands share (:func:`_add`), by flag: ``add_argument``'s keywords.
_SHARED = {
    "--V": dict(nargs="+", type=_variance, metavar="V", help="noise variance(s) of the generic model, e.g. --V 1 5"),
    "--D": dict(type=int, help="maximum deviation of the generic noise (default: unbounded)"),
    "--ptable": dict(nargs="+", metavar="TABLE", help="p-table(s){ptable}: an embedded name (v01, v03, v04) or a file"),
    "--granularity": dict(
        default="single",
        choices=GRANULARITIES,
        help="publication granularity of the noised cells (default: single, Eurostat's NUTS 2 layout)",
    ),
    "--indicators": dict(nargs="+", default=list(INDICATORS), choices=INDICATORS, help="{indicators}"),
    "--e-ages": dict(nargs="+", type=int, default=[0, 65], metavar="K", help="ages k of e_k (default 0 65)"),
    "--countries": dict(nargs="+", metavar="CC", help="restrict to these countries"),
    "--regions": dict(nargs="+", metavar="CODE", help="restrict to these regions"),
    "--mc": dict(type=_mc_replicates, default=0, metavar="N", help="{mc}"),
    "--seed": dict(type=_nonneg_int, default=20230101, help="seed of the Monte Carlo (default 20230101)"),
    "--out": dict(required=True, type=Path, metavar="FILE", help="output table: .parquet, .csv or .csv.gz (atomic)"),
    "--scheduler": dict(
        metavar="ADDRESS",
        help="run {scheduler} on the Dask cluster of this scheduler, e.g. tcp://10.0.0.5:8786 "
        "(default: a local cluster of --workers processes)",
    ),
    "--workers": dict(
        type=_workers,
        default=2,
        help="worker processes of the local cluster (default 2; 1: everything in this process)",
    ),
    "--yes": dict(
        action="store_true",
        help="run {yes} (refused without it, in one line with its size and estimate; nothing ever prompts)",
    ),
}


def _add(s, flags: str, **words: str) -> None:
    """Add the shared options ``flags`` (space-separated) to ``s``, ``words`` filling their help's ``{...}``."""
    words = {
        "scheduler": "the Monte Carlo blocks",
        "yes": "a Monte Carlo estimated above 30 minutes",
        "indicators": "the indicators (default: all four)",
        **words,
    }
    for flag in flags.split():
        kw = _SHARED[flag]
        s.add_argument(flag, **{**kw, "help": kw.get("help", "").format_map(defaultdict(str, words))})


def _document_args(s, force: str, *former: str) -> None:
    """A document command's ``--out-dir DIR`` (``former`` spellings as aliases), ``--no-pdf``, ``--force``."""
    s.add_argument(
        "--out-dir",
        *former,
        type=Path,
        default="output",
        metavar="DIR",
        help=f"output directory (default: output); --out-dir is the current spelling, {', '.join(former)} "
        "still accepted (former spelling)",
    )
    s.add_argument("--no-pdf", action="store_true", help="HTML only")
    s.add_argument("--force", action="store_true", help=force)


def _data_args(s, default: str | None = None) -> None:
    """``--dataset NAME|FILE`` (required unless ``default``), ``--counts FILE`` its former spelling."""
    g = s.add_mutually_exclusive_group(required=default is None)
    more = f"; default {default}" if default else ""
    g.add_argument(
        "--dataset",
        metavar="NAME|FILE",
        help=f"a dataset name (see `demonoise datasets`) or a counts template file (docs/csv_template.md){more}",
    )
    g.add_argument(
        "--counts", dest="dataset", metavar="FILE", help="former spelling of --dataset FILE (accepted for this release)"
    )
    s.set_defaults(dataset=default)


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        with interruptible(f"demonoise {args.command}: interrupted"):
            return int(args.func(args) or 0)
    except (DemonoiseError, OSError) as e:
        cmd = args.command + (f" {args.ptable_command}" if getattr(args, "ptable_command", None) else "")
        print(f"demonoise {cmd}: error: {e}", file=sys.stderr)
        return 2 if isinstance(e, DemonoiseError) and not isinstance(e, ClusterLost) else 1
    except KeyboardInterrupt:  # Ctrl-C, SIGTERM, SIGHUP: clean-up has run, the line is written
        # Python's finalisation restores the default action of signals with a Python handler:
        # a second one now would end the process by the signal, not status 130. Ignore them
        # (the command line only, argv None; a caller of main() keeps its handlers).
        if argv is None:
            for s in SIGNALS:
                signal.signal(s, signal.SIG_IGN)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
