"""Read every Eurostat file of a folder: rows, seconds, and TOTAL rows that differ from their cells.

Usage::

    PYTHONPATH=lib:tests .venv/bin/python benchmarks/io_read.py DIR

Not part of the tests (the files are large); prints one line per file.
"""

import sys
import time
from pathlib import Path

from demonoise.core.errors import FormatError
from demonoise.io.eurostat import read_eurostat
from demonoise.io.tidy import total_mismatches


def main(folder: Path) -> None:
    for f in sorted(folder.iterdir()):
        if f.is_dir():
            continue
        t0 = time.perf_counter()
        try:
            df = read_eurostat(f)
        except FormatError as e:
            print(f"{f.name}: not read ({e.reason})")
            continue
        dt = time.perf_counter() - t0
        line = (
            f"{f.name}: {df.attrs['format']}, {len(df):,} rows, {dt:.2f} s, "
            f"dataset {df.attrs['dataset']}, extracted {df.attrs['extracted']}"
        )
        if "age" in df.columns and (df["age"] == "TOTAL").any() and "unit" in df.columns and (df["unit"] == "NR").all():
            bad = total_mismatches(df)
            line += f"; TOTAL rows differing from their cells: {len(bad)}"
            if len(bad):
                line += f" (max |diff| {bad['difference'].abs().max():g})"
        print(line)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
