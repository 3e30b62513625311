"""Rewrites of a recording before its backward pass is derived, and dead-code removal.

A rewrite replaces an op call by an equivalent one whose rules are cheaper. The one that
matters is the trace (or diagonal) of a matrix product: ``trace(a @ b)`` is
``sum(a * b.mT)``, whose gradients ``g * b.mT`` and ``g * a.mT`` need no matrix product,
where differentiating ``trace`` and ``matmul`` one after the other multiplies by a dense
identity matrix twice (workload W1). The product itself is left on the tape; if nothing
else uses it, dead-code removal drops it.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..ops.shape import broadcast_to
from .codegen import ref_slots
from .product_ops import DIAG_MM, TRACE_MM
from .tape import Alias, Entry, Guard, Recorder, Slot, SlotTuple


def _params(e: Entry, names: tuple, defaults: dict) -> dict | None:
    """The arguments of ``e`` after the first, by name (None: one of them is a slot)."""
    vals = dict(defaults)
    vals.update(zip(names, e.args[1:]))
    if e.kw:
        vals.update(e.kw)
    if any(type(v) is Slot for v in vals.values()):
        return None
    return vals


def _ndim(rec: Recorder, r: Any) -> int:
    return np.ndim(rec.value[r.i]) if type(r) is Slot else np.ndim(r)


def _last_two(axis1: Any, axis2: Any, nd: int) -> bool:
    try:
        return {int(axis1) % nd, int(axis2) % nd} == {nd - 2, nd - 1}
    except (TypeError, ValueError):
        return False


def _product_diagonal(rec: Recorder, e: Entry, producers: dict) -> Entry | None:
    """``e`` rewritten when it takes the trace or diagonal of a matrix product."""
    name = e.op.name
    if name not in ("trace", "diagonal") or not e.args or type(e.args[0]) is not Slot:
        return None
    p = producers.get(e.args[0].i)
    if p is None or p.op.name != "matmul" or len(p.args) != 2 or p.kw:
        return None
    a, b = p.args
    nd = _ndim(rec, e.args[0])
    if _ndim(rec, a) < 2 or _ndim(rec, b) < 2 or nd < 2:
        return None
    if name == "trace":
        v = _params(e, ("offset", "axis1", "axis2", "dtype", "out"),
                    {"offset": 0, "axis1": 0, "axis2": 1, "dtype": None, "out": None})
        new = TRACE_MM
        if v is None or v["dtype"] is not None or v["out"] is not None:
            return None
    else:
        v = _params(e, ("offset", "axis1", "axis2"), {"offset": 0, "axis1": 0, "axis2": 1})
        new = DIAG_MM
        if v is None:
            return None
    if v["offset"] != 0 or not _last_two(v["axis1"], v["axis2"], nd):
        return None
    return Entry(new, (a, b), None, e.outs, p.grad_in, e.diff_out, e.err, e.dtypes)


_RULES = (_product_diagonal,)


def rewrite(rec: Recorder) -> None:
    """Apply the rewrites to the op calls recorded so far (in place)."""
    items = rec.items
    producers: dict[int, Entry] = {}
    for k, it in enumerate(items):
        if type(it) is not Entry:
            continue
        for rule in _RULES:
            new = rule(rec, it, producers)
            if new is not None:
                items[k] = it = new
                break
        for o in it.outs:
            producers[o] = it


# ---- clean-ups on a list of items, before code generation ----------------------------------

def _subst(r: Any, m: dict) -> Any:
    if type(r) is Slot:
        t = m.get(r.i)
        return r if t is None else Slot(t, r.tensor)
    if type(r) is SlotTuple:
        return SlotTuple([_subst(x, m) for x in r.items], r.is_list)
    return r


def _key(r: Any) -> Any:
    if type(r) is Slot:
        return ("s", r.i)
    if type(r) is SlotTuple:
        return ("t", r.is_list, tuple(_key(x) for x in r.items))
    if type(r) in (int, float, bool, str, type(None)):
        return (type(r), r)
    if type(r) is tuple:
        return ("tuple", tuple(_key(x) for x in r))
    return ("id", id(r))


def simplify(items: list, keep: set, shape: Callable) -> list:
    """``items`` with common subexpressions merged and broadcasts that the consuming
    elementwise op does anyway removed. ``keep``: slots whose definitions must stay (read
    later); ``shape(s)``: a slot's recorded shape."""
    m: dict[int, int] = {}  # slot -> the slot that replaces it
    seen: dict = {}
    out = []
    for it in items:
        if type(it) is not Entry:
            if type(it) is Alias and it.of in m:
                it = Alias(it.slot, m[it.of])
            elif type(it) is Guard and it.slot in m:
                it = Guard(m[it.slot], it.kind, it.value, it.where)
            out.append(it)
            continue
        if m:
            it = Entry(it.op, tuple(_subst(r, m) for r in it.args),
                       {k: _subst(v, m) for k, v in it.kw.items()} if it.kw else it.kw,
                       it.outs, it.grad_in, it.diff_out, it.err, it.dtypes)
        key = (id(it.op), tuple(_key(r) for r in it.args),
               tuple(sorted((k, _key(v)) for k, v in it.kw.items())) if it.kw else (), it.err
               is None)
        prev = seen.get(key)
        if prev is not None and len(prev.outs) == len(it.outs) and not any(
                o in keep for o in it.outs):
            for o, p in zip(it.outs, prev.outs):
                m[o] = p
            continue
        seen[key] = it
        out.append(it)
    return _drop_broadcasts(out, keep, shape)


def _drop_broadcasts(items: list, keep: set, shape: Callable) -> list:
    bop = getattr(broadcast_to, "op", None)
    users: dict[int, list] = {}
    for it in items:
        if type(it) is Entry:
            for r in (*it.args, *(it.kw or {}).values()):
                if type(r) is Slot:
                    users.setdefault(r.i, []).append(it)
                elif type(r) is SlotTuple:  # (a slot inside a tuple: not a plain operand)
                    inner: set = set()
                    ref_slots(r, inner)
                    for i in inner:
                        users.setdefault(i, []).append(it)
        elif type(it) is Alias:
            users.setdefault(it.of, []).append(it)
    m: dict[int, int] = {}
    for it in items:
        if type(it) is not Entry or it.op is not bop or type(it.args[0]) is not Slot:
            continue
        o = it.outs[0]
        if o in keep:
            continue
        target = shape(o)
        ok = True
        for u in users.get(o, ()):
            if (type(u) is not Entry or not u.op.elementwise or u.kw or len(u.args) != 2
                    or shape(u.outs[0]) != target):
                ok = False
                break
            other = u.args[1] if (type(u.args[0]) is Slot and u.args[0].i == o) else u.args[0]
            if not (type(other) is Slot and other.i != o and other.i not in m
                    and shape(other.i) == target):  # (not a broadcast dropped too)
                ok = False
                break
        if ok:
            m[o] = it.args[0].i
    if not m:
        return items
    out = []
    for it in items:
        if type(it) is Guard and it.slot in m:
            continue  # (the shape of a broadcast is the target's)
        if type(it) is Entry:
            if it.outs[0] in m and it.op is bop:
                continue
            it = Entry(it.op, tuple(_subst(r, m) for r in it.args), it.kw, it.outs,
                       it.grad_in, it.diff_out, it.err, it.dtypes)
        out.append(it)
    return out
