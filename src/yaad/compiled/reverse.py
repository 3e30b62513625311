"""The reverse-mode transform of a recording, itself recorded.

:func:`reverse` walks the recorded op calls backwards and runs their VJP rules on the
recorded tensors while the recorder is active, so the backward pass becomes more op calls
on the tape: a compiled function's backward is generated code like its forward, and the
gradients computed inside a recorded function (``autograd.grad``, ``.backward()``,
``yaad.func.value_and_grad``) are part of what is replayed.

Each rule runs *probed* (:meth:`Recorder.probing`). A rule that reads nothing from values
but through ops (its Python decides on shapes, dtypes and constants only, and those a
replay guarantees) is inlined: its ops are the replayed code. A rule that reads a value
(``float()``, ``.data``, an arg-max mask made with NumPy, a check for degenerate
eigenvalues that raises), or whose ops raise, is not: the tape gets one call of the rule
itself (a :func:`rule_call` op), which a replay runs on the new values, deciding again.

The bookkeeping (gradients summed over broadcast axes and cast to the input's dtype,
the root gradient, the checks of outputs and inputs) is the engine's own:
:mod:`yaad.gradients`; strong zeros below selecting ops are :mod:`yaad.ops.strong_zero`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.backend import (
    ComputeRefused,
    computing_refused,
    is_foreign,
    namespace,
    no_implementation,
)
from ..core.grad_mode import state
from ..core.gradients import fit_gradient, root_gradient, rule_gradients
from ..core.hooks import own
from ..core.op import Op
from ..core.targets import check_inputs, check_output, check_unused
from ..core.tensor import Tensor
from ..ops.strong_zero import strong_zero
from .rewrite import rewrite
from .tape import Entry, Recorder, Slot, SlotTuple


def _rule_value(rec: Recorder, r: Any, differentiable: bool) -> Any:
    """The value a rule gets for the recorded argument ``r``."""
    if type(r) is Slot:
        return rec.rule_tensor(r.i) if r.tensor or differentiable else rec.value[r.i]
    if type(r) is SlotTuple:
        items = [_rule_value(rec, x, False) for x in r.items]
        return items if r.is_list else tuple(items)
    if differentiable and (isinstance(r, np.ndarray)
                           or (rec.foreign is not None and is_foreign(r))):
        # A constant array where a tensor may go: what the rule computes from it (its
        # conjugate, say) is recorded, so it follows in-place changes of the constant.
        return rec.rule_tensor(rec.const_slot(r))
    return r


def _leads(entries: list, wrt: set) -> set:
    """Slots through which a gradient can reach a slot in ``wrt``."""
    leads = set(wrt)
    for e in entries:
        args = e.args
        for i, flag in enumerate(e.grad_in):
            if flag and args[i].i in leads:
                leads.update(o for o, d in zip(e.outs, e.diff_out) if d)
                break
    return leads


def reachable(entries: list, roots: set) -> set:
    """Slots from which a gradient can reach a slot in ``roots``."""
    needed = set(roots)
    for e in reversed(entries):
        if any(o in needed for o in e.outs):
            for i, flag in enumerate(e.grad_in):
                if flag:
                    needed.add(e.args[i].i)
    return needed


# ---- a rule called as it is -----------------------------------------------------------

_RULE_OPS: dict[tuple, Op] = {}


def rule_call(spec: Op, todo: tuple, strong: bool, foreign: str | None = None) -> Op:
    """An op computing the fitted gradients of ``spec`` for its inputs ``todo`` by calling
    its rules: ``op(g, ans, *args, **kw)``, one output per input in ``todo``. ``foreign``:
    the library of the arrays when it is not NumPy (the rules run as the engine runs them
    there: nothing computed on a lazy one)."""
    key = (spec, todo, strong, foreign)
    new = _RULE_OPS.get(key)
    if new is not None:
        return new
    name = spec.name
    wanted = [False] * (max(todo) + 1)
    for i in todo:
        wanted[i] = True

    def forward(g: Any, ans: Any, *args: Any, **kw: Any) -> Any:
        with _rules_on(foreign, name):
            grads = rule_gradients(spec, g, ans, args, kw, wanted + [False] * (
                len(args) - len(wanted)), strong_zero if strong else None)
        out = []
        for i in todo:
            gi = grads[i]
            a = args[i]
            if gi is None:  # no gradient this time: zeros add nothing
                gi = (np.zeros(np.shape(a), dtype=a.dtype) if foreign is None else
                      namespace(a).zeros(a.shape, dtype=a.dtype))
            out.append(fit_gradient(gi, a, name, i, g, args))
        return out[0] if len(out) == 1 else tuple(out)

    new = Op(forward=forward, name=f"the gradient rule of '{name}'", vjps=(), jvps=(),
             save_args=False, save_ans=False, nout=len(todo), variadic=False,
             elementwise=False, selects=False, linear=False)
    _RULE_OPS[key] = new
    return new


class _rules_on:
    """Run gradient rules on arrays of library ``foreign`` (None: NumPy's, nothing to do)
    as the engine does: on a lazy library, a rule that would compute a value raises
    ``BackendError`` naming the op."""

    def __init__(self, foreign: str | None, name: str) -> None:
        self.foreign = foreign
        self.name = name
        self.refused: Any = None

    def __enter__(self) -> None:
        if self.foreign is not None:
            self.refused = computing_refused(self.foreign)
            self.refused.__enter__()

    def __exit__(self, kind: Any, e: Any, tb: Any) -> None:
        if self.refused is not None:
            self.refused.__exit__(kind, e, tb)
        if kind is not None and issubclass(kind, ComputeRefused):
            raise no_implementation(f"{self.name} (its gradient)", str(self.foreign),
                                    "its rule reads the values of the arrays") from None


def reverse(rec: Recorder, roots: list, wrt: list) -> dict:
    """Gradients of the ``roots`` (pairs of slot and seed tensor) for the ``wrt`` slots.

    Runs the rules on tensors with ``rec`` recording, in the current grad mode. Returns
    ``{slot: gradient tensor or None}``.
    """
    entries = [it for it in rec.items if type(it) is Entry]
    wanted = set(wrt)
    leads = _leads(entries, wanted)
    pending: dict[int, Any] = {}
    for s, seed in roots:
        prev = pending.get(s)
        pending[s] = seed if prev is None else prev + seed
    masked: set = set()
    results: dict[int, Any] = {}
    for e in reversed(entries):
        outs = e.outs
        if not any(o in pending for o in outs):
            continue
        gs = [pending.pop(o, None) for o in outs]
        for o, g in zip(outs, gs):
            if o in wanted:
                results[o] = g
        spec = e.op
        todo = tuple(i for i, flag in enumerate(e.grad_in) if flag and e.args[i].i in leads)
        if not todo:
            continue
        g = gs[0] if spec.nout == 1 else tuple(gs)
        variadic = spec.variadic
        vjps = spec.vjps
        args = [_rule_value(rec, r, variadic or (i < len(vjps) and vjps[i] is not None))
                for i, r in enumerate(e.args)]
        kw = {k: _rule_value(rec, v, False) for k, v in e.kw.items()} if e.kw else {}
        ans = (rec.rule_tensor(outs[0]) if spec.nout == 1
               else tuple(rec.rule_tensor(o) for o in outs))
        strong = spec.elementwise and any(o in masked for o in outs)
        values = [rec.value[r.i] if type(r) is Slot else r for r in e.args]
        grads = {}
        wanted_here = [i in todo for i in range(len(args))]
        with rec.probing() as probe:
            # (strong: exact zeros where g is zero and the rule met an inf or a nan, a
            # branch not taken, as in the engine)
            rec.quiet += int(strong)
            try:
                with _rules_on(rec.lazy and rec.foreign or None, spec.name):
                    raw = rule_gradients(spec, g, ans, args, kw, wanted_here,
                                         strong_zero if strong else None)
            finally:
                rec.quiet -= int(strong)
            for i in todo:
                gi = raw[i]
                if gi is not None:
                    gi = fit_gradient(gi, values[i], spec.name, i, g, values)
                    if not isinstance(gi, Tensor):  # made from shapes alone (zeros)
                        gi = rec.tensor_of(rec.const_slot(
                            np.asarray(gi) if rec.foreign is None else gi))
                    grads[i] = gi
            if not probe.reasons and not state.enabled:
                _check_on_arrays(rec, probe, e, spec, gs, wanted_here, strong)
        if not probe.reasons:
            rec.target.extend(probe.items)
        elif state.enabled:
            # create_graph: a called rule's result would have no graph. The tensors the
            # probe made are eager mode's: the call goes on eagerly.
            rec.escape(f"the gradient rule of '{spec.name}' reads values "
                       f"({probe.reasons[0]}), under create_graph")
        else:
            grads = _called(rec, e, todo, strong, gs, grads)
        # Exact zeros keep their positions through elementwise ops only (as in the engine).
        mask = spec.selects or strong
        for i, gi in grads.items():
            s = e.args[i].i
            prev = pending.get(s)
            pending[s] = gi if prev is None else prev + gi
            if mask:
                masked.add(s)
    for s in wanted:
        if s not in results:
            results[s] = pending.get(s)
    return results


def _raw(rec: Recorder, r: Any) -> Any:
    """The recorded value of argument ``r``, as the engine gives it to a rule."""
    if type(r) is Slot:
        return rec.value[r.i]
    if type(r) is SlotTuple:
        items = [_raw(rec, x) for x in r.items]
        return items if r.is_list else tuple(items)
    return r


def _check_on_arrays(rec: Recorder, probe: Any, e: Entry, spec: Op, gs: list,
                     wanted: list, strong: bool) -> None:
    """The rules of ``e`` run once more as the engine runs them at first order, on the
    arrays: one that raises there (a method a tensor has and the array lacks, ``g.exp()``)
    while it ran on the probe's tensors is not inlined, so that its replay raises as eager
    mode does."""
    g = [None if x is None else x._data for x in gs]
    outs = [rec.value[o] for o in e.outs]
    kw = {k: _raw(rec, v) for k, v in e.kw.items()} if e.kw else {}
    try:
        with rec.suspend(), _rules_on(rec.lazy and rec.foreign or None, spec.name):
            rule_gradients(spec, g[0] if spec.nout == 1 else tuple(g),
                           outs[0] if spec.nout == 1 else tuple(outs),
                           [_raw(rec, r) for r in e.args], kw, wanted,
                           strong_zero if strong else None)
    except Exception as exc:
        probe.reasons.append(f"its rule raises on arrays ({type(exc).__name__})")


def _called(rec: Recorder, e: Entry, todo: tuple, strong: bool, gs: list,
            probed: dict) -> dict:
    """The rules of ``e`` on the tape as one call (their results, computed by the probe,
    become its outputs)."""
    spec = e.op
    todo = tuple(i for i in todo if i in probed)  # (a rule may return None: no gradient)
    if not todo:
        return {}
    gref = Slot(rec.slot_of(gs[0])) if spec.nout == 1 else SlotTuple(
        [None if g is None else Slot(rec.slot_of(g)) for g in gs], False)
    aref = Slot(e.outs[0]) if spec.nout == 1 else SlotTuple([Slot(o) for o in e.outs], False)
    args = (gref, aref, *e.args)
    outs = []
    for i in todo:
        gi = probed[i]
        outs.append(rec.new_slot(gi._data, gi, ("op",), False, gi))
    op = rule_call(spec, todo, strong, rec.foreign)
    rec.target.append(Entry(op, args, e.kw, tuple(outs), (False,) * len(args),
                            (False,) * len(outs), None,
                            tuple(rec.value[s].dtype for s in outs)))
    return {i: probed[i] for i in todo}


# ---- run_backward while recording -------------------------------------------------------

def _seed(rec: Recorder, t: Tensor, g: Any, k: int, create_graph: bool) -> Tensor:
    g = root_gradient(t, rec.unwatch(g), k, create_graph)
    if isinstance(g, Tensor):
        return rec.tensor_of(rec.slot_of(g))
    s = (rec.lookup_array(g) if isinstance(g, np.ndarray)
         or (rec.foreign is not None and is_foreign(g)) else None)
    return rec.tensor_of(s if s is not None else rec.const_slot(g))


def _has_hooks(rec: Recorder, slots: set) -> bool:
    for s in slots:
        t = rec.tensor[s]
        if t is None:
            continue
        if getattr(t, "_hooks", None):
            return True
        node = t._node
        if node is not None:
            node = node[0] if type(node) is tuple else node
            extra = node.extra
            if extra is not None and (extra.hooks or extra.retained):
                return True
    return False


def record_backward(rec: Recorder, outputs: Any, grad_outputs: Any, create_graph: bool,
                    inputs: Any, capture: bool, allow_unused: bool) -> Any:
    """``run_backward`` while recording: the same results, with the backward recorded."""
    roots = []
    for k, (t, g) in enumerate(zip(outputs, grad_outputs)):
        check_output(t, k)
        roots.append((rec.slot_of(t), _seed(rec, t, g, k, create_graph)))
    entries = [it for it in rec.items if type(it) is Entry]
    needed = reachable(entries, {s for s, _ in roots})
    if inputs is not None:
        inputs = check_inputs(inputs)
        wrt = [rec.slot_of(t) for t in inputs]
    else:
        wrt = sorted(s for s in needed if rec.diff[s] and rec.src[s][0] != "op")
    leaves = [s for s in wrt if rec.src[s][0] != "op"]
    if state.batching is not None:
        # (the recorded rules would see the values with vmap's batch axes, where eager mode
        # gives them one example's: a reshape to a.shape crashed, other rules could be off)
        return rec.backward_eagerly("a backward pass inside vmap (jacrev, hessian, vmap "
                                    "of grad or vjp)",
                                    outputs, grad_outputs, create_graph, inputs, capture,
                                    allow_unused)
    if (_has_hooks(rec, needed)
            or any(rec.src[s][0] == "ext" and rec.edge[s] is not rec.tensor[s] for s in leaves)
            or (inputs is None and create_graph)):
        return rec.backward_eagerly("a backward pass with hooks, through tensors computed "
                                    "outside the function, or accumulating create_graph "
                                    "gradients", outputs, grad_outputs, create_graph,
                                    inputs, capture, allow_unused)
    if rec.foreign is None:  # (the rewrites spell NumPy: see rewrite)
        rewrite(rec)
    prev_mode = state.enabled
    state.enabled = bool(create_graph)
    try:
        grads = reverse(rec, roots, wrt)
    finally:
        state.enabled = prev_mode
    results = [grads.get(s) for s in wrt]
    if inputs is not None:
        check_unused(inputs, results, allow_unused)
    if capture:
        if create_graph:
            return results
        return [None if g is None else rec.hand_out(g._data, g._data) for g in results]
    targets = inputs if inputs is not None else [rec.tensor_of(s) for s in wrt]
    for s, t, g in zip(wrt, targets, results):
        if g is None:
            continue
        gs = rec.slot_of(g)
        arr = rec.value[gs]
        prev = getattr(t, "_grad", None)
        if prev is None:
            mine = arr.copy() if rec.foreign is None else own(arr)
            rec.register_array(mine, gs)
            t._grad = mine
        else:
            t._grad = prev + arr
        src = rec.src[s]
        if src[0] == "in" or src[0] == "ext":
            rec.effects.append((src, gs))
    return None
