"""Recording a function: the tape of op calls, the guards, and what makes a call eager.

While a :class:`Recorder` is ``state.tracer``:

- every op called on tensors comes to :meth:`Recorder.apply`, which notes the call
  (which slots feed which arguments, the constants) and runs it eagerly, so the recording
  computes exactly what eager mode computes. The op call is the unit of recording: a
  replay runs the op's forward on the new values, so what it decides from values (an
  order, a mask, a count) is decided again. An op that is not elementwise gets a guard
  on the shape of its outputs, which may depend on values (``nonzero``, a boolean mask);
- every public read of a tensor's value comes to :meth:`Recorder.read` (see tensor.py):
  ``bool()``, ``float()``, ``int()``, ``complex()``, ``.item()``, ``__index__`` and
  ``format()`` of a 0-d tensor are *guards*: the replay computes them again and follows
  the recorded path only if the outcome has the same bits. The others hand Python the
  whole value (``.data``, ``.numpy()``, ``np.asarray``, ``.tolist()``, ``repr``, ``.grad``)
  or change what a replay would have to do (hooks, ``retain_grad``, assigning ``.data``):
  the call goes on eagerly from there, the recording is dropped, and the compiled
  function runs eagerly for these inputs (a ``CompileWarning`` names the line);
- arrays handed to Python are :class:`~yaad.compiled.watched.Watched`;
- the VJP rules that the reverse transform runs are *probed* (:meth:`Recorder.probing`):
  a rule that reads a value, or whose ops raise, is not inlined; its replay calls it.

No attribute of ``Tensor`` or of NumPy is patched, and no module is trusted by name.
"""

from __future__ import annotations

import contextlib
import operator
import random
import sys
import warnings
from typing import Any, Callable

import numpy as np

from ..core.backend import dtype_kind, is_foreign, item, namespace
from ..core.engine import run_backward
from ..core.grad_mode import state
from ..core.graph import clock as _clock
from ..core.lazy import is_lazy
from ..core.op import Op, registry
from ..core.op import apply as _apply
from ..core.tensor import Tensor, make_tensor
from ..modes.registry import BackwardCall, register_mode, run_modes
from ..ops.strong_zero import STRONG_ZERO
from .product_ops import DIAG_MM, TRACE_MM
from .watched import Watched, plain


class Slot:
    """A reference to slot ``i`` of a recording (``tensor``: passed as a Tensor, not an array)."""

    __slots__ = ("i", "tensor")

    def __init__(self, i: int, tensor: bool = True) -> None:
        self.i = i
        self.tensor = tensor

    def __eq__(self, other: object) -> bool:
        return type(other) is Slot and other.i == self.i and other.tensor == self.tensor

    def __hash__(self) -> int:
        return hash((self.i, self.tensor))

    def __repr__(self) -> str:
        return f"v{self.i}"


class SlotTuple:
    """A tuple or list argument that contains slot references (an index, say)."""

    __slots__ = ("items", "is_list")

    def __init__(self, items: list, is_list: bool) -> None:
        self.items = tuple(items)
        self.is_list = is_list

    def __eq__(self, other: object) -> bool:
        return (type(other) is SlotTuple and other.is_list == self.is_list
                and len(other.items) == len(self.items)
                and all(same_ref(a, b) for a, b in zip(self.items, other.items)))

    __hash__ = None  # type: ignore[assignment]


class Entry:
    """One op call: ``outs = op.forward(*args, **kw)``.

    ``grad_in[i]``: a gradient can flow into positional argument ``i`` (a tensor that
    required grad, with a rule). ``diff_out[k]``: output ``k`` required grad. ``err``: the
    NumPy error state when it ran, if it or the warnings filters (then under the key
    ``filters``) were not those at the start (see :func:`float_context`).
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
    """Python looked at slot ``slot`` (``kind``: bool, int, float, complex, index, item)
    and saw ``value``: a branch point. Two kinds are assertions instead: ``meta`` (the
    shape, dtype and requires_grad of an outside tensor) and ``shape`` (the shape and
    dtype of an op's output, which may depend on values: ``nonzero``, a boolean mask,
    ``sqrtm``)."""

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
        return same_const(a._data, b._data)
    if isinstance(a, np.ndarray):
        return same_bits(a, b)
    if is_foreign(a):
        return same_foreign(a, b)
    if ta in (tuple, list):
        return len(a) == len(b) and all(same_ref(x, y) for x, y in zip(a, b))
    if ta is dict:
        return a.keys() == b.keys() and all(same_ref(a[k], b[k]) for k in a)
    if ta is float or ta is complex or isinstance(a, np.generic):
        return outcome_key(a) == outcome_key(b)
    try:
        return bool(a == b)
    except Exception:
        return False


def same_ref(a: Any, b: Any) -> bool:
    """Whether two arguments of two recordings are the same (slot refs or constants)."""
    if type(a) is Slot or type(a) is SlotTuple:
        return a == b
    if type(b) is Slot or type(b) is SlotTuple:
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
        return (a.slot == b.slot and a.kind == b.kind
                and outcome_key(a.value) == outcome_key(b.value))
    return False


def same_bits(a: np.ndarray, snap: np.ndarray) -> bool:
    """Whether array ``a`` has the shape, dtype and bits of ``snap`` (-0.0 differs from
    0.0; a NaN equals the same NaN)."""
    if a.shape != snap.shape or a.dtype != snap.dtype:
        return False
    if a.nbytes <= 1 << 16 or not a.flags.c_contiguous or a.dtype.hasobject:
        return a.tobytes() == snap.tobytes()
    # (as words: half the time of comparing bytes; snap is a C-contiguous copy)
    word = np.uint64 if a.nbytes % 8 == 0 else np.uint8
    return bool(np.array_equal(a.reshape(-1).view(np.uint8).view(word),
                               snap.reshape(-1).view(np.uint8).view(word)))


def same_foreign(a: Any, snap: Any) -> bool:
    """Whether another library's array ``a`` equals ``snap`` (shape, dtype, values; -0.0
    differs from 0.0, a NaN equals a NaN), read in their library: for a lazy one (Dask),
    whether they are the same graph (its key), so that nothing is computed."""
    if tuple(a.shape) != tuple(snap.shape) or a.dtype != snap.dtype:
        return False
    if is_lazy(a):
        return bool(a.name == snap.name)
    xp = namespace(a)
    same = (a == snap) | ((a != a) & (snap != snap))
    if dtype_kind(a.dtype) == "f":
        same = same & (xp.signbit(a) == xp.signbit(snap))
    return bool(xp.all(same))


def outcome_key(v: Any) -> Any:
    """A guard outcome (or a constant) as a key that tells apart what Python could tell
    apart: floats by their bits (``-0.0`` is not ``0.0``; a NaN is the same NaN)."""
    t = type(v)
    if t is bool or t is int:
        return v
    if t is float:
        return (float, v.hex())
    if t is complex:
        return (complex, v.real.hex(), v.imag.hex())
    if isinstance(v, np.generic):
        return (t, v.tobytes())
    return (t, v)


try:  # (NumPy's error state lives in a context variable, one object per state set)
    from numpy._core._ufunc_config import _extobj_contextvar as _EXTOBJ
except ImportError:  # pragma: no cover
    _EXTOBJ = None
_LAST: list = [object(), None, -1, None, None]  # error state, filters, length, first, key
_QUIET = ("ignore", "warn", "print", "log")


def float_state() -> Any:
    """What of NumPy's error state and of the warnings filters can decide which path a
    function takes (an error that raises, or calls a function; a warnings filter that
    makes some warnings errors): part of a compiled function's signature. None in the
    common case, where a floating-point error at most warns."""
    filters = warnings.filters
    first = filters[0] if filters else None
    if _EXTOBJ is None:
        return _float_state(filters)
    ext = _EXTOBJ.get()
    last = _LAST
    # (the warnings functions change the list's length or its first entry, or replace it;
    # the objects compared are held here, so that their identities stay theirs)
    if ext is last[0] and filters is last[1] and len(filters) == last[2] and first is last[3]:
        return last[4]
    key = _float_state(filters)
    last[:] = [ext, filters, len(filters), first, key]
    return key


def _float_state(filters: list) -> Any:
    err = np.geterr()
    err_key = None if all(v in _QUIET for v in err.values()) else tuple(sorted(err.items()))
    errors = tuple(filters) if any(f[0] == "error" for f in filters) else None
    return None if err_key is None and errors is None else (err_key, errors)


@contextlib.contextmanager
def float_context(err: dict) -> Any:
    """NumPy's error state ``err`` (see :class:`Entry`) and, under its key ``filters``, the
    warnings filters an op was recorded in."""
    filters = err.get("filters")
    with np.errstate(**{k: v for k, v in err.items() if k != "filters"}):
        if filters is None:
            yield
            return
        with warnings.catch_warnings():
            warnings.filters[:] = filters
            getattr(warnings, "_filters_mutated", lambda: None)()  # (its registry's cache)
            yield


def _layout(a: np.ndarray) -> tuple:
    return (a.__array_interface__["data"][0], a.shape, a.strides, a.dtype.str)


# (the modules that hand values around without being what the user called)
_MACHINERY = frozenset({"yaad.core.tensor", "yaad.core.op", "yaad.bindings.tensor_methods",
                        "yaad.bindings.numpy_protocols"})


def user_location() -> str:
    """``file:line`` of the innermost frame outside yaad (for messages), and the yaad
    function called there when the value was read inside it (``inside yaad.ops.x.f``)."""
    f = sys._getframe(1)
    inside = None
    while f is not None:
        mod = f.f_globals.get("__name__", "")
        if not (mod == "yaad" or mod.startswith("yaad.")):
            where = f"{f.f_code.co_filename}:{f.f_lineno}"
            return where if inside is None else f"{where}, inside {inside}"
        if mod not in _MACHINERY and not mod.startswith("yaad.compiled"):
            inside = f"{mod}.{f.f_code.co_name}"
        f = f.f_back
    return "?"


def _rng_states() -> tuple:
    return np.random.get_state(), random.getstate()


def _same_rng(a: tuple, b: tuple) -> bool:
    (na, pa), (nb, pb) = a, b
    return (pa == pb and na[0] == nb[0] and na[2:] == nb[2:]
            and np.array_equal(na[1], nb[1]))


# ---- the recorder -----------------------------------------------------------------------

GUARD_VALUE = {
    "bool": bool, "float": float, "int": int, "complex": complex,
    "index": operator.index, "item": item,
}

# What each public read that is not a guard does, for the message.
_READS = {
    "data": "x.data (a tensor's value handed to Python as an array)",
    "numpy": "x.numpy() (a tensor's value handed to Python as an array)",
    "array": "numpy.asarray(x) (or another conversion of a tensor to NumPy)",
    "tolist": "x.tolist()",
    "pickle": "pickling or copy.deepcopy of a tensor (the copy holds the value itself)",
    "repr": "repr() or str() of a tensor (printing it)",
    "grad": "reading .grad inside the function",
    "set_data": "assigning to x.data",
    "hook": "a hook registered inside the function (the replayed backward would not "
            "call it)",
    "retain_grad": "retain_grad() inside the function (the replayed backward fills only "
                   "the inputs' .grad)",
}


# Ops whose outputs' shapes and dtypes follow from their inputs' shapes and dtypes and
# their constant arguments (NumPy's definitions), besides the elementwise ones: no shape
# guard after them. (Others may decide them from values: a mask's length, sqrtm's dtype.)
_SHAPE_OPS = ("matmul", "einsum", "sum", "mean", "prod", "reshape", "transpose",
              "swapaxes", "moveaxis", "expand_dims", "squeeze", "broadcast_to", "diagonal",
              "trace", "scatter_add", "real", "imag", "conjugate", "astype", "log_softmax",
              "softmax", "logsumexp", "max", "min", "vdot", "tensordot", "concatenate",
              "stack", "tril", "triu", "cumsum", "var", "std", "linalg.vector_norm",
              "linalg.inv", "linalg.det", "linalg.slogdet", "linalg.solve",
              "linalg.cholesky", "linalg.eigh", "linalg.svd", "linalg.qr")
_shape_op_set: set = set()


def _shape_ops() -> set:
    """The ops of ``_SHAPE_OPS`` (looked up once, by identity)."""
    if not _shape_op_set:
        _shape_op_set.update(registry[n] for n in _SHAPE_OPS if n in registry)
        _shape_op_set.update((DIAG_MM, STRONG_ZERO, TRACE_MM))
    return _shape_op_set


def _operands_only(spec: Op, refs: tuple, kwrefs: dict | None) -> bool:
    """Whether recorded values reach the op only as its differentiable operands: then the
    shapes of the outputs of an op of ``_SHAPE_OPS`` follow from the operands' shapes and
    the constants. A recorded value given as a shape, an axis or a count (a 0-d integer
    tensor in ``reshape(x, (i, -1))``) is read by the op as a number: the outputs' shapes
    are then guarded as any value-dependent op's."""
    if kwrefs and any(type(r) is Slot or type(r) is SlotTuple for r in kwrefs.values()):
        return False
    if spec.variadic:
        return True
    vjps = spec.vjps
    for i, r in enumerate(refs):
        if type(r) is SlotTuple or (type(r) is Slot and (i >= len(vjps) or vjps[i] is None)):
            return False
    return True


class Probe:
    """What a VJP rule did while probed: its items, and why it cannot be inlined."""

    __slots__ = ("items", "reasons")

    def __init__(self) -> None:
        self.items: list = []
        self.reasons: list[str] = []


def _ctx_type() -> type:
    from ..function import FunctionCtx

    return FunctionCtx


class Recorder:
    """``state.tracer`` while a function is recorded (see the module docstring).

    Slots are numbered in the order they appear: the flattened inputs first. For each slot
    the recorder keeps its value (array), the tensor that held it while recording (the
    reverse transform runs the VJP rules on these), whether a gradient can flow through
    it, and its edge (the node, or the tensor itself for a leaf), which tells a tensor of
    the same array apart from a detached copy.

    ``record_backward(recorder, outputs, grad_outputs, create_graph, inputs, capture,
    allow_unused)`` records a backward pass called while recording
    (:func:`yaad.compiled.reverse.record_backward`, built on this module).
    """

    def __init__(self, record_backward: Callable, foreign: str | None = None,
                 lazy: bool = False) -> None:
        self.record_backward = record_backward  # see backward
        # The library of the inputs when it is not NumPy (see Tree.foreign), and whether
        # its arrays are lazy (Dask: no value may be read to decide a branch, since a
        # replay would compute it to decide again).
        self.foreign = foreign
        self.lazy = lazy
        self.items: list = []
        self.target = self.items  # where new items go (a probe redirects them)
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
        self.clock = _clock[0]  # the version clock when the run began (see run)
        self.suspended = 0
        self.quiet = 0  # >0: do not note the NumPy error state (strong zeros)
        self.err0 = np.geterr()
        self.filters0 = tuple(warnings.filters)
        self.effects: list = []  # (("in", k) | ("ext", tensor), slot): accumulate .grad
        self.probe: Probe | None = None
        self.plain: dict[int, Tensor] = {}  # see rule_tensor
        self.live = False  # this recorder is state.tracer
        self.prev = None  # the tracer it replaced

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

    def as_array(self, x: Any) -> np.ndarray:
        """``np.asarray(x)`` for ``Tensor(x)`` while recording: of a recorded value held as
        a NumPy scalar (a 0-d result), the slot's value too. (A NumPy scalar has no memory
        by which to find the new array, so the tensor made from it was read as a constant
        from outside, frozen at the recording's value: a transform's 0-d gradient.)"""
        arr = np.asarray(x)
        s = self.by_array.get(id(x)) if isinstance(x, np.generic) else None
        if s is not None:
            self.register_array(arr, s)
        return arr

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
            return self.new_slot(leaf._data, leaf, ("in", k), leaf.requires_grad,
                                 leaf._node or leaf)
        return self.new_slot(leaf, None, ("in", k), False, None)

    def tensor_of(self, s: int) -> Tensor:
        """The tensor of slot ``s`` (made for slots that only held an array)."""
        t = self.tensor[s]
        if t is None:
            t = make_tensor(self.value[s])
            self.tensor[s] = t
            self.by_tensor[id(t)] = s
            self.keep.append(t)
        return t

    def rule_tensor(self, s: int) -> Tensor:
        """What a VJP rule gets for slot ``s``: its tensor when the backward is recorded
        with its graph (create_graph), else a tensor of the same value that requires no
        grad (as the arrays of a first-order backward: a rule must not take it for a
        second derivative)."""
        if state.enabled:
            return self.tensor_of(s)
        t = self.plain.get(s)
        if t is None:
            t = self.plain[s] = make_tensor(self.value[s])
            self.by_tensor[id(t)] = s
            self.keep.append(t)
        return t

    def const_slot(self, arr: Any) -> int:
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
        data = t._data
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
        shape = np.shape(data) if self.foreign is None else tuple(data.shape)
        self.target.append(Guard(s, "meta", (shape, data.dtype, t.requires_grad,
                                             node is None), user_location()))
        return s

    def ref(self, a: Any) -> Any:
        """The tape reference for argument ``a``: a slot, or ``a`` itself (a constant)."""
        if isinstance(a, Tensor):
            return Slot(self.slot_of(a))
        t = type(a)
        if t is Watched:
            return Slot(a.slot, False)
        if t is np.ndarray:
            s = self.lookup_array(a)
            return Slot(s, False) if s is not None else a
        if self.foreign is not None and is_foreign(a):
            s = self.by_array.get(id(a))
            return Slot(s, False) if s is not None else a
        if (t is tuple or t is list) and a:
            items = [self.ref(x) for x in a]
            if any(type(x) is Slot or type(x) is SlotTuple for x in items):
                return SlotTuple(items, t is list)
        if t is slice:
            # NumPy reads a slice's bounds as Python integers (``__index__``) inside the
            # op, where the recorder does not see them: read them here, as guards.
            return slice(self.index(a.start), self.index(a.stop), self.index(a.step))
        if isinstance(a, _ctx_type()):
            self.escape(f"a custom yaad.Function ({a!r} lives for one call)")
        return a

    def index(self, v: Any) -> Any:
        """``v`` as NumPy reads an integer (a slice's bound): a recorded value is read
        through a guard and becomes a constant; anything else stays as it is."""
        if isinstance(v, Tensor):
            s = self.slot_of(v)
        elif type(v) is Watched:
            s = v.slot
        elif type(v) is np.ndarray:
            s = self.lookup_array(v)
        else:
            return v
        if s is None:
            return v
        try:
            value = operator.index(self.value[s])
        except TypeError:
            return v  # (the op raises, as in eager mode)
        self.guard_slot(s, "index")
        return value

    # ---- arrays handed to Python ----

    def watched(self, arr: Any, s: int) -> Watched:
        """Slot ``s``'s value ``arr`` as Python may see it while recording."""
        return Watched(arr, s, self)

    def unwatch(self, x: Any) -> Any:
        """The array behind a :class:`Watched` (for yaad's own conversions), else ``x``."""
        return x.array if type(x) is Watched else x

    def hand_out(self, out: Any, src: Any) -> Any:
        """``out``, the recorded array ``src`` converted for Python (a transform's result),
        watched if ``src`` is recorded."""
        s = self.lookup_array(src) if hasattr(src, "dtype") else None
        if s is None or self.suspended or not self.live:
            return out
        return self.watched(out, s)

    # ---- what Python does with values ----

    def escape(self, what: str) -> None:
        """Something a replay cannot reproduce: the rest of the call runs eagerly (inside
        a probe: the probed rule is called, not inlined)."""
        if self.suspended:
            return
        if self.probe is not None:
            self.probe.reasons.append(what)
            return
        if not self.live:
            return
        self.escapes.append(f"{what} at {user_location()}")
        self.stop()

    def read(self, t: Tensor, kind: str) -> None:
        """A public read of ``t``'s value (see tensor.py): a guard, or an escape."""
        if self.suspended:
            return
        if kind in GUARD_VALUE:
            self.guard_slot(self.slot_of(t), kind)
        else:
            self.escape(_READS[kind])

    def guard_slot(self, s: int, kind: str) -> None:
        """Python looks at slot ``s`` through ``kind`` (``bool``, ``float``...)."""
        if self.suspended or not self.live:
            return
        if self.probe is not None:
            self.probe.reasons.append(f"{kind}() of a value")
            return
        if self.lazy:
            self.escape(f"{kind}() of a value of a {self.foreign} array (a replay would "
                        f"compute it to decide which path to take)")
            return
        try:
            value = GUARD_VALUE[kind](self.value[s])
        except Exception:
            return  # the conversion raises; so will the caller
        self.target.append(Guard(s, kind, value, user_location()))

    # ---- the tracer protocol (called from op.py and engine.py) ----

    def apply(self, spec: Op, args: tuple, kw: dict) -> Any:
        if self.suspended:
            return self.eager(spec, args, kw)
        refs = tuple(self.ref(a) for a in args)
        kwrefs = {k: self.ref(v) for k, v in kw.items()} if kw else None
        try:
            out = self.eager(spec, plain(args), plain(kw) if kw else kw)
        except Exception as e:
            # Eager mode raises too; if the function catches it, it decides on values.
            self.escape(f"'{spec.name}' raised {type(e).__name__} (caught by the function)")
            raise
        if not self.live:
            return out
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
            slots.append(self.new_slot(t._data, t, ("op",), t.requires_grad,
                                       node if node is not None else t))
        err = None
        if not self.quiet:
            np_err = np.geterr()
            filters = tuple(warnings.filters)
            if np_err != self.err0 or filters != self.filters0:
                # The function set them: the replay runs the op in the same state.
                err = np_err if filters == self.filters0 else {**np_err, "filters": filters}
        target = self.target
        target.append(Entry(spec, refs, kwrefs, tuple(slots), grad_in,
                            tuple(t.requires_grad for t in outs), err,
                            tuple(getattr(t._data, "dtype", None) for t in outs)))
        if not (spec.elementwise or (spec in _shape_ops() and _operands_only(spec, refs,
                                                                         kwrefs))):
            for s in slots:
                v = self.value[s]
                if hasattr(v, "shape") and hasattr(v, "dtype"):
                    if self.lazy and any(n != n for n in v.shape):  # (NaN: unknown)
                        self.escape(f"'{spec.name}' made a {self.foreign} array whose shape "
                                    f"depends on its values")
                    target.append(Guard(s, "shape", (v.shape, v.dtype), None))
        return out

    @contextlib.contextmanager
    def suspend(self) -> Any:
        """Op calls in the block run eagerly, unrecorded."""
        self.suspended += 1
        try:
            yield
        finally:
            self.suspended -= 1

    def eager(self, spec: Op, args: tuple, kw: dict) -> Any:
        """Run one op eagerly, unrecorded."""
        st = state
        self.suspended += 1
        st.modes_on = False
        try:
            return _apply(spec, args, kw)
        finally:
            self.suspended -= 1
            st.refresh()

    def backward(self, outputs: Any, grad_outputs: Any, retain_graph: Any,
                 create_graph: bool, inputs: Any = None, capture: bool = False,
                 allow_unused: bool = False) -> Any:
        """``run_backward`` while recording: the backward pass is recorded too (by
        ``self.record_backward``), or run by the engine, the call going on eagerly."""
        if self.suspended or self.probe is not None:  # inside an op or a rule
            return self.backward_eagerly("a backward pass inside an operation or a "
                                         "gradient rule", outputs, grad_outputs,
                                         create_graph, inputs, capture, allow_unused)
        if _clock[0] != self.clock:
            # An in-place change was made while recording (the call runs eagerly from the
            # next one on): the recording's slots hold the values from before it, the
            # engine's graph those after it.
            return self.backward_eagerly("a backward pass after an in-place operation",
                                         outputs, grad_outputs, create_graph, inputs,
                                         capture, allow_unused)
        return self.record_backward(self, outputs, grad_outputs, create_graph, inputs,
                                    capture, allow_unused)

    def backward_eagerly(self, what: str, *args: Any) -> Any:
        """Run the backward pass with the engine: the call goes on eagerly."""
        self.escape(what)
        st = state
        prev = st.tracer
        st.tracer = None
        st.refresh()
        try:
            return run_backward(*args[:2], None, *args[2:])
        finally:
            st.tracer = prev
            st.refresh()

    # ---- running ----

    def start(self) -> None:
        st = state
        self.prev = st.tracer
        st.tracer = self
        self.live = True
        st.refresh()

    def stop(self) -> None:
        """Stop recording: from here on the call runs eagerly."""
        if self.live:
            st = state
            st.tracer = self.prev
            self.live = False
            st.refresh()

    @contextlib.contextmanager
    def active(self) -> Any:
        """This recorder is ``state.tracer`` inside the block."""
        self.start()
        try:
            yield self
        finally:
            self.stop()

    @contextlib.contextmanager
    def probing(self) -> Any:
        """Items made inside the block go to a :class:`Probe` (a VJP rule's run)."""
        probe = Probe()
        saved = self.probe, self.target
        self.probe, self.target = probe, probe.items
        try:
            yield probe
        finally:
            self.probe, self.target = saved

    def run(self, fn: Any, args: tuple, kw: dict) -> Any:
        """Call ``fn`` with this recorder active; note what cannot be replayed."""
        clock = self.clock = _clock[0]
        rng = _rng_states()
        try:
            with self.active():
                return fn(*args, **kw)
        finally:
            if _clock[0] != clock:
                self.escapes.insert(0, "an in-place operation on a tensor (x += ..., "
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
        t = type(x)
        if t is Watched:
            s = x.slot
            src = self.src[s]
            if src[0] == "in" and self.value[s] is x.array:
                return ("IN", src[1])
            return ("A", s, isinstance(x.array, np.generic))
        if t is tuple or t is list or (isinstance(x, tuple) and hasattr(x, "_fields")):
            return ("tuple" if t is not list else "list", t, [self.output_spec(v) for v in x])
        if t is dict:
            return ("dict", list(x), [self.output_spec(v) for v in x.values()])
        # Made inside the function from constants (or from what the state check
        # watches); a constant of the recording.
        return ("C", x)


def plain_outputs(x: Any) -> Any:
    """``x`` with :class:`Watched` arrays replaced by their arrays (for the caller)."""
    t = type(x)
    if t is Watched:
        return x.array
    if t is tuple or t is list:
        return t(plain_outputs(v) for v in x)
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return t(*(plain_outputs(v) for v in x))
    if t is dict:
        return {k: plain_outputs(v) for k, v in x.items()}
    return x


def _interpret(spec: Op, args: tuple, kw: dict, k: int) -> Any:
    """Compile tracing as a mode (see ``yaad.modes.MODES``): the recorder takes every op call."""
    tracer = state.tracer
    if tracer is not None:
        return tracer.apply(spec, args, kw)
    return run_modes(spec, args, kw, k)


def _backward(call: BackwardCall, check: Any, k: int) -> Any:
    """The mode's backward hook: a recording records the backward call too."""
    tracer = state.tracer
    if tracer is not None:
        return tracer.backward(*call)
    return run_backward(*call, check=check, hook=k)


register_mode("trace", _interpret, order=40, switch="tracer", backward=_backward)
