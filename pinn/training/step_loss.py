"""The loss of one batch: eager or compiled, with the loss weights, averaged over processes.

    loss_of = StepLoss(problem, state)
    terms, loss = loss_of(batch, step=step)           # this process's (Adam: weights may move)
    terms, loss = loss_of.reduce(terms, loss, True)   # after backward: over all processes

The first call records what each residual asks for; the next decides, once, whether to compile
(`settings.compile`, `pinn.training.compiling`) and logs why.
"""

from __future__ import annotations

import logging

import torch

from pinn.geometry import Batch, residual_magnitude
from pinn.problem.fields import problem_field
from pinn.problem.loss import loss_terms
from pinn.problem.problem import Problem
from pinn.training.compiling import FORCED, CompiledLoss, compile_decision, compile_mode
from pinn.training.state import RunState

log = logging.getLogger("pinn")

# Above this many operations in the model's traced graph, `auto` does not compile: a 3-D cube
# minus a ball's distance (502 operations) did not compile within 25 minutes on this project's
# CPU; an MLP is about 11, a hard constraint with one disk's distance about 23, `kdv_solitons`'
# (two solitons' sech² in its boundary values, u_xxx) 159, compiled in 46 s.
AUTO_MAX_OPERATIONS = 200


class StepLoss:
    """The named loss terms of a batch and their weighted sum, for `state`'s model."""

    def __init__(self, problem: Problem, state: RunState):
        self.problem, self.state = problem, state
        self._decided = state.settings.compile == "false"
        self._compiled: CompiledLoss | None = None
        if state.causal is not None:  # its time coordinate named, before the first step
            state.causal.check(problem.inputs)

    def __call__(
        self, batch: Batch, step: int | None = None
    ) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        """This process's terms and weighted loss; at an Adam `step` the weights may move."""
        self._decide()
        if self._compiled is not None:
            return self._compiled(batch)
        state = self.state
        terms = loss_terms(
            self.problem, state.model, batch, state.engine, state.causal, state.point_weights
        )
        if step is not None:
            state.weights.update(terms, state.model.parameters(), step, state.world.average_)
        return terms, state.weights.total(terms)

    def with_gradients(
        self, batch: Batch, step: int | None = None
    ) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        """`self(batch, step)` with `loss.backward()` done: the parameters' `.grad` hold this
        process's gradients. A compiled step whose backward fails to compile runs again
        eagerly (`CompiledLoss.with_backward`), as one whose forward fails does."""

        def backward(result: tuple[dict[str, torch.Tensor], torch.Tensor]) -> None:
            result[1].backward()

        self._decide()
        if self._compiled is not None:
            return self._compiled.with_backward(backward, batch)
        terms, loss = self(batch, step)
        backward((terms, loss))
        return terms, loss

    def reduce(
        self, terms: dict[str, torch.Tensor], loss: torch.Tensor, gradients: bool = False
    ) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        """The terms and loss over all processes (`World.average_loss`), with `gradients`
        the parameters' gradients too; as they are for a single process."""
        state = self.state
        return state.world.average_loss(terms, loss, state.parameters if gradients else ())

    def residual_magnitude(self, x: torch.Tensor) -> torch.Tensor:
        """(M,) |PDE residual| at the (M, d) points, for refinement (systems: root sum square)."""
        state = self.state
        field = problem_field(state.engine, self.problem, x, "interior")
        return residual_magnitude(self.problem.residual(field.x, field))

    def _eager(self, batch: Batch) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
        """What `CompiledLoss` compiles: the terms and their weighted sum (fixed weights)."""
        state = self.state
        terms = loss_terms(
            self.problem, state.model, batch, state.engine, state.causal, state.point_weights
        )
        return terms, state.weights.total(terms)

    def _decide(self) -> None:
        """Once the first step has planned every field: compile the loss, or not, and say why."""
        state = self.state
        if self._decided or not state.engine.recorded:
            return  # decided, or before the first fields (which record what is asked)
        self._decided = True
        blockers = state.engine.compile_blockers()
        if state.weights.method != "fixed":
            blockers.append(f"the loss weights adapt (trainer.weighting={state.weights.method})")
        if state.points.refinement.method == "rar":
            blockers.append("RAR grows the batch (each new shape would compile anew)")
        if state.point_weights is not None:
            method = state.point_weights.settings.method
            blockers.append(f"the point weights adapt (trainer.point_weights.method={method})")
        setting, (steps, phases) = state.settings.compile, state.settings.step_loss_steps()
        size = state.engine.traced_size()
        if setting == "auto" and size > AUTO_MAX_OPERATIONS:
            blockers.append(
                f"the model's traced graph has {size} operations (a distance of several "
                f"pieces, say), more than the {AUTO_MAX_OPERATIONS} torch.compile handles in "
                "minutes; trainer.compile=true compiles it anyway"
            )
        device = state.batch.interior.device
        what = f"steps of {', '.join(phases)}" if phases else "steps"
        compiled, why = compile_decision(setting, blockers, steps, device, what)
        log.info("training step: %s (%s)", "compiled" if compiled else "eager", why)
        if compiled:
            mode = compile_mode(setting, device)
            self._compiled = CompiledLoss(self._eager, setting in FORCED, mode)

    @property
    def compiled(self) -> bool:
        """Whether the loss is compiled (decided after the first step)."""
        return self._compiled is not None
