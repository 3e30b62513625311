"""The reverse-mode transform of a recording, itself recorded.

:func:`reverse` walks the recorded op calls backwards and calls their VJP rules on the
recorded tensors while the recorder is active, so the backward pass becomes more op
calls on the tape: a compiled function's backward is generated code like its forward,
and the gradients computed inside a recorded function (``autograd.grad``,
``.backward()``, ``yaad.func.value_and_grad``) are part of what is replayed. It does the
engine's bookkeeping the engine's way: gradients summed over broadcast axes and cast to
the input's dtype, strong zeros below selecting ops, no rule run for an input that does
not lead to a wanted gradient.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..engine import cast_gradient, unbroadcast
from ..grad_mode import state
from ..tensor import Tensor
from .tape import Entry, Recorder, S, Tup


def _rule_value(rec: Recorder, r: Any, differentiable: bool) -> Any:
    """The value a rule gets for the recorded argument ``r``."""
    if type(r) is S:
        return rec.tensor_of(r.i) if r.tensor or differentiable else rec.value[r.i]
    if type(r) is Tup:
        items = [_rule_value(rec, x, False) for x in r.items]
        return items if r.is_list else tuple(items)
    if differentiable and isinstance(r, np.ndarray):
        # A constant array where a tensor may go: what the rule computes from it (its
        # conjugate, say) is recorded, so it follows in-place changes of the constant.
        return rec.tensor_of(rec.const_slot(r))
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


def reverse(rec: Recorder, roots: list, wrt: list) -> dict:
    """Gradients of the ``roots`` (pairs of slot and seed tensor) for the ``wrt`` slots.

    Runs the rules on tensors with ``rec`` recording, in the current grad mode. Returns
    ``{slot: gradient tensor or None}``.
    """
    from .rewrite import STRONG_ZERO

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
        todo = [i for i, flag in enumerate(e.grad_in) if flag and e.args[i].i in leads]
        if not todo:
            continue
        g = gs[0] if spec.nout == 1 else tuple(gs)
        variadic = spec.variadic
        vjps = spec.vjps
        args = [_rule_value(rec, r, variadic or (i < len(vjps) and vjps[i] is not None))
                for i, r in enumerate(e.args)]
        kw = {k: _rule_value(rec, v, False) for k, v in e.kw.items()} if e.kw else {}
        ans = (rec.tensor_of(outs[0]) if spec.nout == 1
               else tuple(rec.tensor_of(o) for o in outs))
        strong = spec.elementwise and any(o in masked for o in outs)
        mask = spec.selects or any(o in masked for o in outs)
        for i in todo:
            if strong:
                # Exact zeros where g is zero, even where the rule meets an inf or a nan
                # (a branch not taken); the engine's where(g == 0, 0, gi), fused.
                with np.errstate(all="ignore"):
                    rec.quiet += 1
                    try:
                        gi = (vjps[0](i, g, ans, *args, **kw) if variadic
                              else vjps[i](g, ans, *args, **kw))
                        if gi is not None and gi is not g:
                            gi = STRONG_ZERO.fn(g, gi)
                    finally:
                        rec.quiet -= 1
            else:
                gi = (vjps[0](i, g, ans, *args, **kw) if variadic
                      else vjps[i](g, ans, *args, **kw))
            if gi is None:
                continue
            s = e.args[i].i
            gi = _fit(gi, rec.value[s], spec.name, i)
            prev = pending.get(s)
            pending[s] = gi if prev is None else prev + gi
            if mask:
                masked.add(s)
    for s in wanted:
        if s not in results:
            results[s] = pending.get(s)
    return results


def _fit(g: Any, ref: Any, name: str, i: int) -> Any:
    """The engine's reduction over broadcast axes and cast to the input's dtype."""
    if not hasattr(g, "shape"):
        g = np.asarray(g)
    shape = np.shape(ref)
    if g.shape != shape:
        g = unbroadcast(g, shape, f"the gradient of '{name}' for input {i}")
    dtype = ref.dtype
    if g.dtype != dtype:
        g = cast_gradient(g, dtype)
    return g


# ---- run_backward while recording -------------------------------------------------------

def _seed(rec: Recorder, t: Tensor, g: Any, k: int) -> Tensor:
    if g is None:
        if t.size != 1:
            raise RuntimeError(
                f"backward: output {k} has shape {t.shape}; a gradient can be created "
                f"implicitly only for a scalar. Reduce it (e.g. .sum()) or pass gradient= "
                f"with shape {t.shape}. (see docs/errors.md#non-scalar-backward)")
        if t.dtype.kind == "c":
            raise RuntimeError(
                f"backward: output {k} is complex ({t.dtype}); the gradient of a complex "
                f"output is not defined without gradient=. Differentiate a real loss, such "
                f"as .real or abs(...)**2. (see docs/errors.md#complex-backward)")
        return rec.tensor_of(rec.const_slot(np.ones(t.shape, dtype=t.dtype)))
    if isinstance(g, Tensor):
        return rec.tensor_of(rec.slot_of(g))
    if np.shape(g) != t.shape:
        raise RuntimeError(f"backward: gradient for output {k} has shape {np.shape(g)}, "
                           f"but the output has shape {t.shape}")
    if isinstance(g, np.ndarray):
        s = rec.by_array.get(id(g))
        if s is not None:
            return rec.tensor_of(s)
    return rec.tensor_of(rec.const_slot(np.asarray(g, dtype=t.dtype)))


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
    from ..engine import check_output
    from .rewrite import rewrite

    roots = []
    for k, (t, g) in enumerate(zip(outputs, grad_outputs)):
        check_output(t, k)
        roots.append((rec.slot_of(t), _seed(rec, t, g, k)))
    if inputs is not None:
        if isinstance(inputs, Tensor):
            inputs = (inputs,)
        for k, t in enumerate(inputs):
            if not isinstance(t, Tensor):
                raise TypeError(f"input {k} is a {type(t).__name__}, not a Tensor")
            if not t.requires_grad:
                raise RuntimeError(f"input {k} does not require grad, so it has no gradient")
        wrt = [rec.slot_of(t) for t in inputs]
    else:
        entries = [it for it in rec.items if type(it) is Entry]
        needed = reachable(entries, {s for s, _ in roots})
        wrt = sorted(s for s in needed if rec.diff[s] and rec.src[s][0] != "op")
    needed = reachable([it for it in rec.items if type(it) is Entry], {s for s, _ in roots})
    leaves = [s for s in wrt if rec.src[s][0] != "op"]
    if (_has_hooks(rec, needed)
            or any(rec.src[s][0] == "ext" and rec.edge[s] is not rec.tensor[s] for s in leaves)
            or (inputs is None and create_graph)):
        return _escape_to_engine(rec, "a backward pass with hooks, through tensors computed "
                                 "outside the function, or accumulating create_graph "
                                 "gradients", outputs, grad_outputs, create_graph, inputs,
                                 capture, allow_unused)
    rewrite(rec)
    prev_mode = state.enabled
    state.enabled = bool(create_graph)
    try:
        grads = reverse(rec, roots, wrt)
    finally:
        state.enabled = prev_mode
    results = [grads.get(s) for s in wrt]
    if inputs is not None:
        for k, g in enumerate(results):
            if g is None and not allow_unused:
                raise RuntimeError(
                    f"input {k} (shape {inputs[k].shape}) was not used to compute the "
                    f"outputs, so it has no gradient. Pass allow_unused=True to get None "
                    f"for it.")
    if capture:
        return [g if g is None or create_graph else rec.traced_view(g, g.data)
                for g in results]
    targets = inputs if inputs is not None else [rec.tensor_of(s) for s in wrt]
    for s, t, g in zip(wrt, targets, results):
        if g is None:
            continue
        gs = rec.slot_of(g)
        arr = rec.value[gs]
        prev = getattr(t, "_grad", None)
        if prev is None:
            own = arr.copy()
            rec.register_array(own, gs)
            t._grad = own
        else:
            t._grad = prev + arr
        src = rec.src[s]
        if src[0] == "in" or src[0] == "ext":
            rec.effects.append((src, gs))
    return None


def _escape_to_engine(rec: Recorder, what: str, *args: Any) -> Any:
    from ..engine import run_backward

    rec.escape(what)
    st = state
    prev = st.tracer
    st.tracer = None
    st.refresh()
    try:
        return run_backward(*args[:2], None, *args[2:])
    finally:
        st.tracer = prev
        st.refresh()
