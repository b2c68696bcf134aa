"""`pinn problem=<name> [key=value ...]` (or `python -m pinn ...`): a thin Hydra entry point
around `train`. Its configs are pinn's own, then those in the working directory's conf/
(`pinn.config.locations`); problem modules import from the working directory too.

Under `torchrun --nproc_per_node=N -m pinn ...` each process runs this; only rank 0 keeps a
Hydra run directory and log.
"""

import os
import sys
import tempfile
import textwrap
from pathlib import Path

import hydra
from hydra.core.hydra_config import HydraConfig
from hydra.types import RunMode
from omegaconf import DictConfig
from omegaconf.errors import OmegaConfBaseException

from pinn.config.compose import prepare_hydra
from pinn.config.docs import key_docs
from pinn.config.locations import CONF_DIR, shadowed_problems, user_conf_dir, user_conf_overrides
from pinn.errors import PinnError, TrainingInterrupted
from pinn.run.reporting import log_to_files, one_line, report, run_reporting
from pinn.run.rundir import check_cli_run_dir
from pinn.run.sweep import run_job
from pinn.run.train import train
from pinn.training.distributed import launched, stop


@hydra.main(config_path=str(CONF_DIR), config_name="config", version_base="1.3")
def main(cfg: DictConfig) -> float | None:
    hydra_cfg = HydraConfig.get()
    run_dir = hydra_cfg.runtime.output_dir
    try:
        if hydra_cfg.mode == RunMode.MULTIRUN:  # a failing job is recorded, the sweep goes on
            return sweep_job(cfg, run_dir, hydra_cfg.job.num, hydra_cfg.overrides.task)
        metrics = train(cfg, run_dir)
    except TrainingInterrupted as stopped:  # Ctrl-C, SIGTERM: checkpointed, no traceback
        stop(wait=False)
        if is_rank_zero():  # under torchrun every process stopped at the same step
            print(stopped, file=sys.stderr)
        sys.exit(stopped.exit_code)
    except KeyboardInterrupt:  # outside training: nothing to save
        stop(wait=False)
        print("pinn: interrupted", file=sys.stderr)
        sys.exit(130)
    except PinnError as error:
        stop(wait=False)
        report(str(error))  # once, on rank 0
    except OmegaConfBaseException as error:  # a value the run reads is missing or mistyped:
        stop(wait=False)  # said here, before Hydra's "Error executing job" line would be
        report(one_line(error, key_docs()))
    stop()
    if is_rank_zero():  # rank 0 speaks for all
        print(summary(metrics, run_dir))
    return metrics["rel_l2"]  # what a Hydra sweeper would minimise


def is_rank_zero() -> bool:
    """Whether this process speaks for the run: a plain run, or rank 0 under torchrun."""
    place = launched()
    return place is None or place[0] == 0


def sweep_job(cfg: DictConfig, run_dir: str, job: int, overrides) -> float | None:
    """One job of a multirun: its summary, or its error in one line (recorded in its
    status.json by `run_job`; the sweep's summary and exit status count it)."""
    metrics, error = run_job(train, cfg, run_dir, job, overrides)
    stop(wait=error is None)
    if error is not None:
        line = f"pinn: error: job {job} ({' '.join(overrides)}): {error}"
        print(line, file=sys.stderr)
        log_to_files(line)  # the job's own __main__.log
        return None
    print(summary(metrics, run_dir))
    return metrics["rel_l2"]


def quiet_overrides() -> list[str]:
    """Hydra overrides for a torchrun process other than rank 0: no run directory of its own
    (rank 0's name holds a timestamp another process may not share), no .hydra/, no log.

    Its run directory is the system's temporary directory, which exists: Hydra creates
    nothing there, and `train` writes nothing from a rank other than 0."""
    if is_rank_zero():
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
        f"{name:<15}{value:.10g} (learned)" for name, value in metrics.get("unknowns", {}).items()
    ]
    return "\n".join(
        [
            "",
            f"rel_l2         {number(metrics['rel_l2'])}",
            f"max_abs_error  {number(metrics['max_abs_error'])}",
            *learned,
            f"final_loss     {metrics['final_loss']:.3e}",
            f"fresh_loss     {metrics['fresh_loss']:.3e}",
            f"steps          {metrics['steps']}",
            f"wall_time_s    {metrics['wall_time_s']:.1f}",
            f"outputs in     {run_dir}",
            *written_files(Path(run_dir)),
        ]
    )


def written_files(run_dir: Path, width: int = 80) -> list[str]:
    """The run directory's files (the log and hidden ones aside), in parentheses, as lines
    of at most `width` characters indented under the summary's values."""
    if not run_dir.is_dir():
        return []
    names = sorted(
        p.name + ("/" if p.is_dir() else "")
        for p in run_dir.iterdir()
        if not p.name.startswith((".", "__main__"))
    )
    indent = " " * 15
    listed = f"({', '.join(names)})" if names else ""
    return textwrap.wrap(
        listed,
        width,
        initial_indent=indent,
        subsequent_indent=indent + " ",
        break_long_words=False,
        break_on_hyphens=False,
    )


def cli() -> None:
    """The `pinn` console script, and `python -m pinn`: the working directory goes first on
    sys.path (as `python -m` puts it) so a problem module there imports, its conf/ is searched
    after pinn's configs, a run directory that `train` would refuse is refused before Hydra
    writes its .hydra/ and log there, and a torchrun rank other than 0 runs quietly."""
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    searched = user_conf_overrides(sys.argv[1:])
    for name in shadowed_problems() if searched else []:
        print(
            f"pinn: conf/problem/{name}.yaml here is not used: {name} is a pinn problem "
            "(give yours another name)",
            file=sys.stderr,
        )
    quiet = quiet_overrides()
    if not quiet:  # rank 0 (or a plain run) writes the run directory: refused before Hydra
        try:
            check_cli_run_dir(sys.argv[1:])
        except PinnError as error:
            report(str(error))
    sys.argv += quiet + searched
    prepare_hydra(CONF_DIR, user_conf_dir())  # pinn_defaults and hydra/help=pinn
    run_reporting(main, key_docs())


if __name__ == "__main__":
    cli()
