"""Command line: a thin layer over the library (``demonoise --help``, ``demonoise CMD --help``).

One spelling for the data: ``--dataset NAME|FILE`` in every command that reads counts
(compute, compare, calibrate, change, overview): a dataset name (``demonoise datasets``)
or a counts template file (docs/csv_template.md). ``--counts FILE``, the former spelling
of compute, compare and change, is still accepted for this release.

One spelling for outputs: ``--out FILE`` for the commands that write a table (compute,
compare, calibrate, ptable build), ``--out-dir DIR`` for the commands that write documents
(notebook, overview, report). The former spellings -- ``--out DIR`` of notebook and
overview, ``--output DIR`` of report -- are kept as aliases. Every output location is
checked before any work (:func:`demonoise.core.atomic.check_output_file`).

``compute``, ``compare``, ``overview`` and ``report`` take ``--scheduler ADDRESS`` (run what
fans out on that Dask cluster) and ``--workers N`` (the size of the local cluster used
otherwise; 1: everything in this process).

Every command exits with status 0 on success, 2 on bad input or parameters (a
one-line message naming what is wrong; an output location that cannot be written is
one), 1 on a failed batch, 130 when interrupted (Ctrl-C, SIGTERM or SIGHUP: one line,
nothing half-written, no process left).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import sys
import time
from pathlib import Path

from demonoise.core.errors import DemonoiseError, ParameterError
from demonoise.core.vocabulary import CALIBRATION_THRESHOLDS, GRANULARITIES, INDICATORS, SEXES
from demonoise.runtime.budget import MonteCarloProgress, processes
from demonoise.runtime.cluster import ClusterLost
from demonoise.runtime.signals import interruptible

__all__ = ["main", "build_parser"]


def _checked(parse, *checks):
    """An argparse type: ``parse(s)`` (its ValueError: "not a number/an integer"), then each
    check in turn: ``(ok, message)``, ``message`` formatted with ``s`` and ``v``, or a function
    raising ParameterError (argparse names the option)."""

    def check(s: str):
        try:
            v = parse(s)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not {'an integer' if parse is int else 'a number'}: {s!r}") from None
        try:
            for c in checks:
                if callable(c):
                    c(v)
                elif not c[0](v):
                    raise ParameterError(c[1].format(s=s, v=v))
        except ParameterError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
        return v

    return check


def _check_variance(v: float) -> None:
    """The library's check of a noise variance, imported when an option is read (numpy)."""
    from demonoise.noise.ptable import check_variance

    check_variance(v)


def _int_option(lo: int, hi: int | None = None, why: str = ""):
    """An integer in ``lo..hi``."""
    limit = f"10^{len(str(hi)) - 1}" if hi is not None and hi == 10 ** (len(str(hi)) - 1) > 100 else str(hi)
    return _checked(
        int,
        (lambda v: v >= lo, f"must be >= {lo}, got {{v}}"),
        (lambda v: hi is None or v <= hi, f"must be at most {limit}{why}, got {{s}}"),
    )


def _seconds(what: str, most: float):
    """A number of seconds in (0, ``most``] (nan and inf refused)."""
    return _checked(float, (lambda v: 0 < v <= most, f"{what} must be a number of seconds in (0, {most:g}], got {{s}}"))


_float = _checked(float)
#: A noise variance: finite, > 0 and at most the library's limit (with its reason).
_variance = _checked(float, _check_variance)
#: A population size-class edge: a finite number of people in (0, 10^10].
_population = _checked(
    float,
    (
        lambda v: math.isfinite(v) and 0 < v <= 1e10,
        "a size-class edge is a population and must be a finite number in (0, 10^10], got {s}",
    ),
)
_MAX_WORKERS = 64
_workers = _checked(
    int,
    (lambda v: v >= 1, "workers must be >= 1, got {v}"),
    (
        lambda v: v <= _MAX_WORKERS,
        f"workers must be <= {_MAX_WORKERS}: each worker is a process with its own Python and data, got {{v}}",
    ),
)


# --------------------------------------------------------------------------- commands
def cmd_datasets(args) -> int:
    from demonoise.io import datasets as reg

    if args.datasets_command == "add":
        info = reg.add(args.name, args.file, source=args.source)
        print(f"{info.name}: {info.regions} regions, {info.year}; {info.label}")
        print(f"{info.name}: registered ({info.details[0]}); use it as --dataset {info.name}")
        return 0
    if args.datasets_command == "remove":
        reg.remove(args.name)
        print(f"{args.name}: removed")
        return 0
    rows = reg.available()
    if not rows:
        print("no datasets available")
        return 0
    w = max(len(r.name) for r in rows)
    for r in rows:
        print(f"{r.name:<{w}}  {r.kind:<8}  {r.year}  {r.regions:>4} regions  {r.label}")
        if r.implications:
            print(f"{'':<{w}}    what it means: {r.implications}")
        if args.verbose:
            for line in r.details:
                print(f"{'':<{w}}    {line}")
    return 0


def _load_counts(args, panel: bool = False):
    """The counts (``panel``: the multi-year panel) of ``--dataset NAME|FILE`` (``--counts FILE``
    its former spelling), restricted to ``--regions`` / ``--countries`` / ``--level``; unknown
    regions or countries raise DataError naming them."""
    from demonoise.io.datasets import load, load_panel

    counts = (load_panel if panel else load)(args.dataset)
    regions, countries = getattr(args, "regions", None), getattr(args, "countries", None)
    if regions or countries:
        codes = [*(regions or []), *(c for cc in countries or [] for c in counts.select(country=cc).codes)]
        counts = counts.select(list(dict.fromkeys(codes)))
    if getattr(args, "level", None) is not None:
        counts = counts.select(level=args.level)
    return counts


def cmd_compute(args) -> int:
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
        df = compute(
            counts,
            settings,
            granularity=args.granularity,
            indicators=args.indicators,
            mc=args.mc,
            seed=args.seed,
            zero_floor=args.zero_floor,
            confidence=args.confidence,
            progress=progress,
            cluster=cluster,
        )
    _write_table(df, args, counts, t0, counts.provenance.status_label)
    summ = summarise(df)
    if len(summ):
        _print_table(summ, "{:.4g}")
    return 0


def _check_table_out(args) -> None:
    """The output table of a table command (and its ``--note``), checked before any work."""
    from demonoise.analysis.compute import check_table_path
    from demonoise.core.atomic import check_output_file

    check_output_file(check_table_path(args.out))
    if getattr(args, "note", None) is not None:
        check_output_file(args.note)


def _write_table(df, args, data, t0: float, what: str, note: str = "") -> None:
    """Write the table of a table command, with ``--note`` its note too (both or neither: the
    note to its temporary file first, then the table, then the note in place), and say what
    it wrote, from what (``data``, ``what``), in how long."""
    from demonoise.analysis.compute import write_results
    from demonoise.core.atomic import atomic_path

    note_path = getattr(args, "note", None)
    with atomic_path(note_path) if note_path is not None else contextlib.nullcontext() as tmp:
        if tmp is not None:
            tmp.write_text(note + "\n", encoding="utf-8")
        out = write_results(df, args.out)
    dt = time.perf_counter() - t0
    print(f"{len(df)} rows ({data.name}: {len(data.regions)} regions; {what}) -> {out}  [{dt:.1f} s]")


def _print_table(df, number: str, width: int = 160) -> None:
    import pandas as pd

    with pd.option_context("display.width", width, "display.max_columns", 20):
        print(df.to_string(index=False, float_format=number.format))


def _download_bar(label: str, total: int | None):
    """A tqdm bar per download on stderr (hidden when stderr is not a terminal)."""
    from tqdm.auto import tqdm

    return tqdm(
        total=total,
        desc=label,
        unit="B",
        unit_scale=True,
        unit_divisor=1024,
        file=sys.stderr,
        leave=False,
        disable=None,
    )


def cmd_fetch(args) -> int:
    """``demonoise fetch --year T [T ...]``: one year -> ``eurostat-<T>``; consecutive years
    -> the multi-year dataset ``eurostat-<T0>-<T1>`` (each 1 January stock one cell)."""
    import warnings

    from demonoise.io.fetch import fetch_counts, fetch_panel
    from demonoise.io.options import FetchOptions

    options = FetchOptions(
        cache_dir=args.cache_dir,
        base_url=args.base_url,
        refresh=args.refresh,
        offline=args.offline,
        timeout=args.timeout,
        deadline=args.deadline,
        endpoint=args.endpoint,
        progress=_download_bar,
    )
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
            except FetchError as e:  # the counts are fetched; a missing comparison table is not fatal
                comp[key] = f"not available ({e})"
    return comp


def _print_fetch(res, comp: dict[str, str]) -> None:
    from demonoise.io.assemble import table_years, years_text
    from demonoise.io.eurostat_api import COUNT_TABLES

    c = res.counts
    n0 = sum(r.level == 0 for r in c.regions)
    n2 = len(c.regions) - n0
    what = f"reference year {c.year}"
    if res.panel is not None:
        p = res.panel
        what = (
            f"reference years {years_text(p.years)} (population on 1 January {years_text(p.stock_years)}: "
            f"each stock one cell, the end of one year and the start of the next)"
        )
    print(
        f"{res.panel.name if res.panel is not None else c.name}: {len(c.regions)} regions ({n0} "
        f"{'country' if n0 == 1 else 'countries'}, {n2} NUTS 2 region{'' if n2 == 1 else 's'}), {what}"
    )
    for measure, (rcode, ncode) in COUNT_TABLES.items():
        er, en = res.entries[rcode], res.entries[ncode]
        when = er.extracted if er.extracted == en.extracted else f"{er.extracted} / {en.extracted}"
        upd = er.updated or "unknown"
        if (en.updated or "unknown") != upd:
            upd += f" / {en.updated or 'unknown'}"
        ys = f" {years_text(table_years(measure, res.years))}" if res.panel is not None else ""
        print(f"  {measure:<11} {rcode} + {ncode}{ys}: downloaded {when}; Eurostat update {upd}")
    for code, text in comp.items():
        print(f"  {'comparison':<11} {code}: {text}")
    if res.skipped:
        print(f"  {'skipped':<11} " + "; ".join(f"{k} ({', '.join(v)})" for k, v in res.skipped.items()))
    if res.ignored_codes:
        shown = ", ".join(res.ignored_codes[:10]) + (" ..." if len(res.ignored_codes) > 10 else "")
        print(f"  {'ignored':<11} {len(res.ignored_codes)} NUTS 2 code(s) outside NUTS 2021: {shown}")
    if res.absent:
        shown = ", ".join(res.absent[:10]) + (" ..." if len(res.absent) > 10 else "")
        print(
            f"  {'absent':<11} {len(res.absent)} NUTS 2021 region(s) without population data for "
            f"{years_text(res.years)}: {shown}"
        )
    n_dl = len(res.downloaded)
    print(f"cache: {res.cache} ({len(res.entries)} tables: {n_dl} downloaded, {len(res.entries) - n_dl} reused)")


def _parameter_value(text: str):
    """A ``-p NAME VALUE`` value: JSON if it parses (``4``, ``0.5``, ``[1, 5]``, ``true``,
    ``null``), else the string itself (``BE34``, ``5y``)."""
    import json

    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: nested too deeply to be a parameter value
        return text


def cmd_notebook(args) -> int:
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
    from demonoise.core.atomic import check_output_dir
    from demonoise.io.datasets import as_name
    from demonoise.report.batch.extras import overview_run, render_further

    check_output_dir(args.out_dir)
    t0 = time.perf_counter()
    options = {
        "dataset": as_name(args.dataset, origin="demonoise overview"),
        "V": args.V,
        "ptables": tuple(args.ptable or ()),
        "countries": args.countries,
        "sex": None if args.sex == "worst" else args.sex,
        "mc": args.mc,
    }
    with _cluster(args) as cluster:
        run = overview_run(options, args.out_dir, store=args.store, force=args.force, cluster=cluster)
        r = render_further(run, pdf=not args.no_pdf, force=args.force, cluster=cluster)
    dt = time.perf_counter() - t0
    print(
        f"Europe overview -> {r.html}"
        + (f", {r.pdf}" if r.pdf else f" ({r.pdf_error})" if r.pdf_error else "")
        + f"  [{dt:.1f} s]"
    )
    return 0


def cmd_report(args) -> int:
    from demonoise.report.batch.params import load_params
    from demonoise.report.batch.stages import run_reports

    params = load_params(args.params)
    with _cluster(args, params.scheduler) as cluster:
        rep = run_reports(
            params,
            args.out_dir,
            force=args.force,
            workers=args.workers,
            pdf=False if args.no_pdf else None,
            yes=args.yes,
            cluster=cluster,
        )
    t = rep.timings
    print(rep.summary())
    pages = sum(o.pages for o in rep.outcomes.values())
    print(
        f"  stages: plan {t['plan']:.1f} s, compute {t['compute']:.1f} s, execute {t['execute']:.1f} s, "
        f"render {t['render']:.1f} s, index {t['index']:.1f} s (work: compute {t['compute_work']:.1f} s, "
        f"notebooks {t['notebooks']:.1f} s, HTML {t['html']:.1f} s, PDF {t['pdf']:.1f} s, {pages} pages)"
    )
    for note in rep.notes:
        print(f"  note: {note}")
    for r, o in rep.failed:
        first = (o.error or "failed").splitlines()[0]
        print(f"  FAILED {r.label}: {first}", file=sys.stderr)
    print(f"index: {rep.index}")
    return 0 if rep.ok else 1


def _cluster(args, default_address: str | None = None):
    """The Dask cluster of a command: ``--scheduler`` (else ``default_address``), connected
    now so that a bad address fails before any work; else a local one of ``--workers``
    processes, started only when something fans out."""
    from demonoise.runtime.budget import local_workers
    from demonoise.runtime.cluster import Cluster

    address = getattr(args, "scheduler", None)
    address = address if address is not None else default_address  # "" is refused, not a local cluster
    workers = getattr(args, "workers", None)
    if not address and workers is not None:
        workers = local_workers(workers, f"demonoise {args.command}")
    cluster = Cluster(address, workers=workers)
    if cluster.address:
        cluster.client()
    return cluster


def _print_moments(table, V=None, why: str = "") -> None:
    """The table's description and its per-count moments; on stderr, a warning per count
    where V is not reached (``why`` after it)."""
    nominal = table.V if V is None else float(V)
    tol = table.resolution
    print(_describe_table(table, V))
    print(f"{'i':>4}  {'bias':>11}  {'variance':>11}  {'E v^2':>11}  {'P(v=0)':>9}  {'nominal V':>9}  reached?")
    warn = []
    for r in table.moments(tol, nominal).itertuples():
        label = f"{r.i}" if r.i < table.I else f">={r.i}"
        above = r.variance_minus_V
        if r.i == 0:
            reached = "zeros stay zero"
        elif nominal is None:
            reached = "?"
        elif r.V_reached:
            reached = "yes" if above <= tol else f"yes (above V by {above:.4g})"
        else:
            reached = f"NO (short by {-above:.4g})"
            warn.append(f"V = {nominal:g} is not reached at count {label}: variance {r.variance:.6g}")
        nv = "?" if nominal is None else f"{nominal:g}"
        mean = round(float(r.mean), 12) + 0.0  # show 5.6e-17 as 0
        print(
            f"{label:>4}  {mean:>11.6g}  {r.variance:>11.6g}  {r.second_moment:>11.6g}  {r.p_stay:>9.6f}  {nv:>9}  "
            f"{reached}"
        )
    if nominal is None:
        warn.append("nominal V unknown (the file does not store it): pass --V to check it")
    for w in warn:
        print(f"WARNING: {w}{why}", file=sys.stderr)


def _describe_table(table, V=None) -> str:
    parts = [
        f"{table.label}: classes 0..{table.I} (the last stands for every count >= {table.I}), max |noise| "
        f"{table.max_deviation}"
    ]
    if table.n_keys:
        parts.append(f"K = {table.n_keys} cell keys")
    if table.D is not None:
        parts.append(f"D = {table.D}")
    V = table.V if V is None else V
    if V is not None:
        parts.append(f"V = {V:g}")
    if table.js:
        parts.append(f"js = {table.js}")
    if table.pstay is not None:
        parts.append(f"pstay = {', '.join(f'{x:g}' for x in table.pstay)}")
    parts.append(f"source: {table.source}")
    return "; ".join(parts)


def cmd_ptable_build(args) -> int:
    import warnings

    from demonoise.analysis.ptables import write_ptable
    from demonoise.core.atomic import atomic_path, check_output_file
    from demonoise.noise.ptable import VarianceNotReachedWarning, build_ptable

    check_output_file(args.out)
    pstay = None
    if args.pstay:
        pstay = args.pstay[0] if len(args.pstay) == 1 else list(args.pstay)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", VarianceNotReachedWarning)  # reported below, per count
        table = build_ptable(args.D, args.V, args.js, pstay, label=args.label or "")
    out = Path(args.out)
    with atomic_path(out) as tmp:
        write_ptable(table, tmp, args.format, K=args.K)
    why = (
        " -- the construction treats V as an upper bound (as the R package ptable does) and keeps the "
        "maximum-entropy law of the other constraints, whose variance is smaller here"
    )
    _print_moments(table, why=why)
    keys = f", K = {args.K or 100000} cell keys" if args.format == "eurostat" else ""
    print(f"-> {out} ({args.format} format{keys})")
    return 0


def _open_table(name_or_path: str):
    """An embedded p-table or a p-table file (:func:`~demonoise.analysis.ptables.resolve_ptable`)."""
    from demonoise.analysis.ptables import resolve_ptable

    if not Path(name_or_path).exists() and (Path(name_or_path).suffix or "/" in name_or_path):
        raise ParameterError(f"p-table file {name_or_path} does not exist (embedded tables: v01, v03, v04)")
    return resolve_ptable(name_or_path)


def cmd_ptable_show(args) -> int:
    _print_moments(_open_table(args.table), args.V)
    return 0


def cmd_compare(args) -> int:
    from demonoise.uncertainty.comparison import compare_noise, comparison_note, summarise_comparison

    _check_table_out(args)
    with _cluster(args) as cluster:  # a --scheduler is reached (or refused) before any work
        counts = _load_counts(args)
        table = _open_table(args.ptable)
        t0 = time.perf_counter()
        names = [table.label, "generic noise with a zero floor"]
        progress = MonteCarloProgress("demonoise compare", names, len(counts.regions), processes(cluster), args.yes)
        df = compare_noise(
            counts,
            table,
            V=args.V,
            granularity=args.granularity,
            indicators=args.indicators,
            e_ages=args.e_ages,
            mc=args.mc,
            seed=args.seed,
            progress=progress,
            size_edges=args.size_classes,
            cluster=cluster,
        )
    note = comparison_note(df)
    _write_table(df, args, counts, t0, counts.provenance.status_label, note)
    summ = summarise_comparison(df)
    birth_labels = set(df.loc[(df.indicator == "e") & (df.age == 0), "age_group"])  # Y_LT1, or Y_LT5 for 5-year cells
    head = summ[(summ.indicator == "tfr") | ((summ.indicator == "e") & summ.age_group.isin(birth_labels))]
    _print_table(head if len(head) else summ, "{:.3f}", 200)
    print()
    print(note)


def cmd_calibrate(args) -> int:
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
    df = calibrate(
        counts, thresholds, family=family, granularity=args.granularity, indicators=args.indicators, e_ages=args.e_ages
    )
    extra = ""
    if "v_top" in df.attrs:
        extra = (
            f"; family V range [{df.attrs['v_lo']:.6g}, {df.attrs['v_top']:g}], "
            f"tables constant from V = {df.attrs['v_sat']:.6g}"
        )
    _write_table(df, args, counts, t0, df.attrs.get("family", "generic") + extra)
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
                txt += (
                    f", no table of the family meets it for {r.infeasible} of {r.items} "
                    f"(e.g. {r.infeasible_region} {r.infeasible_sex})"
                )
            parts.append(txt)
        print(f"{ind}: smallest V_max by threshold -- " + "; ".join(parts))
    return 0


# --------------------------------------------------------------------------- change (issue 32)
def cmd_change(args) -> int:
    """``demonoise change``: the change of every indicator between two years (or pooled
    windows) with its noise, Poisson and total sd, z and smallest detectable change."""
    from demonoise.analysis.change import change_table
    from demonoise.analysis.compute import noise_settings
    from demonoise.runtime import budget

    _check_table_out(args)
    panel = _load_counts(args, panel=True)
    settings = noise_settings(args.V or (), D=args.D, ptables=args.ptable or ())
    kw = {"year_from": args.year_from, "year_to": args.year_to, "granularity": args.granularity}
    kw.update(indicators=args.indicators, seed=args.seed)
    if args.mc:  # sized by a probe of the first setting and window before it runs
        per = budget.probe_seconds(lambda mc: change_table(panel, settings[:1], pools=args.pool[:1], mc=mc, **kw))
        runs = len(settings) * len(args.pool)
        size = f"{runs} run(s) x {args.mc} replicates over {len(panel.regions)} regions"
        budget.check_budget(per * args.mc * runs, size, "in this process", args.yes)
        budget.say("demonoise change", f"Monte Carlo {size}, estimated {budget.duration(per * args.mc * runs)}")
    t0 = time.perf_counter()
    progress = budget.Ticker("demonoise change", args.mc) if args.mc else None
    df = change_table(
        panel, settings, pools=args.pool, alpha=args.alpha, power=args.power, mc=args.mc, progress=progress, **kw
    )
    _write_table(df, args, panel, t0, panel.provenance.status_label)
    e0 = df[(df["indicator"] == "e") & (df["age"] == 0) & (df["sex"] == "T")]
    if len(e0):
        cols = ["region", "setting", "pool", "window_from", "window_to", "change", "sd_noise", "sd_poisson"]
        cols += ["z_total", "z_poisson", "mdc_total", "mdc_poisson"]
        print(f"e0, both sexes (MDC at {args.alpha:g} two-sided, power {args.power:g}):")
        _print_table(e0[cols], "{:.3f}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    from demonoise.core.version import __version__

    p = argparse.ArgumentParser(
        prog="demonoise", description="How much noise-based disclosure control degrades demographic indicators."
    )
    p.add_argument("--version", action="version", version=f"demonoise {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    s = _command(
        sub, cmd_datasets, "list the available datasets (embedded, registered, cached) with their provenance; add one"
    )
    s.add_argument("-v", "--verbose", action="store_true", help="show provenance details")
    dsub = s.add_subparsers(dest="datasets_command")
    a = dsub.add_parser("add", help="register a counts file by name (validated once, packed into the user cache)")
    a.add_argument("name", help="the name --dataset will take (letters, digits, '_', '.', '-')")
    a.add_argument("file", type=Path, help="counts template file (docs/csv_template.md)")
    a.add_argument("--source", default=None, help="who published the counts (default: the file's '# source:' line)")
    a = dsub.add_parser("remove", help="remove a registered dataset from the user cache")
    a.add_argument("name")

    s = _command(sub, cmd_compute, "analytic error propagation (+ Monte Carlo) -> tidy results table")
    _data_args(s)
    _noise_args(s)
    _granularity_arg(s, "publication granularity of the noised cells (default: single, Eurostat's NUTS 2 layout)")
    _indicators_arg(s)
    _select_args(s)
    _mc_args(s, "Monte Carlo replicates for e and TFR (default 0: analytic only)")
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
    _table_out_arg(s)
    _cluster_args(s, "the Monte Carlo blocks")
    _yes_arg(s, "a Monte Carlo estimated above 30 minutes")

    s = _command(
        sub, cmd_change, "change of every indicator between two years (or pooled windows): sd, z and detectable change"
    )
    _data_args(s)
    s.add_argument("--from", dest="year_from", required=True, type=int, metavar="YEAR", help="earlier year")
    s.add_argument("--to", dest="year_to", required=True, type=int, metavar="YEAR", help="later year")
    s.add_argument(
        "--pool",
        nargs="+",
        type=_int_option(1, 50),
        default=[1],
        metavar="K",
        help="window length(s): compare the K years ending with --from and --to (default 1: year on year)",
    )
    _noise_args(s)
    _granularity_arg(s)
    _indicators_arg(s)
    _select_args(s)
    s.add_argument("--alpha", type=_float, default=0.05, help="two-sided significance level (default 0.05)")
    s.add_argument("--power", type=_float, default=0.8, help="power of the smallest detectable change (default 0.8)")
    _mc_args(s, "Monte Carlo replicates (e and TFR)")
    _yes_arg(s, "a Monte Carlo estimated above 30 minutes")
    _table_out_arg(s)

    s = _command(
        sub,
        cmd_fetch,
        "download real Eurostat tables for a year (cached) -> dataset eurostat-<year>; for consecutive "
        "years -> the multi-year dataset eurostat-<first>-<last>",
    )
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
    s.add_argument(
        "--cache-dir", type=Path, default=None, help="cache directory (default: $DEMONOISE_CACHE or ~/.cache/demonoise)"
    )
    s.add_argument(
        "--base-url",
        default=None,
        help="API base URL (default: $DEMONOISE_EUROSTAT_URL or Eurostat's dissemination API)",
    )
    s.add_argument(
        "--timeout",
        type=_seconds("timeout", 3600),
        default=60.0,
        help="seconds allowed to connect and for each read (default 60)",
    )
    s.add_argument(
        "--deadline",
        type=_seconds("deadline", 86400),
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
    b = _command(
        psub,
        cmd_ptable_build,
        "build a p-table as the R package ptable does (maximum entropy) and write it",
        name="build",
    )
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
    b.add_argument(
        "--K", type=_cell_keys, default=None, help="number of cell keys for --format eurostat (default 100000)"
    )
    b.add_argument("--label", default="", help="short name used in results tables")
    b.add_argument(
        "--out", required=True, type=Path, metavar="FILE", help="output file (.gz: gzipped); written atomically"
    )
    w = _command(
        psub, cmd_ptable_show, "per-count moments of a p-table: bias, variance, nominal V, reached?", name="show"
    )
    w.add_argument("table", help="an embedded table (v01, v03, v04) or a p-table file (either format)")
    w.add_argument("--V", type=_variance, default=None, help="nominal V to check against (files do not store it)")

    s = _command(sub, cmd_compare, "noise sd under the generic model vs under a p-table, per region and indicator")
    _data_args(s)
    s.add_argument(
        "--ptable", required=True, metavar="TABLE", help="an embedded table (v01, v03, v04) or a p-table file"
    )
    s.add_argument(
        "--V", type=_variance, default=None, help="variance of the generic model (default: the table's nominal V)"
    )
    _granularity_arg(s)
    _indicators_arg(s, None, "default: e and, when the dataset has births, tfr")
    _e_ages_arg(s)
    _select_args(s)
    s.add_argument(
        "--level",
        type=int,
        choices=[0, 1, 2, 3],
        default=None,
        help="restrict to one NUTS level (0: countries, 2: NUTS 2)",
    )
    s.add_argument(
        "--size-classes",
        nargs="+",
        type=_population,
        default=[200_000, 1_000_000],
        metavar="POP",
        help="population size-class edges (default 200000 1000000)",
    )
    _mc_args(s, "noise-only Monte Carlo replicates: p-table and generic noise with a zero floor (default 0)")
    _table_out_arg(s)
    s.add_argument(
        "--note",
        type=Path,
        default=None,
        metavar="FILE",
        help="also write the closing note to this text file (both files are written, or neither)",
    )
    _cluster_args(s, "the Monte Carlo blocks")
    _yes_arg(s, "a Monte Carlo estimated above 30 minutes")

    s = _command(sub, cmd_calibrate, "largest noise variance V keeping the noise admixture below thresholds -> table")
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
        "--ptable-D",
        type=int,
        default=None,
        metavar="D",
        help="p-table family: maximum deviation (implies --family ptable)",
    )
    s.add_argument(
        "--ptable-js",
        type=_nonneg_int,
        default=None,
        metavar="JS",
        help="p-table family: no results in 1..js (default 0)",
    )
    s.add_argument("--pstay", type=float, default=None, help="p-table family: preset probability of no change")
    _granularity_arg(s)
    _indicators_arg(s, None, "default: all the dataset supports")
    _e_ages_arg(s)
    _select_args(s)
    _table_out_arg(s)

    s = _command(
        sub, cmd_notebook, "execute an extra notebook (whatif, teaching) with parameters and render it to HTML/PDF"
    )
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

    s = _command(
        sub,
        cmd_overview,
        "the Europe overview report: every NUTS 2 region, the V's side by side -> DIR/overview.html (+ PDF)",
    )
    _data_args(s, default="ess-2023")
    s.add_argument(
        "--V", nargs="+", type=_variance, default=[1.0, 5.0], metavar="V", help="noise variances (default 1 5)"
    )
    s.add_argument("--countries", nargs="+", metavar="CC", help="restrict to these countries' NUTS 2 regions")
    s.add_argument(
        "--ptable",
        nargs="+",
        default=[],
        metavar="TABLE",
        help="p-table(s) shown beside the V's: an embedded name (v01, v03, v04) or a file",
    )
    s.add_argument(
        "--sex",
        default="worst",
        choices=[*SEXES, "worst"],
        help="sex of the mortality indicators (default worst: per region the worst of F, M and T, as the reports)",
    )
    _mc_args(s, "Monte Carlo replicates for a check of e0/TFR (default 0)", seed=False)
    s.add_argument("--store", type=Path, default=None, help="results store (default OUT_DIR/results)")
    _document_args(s, "recompute and re-execute even if up to date", "--out")
    _cluster_args(s, "the Monte Carlo blocks and the notebook")

    s = _command(
        sub, cmd_report, "quality reports: notebooks per country and V -> HTML/PDF reports + output/index.html"
    )
    s.add_argument("--params", required=True, type=Path, help="YAML params file, e.g. params/default.yaml")
    _document_args(s, "execute and render everything again, even if up to date", "--output", "--out")
    _cluster_args(s, "the Monte Carlo blocks, notebooks and renderings (also: scheduler: in the params)")
    _yes_arg(s, "a batch above 200 notebook executions or an estimated 30 minutes")
    return p


# ------------------------------------------------------------------ arguments shared by commands
def _command(sub, func, help: str, *, name: str | None = None) -> argparse.ArgumentParser:
    """The subcommand ``cmd_<name>`` (or ``name``), running ``func``."""
    s = sub.add_parser(name or func.__name__.removeprefix("cmd_"), help=help)
    s.set_defaults(func=func)
    return s


def _cluster_args(s, what: str) -> None:
    s.add_argument(
        "--scheduler",
        metavar="ADDRESS",
        default=None,
        help=f"run {what} on the Dask cluster of this scheduler, e.g. tcp://10.0.0.5:8786 "
        "(default: a local cluster of --workers processes)",
    )
    s.add_argument(
        "--workers",
        type=_workers,
        default=2,
        help="worker processes of the local cluster (default 2; 1: everything in this process)",
    )


def _yes_arg(s, what: str) -> None:
    s.add_argument(
        "--yes",
        action="store_true",
        help=f"run {what} (refused without it, in one line with its size and estimate; nothing ever prompts)",
    )


def _document_args(s, force: str, *former: str) -> None:
    """The options of a command that writes documents: ``--out-dir DIR`` (its former
    spelling(s) as aliases), ``--no-pdf``, ``--force``."""
    s.add_argument(
        "--out-dir",
        *former,
        dest="out_dir",
        type=Path,
        default=Path("output"),
        metavar="DIR",
        help=f"output directory (default: output); --out-dir is the current spelling, {', '.join(former)} "
        "still accepted (former spelling)",
    )
    s.add_argument("--no-pdf", action="store_true", help="HTML only")
    s.add_argument("--force", action="store_true", help=force)


def _table_out_arg(s) -> None:
    s.add_argument(
        "--out", required=True, type=Path, metavar="FILE", help="output table: .parquet, .csv or .csv.gz (atomic)"
    )


def _data_args(s, default: str | None = None) -> None:
    """``--dataset NAME|FILE`` (required unless ``default``), with ``--counts FILE``, its
    former spelling, as an alias for this release."""
    g = s.add_mutually_exclusive_group(required=default is None)
    g.add_argument(
        "--dataset",
        metavar="NAME|FILE",
        help="a dataset name (see `demonoise datasets`) or a counts template file (docs/csv_template.md)"
        + (f"; default {default}" if default else ""),
    )
    g.add_argument(
        "--counts", dest="dataset", metavar="FILE", help="former spelling of --dataset FILE (accepted for this release)"
    )
    if default is not None:
        s.set_defaults(dataset=default)


def _noise_args(s) -> None:
    s.add_argument(
        "--V", nargs="+", type=_variance, metavar="V", help="noise variance(s) of the generic model, e.g. --V 1 5"
    )
    s.add_argument("--D", type=int, default=None, help="maximum deviation of the generic noise (default: unbounded)")
    s.add_argument(
        "--ptable", nargs="+", metavar="TABLE", help="p-table(s): an embedded name (v01, v03, v04) or a file"
    )


def _granularity_arg(s, help: str = "publication granularity of the noised cells") -> None:
    s.add_argument("--granularity", default="single", choices=GRANULARITIES, help=help)


def _indicators_arg(s, default=(), help: str | None = None) -> None:
    default = list(INDICATORS) if default == () else default
    s.add_argument("--indicators", nargs="+", default=default, choices=INDICATORS, help=help)


def _e_ages_arg(s) -> None:
    s.add_argument("--e-ages", nargs="+", type=int, default=[0, 65], metavar="K", help="ages k of e_k (default 0 65)")


def _mc_args(s, help: str, *, seed: bool = True) -> None:
    s.add_argument("--mc", type=_mc_replicates, default=0, metavar="N", help=help)
    if seed:
        s.add_argument("--seed", type=_nonneg_int, default=20230101)


def _select_args(s):
    s.add_argument("--countries", nargs="+", metavar="CC", help="restrict to these countries")
    s.add_argument("--regions", nargs="+", metavar="CODE", help="restrict to these regions")


_nonneg_int = _int_option(0)
#: More replicates than this are refused before any work (a Monte Carlo check needs 10^3-10^5).
_mc_replicates = _int_option(0, 10**9, " replicates (a Monte Carlo check needs 10^3 to 10^5)")
#: Cell keys of a Eurostat-format p-table: the key table holds K integers per count class.
_cell_keys = _int_option(1, 10**7, " cell keys (Eurostat's tables use 10^5; the table holds K per count class)")


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        with interruptible(f"demonoise {args.command}: interrupted"):
            return int(args.func(args) or 0)
    except (DemonoiseError, OSError) as e:
        cmd = args.command + (f" {args.ptable_command}" if getattr(args, "ptable_command", None) else "")
        print(f"demonoise {cmd}: error: {e}", file=sys.stderr)
        # 2: bad input; 1: the run had started (a lost cluster) or the system failed (a full
        # disk, an unwritable output directory: nothing half-written remains)
        return 2 if isinstance(e, DemonoiseError) and not isinstance(e, ClusterLost) else 1
    except KeyboardInterrupt:  # Ctrl-C, SIGTERM, SIGHUP: clean-up has run, the line is written
        # Only exiting is left. Python's finalisation puts back the default action of a
        # signal that has a Python handler, so a second Ctrl-C in those last moments would
        # kill the process by the signal instead of its exit status 130: ignore them now
        # (the command line only, argv None; a caller of main() keeps its handlers).
        if argv is None:
            import signal

            from demonoise.runtime.signals import SIGNALS

            for s in SIGNALS:
                signal.signal(s, signal.SIG_IGN)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
