"""Which operations of a traced model the Taylor pass must differentiate.

Only an operation on a path along which derivatives travel from the points x to the output
needs a Taylor rule. Everything else is a constant to the pass and runs plainly on values,
whatever operations it holds:

    constants        computed from the weights, buffers and captured tensors only
    detached         everything after a `.detach()` (or a comparison, a mask, a sign...:
                     operations that `gives_constant`)
    non-float        integer and boolean results (argmax, the indices of a sort): they have
                     no derivative, as for autograd
    pruned           operations on x whose results reach the output only through the above,
                     e.g. the `amax` of a normalisation that is detached afterwards

    carrying = carrying_nodes(graph)            forward: depends on x through floats
    needed = needed_nodes(graph, carrying)      backward: reaches the output through carrying

Tracing turns in-place writes into their out-of-place forms (`pinn.derivatives.taylor_pass`);
what writes in place is left, a write into the model's own input (`x[:, 0].mul_(2)` becomes a
`copy_` into x), is always needed on a carrying value, so it is refused (it has no rule) rather
than run on the value alone.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import fx

from pinn.derivatives.rules import Terms, gives_constant

Tensor = torch.Tensor


def carrying_nodes(graph: fx.Graph) -> set[fx.Node]:
    """The nodes that depend on x (the last placeholder) through floating-point values."""
    placeholders = [node for node in graph.nodes if node.op == "placeholder"]
    carrying = {placeholders[-1]}  # x is the last input
    for node in graph.nodes:
        if node.op != "call_function" or gives_constant(node.target) or not _floating(node):
            continue
        if any(a in carrying for a in node.all_input_nodes):
            carrying.add(node)
    return carrying


def needed_nodes(graph: fx.Graph, carrying: set[fx.Node]) -> set[fx.Node]:
    """The carrying nodes whose derivatives reach the graph's output (or that write in place
    into a carrying value): the only ones that need a Taylor rule."""
    needed: set[fx.Node] = set()
    for node in reversed(graph.nodes):  # every user of a node before the node itself
        feeds_input = any(a in carrying for a in node.all_input_nodes)
        if node.op == "output" or node in needed or (feeds_input and _mutates(node)):
            needed.update(a for a in node.all_input_nodes if a in carrying)
            if node.op == "call_function" and feeds_input:
                needed.add(node)
    return needed


def on_values(target: Callable) -> Callable:
    """A rule that runs `target` on the values of its arguments, for an operation whose
    result is a constant to the pass: `rule(order, *args, **kwargs) -> target's result`."""

    def rule(order: object, *args: object, **kwargs: object) -> object:
        return target(*values_of(args), **values_of(kwargs))

    rule.on_values = True  # no derivative passes through it: no Taylor rule needed
    return rule


def values_of(argument: object) -> object:
    """`argument` with every `Terms` in it (through lists, tuples and dicts) by its value."""
    if isinstance(argument, Terms):
        return argument.value
    if isinstance(argument, (list, tuple)):
        return type(argument)(values_of(item) for item in argument)
    if isinstance(argument, dict):
        return {key: values_of(item) for key, item in argument.items()}
    return argument


def _floating(node: fx.Node) -> bool:
    """Whether the node's result (as traced) holds a floating-point tensor; True if unknown."""
    value = node.meta.get("val")
    if isinstance(value, Tensor):
        return _floating_tensor(value)
    if isinstance(value, (list, tuple)) and value:  # several results: carrying if one is
        return any(not isinstance(item, Tensor) or _floating_tensor(item) for item in value)
    return True


def _mutates(node: fx.Node) -> bool:
    """Whether the node is an aten operation that writes into one of its arguments."""
    schema = getattr(node.target, "_schema", None)
    return node.op == "call_function" and schema is not None and schema.is_mutable


def _floating_tensor(value: Tensor) -> bool:
    return value.is_floating_point() or value.is_complex()
