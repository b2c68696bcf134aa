"""KFAC's view of a network's nn.Linear layers inside the Taylor pass: which calls of the traced
model are which layer, and taps on those calls that keep each layer's input terms and make its
output terms differentiable one by one.

    layers = linear_layers(model, traced)        # {layer name: [call positions]}
    taps = LayerTaps(layers, site)               # one per pass (field), its taps on the calls
    quantities = tapped_quantities(model, x, keys, requests, taps.taps)
    ... rows from the quantities ...
    taps.records                                 # [(layer, inputs (S, N, i), probes [(.., N, o)])]

A layer z = W a + b carries, per point, its Taylor coefficients through the pass: the value
(a, with a 1 appended for the bias), the first-order terms along the k directions (with a 0:
the bias has no derivative) and the carried second-order rows (with a 0), S positions in all.
The same W maps every position, z_s = W a_s (+ b for the value): W is shared between the
positions as a convolution's kernel is between its patches, and a residual row r depends on W
through all of them, dr/dW = sum_s g_s a_s^T with g_s = dr/dz_s (Dangel, Müller & Zeinhofer
2024, who view the forward Laplacian as such a weight-sharing graph). The taps record a_s and
add a zero "probe" to every z_s: the gradient of the rows with respect to the probes is g_s.

A layer is found by its pattern in the aten graph: its weight's only use is `t(weight)`, whose
only use is the weight operand of `addmm` (with its bias, when it has one, as the bias operand)
or `mm`, on terms carried by the pass (a layer on (N, L, fan_in) inputs multiplies their
(N L, fan_in) view: its L rows per point count as more points). A weight used otherwise (read
by the forward directly, a FactorizedLinear's scaled product) is no such layer: its parameters
go to KFAC's diagonal fallback (`pinn.training.optim.kfac`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from pinn.derivatives.rules import Terms
from pinn.derivatives.taylor_pass import Traced, _Slot, slots_in

aten = torch.ops.aten
# the consumers of t(weight), and which of their arguments the input and weight are
_CONSUMERS = {aten.addmm.default: (1, 2), aten.mm.default: (0, 1)}


def linear_layers(model: nn.Module, traced: Traced) -> dict[str, list[int]]:
    """{name of an nn.Linear of `model`: positions in `traced.program` of its matmuls} for each
    layer used only as a plain Linear on the points' terms (the module docstring)."""
    names = [name for name, _ in model.named_parameters()]
    slot_of = {name: i for i, name in enumerate(names)}
    n_inputs = len(names) + len(list(model.buffers())) + 1
    uses = _uses(traced)
    found = {}
    for module_name, module in model.named_modules():
        if not isinstance(module, nn.Linear):
            continue
        prefix = f"{module_name}." if module_name else ""
        weight = slot_of.get(prefix + "weight")
        bias = slot_of.get(prefix + "bias") if module.bias is not None else None
        if weight is None or (module.bias is not None and bias is None):
            continue  # frozen parameters: not trained, nothing to precondition
        positions = _matmuls(traced, uses, weight, bias, n_inputs)
        if positions:
            found[module_name] = positions
    return found


def _uses(traced: Traced) -> dict[int, list[tuple[int, int]]]:
    """{value slot: [(call position, argument index)]} over the program's calls (kwargs count
    as argument -1: no pattern matched here passes a tensor by keyword)."""
    uses: dict[int, list[tuple[int, int]]] = {}
    for position, call in enumerate(traced.program):
        arguments = [(i, a) for i, a in enumerate(call.args)]
        arguments += [(-1, a) for a in call.kwargs.values()]
        for index, argument in arguments:
            for slot in slots_in(argument):
                uses.setdefault(slot.index, []).append((position, index))
    for slot in slots_in(traced.output):
        uses.setdefault(slot.index, []).append((-1, -1))
    return uses


def _matmuls(traced, uses, weight: int, bias: int | None, n_inputs: int) -> list[int]:
    """The positions of the layer's matmuls, or [] where its parameters are used otherwise."""
    program, positions = traced.program, []
    for position, index in uses.get(weight, []):
        if position < 0 or program[position].target is not aten.t.default or index != 0:
            return []
        for consumer, argument in uses.get(n_inputs + position, []):
            call = program[consumer] if consumer >= 0 else None
            expected = _CONSUMERS.get(call.target) if call is not None else None
            if expected is None or argument != expected[1] or call.rule is None or call.kwargs:
                return []
            has_bias = call.target is aten.addmm.default
            if has_bias != (bias is not None) or (has_bias and call.args[0] != _Slot(bias)):
                return []
            positions.append(consumer)
    bias_uses = {position for position, _ in uses.get(bias, [])} if bias is not None else set()
    return positions if bias_uses <= set(positions) else []


@dataclass
class LayerRecord:
    """One layer's call in one pass: its input positions and its output probes.

    inputs: (S, N, fan_in [+ 1]) a_s at each point (the value's with a 1 for the bias, the
        derivatives' with a 0), detached.
    probes: the zeros added to its output terms, (N, fan_out), (k, N, fan_out) and, where
        second-order rows are carried, (rows, N, fan_out): the rows' gradients with respect to
        them are the g_s, position by position in the order of `inputs`.
    """

    layer: str
    inputs: torch.Tensor
    probes: list[torch.Tensor]


@dataclass
class LayerTaps:
    """The taps of one Taylor pass (`taps`, for `propagate`) and what they recorded."""

    layers: dict[str, list[int]]
    records: list[LayerRecord] = field(default_factory=list)

    @property
    def taps(self) -> dict:
        return {
            position: self._tap(name, position)
            for name, positions in self.layers.items()
            for position in positions
        }

    def _tap(self, name: str, position: int):
        def tap(args: tuple, result: object) -> object:
            consumer = aten.addmm.default if len(args) == 3 else aten.mm.default
            terms = args[_CONSUMERS[consumer][0]]
            if not isinstance(terms, Terms) or not isinstance(result, Terms):
                return result  # a layer the points do not reach: nothing to record
            inputs = _positions(terms, bias=len(args) == 3)
            value, first, second = result
            probes = [torch.zeros_like(value, requires_grad=True)]
            probes.append(value.new_zeros(first.shape[0], *value.shape).requires_grad_())
            if second is not None:
                probes.append(value.new_zeros(second.shape[0], *value.shape).requires_grad_())
            self.records.append(LayerRecord(name, inputs, probes))
            carried = [value + probes[0], first + probes[1]]
            carried.append(second + probes[2] if second is not None else None)
            return Terms(*carried)

        return tap


def _positions(terms: Terms, bias: bool) -> torch.Tensor:
    """(S, N, fan_in [+ 1]) the layer's inputs at every position, detached."""
    value = terms.value.detach()
    first = terms.first.detach().expand(terms.first.shape[0], *value.shape)
    parts = [value[None], first]
    if terms.second is not None:
        parts.append(terms.second.detach().expand(terms.second.shape[0], *value.shape))
    inputs = torch.cat(parts)
    if not bias:
        return inputs
    column = torch.zeros(*inputs.shape[:2], 1, dtype=value.dtype, device=value.device)
    column[0] = 1.0  # the value's bias input; derivatives have none
    return torch.cat([inputs, column], dim=2)
