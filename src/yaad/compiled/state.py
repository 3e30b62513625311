"""What a compiled function reads besides its arguments, and the check that it is unchanged.

A recording holds for the state it was made in. :func:`watch` walks that state from its
*roots*: the function's closure cells, the globals its code names (nested functions and
lambdas included), its default arguments, the object of a bound method, the function,
arguments and keywords of a ``functools.partial``, the objects among the call's arguments
(a model passed in), and, the same way, the functions of the function's own module that
it reaches by name (its helpers). From the roots the walk goes into dicts, lists, tuples,
sets and the attributes of objects (``__dict__`` and ``__slots__``: a ``yaad.nn.Module``,
its submodules, parameters and buffers). The check it returns, run before every replay:

- every cell, global, dict item, list item and attribute that holds data (anything but
  a function, class or module) holds the same object as when recording;
- dicts, lists, sets and objects have the same entries (nothing added or removed);
- every NumPy array reached has the same bits: it may have been changed in place, and
  what the function derived from it with NumPy was computed when recording; another
  library's array the same values, compared in its library (a Dask array: the same graph,
  by its key, so that nothing is computed).

NumPy's error state and the warnings filters, which decide whether a floating-point error
raises (and so which branch of a ``try`` runs), are part of the signature
(``tape.float_state``). Tensors are checked by identity, and by the shape, dtype and
``requires_grad`` that Python may read without an op: the replay reads their current
values (that is how an optimizer's in-place updates are seen), and their values reach
Python only through the public read points, which a recording sees. Functions and
modules are code: rebinding one is not seen, nor is the state that library functions
and methods keep in their own modules; a class's data attributes are watched
(docs/compile.md lists what is watched and what is not).
"""

from __future__ import annotations

import functools
import pickle
import types
from typing import Any, Callable

import numpy as np

from ..core.backend import is_foreign, namespace
from ..core.lazy import is_lazy
from ..core.tensor import Tensor, make_tensor
from .codegen import Namespace, build
from .tape import same_bits, same_foreign

MAX_CHECKS = 20_000  # more than this: the function runs eagerly (with a warning)

# (type(make_tensor): the functions of yaad's hot modules, which the compiled build makes
# Cython functions, of their own type; the ops' functions among them)
_CODE = (types.FunctionType, types.BuiltinFunctionType, types.MethodType,
         types.BuiltinMethodType, types.ModuleType, type, np.ufunc,
         types.MethodWrapperType, types.WrapperDescriptorType, types.MethodDescriptorType,
         classmethod, staticmethod, property, type(make_tensor))
_SCALARS = (int, float, complex, bool, str, bytes, type(None), type(Ellipsis), slice,
            range, np.generic, np.dtype)
_MISSING = object()
_DATA_SLOT = Tensor._data  # (a subclass without an array value replaces it: see value)


_GENERATORS = (np.random.Generator, np.random.RandomState, np.random.BitGenerator)


def _rng_state(v: Any) -> bytes:
    """The state of a NumPy random generator, as bytes (its dict holds arrays)."""
    if isinstance(v, np.random.RandomState):
        return pickle.dumps(v.get_state(legacy=False))
    bits = v if isinstance(v, np.random.BitGenerator) else v.bit_generator
    return pickle.dumps(bits.state)


class TooMuchState(Exception):
    """The function reaches more objects than a check per call can afford."""


def _is_code(v: Any) -> bool:
    """Functions, classes, modules, and objects that say they are code (a compiled
    function: its caches change from call to call)."""
    return isinstance(v, _CODE) or getattr(type(v), "__yaad_code__", False)


class _Walk:
    def __init__(self, module_globals: dict | None) -> None:
        self.ns = Namespace()
        self.ns.env.update(st_rng=_rng_state, st_same=same_bits, st_same_foreign=same_foreign,
                           st_M=_MISSING)
        self.conds: list[str] = []  # each True when the state changed
        self.seen: set[int] = set()
        self.keep: list = []  # snapshots and the objects checked (their ids stay unique)
        self.globals = module_globals
        self.checks = 0

    def name(self, obj: Any, prefix: str) -> str:
        self.keep.append(obj)
        return self.ns.name(obj, "st_" + prefix)  # (the names of generated code mix)

    def check(self, cond: str) -> None:
        self.checks += 1
        if self.checks > MAX_CHECKS:
            raise TooMuchState
        self.conds.append(cond)

    # ---- what a place holds ----

    def holds(self, src: str, v: Any) -> None:
        """``src`` (source reading a cell, global, item or attribute) must still give ``v``
        (unless ``v`` is code); then walk into ``v``."""
        if not _is_code(v):
            self.check(f"{src} is not {self.name(v, 'o')}")
        self.inside(v)

    def inside(self, v: Any) -> None:
        """Walk into ``v``, code included: a class's data attributes, a function of the
        same module (a helper, a lambda kept in a list or a tuple), a bound method's
        object."""
        if isinstance(v, type):
            self.klass(v)  # (rebinding the name is code; the class's data attributes not)
        elif isinstance(v, types.FunctionType):
            self.function(v)  # a helper of the same module is walked; its rebinding is code
        elif isinstance(v, types.MethodType) or not _is_code(v):
            self.value(v)

    def value(self, v: Any) -> None:
        if isinstance(v, _SCALARS) or v is None:
            return
        key = id(v)
        if key in self.seen:
            return
        self.seen.add(key)
        self.keep.append(v)
        if isinstance(v, np.ndarray):
            o = self.name(v, "o")
            if v.nbytes <= 1 << 16 and not v.dtype.hasobject:  # (inline: a copy, a memcmp)
                self.check(f"{o}.shape != {v.shape!r} or {o}.dtype != "
                           f"{self.name(v.dtype, 'd')} or {o}.tobytes() != "
                           f"{self.name(v.tobytes(), 's')}")
            else:
                self.check(f"not st_same({o}, {self.name(v.copy(), 's')})")
        elif isinstance(v, Tensor) and type(v)._data is _DATA_SLOT:
            # Its values are read where ops use it; what Python may read without an op
            # (its shape, dtype, requires_grad: ``x * w.shape[0]``) must be as recorded.
            o = self.name(v, "o")
            meta = self.name((v._data.shape, v._data.dtype, v.requires_grad), "m")
            self.check(f"({o}._data.shape, {o}._data.dtype, {o}.requires_grad) != {meta}")
        elif isinstance(v, _GENERATORS):
            # A draw changes its state: the recording then runs eagerly, where comparing
            # two recordings misses draws that came out the same (a small mask).
            o = self.name(v, "o")
            self.check(f"st_rng({o}) != {self.name(_rng_state(v), 's')}")
        elif is_foreign(v):
            self.foreign_array(v)
        elif isinstance(v, types.MethodType):
            self.value(v.__self__)
            if isinstance(v.__func__, types.FunctionType):
                self.function(v.__func__)
        elif isinstance(v, functools.partial):
            if isinstance(v.func, types.FunctionType):
                self.function(v.func)
            else:
                self.value(v.func)
            self.value(v.args)
            self.value(v.keywords)
        elif type(v) is tuple or type(v) is frozenset:
            for x in v:
                self.inside(x)
        elif isinstance(v, dict):
            self.mapping(self.name(v, "o"), v)
        elif isinstance(v, list):
            o = self.name(v, "o")
            self.check(f"len({o}) != {len(v)}")
            for k, x in enumerate(v):
                self.holds(f"{o}[{k}]", x)
        elif isinstance(v, (set, frozenset)):
            o = self.name(v, "o")
            self.check(f"{o} != {self.name(frozenset(v), 's')}")
            for x in v:
                self.inside(x)
        elif not _is_code(v):
            self.attributes(v)

    def foreign_array(self, v: Any) -> None:
        """Another library's array: its values, compared in its library (a lazy one's
        key, which changes with its graph: ``x[i] = ...``); an object that only looks like
        one (no namespace) is walked as an object."""
        o = self.name(v, "o")
        try:
            if is_lazy(v):
                self.check(f"{o}.name != {v.name!r}")
                return
            snap = namespace(v).asarray(v, copy=True)
        except Exception:
            self.attributes(v)
            return
        self.check(f"not st_same_foreign({o}, {self.name(snap, 's')})")

    def mapping(self, src: str, d: dict) -> None:
        self.check(f"len({src}) != {len(d)}")
        for k, x in list(d.items()):
            key = self.ns.literal(k) if isinstance(k, (str, int)) else self.name(k, "k")
            self.holds(f"{src}.get({key}, st_M)", x)

    def attributes(self, v: Any) -> None:
        """An object: its class (it may be given another), its ``__dict__`` and
        ``__slots__``, and the data attributes of its classes, which ``v.name`` reads where
        the object has none of its own (one without a ``__dict__`` or ``__slots__`` is
        opaque: checked by identity and class only)."""
        o = self.name(v, "o")
        cls = type(v)
        self.check(f"{o}.__class__ is not {self.name(cls, 'c')}")
        self.klass(cls)
        d = getattr(v, "__dict__", None)
        if isinstance(d, dict):
            self.mapping(f"{o}.__dict__", d)
        for c in cls.__mro__:
            slots = c.__dict__.get("__slots__", ())
            for name in (slots,) if isinstance(slots, str) else slots:
                if name in ("__dict__", "__weakref__") or getattr(cls, name, None) is not \
                        c.__dict__.get(name):
                    continue  # (a subclass's descriptor of that name: code)
                self.holds(f"getattr({o}, {name!r}, st_M)", getattr(v, name, _MISSING))

    def klass(self, cls: type) -> None:
        """The data attributes of ``cls`` and its bases (``scale = 2.0`` in a class body,
        read as ``self.scale``), and their number (an attribute added to a class may shadow
        one of a base). Functions, descriptors and dunder names are code; the built-in
        classes hold none."""
        for c in cls.__mro__:
            if id(c) in self.seen or c.__module__ == "builtins":
                continue
            self.seen.add(id(c))
            self.keep.append(c)
            d = c.__dict__
            src = f"{self.name(c, 'c')}.__dict__"
            self.check(f"len({src}) != {len(d)}")
            for name, x in list(d.items()):
                if ((name.startswith("__") and name.endswith("__")) or _is_code(x)
                        or hasattr(type(x), "__get__")):
                    continue
                self.holds(f"{src}.get({name!r}, st_M)", x)

    # ---- functions ----

    def function(self, fn: types.FunctionType) -> None:
        """Cells, defaults and named globals of ``fn``, when it is the compiled function
        or a function of the same module."""
        if id(fn) in self.seen or (self.globals is not None
                                   and fn.__globals__ is not self.globals):
            return
        self.seen.add(id(fn))
        self.keep.append(fn)
        f = self.name(fn, "f")
        for cell in fn.__closure__ or ():
            try:
                v = cell.cell_contents
            except ValueError:  # an empty cell (assigned later)
                continue
            self.holds(f"{self.name(cell, 'c')}.cell_contents", v)
        if fn.__defaults__ is not None:
            self.holds(f"{f}.__defaults__", fn.__defaults__)
        if fn.__kwdefaults__ is not None:
            self.holds(f"{f}.__kwdefaults__", fn.__kwdefaults__)
        g = fn.__globals__
        gname = self.name(g, "g")
        for n in sorted(_names(fn.__code__)):
            v = g.get(n, _MISSING)
            if v is not _MISSING:
                self.holds(f"{gname}.get({n!r}, st_M)", v)


def _names(code: types.CodeType) -> set:
    """The global (and attribute) names a code object and the code nested in it use."""
    names = set(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names |= _names(c)
    return names


class StateCheck:
    """The check made by :func:`watch`: ``ok()`` is True while the state is unchanged;
    ``lines(fail)`` are the same checks as statements for generated code (``fail`` when
    the state changed, an exception when a cell was emptied), whose names are in
    ``env``."""

    def __init__(self, conds: list, env: dict, keep: list) -> None:
        self.conds = conds
        self.env = env
        self._keep = keep
        body = ["    try:", *self.lines("return False", "        "),
                "    except Exception:", "        return False", "    return True"]
        ns = Namespace()
        ns.env.update(env)
        self.ok = build("state_ok", "", body, ns)

    def lines(self, fail: str, indent: str = "    ") -> list[str]:
        out = []
        for c in self.conds:
            out += [f"{indent}if {c}:", f"{indent}    {fail}"]
        return out


def watch(fn: Callable, objects: list) -> StateCheck | None:
    """The check of what ``fn`` (and the object arguments ``objects``) can read besides
    its arguments; None when there is nothing to check. Raises :class:`TooMuchState`."""
    root = fn
    while isinstance(root, functools.partial):
        root = root.func
    func = getattr(root, "__func__", root)
    w = _Walk(func.__globals__ if isinstance(func, types.FunctionType) else None)
    if isinstance(func, types.FunctionType):
        w.function(func)
        if func is not fn:
            w.value(fn)  # the bound object, the partial's arguments
    else:
        w.value(fn)  # a callable object (a model): its attributes
    for x in objects:
        w.value(x)
    if not w.conds:
        return None
    return StateCheck(w.conds, w.ns.env, w.keep)
