"""The KFAC optimiser and phase: the preconditioner against the dense damped blocks' solve; the
phase lowers Poisson's loss, trains parameters without factors by their diagonal (FactorizedLinear,
PirateNet's gates, an inverse problem's unknown), resumes bit for bit from any checkpoint, and
refuses bad settings, orders of derivative it cannot carry, models the Taylor pass cannot run and
torchrun in one line."""

import io
import re
from types import SimpleNamespace

import pytest
import torch
from test_residual_rows import Dispersive, PeriodicHeat
from test_trainer import flat, resume_from_each, small_run
from torch import nn

from pinn import ConfigError, TrainSettings, fit
from pinn.errors import CheckpointError
from pinn.geometry import PointSampler
from pinn.nn import MLP, InputOptions, PirateNet
from pinn.problems.inverse_poisson import InversePoisson
from pinn.problems.poisson import Poisson
from pinn.training.distributed import World
from pinn.training.optim.kfac import KFAC
from pinn.training.phases import KFACPhase, KFACSettings
from pinn.training.rows.layer_curvature import LayerCurvatureRows, factored_layers

RUN = dict(phases=["adam", "kfac"], adam={"steps": 100}, log_every=5)


@pytest.mark.parametrize(
    "settings, fall",
    [({}, 0.05), ({"approximation": "reduce"}, 0.5), ({"step_rule": "line_search"}, 0.1)],
)
def test_kfac_lowers_poissons_loss_in_a_few_iterations(settings, fall):
    model, result = small_run(**RUN, kfac={"steps": 10, **settings})
    adam_end = [row for row in result.history if row["phase"] == "adam"][-1]["loss"]
    rows = [row for row in result.history if row["phase"] == "kfac"]
    assert len(rows) == 10 and all(row["gn_length"] > 0 for row in rows)
    # measured from 0.113 after Adam: 1.8e-3 (expand, kfac_star), 2.8e-2 (reduce), 2.2e-3 (the
    # KFAC direction alone, its search taking lengths 1/64 to 1/8 at this small damping)
    assert result.final_loss < fall * adam_end, settings


def test_factors_every_n_iterations_are_made_that_often_and_still_lower_the_loss(monkeypatch):
    made = []
    make = LayerCurvatureRows.__call__

    def counting(self, batch, generator):
        made.append(len(made))
        return make(self, batch, generator)

    monkeypatch.setattr(LayerCurvatureRows, "__call__", counting)
    _, result = small_run(**RUN, kfac={"steps": 10, "factors_every": 3})
    rows = [row for row in result.history if row["phase"] == "kfac"]
    assert len(rows) == 10 and len(made) == 4  # iterations 1, 4, 7, 10
    adam_end = [row for row in result.history if row["phase"] == "adam"][-1]["loss"]
    # measured 6.3e-3 from 0.113 (every iteration's factors: 1.8e-3, above)
    assert result.final_loss < 0.1 * adam_end


def test_parameters_without_factors_train_by_their_diagonal():
    """A FactorizedLinear network has no nn.Linear: every parameter takes the diagonal
    block, and the loss still falls; an inverse problem's unknown moves towards its value."""
    problem = Poisson(hard_boundary=False)
    model = MLP(
        2,
        1,
        width=8,
        depth=2,
        inputs=InputOptions(factorize=(1.0, 0.1)),
        generator=torch.Generator().manual_seed(0),
    ).double()
    assert factored_layers(model, torch.zeros(2, 2, dtype=torch.float64)) == []
    before = flat(model).clone()
    points = PointSampler(
        problem.domain, 64, 32, "sobol", torch.Generator().manual_seed(1), dtype=torch.float64
    )
    settings = TrainSettings(**RUN, kfac={"steps": 5}, progress=False)
    result = fit(problem, model, settings, points)
    kfac = [row["loss"] for row in result.history if row["phase"] == "kfac"]
    assert len(kfac) == 5 and kfac[-1] < kfac[0]
    assert not torch.equal(before, flat(model))


def test_an_inverse_problems_unknown_is_trained():
    problem = InversePoisson()
    _, result = small_run(problem=problem, **RUN, kfac={"steps": 10})
    kfac = [row["loss"] for row in result.history if row["phase"] == "kfac"]
    assert kfac[-1] < 0.5 * kfac[0]


def test_resuming_from_any_checkpoint_ends_exactly_like_the_uninterrupted_run(
    written_checkpoints,
):
    # the averages must be restored, and the factors of an iteration that keeps the last ones
    kfac = {"steps": 12, "resample_every": 5, "ema": 0.95, "factors_every": 3}
    settings = dict(RUN, adam={"steps": 20}, kfac=kfac, checkpoint_every=4)
    model, result = small_run(**settings, fit_options={"checkpoint_path": "unused.pt"})
    written = list(written_checkpoints)
    states = resume_from_each(written, settings, model, result)
    phases = [state["training"]["phase"] for state in states]
    assert phases.count("kfac") >= 2 and phases[-1] == "done"
    in_kfac = [data for data, phase in zip(written, phases) if phase == "kfac"]
    saved = torch.load(io.BytesIO(in_kfac[-1]), weights_only=True)["training"]["phase_state"]
    A, B = saved["optimizer"]["factors"]["pde"]["3"]
    assert A.shape == (9, 9) and B.shape == (8, 8) and A.dtype == torch.float64
    assert saved["optimizer"]["previous"].shape == flat(model).shape


@pytest.mark.parametrize(
    "key, value, message",
    [
        ("approximation", "full", "trainer.kfac.approximation must be one of expand, reduce"),
        ("step_rule", "adam", "trainer.kfac.step_rule must be one of kfac_star, line_search"),
        ("damping", 0.0, "trainer.kfac.damping must be a finite number > 0"),
        ("damping", float("nan"), "trainer.kfac.damping must be a finite number > 0"),
        ("ema", 1.0, "trainer.kfac.ema must be in [0, 1)"),
        ("line_search", 0, "trainer.kfac.line_search"),
        ("factors_every", 0, "trainer.kfac.factors_every"),
        ("factors_every", 1.5, "trainer.kfac.factors_every"),
        ("max_tries", 0, "trainer.kfac.max_tries"),
        ("steps", -1, "trainer.kfac.steps"),
        ("stall_decrease", 1.0, "trainer.kfac.stall_decrease must be in [0, 1)"),
        ("momentum", 0.9, "trainer.kfac has no key momentum"),
    ],
)
def test_bad_settings_are_refused_in_one_line(key, value, message):
    with pytest.raises(ConfigError, match=re.escape(message)) as refused:
        TrainSettings(kfac={key: value})
    assert "\n" not in str(refused.value)


def test_a_residual_of_order_three_is_refused_in_one_line():
    with pytest.raises(ConfigError, match="KFAC carries derivatives up to the second order"):
        small_run(problem=Dispersive(), **RUN, kfac={"steps": 2})


def test_a_periodic_condition_with_two_rows_per_point_trains():
    _, result = small_run(problem=PeriodicHeat(), **RUN, kfac={"steps": 5})
    kfac = [row["loss"] for row in result.history if row["phase"] == "kfac"]
    assert len(kfac) == 5 and kfac[-1] < kfac[0]


def test_pirate_nets_gates_take_the_diagonal_block_and_train():
    """PirateNet: its nn.Linear layers (gates, blocks, head) are factored, its blocks' scalar
    α (0 at the start) are not: they move by the diagonal block, and the loss falls."""
    problem = Poisson(hard_boundary=False)
    model = PirateNet(2, 1, width=8, depth=1, generator=torch.Generator().manual_seed(0))
    model = model.double()
    layers = factored_layers(model, torch.zeros(2, 2, dtype=torch.float64))
    linear = [name for name, m in model.named_modules() if isinstance(m, nn.Linear)]
    assert sorted(layers) == sorted(linear) and len(linear) >= 5
    points = PointSampler(
        problem.domain, 64, 32, "sobol", torch.Generator().manual_seed(1), dtype=torch.float64
    )
    settings = TrainSettings(phases=["kfac"], kfac={"steps": 5}, log_every=5, progress=False)
    assert model.blocks[0].alpha.item() == 0.0
    result = fit(problem, model, settings, points)
    kfac = [row["loss"] for row in result.history if row["phase"] == "kfac"]
    assert len(kfac) == 5 and kfac[-1] < 0.5 * kfac[0]
    assert model.blocks[0].alpha.item() != 0.0


def test_a_float32_model_takes_float64_steps_and_stays_float32():
    model, result = small_run(dtype=torch.float32, **RUN, kfac={"steps": 5})
    kfac = [row["loss"] for row in result.history if row["phase"] == "kfac"]
    assert all(p.dtype == torch.float32 for p in model.parameters())
    assert len(kfac) == 5 and kfac[-1] < 0.5 * kfac[0]  # measured: 0.091 to 0.013


class Branching(nn.Module):
    """A network whose forward branches on its points' values: no Taylor pass runs it."""

    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(2, 1).double()

    def forward(self, x):
        return self.layer(x) if x.sum() > 0 else -self.layer(x)


def test_a_model_the_taylor_pass_cannot_run_is_refused_before_training():
    problem = Poisson(hard_boundary=False)
    points = PointSampler(
        problem.domain, 16, 8, "sobol", torch.Generator().manual_seed(1), dtype=torch.float64
    )
    settings = TrainSettings(**RUN, kfac={"steps": 2}, progress=False)
    with pytest.raises(ConfigError, match="KFAC needs the Taylor pass") as refused:
        fit(problem, Branching(), settings, points)
    assert "\n" not in str(refused.value)


def test_torchrun_is_refused_in_one_line():
    with pytest.raises(ConfigError, match="kfac runs on one process") as refused:
        KFACPhase(KFACSettings()).check(SimpleNamespace(world=World(rank=0, size=2)))
    assert "\n" not in str(refused.value)


def test_a_state_of_an_older_pinn_is_refused_in_one_line():
    layer = nn.Linear(2, 1).double()
    optimizer = KFAC(list(layer.parameters()), {"": (0, 1)}, KFACSettings())
    state = optimizer.state_dict()
    del state["previous"]
    with pytest.raises(CheckpointError, match="KFAC state lacks previous.*without resume="):
        optimizer.load_state_dict(state)


@pytest.mark.parametrize(
    "extra",
    [{"causal": {"chunks": 4, "time": "t"}}, {"point_weights": {"method": "rba", "every": 2}}],
)
def test_causal_and_point_weights_hold_through_an_iteration_and_it_lowers_their_loss(extra):
    """The factors' rows are the engine's rows under causal weights (made at the iterate, held
    through its line search) and point weights; each KFAC row's loss is its step's."""
    _, result = small_run(problem=PeriodicHeat(), **RUN, kfac={"steps": 6}, **extra)
    rows = [row for row in result.history if row["phase"] == "kfac"]
    assert len(rows) == 6 and all(row["gn_length"] > 0 for row in rows)
    assert rows[-1]["loss"] < rows[0]["loss"]
