"""Bounded work and checked outputs (hostile-use classes "limits", "outputs", "contract"):
a Monte Carlo that cannot fit in memory is refused up front (under a real address-space
limit), a report batch too large needs yes, GenericNoise at huge V is exact and quick,
output locations are checked before any work, and a notebook breaking the papermill
contract or showing other data than asked is named."""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from demonoise.core.atomic import atomic_write_text, check_output_dir, check_output_file, output_target
from demonoise.core.errors import OutputError, ParameterError, ReportError

ROOT = Path(__file__).resolve().parents[1]
DEMONOISE = [sys.executable, "-m", "demonoise.cli"]


def _cli(args, cwd, limit_bytes=None, timeout=120):
    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    return subprocess.run(
        [*DEMONOISE, *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=limit if limit_bytes else None,
    )


# ------------------------------------------------------------------- Monte Carlo memory
@pytest.mark.slow
def test_monte_carlo_beyond_the_address_space_limit_is_refused_up_front(tmp_path):
    """Under RLIMIT_AS = 3 GB, 5e8 replicates would need about 5 GB of block bookkeeping:
    refused in one line naming N and the regions, exit 2, nothing written; the same limit
    lets an ordinary run through."""
    r = _cli(
        ["compute", "--dataset", "be-2023", "--V", "1", "--mc", "500000000", "--out", "r.csv"], tmp_path, 3 * 10**9
    )
    assert r.returncode == 2, r.stderr[-2000:]
    line = r.stderr.strip().splitlines()
    assert len(line) == 1 and "N = 500000000 replicates over 12 regions" in line[0]
    assert "address-space limit" in line[0] and "Traceback" not in r.stderr
    assert not list(tmp_path.iterdir())
    ok = _cli(["compute", "--dataset", "be-2023", "--V", "1", "--mc", "200", "--out", "r.csv"], tmp_path, 3 * 10**9)
    assert ok.returncode == 0, ok.stderr[-2000:]
    assert (tmp_path / "r.csv").stat().st_size > 0


def test_memory_estimate_counts_stored_values_and_blocks():
    from demonoise.uncertainty.mc_memory import BLOCK_BYTES, check_memory, estimate_memory

    parts = estimate_memory(
        n=10_000, block=100, kept={"e": (360, 8), "tfr": (36, 4)}, workers=2, working=1e8, law_points=21
    )
    assert parts["stored"] == 10_000 * (360 * 8 + 36 * 4)
    assert parts["blocks"] == 100 * BLOCK_BYTES
    check_memory(parts, n=10_000, regions=3, available=(sum(parts.values()) + 1, "x"))
    with pytest.raises(ParameterError, match=r"N = 10000 replicates over 3 regions .* is left by test"):
        check_memory(parts, n=10_000, regions=3, available=(sum(parts.values()) - 1, "left by test"))


def test_available_memory_sees_the_address_space_limit():
    code = (
        "import resource; resource.setrlimit(resource.RLIMIT_AS, (4 * 10**9, 4 * 10**9))\n"
        "from demonoise.runtime.resources import available_memory\nb, why = available_memory()\n"
        "assert 0 < b < 4e9 and 'address-space' in why, (b, why)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr


# --------------------------------------------------------------------- GenericNoise at V
@pytest.mark.parametrize("V", [100.0, 1e4, 1e12])
def test_generic_noise_at_large_variance_is_exact(V):
    """From V = 100 on the scale is sqrt(V) unsolved; the law's variance, summed over its
    support, is V to double precision (and the variance-1e12 law is built without the
    solver's 40 passes over 1.8e7 points)."""
    from demonoise.noise.models import GenericNoise

    g = GenericNoise(V)
    assert abs(g.exact_variance() / V - 1) < 1e-13
    assert g.scale == pytest.approx(V**0.5, rel=1e-15)


def test_generic_noise_shortcut_meets_the_solved_scale():
    """Just below the threshold the solver runs; its scale squared is V to ~1e-14, the
    value the shortcut takes above it."""
    from demonoise.noise.models import EXACT_SCALE_V, discrete_gaussian

    _, _, s = discrete_gaussian(EXACT_SCALE_V * (1 - 1e-9))
    assert s**2 / (EXACT_SCALE_V * (1 - 1e-9)) == pytest.approx(1, abs=1e-12)


def test_generic_noise_alias_table_built_on_first_draw():
    import numpy as np

    from demonoise.noise.models import GenericNoise

    g = GenericNoise(4.0)
    assert "_alias_pairs" not in g.__dict__
    x = g.noise_from_uniform(np.random.default_rng(3).random(200_000)).astype(float)
    assert abs(x.var() / 4.0 - 1) < 5 * (2 / 200_000) ** 0.5  # ~5 sd of a variance estimate
    assert "_alias_pairs" in g.__dict__


# ------------------------------------------------------------------------ output paths
def test_symlink_is_written_through(tmp_path):
    (tmp_path / "shared").mkdir()
    link = tmp_path / "r.csv"
    link.symlink_to(tmp_path / "shared" / "r.csv")
    atomic_write_text(link, "a\n")
    assert link.is_symlink() and (tmp_path / "shared" / "r.csv").read_text() == "a\n"
    atomic_write_text(link, "b\n")
    assert link.is_symlink() and link.read_text() == "b\n"


@pytest.mark.parametrize("path", ["/dev/full", "/dev/null", "/proc/self/fd/1"])
def test_device_paths_are_refused(path):
    with pytest.raises(OutputError, match="device or process file"):
        output_target(path)


def test_symlink_to_a_device_and_a_directory_are_refused(tmp_path):
    (tmp_path / "x.csv").symlink_to("/dev/full")
    with pytest.raises(OutputError, match=r"x.csv \(a symlink to /dev/full\) is a character device"):
        check_output_file(tmp_path / "x.csv")
    (tmp_path / "d.csv").mkdir()
    with pytest.raises(OutputError, match="d.csv is a directory"):
        check_output_file(tmp_path / "d.csv")


def test_file_in_place_of_a_directory_is_refused(tmp_path):
    (tmp_path / "f").write_text("")
    with pytest.raises(OutputError, match="exists and is not a directory"):
        check_output_dir(tmp_path / "f")
    with pytest.raises(OutputError, match=r"cannot write .*f/r.csv: Not a directory"):
        check_output_file(tmp_path / "f" / "r.csv")
    assert check_output_dir(tmp_path / "new" / "deeper") == tmp_path / "new" / "deeper"
    assert not (tmp_path / "new").exists()  # the probe leaves nothing


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_unwritable_directory_is_refused(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir(mode=0o555)
    with pytest.raises(OutputError, match="not writable"):
        check_output_file(ro / "r.csv")


def test_compute_refuses_an_unusable_output_before_any_work(tmp_path):
    (tmp_path / "f").write_text("")
    r = _cli(["compute", "--dataset", "be-2023", "--V", "1", "--out", "f/r.csv"], tmp_path)
    assert r.returncode == 2 and "f/r.csv" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f"]


def test_compare_with_a_failing_note_writes_nothing(tmp_path):
    (tmp_path / "f").write_text("")
    r = _cli(["compare", "--dataset", "be-2023", "--ptable", "v01", "--out", "r.csv", "--note", "f/n.md"], tmp_path)
    assert r.returncode == 2 and "f/n.md" in r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f"]


def test_out_dir_spelling_and_its_aliases():
    from demonoise.cli import build_parser

    p = build_parser()
    for argv in (["report", "--params", "x.yaml"], ["overview"], ["notebook", "whatif"]):
        for spelling in ("--out-dir", "--output" if argv[0] == "report" else "--out"):
            assert p.parse_args([*argv, spelling, "d"]).out_dir == Path("d")
    assert p.parse_args(["report", "--params", "x.yaml", "--out", "d"]).out_dir == Path("d")


def test_every_option_of_every_command_says_what_it_does():
    """``--help`` names each option with words (a shared option's help is a template filled per
    command; an unfilled one printed nothing)."""
    from demonoise.cli import build_parser

    commands = build_parser()._subparsers._group_actions[0].choices
    silent = [
        f"{name} {a.option_strings[0]}"
        for name, sub in commands.items()
        for a in sub._actions
        if a.option_strings and a.help != argparse.SUPPRESS and not (a.help or "").strip()
    ]
    assert silent == []


# --------------------------------------------------------------------------- batch size
def _params(n_settings):
    from demonoise.report.batch.params import parse_params

    return parse_params(
        {"datasets": {"ess-2023": ["LU"]}, "noise": [{"V": 1 + i} for i in range(n_settings)], "mc": 0, "pdf": False}
    )


def test_batch_of_1000_settings_needs_yes(tmp_path):
    from demonoise.report.batch.stages import plan

    with pytest.raises(ParameterError, match=r"the batch is large: 1 reports, 4001 notebook executions.*--yes"):
        plan(_params(1000), tmp_path / "out", yes=False)
    assert not (tmp_path / "out").exists()


def test_the_limit_is_a_notebook_count_with_an_estimate(tmp_path):
    """A summary and four indicator notebooks per setting: 49 settings make 197 notebook
    executions (run without --yes), 50 make 201 (refused, with the size and an estimate;
    --yes runs it)."""
    from demonoise.report.batch.stages import MAX_NOTEBOOKS, plan

    assert len(plan(_params(49), tmp_path / "a", yes=False).runs) == 1 + 4 * 49 <= MAX_NOTEBOOKS
    with pytest.raises(ParameterError, match=r"1 reports, 201 notebook executions, about \d+ minutes on 2 workers"):
        plan(_params(50), tmp_path / "b", yes=False)
    assert len(plan(_params(50), tmp_path / "b", yes=True).runs) == 201


# ----------------------------------------------------------------------------- contract
def _notebook(tmp_path, source, tags=("parameters",), name="n.ipynb"):
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["tags"] = list(tags)
    nb.cells = [cell, nbformat.v4.new_code_cell("print(country)")]
    path = tmp_path / name
    nbformat.write(nb, path)
    return path


def test_notebook_without_a_parameters_tag_is_named(tmp_path):
    from demonoise.report.batch.execute import check_defined

    path = _notebook(tmp_path, "country = 'LU'\n", tags=())
    with pytest.raises(ReportError, match=r"n.ipynb has no code cell tagged 'parameters'"):
        check_defined(path, ["country"])


def test_notebook_missing_an_injected_parameter_is_named(tmp_path):
    from demonoise.report.batch.execute import check_defined

    path = _notebook(tmp_path, "dataset = 'ess-2023'\nsetting: dict = {}\n")
    assert check_defined(path, ["dataset", "setting"]) == ("dataset", "setting")
    with pytest.raises(ReportError, match=r"n.ipynb: its 'parameters' cell does not define country"):
        check_defined(path, ["dataset", "country"])


def test_unknown_parameter_is_an_error_naming_it(tmp_path):
    from demonoise.report.batch.execute import check_defined

    path = _notebook(tmp_path, "region = 'BE10'\nV = 1\n")
    check_defined(path, {"region": "BE21"}, "whatif")
    with pytest.raises(
        ParameterError, match=r"unknown parameter 'regoin' for notebook whatif; its parameters: region, V"
    ):
        check_defined(path, {"regoin": "BE21"}, "whatif")


def test_section_showing_another_country_is_caught(tmp_path):
    from demonoise.report.batch.stages import check_shown
    from demonoise.report.content.notebook import SHOWN
    from demonoise.report.document.assemble import METRICS_MIME

    nb = nbformat.v4.new_notebook()
    record = {"dataset": ["ess-2023"], "country": ["LU"], "setting": "V = 1", "settings": ["V = 1"]}
    out = nbformat.v4.new_output("display_data", data={METRICS_MIME: {SHOWN: record}})
    nb.cells = [nbformat.v4.new_code_cell("x", outputs=[out])]
    nbformat.write(nb, tmp_path / "e.ipynb")
    check_shown(tmp_path / "e.ipynb", dataset="ess-2023", country="LU", setting="V = 1")
    with pytest.raises(ReportError, match="country LU instead of BE"):
        check_shown(tmp_path / "e.ipynb", dataset="ess-2023", country="BE", setting="V = 1")
    with pytest.raises(ReportError, match="setting V = 1 instead of V = 5"):
        check_shown(tmp_path / "e.ipynb", dataset="ess-2023", country="LU", setting="V = 5")
    nbformat.write(nbformat.v4.new_notebook(), tmp_path / "none.ipynb")
    with pytest.raises(ReportError, match="did not record what it shows"):
        check_shown(tmp_path / "none.ipynb", dataset="ess-2023", country="LU")


# ------------------------------------------------------------------------- p-table D
def test_building_a_ptable_beyond_the_build_limit_is_refused_at_once():
    import time

    from demonoise.noise.ptable import BUILD_D_MAX, build_ptable

    t0 = time.perf_counter()
    with pytest.raises(ParameterError, match=rf"D \(maximum deviation\) = {BUILD_D_MAX + 1} is above the limit"):
        build_ptable(BUILD_D_MAX + 1, 1.0)
    assert time.perf_counter() - t0 < 1.0  # refused before any row is solved
