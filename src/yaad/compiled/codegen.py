"""Python source for recorded paths: straight-line calls of the ops' forwards.

A generated function reads the values it needs from the slot list ``slots``, calls the
forwards (and, for a backward program, the forwards of the ops the VJP rules called) in
the recorded order with the recorded constants, and stores in ``slots`` what later code
needs. Constants that are not plain literals are names bound in the function's
namespace. Nothing is interpreted per op at run time.
"""

from __future__ import annotations

import functools
import math
import sys
from typing import Any, Callable

import numpy as np

from ..core.backend import any_foreign, item
from ..core.backend import call as call_foreign
from ..core.op import registry
from ..ops import products
from . import rowwise
from .product_ops import TRACE_MM
from .tape import Alias, Const, Entry, Guard, Load, Slot, SlotTuple, float_context


class Namespace:
    """Names for the objects generated code refers to."""

    def __init__(self) -> None:
        self.env: dict[str, Any] = {"np": np, "_bcast": broadcast_copy,
                                    "_scatter": scatter_at, "_stack_into": stack_into,
                                    "_mean_of": mean_of, "_rowwise": rowwise,
                                    "_float32": np.float32, "_float64": np.float64}
        self._ids: dict[int, str] = {}

    def name(self, obj: Any, prefix: str = "c") -> str:
        key = id(obj)
        n = self._ids.get(key)
        if n is None:
            n = f"{prefix}{len(self._ids)}"
            self._ids[key] = n
            self.env[n] = obj
        return n

    def literal(self, v: Any) -> str:
        """Source for a constant: a literal where exact, else a bound name."""
        t = type(v)
        if v is None or t is bool or t is int or t is str:
            return repr(v)
        if t is float and math.isfinite(v):
            return repr(v)
        if t is tuple and all(_is_literal(x) for x in v):
            return "(" + "".join(self.literal(x) + ", " for x in v) + ")"
        return self.name(v)


def _is_literal(v: Any) -> bool:
    t = type(v)
    return (v is None or t is bool or t is int or t is str
            or (t is float and math.isfinite(v))
            or (t is tuple and all(_is_literal(x) for x in v)))


def ref_src(r: Any, ns: Namespace) -> str:
    """Source for a recorded argument."""
    if type(r) is Slot:
        return f"v{r.i}"
    if type(r) is SlotTuple:
        inner = ", ".join(ref_src(x, ns) for x in r.items)
        return f"[{inner}]" if r.is_list else f"({inner},)"
    return ns.literal(r)


def ref_slots(r: Any, out: set) -> None:
    """Add the slots ``r`` refers to."""
    if type(r) is Slot:
        out.add(r.i)
    elif type(r) is SlotTuple:
        for x in r.items:
            ref_slots(x, out)


def item_uses(it: Any) -> set:
    """Slots an item reads."""
    used: set = set()
    if type(it) is Entry:
        for r in it.args:
            ref_slots(r, used)
        if it.kw:
            for r in it.kw.values():
                ref_slots(r, used)
    elif type(it) is Alias:
        used.add(it.of)
    elif type(it) is Guard:
        used.add(it.slot)
    return used


def item_defs(it: Any) -> tuple:
    """Slots an item writes."""
    if type(it) is Entry:
        return it.outs
    if type(it) is Load or type(it) is Alias or type(it) is Const:
        return (it.slot,)
    return ()


# ---- cheaper spellings of common ops -----------------------------------------------------
#
# The ops' forwards are often thin wrappers (``lambda a, axis1, axis2: np.swapaxes(...)``)
# and NumPy's own functions for views are Python code; on small arrays the call costs more
# than the work. Where the recorded argument is an ndarray, the method or operator is
# exactly what the forward computes.

def _binary(sym: str):
    def t(it: Entry, a: list, kw: dict, shapes: Any) -> str | None:
        return None if kw or len(a) != 2 else f"{a[0]} {sym} {a[1]}"
    return t


def _method(name: str, nargs: tuple):
    def t(it: Entry, a: list, kw: dict, shapes: Any) -> str | None:
        if kw or len(a) - 1 not in nargs or not _is_array(it.args[0], shapes):
            return None
        return f"{a[0]}.{name}({', '.join(a[1:])})"
    return t


def _swapaxes(it: Entry, a: list, kw: dict, shapes: Any) -> str | None:
    # (of a matrix: its .T, the same view, without the method call's arguments)
    got = _method("swapaxes", (2,))(it, a, kw, shapes)
    r, axes = it.args[0], it.args[1:]
    if (got is not None and type(r) is Slot and len(shapes(r.i)) == 2
            and all(type(x) is int and -2 <= x < 2 for x in axes)
            and axes[0] % 2 != axes[1] % 2):
        return f"{a[0]}.T"
    return got


def _to_shape(it: Entry, a: list, kw: dict, shapes: Any) -> str | None:
    # expand_dims, squeeze, reshape: a view of the known output shape (NumPy scalars have
    # the method too).
    r = it.args[0]
    if kw or not _constant_rest(it) or not (_is_array(r, shapes) or (
            type(r) is Slot and shapes(r.i, "generic"))):
        return None
    return f"{a[0]}.reshape({shapes(it.outs[0])!r})"


def _constant_rest(it: Entry) -> bool:
    """Whether the arguments after the first are constants (a shape or an axis given by a
    recorded value is read again by the op: the recorded output shape does not hold)."""
    return not any(type(r) is Slot or type(r) is SlotTuple for r in it.args[1:])


def broadcast_copy(x: Any, shape: tuple) -> np.ndarray:
    """``np.broadcast_to(x, shape)`` as a new array: for small shapes, cheaper than the
    view NumPy builds in Python."""
    out = np.empty(shape, np.result_type(x))
    out[...] = x
    return out


def _broadcast(it: Entry, a: list, kw: dict, shapes: Any) -> str | None:
    shape = shapes(it.outs[0])
    if kw or len(a) != 2 or int(np.prod(shape)) > 4096 or not _constant_rest(it):
        return None
    return f"_bcast({a[0]}, {shape!r})"


def scatter_at(values: Any, idx: tuple, shape: tuple) -> np.ndarray:
    """Zeros of ``shape`` with ``values`` added at the integer index arrays ``idx``."""
    out = np.zeros(shape, np.result_type(values))
    np.add.at(out, idx, values)
    return out


def _scatter(it: Entry, a: list, kw: dict, shapes: Any) -> str | None:
    # One integer array per axis (an element scatter): np.add.at, as the op does, without
    # its checks.
    if kw or len(a) != 3:
        return None
    idx, shape = it.args[1], it.args[2]
    if not (type(idx) is tuple and type(shape) is tuple and len(idx) == len(shape)
            and all(isinstance(i, np.ndarray) and i.dtype.kind in "iu" for i in idx)):
        return None
    return f"_scatter({a[0]}, {a[1]}, {a[2]})"


def _sum(it: Entry, a: list, kw: dict, shapes: Any) -> str | None:
    if len(a) > 2 or set(kw) - {"axis", "keepdims"} or not _is_array(it.args[0], shapes):
        return None
    # (ndarray.sum is NumPy's Python function _methods._sum calling add.reduce)
    axis = a[1] if len(a) == 2 else kw.get("axis", "None")
    return f"np.add.reduce({a[0]}, {axis}, None, None, {kw.get('keepdims', 'False')})"


def _getitem(it: Entry, a: list, kw: dict, shapes: Any) -> str | None:
    if kw or len(a) != 2 or not _is_array(it.args[0], shapes):
        return None
    return f"{a[0]}[{a[1]}]"


def _negative(it: Entry, a: list, kw: dict, shapes: Any) -> str | None:
    return None if kw or len(a) != 1 else f"-{a[0]}"


def _conj(it: Entry, a: list, kw: dict, shapes: Any) -> str | None:
    if kw or len(a) != 1:
        return None
    if it.dtypes and it.dtypes[0].kind != "c":
        return a[0]  # the conjugate of a real array is the array
    return f"{a[0]}.conj()" if _is_array(it.args[0], shapes) else None


# ---- shape logic done once: contractions, axis moves and joins for the recorded shapes ----
#
# NumPy's tensordot, moveaxis and stack are Python functions that normalise their axes,
# work out permutations and shapes and check them on every call (about 20, 10 and 14 us
# on small arrays, against 1-5 us for the C calls they end in). The shapes of a replay's
# arrays are those recorded (the inputs' are the signature, and an op whose output shape
# may depend on values has a shape guard), so the replay makes only the C calls.

def _arg_shape(r: Any, shapes: Any) -> tuple | None:
    """The recorded shape of an ndarray argument (a slot or a constant), else None."""
    if type(r) is Slot:
        return shapes(r.i) if shapes is not None and shapes(r.i, True) else None
    return r.shape if type(r) is np.ndarray else None


def _view_as(x: str, shape: tuple, perm: tuple, new_shape: tuple) -> str:
    """Source for ``x.transpose(perm).reshape(new_shape)``, leaving out what does nothing."""
    if perm != tuple(range(len(perm))):
        x = f"{x}.transpose({perm!r})"
        shape = tuple(shape[p] for p in perm)
    if tuple(new_shape) != tuple(shape):
        x = f"{x}.reshape({tuple(new_shape)!r})"
    return x


def _tensordot(it: Entry, a: list, kw: dict, shapes: Any) -> str | None:
    # np.tensordot's own steps for the recorded shapes: transpose and reshape both operands
    # to matrices, one np.dot, reshape the result (the same calls, so the same bits).
    if set(kw) - {"axes"} or not 2 <= len(a) <= 3 or (len(a) == 3 and kw):
        return None
    axes = it.args[2] if len(a) == 3 else it.kw.get("axes", 2) if it.kw else 2
    if type(axes) is Slot or type(axes) is SlotTuple:
        return None
    sa, sb = _arg_shape(it.args[0], shapes), _arg_shape(it.args[1], shapes)
    if sa is None or sb is None:
        return None
    ia, ib = products._tensordot_axes(axes, len(sa), len(sb))
    if len(ia) != len(ib) or len(set(ia)) != len(ia) or len(set(ib)) != len(ib) or any(
            sa[i] != sb[j] for i, j in zip(ia, ib)):
        return None
    fa = [k for k in range(len(sa)) if k not in ia]
    fb = [k for k in range(len(sb)) if k not in ib]
    inner = math.prod(sa[k] for k in ia)
    left = _view_as(a[0], sa, tuple(fa + ia), (math.prod(sa[k] for k in fa), inner))
    right = _view_as(a[1], sb, tuple(ib + fb), (inner, math.prod(sb[k] for k in fb)))
    out = tuple(sa[k] for k in fa) + tuple(sb[k] for k in fb)
    return f"np.dot({left}, {right}).reshape({out!r})"


def _moveaxis(it: Entry, a: list, kw: dict, shapes: Any) -> str | None:
    if kw or len(a) != 3 or not _constant_rest(it):
        return None
    shape = _arg_shape(it.args[0], shapes)
    if shape is None:
        return None
    n = len(shape)
    try:
        src = np.lib.array_utils.normalize_axis_tuple(it.args[1], n, "source")
        dst = np.lib.array_utils.normalize_axis_tuple(it.args[2], n, "destination")
    except (TypeError, ValueError, np.exceptions.AxisError):
        return None
    if len(src) != len(dst):
        return None
    order = [k for k in range(n) if k not in src]
    for d, k in sorted(zip(dst, src)):
        order.insert(d, k)
    return f"{a[0]}.transpose({tuple(order)!r})"


def stack_into(shape: tuple, dtype: Any, index: tuple, arrays: tuple) -> np.ndarray:
    """``np.stack(arrays, axis)`` for a known result: each array written into its place
    ``index + (k,)`` of a new array of ``shape`` and ``dtype``."""
    out = np.empty(shape, dtype)
    for k, x in enumerate(arrays):
        out[index + (k,)] = x
    return out


def _join_parts(it: Entry, kw: dict) -> tuple | None:
    """(axis, the output dtype) of a stack or concatenate entry whose keywords are
    constants, or None."""
    known = {"axis", "dtype", "casting"}
    if set(kw) - known or not it.dtypes or not it.args:
        return None
    raw = it.kw or {}
    if any(type(raw[k]) is Slot or type(raw[k]) is SlotTuple for k in raw):
        return None
    if raw.get("casting", "same_kind") != "same_kind":
        return None
    return raw.get("axis", 0), it.dtypes[0]


def _stack(it: Entry, a: list, kw: dict, shapes: Any) -> str | None:
    # A new array of the recorded shape and dtype (the result type of the inputs, or the
    # dtype asked for under same-kind casting, which the recording passed), filled by
    # assignment: the same values np.stack computes.
    parts = _join_parts(it, kw)
    if parts is None or shapes is None or type(parts[0]) is not int:
        return None
    for r in it.args:
        if type(r) is SlotTuple or (type(r) is Slot and not (
                shapes(r.i, True) or shapes(r.i, "generic"))):
            return None
    axis, dtype = parts
    shape = shapes(it.outs[0])
    axis = axis + len(shape) if axis < 0 else axis
    if not 0 <= axis < len(shape) or shape[axis] != len(a):
        return None
    dt = ns_dtype(dtype)
    items = "(" + "".join(x + ", " for x in a) + ")"
    if axis == 0:
        return f"np.array({items}, {dt})"
    return f"_stack_into({shape!r}, {dt}, {(slice(None),) * axis!r}, {items})"


def ns_dtype(dtype: Any) -> str:
    """Source for a NumPy dtype (its name, read through ``np.dtype``)."""
    return f"np.dtype({np.dtype(dtype).str!r})"


def _concatenate(it: Entry, a: list, kw: dict, shapes: Any) -> str | None:
    parts = _join_parts(it, kw)
    if parts is None or shapes is None:
        return None
    axis, dtype = parts
    for r in it.args:
        if type(r) is SlotTuple or (type(r) is Slot and not shapes(r.i, True)):
            return None
    items = "(" + "".join(x + ", " for x in a) + ")"
    extra = f", dtype={ns_dtype(dtype)}" if it.kw and it.kw.get("dtype") is not None else ""
    return f"np.concatenate({items}, axis={axis!r}{extra})"


def _astype(it: Entry, a: list, kw: dict, shapes: Any) -> str | None:
    # (copy=True: astype always makes a new array, as the op's forward does)
    r = it.args[0]
    if kw or len(a) != 2 or not _constant_rest(it) or not (
            _arg_shape(r, shapes) is not None or (type(r) is Slot and shapes(r.i, "generic"))):
        return None
    return f"{a[0]}.astype({a[1]})"


def _axis_arg(it: Entry, names: tuple, defaults: tuple) -> tuple | None:
    """The values of the arguments ``names`` after the first (positional or keyword), or
    None where one is not a recorded constant or is unknown."""
    vals = dict(zip(names, defaults))
    if len(it.args) > 1 + len(names) or set(it.kw or ()) - set(names):
        return None
    vals.update(zip(names, it.args[1:]))
    vals.update(it.kw or {})
    if any(type(v) is Slot or type(v) is SlotTuple for v in vals.values()):
        return None
    return tuple(vals[n] for n in names)


def _rows(name: str):
    # softmax and log_softmax over the last axis, the shift by the row maxima in numba (see
    # rowwise.py)
    def t(it: Entry, a: list, kw: dict, shapes: Any) -> str | None:
        from . import rowwise

        got = _axis_arg(it, ("axis",), (None,))
        if got is None or not rowwise.applies(it.args[0], got[0], shapes):
            return None
        return f"_rowwise.{name}({a[0]})"
    return t


_MEAN_DTYPES = tuple(np.dtype(t) for t in ("float32", "float64", "complex64", "complex128"))


def mean_of(a: np.ndarray, axis: Any, keepdims: bool, n: Any) -> Any:
    """``np.mean(a, axis, keepdims=keepdims)`` for a float or complex ``a`` of ``n``
    elements along ``axis``: NumPy's own steps (its sum, then the division by the count, an
    ``intp``, in the dtype that division has), without its Python."""
    s = np.add.reduce(a, axis, None, None, keepdims)
    if type(s) is np.ndarray:  # (by an intp: float32 sums are divided in double precision)
        return np.true_divide(s, np.intp(n), out=s, casting="unsafe")
    if s.dtype.kind == "f":  # (NumPy's scalar division is a double one, as Python's)
        return s.dtype.type(float(s) / n)
    return s.dtype.type(s / np.intp(n))


def _mean(it: Entry, a: list, kw: dict, shapes: Any) -> str | None:
    # (the op computes np.sum(a) / n for float64 and complex128, which is numpy.mean)
    r = it.args[0]
    got = _axis_arg(it, ("axis", "dtype", "out", "keepdims"), (None, None, None, False))
    if got is None or type(r) is not Slot or not _is_array(r, shapes):
        return None
    axis, dtype, out, keepdims = got
    shape = shapes(r.i)
    if dtype is not None or out is not None or shapes.dtype[r.i] not in _MEAN_DTYPES:
        return None
    try:
        axes = (tuple(range(len(shape))) if axis is None else
                np.lib.array_utils.normalize_axis_tuple(axis, len(shape)))
    except (TypeError, ValueError, np.exceptions.AxisError):
        return None
    n = math.prod(shape[k] for k in axes)
    if not n or type(keepdims) is not bool:
        return None  # (an empty mean warns)
    kind = shapes.dtype[r.i]
    if axis is None and not keepdims and kind.kind == "f":
        # (mean_of's steps for a real scalar: the sum, a double division, the dtype's type)
        return f"_{kind.name}(float(np.add.reduce({a[0]}, None)) / {n})"
    return f"_mean_of({a[0]}, {None if axis is None else axes!r}, {keepdims!r}, {n})"


_TEMPLATES = {
    "add": _binary("+"), "subtract": _binary("-"), "multiply": _binary("*"),
    "divide": _binary("/"), "matmul": _binary("@"), "negative": _negative,
    "swapaxes": _swapaxes, "transpose": _method("transpose", (0, 1)),
    "reshape": _to_shape, "expand_dims": _to_shape, "squeeze": _to_shape,
    "sum": _sum, "getitem": _getitem, "conjugate": _conj, "broadcast_to": _broadcast,
    "scatter_add": _scatter, "tensordot": _tensordot, "moveaxis": _moveaxis,
    "stack": _stack, "concatenate": _concatenate, "astype": _astype,
    "log_softmax": _rows("log_softmax"), "softmax": _rows("softmax"), "mean": _mean,
}
_BY_OP: dict[int, Any] = {}


def _template(spec: Any) -> Any:
    if not _BY_OP:
        for name, t in _TEMPLATES.items():
            op = registry.get(name)
            if op is not None:
                _BY_OP[id(op)] = t
        _BY_OP[0] = None
    return _BY_OP.get(id(spec))


def _is_array(r: Any, shapes: Any) -> bool:
    if type(r) is Slot:
        return shapes is not None and shapes(r.i, True)
    return isinstance(r, np.ndarray)


POOL_MIN = 1 << 15  # elements: arrays from here up are recycled (see pooled)


def pooled(ufunc: Any, pool: list, *args: Any) -> Any:
    """``ufunc(*args)``, written into the array it returned last time if nothing else
    holds that array any more.

    Large arrays handed out as gradients are freed by the caller between calls (``p.grad =
    None``); allocating them anew makes glibc map and unmap the memory every time, a page
    fault per 4 kB (W6: 218 of them, most of the call).
    """
    buf = free_buffer(pool)
    if buf is not None:
        return ufunc(*args, out=buf)
    out = ufunc(*args)
    pool[0] = out
    return out


def _one_call(src: str) -> bool:
    """Whether ``src`` is ``f(...)``: its first parenthesis closes at the end."""
    depth = 0
    for k, c in enumerate(src):
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return k == len(src) - 1
    return False


def _refs_of_a_local() -> int:
    """``sys.getrefcount`` of an object only a local variable holds, as this module is
    built (see ``engine._refs_of_a_local``)."""
    x = np.ndarray(0)
    return sys.getrefcount(x)


_SOLE = _refs_of_a_local()


def free_buffer(pool: list, k: int = 0) -> Any:
    """``pool[k]`` if nothing but the pool holds it (free to be written over), else None.
    The count is taken here, on a local variable, whoever calls."""
    buf = pool[k]
    if buf is not None and sys.getrefcount(buf) == _SOLE + 1:  # (+1: the pool's)
        return buf
    return None


def foreign_call(spec: Any, *args: Any, **kw: Any) -> Any:
    """One op call of a replay on another library's arrays, as eager mode's op call makes
    it: the op's body in the namespace of the arrays (see :func:`yaad.backend.call`), or
    its forward where no argument is another library's array."""
    if any_foreign(args):
        return call_foreign(spec, args, kw)
    return spec.forward(*args, **kw)


def body_lines(items: list, ns: Namespace, indent: str = "    ",
               shapes: Any = None, recycle: set = frozenset(),
               fail: str = "return None", foreign: bool = False) -> list[str]:
    """The statements of ``items`` (entries, loads, aliases, shape guards). ``shapes(slot)``
    gives a slot's recorded shape (``shapes(slot, True)``: whether it held an ndarray), for
    the cheaper spellings; without it the forwards are called as they are. The slots in
    ``recycle``, made by a ufunc, are written into recycled arrays (see :func:`pooled`).
    ``fail``: the statement run when a shape guard fails. ``foreign``: the values are
    another library's arrays: each op call goes through :func:`foreign_call`, with none of
    the NumPy spellings."""
    lines = []
    for it in items:
        t = type(it)
        if t is Guard:
            if it.kind == "shape":
                shape, dtype = it.value
                lines.append(f"{indent}if v{it.slot}.shape != {shape!r} or "
                             f"v{it.slot}.dtype != {ns.name(dtype, 'dt')}:")
                lines.append(f"{indent}    {fail}")
            continue
        if t is Entry:
            spec = it.op
            args = [ref_src(r, ns) for r in it.args]
            kwsrc = {k: ref_src(v, ns) for k, v in it.kw.items()} if it.kw else {}
            if foreign:
                lines += _in_float_context(it, _foreign_line(it, args, kwsrc, ns), indent, ns)
                continue
            if (it.outs[0] in recycle and isinstance(spec.forward, np.ufunc) and not kwsrc
                    and it.err is None and spec.nout == 1):
                ns.env["_pooled"] = pooled
                pool = ns.name([None], "pool")
                lines.append(f"{indent}v{it.outs[0]} = _pooled({ns.name(spec.forward, 'f')}, "
                             f"{pool}, {', '.join(args)})")
                continue
            if it.spell is not None:
                src = it.spell.format(*args)
                while "__POOL__" in src:
                    ns.env["_copy_into"] = copy_into
                    src = src.replace("__POOL__", ns.name([None], "pool"), 1)
                for fn in ("np.multiply(", "np.einsum("):
                    # (a spelling that is one call, whose result is the whole value)
                    if (it.outs[0] in recycle and src.startswith(fn) and src.endswith(")")
                            and src.count("(") == src.count(")") and _one_call(src)):
                        ns.env["_pooled"] = pooled
                        src = (f"_pooled({fn[:-1]}, {ns.name([None], 'pool')}, "
                               + src[len(fn):])
                        break
            else:
                tmpl = _template(spec) if shapes is not None and it.err is None else None
                src = tmpl(it, args, kwsrc, shapes) if tmpl is not None else None
            if src is not None:
                lines += _in_float_context(it, f"v{it.outs[0]} = {src}", indent, ns)
                continue
            fn = ns.name(spec.forward, "f")
            args += [f"{k}={v}" for k, v in kwsrc.items()]
            lhs = ", ".join(f"v{o}" for o in it.outs)
            if spec.nout != 1:
                lhs += ","
            lines += _in_float_context(it, f"{lhs} = {fn}({', '.join(args)})", indent, ns)
        elif t is Load:
            x = ns.name(it.tensor, "x")
            lines.append(f"{indent}v{it.slot} = {x}._data")
        elif t is Alias:
            lines.append(f"{indent}v{it.slot} = v{it.of}")
        elif t is Const:
            lines.append(f"{indent}v{it.slot} = {ns.name(it.value)}")
    return lines


def _in_float_context(it: Entry, line: str, indent: str, ns: Namespace) -> list[str]:
    """The statement ``line`` of entry ``it``, under the floating-point state it was
    recorded in when the function set one (``it.err``): every spelling of an op, NumPy's
    or another library's, runs where eager mode ran it (a ``FloatingPointError`` under
    ``np.errstate(divide="raise")`` decides an ``except`` branch)."""
    if it.err is None:
        return [indent + line]
    err = ns.name(functools.partial(float_context, it.err), "e")
    return [f"{indent}with {err}():", f"{indent}    {line}"]


def numpy_program(items: list, params: list, results: list, value: list) -> Callable:
    """The NumPy replay of ``items`` (guards and loads left out: a load's slot is among
    ``params``): ``replay(*values of params)`` -> ``results`` (None entries where
    ``results`` has None), as a fused or native kernel of the same items returns them; a
    slot it reads but neither makes nor takes is the recorded constant in ``value``."""
    ns = Namespace()
    items = [it for it in items if type(it) is not Guard and type(it) is not Load]
    made = set(params)
    lines = []
    for it in items:
        for s in sorted(item_uses(it) - made):
            lines.append(f"    v{s} = {ns.name(value[s])}")  # (a constant of the backward)
            made.add(s)
        made.update(item_defs(it))
    lines += body_lines(items, ns, shapes=SlotInfo(value))
    lines.append(f"    return ({''.join('None, ' if r is None else f'v{r}, ' for r in results)})")
    return build("replay", ", ".join(f"v{s}" for s in params), lines, ns)


def _foreign_line(it: Entry, args: list, kwsrc: dict, ns: Namespace) -> str:
    """The statement of entry ``it`` in a replay on another library's arrays: through
    :func:`foreign_call`, or, for an op of the tape alone (a gradient rule called as it
    is: no public function), its forward, which calls the rules as the engine does."""
    spec = it.op
    lhs = ", ".join(f"v{o}" for o in it.outs) + ("," if spec.nout != 1 else "")
    parts = args + [f"{k}={v}" for k, v in kwsrc.items()]
    if spec.fn is None:
        return f"{lhs} = {ns.name(spec.forward, 'f')}({', '.join(parts)})"
    ns.env["_foreign_call"] = foreign_call
    return f"{lhs} = _foreign_call({', '.join([ns.name(spec, 'op'), *parts])})"


def shape_of(v: Any) -> tuple:
    """The shape of a recorded value, read without converting it (another library's
    array keeps its own ``shape``)."""
    shape = getattr(v, "shape", None)
    return tuple(shape) if shape is not None else np.shape(v)


class SlotInfo:
    """Recorded shapes of slots, for generated code: ``info(s)`` is slot ``s``'s shape,
    ``info(s, True)`` whether it held an ndarray, ``info.dtype[s]`` its dtype (None: it had
    none)."""

    def __init__(self, values: list) -> None:
        self.shape = [shape_of(v) for v in values]
        self.array = [isinstance(v, np.ndarray) for v in values]
        self.generic = [isinstance(v, np.generic) for v in values]
        self.dtype = [getattr(v, "dtype", None) for v in values]
        self.numba = False  # whether generated code may call numba kernels (see rowwise.py)

    def __call__(self, s: int, kind: Any = False) -> Any:
        if kind == "generic":
            return self.generic[s]
        return self.array[s] if kind else self.shape[s]


# Source computing a guard's outcome as a key (see ``tape.outcome_key``: floats by bits).
GUARD_SRC = {
    "bool": "bool(v{s})", "int": "int(v{s})", "float": "_key(float(v{s}))",
    "complex": "_key(complex(v{s}))", "index": "_index(v{s})", "item": "_key(_item(v{s}))",
    "meta": "(v{s}.shape, v{s}.dtype, {x}.requires_grad, {x}._node is None)",
    "shape": "_key((v{s}.shape, v{s}.dtype))",
}


def guard_src(g: Guard, ns: Namespace, tensor: Any, foreign: bool = False) -> str:
    """Source computing a guard's outcome (its key); ``foreign``: on another library's
    arrays (``.item()`` is NumPy's method; ``backend.item`` converts any library's)."""
    x = ns.name(tensor, "x") if tensor is not None else ""
    src = GUARD_SRC[g.kind] if foreign or g.kind != "item" else "_key(v{s}.item())"
    return src.format(s=g.slot, x=x)


def build(name: str, params: str, lines: list[str], ns: Namespace) -> Any:
    """Compile ``def name(params): lines`` in the namespace; return the function."""
    import operator

    from .tape import outcome_key

    ns.env.setdefault("_index", operator.index)
    ns.env.setdefault("_item", item)
    ns.env.setdefault("_key", outcome_key)
    src = f"def {name}({params}):\n" + "\n".join(lines) + "\n"
    code = compile(src, f"<yaad.compile {name}>", "exec")
    exec(code, ns.env)
    fn = ns.env[name]
    fn.__source__ = src
    return fn


# ---- specialised spellings, checked on the recorded values ----------------------------------

def copy_into(pool: list, x: np.ndarray) -> np.ndarray:
    """A C-contiguous copy of ``x``, in the array of the last call if it is free."""
    buf = free_buffer(pool)
    if buf is not None:
        np.copyto(buf, x)
        return buf
    # (always a copy: ascontiguousarray returns a view of x where the transposed x is
    # contiguous already (a length-1 axis moved), and the pool would then write the next
    # call's values into this call's input)
    buf = np.array(x, order="C")
    if buf.size >= POOL_MIN:
        pool[0] = buf
    return buf


def _mat(x: str, shape: tuple, perm: Any, new_shape: tuple, swap: bool) -> tuple[str, tuple]:
    if perm is not None:
        x = f"{x}.transpose({perm!r})"
        shape = tuple(shape[p] for p in perm)
        if int(np.prod(shape)) >= POOL_MIN and tuple(new_shape) != shape:
            x = f"_copy_into(__POOL__, {x})"  # (the reshape below would copy anyway)
    if tuple(new_shape) != tuple(shape):
        x = f"{x}.reshape({tuple(new_shape)!r})"
        shape = tuple(new_shape)
    if swap:
        x = f"{x}.T" if len(shape) == 2 else f"{x}.swapaxes(-1, -2)"
    return x, shape


def _einsum_spell(it: Entry, value: list) -> str | None:
    """The contraction of two operands as the NumPy calls the einsum op would make for
    these shapes, without its per-call planning."""
    plan_of = products._pair_plan
    sub = it.args[0]
    if len(it.args) != 3 or not isinstance(sub, str) or it.kw:
        return None
    refs = it.args[1:]
    if not all(type(r) is Slot for r in refs):
        return None
    sa, sb = (np.shape(value[r.i]) for r in refs)
    plan = plan_of(sub, sa, sb)
    if plan[0] == "einsum":
        return f"np.einsum({sub!r}, {{0}}, {{1}})"
    if plan[0] == "mul":
        (pa, sha), (pb, shb) = plan[1], plan[2]
        a, _ = _mat("{0}", sa, pa, sha, False)
        b, _ = _mat("{1}", sb, pb, shb, False)
        return f"np.multiply({a}, {b})"
    if plan[0] == "matmul":
        _, a_left, vl, vr, shape, perm = plan
        (x, sx), (y, sy) = (("{0}", sa), ("{1}", sb)) if a_left else (("{1}", sb), ("{0}", sa))
        left, _ = _mat(x, sx, *vl)
        right, _ = _mat(y, sy, *vr)
        src = f"np.matmul({left}, {right}).reshape({tuple(shape)!r})"
        if perm is not None:
            src += f".transpose({perm!r})"
        return src
    return None


def _trace_mm_spell(it: Entry, value: list) -> str | None:
    a, b = (value[r.i] if type(r) is Slot else r for r in it.args)
    if a.ndim == 2 and b.ndim == 2 and a.dtype.kind != "c" and b.dtype.kind != "c":
        return "np.vdot({0}, {1}.T)"
    return "np.einsum('...ij,...ji->...', {0}, {1})"


def _clock_min(fn: Callable, budget: float = 2e-3) -> float:
    """The fastest of a few runs of ``fn`` (seconds), within about ``budget``."""
    import time

    best = float("inf")
    start = time.perf_counter()
    for _ in range(7):
        t0 = time.perf_counter()
        fn()
        t = time.perf_counter() - t0
        best = min(best, t)
        if t0 + t - start > budget:
            break
    return best


def specialize(items: list, value: list) -> None:
    """Give entries a cheaper spelling where one applies, kept only if it computes what
    the op computed on the recorded values (exactly, or to rounding for a contraction
    in another order, which is then chosen by timing it on those values)."""
    contract = products._contract.op
    for it in items:
        if type(it) is not Entry or it.spell is not None:
            continue
        if it.op is contract:
            make, first = _einsum_spell, 1
        elif it.op is TRACE_MM:
            make, first = _trace_mm_spell, 0
        else:
            continue
        try:
            spell = make(it, value)
            if spell is None:
                continue
            args = [value[r.i] if type(r) is Slot else r for r in it.args]
            env = {"np": np, "a0": args[first], "a1": args[first + 1],
                   "_copy_into": copy_into}
            pools = [[None] for _ in range(spell.count("__POOL__"))]
            spell_here = spell
            for k in range(len(pools)):
                env[f"pool{k}"] = pools[k]
                spell_here = spell_here.replace("__POOL__", f"pool{k}", 1)
            want = it.op.forward(*args)  # (a rewritten entry's value was computed otherwise)
            got = eval(spell_here.format("a0", "a1"), env)
            if not (np.shape(got) == np.shape(want) and np.array_equal(got, want)):
                continue
            if first and spell.startswith("np.matmul("):
                # NumPy's own einsum loop against the matrix-product plan, on these shapes.
                alt = f"np.einsum({args[0]!r}, {{0}}, {{1}})"
                code = [compile(x.format("a0", "a1"), "<spell>", "eval")
                        for x in (spell_here, alt)]
                other = eval(code[1], env)
                if (np.shape(other) == np.shape(want)
                        and np.allclose(other, want, rtol=1e-12, atol=0)
                        and _clock_min(lambda c=code[1], e=env: eval(c, e))
                        < 0.8 * _clock_min(lambda c=code[0], e=env: eval(c, e))):
                    spell = alt
            it.spell = _shift(spell) if first else spell
        except Exception:  # a plan this code does not know: call the op as it is
            continue


def _shift(spell: str) -> str:
    """Operand placeholders {0}, {1} -> {1}, {2} (argument 0 is the subscripts)."""
    return spell.replace("{1}", "{2}").replace("{0}", "{1}")
