"""Puts files that live elsewhere in the repository into the site while it is built
(mkdocs-gen-files), so that they have one home: the notebooks of notebooks/ become the
Tutorials pages (mkdocs-jupyter executes them), and benchmark figures go beside their pages."""

from __future__ import annotations

from pathlib import Path

import mkdocs_gen_files

ROOT = Path(__file__).resolve().parents[1]
COPIES = {
    **{f"tutorials/{path.name}": path for path in sorted((ROOT / "notebooks").glob("*.ipynb"))},
    "benchmarks/optimizers.png": ROOT / "benchmarks" / "optimizers.png",
}

for target, source in COPIES.items():
    with mkdocs_gen_files.open(target, "wb") as out:
        out.write(source.read_bytes())
