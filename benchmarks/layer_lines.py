"""Lines of the library per layer (``wc -l`` of its ``.py`` files), and the presentation
layer (``report/`` and ``cli.py``) against its goal of at most 6 000 lines.

Run from the repository root: ``python benchmarks/layer_lines.py``.
"""

from __future__ import annotations

from pathlib import Path

LIB = Path(__file__).resolve().parents[1] / "lib" / "demonoise"
LAYERS = ("core", "runtime", "io", "demography", "noise", "uncertainty", "analysis")
REPORT = ("report/batch", "report/document", "report/content")
GOAL = 6000


def lines(path: Path) -> int:
    files = [path] if path.is_file() else sorted(path.rglob("*.py"))
    return sum(len(f.read_text(encoding="utf-8").splitlines()) for f in files)


def main() -> None:
    rows = {name: lines(LIB / name) for name in (*LAYERS, *REPORT, "report", "cli.py")}
    library = lines(LIB)
    for name, n in rows.items():
        print(f"{name:<16} {n:6d}")
    shown = rows["report"] + rows["cli.py"]
    print(f"{'library':<16} {library:6d}")
    print(f"report/ + cli.py {shown:6d} ({100 * shown / library:.0f} % of the library; goal at most {GOAL})")


if __name__ == "__main__":
    main()
