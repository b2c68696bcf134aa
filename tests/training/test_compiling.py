"""Compiled training steps: the compiled loss equals the eager one to float32 rounding, for the
library's problems (hard constraints, Neumann and initial conditions, systems, unknowns), and
`trainer.compile` decides, refuses and logs as documented."""

import logging
import os
import shutil

import pytest
import torch
from omegaconf import OmegaConf

from pinn import MLP, ConfigError, TrainSettings, fit
from pinn.config import compose_config
from pinn.config.schema import check_config
from pinn.derivatives.engines import Engine
from pinn.geometry import PointSampler
from pinn.nn import InputOptions
from pinn.problem import load_problem
from pinn.problem.loss import loss_terms
from pinn.problems.poisson import Poisson
from pinn.run.build import build_model
from pinn.training.compiling import CompiledLoss, check_compile, compile_decision, compile_mode
from pinn.training.strategies.weighting import LossWeights

# torch.compile's CPU code is C++: without a compiler these tests have nothing to compile with.
needs_compiler = pytest.mark.skipif(
    not any(shutil.which(c) for c in (os.environ.get("CXX", "g++"), "g++", "c++", "clang++")),
    reason="torch.compile on the CPU needs a C++ compiler (g++ or clang++)",
)

FAST = ["poisson", "kovasznay"]
SLOW = [
    "annulus",
    "heat",
    "burgers",
    "helmholtz",
    "wave",
    "lshape",
    "inverse_poisson",
    "poisson_highd",
]


def planned_run(name: str, seed: int = 0):
    """A small float32 setting of problem `name`: its loss function of a batch and a batch,
    with the engine's plans recorded by one eager loss (as a run's first step does)."""
    cfg = compose_config(
        [f"problem={name}", "model.width=16", "model.depth=2"]
        + (["problem.params.dim=5"] if name == "poisson_highd" else [])
    )
    problem = load_problem(cfg.problem.target, OmegaConf.to_container(cfg.problem.params))
    model = build_model(problem, check_config(cfg).model, seed)
    unknowns = problem.attach_unknowns(torch.float32, "cpu")
    generator = torch.Generator().manual_seed(seed + 1)
    points = PointSampler(problem.domain, 128, 64, cfg.problem.sampler, generator)
    batch = points.draw()
    engine = Engine("taylor", model, batch.interior[:2], announce=False)
    weights = LossWeights(OmegaConf.to_container(cfg.problem.weights))
    parameters = [*model.parameters(), *unknowns.parameters()]

    def loss_of(batch):
        terms = loss_terms(problem, model, batch, engine)
        return terms, weights.total(terms)

    loss_of(batch)  # records what each site asks for
    assert engine.compile_blockers() == []
    return loss_of, points, parameters


def loss_and_gradients(loss_of, batch, parameters):
    for p in parameters:
        p.grad = None
    terms, loss = loss_of(batch)
    loss.backward()
    return terms, loss.detach(), [p.grad.clone() for p in parameters]


def assert_compiled_matches_eager(name: str) -> None:
    loss_of, points, parameters = planned_run(name)
    compiled = CompiledLoss(loss_of, required=True)
    for _ in range(2):  # two batches: the second runs the code compiled for the first
        batch = points.draw()
        eager_terms, eager_loss, eager_grads = loss_and_gradients(loss_of, batch, parameters)
        terms, loss, grads = loss_and_gradients(compiled, batch, parameters)
        assert compiled.active  # compiled, not fallen back to eager
        assert terms.keys() == eager_terms.keys()
        for key in terms:
            torch.testing.assert_close(terms[key], eager_terms[key], rtol=2e-5, atol=1e-7)
        torch.testing.assert_close(loss, eager_loss, rtol=2e-5, atol=1e-7)
        for grad, eager in zip(grads, eager_grads):
            scale = eager.abs().max()
            torch.testing.assert_close(grad, eager, rtol=1e-4, atol=1e-5 * float(scale) + 1e-8)


@needs_compiler
@pytest.mark.parametrize("name", FAST)
def test_compiled_loss_and_gradients_match_eager(name):
    assert_compiled_matches_eager(name)


@needs_compiler
@pytest.mark.slow
@pytest.mark.parametrize("name", SLOW)
def test_compiled_loss_and_gradients_match_eager_every_problem(name):
    assert_compiled_matches_eager(name)


def small_fit(compile_setting: str, steps: int = 25, **options):

    problem = Poisson(hard_boundary=False)
    model = MLP(
        2,
        1,
        16,
        2,
        inputs=InputOptions(lower=[0, 0], upper=[1, 1]),
        generator=torch.Generator().manual_seed(0),
    )
    points = PointSampler(problem.domain, 128, 64, "uniform", torch.Generator().manual_seed(1))
    settings = TrainSettings(
        adam={"steps": steps, "resample_every": 1},
        lbfgs={"steps": 5},
        log_every=5,
        progress=False,
        compile=compile_setting,
        **options,
    )
    return fit(problem, model, settings, points)


@needs_compiler
def test_compiled_training_follows_the_eager_run(caplog):
    with caplog.at_level(logging.INFO, logger="pinn"):
        compiled = small_fit("true")
    assert "training step: compiled (trainer.compile=true)" in caplog.text
    eager = small_fit("false")
    assert [row["step"] for row in compiled.history] == [row["step"] for row in eager.history]
    # Adam and L-BFGS from the same start on the same batches: float32 rounding apart.
    for row, other in zip(compiled.history, eager.history):
        assert row["loss"] == pytest.approx(other["loss"], rel=1e-3)
    assert compiled.final_loss == pytest.approx(eager.final_loss, rel=1e-2)


def test_auto_compiles_long_runs_only_and_says_why(caplog):
    with caplog.at_level(logging.INFO, logger="pinn"):
        small_fit("auto", steps=3)
    # 3 Adam steps and 5 L-BFGS iterations: each evaluates the (compiled) loss
    assert "training step: eager (auto: 8 steps of adam, lbfgs on cpu, fewer than the" in (
        caplog.text
    )
    cpu, what = torch.device("cpu"), "steps of adam, bfgs"
    assert compile_decision("auto", [], 50_000, cpu, what) == (
        True,
        "auto: 50000 steps of adam, bfgs on cpu repay compiling",
    )
    blockers = ["the residual engine is autograd, not taylor"]
    compiled, why = compile_decision("auto", blockers, 50_000, cpu, what)
    assert not compiled and "autograd" in why
    assert compile_decision("false", [], 50_000, cpu, what)[0] is False


def test_the_steps_that_repay_compiling_are_those_evaluating_the_batch_loss():
    settings = TrainSettings(
        phases=["adam", "gauss_newton", "bfgs", "kfac", "adam"],
        adam={"steps": 100},
        gauss_newton={"steps": 7},
        bfgs={"steps": 3000},
        kfac={"steps": 11},
    )
    # Gauss-Newton and KFAC step on residual rows, not on the compiled loss
    assert settings.step_loss_steps() == (3200, ["adam", "bfgs"])
    assert settings.planned_steps() == 3218


def test_compile_true_refuses_what_cannot_compile():
    with pytest.raises(
        ConfigError, match="trainer.compile=true cannot compile this run: the loss weights adapt"
    ):
        small_fit("true", steps=3, weighting="lra")
    with pytest.raises(ConfigError, match="residual engine is autograd"):
        compile_decision(
            "true", ["the residual engine is autograd, not taylor"], 10, torch.device("cpu"), ""
        )


@pytest.mark.parametrize("value, normalised", [(True, "true"), (False, "false"), ("auto", "auto")])
def test_compile_setting_takes_yaml_booleans(value, normalised):
    assert check_compile(value) == normalised
    assert TrainSettings(compile=value).compile == normalised


def test_compile_setting_refuses_other_values():
    with pytest.raises(
        ConfigError,
        match="trainer.compile must be one of auto, true, false, reduce-overhead; got 'yes'",
    ):
        TrainSettings(compile="yes")


def test_a_step_that_cannot_compile_runs_eagerly_under_auto(caplog):
    @torch.compiler.disable
    def opaque(x):
        return 3 * x

    def loss_of(x):
        return opaque(x)  # a function torch.compile must not enter: no single graph

    x = torch.ones(3)
    with caplog.at_level(logging.WARNING, logger="pinn"):
        out = CompiledLoss(loss_of, required=False)(x)
    assert torch.equal(out, 3 * x)
    assert "training step not compiled, running eagerly" in caplog.text
    with pytest.raises(ConfigError, match="torch.compile could not compile the training step"):
        CompiledLoss(loss_of, required=True)(x)


def test_auto_leaves_a_model_of_a_large_traced_graph_eager(caplog, monkeypatch):
    # u = phi N with phi the L-shape's distance (a polygon: 239 operations traced): compiling
    # such a graph takes longer than a run saves, so auto says so and stays eager.
    from pinn import HardConstraint, Polygon
    from pinn.training import compiling

    monkeypatch.setitem(compiling.AUTO_MIN_STEPS, "cpu", 1)  # a "long" run of 3 steps
    lshape = Polygon([(0, 0), (1, 0), (1, 0.5), (0.5, 0.5), (0.5, 1), (0, 1)])
    problem = Poisson(hard_boundary=False)
    net = MLP(
        2,
        1,
        8,
        1,
        inputs=InputOptions(lower=[0, 0], upper=[1, 1]),
        generator=torch.Generator().manual_seed(0),
    )
    model = HardConstraint(net, lambda x: (torch.zeros_like(x[:, 0]), lshape.distance(x)))
    points = PointSampler(problem.domain, 32, 16, "uniform", torch.Generator().manual_seed(1))
    settings = TrainSettings(adam={"steps": 3}, lbfgs={"steps": 0}, progress=False, compile="auto")
    with caplog.at_level(logging.INFO, logger="pinn"):
        fit(problem, model, settings, points)
    assert "residual engine: taylor" in caplog.text
    assert "training step: eager (auto: not compiled, the model's traced graph has" in caplog.text
    assert "more than the 200 torch.compile handles" in caplog.text


class _FailsBackward(torch.autograd.Function):
    """The identity, whose backward fails as a compiled backward that cannot compile does
    (torch compiles a graph's backward at its first call, after the forward ran)."""

    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError("backward compiler failed (simulated)")


def _compile_with_failing_backward(function, **options):
    """What torch.compile gives, as the tests see it: the loss of `function`, whose backward
    fails."""

    def compiled(*args):
        terms, loss = function(*args)
        return terms, _FailsBackward.apply(loss)

    return compiled


def test_a_backward_that_cannot_compile_runs_the_step_eagerly(caplog):
    def loss_of(x):
        return {"square": (x * x).sum()}, (3 * x).sum()

    x = torch.ones(3, requires_grad=True)
    compiled = CompiledLoss(loss_of, required=False)
    compiled._compiled = _compile_with_failing_backward(loss_of)  # compiled; its backward fails
    with caplog.at_level(logging.WARNING, logger="pinn"):
        terms, loss = compiled.with_backward(lambda result: result[1].backward(), x)
    assert not compiled.active
    assert torch.equal(x.grad, torch.full((3,), 3.0))  # once: the failed backward added nothing
    assert "training step not compiled, running eagerly: backward compiler failed" in caplog.text
    assert "(compiling its backward)" in caplog.text
    required = CompiledLoss(loss_of, required=True)
    required._compiled = _compile_with_failing_backward(loss_of)
    with pytest.raises(ConfigError, match=r"could not compile the training step \(its backward\)"):
        required.with_backward(lambda result: result[1].backward(), x)


def test_a_run_whose_backward_cannot_compile_trains_as_the_eager_one(caplog, monkeypatch):
    from pinn.training import compiling

    monkeypatch.setattr(compiling.torch, "compile", _compile_with_failing_backward)
    monkeypatch.setitem(compiling.AUTO_MIN_STEPS, "cpu", 1)  # 12 + 5 steps repay compiling
    with caplog.at_level(logging.INFO, logger="pinn"):
        fallen = small_fit("auto", steps=12)
    assert "training step: compiled (auto: 17 steps of adam, lbfgs on cpu" in caplog.text
    assert "running eagerly: backward compiler failed (simulated)" in caplog.text
    eager = small_fit("false", steps=12)

    def untimed(history):
        return [{k: v for k, v in row.items() if k != "time_s"} for row in history]

    assert untimed(fallen.history) == untimed(eager.history)
    with pytest.raises(ConfigError, match=r"\(its backward\)"):
        small_fit("true", steps=12)


def _recording_compile(calls):
    """A stand-in for torch.compile that records its options and compiles nothing."""

    def compile(function, **options):
        calls.append(options)
        return function

    return compile


def test_reduce_overhead_compiles_without_cuda_graphs_on_the_cpu_and_says_so(caplog, monkeypatch):
    from pinn.training import compiling

    calls = []
    monkeypatch.setattr(compiling.torch, "compile", _recording_compile(calls))
    with caplog.at_level(logging.INFO, logger="pinn"):
        small_fit("reduce-overhead", steps=3)
    assert "training step: compiled (trainer.compile=reduce-overhead)" in caplog.text
    assert "which need a cuda device; on cpu the step is compiled without them" in caplog.text
    assert calls == [{"fullgraph": True, "dynamic": False}]  # no mode: plain compile
    assert compile_mode("reduce-overhead", torch.device("cuda")) == "reduce-overhead"
    assert compile_mode("true", torch.device("cuda")) is None
    assert check_compile("reduce-overhead") == "reduce-overhead"


def test_reduce_overhead_refuses_what_cannot_compile_as_true_does():
    with pytest.raises(ConfigError, match="trainer.compile=reduce-overhead cannot compile"):
        small_fit("reduce-overhead", steps=3, weighting="lra")


def test_cuda_graph_outputs_are_copied_before_the_next_replay_overwrites_them(monkeypatch):
    from pinn.training import compiling

    calls = []
    monkeypatch.setattr(compiling.torch, "compile", _recording_compile(calls))
    kept = {}

    def loss_of(x):
        kept["loss"] = (3 * x).sum()
        return {"term": kept["loss"]}, kept["loss"]

    compiled = CompiledLoss(loss_of, required=True, mode="reduce-overhead")
    assert calls == [{"fullgraph": True, "dynamic": False, "mode": "reduce-overhead"}]
    terms, loss = compiled(torch.ones(3))
    assert loss is not kept["loss"] and terms["term"] is not kept["loss"]
    assert loss.item() == 9.0
