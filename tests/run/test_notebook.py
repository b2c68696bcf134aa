"""The notebooks run top to bottom (with small step counts) and report their errors."""

import os
import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
SMALL = "ADAM_STEPS = 100\nLBFGS_STEPS = 50\nN_INTERIOR = 256\nN_BOUNDARY = 64\n"


def execute(name: str, tmp_path: Path, small: str = SMALL) -> tuple[str, int]:
    """Run the notebook with `small` parameters; returns its printed text and its image count."""
    notebook = nbformat.read(NOTEBOOKS / name, as_version=4)
    parameters = [c for c in notebook.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(parameters) == 1
    parameters[0].source = small
    client = NotebookClient(
        notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": tmp_path}}
    )
    client.execute(env={**os.environ, "OMP_NUM_THREADS": "1"})
    outputs = [output for cell in notebook.cells for output in cell.get("outputs", [])]
    text = "".join(output.get("text", "") for output in outputs)
    images = sum("image/png" in output.get("data", {}) for output in outputs)
    return text, images


def rel_l2(text: str) -> float:
    return float(re.search(r"rel_l2 ([0-9.e+-]+)", text).group(1))


def test_quickstart_executes_and_learns(tmp_path):
    text, images = execute("quickstart.ipynb", tmp_path)
    assert rel_l2(text) < 0.2  # 150 steps on 256 points: learning, far from converged
    assert images == 1


@pytest.mark.slow  # a notebook training on a CSG plate (the quickstart runs fast)
def test_geometry_notebook_trains_on_a_plate_with_a_hole(tmp_path):
    text, images = execute("geometry.ipynb", tmp_path)
    assert "('x_min', 'x_max', 'y_min', 'y_max', 'hole')" in text
    area = re.search(r"area ([0-9.]+) \(exact ([0-9.]+)\)", text)
    assert abs(float(area.group(1)) - float(area.group(2))) < 2e-3
    assert rel_l2(text) < 0.2  # 150 steps on 256 points: learning, far from converged
    assert images == 2  # the points with their normals, and the solution


@pytest.mark.slow  # three Allen-Cahn trainings side by side (the quickstart runs fast)
def test_hard_pdes_compares_allen_cahn_variants_side_by_side(tmp_path):
    small = "ADAM_STEPS = 20\nN_INTERIOR = 128\nN_BOUNDARY = 48\n"
    text, images = execute("hard_pdes.ipynb", tmp_path, small)
    errors = {
        name: float(value)
        for name, value in re.findall(r"^(.+): rel_l2 ([0-9.e+-]+) after 20 steps$", text, re.M)
    }
    assert list(errors) == [
        "plain (soft periodic term)",
        "periodic embedding",
        "periodic embedding + causal",
    ]
    assert all(0 < error < 2 for error in errors.values())  # trained a little, finite
    weights = [float(w) for w in re.search(r"^\[([0-9., ]+)\]$", text, re.M).group(1).split(",")]
    assert len(weights) >= 2 and all(0 <= w <= 1 for w in weights)
    assert images == 1  # the space-time maps side by side
