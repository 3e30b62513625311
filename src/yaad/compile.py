"""``yaad.compile``: record a function once, replay its forward and backward fast.

See ``docs/compile.md``. The machinery is in :mod:`yaad.compiled`.
"""

from __future__ import annotations

import functools
import warnings
from typing import Any, Callable

import numpy as np

from .compiled import fused as fused_backend
from .compiled.program import MISS, End, Tree
from .compiled.reverse import record_backward
from .compiled.rewrite import rewrite
from .compiled.state import TooMuchState, watch
from .compiled.tape import Recorder, float_state, outcome_key, plain_outputs
from .core.backend import is_foreign
from .core.grad_mode import state
from .core.tensor import Tensor

__all__ = ["compile", "Compiled", "CompileWarning"]


MAX_SIGNATURES = 64  # recorded signatures kept per compiled function


class CompileWarning(UserWarning):
    """A compiled function runs eagerly for some inputs, and why."""

    def __str__(self) -> str:
        return f"{super().__str__()} (see docs/errors.md#compile-eager)"


class _Eager(Exception):
    pass


_MISSING = object()


_NUMBERS = (int, float, complex, bool, np.generic)


def _valued(x: Any) -> bool:
    """Whether ``x`` is a tensor with an array value: a subclass that replaces the data
    slot by its own descriptor (``yaad.sparse.SparseTensor``, a sum of sparse and
    matrix-free terms) is an object argument, watched through its attributes."""
    return isinstance(x, Tensor) and type(x)._data is _DATA_SLOT


_DATA_SLOT = Tensor._data


def _flat(x: Any, leaves: list[Any], objects: list[Any]) -> Any:
    """The signature of argument ``x``; its tensors and arrays go to ``leaves``, other
    objects (a model passed in) to ``objects`` (the state check watches inside them)."""
    if _valued(x):
        leaves.append(x)
        d = x._data
        return (d.shape, d.dtype, x.requires_grad, x._node is None, d.__class__)
    if isinstance(x, np.ndarray):
        leaves.append(x)
        return (x.shape, x.dtype)
    if is_foreign(x):  # another library's array (its class: Dask's dtypes are NumPy's)
        leaves.append(x)
        return (tuple(x.shape), x.dtype, x.__class__)
    t = type(x)
    if t is tuple or t is list:
        return (t, tuple([_flat(v, leaves, objects) for v in x]))
    if t is dict:
        return (t, tuple([(k, _flat(v, leaves, objects)) for k, v in x.items()]))
    if isinstance(x, _NUMBERS):
        return outcome_key(x)  # by bits: -0.0 is not 0.0
    try:
        hash(x)
    except TypeError:
        raise _Eager(f"an argument of type {t.__name__} is neither a tensor, an array, a "
                     f"tuple, list or dict of them, nor hashable") from None
    if not isinstance(x, (str, bytes, type(None))):
        objects.append(x)
    if isinstance(x, _model_types):  # a model passed in: its train/eval mode matters
        model: Any = x
        return (t, x, tuple([m.training for m in model.modules()]))
    return (t, x)


def _guard(args: tuple[Any, ...], enabled: bool, call: Callable[..., Any]
           ) -> Callable[..., Any]:
    """``replay(args)``: ``call(args)`` (a tree's replay) if a call has the signature of
    this one (no mode on; tensor arguments: the same classes, shapes, dtypes,
    ``requires_grad``, leaf or not, distinct objects; the same grad mode, the default
    floating-point state), else ``MISS``, as one function of straight-line code. Stricter
    than the signature (a class and a dtype by identity): a call it refuses takes the
    general path."""
    from .compiled.codegen import Namespace, build

    ns = Namespace()
    ns.env.update(_float_state=float_state, _st=state, _call=call, MISS=MISS)
    n = len(args)
    names = ", ".join(f"a{k}" for k in range(n)) + ","
    lines = [f"    if _st.modes_on or _st.enabled is not {enabled!r} or len(args) != {n}:",
             "        return MISS",
             f"    {names} = args"]
    for k, a in enumerate(args):
        d = a._data
        lines += [f"    if a{k}.__class__ is not {ns.name(a.__class__, 'C')}:",
                  "        return MISS",
                  f"    d = a{k}._data",
                  f"    if (d.__class__ is not {ns.name(d.__class__, 'D')} or d.dtype is not "
                  f"{ns.name(d.dtype, 'T')} or d.shape != {tuple(d.shape)!r}",
                  f"            or a{k}.requires_grad is not {a.requires_grad!r}"
                  f" or (a{k}._node is None) is not {a._node is None!r}):",
                  "        return MISS"]
    if 1 < n <= 4:
        pairs = [f"a{i} is a{j}" for i in range(n) for j in range(i + 1, n)]
        lines += [f"    if {' or '.join(pairs)}:", "        return MISS"]
    elif n > 4:
        lines += [f"    if len(set(map(id, args))) != {n}:", "        return MISS"]
    lines += ["    if _float_state() is not None:", "        return MISS",
              "    return _call(args)"]
    return build("replay_last", "args", lines, ns)  # type: ignore[no-any-return]


# The classes of models whose train/eval mode matters (yaad.nn.Module, registered by
# yaad.nn, which sits above compile).
_model_types: tuple[type, ...] = ()


def register_model_type(cls: type) -> None:
    """Treat instances of ``cls`` (with ``training`` and ``modules()``, as
    :class:`yaad.nn.Module`) as models whose train/eval mode is part of a signature."""
    global _model_types
    _model_types = (*_model_types, cls)


def _swap(x: Any, views: dict[Any, Any]) -> Any:
    """``x`` with the arrays in ``views`` (by id) replaced, through tuples, lists, dicts."""
    if type(x) is np.ndarray:
        return views.get(id(x), x)
    t = type(x)
    if t is tuple or t is list:
        return t(_swap(v, views) for v in x)
    if t is dict:
        return {k: _swap(v, views) for k, v in x.items()}
    return x


def _modules_of(fn: Callable[..., Any]) -> list[Any]:
    """The yaad.nn modules the function reaches directly (their train/eval mode is part of
    the signature, so that switching it back and forth keeps both recordings)."""
    found: list[Any] = []
    func = getattr(fn, "__func__", fn)
    cands = [fn, getattr(fn, "__self__", None)]
    for c in getattr(func, "__closure__", None) or ():
        try:
            cands.append(c.cell_contents)
        except ValueError:
            pass
    code = getattr(func, "__code__", None)
    glob = getattr(func, "__globals__", None) or {}
    cands += [glob.get(n) for n in (code.co_names if code is not None else ())]
    for c in cands:
        if isinstance(c, _model_types) and all(c is not m for m in found):
            found.append(c)
    return found


def _foreign_array(leaves: list[Any]) -> Any:
    """The first input that is another library's array (None: NumPy's only): a replay for
    this signature calls each op as eager mode does on such arrays."""
    for x in leaves:
        d = x._data if isinstance(x, Tensor) else x
        if is_foreign(d):
            return d
    return None


class Compiled:
    """A function compiled by :func:`compile`; call it like the function.

    Made by :func:`compile`, with its parameters; ``Compiled(fn, fused="native")`` also
    makes a one-path program of small arrays one native program, however short and
    whether or not it beats NumPy, for callers that run it in numba loops of their own
    (:meth:`native`; ``yaad.integrate``'s solver).

    Attributes
    ----------
    stats : dict
        Counts of calls by how they ran: ``replayed``, ``recorded``, ``eager``.
    """

    __yaad_code__ = True  # (the state check does not watch a compiled function's caches)

    def __init__(self, fn: Callable[..., Any], verify: bool = True, max_recordings: int = 32,
                 warn: bool = True, fused: bool | str | None = None) -> None:
        if not callable(fn):
            raise TypeError(f"yaad.compile: expected a function, got {type(fn).__name__}")
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.verify = verify
        # (fused="native": a one-path program of small arrays is always a native program,
        # however short and whether or not it is faster, see native)
        self.native_only = fused == "native"
        self.fused = fused_backend.available() if fused in (None, "native") else bool(fused)
        self.max_recordings = max_recordings
        self.warn = warn
        self._trees: dict[Any, Any] = {}
        # replay(args) of the last call replayed on tensor arguments (see _guard): the next
        # call with the same signature skips building and hashing it
        self._last: Callable[..., Any] | None = None
        self._eager: dict[Any, Any] = {}  # signature -> why this signature runs eagerly
        self._restarts: dict[Any, Any] = {}  # signature -> times the state it reads changed
        self.stats = {"replayed": 0, "recorded": 0, "eager": 0}
        self._warned_many = False
        self._modules = _modules_of(fn)
        self._name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", "f")

    def __repr__(self) -> str:
        return f"<yaad.compile of {self._name}>"

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        if obj is None:
            return self
        return functools.partial(self, obj)

    # ---- the signature ----

    def _signature(self, args: tuple[Any, ...], kw: dict[Any, Any]) -> tuple[Any, ...]:
        leaves: list[Any] = []
        objects: list[Any] = []
        parts: list[Any] = [state.enabled, float_state()]
        for a in args:
            if _valued(a):
                leaves.append(a)
                d = a._data
                parts.append((d.shape, d.dtype, a.requires_grad, a._node is None, d.__class__))
            else:
                parts.append(_flat(a, leaves, objects))
        if kw:
            for k in sorted(kw):
                parts.append((k, _flat(kw[k], leaves, objects)))
        if len(leaves) > 1 and len({id(x) for x in leaves}) != len(leaves):
            ids = [id(x) for x in leaves]
            parts.append(("same", tuple(ids.index(i) for i in ids)))
        if self._modules:
            parts.append(tuple([m.training for r in self._modules for m in r.modules()]))
        return tuple(parts), leaves, objects

    # ---- calling ----

    def __call__(self, *args: Any, **kw: Any) -> Any:
        last = self._last
        if last is not None and not kw:
            # The common case, specialised: tensor arguments only, with the signature of
            # the last replay (checked by generated code, which replays them; see _guard).
            try:
                out = last(args)
            except Exception:
                out = MISS  # (the general path below explains)
            if out is not MISS:
                self.stats["replayed"] += 1
                return out
        st = state
        if st.modes_on:  # forward mode, an outer recording, anomaly detection
            return self.fn(*args, **kw)
        if not kw and not self._modules:
            # Tensor arguments only: their signature looked up without the general
            # path's flattening. (Every change of self._trees and of a tree's replay
            # happens below: the last replay is forgotten first.)
            self._last = None
            parts: list[Any] = [st.enabled, float_state()]
            for a in args:
                if a.__class__ is not Tensor and not _valued(a):
                    break
                d = a._data  # (its class too: a CuPy or Dask array has NumPy's dtypes)
                parts.append((d.shape, d.dtype, a.requires_grad, a._node is None, d.__class__))
            else:
                n = len(args)
                if n < 2 or (args[0] is not args[1] if n == 2 else
                             len(set(map(id, args))) == n):
                    tree = self._trees.get(tuple(parts))
                    if tree is not None and tree.call is not None:
                        try:  # (the call checks the state first)
                            out = tree.call(args)
                        except Exception:
                            out = MISS  # the general path below explains
                        if out is not MISS:
                            self.stats["replayed"] += 1
                            if parts[1] is None:
                                self._last = _guard(args, parts[0], tree.call)
                            return out
        try:
            key, leaves, objects = self._signature(args, kw)
        except _Eager as e:
            return self._run_eager(None, str(e), args, kw)
        tree = self._trees.get(key)
        if tree is not None and tree.call is not None:
            try:
                out = tree.call(leaves)
            except Exception as e:
                # A value-dependent failure (a singular matrix, say): eager mode raises it
                # with the op's name. If eager mode succeeds, the replay was at fault.
                out = self.fn(*args, **kw)
                return self._run_eager(key, f"its replay failed ({type(e).__name__}: "
                                            f"{e})", None, out)
            if out is not MISS:
                self.stats["replayed"] += 1
                return out
        if tree is not None and tree.state is not None and not tree.state.ok():
            # What the function reads besides its arguments changed: record anew.
            del self._trees[key]
            tree = None
            n = self._restarts[key] = self._restarts.get(key, 0) + 1
            if n > self.max_recordings:
                return self._run_eager(key, f"what it reads besides its arguments (closure "
                                            f"cells, globals, attributes, items, arrays "
                                            f"they hold) changed {n} times", args, kw)
        if tree is None:
            # (a signature that runs eagerly in the default floating-point state runs
            # eagerly, silently, in the others too: key[1] is that state, see float_state)
            if key in self._eager or (key[1] is not None
                                      and (key[0], None, *key[2:]) in self._eager):
                self.stats["eager"] += 1
                return self.fn(*args, **kw)
            self._make_room()
            tree = self._trees[key] = Tree([isinstance(x, Tensor) for x in leaves],
                                           2 if self.verify else 1, _foreign_array(leaves))
            try:
                tree.state = watch(self.fn, objects)  # type: ignore[assignment]  # (Tree untyped)
            except TooMuchState:
                return self._run_eager(key, "it reaches too many objects besides its "
                                            "arguments to check them on every call; pass "
                                            "what it uses as arguments", args, kw)
        return self._record(key, tree, args, kw, leaves)

    def _make_room(self) -> None:
        """Keep at most ``MAX_SIGNATURES`` recorded signatures (the oldest go)."""
        if len(self._trees) + len(self._eager) < MAX_SIGNATURES:
            return
        if self.warn and not self._warned_many:
            self._warned_many = True
            warnings.warn(f"yaad.compile({self._name}): {MAX_SIGNATURES} different input "
                          f"signatures so far (shapes, dtypes, Python values among the "
                          f"arguments); each is recorded anew. Pass values that change "
                          f"from call to call as tensors or arrays.",
                          CompileWarning, stacklevel=4)
        for cache in (self._trees, self._eager):
            while cache and len(self._trees) + len(self._eager) >= MAX_SIGNATURES:
                cache.pop(next(iter(cache)))

    def _run_eager(self, key: Any, why: str, args: tuple[Any, ...] | None, kw: Any) -> Any:
        """Run eagerly from now on for this signature (``args`` None: ``kw`` is the result
        already computed)."""
        if key is not None:
            self._trees.pop(key, None)
            self._eager[key] = why
        self.stats["eager"] += 1
        if self.warn:
            warnings.warn(f"yaad.compile({self._name}): {why}; it runs eagerly for these "
                          f"inputs", CompileWarning, stacklevel=3)
        return kw if args is None else self.fn(*args, **kw)

    def _record(self, key: Any, tree: Tree, args: tuple[Any, ...], kw: dict[Any, Any],
                leaves: list[Any]) -> Any:
        self.stats["recorded"] += 1
        rec = Recorder(record_backward, tree.foreign, tree.lazy)
        views = {}
        for k, x in enumerate(leaves):
            rec.add_input(k, x)
            if not isinstance(x, Tensor):
                # What the function may see of an array argument (see compiled/watched.py).
                views[id(x)] = rec.watched(x, k)
        if views:
            plain_args, plain_kw = args, kw
            args = _swap(args, views)
            kw = _swap(kw, views)
        try:
            out = rec.run(self.fn, args, kw)
        except Exception as e:
            if not views:
                raise
            # Something a Watched array cannot do (memoryview, a C extension reading its
            # buffer): eager mode decides, with the arrays themselves.
            self._trees.pop(key, None)
            return self._run_eager(key, f"it raised {type(e).__name__} while recording "
                                        f"({e})", plain_args, plain_kw)
        why = None
        if rec.escapes:
            why = "it did something a recording cannot replay: " + rec.escapes[0]
        elif tree.state is not None and not tree.state.ok():
            why = ("it changes what it reads besides its arguments (a closure cell, a "
                   "global, an attribute, an item, an array they hold)")
        moved = None if why is not None or tree.foreign is not None else next(
            (v for v in rec.value if is_foreign(v)), None)
        if moved is not None:
            # The function moved values to another library (t.to(...)): its next call
            # records again, as on that library's arrays.
            tree.use_library(moved)
            return plain_outputs(out)
        if why is not None:
            result = plain_outputs(out)
        else:
            spec = rec.output_spec(out)
            result = plain_outputs(out)
            if tree.foreign is None:  # (the rewrites spell NumPy)
                rewrite(rec)
            # (where an error raises, the numba kernels would run their NumPy replay)
            fuse = self.fused and key[1] is None
            end = End(rec, spec, f"compiled {self._name}", state.enabled,
                      "native" if fuse and self.native_only else fuse)
            status = tree.insert(rec.items, end)
            tree.records += 1
            if status == "conflict":
                why = ("it ran different operations for the same inputs and the same values "
                       "seen by Python, so it depends on something that is not an argument "
                       "(random numbers, a file, the time)")
            elif tree.records > self.max_recordings:
                why = (f"it was recorded {tree.records} times (a value seen by Python, such "
                       f"as float(x) or x.item(), changes from call to call); raise "
                       f"max_recordings or compare tensors instead")
            else:
                tree.generate()
        if why is not None:
            self._trees.pop(key, None)
            self._eager[key] = why
            if self.warn:
                warnings.warn(f"yaad.compile({self._name}): {why}; it runs eagerly for "
                              f"these inputs", CompileWarning, stacklevel=3)
        return result

    def outside_tensors(self) -> list[Tensor]:
        """The tensors that its recordings read from outside its arguments (a closure, a
        global), every recorded path of every signature: what a caller that runs it on
        values (a solver) checks for one that requires grad. Calls that ran eagerly
        (``stats["eager"]``) are not covered."""
        return [t for tree in self._trees.values() for t in tree.outside()]

    def native(self, *args: Tensor) -> tuple[Any, list[int], list[int]] | None:
        """For tensor arguments: ``(program, params, outputs)`` where the replay for their
        signature is one native program (see ``Tree.native``; the function compiled with
        ``fused="native"`` and called with such arguments before), else None."""
        if state.modes_on or len({id(a) for a in args}) != len(args):
            return None
        parts: list[Any] = [state.enabled, float_state()]
        for a in args:
            if not _valued(a):
                return None
            d = a._data
            parts.append((d.shape, d.dtype, a.requires_grad, a._node is None, d.__class__))
        tree = self._trees.get(tuple(parts))
        if tree is None or (tree.state is not None and not tree.state.ok()):
            return None
        found: tuple[Any, list[int], list[int]] | None = tree.native()
        return found

    def explain(self) -> list[str]:
        """Why the function runs eagerly for some inputs (one line per signature)."""
        return list(self._eager.values())


def compile(fn: Callable[..., Any] | None = None, *, verify: bool = True,  # noqa: A001
            max_recordings: int = 32, warn: bool = True, fused: bool | None = None) -> Any:
    """Compile a function of tensors: record its operations once, then replay them.

    The first call with given input shapes and dtypes runs ``fn`` eagerly and records
    every operation and every place where Python looked at a value (``bool()``,
    ``float()``, ``int()``, ``.item()``, ``if x.sum() > 0``). Later calls replay the
    recorded forward and backward as generated straight-line NumPy code, without tensors
    or graph bookkeeping (on another library's arrays, CuPy, Dask or an array API one,
    each op in that library, as eager mode runs it; see ``docs/backends.md``). A call
    whose values would take a branch not yet recorded records the new path (paths are
    cached); what cannot be replayed faithfully (NumPy computing
    on a tensor's values, in-place operations, random numbers) makes the function run
    eagerly for those inputs, with a :class:`CompileWarning`. Every value and gradient is
    meant to be eager mode's (``tests/compiled/test_fuzz_compile.py`` checks it on random programs).

    Parameters
    ----------
    fn : callable
        A function of tensors, arrays and Python values (tuples, lists and dicts of them
        are fine) returning tensors, arrays or Python values. Usable as a decorator, with
        or without arguments.
    verify : bool
        Record a new path twice before replaying it, and fall back to eager mode if the
        two recordings differ (catches random numbers and changing globals).
    max_recordings : int
        After this many recordings for one input signature, run it eagerly.
    warn : bool
        Warn (:class:`CompileWarning`) when the function falls back to eager mode.
    fused : bool, optional
        Compile long elementwise programs (unrolled loops, large arrays) into one numba
        kernel each, and programs of small arrays (contractions, reshapes, complex
        arithmetic, small ``expm``) into native programs where they are faster than
        NumPy. None (the default): when numba is installed; it is optional.

    Returns
    -------
    Compiled
        Call it like ``fn``. Tensors it returns that need gradients support
        ``.backward()`` (accumulating into the inputs' ``.grad`` as in eager mode);
        gradients computed inside ``fn`` (``autograd.grad``, ``.backward()``,
        ``yaad.func.value_and_grad``) are compiled too.

    Examples
    --------
    >>> step = yaad.compile(lambda x1, x2: yaad.trace(x1 @ x2))
    >>> loss = step(x1, x2); loss.backward()       # x1.grad == x2.T
    """
    if fn is None:
        return lambda f: Compiled(f, verify, max_recordings, warn, fused)
    return Compiled(fn, verify, max_recordings, warn, fused)

