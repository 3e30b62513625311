"""Recording a function: the tape of op calls, the guards, and what escaped the recording.

While :class:`Recorder` is ``state.tracer``, every op called on tensors comes to
:meth:`Recorder.apply`, which notes the call (which slots feed which arguments, the
constants) and then runs it eagerly, so the recording call computes exactly what eager
mode computes. Every place where Python looks at a value (``bool()``, ``float()``,
``int()``, ``.item()``, ``__index__``) comes to :meth:`Recorder.guard_value` and becomes a
guard. Values handed to user code as NumPy arrays (``x.data``, ``x.numpy()``, gradients
returned by ``autograd.grad``) are :class:`Traced` views: NumPy operations on them, which
the recording cannot see, mark the recording as not replayable ("escaped"), and the
compiled function then runs eagerly for those inputs.
"""

from __future__ import annotations

import contextlib
import operator
import random
import sys
import threading
from typing import Any

import numpy as np

from ..grad_mode import state
from ..op import Op, _clock
from ..op import apply as _apply
from ..tensor import Tensor, make_tensor


class S:
    """A reference to slot ``i`` of a recording (``tensor``: passed as a Tensor, not an array)."""

    __slots__ = ("i", "tensor")

    def __init__(self, i: int, tensor: bool = True) -> None:
        self.i = i
        self.tensor = tensor

    def __eq__(self, other: object) -> bool:
        return type(other) is S and other.i == self.i and other.tensor == self.tensor

    def __hash__(self) -> int:
        return hash((self.i, self.tensor))

    def __repr__(self) -> str:
        return f"v{self.i}"


class Tup:
    """A tuple or list argument that contains slot references (an index, say)."""

    __slots__ = ("items", "is_list")

    def __init__(self, items: list, is_list: bool) -> None:
        self.items = tuple(items)
        self.is_list = is_list

    def __eq__(self, other: object) -> bool:
        return (type(other) is Tup and other.is_list == self.is_list
                and len(other.items) == len(self.items)
                and all(same_ref(a, b) for a, b in zip(self.items, other.items)))

    __hash__ = None  # type: ignore[assignment]


class Entry:
    """One op call: ``outs = op.forward(*args, **kw)``.

    ``grad_in[i]``: a gradient can flow into positional argument ``i`` (a tensor that
    required grad, with a rule). ``diff_out[k]``: output ``k`` required grad. ``err``: the
    NumPy error state when it ran, if it was not the state at the start.
    """

    __slots__ = ("op", "args", "kw", "outs", "grad_in", "diff_out", "err", "dtypes", "spell")

    def __init__(self, op: Op, args: tuple, kw: dict | None, outs: tuple, grad_in: tuple,
                 diff_out: tuple, err: dict | None = None, dtypes: tuple = ()) -> None:
        self.op = op
        self.args = args
        self.kw = kw
        self.outs = outs
        self.grad_in = grad_in
        self.diff_out = diff_out
        self.err = err
        self.dtypes = dtypes  # of the outputs
        self.spell = None  # cheaper source for the call, checked on the recorded values

    def __repr__(self) -> str:
        outs = ", ".join(f"v{s}" for s in self.outs)
        return f"{outs} = {self.op.name}{self.args!r}"


class Load:
    """Read the current ``.data`` of a tensor the function reads from outside (a closure)."""

    __slots__ = ("slot", "tensor")

    def __init__(self, slot: int, tensor: Tensor) -> None:
        self.slot = slot
        self.tensor = tensor


class Alias:
    """``slot`` has the value of ``of`` but no gradient flows between them (``detach``,
    or a new leaf made from a recorded value)."""

    __slots__ = ("slot", "of")

    def __init__(self, slot: int, of: int) -> None:
        self.slot = slot
        self.of = of


class Const:
    """``slot`` holds a constant array (a seed, or an array a rule computes with)."""

    __slots__ = ("slot", "value")

    def __init__(self, slot: int, value: Any) -> None:
        self.slot = slot
        self.value = value


class Guard:
    """Python looked at slot ``slot`` (``kind``: bool, int, float, complex, index, item, or
    meta: the shape, dtype and requires_grad of an outside tensor) and saw ``value``."""

    __slots__ = ("slot", "kind", "value", "where")

    def __init__(self, slot: int, kind: str, value: Any, where: str) -> None:
        self.slot = slot
        self.kind = kind
        self.value = value
        self.where = where


def same_const(a: Any, b: Any) -> bool:
    """Whether two constants of two recordings are the same (by identity or value)."""
    if a is b:
        return True
    ta = type(a)
    if ta is not type(b):
        return False
    if ta is Tensor:
        return same_const(a.data, b.data)
    if isinstance(a, np.ndarray):
        if a.shape != b.shape or a.dtype != b.dtype:
            return False
        try:
            return bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
        except TypeError:
            return bool(np.array_equal(a, b))
    if ta in (tuple, list):
        return len(a) == len(b) and all(same_ref(x, y) for x, y in zip(a, b))
    if ta is dict:
        return a.keys() == b.keys() and all(same_ref(a[k], b[k]) for k in a)
    if ta is float or ta is complex or isinstance(a, np.generic):
        return bool(a == b) or bool(a != a and b != b)
    try:
        return bool(a == b)
    except Exception:
        return False


def same_ref(a: Any, b: Any) -> bool:
    """Whether two arguments of two recordings are the same (slot refs or constants)."""
    if type(a) is S or type(a) is Tup:
        return a == b
    if type(b) is S or type(b) is Tup:
        return False
    return same_const(a, b)


def same_item(a: Any, b: Any) -> bool:
    """Whether two tape items of two recordings are the same."""
    ta = type(a)
    if ta is not type(b):
        return False
    if ta is Entry:
        return (a.op is b.op and a.outs == b.outs and a.grad_in == b.grad_in
                and a.diff_out == b.diff_out and a.err == b.err
                and len(a.args) == len(b.args)
                and all(same_ref(x, y) for x, y in zip(a.args, b.args))
                and same_ref(a.kw or {}, b.kw or {}))
    if ta is Load:
        return a.slot == b.slot and (a.tensor is b.tensor or same_const(a.tensor, b.tensor))
    if ta is Alias:
        return a.slot == b.slot and a.of == b.of
    if ta is Const:
        return a.slot == b.slot and same_const(a.value, b.value)
    if ta is Guard:
        return a.slot == b.slot and a.kind == b.kind and same_const(a.value, b.value)
    return False


# ---- values handed to user code while recording ------------------------------------------

# yaad's own modules that only pass values along, or compute on them through ops; code
# anywhere else (users', yaad.nn, yaad.optim, ...) gets watched views.
_TRUSTED = ("yaad", "yaad.op", "yaad.engine", "yaad.tensor", "yaad.methods", "yaad.autograd",
            "yaad.func", "yaad.grad_mode", "yaad.compile", "yaad.checkpoint",
            "yaad.anomaly")
_TRUSTED_PREFIXES = ("yaad.ops.", "yaad.linalg", "yaad.compiled.")


def _caller_policy(frame: Any) -> str:
    """How a read of a tensor's value from ``frame`` is treated: ``plain`` (yaad's own
    code: ops, the engine, shape properties), ``traced`` (anything else: hand out a
    :class:`Traced` view) or ``escape`` (a copy that the recording cannot follow)."""
    mod = frame.f_globals.get("__name__", "")
    if mod in _TRUSTED or mod.startswith(_TRUSTED_PREFIXES):
        return "plain"
    if mod == "yaad.creation":
        return "plain" if frame.f_code.co_name == "make" else "escape"
    return "traced"


def _escape_here(what: str, frame: Any) -> None:
    rec = state.tracer
    if rec is not None and not rec.suspended and _caller_policy(frame) != "plain":
        rec.escape(what)


def _computed_on(what: str, frame: Any) -> None:
    """NumPy computed on a :class:`Traced` array: an escape, whoever asked (a yaad function
    called on arrays only runs NumPy, unrecorded), except this package's own code."""
    rec = state.tracer
    if (rec is not None and not rec.suspended
            and not frame.f_globals.get("__name__", "").startswith("yaad.compiled")):
        rec.escape(what)


def _plain(x: Any) -> Any:
    if isinstance(x, Traced):
        return x.view(np.ndarray)
    if type(x) in (tuple, list):
        return type(x)(_plain(v) for v in x)
    if type(x) is dict:
        return {k: _plain(v) for k, v in x.items()}
    return x


# NumPy functions that read only shapes and dtypes: fine on a recorded array.
_SHAPE_ONLY = {"shape", "ndim", "size", "result_type", "iscomplexobj", "isrealobj",
               "can_cast", "min_scalar_type", "common_type"}


class Traced(np.ndarray):
    """A recorded value (a view) given to user code while recording.

    Passing it to yaad functions or returning it is recorded; computing with it in NumPy,
    converting it to Python numbers or deriving new arrays from it cannot be recorded, so
    it marks the recording as escaped (the compiled function then runs eagerly).
    """

    def __array_finalize__(self, obj: Any) -> None:
        if isinstance(obj, Traced):
            _computed_on("an array derived from a recorded value (a view, copy or cast "
                         "of x.data, of an array argument or of a gradient)",
                         sys._getframe(1))

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        for x in inputs:
            if isinstance(x, Tensor):
                return NotImplemented
        _computed_on(f"numpy.{ufunc.__name__} applied to a recorded array",
                     sys._getframe(1))
        return getattr(ufunc, method)(*_plain(inputs), **_plain(kwargs))

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        if func.__name__ not in _SHAPE_ONLY:
            _computed_on(f"numpy.{func.__name__} applied to a recorded array",
                         sys._getframe(1))
        return func(*_plain(args), **_plain(kwargs))

    def _leak(self, what: str) -> np.ndarray:
        _computed_on(what, sys._getframe(2))
        return self.view(np.ndarray)

    def __getitem__(self, idx: Any) -> Any:
        return self._leak("indexing a recorded array")[_plain(idx)]

    def __setitem__(self, idx: Any, value: Any) -> None:
        self._leak("writing into a recorded array")[_plain(idx)] = _plain(value)

    def _guard(self, kind: str) -> Any:
        """Python looks at the value: a guard, as for a tensor (``bool(x)``...)."""
        plain = self.view(np.ndarray)
        rec = state.tracer
        if rec is not None and not rec.suspended:
            s = rec.lookup_array(self)
            if s is None:
                rec.escape(f"{kind}() of an array derived from a recorded value")
            else:
                rec.guard_array(s, kind, plain)
        return _GUARD_VALUE[kind](plain)

    def __bool__(self) -> bool:
        return self._guard("bool")

    def __float__(self) -> float:
        return self._guard("float")

    def __int__(self) -> int:
        return self._guard("int")

    def __index__(self) -> int:
        return self._guard("index")

    def __complex__(self) -> complex:
        return self._guard("complex")

    def __iter__(self) -> Any:
        return iter(self._leak("iterating over a recorded array"))

    def item(self, *args: Any) -> Any:
        if args:
            return self._leak(".item(index) of a recorded array").item(*args)
        return self._guard("item")

    def tolist(self) -> Any:
        return self._leak(".tolist() of a recorded array").tolist()

    def __reduce__(self) -> Any:
        return self._leak("pickling a recorded array").__reduce__()


def _layout(a: np.ndarray) -> tuple:
    return (a.__array_interface__["data"][0], a.shape, a.strides, a.dtype.str)


# ---- watching Tensor while recording -------------------------------------------------------

_DATA = Tensor.__dict__["data"]
_GRAD = Tensor.__dict__["grad"]
_NUMPY = Tensor.__dict__["numpy"]
_TOLIST = Tensor.__dict__["tolist"]
_ARRAY = Tensor.__dict__["__array__"]
_DEFAULT_RNG = np.random.default_rng
_REGISTER_HOOK = Tensor.__dict__["register_hook"]
_RETAIN_GRAD = Tensor.__dict__["retain_grad"]


def _watched_get_data(self: Tensor) -> Any:
    v = _DATA.__get__(self, Tensor)
    rec = state.tracer
    if rec is None or rec.suspended:
        return v
    policy = _caller_policy(sys._getframe(1))
    if policy == "plain":
        return v
    if policy == "escape":
        rec.escape("a copy of a tensor's value (yaad.tensor(x) or as_tensor of a tensor)")
        return v
    return rec.traced_view(self, v)


def _watched_set_data(self: Tensor, value: Any) -> None:
    rec = state.tracer
    if rec is not None and not rec.suspended and _caller_policy(sys._getframe(1)) != "plain":
        rec.escape("assigning to x.data")
    _DATA.__set__(self, _plain(value))


def _watched_grad(self: Tensor) -> Any:
    g = getattr(self, "_grad", None)
    rec = state.tracer
    if g is None or rec is None or rec.suspended or isinstance(g, Tensor):
        return g
    if _caller_policy(sys._getframe(1)) == "plain":
        return g
    s = rec.by_array.get(id(g))
    if s is None:
        rec.escape("reading .grad that was not computed inside the function")
        return g
    view = g.view(Traced)
    rec.register_array(view, s)
    return view


def _watched_numpy(self: Tensor) -> Any:
    rec = state.tracer
    v = _DATA.__get__(self, Tensor)
    if rec is None or rec.suspended or _caller_policy(sys._getframe(1)) == "plain":
        return v
    return rec.traced_view(self, v)


def _watched_tolist(self: Tensor) -> Any:
    _escape_here(".tolist() of a tensor", sys._getframe(1))
    return _DATA.__get__(self, Tensor).tolist()


def _watched_array(self: Tensor, dtype: Any = None, copy: Any = None) -> Any:
    rec = state.tracer
    if rec is not None and not rec.suspended and _caller_policy(sys._getframe(1)) != "plain":
        rec.escape("numpy.asarray(x) (or another conversion of a tensor to NumPy)")
    return _ARRAY(self, dtype, copy)


def _watched_register_hook(self: Tensor, fn: Any) -> Any:
    _computed_on("a hook registered inside the function (the replayed backward would not "
                 "call it)", sys._getframe(1))
    return _REGISTER_HOOK(self, fn)


def _watched_retain_grad(self: Tensor) -> None:
    _computed_on("retain_grad() inside the function (the replayed backward fills only the "
                 "inputs' .grad)", sys._getframe(1))
    return _RETAIN_GRAD(self)


def _watched_default_rng(seed: Any = None) -> Any:
    if seed is None:
        _escape_here("random numbers drawn with numpy.random.default_rng()", sys._getframe(1))
    return _DEFAULT_RNG(seed)


def _watched_export(export: Any) -> Any:
    """``yaad.func``'s conversion of results (``np.asarray(x)[()]``): register what it
    returns as the slot it converts."""
    def wrapper(x: Any, *args: Any, **kw: Any) -> Any:
        out = export(x, *args, **kw)
        rec = state.tracer
        if rec is not None and not rec.suspended and out is not x and hasattr(out, "dtype"):
            s = None
            if isinstance(x, Tensor):
                s = rec.by_tensor.get(id(x))
                if s is None:
                    s = rec.lookup_array(_DATA.__get__(x, Tensor))
            elif hasattr(x, "dtype"):
                s = rec.lookup_array(x)
            if s is not None and rec.lookup_array(out) is None:
                rec.register_array(out, s)
        return out

    wrapper.__wrapped__ = export
    return wrapper


_patch_lock = threading.Lock()
_patch_depth = [0]


def _patch() -> None:
    with _patch_lock:
        _patch_depth[0] += 1
        if _patch_depth[0] > 1:
            return
        Tensor.data = property(_watched_get_data, _watched_set_data)
        Tensor.grad = property(_watched_grad, _GRAD.fset, doc=_GRAD.__doc__)
        Tensor.numpy = _watched_numpy
        Tensor.tolist = _watched_tolist
        Tensor.__array__ = _watched_array
        Tensor.register_hook = _watched_register_hook
        Tensor.retain_grad = _watched_retain_grad
        np.random.default_rng = _watched_default_rng
        func = sys.modules.get("yaad.func")
        export = getattr(func, "_export", None)
        if export is not None:
            func._export = _watched_export(export)


def _unpatch() -> None:
    with _patch_lock:
        _patch_depth[0] -= 1
        if _patch_depth[0] > 0:
            return
        Tensor.data = _DATA
        Tensor.grad = _GRAD
        Tensor.numpy = _NUMPY
        Tensor.tolist = _TOLIST
        Tensor.__array__ = _ARRAY
        Tensor.register_hook = _REGISTER_HOOK
        Tensor.retain_grad = _RETAIN_GRAD
        np.random.default_rng = _DEFAULT_RNG
        func = sys.modules.get("yaad.func")
        export = getattr(func, "_export", None)
        if export is not None and hasattr(export, "__wrapped__"):
            func._export = export.__wrapped__


def user_location() -> str:
    """``file:line`` of the innermost frame outside yaad (for messages)."""
    f = sys._getframe(1)
    while f is not None:
        mod = f.f_globals.get("__name__", "")
        if not (mod == "yaad" or mod.startswith("yaad.")):
            return f"{f.f_code.co_filename}:{f.f_lineno}"
        f = f.f_back
    return "?"


def _rng_states() -> tuple:
    return np.random.get_state(), random.getstate()


def _same_rng(a: tuple, b: tuple) -> bool:
    (na, pa), (nb, pb) = a, b
    return (pa == pb and na[0] == nb[0] and na[2:] == nb[2:]
            and np.array_equal(na[1], nb[1]))


# ---- the recorder -----------------------------------------------------------------------

_GUARD_VALUE = {
    "bool": bool, "float": float, "int": int, "complex": complex,
    "index": operator.index, "item": lambda a: a.item(),
}


class Recorder:
    """``state.tracer`` while a function is recorded (see the module docstring).

    Slots are numbered in the order they appear: the flattened inputs first. For each slot
    the recorder keeps its value (array), the tensor that held it while recording (the
    reverse transform runs the VJP rules on these), shape, dtype, whether a gradient can
    flow through it, and its edge (the node, or the tensor itself for a leaf), which
    tells a tensor of the same array apart from a detached copy.
    """

    def __init__(self) -> None:
        self.items: list = []
        self.target = self.items  # where new items go (the reverse transform redirects)
        self.value: list = []
        self.tensor: list = []
        self.diff: list = []
        self.edge: list = []
        self.src: list = []  # ("in", k) | ("ext", tensor) | ("op",) | ("alias", s) | ...
        self.by_tensor: dict[int, int] = {}
        self.by_array: dict[int, int] = {}
        self.by_layout: dict[tuple, int] = {}
        self.keep: list = []  # keeps registered objects alive, so their ids stay unique
        self.escapes: list[str] = []
        self.suspended = 0
        self.quiet = 0  # >0: do not note the NumPy error state (strong zeros)
        self.err0 = np.geterr()
        self.guard_slots: set[int] = set()
        self.effects: list = []  # (("in", k) | ("ext", tensor), slot): accumulate .grad
        self.nohooks = True

    # ---- slots ----

    def new_slot(self, value: Any, tensor: Tensor | None, src: tuple, diff: bool,
                 edge: Any) -> int:
        s = len(self.value)
        self.value.append(value)
        self.tensor.append(tensor)
        self.diff.append(diff)
        self.edge.append(edge)
        self.src.append(src)
        if tensor is not None:
            self.by_tensor[id(tensor)] = s
            self.keep.append(tensor)
        if hasattr(value, "dtype"):
            self.register_array(value, s)
        return s

    def register_array(self, arr: Any, s: int) -> None:
        self.by_array[id(arr)] = s
        self.keep.append(arr)
        if isinstance(arr, np.ndarray) and arr.size:
            self.by_layout[_layout(arr)] = s

    def lookup_array(self, a: Any) -> int | None:
        """The slot holding ``a``: the same object, or a view of the same memory with the
        same shape, strides and dtype (what ``np.asarray`` of a view makes)."""
        s = self.by_array.get(id(a))
        if s is None and isinstance(a, np.ndarray) and a.size:
            s = self.by_layout.get(_layout(a))
            if s is not None:
                self.register_array(a, s)
        return s

    def add_input(self, k: int, leaf: Any) -> int:
        if isinstance(leaf, Tensor):
            d = _DATA.__get__(leaf, Tensor)
            return self.new_slot(d, leaf, ("in", k), leaf.requires_grad, leaf._node or leaf)
        return self.new_slot(leaf, None, ("in", k), False, None)

    def traced_array(self, arr: np.ndarray, s: int) -> Traced:
        """A watched view of the array in slot ``s``, for user code."""
        view = arr.view(Traced)
        self.register_array(view, s)
        return view

    def tensor_of(self, s: int) -> Tensor:
        """The tensor of slot ``s`` (made for slots that only held an array)."""
        t = self.tensor[s]
        if t is None:
            t = make_tensor(self.value[s])
            self.tensor[s] = t
            self.by_tensor[id(t)] = s
            self.keep.append(t)
        return t

    def const_slot(self, arr: np.ndarray) -> int:
        """A slot for a constant array (the reverse transform passes it to rules as a
        tensor, so that what they compute from it is recorded, not baked in)."""
        s = self.by_array.get(id(arr))
        if s is not None:
            return s
        s = self.new_slot(arr, None, ("const", arr), False, None)
        self.target.append(Const(s, arr))
        return s

    def slot_of(self, t: Tensor) -> int:
        s = self.by_tensor.get(id(t))
        if s is not None:
            return s
        data = _DATA.__get__(t, Tensor)
        node = t._node
        edge = node if node is not None else t
        s = self.lookup_array(data)
        if s is not None:
            se = self.edge[s]
            if se is edge or (type(edge) is tuple and edge == se):
                self.by_tensor[id(t)] = s
                self.keep.append(t)
                return s
            if node is None:
                # A detached tensor, or a new leaf made from a recorded value.
                a = self.new_slot(data, t, ("alias", s), t.requires_grad, t)
                self.target.append(Alias(a, s))
                return a
            self.escape("a tensor that shares memory with a recorded value but not its "
                        "history")
        # A tensor from outside the recording (a closure, a global, an attribute, or
        # made inside the function from constants): read on every call.
        s = self.new_slot(data, t, ("ext", t), t.requires_grad, edge)
        self.target.append(Load(s, t))
        self.target.append(Guard(s, "meta", (data.shape, data.dtype, t.requires_grad,
                                             node is None), user_location()))
        return s

    def traced_view(self, t: Tensor, data: Any) -> Any:
        """A :class:`Traced` view of ``t``'s value, for user code."""
        if not isinstance(data, np.ndarray):
            return data
        s = self.slot_of(t)
        view = data.view(Traced)
        self.register_array(view, s)
        return view

    def ref(self, a: Any) -> Any:
        """The tape reference for argument ``a``: a slot, or ``a`` itself (a constant)."""
        if isinstance(a, Tensor):
            return S(self.slot_of(a))
        if isinstance(a, np.ndarray):
            s = self.lookup_array(a)
            return S(s, False) if s is not None else a
        if type(a) in (tuple, list) and a:
            items = [self.ref(x) for x in a]
            if any(type(x) is S or type(x) is Tup for x in items):
                return Tup(items, type(a) is list)
        return a

    def escape(self, what: str) -> None:
        self.escapes.append(f"{what} at {user_location()}")

    # ---- the tracer protocol (called from op.py and tensor.py) ----

    def apply(self, spec: Op, args: tuple, kw: dict) -> Any:
        if self.suspended:
            return self.eager(spec, args, kw)
        refs = tuple(self.ref(a) for a in args)
        kwrefs = {k: self.ref(v) for k, v in kw.items()} if kw else None
        out = self.eager(spec, _plain(args), _plain(kw) if kw else kw)
        outs = out if spec.nout != 1 else (out,)
        enabled = state.enabled
        vjps = spec.vjps
        grad_in = tuple(
            isinstance(a, Tensor) and a.requires_grad and enabled
            and (spec.variadic or (i < len(vjps) and vjps[i] is not None))
            for i, a in enumerate(args))
        slots = []
        for t in outs:
            node = t._node
            slots.append(self.new_slot(t.data, t, ("op",), t.requires_grad,
                                       node if node is not None else t))
        err = None if self.quiet else np.geterr()
        self.target.append(Entry(spec, refs, kwrefs, tuple(slots), grad_in,
                                 tuple(t.requires_grad for t in outs),
                                 None if err == self.err0 or err is None else err,
                                 tuple(getattr(t.data, "dtype", None) for t in outs)))
        return out

    def eager(self, spec: Op, args: tuple, kw: dict) -> Any:
        """Run one op eagerly, unrecorded."""
        st = state
        self.suspended += 1
        st.special = False
        try:
            return _apply(spec, args, kw)
        finally:
            self.suspended -= 1
            st.refresh()

    def guard_value(self, t: Tensor, kind: str) -> None:
        if self.suspended:
            return
        s = self.slot_of(t)
        try:
            value = _GUARD_VALUE[kind](_DATA.__get__(t, Tensor))
        except Exception:
            return  # the conversion raises; so will the caller
        self.guard_slots.add(s)
        self.target.append(Guard(s, kind, value, user_location()))

    def guard_array(self, s: int, kind: str, value: np.ndarray) -> None:
        """A guard on slot ``s``, seen through an array (see :class:`Traced`)."""
        try:
            outcome = _GUARD_VALUE[kind](value)
        except Exception:
            return
        self.guard_slots.add(s)
        self.target.append(Guard(s, kind, outcome, user_location()))

    def backward(self, outputs: Any, grad_outputs: Any, retain_graph: Any,
                 create_graph: bool, inputs: Any = None, capture: bool = False,
                 allow_unused: bool = False) -> Any:
        """``run_backward`` while recording: the backward pass is recorded too."""
        from .reverse import _escape_to_engine, record_backward

        if self.suspended:  # inside an op: not the function's own backward
            return _escape_to_engine(self, "a backward pass inside an operation", outputs,
                                     grad_outputs, create_graph, inputs, capture,
                                     allow_unused)
        return record_backward(self, outputs, grad_outputs, create_graph, inputs, capture,
                               allow_unused)

    # ---- running the function ----

    @contextlib.contextmanager
    def active(self) -> Any:
        """Make this recorder ``state.tracer`` (and watch tensors) inside the block."""
        st = state
        prev = st.tracer
        st.tracer = self
        st.refresh()
        _patch()
        try:
            yield self
        finally:
            _unpatch()
            st.tracer = prev
            st.refresh()

    def run(self, fn: Any, args: tuple, kw: dict) -> Any:
        """Call ``fn`` with this recorder active; note what it did that cannot be replayed."""
        clock = _clock[0]
        rng = _rng_states()
        try:
            with self.active():
                return fn(*args, **kw)
        finally:
            if _clock[0] != clock:
                self.escapes.append("an in-place operation on a tensor (x += ..., "
                                    "x[...] = ..., x.add_(...)); write it out of place")
            if not _same_rng(rng, _rng_states()):
                self.escapes.append("random numbers drawn from numpy.random or random; "
                                    "pass them in as arguments")

    # ---- the outputs ----

    def output_spec(self, x: Any) -> tuple:
        """How to rebuild the function's result from the slots (see ``finish``)."""
        if isinstance(x, Tensor):
            s = self.slot_of(x)
            src = self.src[s]
            if src[0] == "in" and self.tensor[s] is x:
                return ("IN", src[1])
            if src[0] == "ext":
                return ("OBJ", x)
            return ("T", s)
        if hasattr(x, "dtype") and hasattr(x, "shape"):
            s = self.lookup_array(x)
            if s is None:
                # Made inside the function, not from recorded values (those are watched):
                # a constant, checked by the second recording.
                return ("C", x)
            src = self.src[s]
            if src[0] == "in" and self.value[s] is x:
                return ("IN", src[1])
            return ("A", s, isinstance(x, np.generic))
        t = type(x)
        if t is tuple or t is list or (isinstance(x, tuple) and hasattr(x, "_fields")):
            return ("tuple" if t is not list else "list", t, [self.output_spec(v) for v in x])
        if t is dict:
            return ("dict", list(x), [self.output_spec(v) for v in x.values()])
        return ("C", x)


def plain_outputs(x: Any) -> Any:
    """``x`` with :class:`Traced` arrays replaced by plain views (for the caller)."""
    if isinstance(x, Traced):
        return x.view(np.ndarray)
    t = type(x)
    if t is tuple or t is list:
        return t(plain_outputs(v) for v in x)
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return t(*(plain_outputs(v) for v in x))
    if t is dict:
        return {k: plain_outputs(v) for k, v in x.items()}
    return x
