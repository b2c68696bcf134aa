"""Make this folder's runs with pinn 0.1.0, the code of commit 229d040 (before the library was
split into its present folders): `stopped/`, a run stopped by Ctrl-C at step 21 (mid-Adam), and
`finished/`, the same run to its end (only its checkpoint, config and metrics are kept here).

    git worktree add /tmp/pinn-0.1.0 229d040
    cd /tmp/pinn-0.1.0 && OMP_NUM_THREADS=1 python <this file> <folder>

tests/run/test_old_runs.py reads OVERRIDES from here.
"""

import os
import shutil
import signal
import sys
from pathlib import Path

OVERRIDES = [
    "problem=poisson",
    "seed=3",
    "threads=1",
    "trainer.progress=false",
    "problem.n_interior=48",
    "problem.n_boundary=16",
    "model.width=6",
    "model.depth=2",
    "trainer.phases=[adam,lbfgs]",
    "trainer.adam.steps=40",
    "trainer.lbfgs.steps=10",
    "trainer.log_every=5",
    "trainer.checkpoint_every=5",
    "trainer.adam.resample_every=7",
]


def make(folder: Path) -> None:
    import pinn
    import pinn.run.train as train_module  # pinn 0.1.0's module paths
    from pinn.errors import TrainingInterrupted
    from pinn.training.callbacks import Callback

    class Stop(Callback):
        def on_row(self, row, state):
            if row["step"] >= 20:
                os.kill(os.getpid(), signal.SIGINT)

    for name in ("stopped", "finished"):
        shutil.rmtree(folder / name, ignore_errors=True)
    pinn.train(pinn.compose_config(OVERRIDES), folder / "finished")
    train_module.run_loggers = lambda logger, run_dir: [Stop()]
    try:
        pinn.train(pinn.compose_config(OVERRIDES), folder / "stopped")
    except TrainingInterrupted as stopped:
        print(stopped)


if __name__ == "__main__":
    make(Path(sys.argv[1]))
