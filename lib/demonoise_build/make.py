"""The build tool's command: ``python -m demonoise_build [NAMES] [--check]`` builds the
embedded datasets -- the single-year ones of :mod:`demonoise_build.build`, the multi-year
ones of :mod:`demonoise_build.panel` -- or rebuilds them into a temporary folder and
compares them with the committed files. It sits above both builders, which do not import it."""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from demonoise.core.counts import Provenance, TableProvenance
from demonoise.core.errors import DataError
from demonoise.io.packed import read_packed
from demonoise_build.build import (
    DEFAULT_CALIBRATION_YEAR,
    NAMES,
    PINNED,
    Raw,
    _sha256,
    _versions,
    build_parts,
    cross_check_lines,
    default_out_dir,
    read_raw,
    write_dataset,
)
from demonoise_build.panel import PANEL_NAMES, build_panel

__all__ = ["build", "check", "main"]


def build(
    name: str,
    out_dir: str | Path | None = None,
    raw_dir: str | Path | None = None,
    *,
    calibration_year: int = DEFAULT_CALIBRATION_YEAR,
    raw: Raw | None = None,
) -> dict[str, Path]:
    """Build dataset ``name`` and write ``<name>.csv.gz``, ``<name>.npz`` and ``<name>.json`` to ``out_dir``.

    Parameters
    ----------
    name : {"be-2023", "ess-2023"}
    out_dir : path, optional
        Default :func:`default_out_dir` (the package's ``data/datasets``).
    raw_dir : path, optional
        Default :func:`default_raw_dir` (``data-raw/eurostat``).
    calibration_year : int
        Calibration year of the modelled mortality (ess-2023; default 2019).
    raw : Raw, optional
        Already read raw extracts (saves reading them twice when building both).

    Returns
    -------
    dict
        ``{"csv": path, "npz": path, "json": path}``.
    """
    if name in _panel_names():
        return build_panel(name, out_dir, raw=raw if raw is not None else read_raw(raw_dir))
    parts = build_parts(name, raw if raw is not None else read_raw(raw_dir), calibration_year=calibration_year)
    return write_dataset(parts, out_dir)


def _panel_names() -> tuple[str, ...]:
    """The multi-year datasets (:mod:`demonoise_build.panel`)."""
    return PANEL_NAMES


def check(
    names: Sequence[str] = NAMES, *, out_dir: str | Path | None = None, raw_dir: str | Path | None = None
) -> tuple[int, list[str]]:
    """Rebuild ``names`` into a temporary directory and compare with ``out_dir``.

    Returns
    -------
    status, messages : int, list of str
        0 identical; 1 a difference; 3 not comparable (the running numpy / scipy /
        pandas differ from the versions recorded in the committed JSON).
    """
    out_dir = Path(out_dir) if out_dir is not None else default_out_dir()
    msgs, status = [], 0
    raw = read_raw(raw_dir)
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            committed = out_dir / f"{name}.json"
            if not committed.is_file():
                msgs.append(f"{name}: no committed {committed}")
                status = max(status, 1)
                continue
            rec = json.loads(committed.read_text(encoding="utf-8"))["versions"]
            now = _versions()
            diff = [f"{k} {rec.get(k)} (recorded) vs {now[k]} (running)" for k in PINNED if rec.get(k) != now[k]]
            if diff:
                msgs.append(f"{name}: not comparable, versions differ: {'; '.join(diff)} (install constraints.txt)")
                status = max(status, 3)
                continue
            new = build(
                name,
                tmp,
                raw=raw,
                calibration_year=json.loads(committed.read_text())["calibration_year"] or DEFAULT_CALIBRATION_YEAR,
            )
            for kind, path in new.items():
                old = out_dir / path.name
                if kind == "npz":
                    same, how = _same_packed(old, path)
                else:
                    same, how = old.is_file() and _sha256(old) == _sha256(path), f"sha256 {_sha256(path)[:16]}..."
                if not same:
                    msgs.append(f"{name}: {path.name} differs from the committed file")
                    status = max(status, 1)
                else:
                    msgs.append(f"{name}: {path.name} identical ({how})")
    return status, msgs


def _same_packed(old: Path, new: Path) -> tuple[bool, str]:
    """Packed forms compared by content (:func:`demonoise.io.packed.content_digest`, which
    the header records and :func:`~demonoise.io.packed.read_packed` verifies): their bytes
    also depend on the zip writer."""
    if not old.is_file():
        return False, "missing"
    prov = Provenance(TableProvenance("real"))
    reader = read_packed
    if new.name[: -len(".npz")] in _panel_names():
        from demonoise.io.packed import read_packed_panel as reader
    try:
        _, h_old = reader(old, provenance=prov)
    except DataError:
        return False, "damaged"
    _, h_new = reader(new, provenance=prov)
    same = h_old["content_sha256"] == h_new["content_sha256"] and h_old["source_sha256"] == h_new["source_sha256"]
    return same, f"content sha256 {h_new['content_sha256'][:16]}..."


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m demonoise_build", description=__doc__.split("\n\n")[0])
    every = list(NAMES) + list(_panel_names())
    p.add_argument("names", nargs="*", default=every, help=f"datasets to build (default: {' '.join(every)})")
    p.add_argument("--raw", type=Path, default=None, help="folder of the raw extracts (default data-raw/eurostat)")
    p.add_argument("--out", type=Path, default=None, help="output folder (default lib/demonoise/data/datasets)")
    p.add_argument("--calibration-year", type=int, default=DEFAULT_CALIBRATION_YEAR)
    p.add_argument(
        "--check",
        action="store_true",
        help="rebuild into a temporary folder and compare with the committed files (sha256; the .npz by content)",
    )
    a = p.parse_args(argv)
    bad = [n for n in a.names if n not in every]
    if bad:
        p.error(f"unknown dataset(s) {bad}; choose from {', '.join(every)}")
    if a.check:
        status, msgs = check(a.names, out_dir=a.out, raw_dir=a.raw)
        print("\n".join(msgs))
        return status
    raw = read_raw(a.raw)
    for n in a.names:
        t0 = time.perf_counter()
        out = build(n, a.out, raw=raw, calibration_year=a.calibration_year)
        print(
            f"{n}: {out['csv']} ({out['csv'].stat().st_size} bytes), {out['npz'].name} "
            f"({out['npz'].stat().st_size} bytes), {out['json'].name}  [{time.perf_counter() - t0:.1f} s]"
        )
        meta = json.loads(out["json"].read_text(encoding="utf-8"))
        if "cross_check" in meta["fertility"]:
            print("\n".join(f"  {line}" for line in cross_check_lines(meta["fertility"]["cross_check"])))
    return 0
