"""The backward pass: dependency counts, one rule call per input edge, no recursion.

A node runs when every consumer has delivered its gradient (its dependency count is zero),
so each rule runs once with its complete gradient. Gradients of intermediate nodes are
dropped as soon as they are consumed; saved values are dropped when a node has run,
unless ``retain_graph``.
"""

from __future__ import annotations

import itertools
import sys
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from ..modes.registry import backward_hooks
from .backend import is_foreign
from .errors import error
from .grad_mode import run_pass, state
from .gradients import fit_gradient, node_gradients, root_gradient
from .graph import Node, check_saved, clock
from .hooks import accumulate_grad, dense, node_hooks, own, run_hooks
from .lazy import is_lazy
from .op import IN_PLACE_SIZE, fits_into, positional_rules
from .targets import capture, check_inputs, check_output, check_unused, leading_to
from .tensor import Tensor

if TYPE_CHECKING:
    from .gradients import GradientCheck
    from .targets import Targets

# The gradients pending for leaves in a pass (a leaf tensor, or an edge into a stop: a
# node or a (node, output index) pair), and for the nodes that end it (stops).
Pending = dict[Any, Any]

_getrefcount = sys.getrefcount
ndarray = np.ndarray


def _refs_of_a_local() -> int:
    """``_getrefcount`` of an object only a local variable holds, as this module is built
    (2 interpreted; 1 compiled, Cython passes it borrowed): see tests/core/test_refcounts.py."""
    x = ndarray(0)
    return _getrefcount(x)


_SOLE = _refs_of_a_local()
_NUMPY_VALUES = frozenset([ndarray, float, complex, int, *set(np.sctypeDict.values())])
multiply = np.multiply


def _edge(t: Tensor) -> Any:
    node = t._node
    return t if node is None else node


def _node_of(edge: Any) -> Node | None:
    if type(edge) is Node:
        return edge
    if type(edge) is tuple:
        node: Node = edge[0]
        return node
    return None


def _fit(g: Any, ref: Any, node: Node, out_grad: Any = None) -> Any:
    """``fit_gradient`` for the input ``ref`` of ``node`` (its position looked up only
    for an error)."""
    return fit_gradient(g, ref, node.op.name, (ref,), out_grad, node.args)


def _add(a: Any, b: Any) -> Any:
    if a is None:
        return b
    return a + b


def _accumulate(leaves: Pending, edge: Any, g: Any) -> None:
    """Add ``g`` to what is pending along ``edge``: a node's ``acc`` (a list for a node with
    several outputs), or a leaf's entry in ``leaves``."""
    tp = type(edge)
    if tp is Node:
        prev = edge.acc
        edge.acc = g if prev is None else prev + g
    elif tp is tuple:
        node, k = edge
        slots = node.acc
        if slots is None:
            slots = node.acc = [None] * node.op.nout
        slots[k] = _add(slots[k], g)
    else:
        prev = leaves.get(edge)
        leaves[edge] = g if prev is None else prev + g


def run_backward(outputs: Sequence[Tensor], grad_outputs: Sequence[Any],
                 retain_graph: bool | None, create_graph: bool, inputs: Any = None,
                 capture: bool = False, allow_unused: bool = False,
                 check: GradientCheck | None = None, hook: int = 0) -> list[Any] | None:
    """Backpropagate from ``outputs``; accumulate into leaves' ``.grad`` or capture.

    With ``capture`` (``autograd.grad``), return the gradients for ``inputs`` instead of
    accumulating into any ``.grad``. While a mode is on, the call goes through the modes'
    backward hooks from the ``hook``-th on (``modes.registry``), which may set ``check``.
    """
    if state.modes_on and hook < len(backward_hooks):
        got: list[Any] | None = backward_hooks[hook](
            (outputs, grad_outputs, retain_graph, create_graph, inputs, capture,
             allow_unused), check, hook + 1)
        return got
    if retain_graph is None:
        retain_graph = create_graph
    roots = []
    for k, (t, g) in enumerate(zip(outputs, grad_outputs)):
        check_output(t, k)
        roots.append((_edge(t), root_gradient(t, g, k, create_graph)))

    targets: Targets | None = None
    if inputs is not None:
        inputs = check_inputs(inputs, "grad" if capture else "backward")
        targets = {}
        for k, t in enumerate(inputs):
            targets.setdefault(_node_of(_edge(t)) or t, []).append(k)
    results: list[Any] | None = run_pass(create_graph, _execute, roots, retain_graph,
                                         create_graph, inputs, targets, check)
    if inputs is None:
        return None
    assert results is not None  # (a pass with inputs returns their gradients)
    if not capture:  # backward(inputs=...): an unused input keeps its .grad (PyTorch)
        for t, g in zip(inputs, results):
            if g is not None:
                t._grad = accumulate_grad(getattr(t, "_grad", None), g, create_graph)
        return None
    check_unused(inputs, results, allow_unused)
    return results


_pass_ids = itertools.count(1)


def _execute(roots: list[tuple[Any, Any]], retain_graph: bool, create_graph: bool,
             inputs: tuple[Tensor, ...] | None, targets: Targets | None,
             check: GradientCheck | None) -> list[Any] | None:
    """The pass, by phases: order the nodes (dependency counts), seed the roots, run the
    nodes as their counts reach zero, then the stops and the leaves."""
    # Each node keeps its bookkeeping for the pass in slots (visit: the pass id, count:
    # consumers still to deliver, acc: the gradient so far): no dict lookups keyed by
    # thousands of scattered nodes.
    pid = next(_pass_ids)
    leaves: dict[Any, Any] = {}
    start = []
    for edge, g in roots:
        node = _node_of(edge)
        if node is None:
            _accumulate(leaves, edge, g)  # a leaf as an output: its gradient is g
        else:
            start.append(node)
    needed, stops = leading_to(start, targets) if targets else (None, None)
    ready = _count_consumers(start, needed, pid)
    stopped: Pending = {}  # edge into a stop -> its gradient
    for edge, g in roots:
        node = _node_of(edge)
        if stops and node in stops:
            stopped[edge] = _add(stopped.get(edge), g)
        elif node is not None and node.visit == pid:
            _accumulate(leaves, edge, g)
    if len(ready) > 1:
        ready = [n for n in ready if n.count == 0]
    results = [None] * len(inputs) if inputs is not None else None
    general = create_graph or check is not None  # every node through node_gradients
    for _, g in roots:  # (Dask gradients: rules run where a value read is refused)
        if type(g) is not ndarray and is_lazy(g):
            general = True
    _run_nodes(ready, leaves, pid, stops, stopped, targets, inputs, results, general,
               create_graph, check, not retain_graph)
    for node in stops or ():  # inputs of autograd.grad where the pass ends
        assert targets is not None and inputs is not None and results is not None  # (stops)
        if node.op.nout == 1:
            g = stopped.get(node)
        else:
            g = [stopped.get((node, k)) for k in range(node.op.nout)]
            g = g if [x for x in g if x is not None] else None
        capture(node, node_hooks(node, g), targets[node], inputs, results)
    g = None  # (its reference would count against the leaves' gradients)
    _deliver_to_leaves(leaves, targets, results, create_graph)
    return results


def _count_consumers(start: list[Node], needed: set[Node] | None, pid: int) -> list[Node]:
    """Phase 1: the dependency count of every node reachable from ``start`` (with
    ``needed``, for autograd.grad, of those leading to its inputs); the start nodes."""
    stack = []
    for node in start:
        if node.visit != pid and (needed is None or node in needed):
            node.visit = pid
            node.count = 0
            node.acc = None
            stack.append(node)
    ready = list(stack)
    # Both stacks keep their top apart (``top``), so that a chain's nodes never empty and
    # refill the list: each way a reallocation (W8).
    top = None
    while top is not None or stack:
        if top is None:
            node = stack.pop()
        else:
            node, top = top, None
        for p in node.more or (node.e0, node.e1):  # (the parents: graph.Node)
            if p is None:
                continue
            tp = type(p)
            q = p if tp is Node else p[0] if tp is tuple else None
            if q is None:
                continue
            if q.visit == pid:
                q.count += 1
            elif needed is None or q in needed:
                q.visit = pid
                q.count = 1
                q.acc = None
                if top is not None:
                    stack.append(top)
                top = q
    return ready


def _run_nodes(ready: list[Node], leaves: Pending, pid: int, stops: set[Node] | None,
               stopped: Pending, targets: Targets | None, inputs: tuple[Tensor, ...] | None,
               results: list[Any] | None, general: bool, create_graph: bool,
               check: GradientCheck | None, release: bool) -> None:
    """Phase 2: run each node once its count is zero: its rules get its whole gradient,
    and what they return goes along its edges (:func:`_deliver`)."""
    masked: set[Node] = set()  # nodes whose gradient a selection (where, indexing) zeroed in places
    now = clock[0]
    ready_pop = ready.pop
    ready_append = ready.append
    captured = {t for t in targets if type(t) is Node} if targets else None
    top = None
    while top is not None or ready:
        if top is None:
            node = ready_pop()
        else:
            node, top = top, None
        if node.visit != pid:
            raise error("reentrant", name=node.op.name)
        g = node.acc
        node.acc = None
        args = node.args
        if args is None:
            raise error("freed-graph", name=node.op.name)
        if node.epoch < now:
            check_saved(node)
        op = node.op
        extra = node.extra
        if captured and node in captured:
            # An input of autograd.grad with others further back: PyTorch takes its
            # gradient before its hooks then (and after them at a stop, below).
            assert targets is not None and inputs is not None and results is not None
            g = capture(node, g, targets[node], inputs, results)
        if extra is not None and (extra.hooks or extra.retained):
            g = node_hooks(node, g)
        strong = node in masked if masked else False  # (no lookup in an empty set)
        if (g is None or general or extra is not None or strong
                or not op.single_output):
            # The bookkeeping of gradients.py: several outputs, saved values as tensors
            # (create_graph, forward mode), strong zeros, anomaly checks; fitted.
            rules: Sequence[Any] = node_gradients(node, g, strong, create_graph, check)
            done = True
            table = into = None
            mask = (strong and op.elementwise) or op.selects
        else:
            # The common case: the rules are called in the loop below, and a row of the
            # elementwise table gives its derivatives directly (gradient g * conj(d)).
            done = False
            # (the NumPy table for NumPy gradients; another library's: the rules)
            table = (op.numpy_derivatives if node.kw is None and type(g) in _NUMPY_VALUES
                     else None)
            rules = table or (op.vjps if not op.variadic else positional_rules(op, len(args)))
            mask = op.selects
            into = None if table is not None else op.adds_into
        ans = node.ans
        kw = node.kw
        for p, rule, ref in zip(node.more or (node.e0, node.e1), rules, args):  # (graph.Node)
            if p is None:
                continue
            if done:
                gi = rule  # (node_gradients' result for this input)
            else:
                gi = _call_rule(rule, table, into, p, ref, g, ans, args, kw, node, leaves, pid)
            q = _deliver(p, gi, pid, mask, masked, leaves, stops, stopped)
            if q is not None:
                if top is not None:
                    ready_append(top)
                top = q
        if release and op.frees and (op.frees is True or op.frees(node)):
            node.args = node.ans = node.kw = None
            if extra is not None:
                extra.duals = None


def _call_rule(rule: Any, table: Any, into: Any, p: Any, ref: Any, g: Any, ans: Any,
               args: tuple[Any, ...], kw: dict[str, Any] | None, node: Node, leaves: Pending,
               pid: int) -> Any:
    """The gradient along one input edge ``p`` (input ``ref``) of ``node``, in the common
    case: a row of the elementwise table or the op's rule, fitted to the input."""
    if table is not None:
        gi = rule(ans, *args).conjugate()
        # gi is often a fresh temporary (cos(x)): multiply into it when large
        if (type(gi) is ndarray and gi.size >= IN_PLACE_SIZE
                and _getrefcount(gi) <= _SOLE and fits_into(gi, g)):
            multiply(gi, g, out=gi)
        else:
            gi = g * gi
    elif kw is None:
        gi = (rule(g, ans, *args) if into is None else
              _add_into(into, rule, p, leaves, pid, g, ans, args))
    else:
        gi = rule(g, ans, *args, **kw)
    if gi is not None and ref is not None:
        try:
            if gi.shape != ref.shape or (gi.dtype is not ref.dtype and gi.dtype != ref.dtype):
                gi = _fit(gi, ref, node, g)
        except AttributeError:
            gi = _fit(gi, ref, node, g)
    return gi


def _deliver(p: Any, gi: Any, pid: int, mask: bool, masked: set[Node], leaves: Pending,
             stops: set[Node] | None, stopped: Pending) -> Node | None:
    """Deliver ``gi`` along the edge ``p``: to a node, one output of a node, or a leaf.
    Returns the node whose last consumer this was (it is ready to run), else None."""
    if type(p) is Node:
        q = p
    elif type(p) is tuple:
        q = p[0]
    else:
        if gi is not None:
            prev = leaves.get(p)
            leaves[p] = gi if prev is None else prev + gi
        return None
    if q.visit != pid:
        _off_path(p, q, gi, pid, stops, stopped)
        return None
    if gi is not None:
        if q is p:
            prev = q.acc
            q.acc = gi if prev is None else prev + gi
        else:
            _accumulate(leaves, p, gi)
        if mask:
            masked.add(q)
    c = q.count - 1
    q.count = c
    return None if c else q


def _deliver_to_leaves(leaves: Pending, targets: Targets | None, results: list[Any] | None,
                       create_graph: bool) -> None:
    """Phase 4: the leaves' hooks, then their ``.grad`` accumulated (or captured).
    Entries are popped, so that ``own`` can tell from the reference count whether a
    gradient is held elsewhere."""
    while leaves:
        leaf, g = leaves.popitem()
        if not leaf.requires_grad or (targets is not None and leaf not in targets):
            # detached (detach_, requires_grad_(False)) after the graph was made, or not
            # asked for: neither its hooks nor its .grad
            continue
        try:  # (an unset slot costs an exception; set it once)
            hooks = leaf._hooks
        except AttributeError:
            hooks = leaf._hooks = None
        if hooks:
            g = run_hooks(hooks, g)
        if targets is not None:
            assert results is not None  # (set with targets)
            for k in targets[leaf]:
                results[k] = dense(g)
            continue
        if not isinstance(g, (np.ndarray, Tensor)) and not is_foreign(g):
            g = np.asarray(g)
        try:
            prev = leaf._grad
        except AttributeError:
            prev = None
        # no copy if nothing else (a hook, gradient=) holds it: counted on this local
        sole = prev is None and _getrefcount(g) <= _SOLE
        leaf._grad = own(g, sole) if prev is None else accumulate_grad(prev, g, create_graph)


def _add_into(into: Any, rule: Any, p: Any, leaves: Pending, pid: int, g: Any, ans: Any,
              args: tuple[Any, ...]) -> Any:
    """The gradient along ``p`` of a node whose op adds it into a pending one (``Op.adds_into``):
    the pending gradient of ``p``, taken over, with it added in place when nothing else holds
    that array (its memory its own, and counted here); else the rule's result."""
    tp = type(p)
    acc = (p.acc if p.visit == pid else None) if tp is Node else (
        None if tp is tuple else leaves.get(p))
    if (type(acc) is not ndarray or acc.base is not None or not acc.flags.writeable
            or _getrefcount(acc) > _SOLE + 1):  # (+1: the slot or the dict holding it)
        return rule(g, ans, *args)
    if tp is Node:
        p.acc = None
    else:
        leaves[p] = None  # (not deleted: the leaves' order, their hooks' order, stays)
    return into(acc, g, ans, *args)


def _off_path(p: Any, node: Node, gi: Any, pid: int, stops: set[Node] | None,
              stopped: Pending) -> None:
    """A gradient along the edge ``p`` into ``node``, which this pass does not run: kept
    for a stop (an input of autograd.grad where the pass ends), dropped for a node not on
    a path to the inputs; a node a later pass has taken over is an error."""
    if stops and node in stops:
        if gi is not None:
            stopped[p] = _add(stopped.get(p), gi)
    elif node.visit > pid:
        raise error("reentrant", name=node.op.name)
