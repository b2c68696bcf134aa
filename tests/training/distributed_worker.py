"""One process of a data-parallel run, for tests/training/test_distributed.py (torchrun,
gloo, 1 thread).

    python -m torch.distributed.run --nproc_per_node=2 tests/training/distributed_worker.py MODE OUT

MODE train: the inverse Poisson problem (an unknown kappa) with LRA weights and RAD, Adam with
    points redrawn, then L-BFGS, float64, a checkpoint every 4 steps. Rank r writes
    OUT/rank<r>.pt: the final parameters, unknowns, loss weights and history. Rank 0 also
    keeps every checkpoint the run wrote (OUT/checkpoint<k>.pt); then every process resumes
    from a middle one, in the Adam phase, and one in L-BFGS, and writes what that ends with
    as OUT/rank<r>_resumed_<k>.pt.
MODE rar: the train run with RAR instead of RAD and no resumption; rank r writes OUT/rank<r>.pt.
MODE gradient: each process draws its share of points, takes the loss and its gradient at the
    starting parameters, and averages them over the processes as the trainer does. Rank r
    writes OUT/rank<r>.pt: the averaged loss, terms and gradient, and its own points.
"""

import shutil
import sys
from pathlib import Path

import torch

import pinn.training.checkpoints
from pinn import MLP, PointSampler, Refinement, TrainSettings, fit
from pinn.derivatives.engines import Engine
from pinn.nn import InputOptions
from pinn.problem import loss_terms
from pinn.problems.inverse_poisson import InversePoisson
from pinn.training.distributed import World, rank_seed, start, stop
from pinn.training.strategies.weighting import LossWeights

SETTINGS = TrainSettings(
    phases=["adam", "lbfgs", "bfgs"],
    adam={"steps": 24, "resample_every": 3, "refine_every": 10},
    lbfgs={"steps": 12},
    bfgs={"steps": 12},
    log_every=4,
    checkpoint_every=4,
    weighting="lra",
    weighting_every=5,
    progress=False,
)
WEIGHTS = {"dirichlet": 10.0, "data": 10.0}


def parts(world: World, refine: str = "rad"):
    """The problem, the model (the same on every process) and this process's sampler."""
    problem = InversePoisson(n_observations=20)
    model = MLP(
        2, 1, width=8, depth=2, inputs=corners(problem), generator=torch.Generator().manual_seed(0)
    ).double()
    problem.attach_unknowns(torch.float64, torch.device("cpu"))
    generator = torch.Generator().manual_seed(rank_seed(1, world.rank))
    refinement = Refinement(refine, candidates=200, add=8)
    points = PointSampler(
        problem.domain, 48, 24, "sobol", generator, torch.float64, "cpu", refinement
    )
    return problem, model, points


def corners(problem) -> InputOptions:
    return InputOptions(lower=problem.domain.lower, upper=problem.domain.upper)


def outcome(problem, model, result) -> dict:
    return {
        "parameters": [p.detach().clone() for p in model.parameters()],
        "unknowns": problem.unknowns_for(torch.float64, torch.device("cpu")).values(),
        "history": [{k: v for k, v in row.items() if k != "time_s"} for row in result.history],
    }


def train(world: World, out: Path) -> None:
    kept = []
    original = pinn.training.checkpoints.save_checkpoint

    def keep(path, state):  # rank 0 writes; keep each state it writes
        original(path, state)
        copy = out / f"checkpoint{len(kept)}.pt"
        shutil.copy(path, copy)
        kept.append((copy, state["training"]["phase"]))

    pinn.training.checkpoints.save_checkpoint = keep
    problem, model, points = parts(world)
    result = fit(problem, model, SETTINGS, points, WEIGHTS, checkpoint_path=out / "run.pt")
    torch.save(outcome(problem, model, result), out / f"rank{world.rank}.pt")
    pinn.training.checkpoints.save_checkpoint = original

    # Every process resumes from the checkpoints rank 0 kept (their names travel to all).
    kept = world.gather(kept)[0]
    adam = [k for k, (_, phase) in enumerate(kept) if phase == "adam"]
    lbfgs = [k for k, (_, phase) in enumerate(kept) if phase == "lbfgs"]
    bfgs = [k for k, (_, phase) in enumerate(kept) if phase == "bfgs"]
    for k in (adam[len(adam) // 2], lbfgs[len(lbfgs) // 2], bfgs[len(bfgs) // 2]):
        problem, model, points = parts(world)
        resumed = fit(problem, model, SETTINGS, points, WEIGHTS, resume_from=kept[k][0])
        torch.save(outcome(problem, model, resumed), out / f"rank{world.rank}_resumed_{k}.pt")


def rar(world: World, out: Path) -> None:
    problem, model, points = parts(world, "rar")
    result = fit(problem, model, SETTINGS, points, WEIGHTS)
    added = len(points.state_dict()["added"])  # RAR's points, kept for good
    torch.save(outcome(problem, model, result) | {"added": added}, out / f"rank{world.rank}.pt")


def gradient(world: World, out: Path) -> None:
    problem, model, points = parts(world)
    batch = points.draw()
    engine = Engine("auto", model, batch.interior[:2])
    terms = loss_terms(problem, model, batch, engine)
    loss = LossWeights(WEIGHTS).total(terms)
    loss.backward()
    parameters = [
        *model.parameters(),
        *problem.unknowns_for(torch.float64, torch.device("cpu")).parameters(),
    ]
    terms, loss = world.average_loss(terms, loss, parameters)
    boundary = batch.boundary
    torch.save(
        {
            "loss": loss,
            "terms": terms,
            "gradient": [p.grad.clone() for p in parameters],
            "interior": batch.interior,
            "boundary": (boundary.points, boundary.normals, boundary.part),
        },
        out / f"rank{world.rank}.pt",
    )


if __name__ == "__main__":
    torch.set_num_threads(1)
    mode, out = sys.argv[1], Path(sys.argv[2])
    world = start(torch.device("cpu"), timeout_s=60)
    {"train": train, "rar": rar, "gradient": gradient}[mode](world, out)
    stop()
