"""Residual engines: which computation fills a `Field`'s derivatives.

    autograd    nested reverse mode, lazily: one backward for the gradient, one per Hessian row
    taylor      one forward Taylor-mode pass (`pinn.derivatives.taylor`) computing what was planned,
                and one univariate pass per input with derivatives of order >= 3
                (`pinn.derivatives.univariate`)
    functorch   torch.func's vmap(jacrev) and vmap(jacrev(jacrev)): the full Hessian, a baseline;
                nested jvps along e_i under vmap for orders >= 3
    auto        taylor where the model allows it, else autograd

A residual does not say up front which derivatives it needs, so an `Engine` learns it: the
first field it makes for a site ("interior", "boundary") is an autograd field that records what
the residual asked for; every later field for that site is planned from that record and
computed in one Taylor pass. Anything asked that was not planned still comes out right: the
Taylor field falls back to autograd for it.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch

from pinn.derivatives.field import Field, Model, Requests
from pinn.derivatives.taylor import taylor_forward, taylor_supported
from pinn.derivatives.taylor_pass import traced_size
from pinn.derivatives.univariate import (
    jvp_derivative,
    per_point_jvp_derivative,
    taylor_derivatives,
    univariate_supported,
)
from pinn.errors import ConfigError
from pinn.syncs import device_constant

if TYPE_CHECKING:  # the estimator module builds on the public functions, which build on this
    from pinn.derivatives.stochastic import LaplacianEstimator

ENGINES = ("auto", "taylor", "autograd", "functorch")
log = logging.getLogger("pinn")


def resolve_engine(engine: str, model: Model, probe: torch.Tensor | None) -> tuple[str, str]:
    """(the engine that will run, why) for a requested engine name and a model.

    probe: a few (n, d) points of the dtype and device the model will see, at which "auto" and
    "taylor" trace the model to check that the Taylor pass can carry it. "auto" needs them;
    without them "taylor" finds out at its first pass.
    """
    if engine not in ENGINES:
        raise ConfigError(f"engine={engine!r} is unknown; choose one of {', '.join(ENGINES)}")
    if engine in ("autograd", "functorch") or (engine == "taylor" and probe is None):
        return engine, "asked for"
    if probe is None:
        raise ValueError("engine='auto' needs probe points to trace the model at")
    supported, reason = taylor_supported(model, probe)
    if engine == "taylor" and not supported:
        raise ConfigError(f"engine=taylor cannot run this model: {reason}")
    if supported:
        why = (
            "asked for"
            if engine == "taylor"
            else "auto: every operation of the model has a Taylor rule"
        )
        return "taylor", why
    return "autograd", f"auto: falling back to autograd because {reason}"


class TaylorField(Field):
    """A field whose planned derivatives come from one forward Taylor-mode pass, and those of
    order >= 3 from one univariate Taylor pass per input (nested forward mode where the model
    has an operation without a rule of that order).

    Args:
        plan: the derivatives to compute up front (a `Requests`, e.g. recorded by a `Field`).
        constants: where the pass's small constant tensors (input indices, weights) are kept
            from one step to the next, {(values, dtype, device): tensor}: the engine's, so
            that a step does not copy them from the host again (on a GPU each copy makes it
            wait, `pinn.syncs`); None makes them afresh.
        Other arguments as for `Field`; `f` must satisfy `taylor_supported`.
    """

    def __init__(
        self,
        f,
        x,
        input_names=None,
        output_names=None,
        plan: Requests | None = None,
        estimator=None,
        laplacian_inputs: Sequence[int] | None = None,
        constants: dict | None = None,
    ):
        self.plan = plan or Requests()
        self._constants = {} if constants is None else constants
        self._autograd: Field | None = None  # made on the first request the plan missed
        super().__init__(f, x, input_names, output_names, estimator, laplacian_inputs)

    def _evaluate(self) -> torch.Tensor:
        highest = _highest_orders(self.plan.higher)
        along = _only_along(self.plan, highest)
        if along is not None and self._series_ready():  # one univariate pass serves it all
            return self._series_pass(along, highest[along])
        values = self._planned_pass()
        for i, order in sorted(highest.items()):
            self._series_pass(i, order)
        return values

    def _series_ready(self) -> bool:
        return univariate_supported(self.f, self.x)[0]

    def _series_pass(self, i: int, order: int) -> torch.Tensor | None:
        """Derivatives of orders 1..order along input i into the caches (the planned pass's
        own first and second derivatives kept): one univariate Taylor pass, or, for a model
        it cannot carry, nested forward mode for each planned order >= 3. Returns the values
        from the Taylor pass (None from forward mode)."""
        if not self._series_ready():
            for n in sorted(n for j, n in self.plan.higher if j == i):
                derivative = jvp_derivative(self.f, self.x, i, n)
                for k in range(derivative.shape[1]):
                    self._higher[(k, i, n)] = derivative[:, k]
            return None
        series = taylor_derivatives(self.f, self.x.detach(), i, order)
        for k in range(series.value.shape[1]):
            self._first.setdefault((k, i), series.derivatives[:, k, 0])
            if order >= 2:
                self._second.setdefault((k, i, i), series.derivatives[:, k, 1])
            for n in range(3, order + 1):
                self._higher[(k, i, n)] = series.derivatives[:, k, n - 1]
        return series.value

    def _planned_pass(self) -> torch.Tensor:
        """The values, and the planned derivatives of orders 1 and 2 in one Taylor pass."""
        plan, dim = self.plan, self.x.shape[1]
        estimating = self.estimator is not None and plan.laplacian
        if estimating and not (plan.diagonal or plan.mixed):
            return self._estimating_pass(sorted(plan.first))
        if estimating:  # the exact second derivatives asked for here; the estimate on its own
            plan = dataclasses.replace(plan, laplacian=False)
        inputs = set(plan.first) | set(plan.diagonal) | {i for pair in plan.mixed for i in pair}
        if plan.laplacian:
            inputs |= set(range(dim))
        if not inputs:
            return super()._evaluate()  # values only: a plain forward pass
        directions = sorted(inputs)
        mode, weights = _second_order_mode(plan, directions)
        indices = self._constant(directions, torch.long)
        if weights is not None:
            weights = self._constant(weights, self.x.dtype)
        # Detached points: the pass gives every planned derivative, so nothing differentiates
        # its outputs in x, and the backward pass of the loss stops at the parameters.
        jet = taylor_forward(self.f, self.x.detach(), indices, mode, weights=weights)
        outputs = range(jet.value.shape[1])
        for k in outputs:
            for a, i in enumerate(directions):
                self._first[(k, i)] = jet.first[:, k, a]
        if mode == "collapsed" and plan.laplacian:
            self._laplacians.update({k: jet.second[:, k] for k in outputs})
        elif mode == "collapsed":
            (j,) = plan.diagonal
            self._second.update({(k, j, j): jet.second[:, k] for k in outputs})
        elif mode == "diagonal":
            self._second.update(
                {(k, i, i): jet.second[:, k, a] for k in outputs for a, i in enumerate(directions)}
            )
        elif mode == "full":
            pairs = [
                (a, i, b, j)
                for a, i in enumerate(directions)
                for b, j in enumerate(directions)
                if i <= j
            ]
            self._second.update(
                {(k, i, j): jet.second[:, k, a, b] for k in outputs for a, i, b, j in pairs}
            )
        return jet.value

    def _constant(self, values: list[float], dtype: torch.dtype) -> torch.Tensor:
        """(k,) `values` in `dtype` on the points' device, made once per engine (see
        `constants`); made afresh while torch.compile traces (a constant of its graph)."""
        device = self.x.device
        if torch.compiler.is_compiling():
            return torch.tensor(values, dtype=dtype, device=device)
        key = (tuple(values), dtype, device)
        if key not in self._constants:
            self._constants[key] = device_constant(values, dtype, device)
        return self._constants[key]

    def _estimating_pass(self, first: list[int]) -> torch.Tensor:
        """One pass carrying the unit directions of the first derivatives asked for and the
        estimator's random directions, collapsed with weights 0 (units) and the estimator's
        scale (random ones): the first derivatives and the Laplacian estimate together."""
        random, scale = self._directions()
        n_points, dim = self.x.shape
        if random.is_floating_point():
            units = torch.eye(dim, dtype=random.dtype, device=random.device)[first]
            directions = torch.cat([units.expand(n_points, -1, -1), random], dim=1)
        else:
            units = torch.tensor(first, dtype=random.dtype, device=random.device)
            directions = torch.cat([units.expand(n_points, -1), random], dim=1)
        weights = [0.0] * len(first) + [scale] * random.shape[1]
        weights = torch.tensor(weights, dtype=self.x.dtype, device=self.x.device)
        jet = taylor_forward(self.f, self.x.detach(), directions, "collapsed", weights=weights)
        for k in range(jet.value.shape[1]):
            self._laplacians[k] = jet.second[:, k]
            for a, i in enumerate(first):
                self._first[(k, i)] = jet.first[:, k, a]
        return jet.value

    def _estimated_laplacian(self, k: int) -> torch.Tensor:
        # Only when the pass carried exact second derivatives: the estimate in a pass of its own.
        random, scale = self._directions()
        second = taylor_forward(self.f, self.x.detach(), random, "collapsed").second
        self._laplacians.update({out: scale * second[:, out] for out in range(second.shape[1])})
        return self._laplacians[k]

    # What the plan missed comes from an autograd field at the same points: the Taylor
    # outputs are not differentiable in x, so they cannot be differentiated further.

    def _first_derivative(self, k: int, i: int) -> torch.Tensor:
        if (k, i) not in self._first:
            self._first[(k, i)] = self._fallback()._first_derivative(k, i)
        return self._first[(k, i)]

    def _second_derivative(self, k: int, i: int, j: int, keep_row: bool = True) -> torch.Tensor:
        key = (k, min(i, j), max(i, j))
        if key not in self._second:
            self._second[key] = self._fallback()._second_derivative(k, i, j, keep_row)
        return self._second[key]

    def _higher_derivative(self, k: int, i: int, order: int) -> torch.Tensor:
        if (k, i, order) not in self._higher:
            self._higher[(k, i, order)] = self._fallback()._higher_derivative(k, i, order)
        return self._higher[(k, i, order)]

    def _depends_on_points(self) -> bool:
        return False

    def _fallback(self) -> Field:
        if torch.compiler.is_compiling():
            raise ConfigError(
                "the residual asked for a derivative its first step did not ask for, and a "
                "compiled step computes only the planned ones; set trainer.compile=false"
            )
        if self._autograd is None:
            self._autograd = Field(self.f, self.x)
        return self._autograd


def _highest_orders(higher: set[tuple[int, int]]) -> dict[int, int]:
    """{input: the highest order >= 3 asked along it}."""
    highest: dict[int, int] = {}
    for i, order in higher:
        highest[i] = max(order, highest.get(i, 0))
    return highest


def _only_along(plan: Requests, highest: dict[int, int]) -> int | None:
    """The input i if the plan asks only for derivatives along it, some of order >= 3 (then
    one univariate pass gives them all, the values too), else None."""
    if len(highest) != 1 or plan.laplacian or plan.mixed or plan.expression:
        return None
    (i,) = highest
    return i if plan.first <= {i} and plan.diagonal <= {i} else None


def _second_order_mode(plan: Requests, directions: list[int]) -> tuple[str, list[float] | None]:
    """Which second-order terms the pass carries, and the weights of a collapsed sum (one per
    direction)."""
    if plan.mixed:
        return "full", None
    if plan.laplacian and not plan.diagonal:
        return "collapsed", None  # directions are all inputs: the Laplacian, one row
    if not plan.laplacian and len(plan.diagonal) == 1:
        weights = [1.0 if i in plan.diagonal else 0.0 for i in directions]
        return "collapsed", weights  # a single d²u/dx_j², one row
    if plan.laplacian or plan.diagonal:
        return "diagonal", None
    return "none", None


class FunctorchField(Field):
    """A field filled by torch.func: vmap(jacrev) gradients, vmap(jacrev(jacrev)) Hessians,
    vmap of nested jvps along e_i for derivatives of order >= 3.

    The full (N, m, d, d) Hessian is built on the first second-derivative request: the
    baseline the other engines are measured against.
    """

    def _first_derivative(self, k: int, i: int) -> torch.Tensor:
        if (k, i) not in self._first:
            jacobian = torch.func.vmap(torch.func.jacrev(self._single))(self.x)  # (N, m, d)
            self._fill_first(jacobian)
        return self._first[(k, i)]

    def _second_derivative(self, k: int, i: int, j: int, keep_row: bool = True) -> torch.Tensor:
        key = (k, min(i, j), max(i, j))
        if key not in self._second:
            full = torch.func.vmap(torch.func.jacrev(torch.func.jacrev(self._single)))(self.x)
            for out in range(full.shape[1]):
                for a in range(self.dim):
                    for b in range(a, self.dim):
                        self._second[(out, a, b)] = full[:, out, a, b]
        return self._second[key]

    def _higher_derivative(self, k: int, i: int, order: int) -> torch.Tensor:
        if (k, i, order) not in self._higher:  # nested jvps along e_i, point by point
            derivative = per_point_jvp_derivative(self.f, self.x, i, order)
            for out in range(derivative.shape[1]):
                self._higher[(out, i, order)] = derivative[:, out]
        return self._higher[(k, i, order)]

    def _fill_first(self, jacobian: torch.Tensor) -> None:
        for out in range(jacobian.shape[1]):
            for i in range(self.dim):
                self._first[(out, i)] = jacobian[:, out, i]

    def _single(self, point: torch.Tensor) -> torch.Tensor:
        """(d,) -> (m,): the model at one point, the form torch.func transforms."""
        return self.f(point[None]).reshape(-1)


class Engine:
    """Makes the fields of one training run with the chosen engine, planning Taylor passes.

    Args:
        name: one of `ENGINES`.
        model: the network the fields evaluate.
        probe: a few (n, d) points to trace the model at (see `resolve_engine`).
        announce: log once which engine runs and why.
        estimator: when given, every field estimates `laplacian()` with it (not on
            "functorch", the full-Hessian baseline).
    """

    def __init__(
        self,
        name: str,
        model: Model,
        probe: torch.Tensor | None = None,
        announce: bool = True,
        estimator: LaplacianEstimator | None = None,
    ):
        if name not in ENGINES:
            raise ConfigError(f"engine={name!r} is unknown; choose one of {', '.join(ENGINES)}")
        if estimator is not None and name == "functorch":
            raise ConfigError(
                "engine=functorch builds full Hessians, the baseline; a stochastic Laplacian "
                "(laplacian.method=stochastic) runs on engine=auto, taylor or autograd"
            )
        self.model, self.estimator = model, estimator
        self.requested, self.announce = name, announce
        if probe is None and name == "auto":
            self._name: str | None = None  # decided at the first field, on its points
        else:
            self._resolve(probe)
        self._recorders: dict[str, Field] = {}
        self._plans: dict[str, Requests] = {}
        self._constants: dict = {}  # the Taylor passes' constant tensors (TaylorField)
        self._probe: torch.Tensor | None = None  # a few points of the first field, for checks

    @property
    def name(self) -> str:
        """The engine that runs ("taylor", "autograd" or "functorch")."""
        if self._name is None:
            raise RuntimeError("the engine is decided at its first field; make one first")
        return self._name

    def _resolve(self, probe: torch.Tensor | None) -> None:
        self._name, why = resolve_engine(self.requested, self.model, probe)
        if self.announce:
            log.info("residual engine: %s (%s)", self._name, why)

    def field(
        self,
        x: torch.Tensor,
        inputs: Sequence[str],
        outputs: Sequence[str],
        site: str,
        laplacian_inputs: Sequence[int] | None = None,
    ) -> Field:
        """A field at the (N, d) points x; `site` names the residual it serves, for planning;
        `laplacian_inputs` the inputs its `laplacian()` sums over (None: all)."""
        if self._probe is None:
            self._probe = x[:2].detach()
        if self._name is None:
            self._resolve(self._probe)
        model, estimator = self.model, self.estimator
        if self.name == "autograd":
            return Field(model, x, inputs, outputs, estimator, laplacian_inputs)
        if self.name == "functorch":
            return FunctorchField(model, x, inputs, outputs, laplacian_inputs=laplacian_inputs)
        if site in self._recorders:
            self._plans[site] = self._recorders.pop(site).requests
        if site in self._plans and self._plans[site].expression:  # expressions: autograd
            return Field(model, x, inputs, outputs, estimator, laplacian_inputs)
        if site in self._plans:
            return TaylorField(
                model,
                x,
                inputs,
                outputs,
                plan=self._plans[site],
                estimator=estimator,
                laplacian_inputs=laplacian_inputs,
                constants=self._constants,
            )
        recorder = Field(model, x, inputs, outputs, estimator, laplacian_inputs)  # records
        self._recorders[site] = recorder
        return recorder

    @property
    def recorded(self) -> bool:
        """Whether the fields' requests are known: recorded by a first field, or loaded; always
        for an engine that plans nothing (autograd, functorch)."""
        return self._name in ("autograd", "functorch") or bool(self._plans or self._recorders)

    def compile_blockers(self) -> list[str]:
        """Why a training step with this engine's fields cannot be compiled ([] if it can).

        Compiling needs every site's plan known and served by one Taylor pass: call it after
        the first step has recorded them. It turns the recordings into plans.
        """
        if self._name != "taylor":
            return [f"the residual engine is {self._name or self.requested}, not taylor"]
        self._plans.update({site: f.requests for site, f in self._recorders.items()})
        self._recorders.clear()
        blockers = [
            f"the residual differentiates an expression of u at the {site} points (autograd)"
            for site, plan in self._plans.items()
            if plan.expression
        ]
        if not self._plans:
            blockers.append("no field has been made yet")
        blockers += self._series_blockers()
        if self.estimator is not None:
            blockers.append("the Laplacian is estimated (laplacian.method=stochastic)")
        return blockers

    def _series_blockers(self) -> list[str]:
        """Why the planned derivatives of order >= 3 cannot be compiled ([] if they can): a
        model the univariate pass cannot carry gets them from nested forward mode, whose
        backward a compiled step cannot take."""
        sites = [site for site, plan in self._plans.items() if plan.higher]
        if not sites:
            return []
        where = f"at the {', '.join(sites)} points"
        if self._probe is None:
            return [f"derivatives of order >= 3 are planned {where} and no field has been made"]
        supported, why = univariate_supported(self.model, self._probe)
        if supported:
            return []
        return [f"derivatives of order >= 3 {where} come from nested forward mode: {why}"]

    def traced_size(self) -> int:
        """Operations in the model's traced graph (Taylor engine; 0 before any, or on others)."""
        return traced_size(self.model) if self._name == "taylor" else 0

    def state_dict(self) -> dict:
        """The engine that runs, its plan per site as plain lists, and the estimator's state
        (None without one): {"name", "plans", "estimator"}.

        A resumed run needs the plans: re-recording would run one step on autograd where the
        interrupted run ran Taylor, and change the last bits of everything after it.
        """
        plans = {**self._plans, **{site: f.requests for site, f in self._recorders.items()}}
        return {
            "name": self.name,
            "plans": {site: _plan_state(p) for site, p in plans.items()},
            "estimator": None if self.estimator is None else self.estimator.state_dict(),
        }

    def load_state_dict(self, state: dict) -> None:
        """Continue with the plans of `state` (from `state_dict`) instead of recording anew."""
        if self._name is None:  # not decided yet: continue as the checkpoint ran
            self._name = state["name"]
        if state["name"] != self.name:
            raise ConfigError(
                f"the checkpoint was trained with the {state['name']} engine, this run would "
                f"use {self.name}; resume with engine={state['name']}"
            )
        saved = state.get("estimator")  # absent in checkpoints written before estimators
        if (saved is None) != (self.estimator is None):
            raise ConfigError(
                "the checkpoint was trained with "
                + ("an estimated" if saved is not None else "the exact")
                + " Laplacian and this run would use "
                + ("an estimated" if self.estimator is not None else "the exact")
                + " one: resume with the saved laplacian settings"
            )
        if saved is not None:
            self.estimator.load_state_dict(saved)
        self._recorders.clear()
        self._plans = {site: _plan_from_state(p) for site, p in state["plans"].items()}


def _plan_state(plan: Requests) -> dict:
    return {
        "first": sorted(plan.first),
        "diagonal": sorted(plan.diagonal),
        "laplacian": plan.laplacian,
        "mixed": [list(pair) for pair in sorted(plan.mixed)],
        "expression": plan.expression,
        "higher": [list(pair) for pair in sorted(plan.higher)],
    }


def _plan_from_state(state: dict) -> Requests:
    return Requests(
        first=set(state["first"]),
        diagonal=set(state["diagonal"]),
        laplacian=bool(state["laplacian"]),
        mixed={(i, j) for i, j in state["mixed"]},
        expression=bool(state.get("expression", False)),  # absent in older checkpoints
        higher={(i, order) for i, order in state.get("higher", [])},  # absent before orders >= 3
    )


def make_field(f: Model, x: torch.Tensor, engine: str, plan: Requests) -> Field:
    """A one-off field for the public functions, computing `plan` with `engine`."""
    name, _ = resolve_engine(engine, f, x)
    if name == "taylor":
        return TaylorField(f, x, plan=plan)
    return FunctorchField(f, x) if name == "functorch" else Field(f, x)
