"""`pinn problem=<name> [key=value ...]` (or `python -m pinn ...`): a thin Hydra entry point
around `train`. Its configs are pinn's own, then those in the working directory's conf/
(`pinn.run.configs`); problem modules import from the working directory too.

Under `torchrun --nproc_per_node=N -m pinn ...` each process runs this; only rank 0 keeps a
Hydra run directory and log.
"""

import os
import sys
import tempfile

import hydra
from hydra.core.hydra_config import HydraConfig
from omegaconf import DictConfig

from pinn.errors import PinnError
from pinn.run.configs import CONF_DIR, shadowed_problems, user_conf_overrides
from pinn.run.train import train
from pinn.training.distributed import launched, stop


@hydra.main(config_path=str(CONF_DIR), config_name="config", version_base="1.3")
def main(cfg: DictConfig) -> float | None:
    run_dir = HydraConfig.get().runtime.output_dir
    try:
        metrics = train(cfg, run_dir)
    except PinnError as error:
        stop(wait=False)
        print(f"pinn: error: {error}", file=sys.stderr)
        sys.exit(1)
    stop()
    place = launched()
    if place is None or place[0] == 0:  # rank 0 speaks for all
        print(summary(metrics, run_dir))
    return metrics["rel_l2"]  # what a Hydra sweeper would minimise


def quiet_overrides() -> list[str]:
    """Hydra overrides for a torchrun process other than rank 0: no run directory of its own
    (rank 0's name holds a timestamp another process may not share), no .hydra/, no log.

    Its run directory is the system's temporary directory, which exists: Hydra creates
    nothing there, and `train` writes nothing from a rank other than 0."""
    place = launched()
    if place is None or place[0] == 0:
        return []
    return [
        f"hydra.run.dir={tempfile.gettempdir()}",
        "hydra.output_subdir=null",
        "hydra/job_logging=disabled",
        "hydra/hydra_logging=disabled",
    ]


def summary(metrics: dict, run_dir: str) -> str:
    """The few lines the console ends with."""

    def number(value):
        return "n/a (no exact solution)" if value is None else f"{value:.3e}"

    learned = [
        f"{name:<15}{value:.6g} (learned)" for name, value in metrics.get("unknowns", {}).items()
    ]
    return "\n".join(
        [
            "",
            f"rel_l2         {number(metrics['rel_l2'])}",
            f"max_abs_error  {number(metrics['max_abs_error'])}",
            *learned,
            f"final_loss     {metrics['final_loss']:.3e}",
            f"steps          {metrics['steps']}",
            f"wall_time_s    {metrics['wall_time_s']:.1f}",
            f"outputs in     {run_dir}",
            "               (metrics.json, history.csv, prediction.npz, solution.png, loss.png,",
            "                checkpoint.pt)",
        ]
    )


def cli() -> None:
    """The `pinn` console script, and `python -m pinn`: the working directory goes first on
    sys.path (as `python -m` puts it) so a problem module there imports, its conf/ is searched
    after pinn's configs, and a torchrun rank other than 0 runs quietly."""
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    searched = user_conf_overrides(sys.argv[1:])
    for name in shadowed_problems() if searched else []:
        print(
            f"pinn: conf/problem/{name}.yaml here is not used: {name} is a pinn problem "
            "(give yours another name)",
            file=sys.stderr,
        )
    sys.argv += quiet_overrides() + searched
    main()


if __name__ == "__main__":
    cli()
