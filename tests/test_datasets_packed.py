"""The packed (binary) form of the embedded datasets: the same counts as the CSV, and never
used when it is missing, damaged or stale -- the registry then reads the CSV, packs it into
the user cache (not into the package) and says so in one line.

The load times are printed by ``benchmarks/bench_load.py`` (CSV and packed, same run).
"""

from __future__ import annotations

import hashlib
import shutil
from importlib import resources

import numpy as np
import pytest

from demonoise.core.counts import Provenance, TableProvenance
from demonoise.core.errors import DataError
from demonoise.io import datasets, packed
from demonoise.io.template import read_counts_csv

NAMES = ("be-2023", "ess-2023")


def _package_dir():
    return resources.files("demonoise").joinpath(*datasets.EMBEDDED_DIR)


def _same(a, b) -> bool:
    return (
        a.name == b.name
        and a.year == b.year
        and a.regions == b.regions
        and a.ages == b.ages
        and a.birth_ages == b.birth_ages
        and all(np.array_equal(getattr(a, k), getattr(b, k)) for k in ("pop_start", "pop_end", "deaths", "births"))
        and a.provenance == b.provenance
    )


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """A copy of the package's dataset folder as the registry's folder, and an empty user cache."""
    src = _package_dir()
    dst = tmp_path / "datasets"
    dst.mkdir()
    for name in ("be-2023",):
        for ext in (".csv.gz", ".json", ".npz"):
            (dst / f"{name}{ext}").write_bytes(src.joinpath(f"{name}{ext}").read_bytes())
    monkeypatch.setattr(datasets, "_folder", lambda: dst)
    monkeypatch.setenv("DEMONOISE_CACHE", str(tmp_path / "cache"))
    datasets.clear_cache()
    yield dst
    datasets.clear_cache()


def _load_csv(folder, name="be-2023"):
    meta = datasets.metadata(name)
    c = read_counts_csv(folder / f"{name}.csv.gz", name=name, year=meta["year"])
    return c.replace(provenance=datasets._provenance(meta))


def _cached(tmp_path, name="be-2023"):
    return sorted((tmp_path / "cache" / "embedded").glob(f"{name}-*.npz"))


@pytest.mark.parametrize("name", NAMES)
def test_packed_form_holds_the_counts_of_the_csv(name, capsys):
    """What load() returns (the packed form) equals what the users' CSV reader gives, and the
    JSON records the packed content digest and the CSV it was derived from."""
    datasets.clear_cache()
    fast = datasets.load(name)
    assert capsys.readouterr().err == ""  # the package's packed form was used, silently
    with resources.as_file(_package_dir().joinpath(f"{name}.csv.gz")) as p:
        slow = read_counts_csv(p, name=name, year=2023).replace(provenance=datasets._provenance(datasets._meta(name)))
        csv_sha = hashlib.sha256(p.read_bytes()).hexdigest()
    assert _same(fast, slow)
    rec = datasets.metadata(name)["files"][f"{name}.npz"]
    with resources.as_file(_package_dir().joinpath(f"{name}.npz")) as p:
        _, header = packed.read_packed(p, provenance=fast.provenance)
    assert header["content_sha256"] == rec["content_sha256"] and header["source_sha256"] == csv_sha
    assert rec["source"] == f"{name}.csv.gz"


def test_damaged_packed_form_is_rebuilt_into_the_cache(folder, tmp_path, capsys):
    npz = folder / "be-2023.npz"
    data = bytearray(npz.read_bytes())
    mid = len(data) // 2
    data[mid : mid + 64] = bytes(64)  # zero a stretch inside the compressed arrays
    npz.write_bytes(bytes(data))
    got = datasets.load("be-2023")
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "be-2023.npz in the package is damaged" in err[0] and "rebuilt" in err[0], err
    assert _same(got, _load_csv(folder))
    assert npz.read_bytes() == bytes(data)  # the package is never written
    (cached,) = _cached(tmp_path)
    assert str(cached) in err[0]
    # the next process uses the rebuilt copy, after the same checks, and says so
    datasets.clear_cache()
    again = datasets.load("be-2023")
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "using the copy rebuilt from be-2023.csv.gz" in err[0], err
    assert _same(again, got)


def test_truncated_or_missing_packed_form(folder, tmp_path, capsys):
    npz = folder / "be-2023.npz"
    npz.write_bytes(npz.read_bytes()[:1000])
    datasets.load("be-2023")
    assert "is damaged" in capsys.readouterr().err
    datasets.clear_cache()
    npz.unlink()
    shutil.rmtree(tmp_path / "cache")
    got = datasets.load("be-2023")
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "be-2023.npz in the package is missing" in err[0]
    assert _same(got, _load_csv(folder))


def test_stale_packed_forms_are_not_used(folder, capsys):
    """A packed file whose arrays are intact but are not the recorded ones (one birth more), or
    that was derived from another CSV, is stale: not used."""
    good = _load_csv(folder)
    csv_sha = hashlib.sha256((folder / "be-2023.csv.gz").read_bytes()).hexdigest()
    births = good.births.copy()
    births[1, 20] += 1
    other = good.replace(births=births)
    packed.write_packed(other, folder / "be-2023.npz", source_sha256=csv_sha)
    got = datasets.load("be-2023")
    err = capsys.readouterr().err
    assert "is stale (its content is not the one recorded in be-2023.json)" in err
    assert np.array_equal(got.births, good.births)
    datasets.clear_cache()
    packed.write_packed(good, folder / "be-2023.npz", source_sha256="0" * 64)
    datasets.load("be-2023")
    assert "is stale (derived from another be-2023.csv.gz)" in capsys.readouterr().err


def test_csv_changed_after_the_build_makes_the_packed_form_stale(folder, tmp_path, capsys):
    """The CSV stays the exchange format: a CSV that is not the one the packed form was derived
    from wins (read with full validation), and the packed form is rebuilt from it."""
    import gzip

    csv = folder / "be-2023.csv.gz"
    text = gzip.decompress(csv.read_bytes()).decode()
    lines = text.splitlines(keepends=True)
    i = next(k for k, line in enumerate(lines) if line.startswith("BE10,F,Y30,2023,population,"))
    head, value, status = lines[i].rsplit(",", 2)
    lines[i] = f"{head},{int(value) + 5},{status}"
    csv.write_bytes(gzip.compress("".join(lines).encode(), mtime=0))
    got = datasets.load("be-2023")
    assert "is stale (derived from another be-2023.csv.gz)" in capsys.readouterr().err
    j = got.region_index("BE10")
    assert got.pop_start[j, 0, 30] == _load_csv(folder).pop_start[j, 0, 30]
    assert len(_cached(tmp_path)) == 1


def test_damaged_cache_copy_is_rebuilt_too(folder, tmp_path, capsys):
    (folder / "be-2023.npz").write_bytes(b"not a zip")
    datasets.load("be-2023")
    capsys.readouterr()
    (cached,) = _cached(tmp_path)
    cached.write_bytes(cached.read_bytes()[:-100])
    datasets.clear_cache()
    got = datasets.load("be-2023")
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "rebuilt the packed form" in err[0]
    assert _same(got, _load_csv(folder))


def test_unwritable_cache_still_loads_from_the_csv(folder, tmp_path, monkeypatch, capsys):
    (folder / "be-2023.npz").write_bytes(b"not a zip")
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("DEMONOISE_CACHE", str(blocker))  # a file: no directory can be made under it
    got = datasets.load("be-2023")
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "could not write" in err[0]
    assert _same(got, _load_csv(folder))


def test_read_packed_rejects_damage_with_a_named_error(tmp_path):
    prov = Provenance(TableProvenance("real"))
    path = tmp_path / "x.npz"
    path.write_bytes(b"PK\x03\x04 broken")
    with pytest.raises(DataError, match=r"not a readable packed counts file.*x\.npz"):
        packed.read_packed(path, provenance=prov)
    c = datasets.load("be-2023")
    data, digest = packed.pack(c, source_sha256="s")
    assert packed.pack(c, source_sha256="s")[0] == data  # deterministic bytes
    assert digest == packed.content_digest(packed._arrays(c))
    path.write_bytes(data)
    back, header = packed.read_packed(path, provenance=c.provenance)
    assert _same(back, c) and header["name"] == "be-2023" and header["source_sha256"] == "s"
