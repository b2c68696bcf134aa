"""Compiled training steps: whether `trainer.compile` compiles a run, and the compiled loss.

    compiled, why = compile_decision("auto", engine.compile_blockers(), steps, device, what)
    loss_of = CompiledLoss(lambda batch: weights.total(loss_terms(...)), required=False)

What is compiled is the loss of a batch: every field's Taylor pass, the residuals, the
conditions and the weighted sum, as one graph (`torch.compile(fullgraph=True)`); autograd
then runs its compiled backward. The optimiser's update stays the fused eager kernel (one call
for all parameters). Taylor mode is what makes this possible: the pass has no double backward,
which torch.compile does not support.

A compiled loss has the same inputs and outputs as the eager one and agrees with it to
floating-point rounding (the fused kernels sum in another order). Checks that read the values
of tensors (`.any()` of a mask, `int(...)` of an index) would split the graph; they run in the
eager first step of every run and are skipped while compiling (`validating`).
"""

from __future__ import annotations

import dataclasses
import logging
import types
from collections.abc import Callable
from typing import Any

import torch

from pinn.errors import ConfigError, first_line

COMPILE = ("auto", "true", "false", "reduce-overhead")
# The settings that compile whatever the run's length, and refuse what cannot compile.
FORCED = ("true", "reduce-overhead")
# `auto` compiles from this many steps on (of the phases that evaluate the batch's loss: Adam's
# steps, L-BFGS's and BFGS's iterations): compiling the step takes 10-50 s on a small CPU with
# a cold cache (`benchmarks/seed_config.py`), which a saving of 2-3 ms a step (an MLP's
# Laplacian; 15-35 ms a BFGS iteration with u_xxx, `kdv_solitons`) repays after some ten
# thousand steps; on a GPU the launch overhead it removes is larger.
AUTO_MIN_STEPS = {"cpu": 10_000, "cuda": 1_000}
log = logging.getLogger("pinn")


def check_compile(value: Any) -> str:
    """`trainer.compile` as "auto", "true", "false" or "reduce-overhead" (YAML's booleans
    accepted, also as the strings "True" and "False" a typed config makes of them)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value in ("True", "False"):
        return value.lower()
    if value not in COMPILE:
        raise ConfigError(f"trainer.compile must be one of {', '.join(COMPILE)}; got {value!r}")
    return value


def compile_mode(setting: str, device: torch.device) -> str | None:
    """torch.compile's `mode` for `trainer.compile` = setting on `device`.

    "reduce-overhead" records the compiled step as CUDA graphs (one launch replays every
    kernel of the step: what a small network's step, launch-bound on a GPU, needs). CUDA graphs
    exist only on cuda: on any other device the step is compiled without them (mode None,
    as `trainer.compile=true`), and the run logs that it did.
    """
    if setting != "reduce-overhead":
        return None
    if device.type != "cuda":
        log.warning(
            "trainer.compile=reduce-overhead records CUDA graphs, which need a cuda device; on "
            "%s the step is compiled without them (as trainer.compile=true)",
            device.type,
        )
        return None
    return "reduce-overhead"


def compile_decision(
    setting: str, blockers: list[str], steps: int, device: torch.device, what: str
) -> tuple[bool, str]:
    """(compile the training step?, why) for `trainer.compile` = setting.

    blockers: what in this run keeps the step from compiling (empty when it can), e.g. "the
    residual engine is autograd"; with setting "true" they are refused. steps: how many steps
    evaluate the compiled loss, `what` they are ("steps of adam, bfgs").
    """
    if setting == "false":
        return False, "trainer.compile=false"
    if blockers:
        if setting in FORCED:
            raise ConfigError(
                f"trainer.compile={setting} cannot compile this run: {'; '.join(blockers)}. "
                "Use trainer.compile=auto or false"
            )
        return False, f"auto: not compiled, {'; '.join(blockers)}"
    if setting in FORCED:
        return True, f"trainer.compile={setting}"
    least = AUTO_MIN_STEPS.get(device.type, AUTO_MIN_STEPS["cuda"])
    if steps < least:
        return (
            False,
            f"auto: {steps} {what} on {device.type}, fewer than the {least} that repay compiling",
        )
    return True, f"auto: {steps} {what} on {device.type} repay compiling"


class CompiledLoss:
    """`loss_of(batch)` compiled as one graph, with the eager function as the way back.

    The first call compiles (or finds the compiled code in torch's cache). If compiling fails
    (an operation torch.compile cannot capture whole), `required` raises a `ConfigError` naming
    why; otherwise the run logs why and goes on eagerly. Nothing of the step has run by then.
    """

    def __init__(self, loss_of: Callable, required: bool, mode: str | None = None):
        self.eager, self.required, self.mode = loss_of, required, mode
        # Static shapes: a training step's batch keeps its shape; another shape compiles anew.
        options = {} if mode is None else {"mode": mode}
        compiled = torch.compile(_own_code(loss_of), fullgraph=True, dynamic=False, **options)
        self._compiled: Callable | None = compiled
        self._warm: set[tuple] = set()  # the shapes of the arguments seen

    @property
    def active(self) -> bool:
        """Whether calls run the compiled code (False once it has fallen back to eager)."""
        return self._compiled is not None

    def __call__(self, *args: Any) -> Any:
        if self._compiled is None:
            return self.eager(*args)
        shapes = _shapes(args)
        if shapes not in self._warm:
            # Once eagerly per shape, without gradients: fills what the compiled code only looks
            # up (the models' traced graphs for these shapes).
            with torch.no_grad():
                self.eager(*args)
            self._warm.add(shapes)
        try:
            return self._run_compiled(*args)
        except Exception as error:  # torch._dynamo's and inductor's errors have no common base
            self.fall_back(error)
            return self.eager(*args)

    def _run_compiled(self, *args: Any) -> Any:
        """The compiled code's result. Recorded as CUDA graphs ("reduce-overhead"), each call
        starts a new step, and the outputs, which the next replay overwrites, are copied (a
        few numbers: the terms and the loss, which history rows and line searches keep)."""
        if self.mode != "reduce-overhead":
            return self._compiled(*args)
        torch.compiler.cudagraph_mark_step_begin()
        return torch.utils._pytree.tree_map_only(torch.Tensor, torch.clone, self._compiled(*args))

    def with_backward(self, backward: Callable[[Any], None], *args: Any) -> Any:
        """`self(*args)`, then `backward(result)`, both covered by the way back to eager.

        torch compiles a graph's backward at its first call, so compiling can fail there, after
        the forward ran: then (`required` apart, refused as a forward's failure is) the step
        runs again eagerly, forward and `backward`. A compiled backward fails before any
        gradient is accumulated (its parameters' gradients come out of it together), so
        `backward` starts from the gradients as they were. Returns the result whose backward
        ran.
        """
        result = self(*args)
        if self._compiled is None:  # eager: this call's forward fell back, or an earlier one
            backward(result)
            return result
        try:
            backward(result)
        except Exception as error:  # as in __call__: compiling errors have no common base
            self.fall_back(error, "its backward")
            result = self.eager(*args)
            backward(result)
        return result

    def fall_back(self, error: Exception, where: str = "it") -> None:
        """Go on eagerly from now on after `error` compiling the step (`where`: "it" or "its
        backward"); with `required`, refuse in a ConfigError instead."""
        reason = first_line(error) or type(error).__name__
        self._compiled = None
        if self.required:
            raise ConfigError(
                f"trainer.compile=true: torch.compile could not compile the training step"
                f"{' (its backward)' if where != 'it' else ''} "
                f"({type(error).__name__}: {reason}); use trainer.compile=false"
            ) from error
        log.warning(
            "training step not compiled, running eagerly: %s%s",
            reason,
            " (compiling its backward)" if where != "it" else "",
        )


def _shapes(value: object) -> tuple:
    """The shapes of the tensors in `value` (through dataclasses, lists, tuples and dicts)."""
    if isinstance(value, torch.Tensor):
        return tuple(value.shape)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = [getattr(value, f.name) for f in dataclasses.fields(value)]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        return tuple(_shapes(item) for item in value)
    return ()


def _own_code(function: Callable) -> Callable:
    """`function` behind a wrapper with a code object of its own.

    torch.compile keeps its compiled versions on the code object, shared by every function made
    from it (each run's bound `StepLoss._eager`, say): a later run would otherwise meet the
    guards of earlier ones, and after a few runs torch's recompile limit.
    """

    def call(*args: Any) -> Any:
        return function(*args)

    code = call.__code__.replace()  # an equal but distinct code object
    return types.FunctionType(code, call.__globals__, call.__name__, None, call.__closure__)
