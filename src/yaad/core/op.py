"""The one op mechanism: every differentiable function, built-in or a user's, is declared here.

An op is a forward function on arrays plus one VJP rule per differentiable input (and,
optionally, one JVP rule per input). Calling an op on tensors computes the forward on
the underlying arrays and, when a gradient is needed, records a :class:`Node`. Calling it
on plain arrays is plain NumPy: no tensor, no node.

Rule signatures (``args`` are the op's positional arguments, ``kw`` its keyword ones)::

    vjp_i(g, ans, *args, **kw) -> gradient for input i
    jvp_i(t, ans, *args, **kw) -> tangent of the output due to tangent t of input i

In ordinary backward, rules see NumPy arrays; under ``create_graph=True`` or forward mode
they see tensors. Rules written with yaad functions therefore give higher derivatives for
free. The engine, not the rule, reduces a gradient over broadcast axes, casts it to the
input's dtype (real part for a real input) and skips inputs that need no gradient.

(Here an :class:`Op` is called ``spec``, as ``op`` is the function that declares one;
elsewhere it is ``op``, as in ``node.op``.)
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Callable, Protocol, Sequence, cast, overload

import numpy as np

from ..modes.registry import run_modes, set_final
from .backend import PLAIN_TYPES, BackendError, any_foreign, is_foreign, is_inexact
from .backend import call as call_foreign
from .errors import error, with_op_name
from .grad_mode import state
from .graph import Node, ShapeDtype, new_node, shape_dtype
from .tensor import Tensor, make_tensor
from .views import note_view, note_views

ndarray = np.ndarray
_new = object.__new__

_NO_KW: dict[str, Any] = {}  # the keyword arguments of a call without any (never changed)

# Every op, by name (built-ins and users'); the tests walk it.
registry: dict[str, Op] = {}

Rule = Callable[..., Any]  # a VJP, JVP or batching rule (signatures: the module docstring)
Rules = Rule | Sequence[Rule | None] | None  # op()'s vjp= and jvp=: one rule, or one an input


if TYPE_CHECKING:  # (a type only)
    class OpFunction(Protocol):
        """The function :func:`op` returns: the op called on tensors or arrays, with the
        :class:`Op` it declares and the setters of its rules."""

        op: Op
        __name__: str
        __qualname__: str = ""  # (a value: Cython 3.3 crashes on a bare `__qualname__: str`)
        __wrapped__: Callable[..., Any]  # the forward
        defvjp: Callable[..., Any]  # defvjp(*rules) -> the rule (one) or the rules
        defjvp: Callable[..., Any]  # defjvp(*rules), the same for the JVP rules
        defbatch: Callable[[Rule], Rule]  # defbatch(rule) -> rule

        def __call__(self, *args: Any, **kw: Any) -> Any: ...


class Op:
    """The declaration of a differentiable function (see the module docstring)."""

    __slots__ = (
        "name", "forward", "vjps", "jvps", "save_args", "save_ans", "nout", "variadic",
        "elementwise", "selects", "linear", "fn", "single_output", "numpy_derivatives",
        "reads", "frees", "batch", "adds_into", "__weakref__",
    )
    name: str
    forward: Callable[..., Any]
    vjps: tuple[Rule | None, ...]
    jvps: tuple[Rule | None, ...]
    save_args: bool
    save_ans: bool
    nout: int
    variadic: bool
    elementwise: bool
    selects: bool
    linear: Sequence[int] | bool
    fn: Callable[..., Any] | None  # the public function (op()'s, an OpFunction)
    single_output: bool
    numpy_derivatives: tuple[Callable[..., Any], ...] | None
    reads: tuple[tuple[bool, ...], ...] | None
    frees: bool | Callable[[Node], bool]
    batch: Rule | str | None
    adds_into: Callable[..., Any] | None

    def __init__(self, forward: Callable[..., Any], name: str,
                 vjps: tuple[Rule | None, ...], jvps: tuple[Rule | None, ...],
                 save_args: bool, save_ans: bool, nout: int, variadic: bool,
                 elementwise: bool, selects: bool, linear: Sequence[int] | bool) -> None:
        self.forward = forward
        self.name = name
        self.vjps = vjps
        self.jvps = jvps
        self.save_args = save_args
        self.save_ans = save_ans
        # A node keeps arrays for its rules, released after backward (unless retained);
        # a node of an op that saves nothing can run backward again (as in PyTorch). An op
        # may set a function ``frees(node) -> bool`` instead: whether this node counts as
        # freed after backward (indexing, where PyTorch saves an index tensor or not).
        self.frees = bool(save_args or save_ans)
        self.nout = nout
        self.variadic = variadic
        self.elementwise = elementwise
        self.selects = selects
        self.linear = linear
        self.fn = None  # the public function, set by op()
        self.single_output = nout == 1  # the engine's specialised backward loop applies
        # For a row of the elementwise table: its derivatives bound to NumPy, so that the
        # first-order backward computes g * conj(d) without yaad's dispatch (the vjps,
        # written with yaad functions, serve create_graph and forward mode).
        self.numpy_derivatives = None
        self.reads = None  # see op(reads=): a node keeps what its needed rules read
        self.batch = None  # the batching rule for vmap (see op(batch=))
        # For an op of one differentiable input (indexing): ``adds_into(acc, g, ans, *args)``
        # adds the gradient for the input into ``acc``, its pending gradient, in place and
        # returns it; the engine calls it instead of the VJP rule when nothing else holds acc.
        self.adds_into = None

    def __repr__(self) -> str:
        return f"<yaad op {self.name}>"


@functools.lru_cache(maxsize=1024)
def positional_rules(spec: Op, n: int) -> tuple[Rule, ...]:
    """A variadic op's one rule ``rule(i, g, ...)`` as ``n`` positional rules (cached)."""
    rule = cast(Rule, spec.vjps[0])  # (a variadic op's one rule)
    return tuple(functools.partial(rule, i) for i in range(n))


def _as_rules(rules: Rules) -> tuple[Rule | None, ...]:
    if rules is None:
        return ()
    if callable(rules):
        return (rules,)
    return tuple(rules)


@overload
def op(forward: Callable[..., Any], *, vjp: Rules = None, jvp: Rules = None,
       name: str | None = None, save_args: bool = True, save_ans: bool = True, nout: int = 1,
       variadic: bool = False, elementwise: bool = False, selects: bool = False,
       linear: Sequence[int] | bool = False, reads: Sequence[Sequence[bool]] | None = None,
       batch: Rule | str | None = None) -> OpFunction: ...


@overload
def op(forward: None = None, *, vjp: Rules = None, jvp: Rules = None,
       name: str | None = None, save_args: bool = True, save_ans: bool = True, nout: int = 1,
       variadic: bool = False, elementwise: bool = False, selects: bool = False,
       linear: Sequence[int] | bool = False, reads: Sequence[Sequence[bool]] | None = None,
       batch: Rule | str | None = None) -> Callable[[Callable[..., Any]], OpFunction]: ...


def op(forward: Callable[..., Any] | None = None, *, vjp: Rules = None, jvp: Rules = None,
       name: str | None = None, save_args: bool = True, save_ans: bool = True, nout: int = 1,
       variadic: bool = False, elementwise: bool = False, selects: bool = False,
       linear: Sequence[int] | bool = False, reads: Sequence[Sequence[bool]] | None = None,
       batch: Rule | str | None = None
       ) -> OpFunction | Callable[[Callable[..., Any]], OpFunction]:
    """Declare a differentiable operation from a forward function on arrays.

    Usable as ``op(forward, vjp=..., jvp=...)`` or as a decorator, with the rules given
    later by ``f.defvjp(...)`` and ``f.defjvp(...)``.

    Parameters
    ----------
    forward : callable
        The function on NumPy arrays (any positional and keyword arguments).
    vjp : callable or sequence of callables, optional
        One rule per differentiable positional input, ``vjp_i(g, ans, *args, **kw)``,
        returning the gradient for that input; ``None`` marks an input without a gradient.
        With ``variadic=True``, a single rule ``vjp(i, g, ans, *args, **kw)`` for all.
    jvp : callable or sequence of callables, optional
        Forward-mode rules, ``jvp_i(t, ans, *args, **kw)``, same layout as ``vjp``.
    name : str, optional
        The name used in errors; defaults to ``forward.__name__``.
    save_args : bool, optional
        Whether the rules read the input values / the output value. When False the
        rules get only shapes and dtypes (a :class:`ShapeDtype`) or ``None``, and memory is
        released early.
    save_ans : bool, optional
        Whether the rules read the input values / the output value. When False the
        rules get only shapes and dtypes (a :class:`ShapeDtype`) or ``None``, and memory is
        released early.
    nout : int
        Number of outputs (forward returns a tuple when more than one).
    variadic : bool
        All positional arguments are differentiable inputs (``concatenate(*xs)``).
    elementwise : bool
        The op maps positions to positions; enables the strong-zero treatment of
        gradients that were masked by a selection (see ``selects``).
    selects : bool
        The VJP places exact zeros (``where``, indexing, ``maximum``): the inputs above it
        get strong-zero gradients, so a NaN in a branch not taken stays out.
    linear : bool or sequence of int
        The op is linear in each of these inputs with the others held fixed (True: in
        all), as ``multiply``, ``matmul`` and ``reshape`` are; its JVP for such an input is
        the op applied with the tangent in that input's place, so no JVP rule needs
        writing. (``add`` is not: it is affine in each input and has its own rules.)
    reads : sequence of sequence of bool, optional
        With ``save_args``: ``reads[i][j]`` says whether the rule of input ``i`` reads
        argument ``j``. A call then keeps only the arguments read by the rules of the
        inputs that require grad (``multiply(x, c)`` keeps ``c``), so the others are
        released early and may change in place afterwards.
    batch : callable or str, optional
        How :func:`yaad.func.vmap` runs the op on a batch (also ``f.defbatch(rule)``).
        A rule ``batch(dims, *args, **kw) -> (out, out_dim)`` gets the arguments with
        their batch axis in place (``dims[i]``: its position in argument ``i``, or None
        for an argument without one) and returns the op's result on the whole batch and
        the position of the batch axis in it (a tuple of them for several outputs).
        ``"broadcast"``: the op broadcasts over leading axes, as elementwise functions
        and stacks of matrices do (the default for ``elementwise=True``). Without a
        rule, vmap calls the op once per example, with a warning.

    Returns
    -------
    callable
        The op: takes tensors or arrays, returns a tensor (arrays in, arrays out).
    """
    if forward is None:
        return lambda f: op(f, vjp=vjp, jvp=jvp, name=name, save_args=save_args,
                            save_ans=save_ans, nout=nout, variadic=variadic,
                            elementwise=elementwise, selects=selects, linear=linear,
                            reads=reads, batch=batch)
    spec = Op(forward, name or forward.__name__, _as_rules(vjp), _as_rules(jvp), save_args,
              save_ans, nout, variadic, elementwise, selects, linear)
    if reads is not None and save_args:
        spec.reads = tuple(tuple(bool(r) for r in row) for row in reads)
    spec.batch = batch
    return _make_function(spec)


def _fast_arity(spec: Op) -> int:
    """1 or 2 when calls with that many positional arguments may take the fast path."""
    vjps = spec.vjps
    if spec.variadic or spec.nout != 1 or not vjps or any(v is None for v in vjps):
        return 0
    return len(vjps) if len(vjps) <= 2 else 0


def _make_function(spec: Op) -> OpFunction:
    fast = _fast_arity(spec)
    variadic = bool(spec.variadic) and spec.nout == 1

    # Calls of one or two positional arguments take the general ``apply`` specialised by
    # hand (_call1, _call2), and so do calls of an op of one input with more positional
    # arguments that are not tensors (_call_first: indexing, reshape): they run for nearly
    # every operation, where each attribute access shows in the per-op overhead (see
    # benchmarks W3, W8 and W9).
    # tests/core/test_node_paths.py checks, for every op, that they build the node and the
    # gradients ``apply`` does.
    def call(*args: Any, **kw: Any) -> Any:
        if kw or len(args) != fast:
            if fast == 1 and not kw:  # (one input and more arguments: x[idx], reshape(x, s))
                return _call_first(spec, args)
            if variadic:  # (einsum's contractions, stack, concatenate)
                return _call_variadic(spec, args, kw)
            return _call_any(spec, args, kw)
        if fast == 2:
            return _call2(spec, args)
        return _call1(spec, args)

    def _set(attr: str, rules: tuple[Any, ...]) -> Any:
        nonlocal fast
        rules = rules[0] if len(rules) == 1 and isinstance(rules[0], tuple) else rules
        setattr(spec, attr, tuple(rules))
        fast = _fast_arity(spec)
        return rules[0] if len(rules) == 1 else rules

    def defbatch(rule: Rule) -> Rule:
        spec.batch = rule
        return rule

    call.__name__ = spec.name
    call.__qualname__ = spec.name
    call.__doc__ = spec.forward.__doc__
    fn = cast("OpFunction", call)  # (the attributes below make it one)
    fn.__wrapped__ = spec.forward
    fn.op = spec
    spec.fn = fn
    fn.defvjp = lambda *rules: _set("vjps", rules)
    fn.defjvp = lambda *rules: _set("jvps", rules)
    fn.defbatch = defbatch
    registry[spec.name] = spec
    return fn


def _call_any(spec: Op, args: tuple[Any, ...], kw: dict[str, Any]) -> Any:
    """A call with keyword arguments, or not of the op's fast arity."""
    for a in args:
        if isinstance(a, Tensor):
            return apply(spec, args, kw)
    if kw:
        for v in kw.values():
            if isinstance(v, Tensor):
                return apply(spec, args, kw)
    return _call_plain(spec, args, kw)


def _call2(spec: Op, args: tuple[Any, ...]) -> Any:
    """``apply`` for two positional arguments, each a tensor, a number or a NumPy array."""
    x, y = args
    xt = isinstance(x, Tensor)
    yt = isinstance(y, Tensor)
    if not (xt or yt):
        if type(x) not in _NATIVE or type(y) not in _NATIVE:
            return _call_plain(spec, args, {})
        return spec.forward(x, y)
    st = state
    if st.modes_on:
        return run_modes(spec, args, {})
    xd = x._data if xt else x
    yd = y._data if yt else y
    if type(xd) not in _NATIVE or type(yd) not in _NATIVE:
        if not (xt and yt):  # (numbers and NumPy arrays are fine)
            _refuse_object_operand(spec, y if xt else x)
        return apply(spec, args, {})  # lists, objects, other libraries' arrays
    try:
        ans = spec.forward(xd, yd)
    except Exception as e:
        raise with_op_name(e, spec.name) from e
    node = None
    rec = st.enabled
    if rec:
        px = (x._node or x) if xt and x.requires_grad else None
        py = (y._node or y) if yt and y.requires_grad else None
        if (px is not None or py is not None) and (spec.elementwise or ans.dtype.kind in "fc"):
            node = _record(spec, (xd, yd), None, ans, (px, py))
    # An op that saves no input may return a view of one (reshape, real); only those look
    # at the output's memory. (Binary elementwise ops never return views.)
    return _output(spec, args, ans, node, rec, not spec.save_args and not spec.elementwise)


def _call1(spec: Op, args: tuple[Any, ...]) -> Any:
    """``apply`` for one positional argument, a tensor, a number or a NumPy array."""
    x = args[0]
    if not isinstance(x, Tensor):
        return spec.forward(x) if type(x) in _NATIVE else _call_plain(spec, args, {})
    st = state
    if st.modes_on:
        return run_modes(spec, args, {})
    xd = x._data
    if type(xd) not in _NATIVE:
        return apply(spec, args, {})
    try:
        ans = spec.forward(xd)
    except Exception as e:
        raise with_op_name(e, spec.name) from e
    node = None
    rec = st.enabled
    if rec and x.requires_grad and (spec.elementwise or ans.dtype.kind in "fc"):
        node = _record(spec, (xd,), None, ans, (x._node or x,))
    return _output(spec, args, ans, node, rec, not spec.save_args and type(ans) is ndarray)


def _call_first(spec: Op, args: tuple[Any, ...]) -> Any:
    """``apply`` for an op of one input (``_fast_arity`` 1) called with more positional
    arguments: the input a tensor of NumPy data, the others (an index, a shape, axes) of
    types that are never another library's array, or tuples of those. Anything else takes
    the general path."""
    x = args[0]
    if not isinstance(x, Tensor):
        return _call_any(spec, args, {})
    n = len(args)
    for i in range(1, n):
        a = args[i]
        if type(a) in PLAIN_TYPES:
            continue
        if type(a) is not tuple:
            return _call_any(spec, args, {})
        for v in a:  # (an index: integers, slices, index arrays; not tensors)
            if type(v) not in PLAIN_TYPES:
                return _call_any(spec, args, {})
    st = state
    if st.modes_on:
        return run_modes(spec, args, {})
    xd = x._data
    if type(xd) is not ndarray:
        return apply(spec, args, {})
    arrays = (xd,) + args[1:]
    ans = _forward(spec, arrays, None)
    array = type(ans) is ndarray
    node = None
    rec = st.enabled
    if rec and x.requires_grad and (ans.dtype.kind in "fc" if array else is_inexact(ans)):
        parents: Any = [None] * n
        parents[0] = x._node or x
        node = _record(spec, arrays, None, ans, tuple(parents))
    return _output(spec, args, ans, node, rec, not spec.save_args and array)


def _forward(spec: Op, arrays: tuple[Any, ...], kw: dict[str, Any] | None) -> Any:
    """``spec``'s forward on NumPy operands (the fast paths'): its error named by the op,
    an object array refused unless every operand allows it."""
    try:
        ans = spec.forward(*arrays, **kw) if kw else spec.forward(*arrays)
    except Exception as e:
        raise with_op_name(e, spec.name) from e
    if type(ans) is ndarray and ans.dtype.hasobject:
        for a in arrays:
            _refuse_object_operand(spec, a)
    return ans


def _call_variadic(spec: Op, args: tuple[Any, ...], kw: dict[str, Any]) -> Any:
    """``apply`` for a variadic op of one output whose arguments are each a tensor of
    NumPy data, a NumPy array or of a type that is never another library's array
    (einsum's subscripts, stack's axis; no tensor among the keywords). Anything else
    takes the general path."""
    if kw:
        for v in kw.values():
            if type(v) not in PLAIN_TYPES:
                return _call_any(spec, args, kw)
    n = len(args)
    arrays: Any = list(args)
    tensors = False
    for i in range(n):
        a = args[i]
        if isinstance(a, Tensor):
            a = arrays[i] = a._data
            if type(a) is not ndarray:  # (another library's array: the general path)
                return apply(spec, args, kw)
            tensors = True
        elif type(a) not in PLAIN_TYPES:
            return _call_any(spec, args, kw)
    if not tensors:
        return _call_plain(spec, args, kw)
    st = state
    if st.modes_on:
        return run_modes(spec, args, kw)
    arrays = tuple(arrays)
    ans = _forward(spec, arrays, kw)
    array = type(ans) is ndarray
    node = None
    rec = st.enabled
    if rec and (ans.dtype.kind in "fc" if array else is_inexact(ans)):
        parents: Any = None
        for i in range(n):
            a = args[i]
            if isinstance(a, Tensor) and a.requires_grad:
                if parents is None:
                    parents = [None] * n
                parents[i] = a._node or a
        if parents is not None:
            node = _record(spec, arrays, kw, ans, tuple(parents))
    out = _new(Tensor)
    out._data = ans
    out._node = node
    out.requires_grad = node is not None
    if not spec.save_args and array and ans.base is not None:
        note_view(spec, args, kw, out, None, rec)
    return out


def _output(spec: Op, args: tuple[Any, ...], ans: Any, node: Node | None, rec: bool,
            views: bool) -> Any:
    """The tensor of a fast path's result ``ans``, noted as a view where it may be one."""
    out = _new(Tensor)
    out._data = ans
    out._node = node
    out.requires_grad = node is not None
    if views and ans.base is not None:
        note_view(spec, args, _NO_KW, out, None, rec)
    return out


_SEQUENCES = (list, tuple)
_NUMBERS = (int, float, complex, bool)
# What the specialised paths take as is: numbers and NumPy arrays. Anything else (lists,
# another library's array: see yaad.backend) goes through the general path.
_NATIVE = frozenset([ndarray, *_NUMBERS, *set(np.sctypeDict.values())])


def _refuse_object_operand(spec: Op, v: Any) -> None:
    """Raise if ``v``, the operand of ``spec`` next to a tensor, is an object NumPy can
    only hold as one Python object (a SciPy sparse matrix, a dict): the result would be
    an array of dtype object, not numbers."""
    if (type(v) in _NUMBERS or isinstance(v, (np.ndarray, np.generic)) or type(v) in _SEQUENCES
            or is_foreign(v)):
        return
    if np.asarray(v).dtype.hasobject:
        hint = (" Wrap a SciPy sparse matrix first: theta * yaad.sparse.asarray(H) "
                "(see docs/errors.md#sparse-operand)."
                if hasattr(v, "tocsr") else " Convert it to an array first.")
        raise error("object-operand", name=spec.name, type=type(v).__name__, hint=hint)


# An op call with no tensor argument: the forward on the arguments, unless one of them is a
# list holding tensors; yaad.ops.shape, which declares ``stack`` (an op, above this
# module), sets the call that stacks those.
def _call_plain(spec: Op, args: tuple[Any, ...], kw: dict[str, Any]) -> Any:
    return spec.forward(*args, **kw)


def register_plain_call(fn: Callable[..., Any]) -> None:
    """Set the call of an op on arguments none of which is a tensor."""
    global _call_plain
    _call_plain = fn


def _kw_arrays(spec: Op, kw: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for k, v in kw.items():
        if isinstance(v, Tensor):
            if v.requires_grad and state.enabled:
                raise error("keyword-tensor", name=spec.name, k=k)
            v = v._data
        out[k] = v
    return out


def apply(spec: Op, args: tuple[Any, ...], kw: dict[str, Any]) -> Any:
    """Run ``spec`` on ``args`` (some of them tensors), recording a node if needed."""
    if state.modes_on:
        return run_modes(spec, args, kw)
    # One pass over the arguments: their arrays, and whether any may be another library's
    # (a loop, not comprehensions and any_foreign: every indexing, reshape and einsum
    # call runs it).
    n = len(args)
    arrays: Any = list(args)
    plain = True  # every argument of a type that is never another library's array
    lists = spec.elementwise
    for i in range(n):
        a = args[i]
        if isinstance(a, Tensor):
            a = arrays[i] = a._data
        elif type(a) is tuple:
            a = arrays[i] = _tuple_arrays(a)
            if plain:
                for x in a:
                    if type(x) not in PLAIN_TYPES:
                        plain = False
                        break
            continue
        elif lists and type(a) is list:
            # an operand given as a list is an array (as NumPy takes it): its rules read it so
            a = arrays[i] = np.asarray(a)
        if plain and type(a) not in PLAIN_TYPES:
            plain = False
    arrays = tuple(arrays)
    if kw:
        kw = _kw_arrays(spec, kw)
    try:
        ans = (call_foreign(spec, arrays, kw) if not plain and any_foreign(arrays) else
               spec.forward(*arrays, **kw))
    except BackendError:
        raise
    except Exception as e:
        raise with_op_name(e, spec.name) from e
    if isinstance(ans, ndarray) and ans.dtype.hasobject:
        for a in arrays:
            _refuse_object_operand(spec, a)
    rec = state.enabled
    node = None
    if rec:
        vjps = spec.vjps
        variadic = spec.variadic
        parents: Any = None  # (the edges: see graph.Node; a list once one is found)
        for i in range(n):
            a = args[i]
            if isinstance(a, Tensor) and a.requires_grad:
                if variadic or (i < len(vjps) and vjps[i] is not None):
                    if parents is None:
                        parents = [None] * n
                    parents[i] = a._node or a
                elif vjps:
                    raise error("no-rule", name=spec.name, i=i, shape=a.shape, dtype=a.dtype)
        if parents is not None:
            node = _record(spec, arrays, kw, ans, tuple(parents))
    out = _wrap_outputs(spec, ans, node)
    if not spec.save_args:
        if spec.nout != 1:
            note_views(spec, args, kw, out, rec)
        elif getattr(ans, "base", None) is not None:
            note_view(spec, args, kw, out, None, rec)
    return out


def _tuple_arrays(a: tuple[Any, ...]) -> tuple[Any, ...]:
    """A tuple argument (an index such as ``(rows, t)``) with its tensors as arrays: the
    tensors stay op arguments, so a compiled replay passes their new values."""
    for x in a:
        if isinstance(x, Tensor):
            return tuple([x._data if isinstance(x, Tensor) else x for x in a])
    return a


def _record(spec: Op, arrays: tuple[Any, ...], kw: dict[str, Any] | None, ans: Any,
            parents: tuple[Any, ...]) -> Node:
    """The node of a call of ``spec``: what it saves, decided here for every path of the
    op call (with :func:`_kept`, argument by argument).

    ``arrays`` are the call's arguments (tensors as their data), ``parents`` the edges of
    the inputs that require grad (None for the others). The node keeps what the rules
    of those inputs read: the arguments (``save_args``; with ``reads``, only those that
    the rules which run read), and the output (``save_ans``).
    """
    if not spec.save_args or (spec.reads is not None and _some_none(parents)):
        n = len(arrays)  # (one tuple, no list, for the usual one or two arguments)
        if n == 2:
            arrays = (_kept(spec, arrays, 0, parents, ans), _kept(spec, arrays, 1, parents, ans))
        elif n == 1:
            arrays = (_kept(spec, arrays, 0, parents, ans),)
        else:  # (a loop: a comprehension would make its variables cells on every call)
            kept = []
            for j in range(n):
                kept.append(_kept(spec, arrays, j, parents, ans))
            arrays = tuple(kept)
    if spec.save_ans:
        saved = ans
    elif spec.nout == 1:
        saved = None
    else:
        saved = tuple(ShapeDtype(np.shape(a), a.dtype) for a in ans)
    return new_node(spec, arrays, kw or None, saved, parents)


def _some_none(parents: tuple[Any, ...]) -> bool:
    """Whether an input does not require grad (the loop: no generator on the hot path)."""
    for p in parents:
        if p is None:
            return True
    return False


def _kept(spec: Op, arrays: tuple[Any, ...], j: int, parents: tuple[Any, ...], ans: Any) -> Any:
    """What a node that does not keep all its arguments keeps of argument ``j``: its value
    where a rule that runs reads it (``reads``), an argument that is not an input (an
    axis, an index) as it is, else the input's shape and dtype (a :class:`ShapeDtype`,
    for the engine's broadcast reduction and cast) or None where no rule needs even that
    (an elementwise op's input that needs no gradient, or has the output's shape and
    dtype)."""
    a = arrays[j]
    if spec.save_args:
        reads = spec.reads
        assert reads is not None  # (a node keeps part of its arguments: _record)
        for i in range(len(parents)):
            if parents[i] is not None and reads[i][j]:
                return a
    elif not (spec.variadic or (j < len(spec.vjps) and spec.vjps[j] is not None)):
        return a
    elif spec.elementwise and parents[j] is None:
        return None
    if type(a) is not ndarray and not hasattr(a, "dtype"):
        return a
    if spec.elementwise and a.shape == ans.shape and a.dtype is ans.dtype:
        return None
    return shape_dtype(a.shape, a.dtype)


def _wrap_outputs(spec: Op, ans: Any, node: Node | None) -> Any:
    if spec.nout == 1:
        diff = node is not None and (ans.dtype.kind in "fc" if type(ans) is ndarray
                                     else is_inexact(ans))
        return make_tensor(ans, node if diff else None, diff)
    outs = []
    for i, a in enumerate(ans):
        diff = node is not None and is_inexact(a)
        outs.append(make_tensor(a, (node, i) if diff else None, diff))
    return tuple(outs)


# A rule's result ``t * g`` may be written into ``t`` when ``t`` is a temporary nothing else
# holds (the engine and the elementwise rules do so for large arrays: one temporary fewer).
IN_PLACE_SIZE = 1 << 16  # elements: below this, reusing a temporary's memory saves nothing


def fits_into(t: Any, g: Any) -> bool:
    """Whether ``t * g`` has ``t``'s shape and dtype (so it can be computed in place)."""
    gshape = np.shape(g)
    if len(gshape) > t.ndim or not t.flags.writeable or isinstance(g, Tensor):
        return False
    if any(a != 1 and a != b for a, b in zip(gshape[::-1], t.shape[::-1])):
        return False
    same: bool = np.result_type(t, g) == t.dtype
    return same


set_final(apply)  # (the ordinary call ends the mode interpreters' chain)
