"""The forward Taylor pass: trace a model once per shape, then carry its terms op by op.

    traced = trace_model(model, x)          # aten graph, cached per model and shape
    terms = propagate(traced, model, x, seed, order)

`trace_model` records the model (with a hard constraint, Fourier features, skip connections,
gates: whatever its forward does with torch operations) as a graph of aten operations with
`make_fx` on fake tensors, so no arithmetic runs while tracing and a forward whose path depends
on the values of its points is refused rather than frozen. The model is functionalised while
traced: its in-place writes (`out[:, 0] = a`, `h.mul_(2)`, `index_fill_`) are recorded as their
out-of-place forms (select_scatter, mul, index_fill), which have rules. The weights and buffers
are inputs of the graph: the same graph serves every training step, and the parameters'
gradients flow through the pass as through the model.

`propagate` walks that graph with real tensors: operations through which derivatives travel
from the points to the output follow their rule (`pinn.derivatives.rules`); everything else
(the weights' transposes, constants, masks, whatever is computed under `.detach()`) is a
constant to the pass and runs as it is on values (`pinn.derivatives.dependencies`), so only
the former need rules. Only plain differentiable torch operations are used, so a loss built from the
result backpropagates to the parameters with ordinary first-order autograd.

The calls that depend on the points alone (a hard constraint's g and B, a distance function)
run once per point set when the caller says what its seed and order are made of (`reuse`):
later passes at the same points take their results from `pinn.derivatives.point_cache`.
"""

from __future__ import annotations

import operator
import traceback
import weakref
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace

import torch
from torch import fx, nn
from torch._decomp import get_decompositions
from torch.fx.experimental.proxy_tensor import make_fx
from torch.utils._python_dispatch import TorchDispatchMode

from pinn.derivatives.dependencies import carrying_nodes, needed_nodes, on_values
from pinn.derivatives.orders import Diagonal, Order
from pinn.derivatives.point_cache import PointCache, tensors_in
from pinn.derivatives.rules import Terms, carries_series, rule_for
from pinn.derivatives.series import Univariate
from pinn.errors import PinnError, first_line

Tensor = torch.Tensor


class TaylorModeUnsupported(PinnError, TypeError):
    """The model does something the Taylor pass cannot carry; use autograd for it."""


@dataclass
class Traced:
    """A model's aten graph for one input shape.

    program: the graph's operations in order, each on numbered values (the parameters, the
        buffers and x first, then one per operation) and, where it touches the points' terms,
        with its Taylor rule; a call is `static` where it depends on the points and constants
        alone (a hard constraint's g and B), not on the weights or buffers, and draws nothing
        at random.
    output: the graph's output, as references to those values.
    unsupported: "operation (where)" for each operation without a Taylor rule that the
        derivatives pass through on their way to the output, or whose rule refuses the
        arguments this model gives it (a norm of order 0, a convolution whose weights vary).
    without_series: why a univariate pass of any order (`pinn.derivatives.univariate`) cannot
        carry the others, one sentence per operation (e.g. a rule of one's own).
    frontier: the value slots of static calls that other calls read: what `points_cache`
        keeps per point set (`pinn.derivatives.point_cache`); () where nothing is kept.
    static_constants: the graph's constant tensors that static calls read (their versions
        are part of a cache key).
    points_cache: the frontier's values at the last few point sets.
    """

    program: list[_Call]
    output: object
    unsupported: list[str]
    without_series: list[str] = field(default_factory=list)
    frontier: tuple[int, ...] = ()
    static_constants: tuple[Tensor, ...] = ()
    points_cache: PointCache = field(default_factory=PointCache)


# id(model) -> {input signature: Traced}, each entry dropped when its model is freed. A plain
# dict with int keys (not a WeakKeyDictionary), which torch.compile can guard on by key.
_CACHE: dict[int, dict] = {}


def trace_model(model: Callable[[Tensor], Tensor], x: Tensor) -> Traced:
    """The model's `Traced` graph for points shaped like x (N, d), traced on first use.

    Raises:
        TaylorModeUnsupported: the model's forward cannot be traced (it reads the values of
            its points, e.g. in an `if`), naming why.
    """
    key = _signature(model, x)
    per_model = _cache_of(model)
    if key not in per_model:
        per_model[key] = _trace(model, x)
    return per_model[key]


def traced_size(model: object) -> int:
    """The number of operations of the model's largest graph traced so far (0: none yet)."""
    return max((len(traced.program) for traced in _CACHE.get(id(model), {}).values()), default=0)


def propagate(
    traced: Traced,
    model: Callable,
    x: Tensor,
    first: Tensor,
    order: Order,
    taps: dict[int, Callable] | None = None,
    reuse: object = None,
) -> Terms:
    """The model's terms at the (N, d) points x: value (N, m), first (k, N, m), second.

    first: the seed directions, (k, d) broadcast as (k, 1, d), or (k, N, d) per point.
    second: (order.rows, N, m), zeros where the model is affine in x.
    taps: {position of a call in `traced.program`: tap(args, result) -> result}, each called
        after that call's rule with its resolved arguments and result, returning what the pass
        carries on (`pinn.training.optim.kfac_layers` reads a Linear layer's input terms and
        adds probes to its output's, for KFAC's factors).
    reuse: what, besides x, determines `first` and `order` (tensors, numbers, strings, in
        tuples): given, the static calls' results are kept per point set and taken by a later
        pass with the same x and `reuse` instead of computed again
        (`pinn.derivatives.point_cache`); None computes everything.
    """
    if traced.unsupported:
        raise TaylorModeUnsupported(unsupported_message(traced.unsupported))
    key = _cache_key(traced, x, reuse, taps)
    kept = traced.points_cache.get(key)
    # Plain lists and tuples only (not the fx graph), so torch.compile can trace this loop.
    values: list[object] = [*_state(model), Terms(x, first, None)]
    for position, call in enumerate(traced.program):
        if kept is not None and call.static:
            values.append(kept.get(len(values)))  # None where no other call reads it
            continue
        args, kwargs = _resolve(call.args, values), _resolve(call.kwargs, values)
        if call.rule is not None:
            result = call.rule(order, *args, **kwargs)
            if taps and position in taps:
                result = taps[position](args, result)
            values.append(result)
        else:
            values.append(call.target(*args, **kwargs))
    if key is not None and kept is None:
        holders = (x, *tensors_in(reuse))
        traced.points_cache.put(key, holders, {slot: values[slot] for slot in traced.frontier})
    output = _single_output(_resolve(traced.output, values))
    return _output_terms(output, x, first, order)


def _cache_key(traced: Traced, x: Tensor, reuse: object, taps: dict | None) -> object:
    """The pass's key in `traced.points_cache`, or None where nothing is kept or taken: no
    static call feeds the weights' calls, or a tap sits on a static call."""
    if not traced.frontier or (taps and any(traced.program[p].static for p in taps)):
        return None
    return traced.points_cache.key(x, reuse, traced.static_constants)


@dataclass(frozen=True)
class _Slot:
    """A reference, in a `_Call`'s arguments, to the value of an earlier node."""

    index: int


@dataclass(frozen=True)
class _Call:
    """One operation of a traced graph: its target (or Taylor rule) and argument templates."""

    target: Callable
    args: tuple
    kwargs: dict
    rule: Callable | None
    static: bool = False


def _resolve(template: object, values: list[object]) -> object:
    """`template` with each `_Slot` replaced by its value (through lists, tuples, dicts and
    slices)."""
    if isinstance(template, _Slot):
        return values[template.index]
    if isinstance(template, (list, tuple)):
        return type(template)(_resolve(item, values) for item in template)
    if isinstance(template, dict):
        return {key: _resolve(item, values) for key, item in template.items()}
    if isinstance(template, slice):
        parts = (template.start, template.stop, template.step)
        return slice(*(_resolve(part, values) for part in parts))
    return template


def slots_in(argument: object) -> Iterator[_Slot]:
    """The `_Slot`s in a call's argument template."""
    return (item for item in leaves(argument) if isinstance(item, _Slot))


def leaves(argument: object) -> Iterator[object]:
    """The items of an argument template, through lists, tuples, dicts and slices."""
    if isinstance(argument, (list, tuple)):
        for item in argument:
            yield from leaves(item)
    elif isinstance(argument, dict):
        for item in argument.values():
            yield from leaves(item)
    elif isinstance(argument, slice):
        yield from leaves((argument.start, argument.stop, argument.step))
    else:
        yield argument


def _template(argument: object, slots: dict[fx.Node, object]) -> object:
    """A node's argument with each graph node replaced by its slot (or constant), in plain
    tuples, lists and dicts (fx's immutable ones are not what torch.compile passes on)."""
    if isinstance(argument, fx.Node):
        return slots[argument]
    if isinstance(argument, tuple):
        return tuple(_template(item, slots) for item in argument)
    if isinstance(argument, list):
        return [_template(item, slots) for item in argument]
    if isinstance(argument, dict):
        return {key: _template(item, slots) for key, item in argument.items()}
    if isinstance(argument, slice):
        return slice(
            *(_template(part, slots) for part in (argument.start, argument.stop, argument.step))
        )
    return argument


def _program(graph: fx.GraphModule, rules: dict) -> tuple[list[_Call], object]:
    """The graph as a list of calls on numbered values (the inputs first), and its output."""
    slots: dict[fx.Node, object] = {}
    program: list[_Call] = []
    output: object = None
    count = 0  # values computed so far: the inputs, then one per call
    for node in graph.graph.nodes:
        if node.op == "placeholder":
            slots[node], count = _Slot(count), count + 1
        elif node.op == "get_attr":  # a constant captured while tracing: held by value
            slots[node] = getattr(graph, node.target)
        elif node.op == "call_function":
            args, kwargs = _template((node.args, node.kwargs), slots)
            program.append(_Call(node.target, args, kwargs, rules.get(node)))
            slots[node], count = _Slot(count), count + 1
        elif node.op == "output":
            output = _template(node.args[0], slots)
    return program, output


def _mark_static(
    program: list[_Call], output: object, n_inputs: int
) -> tuple[list[_Call], tuple[int, ...], tuple[Tensor, ...]]:
    """The program with its static calls marked (those that read only x, the last input, the
    graph's constants and other static calls, and draw nothing at random), the frontier (the
    static calls' slots that other calls read) and the constant tensors static calls read.
    No frontier where the output itself is static (a model that ignores its weights)."""
    static_slots, marked, constants = {n_inputs - 1}, [], []
    for position, call in enumerate(program):
        arguments = (call.args, call.kwargs)
        static = _deterministic(call.target) and all(
            slot.index in static_slots for slot in slots_in(arguments)
        )
        if static:
            static_slots.add(n_inputs + position)
            constants += [a for a in leaves(arguments) if isinstance(a, Tensor)]
        marked.append(replace(call, static=static))
    read = {
        slot.index
        for call in marked
        if not call.static
        for slot in slots_in((call.args, call.kwargs))
    }
    frontier = tuple(sorted(slot for slot in read & static_slots if slot >= n_inputs))
    if any(slot.index in static_slots for slot in slots_in(output)):
        frontier = ()
    return marked, frontier, tuple(constants)


def _deterministic(target: Callable) -> bool:
    """Whether an operation gives the same result for the same arguments (no random draw)."""
    tags = getattr(target, "tags", ())
    return torch.Tag.nondeterministic_seeded not in tags


def _n_inputs(graph: fx.GraphModule) -> int:
    """The graph's placeholders: the parameters, the buffers, then x."""
    return sum(node.op == "placeholder" for node in graph.graph.nodes)


def _single_output(output: object) -> object:
    """The one output tensor (or its Terms) of a traced model, out of its list or tuple."""
    while isinstance(output, (list, tuple)) and not isinstance(output, Terms):
        if len(output) != 1:
            raise ValueError(f"the model must return one tensor, got {len(output)} outputs")
        (output,) = output
    return output


def _output_terms(output: object, x: Tensor, first: Tensor, order: Order) -> Terms:
    if not isinstance(output, Terms):  # the output does not depend on x at all
        k = first.shape[0]
        return Terms(
            output, output.new_zeros(k, *output.shape), output.new_zeros(order.rows, *output.shape)
        )
    value, out_first, second = output
    # Copies where the output is still the points or the seed (a model affine in x).
    value = value.clone() if value is x else value
    out_first = out_first.expand(out_first.shape[0], *value.shape)
    # (Compiled, always a copy: a traced graph cannot compare data pointers; the copy fuses.)
    aliased = torch.compiler.is_compiling() or _same_memory(out_first, first)
    out_first = out_first.clone() if aliased else out_first
    if second is None:
        second = value.new_zeros(order.rows, *value.shape)
    return Terms(value, out_first, second)


def _same_memory(a: Tensor, b: Tensor) -> bool:
    """Whether a and b start at the same memory; True for tensors under a torch.func transform
    (vmap, jacrev: they have no storage to compare), which are then copied, as compiled."""
    try:
        return a.data_ptr() == b.data_ptr()
    except RuntimeError:  # "Cannot access data pointer of Tensor that doesn't have storage"
        return True


# ---- tracing ------------------------------------------------------------------------------


def _trace(model: Callable, x: Tensor) -> Traced:
    probe = x.detach()
    with torch.no_grad():
        model(probe[:2])  # fills what a model computes lazily on first call, outside tracing
    graph, rules, missing = _decomposed(model, probe)
    where = _locate(model, probe, set(missing)) if missing else {}
    unsupported = [f"{op}" + (f" ({where[op]})" if op in where else "") for op in missing]
    without_series = sorted(
        {
            f"{node.target} has no rule for derivatives of order 3 and more"
            for node, rule in rules.items()
            if rule is not None
            and not getattr(rule, "on_values", False)
            and not carries_series(node.target)
        }
    )
    program, output = _program(graph, rules)
    program, frontier, constants = _mark_static(program, output, _n_inputs(graph))
    traced = Traced(program, output, unsupported, without_series, frontier, constants)
    if not unsupported:
        _try_rules(traced, model, probe)
    return traced


def _try_rules(traced: Traced, model: Callable, probe: Tensor) -> None:
    """Add to `traced` the rules that refuse the arguments this model gives them (a norm of
    order 0, a convolution whose weights vary with the points): a rule sees its arguments only
    when it runs, and the engine must know before training whether to fall back. One pass of
    each kind (second order along one input, then a univariate one) at the probe points."""
    seed = probe.new_zeros(3, 1, probe.shape[1])
    seed[0, 0, 0].fill_(1.0)  # a fill on the device, not a number copied from the host
    with torch.no_grad():
        try:
            propagate(traced, model, probe, seed[:1], Diagonal(1))
        except NotImplementedError as error:
            traced.unsupported.append(str(error))
            return
        if traced.without_series:
            return
        try:
            propagate(traced, model, probe, seed, Univariate(3))
        except NotImplementedError as error:
            traced.without_series.append(str(error))


def _decomposed(model: Callable, probe: Tensor) -> tuple[fx.GraphModule, dict, list]:
    """The model's graph, its rules and the operations left without one (`_rules`).

    An operation without a rule (elu, leaky_relu, mish, softmax, ...) is traced again through
    torch's decomposition of it, kept where the operations it becomes all have rules or
    decompose further, dropped where it ends in operations that do neither (torch's primitives,
    prims.*): the message then names the model's own operation.
    """
    decompositions: dict = {}
    tried: set = set()
    graph = _graph(model, probe, decompositions)
    rules = _rules(graph.graph)
    while True:
        missing = list(dict.fromkeys(node.target for node, rule in rules.items() if rule is None))
        untried = [op for op in missing if op not in tried]
        if not untried:
            return graph, rules, missing
        op = untried[0]
        tried.add(op)
        trial = {**decompositions, **get_decompositions([op])}
        if len(trial) == len(decompositions):
            continue  # torch has no decomposition of it
        trial_graph = _graph(model, probe, trial)
        trial_rules = _rules(trial_graph.graph)
        new = {node.target for node, rule in trial_rules.items() if rule is None} - set(missing)
        if all(get_decompositions([other]) for other in new):  # no dead end (prims.*)
            decompositions, graph, rules = trial, trial_graph, trial_rules


def _graph(model: Callable, probe: Tensor, decompositions: dict) -> fx.GraphModule:
    """The model's aten graph at points like `probe`, `decompositions` applied."""
    try:
        graph = make_fx(
            # in-place writes (`out[:, 0] = a`, `add_`) become their out-of-place forms
            # (select_scatter, add), which have rules: the pass keeps no mutation
            torch.func.functionalize(_functional(model), remove="mutations"),
            tracing_mode="fake",
            _allow_non_fake_inputs=True,
            # An explicit table, even empty, keeps `.detach()` as aten.detach: without one,
            # torch >= 2.14 records it as aten.alias, and the pass would differentiate through it.
            decomposition_table=decompositions,
        )(*_state(model), probe)
        if _writes_in_place(graph.graph):  # a decomposition's own writes (rms_norm's add_)
            graph = _retraced(graph, probe, model)
    except Exception as error:  # tracing fails on value-dependent Python (if, .item(), ...)
        raise TaylorModeUnsupported(
            f"{_name(model)} could not be traced into torch operations ({type(error).__name__}: "
            f"{first_line(error)}); a forward that branches on the values of its points "
            "(an `if` on a tensor, .item(), .tolist()) cannot run in Taylor mode: use "
            "torch.where instead, or the autograd engine"
        ) from None
    graph.graph.eliminate_dead_code()
    graph.recompile()
    return graph


def _writes_in_place(graph: fx.Graph) -> bool:
    """Whether an operation of the graph mutates a tensor (its schema says so)."""
    return any(
        node.op == "call_function"
        and isinstance(node.target, torch._ops.OpOverload)
        and node.target._schema.is_mutable
        for node in graph.nodes
    )


def _retraced(graph: fx.GraphModule, probe: Tensor, model: Callable) -> fx.GraphModule:
    """The aten graph traced again, functionalized: the writes that torch's decompositions
    make in place, below the first tracing's functionalization, become out-of-place too."""
    return make_fx(
        torch.func.functionalize(graph, remove="mutations"),
        tracing_mode="fake",
        _allow_non_fake_inputs=True,
        decomposition_table={},
    )(*_state(model), probe)


def _functional(model: Callable) -> Callable:
    """The model as a function of (parameters, buffers, x), the form `make_fx` traces."""
    if not isinstance(model, nn.Module):
        return lambda x: model(x)
    names = _state_names(model)

    def call(*arguments: Tensor) -> Tensor:
        state = dict(zip(names, arguments[:-1]))
        return torch.func.functional_call(model, state, (arguments[-1],))

    return call


def _state(model: Callable) -> list[Tensor]:
    """The model's parameters then buffers, in the order of the graph's placeholders."""
    if not isinstance(model, nn.Module):
        return []
    return [*model.parameters(), *model.buffers()]


def _state_names(model: nn.Module) -> list[str]:
    return [name for name, _ in model.named_parameters()] + [
        name for name, _ in model.named_buffers()
    ]


def _signature(model: Callable, x: Tensor) -> tuple:
    """What a traced graph depends on besides the weights' values."""
    shapes = tuple((t.shape, t.dtype, t.device) for t in _state(model))
    mode = model.training if isinstance(model, nn.Module) else None
    return (tuple(x.shape), x.dtype, x.device, shapes, mode)


def _rules(graph: fx.Graph) -> dict[fx.Node, Callable | None]:
    """{node: its rule} for every operation that gets a value depending on x: the Taylor rule
    (None if there is none) where derivatives travel through it to the output, else a rule
    that runs it on the values (`pinn.derivatives.dependencies`). Item picks run as they are."""
    carrying = carrying_nodes(graph)
    needed = needed_nodes(graph, carrying)
    rules: dict[fx.Node, Callable | None] = {}
    for node in graph.nodes:
        if node.op != "call_function" or node.target is operator.getitem:
            continue
        if node in needed:
            rules[node] = rule_for(node.target)
        elif any(a in carrying for a in node.all_input_nodes):
            rules[node] = on_values(node.target)
    return rules


class _Locator(TorchDispatchMode):
    """Notes where (file, line, code) the user's code called each of some aten operations."""

    def __init__(self, ops: set):
        super().__init__()
        self.ops, self.where = ops, {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func in self.ops and func not in self.where:
            stack = traceback.extract_stack()
            # the model's own frames: below `_locate`'s call, outside torch and this module
            start = max(i for i, f in enumerate(stack) if f.name == "_locate") + 1
            frames = [
                f for f in stack[start:] if "/torch/" not in f.filename and f.filename != __file__
            ]
            if frames:  # none where torch's own modules call it (an nn.Sequential's layer)
                frame = frames[-1]
                self.where[func] = f"{frame.filename}:{frame.lineno}: {frame.line}"
        return func(*args, **(kwargs or {}))


def _locate(model: Callable, x: Tensor, ops: set) -> dict:
    """Where the model calls each of `ops`, by running it once on two of the points."""
    locator = _Locator(ops)
    try:
        with torch.no_grad(), locator:
            model(x[:2])
    except Exception:  # only for the message: a model that fails here fails plainly later
        pass
    return locator.where


def unsupported_message(unsupported: list[str]) -> str:
    return (
        f"the Taylor pass has no rule for {unsupported[0]}"
        + (f" (and {len(unsupported) - 1} more operations)" if len(unsupported) > 1 else "")
        + "; use the autograd engine (engine=autograd), or register a rule with "
        "pinn.register_elementwise or pinn.register_taylor_rule"
    )


def _name(model: Callable) -> str:
    return (
        type(model).__name__
        if isinstance(model, nn.Module)
        else getattr(model, "__name__", "the model")
    )


def _cache_of(model: object) -> dict:
    """The model's {signature: Traced}; a fresh one (no caching) for a model that cannot be
    weakly referenced, whose freeing could not be noticed."""
    if id(model) not in _CACHE:
        try:
            weakref.finalize(model, _CACHE.pop, id(model), None)
        except TypeError:
            return {}
        _CACHE[id(model)] = {}
    return _CACHE[id(model)]
