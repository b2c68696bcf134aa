"""Host synchronisations (`pinn.syncs`): the counter counts what it says it counts, and an eager
Adam step between logged rows makes none, on the CPU, with named boundary parts, Neumann
conditions, observations, unknowns, hard constraints and redraws; a refinement makes one."""

from collections import Counter

import pytest
import torch

from pinn import MLP, Box, Dirichlet, Neumann, PointSampler, Problem, TrainSettings, fit
from pinn.geometry.refinement import Refinement
from pinn.nn import InputOptions
from pinn.problems.annulus import Annulus
from pinn.problems.inverse_poisson import InversePoisson
from pinn.problems.poisson import Poisson
from pinn.syncs import count_syncs, device_constant, on_host
from pinn.training.recording import Recorder

LOG_EVERY = 5
STEPS = 12


class MixedParts(Problem):
    """-Δu = 1 on the unit square: Dirichlet on two named sides, Neumann on the others (one by
    a value function)."""

    domain = Box([0, 0], [1, 1])
    conditions = [
        Dirichlet(on=["x_min", "x_max"], value=0.0),
        Neumann(on="y_min", value=0.0, name="bottom"),
        Neumann(on=["y_max"], value=lambda x: torch.sin(x[:, 0]), name="top"),
    ]

    def residual(self, x, u):
        return u.laplacian() + 1.0


# ---- the counter ----------------------------------------------------------------------------


def test_each_kind_of_wait_is_counted_once():
    x = torch.linspace(-1, 1, 5, requires_grad=True)
    with count_syncs() as syncs:
        x.sum().item()
        bool(x.sum() > 0)
        float(x.detach().max())
        x.detach().tolist()
        x.detach().numpy()
        x.cpu()
        torch.equal(x, x)
        x[x > 0].sum().backward()  # the mask's indexing and its backward
        torch.tensor([1.0, 2.0])
        x.detach().to("meta")  # a copy between devices that waits
    assert syncs.counts == Counter(
        {
            "item": 3,
            ".tolist()": 1,
            ".numpy()": 1,
            ".cpu()": 1,
            "torch.equal": 1,
            "boolean index": 2,
            "tensor from Python data": 1,
            "copy between devices": 1,
        }
    )


def test_what_does_not_wait_is_not_counted():
    x = torch.linspace(-1, 1, 5, requires_grad=True)
    rows = torch.arange(2, 4)
    with count_syncs() as syncs:
        (x[rows] * 2.0).sum().backward()  # long indices: no count from the values
        x.detach().to("meta", non_blocking=True)
        device_constant([1.0, 0.0], torch.float32, "cpu")
        with on_host():
            torch.tensor([3.0]).item()
    assert syncs.total == 0
    assert torch.Tensor.tolist is not None and "count" not in torch.Tensor.tolist.__qualname__


# ---- Adam steps -----------------------------------------------------------------------------


def syncs_per_step(problem, monkeypatch, refinement=None, device="cpu", **adam):
    """[Counter of the syncs of each Adam step] of a short float32 fit of `problem`."""
    model = MLP(
        len(problem.domain.lower),
        len(problem.outputs),
        16,
        2,
        inputs=InputOptions(lower=problem.domain.lower, upper=problem.domain.upper),
        generator=torch.Generator().manual_seed(0),
    ).to(device)
    generator = torch.Generator().manual_seed(1)
    points = PointSampler(
        problem.domain, 64, 32, "sobol", generator, device=device, refinement=refinement
    )
    settings = TrainSettings(
        adam={"steps": STEPS, **adam}, lbfgs={"steps": 0}, log_every=LOG_EVERY, progress=False
    )
    steps, advance = [], Recorder.advance
    with count_syncs() as syncs:
        seen = [Counter()]

        def counted_advance(recorder, *args, **kwargs):  # called at the end of each step
            steps.append(syncs.counts - seen[0])
            seen[0] = Counter(syncs.counts)
            return advance(recorder, *args, **kwargs)

        monkeypatch.setattr(Recorder, "advance", counted_advance)
        fit(problem, model, settings, points)
    assert len(steps) == STEPS
    return steps


def between_rows(steps):
    """{step: its syncs} of the steps that log no row (nor are the first)."""
    return {i: dict(c) for i, c in enumerate(steps) if i % LOG_EVERY != 0}


PROBLEMS = {
    "poisson": lambda: Poisson(hard_boundary=False),
    "named parts, Neumann": MixedParts,
    "observations, unknowns": InversePoisson,
    "hard constraint, Neumann on a part": Annulus,
}


@pytest.mark.parametrize("name", PROBLEMS)
def test_adam_steps_between_rows_make_no_sync(name, monkeypatch):
    steps = syncs_per_step(PROBLEMS[name](), monkeypatch, resample_every=3)
    assert between_rows(steps) == {i: {} for i in between_rows(steps)}
    assert steps[LOG_EVERY].total() > 0  # a logged row reads its losses: counted


def test_a_refinement_waits_once_for_its_residuals(monkeypatch):
    refinement = Refinement(method="rad", candidates=200)
    steps = syncs_per_step(MixedParts(), monkeypatch, refinement, resample_every=4, refine_every=3)
    expected = {i: ({".cpu()": 1} if i % 3 == 0 else {}) for i in between_rows(steps)}
    assert between_rows(steps) == expected
