"""The optional fused backend: a whole recorded program as one numba kernel.

Where every operation of a generated program (a forward path, or a backward pass with the
forward recomputed in front of it) is elementwise on arrays of one shape, the program is
the same computation for each element. It is compiled by numba into one loop over the
elements, each running the program on scalars: no temporaries, no Python per operation
(workloads W3, W4 and W8). Runs of repeated operations (a Python loop that was unrolled
by the recording) are rolled back into loops, so the compile time does not grow with the
number of steps. A program with anything else (a matrix product, indexing, a reduction
that is not the last thing it does) stays Python.

A kernel is kept only if it reproduces, on the recorded values, what the Python program
computed (to rounding). Without numba (it is optional) nothing changes.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from .tape import Alias, Const, Entry, Load, Slot, SlotTuple, float_state

_numba: list = []  # the module, once imported (importing it takes a while: on first use)

MAX_PERIOD = 48  # the longest block of statements rolled into a loop
MIN_REPEATS = 3


def available() -> bool:
    """Whether numba is installed (the fused backend is optional)."""
    if not _numba:
        import importlib.util

        _numba.append(True if importlib.util.find_spec("numba") else None)
    return _numba[0] is not None


def _jit() -> Any:
    if _numba[0] is True:
        import numba

        _numba[0] = numba
    return _numba[0].njit


class _Reject(Exception):
    pass


# ---- scalar spellings of elementwise ops ------------------------------------------------

def _real(dt: Any) -> bool:
    return dt is not None and dt.kind in "fiub"


_BIN = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/", "greater": ">",
        "less": "<", "greater_equal": ">=", "less_equal": "<=", "equal": "==",
        "not_equal": "!="}
_MATH = {"sin": "sin", "cos": "cos", "tan": "tan", "exp": "exp", "log": "log",
         "sqrt": "sqrt", "tanh": "tanh", "sinh": "sinh", "cosh": "cosh", "arcsin": "asin",
         "arccos": "acos", "arctan": "atan", "arcsinh": "asinh", "arccosh": "acosh",
         "arctanh": "atanh", "expm1": "expm1", "log1p": "log1p", "log10": "log10"}
_COMPLEX_OK = {"sin", "cos", "tan", "exp", "log", "sqrt", "tanh", "sinh", "cosh", "log10"}


def _scalar_src(name: str, a: list, din: list, dout: Any) -> str | None:
    """A scalar expression for op ``name`` on argument sources ``a`` (None: unknown)."""
    if name in _BIN and len(a) == 2:
        return f"({a[0]} {_BIN[name]} {a[1]})"
    if name in _MATH and len(a) == 1:
        if _real(din[0]):
            return f"math.{_MATH[name]}({a[0]})"
        if name in _COMPLEX_OK:
            return f"cmath.{_MATH[name]}({a[0]})"
        return None
    if name == "negative" and len(a) == 1:
        return f"(-{a[0]})"
    if name == "positive" and len(a) == 1:
        return a[0]
    if name == "square" and len(a) == 1:
        return f"({a[0]} * {a[0]})"
    if name == "power" and len(a) == 2:
        return f"({a[0]} ** {a[1]})"
    if name == "reciprocal" and len(a) == 1:
        return f"(1 / {a[0]})"
    if name == "absolute" and len(a) == 1:
        return f"abs({a[0]})"
    if name in ("maximum", "minimum") and len(a) == 2 and all(_real(d) for d in din):
        op = ">=" if name == "maximum" else "<="
        return f"({a[0]} if ({a[0]} {op} {a[1]} or {a[0]} != {a[0]}) else {a[1]})"
    if name == "where" and len(a) == 3:
        return f"({a[1]} if {a[0]} else {a[2]})"
    if name == "conjugate" and len(a) == 1:
        return a[0] if _real(din[0]) else f"{a[0]}.conjugate()"
    if name == "real" and len(a) == 1:
        return a[0] if _real(din[0]) else f"{a[0]}.real"
    if name == "strong_zero" and len(a) == 2:
        # (x - x is 0 for a finite x, NaN for an inf or a NaN)
        return f"(0 if {a[0]} == 0 and {a[1]} - {a[1]} != 0 else {a[1]})"
    return None


_IDENTITY = {"broadcast_to", "reshape", "expand_dims", "squeeze", "copy", "astype"}


def _dtype_name(dt: np.dtype) -> str:
    return f"np.{dt.name}" if dt.name != "bool" else "np.bool_"


def _literal(v: Any, dt: Any) -> str:
    """Source for a constant, as a scalar of dtype ``dt`` (NumPy's weak Python scalars)."""
    if isinstance(v, np.ndarray) or isinstance(v, np.generic):
        dt = v.dtype
        v = v.item() if np.size(v) == 1 else None
        if v is None:
            raise _Reject
    if isinstance(v, bool):
        return repr(v)
    if not isinstance(v, (int, float, complex)):
        raise _Reject
    if isinstance(v, float) and not math.isfinite(v):
        src = "math.nan" if v != v else ("math.inf" if v > 0 else "-math.inf")
    else:
        src = repr(v)
    return f"{_dtype_name(dt)}({src})" if dt is not None else src


# ---- the program as scalar statements -----------------------------------------------------

class _St:
    """One scalar statement: ``out = expr(refs...)`` (``refs``: slots or literals)."""

    __slots__ = ("key", "fmt", "refs", "out", "reduce")

    def __init__(self, key: Any, fmt: str, refs: list, out: int, reduce: bool = False):
        self.key = key  # equal for statements that compute the same thing
        self.fmt = fmt  # expression with {0}, {1}, ... for the slot refs
        self.refs = refs  # slot numbers
        self.out = out
        self.reduce = reduce  # a full sum: accumulated over the elements


def _statements(items: list, shape_of: Callable, dtype_of: Callable, params: dict,
                const_slot: Callable) -> list:
    """The items as scalar statements (raises _Reject where one is not elementwise)."""
    from ..ops.strong_zero import STRONG_ZERO

    sts = []
    for it in items:
        t = type(it)
        if t is Alias:
            sts.append(_St(("=",), "{0}", [it.of], it.slot))
            continue
        if t is Const:
            if np.size(it.value) != 1:
                params[it.slot] = (lambda v: lambda: v)(it.value)  # an array constant
                continue
            sts.append(_St(("c", _literal(it.value, None)), _literal(it.value, None), [],
                           it.slot))
            continue
        if t is Load:
            params[it.slot] = (lambda x: lambda: x.data)(it.tensor)  # read on each call
            continue
        if t is not Entry or len(it.outs) != 1 or it.err is not None:
            raise _Reject
        spec = it.op
        name = "strong_zero" if spec is STRONG_ZERO else spec.name
        out = it.outs[0]
        dout = it.dtypes[0] if it.dtypes else None
        if name in _IDENTITY or name == "sum":
            r = it.args[0]
            if type(r) is not Slot:
                raise _Reject
            if name == "sum":
                if shape_of(out) != () and int(np.prod(shape_of(out))) != 1:
                    raise _Reject  # a partial sum: not elementwise
                if it.kw and set(it.kw) - {"axis", "keepdims"}:
                    raise _Reject
                if shape_of(r.i) == ():
                    sts.append(_St(("=",), "{0}", [r.i], out))
                else:
                    sts.append(_St(("sum",), "{0}", [r.i], out, reduce=True))
                continue
            if name == "astype":
                sts.append(_St(("astype", str(dout)), f"{_dtype_name(dout)}({{0}})",
                               [r.i], out))
            else:
                sts.append(_St(("=",), "{0}", [r.i], out))
            continue
        if it.kw:
            raise _Reject
        srcs, refs, din, lits = [], [], [], []
        for r in it.args:
            if isinstance(r, np.ndarray) and r.size != 1:
                r = Slot(const_slot(r), False)  # an array constant: passed in
            if type(r) is Slot:
                srcs.append(f"{{{len(refs)}}}")
                refs.append(r.i)
                din.append(dtype_of(r.i))
            elif type(r) is SlotTuple:
                raise _Reject
            else:
                srcs.append(None)
                din.append(None)
                lits.append(r)
        # Constants take the dtype NumPy computes in: the result's for arithmetic, the
        # other operand's for comparisons.
        ref_dt = next((d for d in din if d is not None), dout)
        lit_dt = ref_dt if name in _BIN and _BIN[name] in "><=!=" else dout
        if lit_dt is not None and lit_dt.kind == "b":
            lit_dt = None
        k = 0
        for j in range(len(it.args)):
            if srcs[j] is None:
                srcs[j] = _literal(lits[k], lit_dt if lit_dt is not None and
                                   lit_dt.kind in "fc" else None)
                k += 1
        expr = _scalar_src(name, srcs, din, dout)
        if expr is None:
            raise _Reject
        if dout is not None and dout.kind in "fc" and dout.itemsize < 8 + 8 * (
                dout.kind == "c"):
            expr = f"{_dtype_name(dout)}({expr})"  # float32 / complex64 stay so
        sts.append(_St(("op", expr), expr, refs, out))
    return sts


# ---- rolling repeated statements back into loops ----------------------------------------

class _Loop:
    """``count`` repetitions of ``body``; in repetition t, a statement's ref ``r`` reads
    slot ``r + t * stride[r position]`` and writes ``out + t * delta``."""

    __slots__ = ("body", "count", "strides", "delta")

    def __init__(self, body: list, count: int, strides: list, delta: int) -> None:
        self.body = body
        self.count = count
        self.strides = strides  # per statement, per ref
        self.delta = delta


def _same_shape(a: _St, b: _St) -> bool:
    return a.key == b.key and len(a.refs) == len(b.refs) and a.reduce == b.reduce


def _run_length(sts: list, i: int, p: int) -> tuple[int, list, int]:
    n = len(sts)
    if i + 2 * p > n:
        return 1, [], 0
    block, second = sts[i:i + p], sts[i + p:i + 2 * p]
    delta = second[0].out - block[0].out
    if delta <= 0:
        return 1, [], 0
    strides = []
    for a, b in zip(block, second):
        if not _same_shape(a, b) or b.out - a.out != delta or a.reduce:
            return 1, [], 0
        strides.append([rb - ra for ra, rb in zip(a.refs, b.refs)])
    k = 2
    while i + (k + 1) * p <= n:
        ok = True
        for q in range(p):
            a, c = block[q], sts[i + k * p + q]
            if (not _same_shape(a, c) or c.out - a.out != k * delta
                    or any(rc - ra != k * d for ra, rc, d in zip(a.refs, c.refs,
                                                                   strides[q]))):
                ok = False
                break
        if not ok:
            break
        k += 1
    return k, strides, delta


def reroll(sts: list) -> list:
    """Statements with repeated runs rolled into :class:`_Loop` s."""
    out: list = []
    i = 0
    n = len(sts)
    while i < n:
        best = None
        for p in range(1, min(MAX_PERIOD, (n - i) // MIN_REPEATS) + 1):
            if not _same_shape(sts[i], sts[i + p]):
                continue
            k, strides, delta = _run_length(sts, i, p)
            if k >= MIN_REPEATS and (best is None or k * p > best[0] * best[1]):
                best = (k, p, strides, delta)
        if best is None:
            out.append(sts[i])
            i += 1
        else:
            k, p, strides, delta = best
            out.append(_Loop(sts[i:i + p], k, strides, delta))
            i += k * p
    return out


# ---- emitting the kernel -------------------------------------------------------------------

class _Emitter:
    def __init__(self, program: list, params: list, results: list, elem: dict,
                 dtype_of: Callable) -> None:
        self.program = program
        self.params = params
        self.results = results
        self.elem = elem  # slot -> True if it has one value per element
        self.dtype_of = dtype_of
        self.where: dict[int, tuple] = {}  # slot -> ("local",) | (loop id, j, t)
        self.stacks: set = set()  # (loop id, j) needing a per-repetition stack
        self.lines: list[str] = []

    def locate(self) -> None:
        for li, item in enumerate(self.program):
            if type(item) is _Loop:
                for j, st in enumerate(item.body):
                    for t in range(item.count):
                        self.where[st.out + t * item.delta] = (li, j, t)
            else:
                self.where[item.out] = ("local",)

    def ref(self, s: int, at: int, loop: _Loop | None = None, q: int = 0, pos: int = 0
            ) -> str:
        """Source reading slot ``s`` from program position ``at`` (inside ``loop``'s
        statement ``q``, ref ``pos``, for repetition ``t``)."""
        w = self.where.get(s)
        if w is None or w[0] == "local":
            if loop is not None and loop.strides[q][pos] != 0:
                raise _Reject
            return f"v{s}"
        li, j, t0 = w
        owner = self.program[li]
        d = loop.strides[q][pos] if loop is not None else 0
        if li == at:  # inside its own loop
            if d == owner.delta and t0 == 0 and j < q:
                return f"v{owner.body[j].out}"  # this repetition's value
            if d == owner.delta and t0 == 0 and j >= q:
                raise _Reject
            raise _Reject
        if d == 0:
            if t0 == owner.count - 1:
                return f"v{owner.body[j].out}"  # the last repetition's value
            self.stacks.add((li, j))
            return f"st{li}_{j}[{t0}]"
        if d % owner.delta:
            raise _Reject
        m = d // owner.delta
        last = t0 + m * (loop.count - 1)
        if not (0 <= last < owner.count):
            raise _Reject
        self.stacks.add((li, j))
        return f"st{li}_{j}[{t0} + {m} * t{at}]"

    def carried(self, loop: _Loop, q: int, pos: int, s: int, li: int) -> str | None:
        """A ref to the previous repetition's value of a body statement (or, in the first
        repetition, to the value before the loop)."""
        d = loop.strides[q][pos]
        if d != loop.delta:
            return None
        for j, st in enumerate(loop.body):
            if st.out - loop.delta == s:
                return f"c{li}_{j}"
        return None

    def emit(self) -> tuple[list[str], list[int], list[str]]:
        """The statements for one element, the accumulated slots, and the source of each
        result (after the statements)."""
        self.locate()
        self._body()  # the first pass finds which loop values need a stack
        body, accs = self._body()
        end = len(self.program)
        outs = [f"acc{s}" if s in accs else self.ref(s, end) for s in self.results
                if s is not None]
        pre = []
        for (li, j) in sorted(self.stacks):
            loop = self.program[li]
            dt = self.dtype_of(loop.body[j].out)
            pre.append(f"st{li}_{j} = np.empty({loop.count}, {_dtype_name(dt)})")
        return pre + body, accs, outs

    def _body(self) -> tuple[list[str], list[int]]:
        body: list[str] = []
        accs = []
        for li, item in enumerate(self.program):
            if type(item) is _Loop:
                body += self._loop(li, item)
                continue
            args = [self.ref(r, li) for r in item.refs]
            expr = item.fmt.format(*args)
            if item.reduce:
                accs.append(item.out)
                body.append(f"acc{item.out} += {expr}")
            else:
                body.append(f"v{item.out} = {expr}")
        return body, accs

    def _loop(self, li: int, loop: _Loop) -> list[str]:
        lines = []
        inits: list[str] = []
        body = []
        for q, st in enumerate(loop.body):
            args = []
            for pos, r in enumerate(st.refs):
                c = self.carried(loop, q, pos, r, li)
                if c is not None:
                    if c not in inits:
                        inits.append(c)
                        lines.append(f"{c} = {self.ref(r, li)}")
                    args.append(c)
                else:
                    args.append(self.ref(r, li, loop, q, pos))
            body.append(f"    v{st.out} = {st.fmt.format(*args)}")
        for j, st in enumerate(loop.body):
            if (li, j) in self.stacks:
                body.append(f"    st{li}_{j}[t{li}] = v{st.out}")
            c = f"c{li}_{j}"
            if c in inits:
                body.append(f"    {c} = v{st.out}")
        lines.append(f"for t{li} in range({loop.count}):")
        return lines + body


def _kernel_source(params: list, elem_params: list, elem_outs: list, accs: list,
                   lines: list[str], outs: list[str], elem_flags: list) -> str:
    args = [f"p{s}" for s in params] + [f"o{k}" for k in range(len(elem_outs))]
    src = [f"def kernel({', '.join(args)}):"]
    src += [f"    acc{s} = 0" for s in accs]
    n = f"p{elem_params[0]}.shape[0]" if elem_params else "1"
    src.append(f"    for i in range({n}):")
    for s in params:
        src.append(f"        v{s} = p{s}[i]" if s in elem_params else f"        v{s} = p{s}")
    src += ["        " + ln for ln in lines]
    k = 0
    for o, is_elem in zip(outs, elem_flags):
        if is_elem:
            src.append(f"        o{k}[i] = {o}")
            k += 1
    ret = [o for o, is_elem in zip(outs, elem_flags) if not is_elem]
    src.append(f"    return ({''.join(r + ', ' for r in ret)})")
    return "\n".join(src) + "\n"


def fuse(items: list, params: list, results: list, value: list,
         consts: int | None = None) -> Callable | None:
    """A fused function for ``items`` (None: not elementwise, or numba missing).

    ``params``: the slots the program reads from outside, in the order the returned
    function takes them; ``results``: the slots it returns (None entries allowed);
    ``value``: every slot's recorded value (shapes, dtypes, and the check); ``consts``:
    the slots from which on a value read but not made is a constant (None: any).
    """
    if not available():
        return None
    try:
        return _fuse(items, params, results, value, consts)
    except Exception:  # not elementwise, or numba could not compile it: stay Python
        return None


FORCE = [False]  # tests: fuse whatever can be fused


def worthwhile(items: list, value: list) -> bool:
    """Whether fusing may pay for numba's compile time (a second or so): long programs
    (unrolled loops) or large arrays."""
    if FORCE[0]:
        return True
    n = sum(1 for it in items if type(it) is Entry)
    big = max((np.size(v) for v in value if isinstance(v, np.ndarray)), default=0)
    return n >= 48 or big >= 100_000


def _fuse(items: list, params: list, results: list, value: list,
          consts: int | None) -> Callable:
    value = list(value)
    shapes = [np.shape(v) for v in value]
    want = [r for r in results if r is not None]
    big = {shapes[s] for s in list(params) + want
           if shapes[s] != () and int(np.prod(shapes[s])) != 1}
    if len(big) > 1:
        raise _Reject
    elem_shape = big.pop() if big else ()

    def dtype_of(s: int) -> Any:
        return getattr(value[s], "dtype", None)

    extra: dict = {}

    def const_slot(arr: np.ndarray) -> int:
        value.append(arr)
        shapes.append(arr.shape)
        extra[len(value) - 1] = lambda: arr
        return len(value) - 1

    sts = _statements(items, lambda s: shapes[s], dtype_of, extra, const_slot)
    defined = {st.out for st in sts} | set(params) | set(extra)
    for st in sts:  # values made while deriving the backward (an identity, ones)
        for r in st.refs:
            if r not in defined:
                if consts is not None and r < consts:
                    raise _Reject  # a value of the program, not a constant
                extra[r] = (lambda v: lambda: v)(value[r])
                defined.add(r)
    every = list(params) + sorted(set(extra) - set(params))
    elem = {s: elem_shape != () and shapes[s] == elem_shape for s in range(len(shapes))}
    for s in every:
        if not elem[s] and int(np.prod(shapes[s])) != 1:
            raise _Reject
    for st in sts:
        if not st.reduce and not elem[st.out] and int(np.prod(shapes[st.out])) != 1:
            raise _Reject
    reduced = {st.out for st in sts if st.reduce}
    for st in sts:
        if any(r in reduced for r in st.refs):
            raise _Reject  # a sum used inside: not one pass
    program = reroll(sts)
    emitter = _Emitter(program, every, results, elem, dtype_of)
    lines, accs, outs = emitter.emit()
    flags = [elem[s] and s not in reduced for s in want]
    elem_params = [s for s in every if elem[s]]
    src = _kernel_source(every, elem_params, [s for s, f in zip(want, flags) if f], accs,
                         lines, outs, flags)
    env: dict = {"np": np, "math": math, "cmath": __import__("cmath")}
    exec(compile(src, "<yaad.compile fused kernel>", "exec"), env)
    kernel = _jit()(error_model="numpy", cache=False)(env["kernel"])
    n = int(np.prod(elem_shape)) if elem_shape != () else 1
    meta = [(shapes[s], dtype_of(s), isinstance(value[s], np.ndarray)) for s in want]
    getters = [extra[s] for s in every[len(params):]]

    from .codegen import POOL_MIN, free_buffer

    pools = [None] * sum(flags)  # output arrays, recycled when nothing else holds them

    def buffer(k: int, shape: tuple, dtype: Any) -> np.ndarray:
        buf = free_buffer(pools, k)
        if buf is not None:
            return buf
        buf = np.empty(shape, dtype)
        if buf.size >= POOL_MIN:
            pools[k] = buf
        return buf

    def run(*args: Any) -> tuple:
        call = []
        for s, a in zip(every, [*args, *[g() for g in getters]]):
            if elem[s]:
                call.append(np.ascontiguousarray(a).reshape(n))
            else:
                call.append(np.asarray(a).reshape(())[()])
        bufs = [buffer(k, m[0], m[1])
                for k, m in enumerate(m for m, f in zip(meta, flags) if f)]
        rest = kernel(*call, *[b.reshape(n) for b in bufs])
        got = []
        kb = kr = 0
        for (shp, dt, is_array), f in zip(meta, flags):
            if f:
                got.append(bufs[kb])  # a new array of its own (no base)
                kb += 1
            else:
                v = np.asarray(rest[kr], dtype=dt).reshape(shp)
                kr += 1
                got.append(v if is_array else v[()])
        it = iter(got)
        return tuple(None if r is None else next(it) for r in results)

    run.__source__ = src
    # Kept only if it reproduces the recorded values (to rounding).
    check = run(*[value[s] for s in params])
    for r, v in zip(results, check):
        if r is None:
            continue
        ref = np.asarray(value[r])
        tol = 1e-4 if ref.dtype.itemsize <= 4 + 4 * (ref.dtype.kind == "c") else 1e-9
        scale = float(np.abs(ref).max()) if ref.size else 0.0
        if np.shape(v) != ref.shape or not np.allclose(v, ref, rtol=tol, atol=tol * scale,
                                                       equal_nan=True):
            raise _Reject
    return _numpy_where_errors_raise(run, items, params, results, value)


def _numpy_where_errors_raise(run: Callable, items: list, params: list, results: list,
                              value: list) -> Callable:
    """``run``, or the NumPy replay of ``items`` where NumPy's error state or the warnings
    filters make a floating-point error raise (numba's loops never raise or warn)."""
    from .codegen import numpy_program

    loads = [it for it in items if type(it) is Load]
    replay = numpy_program(items, list(params) + [it.slot for it in loads], results, value)

    def checked(*args: Any) -> tuple:
        if float_state() is None:
            return run(*args)
        got = replay(*args, *[it.tensor._data for it in loads])
        return tuple(x.copy() if isinstance(x, np.ndarray) else x for x in got)

    checked.__source__ = run.__source__  # type: ignore[attr-defined]
    return checked
