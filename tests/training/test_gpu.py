"""On a CUDA GPU (marked `gpu`: skipped where torch sees none; `pytest -m gpu` runs only these):
a run interrupted mid-L-BFGS resumes on cuda and ends as the uninterrupted one; Adam steps
between logged rows make no host synchronisation; the CUDA-graph path
(`trainer.compile=reduce-overhead`) trains as the eager step does.

Quasi-Newton states loaded onto cuda: `test_device_states.py` (its cuda cases are marked
`gpu` too). `benchmarks/gpu_check.py` runs every `gpu` test first."""

import io

import pytest
import torch
from test_host_syncs import PROBLEMS, between_rows, syncs_per_step

from pinn import MLP, PointSampler, TrainSettings, fit
from pinn.nn import InputOptions
from pinn.problems.poisson import Poisson

pytestmark = pytest.mark.gpu
CUDA = "cuda"


def cuda_fit(compile="false", fit_options=None, **settings):
    """A small float32 Poisson fit on cuda: (model, FitResult)."""
    problem = Poisson(hard_boundary=False)
    model = MLP(
        2,
        1,
        16,
        2,
        inputs=InputOptions(lower=[0, 0], upper=[1, 1]),
        generator=torch.Generator().manual_seed(0),
    ).to(CUDA)
    points = PointSampler(
        problem.domain, 256, 64, "sobol", torch.Generator().manual_seed(1), device=CUDA
    )
    options = dict(
        adam={"steps": 30, "resample_every": 10},
        lbfgs={"steps": 20},
        log_every=5,
        progress=False,
        compile=compile,
    )
    settings = TrainSettings(**(options | settings))
    return model, fit(problem, model, settings, points, **(fit_options or {}))


def flat(model):
    return torch.cat([p.detach().flatten() for p in model.parameters()])


def test_a_run_interrupted_mid_lbfgs_resumes_on_cuda_as_if_never_stopped(written_checkpoints):
    model, result = cuda_fit(checkpoint_every=7, fit_options={"checkpoint_path": "unused.pt"})
    saved = [torch.load(io.BytesIO(d), weights_only=True) for d in written_checkpoints]
    in_lbfgs = [state for state in saved if state["training"]["phase"] == "lbfgs"]
    assert in_lbfgs, "no checkpoint was written mid-L-BFGS"
    state = in_lbfgs[0]  # loaded on the CPU, as load_checkpoint does
    options = {"checkpoint_path": "unused.pt", "resume_from": state}
    resumed_model, resumed = cuda_fit(checkpoint_every=7, fit_options=options)
    assert torch.equal(flat(resumed_model), flat(model))
    assert resumed.final_loss == result.final_loss


@pytest.mark.parametrize("name", PROBLEMS)
def test_adam_steps_between_rows_make_no_sync_on_cuda(name, monkeypatch):
    steps = syncs_per_step(PROBLEMS[name](), monkeypatch, device=CUDA, resample_every=3)
    assert between_rows(steps) == {i: {} for i in between_rows(steps)}


def test_the_cuda_graph_step_trains_as_the_eager_one():
    _, graphed = cuda_fit(compile="reduce-overhead")
    _, eager = cuda_fit(compile="false")
    assert [row["step"] for row in graphed.history] == [row["step"] for row in eager.history]
    for row, other in zip(graphed.history, eager.history):
        assert row["loss"] == pytest.approx(other["loss"], rel=1e-3)
