"""benchmarks/gauss_newton_memory.py plans its grid before running it: every solver (and KFAC) at
each P and R of 10^3 to 10^5, the cells estimated above the memory budget printed "does not
fit"."""

import subprocess
import sys
from pathlib import Path

from cli_helpers import cli_environment

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "gauss_newton_memory.py"


def planned(*options: str) -> dict[tuple[str, str, str], str]:
    """{(P, R, solver): what the seconds' column says} of `--estimate-only` with `options`."""
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--estimate-only", *options],
        capture_output=True,
        text=True,
        env=cli_environment(),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    cells = [line.split("|")[1:-1] for line in done.stdout.splitlines() if line[2:3].isdigit()]
    return {tuple(c.strip() for c in cell[:3]): cell[3].strip() for cell in cells}


def test_the_default_grid_runs_what_fits_in_24_gib():
    cells = planned()
    assert len(cells) == 3 * 3 * 5
    assert {P for P, _, _ in cells} == {"1009", "9937", "99901"}
    assert {R for _, R, _ in cells} == {"1000", "10000", "100000"}
    too_large = {cell for cell, said in cells.items() if said == "does not fit"}
    assert ("99901", "1000", "parameters") in too_large  # P^2 8 bytes: 80 GB
    assert ("1009", "100000", "rows") in too_large  # R^2 8 bytes: 80 GB
    assert ("9937", "100000", "parameters") in too_large  # R P 8 bytes 8 GB, and its peak 6 x
    assert ("9937", "10000", "parameters") not in too_large
    # the matrix-free ones hold the rows' graph only: 10 GB at most
    assert not any(solver.startswith("cg") or solver == "kfac" for _, _, solver in too_large)
    assert set(cells.values()) == {"not run", "does not fit"}


def test_a_smaller_budget_leaves_out_more():
    cells = planned("--quick", "--memory-gib", "0.03")
    assert cells == {
        ("1009", "1000", "parameters"): "does not fit",  # about 70 MB
        ("1009", "1000", "rows"): "does not fit",
        ("1009", "1000", "cg-jacobi"): "not run",
        ("1009", "1000", "cg-nystrom"): "not run",
        ("1009", "1000", "kfac"): "not run",
    }
