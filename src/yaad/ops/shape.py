"""Shape, joining, dtype and indexing operations (NumPy names and semantics).

Every op here is linear (or affine) in its array inputs, so each VJP is another op of this
module (``flip`` undoes ``flip``, slicing undoes ``concatenate``, scattering undoes
indexing), and most need no JVP rule of their own (``linear=``). Functions that NumPy
itself builds from simpler ones (``hstack``, ``rot90``, ``take``) are built the same way.
"""

from __future__ import annotations

import builtins
import math
from functools import lru_cache
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np
from numpy.lib.array_utils import normalize_axis_index, normalize_axis_tuple

from ..core.backend import (
    any_foreign,
    backend_name,
    dtype_kind,
    implements,
    namespace,
    native_dtype,
)
from ..core.backend import call as call_foreign
from ..core.grad_mode import state
from ..core.graph import mark_modified
from ..core.op import apply, op, register_plain_call
from ..core.presentation import dtype_of, ndim_of, shape_of
from ..core.tensor import Tensor
from ..modes.batched_values import batch_axes, per_example, size_of
from .public_names import exported

ndarray = np.ndarray


def _normalize_axes(axis, ndim: int) -> tuple:
    """``axis`` (None, an int or a sequence) as a sorted tuple of non-negative axes."""
    if axis is None:
        return tuple(range(ndim))
    return tuple(sorted(normalize_axis_tuple(axis, ndim)))


def _values(x):
    """The array of a tensor (or the array itself): for decisions on values, never recorded.

    Inside vmap, the array of every example at once: a decision taken on it must hold
    for each of them (a check, or the choice between two exact ways to compute)."""
    if not isinstance(x, Tensor):
        return x
    return x.data if type(x) is Tensor or not batch_axes(x) else x._all_values()



def _as_operand(x: Any) -> Any:
    """A tensor or array as is; a (nested) list or tuple holding tensors as their stack (so
    the gradient reaches each, as PyTorch's ``stack`` does); anything else (a list, a
    scalar) as a NumPy array."""
    if isinstance(x, Tensor) or hasattr(x, "shape"):
        return x
    if isinstance(x, (list, tuple)) and _holds_tensor(x):
        return _stack(*[_as_operand(e) for e in x])
    return np.asarray(x)


def _holds_tensor(x: Any) -> bool:
    """Whether a (nested) list or tuple holds a tensor."""
    for e in x:
        if isinstance(e, Tensor) or (type(e) in (list, tuple) and _holds_tensor(e)):
            return True
    return False


def _call_plain(spec: Any, args: tuple, kw: dict) -> Any:
    """An op on arguments none of which is a tensor: the forward on them, unless a
    differentiable input is a list or tuple holding tensors. That one is stacked first, as
    NumPy would make it an array (PyTorch's ``stack``), so the gradient or the tangent
    reaches each tensor instead of being dropped by the conversion to an array."""
    vjps = spec.vjps
    stacked = None
    if state.batching is not None and any(type(a) in (list, tuple) and _holds_tensor(a)
                                          for a in args):
        return apply(spec, args, kw)  # a tensor in an index: vmap may batch it
    for i, a in enumerate(args):
        if (type(a) in (list, tuple) and (spec.variadic or (i < len(vjps) and vjps[i]))
                and _holds_tensor(a)):
            stacked = stacked or list(args)
            stacked[i] = _as_operand(a)
    if stacked is None:
        return call_foreign(spec, args, kw) if any_foreign(args) else spec.forward(*args, **kw)
    return spec.fn(*stacked, **kw)


register_plain_call(_call_plain)


def _no_out(name: str, out) -> None:
    if out is not None:
        raise TypeError(f"{name}: out= is not supported (results are new tensors); use the "
                        f"returned value")


# ---- helpers of the batching rules (the batch axis moved with shape ops) --------------

def front(x: Any, d: int | None) -> Any:
    """``x`` with its batch axis ``d`` moved to the front (unchanged when ``d`` is None)."""
    return x if d is None or d == 0 else moveaxis(x, d, 0)


def flat_examples(x: Any, d: int) -> Any:
    """``x`` as a matrix with one flattened example per row (batch axis ``d``)."""
    x = front(x, d)
    shape = shape_of(x)
    return reshape(x, (shape[0], math.prod(shape[1:])))


def aligned(args: tuple, dims: tuple, ndim: int | None = None,
            cores: tuple | None = None) -> list:
    """The batched arguments with the batch axis in front and length-one axes after it,
    so that they broadcast against each other and against the arguments without batch
    axis over their leading axes (as NumPy's gufuncs do): ``cores[i]`` axes at the end of
    argument ``i`` are its own (default none); the others are padded to the most any
    argument has, or to ``ndim`` axes per example."""
    cores = cores or (0,) * len(args)
    lead = [ndim_of(a) - (d is not None) - c for a, d, c in zip(args, dims, cores)
            if isinstance(a, (Tensor, np.ndarray, np.generic))]
    top = max(lead, default=0) if ndim is None else ndim
    out = []
    for a, d, c in zip(args, dims, cores):
        if d is not None:
            a = front(a, d)
            shape = shape_of(a)
            k = len(shape) - 1 - c
            if k < top:
                a = reshape(a, shape[:1] + (1,) * (top - k) + shape[1:])
        out.append(a)
    return out


def columns(x: Any, d: int) -> tuple[Any, Callable]:
    """Batched ``x`` (each example a vector or a stack of columns, ``(n, ...)``) as one
    matrix of shape ``(n, -1)`` holding every example's columns, and the function that
    lays a result ``(m, -1)`` of it out as a batch again: ``back(y) -> (y, out_dim)``."""
    x = moveaxis(x, d, -1)
    shape = shape_of(x)

    def back(y: Any) -> tuple:
        return reshape(y, shape_of(y)[:1] + shape[1:]), len(shape) - 1

    return reshape(x, (shape[0], math.prod(shape[1:]))), back


# ---- the ops ---------------------------------------------------------------------------

def _linear(forward, name: str, vjp, jvp=None, batch=None) -> Any:
    """An op linear in its first input whose rules read only shapes (the common case here)."""
    return op(forward, name=name, save_args=False, save_ans=False, linear=jvp is None,
              vjp=vjp, jvp=jvp, batch=batch)


def _first_batched(rule):
    """A batching rule for an op whose first argument alone may be batched: ``rule(x, nd,
    *args, **kw)`` gets it with the batch axis in front and its number of axes per example,
    and returns the result (batch axis in front)."""
    def batch(dims, x, *args, **kw):
        if any(d is not None for d in dims[1:]):
            return NotImplemented
        out = rule(front(x, dims[0]), np.ndim(x) - 1, *args, **kw)
        return NotImplemented if out is NotImplemented else (out, 0)

    return batch


def _shifted(axis, nd: int):
    """Axes of an example (an int or a sequence, negative ones allowed) as axes of the
    batch, whose batch axis is in front."""
    if isinstance(axis, (int, np.integer)):
        return normalize_axis_index(axis, nd) + 1
    # (repeats kept: roll allows them, and the op itself refuses them where NumPy does)
    return tuple(normalize_axis_index(a, nd) + 1 for a in axis)


# ---- reshaping -----------------------------------------------------------------------

def _reshape(a, shape, order="C"):
    return np.reshape(a, shape, order=order)


def _reshape_batch(dims, a, shape, order="C"):
    if dims[1:] != (None,) * len(dims[1:]) or order not in ("C", "F"):
        return NotImplemented
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    if order == "C":  # each example stays contiguous with the batch axis in front...
        a = front(a, dims[0])
        return reshape(a, a.shape[:1] + shape), 0
    a = moveaxis(a, dims[0], -1)  # ...and in Fortran order with it last
    return reshape(a, shape + a.shape[-1:], order="F"), len(shape)


reshape = _linear(_reshape, "reshape",
                  lambda g, ans, a, shape, order="C": reshape(g, a.shape, order=order),
                  batch=_reshape_batch)
reshape.__doc__ = """Give a new shape to an array without changing its data (numpy.reshape).

Parameters
----------
a : Tensor or array_like
shape : int or tuple of int
    The new shape; one entry may be -1.
order : {'C', 'F'}
    Read and write the elements in this index order.

Returns
-------
Tensor
    A view of the data where NumPy makes one.
"""


def ravel(a: Any, order: str = "C") -> Any:
    """Return a flattened array (numpy.ravel).

    Parameters
    ----------
    a : Tensor or array_like
    order : {'C', 'F'}
        The index order in which the elements are read.

    Returns
    -------
    Tensor
        One-dimensional, a view where possible.
    """
    return reshape(a, (-1,), order=order)


def _transpose_vjp(g, ans, a, axes=None):
    if axes is None:
        return transpose(g)
    return transpose(g, tuple(np.argsort(normalize_axis_tuple(axes, a.ndim))))


transpose = _linear(lambda a, axes=None: np.transpose(a, axes), "transpose", _transpose_vjp,
                    batch=_first_batched(lambda a, nd, axes=None: transpose(a, (0,) + (
                        tuple(range(nd, 0, -1)) if axes is None else _shifted(axes, nd)))))
transpose.__doc__ = """Permute the axes (numpy.transpose); reverses them by default.

Parameters
----------
a : Tensor or array_like
axes : sequence of int, optional
    The permutation; negative axes count from the end.

Returns
-------
Tensor
"""

swapaxes = _linear(lambda a, axis1, axis2: np.swapaxes(a, axis1, axis2), "swapaxes",
                   lambda g, ans, a, axis1, axis2: swapaxes(g, axis1, axis2),
                   batch=_first_batched(lambda a, nd, axis1, axis2: swapaxes(
                       a, _shifted(axis1, nd), _shifted(axis2, nd))))
swapaxes.__doc__ = """Interchange two axes (numpy.swapaxes).

Parameters
----------
a : Tensor or array_like
axis1 : int
    The axes to swap.
axis2 : int
    The axes to swap.

Returns
-------
Tensor
"""


def matrix_transpose(x: Any) -> Any:
    """Swap the last two axes (numpy.matrix_transpose, ``x.mT``).

    Parameters
    ----------
    x : Tensor or array_like
        At least two-dimensional: a matrix or a batch of matrices.

    Returns
    -------
    Tensor
    """
    if ndim_of(x) < 2:
        raise ValueError(f"matrix_transpose: the input must have at least 2 dimensions, "
                         f"got shape {shape_of(x)}")
    return swapaxes(x, -1, -2)


def _moveaxis(a, source, destination):
    # numpy.moveaxis normalises its axes and works out the order in Python on every call;
    # the order depends on the number of axes and the axes alone: cached, then NumPy's
    # own transpose (the same view). Axes it reads another way take numpy.moveaxis.
    if type(a) is np.ndarray:
        try:
            order = _moveaxis_order(a.ndim, source if type(source) is int else tuple(source),
                                    destination if type(destination) is int
                                    else tuple(destination))
        except TypeError:
            order = None
        if order is not None:
            return a.transpose(order)
    return np.moveaxis(a, source, destination)


@lru_cache(maxsize=1024)
def _moveaxis_order(ndim: int, source: Any, destination: Any) -> tuple | None:
    """numpy.moveaxis's transpose order; None where NumPy raises (NumPy's error)."""
    try:
        source = normalize_axis_tuple(source, ndim, "source")
        destination = normalize_axis_tuple(destination, ndim, "destination")
    except (ValueError, TypeError):  # (AxisError is a ValueError)
        return None
    if len(source) != len(destination):
        return None
    order = [n for n in range(ndim) if n not in source]
    for dest, src in sorted(zip(destination, source)):
        order.insert(dest, src)
    return tuple(order)


moveaxis = _linear(_moveaxis, "moveaxis",
                   lambda g, ans, a, source, destination: moveaxis(g, destination, source),
                   batch=_first_batched(lambda a, nd, source, destination: moveaxis(
                       a, _shifted(source, nd), _shifted(destination, nd))))
moveaxis.__doc__ = """Move axes to new positions (numpy.moveaxis).

Parameters
----------
a : Tensor or array_like
source : int or sequence of int
    Original and new positions of the moved axes.
destination : int or sequence of int
    Original and new positions of the moved axes.

Returns
-------
Tensor
"""

expand_dims = _linear(lambda a, axis: np.expand_dims(a, axis), "expand_dims",
                      lambda g, ans, a, axis: reshape(g, a.shape),
                      batch=_first_batched(lambda a, nd, axis: expand_dims(a, _shifted(
                          axis, nd + (1 if isinstance(axis, (int, np.integer))
                                      else len(axis))))))
expand_dims.__doc__ = """Insert axes of length one (numpy.expand_dims).

Parameters
----------
a : Tensor or array_like
axis : int or tuple of int
    Positions of the new axes in the result.

Returns
-------
Tensor
"""

squeeze = _linear(lambda a, axis=None: np.squeeze(a, axis), "squeeze",
                  lambda g, ans, a, axis=None: reshape(g, a.shape),
                  batch=_first_batched(lambda a, nd, axis=None: squeeze(a, tuple(
                      i for i in range(1, nd + 1) if a.shape[i] == 1) if axis is None
                      else _shifted(axis, nd))))
squeeze.__doc__ = """Remove axes of length one (numpy.squeeze).

Parameters
----------
a : Tensor or array_like
axis : int or tuple of int, optional
    The axes to remove (each must have length one); all of length one by default.

Returns
-------
Tensor
"""

# The engine sums the gradient back over the broadcast axes.
def _broadcast_to_batch(dims, a, shape, subok=False):
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    a = aligned((a,), dims[:1], len(shape))[0]
    return broadcast_to(a, a.shape[:1] + shape), 0


broadcast_to = _linear(lambda a, shape, subok=False: np.broadcast_to(a, shape),
                       "broadcast_to", lambda g, ans, a, shape, subok=False: g,
                       batch=_broadcast_to_batch)
broadcast_to.__doc__ = """Broadcast an array to a shape (numpy.broadcast_to, a read-only view).

Parameters
----------
a : Tensor or array_like
shape : tuple of int

Returns
-------
Tensor
    Its gradient is summed back over the broadcast axes.
"""


def broadcast_arrays(*args: Any) -> tuple:
    """Broadcast arrays against each other (numpy.broadcast_arrays).

    Parameters
    ----------
    *args : Tensor or array_like

    Returns
    -------
    tuple of Tensor
        Read-only views with the common shape.
    """
    args = [_as_operand(a) for a in args]
    shape = np.broadcast_shapes(*(a.shape for a in args))
    return tuple(broadcast_to(a, shape) for a in args)


def _atleast(ndim: int, name: str):
    def new_shape(shape: tuple) -> tuple:
        if len(shape) >= ndim:
            return shape
        if ndim == 3 and len(shape) == 2:
            return shape + (1,)
        if ndim == 3 and len(shape) == 1:
            return (1,) + shape + (1,)
        return (1,) * (ndim - len(shape)) + shape

    def atleast(*arys: Any) -> Any:
        out = []
        for a in arys:
            a = _as_operand(a)
            shape = new_shape(a.shape)
            out.append(a if shape == a.shape else reshape(a, shape))
        return out[0] if len(out) == 1 else tuple(out)

    atleast.__name__ = atleast.__qualname__ = name
    atleast.__doc__ = f"""View inputs as arrays with at least {ndim} dimensions (numpy.{name}).

    Parameters
    ----------
    *arys : Tensor or array_like

    Returns
    -------
    Tensor or tuple of Tensor
        One result per input (a single one is returned bare, like NumPy).
    """
    return atleast


atleast_1d = _atleast(1, "atleast_1d")
atleast_2d = _atleast(2, "atleast_2d")
atleast_3d = _atleast(3, "atleast_3d")


def _astype(a, dtype, copy=True):
    if not hasattr(a, "astype"):
        return np.asarray(a, dtype)
    out = a.astype(dtype, copy=copy)
    # copy=False may hand back the input itself: make it a view, so that the result is
    # a new array object that in-place checks see as sharing memory.
    return out.view() if out is a else out


# The engine casts the gradient back to the input's dtype (the real part for a real one).
astype = _linear(_astype, "astype", lambda g, ans, a, dtype, copy=True: g, batch="broadcast")
astype.__doc__ = """Cast to a dtype (numpy.astype); the gradient is cast back.

Parameters
----------
a : Tensor or array_like
dtype : data-type
copy : bool
    Copy even when the dtype does not change.

Returns
-------
Tensor
    A complex input cast to a real dtype keeps its real part, and its gradient is real.
"""

copy = _linear(lambda a: np.array(a, copy=True), "copy", lambda g, ans, a: g,
               batch="broadcast")
copy.__doc__ = """A copy of the array (numpy.copy; ``Tensor.clone()`` in PyTorch terms).

Parameters
----------
a : Tensor or array_like

Returns
-------
Tensor
    New memory, recorded (the gradient passes through unchanged).
"""


# ---- joining and splitting ---------------------------------------------------------

def _join_jvp(join):
    """The JVP of a variadic join: the tangent of input i joined with zeros elsewhere."""
    def jvp(i, t, ans, *arrays, **kw):
        xp = namespace(_values(t))
        parts = [t if j == i else xp.zeros(a.shape, dtype=t.dtype) for j, a in enumerate(arrays)]
        return join(*parts, **kw)

    return jvp


def _concatenate_vjp(i, g, ans, *arrays, axis=0, dtype=None, casting="same_kind"):
    if axis is None:
        start = builtins.sum(a.size for a in arrays[:i])
        return reshape(getitem(g, slice(start, start + arrays[i].size)), arrays[i].shape)
    axis = normalize_axis_index(axis, g.ndim)
    start = builtins.sum(a.shape[axis] for a in arrays[:i])
    return getitem(g, (slice(None),) * axis + (slice(start, start + arrays[i].shape[axis]),))


_concatenate = op(lambda *arrays, axis=0, dtype=None, casting="same_kind": np.concatenate(
                  arrays, axis=axis, dtype=dtype, casting=casting),
                  name="concatenate", variadic=True, save_args=False, save_ans=False,
                  vjp=_concatenate_vjp)
_concatenate.defjvp(_join_jvp(_concatenate))


def _batched_all(dims, arrays) -> list:
    """Every array with the batch axis in front (broadcast to the batch where it has none)."""
    n = size_of(arrays, dims)
    return [front(a, d) if d is not None else broadcast_to(a, (n,) + np.shape(a))
            for a, d in zip(arrays, dims)]


def _concatenate_batch(dims, *arrays, axis=0, dtype=None, casting="same_kind"):
    arrays = _batched_all(dims, arrays)
    if axis is None:
        arrays = [reshape(a, (a.shape[0], -1)) for a in arrays]
        return _concatenate(*arrays, axis=1, dtype=dtype, casting=casting), 0
    axis = normalize_axis_index(axis, arrays[0].ndim - 1) + 1
    return _concatenate(*arrays, axis=axis, dtype=dtype, casting=casting), 0


_concatenate.defbatch(_concatenate_batch)


def concatenate(arrays: Sequence[Any], axis: int | None = 0, out: Any = None,
                dtype: Any = None, casting: str = "same_kind") -> Any:
    """Join arrays along an existing axis (numpy.concatenate).

    Parameters
    ----------
    arrays : sequence of Tensor or array_like
        Same shape except along ``axis``.
    axis : int or None
        The joining axis; None flattens the inputs first.
    out : None
        Not supported (raises TypeError).
    dtype : data-type, optional
    casting : str

    Returns
    -------
    Tensor
    """
    _no_out("concatenate", out)
    arrays = [_as_operand(a) for a in arrays]
    if not arrays:
        raise ValueError("concatenate: need at least one array to concatenate")
    return _concatenate(*arrays, axis=axis, dtype=dtype, casting=casting)


def _stack_vjp(i, g, ans, *arrays, axis=0, dtype=None, casting="same_kind"):
    return getitem(g, (slice(None),) * normalize_axis_index(axis, g.ndim) + (i,))


_stack = op(lambda *arrays, axis=0, dtype=None, casting="same_kind": np.stack(
            arrays, axis=axis, dtype=dtype, casting=casting),
            name="stack", variadic=True, save_args=False, save_ans=False, vjp=_stack_vjp)
_stack.defjvp(_join_jvp(_stack))
_stack.defbatch(lambda dims, *arrays, axis=0, dtype=None, casting="same_kind": (_stack(
    *_batched_all(dims, arrays), axis=normalize_axis_index(axis, np.ndim(arrays[0]) + 1 - (
        dims[0] is not None)) + 1, dtype=dtype, casting=casting), 0))


def stack(arrays: Sequence[Any], axis: int = 0, out: Any = None, dtype: Any = None,
          casting: str = "same_kind") -> Any:
    """Join arrays of the same shape along a new axis (numpy.stack).

    Parameters
    ----------
    arrays : sequence of Tensor or array_like
    axis : int
        Position of the new axis in the result.
    out : None
        Not supported (raises TypeError).
    dtype : data-type, optional
    casting : str

    Returns
    -------
    Tensor
    """
    _no_out("stack", out)
    arrays = [_as_operand(a) for a in arrays]
    if not arrays:
        raise ValueError("stack: need at least one array to stack")
    return _stack(*arrays, axis=axis, dtype=dtype, casting=casting)


def hstack(tup: Sequence[Any], *, dtype: Any = None, casting: str = "same_kind") -> Any:
    """Stack arrays horizontally, column-wise (numpy.hstack).

    Parameters
    ----------
    tup : sequence of Tensor or array_like
    dtype : data-type, optional
    casting : str

    Returns
    -------
    Tensor
    """
    arrs = [atleast_1d(a) for a in tup]
    axis = 0 if arrs and arrs[0].ndim == 1 else 1
    return concatenate(arrs, axis=axis, dtype=dtype, casting=casting)


def vstack(tup: Sequence[Any], *, dtype: Any = None, casting: str = "same_kind") -> Any:
    """Stack arrays vertically, row-wise (numpy.vstack).

    Parameters
    ----------
    tup : sequence of Tensor or array_like
    dtype : data-type, optional
    casting : str

    Returns
    -------
    Tensor
    """
    return concatenate([atleast_2d(a) for a in tup], axis=0, dtype=dtype, casting=casting)


def dstack(tup: Sequence[Any]) -> Any:
    """Stack arrays along the third axis (numpy.dstack).

    Parameters
    ----------
    tup : sequence of Tensor or array_like

    Returns
    -------
    Tensor
    """
    return concatenate([atleast_3d(a) for a in tup], axis=2)


def column_stack(tup: Sequence[Any]) -> Any:
    """Stack 1-D arrays as the columns of a 2-D array (numpy.column_stack).

    Parameters
    ----------
    tup : sequence of Tensor or array_like

    Returns
    -------
    Tensor
    """
    cols = []
    for a in tup:
        a = _as_operand(a)
        cols.append(reshape(a, (-1, 1)) if a.ndim < 2 else a)
    return concatenate(cols, axis=1)


def append(arr: Any, values: Any, axis: int | None = None) -> Any:
    """Append values to the end of an array (numpy.append).

    Parameters
    ----------
    arr : Tensor or array_like
    values : Tensor or array_like
    axis : int, optional
        Without it both inputs are flattened first.

    Returns
    -------
    Tensor
    """
    if axis is None:
        return concatenate([ravel(_as_operand(arr)), ravel(_as_operand(values))], axis=0)
    return concatenate([arr, values], axis=axis)


def _split_points(n: int, indices_or_sections, name: str, equal: bool) -> list:
    if np.ndim(indices_or_sections) == 0:
        sections = int(indices_or_sections)
        if sections <= 0:
            raise ValueError(f"{name}: the number of sections must be larger than 0")
        each, extra = divmod(n, sections)
        if equal and extra:
            raise ValueError(f"{name}: an array of length {n} does not split into "
                             f"{sections} equal sections; use array_split")
        sizes = [0] + extra * [each + 1] + (sections - extra) * [each]
        return np.cumsum(sizes).tolist()
    return [0] + list(indices_or_sections) + [n]


def _split(ary, indices_or_sections, axis: int, name: str, equal: bool) -> list:
    ary = _as_operand(ary)
    axis = normalize_axis_index(axis, ary.ndim)
    points = _split_points(ary.shape[axis], indices_or_sections, name, equal)
    lead = (slice(None),) * axis
    return [getitem(ary, lead + (slice(start, stop),))
            for start, stop in zip(points[:-1], points[1:])]


def array_split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list:
    """Split into sub-arrays, allowing unequal parts (numpy.array_split).

    Each part is a slice of the input: its gradient is scattered back into place.

    Parameters
    ----------
    ary : Tensor or array_like
    indices_or_sections : int or sequence of int
        A number of parts, or the split points along ``axis``.
    axis : int

    Returns
    -------
    list of Tensor
    """
    return _split(ary, indices_or_sections, axis, "array_split", equal=False)


def split(ary: Any, indices_or_sections: Any, axis: int = 0) -> list:
    """Split into equal sub-arrays, or at the given points (numpy.split).

    Parameters
    ----------
    ary : Tensor or array_like
    indices_or_sections : int or sequence of int
        A number of equal parts (must divide the axis), or the split points.
    axis : int

    Returns
    -------
    list of Tensor
    """
    return _split(ary, indices_or_sections, axis, "split", equal=True)


def _split_along(name: str, axis_of, min_ndim: int, what: str):
    def fn(ary: Any, indices_or_sections: Any) -> list:
        ndim = ndim_of(ary)
        if ndim < min_ndim:
            raise ValueError(f"{name}: only works on arrays of {min_ndim} or more dimensions "
                             f"(got {ndim})")
        return _split(ary, indices_or_sections, axis_of(ndim), name, equal=True)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"""Split {what} (numpy.{name}); see :func:`split`.

    Parameters
    ----------
    ary : Tensor or array_like
    indices_or_sections : int or sequence of int

    Returns
    -------
    list of Tensor
    """
    return fn


hsplit = _split_along("hsplit", lambda nd: 1 if nd > 1 else 0, 1, "horizontally (column-wise)")
vsplit = _split_along("vsplit", lambda nd: 0, 2, "vertically (row-wise)")
dsplit = _split_along("dsplit", lambda nd: 2, 3, "along the third axis")


# ---- flips, rolls, tiles, repeats, pads ------------------------------------------

flip = _linear(lambda m, axis=None: np.flip(m, axis), "flip",
               lambda g, ans, m, axis=None: flip(g, axis),
               batch=_first_batched(lambda m, nd, axis=None: flip(
                   m, tuple(range(1, nd + 1)) if axis is None else _shifted(axis, nd))))
flip.__doc__ = """Reverse the order of elements along the given axes (numpy.flip).

Parameters
----------
m : Tensor or array_like
axis : int or tuple of int, optional
    All axes by default.

Returns
-------
Tensor
"""


def fliplr(m: Any) -> Any:
    """Reverse the order of the columns (numpy.fliplr; at least 2-D).

    Parameters
    ----------
    m : Tensor or array_like

    Returns
    -------
    Tensor
    """
    if ndim_of(m) < 2:
        raise ValueError("fliplr: the input must be at least 2-D")
    return flip(m, 1)


def flipud(m: Any) -> Any:
    """Reverse the order of the rows (numpy.flipud; at least 1-D).

    Parameters
    ----------
    m : Tensor or array_like

    Returns
    -------
    Tensor
    """
    if ndim_of(m) < 1:
        raise ValueError("flipud: the input must be at least 1-D")
    return flip(m, 0)


def _negate(shift):
    return tuple(-s for s in shift) if isinstance(shift, (tuple, list)) else -shift


def _roll_batch(a, nd, shift, axis=None):
    if axis is not None:
        return roll(a, shift, _shifted(axis, nd))
    return reshape(roll(flat_examples(a, 0), shift, 1), a.shape)


roll = _linear(lambda a, shift, axis=None: np.roll(a, shift, axis), "roll",
               lambda g, ans, a, shift, axis=None: roll(g, _negate(shift), axis),
               batch=_first_batched(_roll_batch))
roll.__doc__ = """Roll elements along axes, wrapping around (numpy.roll).

Parameters
----------
a : Tensor or array_like
shift : int or tuple of int
axis : int or tuple of int, optional
    Without it the array is flattened, rolled and reshaped back.

Returns
-------
Tensor
"""


def rot90(m: Any, k: int = 1, axes: Sequence[int] = (0, 1)) -> Any:
    """Rotate by 90 degrees in the plane of two axes (numpy.rot90).

    Parameters
    ----------
    m : Tensor or array_like
    k : int
        Number of rotations, counterclockwise from the first axis toward the second.
    axes : pair of int

    Returns
    -------
    Tensor
    """
    m = _as_operand(m)
    axes = tuple(axes)
    if len(axes) != 2:
        raise ValueError("rot90: len(axes) must be 2")
    a0, a1 = (normalize_axis_index(a, m.ndim) for a in axes)
    if a0 == a1:
        raise ValueError(f"rot90: the axes must be different, got {axes}")
    k %= 4
    if k == 0:
        return getitem(m, Ellipsis)
    if k == 2:
        return flip(m, (a0, a1))
    perm = list(range(m.ndim))
    perm[a0], perm[a1] = perm[a1], perm[a0]
    if k == 1:
        return transpose(flip(m, a1), perm)
    return flip(transpose(m, perm), a1)


def _own_sum(g, axis):
    """``g`` summed over ``axis`` by its own library (ops/reductions imports this module): a
    tensor's method, or the array's namespace (an array API array has no ``.sum``)."""
    return g.sum(axis=axis) if isinstance(g, Tensor) else namespace(g).sum(g, axis=axis)


def _tile_vjp(g, ans, a, reps):
    reps = tuple(reps) if np.ndim(reps) else (int(reps),)
    d = max(len(reps), a.ndim)
    shape = (1,) * (d - a.ndim) + tuple(a.shape)
    reps = (1,) * (d - len(reps)) + reps
    g = reshape(g, tuple(n for pair in zip(reps, shape) for n in pair))
    return reshape(_own_sum(g, tuple(range(0, 2 * d, 2))), a.shape)


def _tile_batch(a, nd, reps):
    reps = tuple(reps) if np.ndim(reps) else (int(reps),)
    d = max(len(reps), nd)
    a = reshape(a, a.shape[:1] + (1,) * (d - nd) + a.shape[1:])
    return tile(a, (1,) * (d + 1 - len(reps)) + reps)


tile = _linear(lambda a, reps: np.tile(a, reps), "tile", _tile_vjp,
               batch=_first_batched(_tile_batch))
tile.__doc__ = """Repeat a whole array along each axis (numpy.tile).

Parameters
----------
a : Tensor or array_like
reps : int or sequence of int
    Repetitions per axis.

Returns
-------
Tensor
"""


def _repeats_of(repeats):
    r = np.asarray(_values(repeats))
    return int(r.reshape(())) if r.size == 1 else r


def _repeat_sum(g, repeats, axis, n):
    """Sum consecutive runs of ``repeats[i]`` entries along ``axis`` (n runs)."""
    axis = normalize_axis_index(axis, g.ndim)
    shape = g.shape[:axis] + (n,) + g.shape[axis + 1:]
    if isinstance(repeats, int):
        if repeats == 0:
            return np.zeros(shape, dtype=g.dtype)
        return g.reshape(g.shape[:axis] + (n, repeats) + g.shape[axis + 1:]).sum(axis + 1)
    out = np.zeros(shape, dtype=g.dtype)
    used = repeats > 0
    if used.any():
        starts = (np.cumsum(repeats) - repeats)[used]
        index = (slice(None),) * axis + (used,)
        out[index] = np.add.reduceat(g, starts, axis=axis)
    return out


# repeat and its gradient, the sums of consecutive runs, are each other's VJPs.
_repeat = _linear(lambda a, repeats, axis: np.repeat(a, repeats, axis), "repeat",
                  lambda g, ans, a, repeats, axis: _run_sums(g, repeats, axis, a.shape[axis]),
                  batch=_first_batched(lambda a, nd, repeats, axis: _repeat(
                      a, repeats, _shifted(axis, nd))))
_run_sums = _linear(_repeat_sum, "repeat_sum",
                    lambda g, ans, x, repeats, axis, n: _repeat(g, repeats, axis),
                    batch=_first_batched(lambda g, nd, repeats, axis, n: _run_sums(
                        g, repeats, _shifted(axis, nd), n)))


@per_example("repeats")
def repeat(a: Any, repeats: Any, axis: int | None = None) -> Any:
    """Repeat each element (numpy.repeat).

    Parameters
    ----------
    a : Tensor or array_like
    repeats : int or sequence of int
        Repetitions of each element, broadcast along ``axis``.
    axis : int, optional
        Without it the input is flattened first.

    Returns
    -------
    Tensor
    """
    a = _as_operand(a)
    if axis is None:
        a, axis = ravel(a), 0
    axis = normalize_axis_index(axis, a.ndim)
    return _repeat(a, _repeats_of(repeats), axis)


def _pad_width(pad_width, ndim: int) -> np.ndarray:
    return np.broadcast_to(np.asarray(pad_width, dtype=np.intp), (ndim, 2))


def _pad_constant_vjp(g, ans, a, pad_width, constant_values=0):
    pw = _pad_width(pad_width, a.ndim)
    return getitem(g, tuple(slice(int(lo), int(lo) + n) for (lo, _), n in zip(pw, a.shape)))


def _pad_batch(dims, a, pad_width, constant_values=0):
    if dims[1:] != (None,) * len(dims[1:]) or np.ndim(constant_values):
        return NotImplemented
    widths = np.concatenate([np.zeros((1, 2), np.intp), _pad_width(pad_width, np.ndim(a) - 1)])
    return _pad_constant(front(a, dims[0]), widths, constant_values=constant_values), 0


_pad_constant = _linear(
    lambda a, pad_width, constant_values=0: np.pad(a, pad_width, constant_values=constant_values),
    "pad", _pad_constant_vjp,
    jvp=lambda t, ans, a, pad_width, constant_values=0: _pad_constant(t, pad_width),
    batch=_pad_batch)

_GATHER_MODES = ("edge", "reflect", "symmetric", "wrap")


def pad(array: Any, pad_width: Any, mode: str = "constant", **kwargs: Any) -> Any:
    """Pad an array (numpy.pad).

    Differentiable for ``mode`` in 'constant' (``constant_values`` are constants) and the
    modes that copy elements: 'edge', 'reflect', 'symmetric', 'wrap' (their gradients
    add up the copies). On plain arrays every NumPy mode works.

    Parameters
    ----------
    array : Tensor or array_like
    pad_width : int or sequence
        ``((before_1, after_1), ...)``, broadcast like NumPy's.
    mode : str
    **kwargs
        ``constant_values`` for 'constant'; ``reflect_type='even'`` for 'reflect' and
        'symmetric'.

    Returns
    -------
    Tensor
    """
    if not isinstance(array, Tensor):
        return np.pad(array, pad_width, mode, **kwargs)
    if mode == "constant":
        return _pad_constant(array, pad_width, **kwargs)
    if mode not in _GATHER_MODES or kwargs.get("reflect_type", "even") != "even":
        raise NotImplementedError(
            f"pad: mode={mode!r} with {kwargs} is not differentiable in yaad; supported: "
            f"'constant' and {', '.join(map(repr, _GATHER_MODES))} (reflect_type='even')")
    # Pad the positions, then gather: the gradient adds up every copy of an element.
    positions = np.pad(np.arange(array.size).reshape(array.shape), pad_width, mode, **kwargs)
    return getitem(ravel(array), positions)


def diff(a: Any, n: int = 1, axis: int = -1, prepend: Any = None, append: Any = None) -> Any:
    """The n-th discrete difference along an axis (numpy.diff).

    Parameters
    ----------
    a : Tensor or array_like
    n : int
        How many times to take differences.
    axis : int
    prepend : Tensor or array_like, optional
        Values joined to ``a`` along ``axis`` first (scalars are broadcast).
    append : Tensor or array_like, optional
        Values joined to ``a`` along ``axis`` first (scalars are broadcast).

    Returns
    -------
    Tensor
    """
    a = _as_operand(a)
    if n < 0:
        raise ValueError(f"diff: order must be non-negative but got {n}")
    axis = normalize_axis_index(axis, a.ndim)
    parts = []
    for extra in (prepend, a, append):
        if extra is a:
            parts.append(a)
        elif extra is not None:
            extra = _as_operand(extra)
            if extra.ndim == 0:
                extra = broadcast_to(extra, a.shape[:axis] + (1,) + a.shape[axis + 1:])
            parts.append(extra)
    if len(parts) > 1:
        a = concatenate(parts, axis=axis)
    lead = (slice(None),) * axis
    for _ in range(n):
        a = getitem(a, lead + (slice(1, None),)) - getitem(a, lead + (slice(None, -1),))
    return a


# ---- diagonals and triangles -------------------------------------------------------

def _diag_embed(d, shape, offset=0, axis1=0, axis2=1):
    out = np.zeros(shape, dtype=d.dtype)
    view = np.moveaxis(out, (axis1, axis2), (-2, -1))
    k = d.shape[-1]
    view[..., np.arange(k) + max(-offset, 0), np.arange(k) + max(offset, 0)] = d
    return out


diagonal = _linear(lambda a, offset=0, axis1=0, axis2=1: np.diagonal(a, offset, axis1, axis2),
                   "diagonal",
                   lambda g, ans, a, offset=0, axis1=0, axis2=1: diag_embed(
                       g, a.shape, offset, axis1, axis2),
                   batch=_first_batched(lambda a, nd, offset=0, axis1=0, axis2=1: diagonal(
                       a, offset, _shifted(axis1, nd), _shifted(axis2, nd))))
diagonal.__doc__ = """Diagonals of an array (numpy.diagonal, a read-only view).

Parameters
----------
a : Tensor or array_like
    At least 2-D.
offset : int
    Above (> 0) or below (< 0) the main diagonal.
axis1 : int, optional
    The axes of the 2-D sub-arrays; the diagonal becomes the last axis of the result.
axis2 : int, optional
    The axes of the 2-D sub-arrays; the diagonal becomes the last axis of the result.

Returns
-------
Tensor
"""

diag_embed = _linear(_diag_embed, "diag_embed",
                     lambda g, ans, d, shape, offset=0, axis1=0, axis2=1: diagonal(
                         g, offset, axis1, axis2),
                     batch=_first_batched(lambda d, nd, shape, offset=0, axis1=0, axis2=1:
                                          diag_embed(d, d.shape[:1] + tuple(shape), offset,
                                                     _shifted(axis1, len(shape)),
                                                     _shifted(axis2, len(shape)))))
diag_embed.__doc__ = """Zeros of ``shape`` with ``d`` on a diagonal (inverse of :func:`diagonal`).

Parameters
----------
d : Tensor or array_like
    The diagonal values in the last axis (the shape ``diagonal`` would return).
shape : tuple of int
offset : int
axis1 : int, optional
    As for :func:`diagonal`.
axis2 : int, optional
    As for :func:`diagonal`.

Returns
-------
Tensor
"""


def diag(v: Any, k: int = 0) -> Any:
    """Extract a diagonal, or build a diagonal matrix (numpy.diag).

    Parameters
    ----------
    v : Tensor or array_like
        2-D: its k-th diagonal is returned. 1-D: the matrix with ``v`` on the k-th
        diagonal is returned.
    k : int

    Returns
    -------
    Tensor
    """
    v = _as_operand(v)
    if v.ndim == 1:
        n = v.shape[0] + abs(k)
        return diag_embed(v, (n, n), k, 0, 1)
    if v.ndim == 2:
        return diagonal(v, k)
    raise ValueError(f"diag: the input must be 1-D or 2-D, got shape {v.shape}")


triu = _linear(lambda m, k=0: np.triu(m, k), "triu", lambda g, ans, m, k=0: triu(g, k),
               batch=_first_batched(lambda m, nd, k=0: triu(m, k) if nd >= 2 else
                                    NotImplemented))
triu.__doc__ = """Upper triangle of (a batch of) matrices (numpy.triu): zeros below diagonal k.

Parameters
----------
m : Tensor or array_like
k : int

Returns
-------
Tensor
"""

tril = _linear(lambda m, k=0: np.tril(m, k), "tril", lambda g, ans, m, k=0: tril(g, k),
               batch=_first_batched(lambda m, nd, k=0: tril(m, k) if nd >= 2 else
                                    NotImplemented))
tril.__doc__ = """Lower triangle of (a batch of) matrices (numpy.tril): zeros above diagonal k.

Parameters
----------
m : Tensor or array_like
k : int

Returns
-------
Tensor
"""


# ---- indexing ------------------------------------------------------------------------

def unwrap_index(idx: Any) -> Any:
    """An index with lists frozen into arrays.

    Indices carry no gradient. A list is turned into an array (NumPy reads it as one),
    so that changing the list later cannot change a recorded index. Tensors stay: the op
    reads their values (so a compiled replay indexes with the new ones).

    Parameters
    ----------
    idx : any index

    Returns
    -------
    index
    """
    if isinstance(idx, tuple):
        for i in idx:  # (only a list changes: a tuple without one is kept as it is)
            if isinstance(i, list):
                return tuple([_unwrap_one(i) for i in idx])
        return idx
    return _unwrap_one(idx)


def _unwrap_one(i):
    if isinstance(i, Tensor):
        return i
    if isinstance(i, list):
        if not i:
            return np.zeros(0, dtype=np.intp)
        return np.asarray([_unwrap_one(v) for v in i])
    return i


_BASIC = (int, np.integer, slice, type(None), type(Ellipsis))


def _index_parts(idx, ndim: int):
    """The integer arrays of an advanced index, the lengths of the axes they index, and
    whether they index every axis; None when the index is not understood (the caller
    then takes the always-correct slow path)."""
    if not isinstance(idx, tuple):
        idx = (idx,)
    used = builtins.sum(i.ndim if isinstance(i, ndarray) and i.dtype == bool else
                        0 if i is None or i is Ellipsis else 1 for i in idx)
    arrays, axes, axis, slices = [], [], 0, False
    for i in idx:
        if i is Ellipsis:
            slices = slices or ndim - used > 0
            axis += ndim - used
        elif i is None:
            continue
        elif isinstance(i, slice):
            slices = True
            axis += 1
        elif isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_)):
            axis += 1
        elif isinstance(i, ndarray) and i.dtype == bool and i.ndim == 0:
            if not i:  # (x[False] addresses nothing)
                return None
            continue  # (x[True] is x[None]: a new axis of length one)
        elif isinstance(i, ndarray) and i.dtype == bool:
            arrays.extend(np.nonzero(i))
            axes.extend(range(axis, axis + i.ndim))
            axis += i.ndim
        elif isinstance(i, ndarray) and i.dtype.kind in "iu":
            arrays.append(i)
            axes.append(axis)
            axis += 1
        else:
            return None
    return arrays, axes, not slices and axis >= ndim


def _has_repeats(arrays: list, axes: list, shape: tuple) -> bool:
    """Whether an advanced index addresses some element more than once."""
    dims = tuple(shape[a] for a in axes)
    if len(arrays) == 1:
        flat = arrays[0].ravel()
    else:
        flat = np.ravel_multi_index(np.broadcast_arrays(*arrays), dims, mode="wrap").ravel()
    k = flat.size
    if k < 2:
        return False
    n = math.prod(dims)
    if n <= 16 * k:  # mark the addressed elements (negative indices wrap as in indexing)
        seen = np.zeros(n, dtype=bool)
        seen[flat] = True
        return int(np.count_nonzero(seen)) < k
    flat = np.sort(flat % n)
    return bool((flat[1:] == flat[:-1]).any())


def _repeats(idx, shape: tuple) -> bool | None:
    """False when ``idx`` writes every element at most once, True when it may repeat one,
    None for advanced indices that cover every axis (element scatter: ``np.add.at`` is
    fast enough there to skip the check)."""
    if isinstance(idx, _BASIC):
        return False
    if type(idx) is tuple:  # (an element, a block: x[i, j], x[i, :2])
        for i in idx:
            if not isinstance(i, _BASIC):
                break
        else:
            return False
    parts = _index_parts(idx, len(shape))
    if parts is None:
        return True
    arrays, axes, every_axis = parts
    if not arrays:
        return False
    if isinstance(idx, ndarray) and idx.dtype == bool:
        return False
    if every_axis:
        return None
    return _has_repeats(arrays, axes, shape)


def _scatter_add(values, idx, shape):
    dtype = getattr(values, "dtype", None) or np.result_type(values)
    out = np.zeros(shape, dtype=dtype)
    if _repeats(idx, shape) is False:
        out[idx] = values
    else:
        np.add.at(out, idx, values)
    return out


def _scatter_into(acc, g, ans, a, idx):
    """getitem's gradient added into ``acc``, the pending gradient of its input that nothing
    else holds (``Op.adds_into``): ``acc + scatter_add(g, idx, a.shape)`` without the zeros."""
    if acc.shape != a.shape or acc.dtype != a.dtype or getattr(g, "dtype", None) != acc.dtype:
        return acc + _scatter_add(g, idx, a.shape)
    if _repeats(idx, acc.shape) is False:
        acc[idx] += g
    else:
        np.add.at(acc, idx, g)
    return acc


_ELLIPSIS = (Ellipsis,)


def _getitem(a, idx):
    # An element (x[1], x[0, 2]) is a 0-d view, as in PyTorch, where NumPy gives a scalar
    # copy: in-place changes of the element and of x then see each other. A trailing
    # Ellipsis changes no other index (an index with one already raises: the general way).
    if type(idx) is tuple and type(a) is ndarray:
        try:
            return a[idx + _ELLIPSIS]
        except IndexError:
            pass
    out = a[idx]
    if type(out) is ndarray or not isinstance(a, ndarray):
        return out
    return a[(*idx, Ellipsis) if isinstance(idx, tuple) else (idx, Ellipsis)]


def _batched_index(idx) -> tuple[tuple, int]:
    """An index of one example as an index of the batch (batch axis in front), and where
    the batch axis lands in the result: in front, unless the example's advanced indices
    (arrays, and integers along with them) are apart, when NumPy puts theirs first."""
    idx = idx if isinstance(idx, tuple) else (idx,)
    arrays = [k for k, i in enumerate(idx) if isinstance(i, (ndarray, list, Tensor))]
    if not arrays:
        return (slice(None),) + idx, 0
    adv = [k for k, i in enumerate(idx) if k in arrays or (
        isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_)))]
    if adv == list(range(adv[0], adv[-1] + 1)):
        return (slice(None),) + idx, 0
    shapes = [(int(np.count_nonzero(_values(i))),) if dtype_of(i).kind == "b" else shape_of(i)
              for i in (idx[k] for k in adv)]  # (a mask: its number of entries selected)
    return (slice(None),) + idx, len(np.broadcast_shapes(*shapes))


def _getitem_batch(dims, a, idx):
    if dims[1] is None:
        idx, out_dim = _batched_index(idx)
        return getitem(front(a, dims[0]), idx), out_dim
    # Integer index arrays differing per example, in front of the index (a[i], a[i, j],
    # take_along_axis): a[arange(n), i, j] on the batch.
    parts, pdims = (idx, dims[1]) if type(dims[1]) is list else ((idx,), [dims[1]])
    if not all(isinstance(p, (Tensor, ndarray, int, np.integer)) for p in parts):
        return NotImplemented
    arrays = [front(p, d) for p, d in zip(parts, pdims)]
    for p in arrays:
        if isinstance(p, (Tensor, ndarray)) and (p.dtype.kind not in "iu" or batch_axes(p)):
            return NotImplemented  # a mask, or batched at another level too
    n = size_of(parts, pdims)
    ndim = builtins.max(np.ndim(p) - (d is not None) for p, d in zip(parts, pdims))
    arrays = [_values(p) if d is None else np.reshape(
        _values(p), (n,) + (1,) * (ndim + 1 - np.ndim(p)) + np.shape(p)[1:])
        for p, d in zip(arrays, pdims)]
    a = front(a, dims[0]) if dims[0] is not None else broadcast_to(a, (n,) + np.shape(a))
    rows = np.arange(n).reshape((n,) + (1,) * ndim)
    return getitem(a, (rows, *arrays)), 0


getitem = _linear(_getitem, "getitem",
                  lambda g, ans, a, idx: scatter_add(g, idx, a.shape), batch=_getitem_batch)
getitem.op.selects = True  # the gradient is exactly zero off the selection


def _items(idx):
    return idx if isinstance(idx, tuple) else (idx,)


def _advanced_index_freed(node):
    """A getitem node with an advanced index is freed by backward (PyTorch saves the index
    tensor, so a second backward without retain_graph raises); basic indexing is not."""
    for i in _items(node.args[1]):  # (a loop, no generator: every indexing node runs it)
        if not (i is None or i is Ellipsis or isinstance(i, _BASIC_INDEX)):
            return True
    return False


_BASIC_INDEX = (int, np.integer, slice)


def _partial_put_freed(node):
    """An index_put node is freed by backward unless it writes the whole tensor
    (``t[...] = v``, ``t[:] = v``, ``fill_``, ``copy_``), as in PyTorch."""
    args = node.args
    idx = args[2] if len(args) > 2 else node.kw["idx"]
    return not all(i is Ellipsis or (type(i) is slice and i == slice(None)) for i in _items(idx))


getitem.op.frees = _advanced_index_freed
getitem.op.adds_into = _scatter_into
getitem.__doc__ = """``a[idx]`` with basic, advanced and boolean indices (NumPy semantics).

Basic indices give views. The gradient is scattered back, adding up repeated indices.

Parameters
----------
a : Tensor or array_like
idx : index
    Without tensors (see :func:`unwrap_index`).

Returns
-------
Tensor
"""

def _values_for(values, d, idx, shape):
    """Values put at ``idx`` of an array of ``shape`` per example, laid out for the index
    of the batch; with the batch index and the shape of the batch."""
    n = np.shape(values)[d]
    bidx, at = _batched_index(idx)
    target = np.broadcast_to(np.zeros((), np.int8), shape)[idx].shape
    v = aligned((values,), (d,), len(target))[0]
    return (v if at == 0 else moveaxis(v, 0, at)), bidx, (n,) + tuple(shape)


def _scatter_add_batch(dims, values, idx, shape):
    if dims[1:] != (None, None):
        return NotImplemented
    v, bidx, bshape = _values_for(values, dims[0], idx, shape)
    return scatter_add(v, bidx, bshape), 0


scatter_add = _linear(_scatter_add, "scatter_add",
                      lambda g, ans, values, idx, shape: getitem(g, idx),
                      batch=_scatter_add_batch)
scatter_add.__doc__ = """Zeros of ``shape`` with ``values`` added at ``idx`` (repeats add up).

The gradient of indexing. A plain assignment when no element is addressed twice,
``numpy.add.at`` otherwise.

Parameters
----------
values : Tensor or array_like
    Shaped like ``zeros(shape)[idx]`` (or broadcastable to it).
idx : index
shape : tuple of int

Returns
-------
Tensor
"""


def _index_put(a, values, idx):
    out = np.array(a) if isinstance(a, np.generic) else a.copy()  # (a 0-d result: a scalar)
    out[idx] = values
    return out


def _index_put_(a, values, idx):
    a[idx] = values
    mark_modified(a)
    return a


def _written(idx, shape: tuple):
    """Which entries of ``a[idx]`` survive ``a[idx] = values`` (with repeated indices only
    one write per element lands); None when every entry does."""
    repeats = _repeats(idx, shape)
    if repeats is None:
        arrays, axes, _ = _index_parts(idx, len(shape))
        repeats = _has_repeats(arrays, axes, shape)
    if not repeats:
        return None
    tag = np.full(shape, -1, dtype=np.intp)
    order = np.arange(tag[idx].size).reshape(tag[idx].shape)
    tag[idx] = order
    return tag[idx] == order


def _index_put_values_vjp(g, ans, a, values, idx):
    g = getitem(g, idx)
    survived = _written(idx, a.shape)
    if survived is not None:
        g = g * survived
    extra = np.ndim(values) - g.ndim
    if extra > 0:  # NumPy drops leading axes of length 1 of values (y[:] = v[None])
        g = reshape(g, (1,) * extra + g.shape)
    elif extra < 0:  # values broadcast to a[idx], which may have more axes than the
        # output (y[None, :] = v): sum those here, the engine reduces the rest
        g = _own_sum(g, tuple(range(-extra)))
    return g


def _index_put_batch(inplace: bool):
    def batch(dims, a, values, idx):
        if inplace and (dims[0] is None or dims[2] is not None):
            raise ValueError(
                "vmap: a[idx] = values in place, where a has no batch axis (its values "
                "could not differ from example to example) or idx differs from example to "
                "example. Write a = yaad.index_put(a, values, idx) instead.")
        if dims[2] is not None:
            return NotImplemented
        if dims[0] is None:
            a = broadcast_to(a, (np.shape(values)[dims[1]],) + np.shape(a))
        else:
            a = front(a, dims[0])
        if dims[1] is None:
            bidx, _ = _batched_index(idx)
            v = values
        else:
            v, bidx, _ = _values_for(values, dims[1], idx, a.shape[1:])
        if not inplace:
            return index_put(a, v, bidx), 0
        # the tensor written keeps its layout (its batch axis where it was)
        return moveaxis(index_put_(a, v, bidx), 0, dims[0]), dims[0]

    return batch


_index_put_rules = dict(
    vjp=(lambda g, ans, a, values, idx: index_put(g, 0, idx), _index_put_values_vjp),
    jvp=(lambda t, ans, a, values, idx: index_put(t, 0, idx),
         lambda t, ans, a, values, idx: index_put(np.zeros(a.shape, t.dtype), t, idx)))

index_put = op(_index_put, name="index_put", save_args=False, save_ans=False, selects=True,
               batch=_index_put_batch(False), **_index_put_rules)
index_put.__doc__ = """A copy of ``a`` with ``a[idx] = values`` (the out-of-place setitem).

Where an index repeats, only the value NumPy writes last gets a gradient.

Parameters
----------
a : Tensor or array_like
values : Tensor or array_like
    Broadcast to the shape of ``a[idx]``.
idx : index

Returns
-------
Tensor
"""

# ``a[idx] = values`` in the memory of ``a`` (recorded by ``Tensor.__setitem__``).
index_put_ = op(_index_put_, name="index_put_", save_args=False, save_ans=False,
                selects=True, batch=_index_put_batch(True), **_index_put_rules)
index_put.op.frees = index_put_.op.frees = _partial_put_freed
index_put_.__doc__ = """``a[idx] = values`` in place, returning ``a`` (the recorded setitem).

The rules are those of :func:`index_put`. Use ``a[idx] = values`` on tensors instead:
it also checks leaves, views and versions.

Parameters
----------
a : array
values : Tensor or array_like
idx : index

Returns
-------
Tensor
"""


def take(a: Any, indices: Any, axis: int | None = None, out: Any = None,
         mode: str = "raise") -> Any:
    """Take elements along an axis (numpy.take).

    Parameters
    ----------
    a : Tensor or array_like
    indices : int or array_like of int
    axis : int, optional
        Without it the input is flattened first.
    out : None
        Not supported (raises TypeError).
    mode : {'raise', 'wrap', 'clip'}
        How out-of-range indices behave.

    Returns
    -------
    Tensor
    """
    _no_out("take", out)
    a = _as_operand(a)
    if axis is None:
        a, axis = ravel(a), 0
    axis = normalize_axis_index(axis, a.ndim)
    if not isinstance(indices, Tensor):  # (a tensor's values are read by the ops below)
        indices = np.asarray(indices)
    n = a.shape[axis]
    if mode == "wrap":
        indices = np.mod(indices, n)
    elif mode == "clip":
        indices = np.clip(indices, 0, n - 1)
    elif mode != "raise":
        raise ValueError(f"take: mode must be 'raise', 'wrap' or 'clip', got {mode!r}")
    if batch_axes(indices):  # differing per example (vmap): an index array of its own
        k = indices.ndim
        out = getitem(moveaxis(a, axis, 0), indices)
        return moveaxis(out, tuple(range(k)), tuple(range(axis, axis + k))) if axis else out
    if indices.ndim == 0 and not isinstance(indices, Tensor):
        indices = int(indices)
    return getitem(a, (slice(None),) * axis + (indices,))


def take_along_axis(arr: Any, indices: Any, axis: int | None = -1) -> Any:
    """Take values at matching 1-D index positions (numpy.take_along_axis).

    Parameters
    ----------
    arr : Tensor or array_like
    indices : array_like of int
        Same number of dimensions as ``arr``, broadcasting against it off ``axis``.
    axis : int or None
        None flattens ``arr`` (``indices`` must then be 1-D).

    Returns
    -------
    Tensor
    """
    arr = _as_operand(arr)
    if not isinstance(indices, Tensor):  # (a tensor's values are read by getitem)
        indices = np.asarray(indices)
    if axis is None:
        arr, axis = ravel(arr), 0
    axis = normalize_axis_index(axis, arr.ndim)
    if indices.ndim != arr.ndim:
        raise ValueError(f"take_along_axis: indices and arr must have the same number of "
                         f"dimensions, got {indices.ndim} and {arr.ndim}")
    if indices.dtype.kind not in "iu":
        raise IndexError(f"take_along_axis: indices must be integers, got {indices.dtype}")
    ndim = arr.ndim
    fancy = tuple(indices if d == axis else
                  np.arange(n).reshape((1,) * d + (n,) + (1,) * (ndim - d - 1))
                  for d, n in enumerate(arr.shape))
    return getitem(arr, fancy)


# (the helpers of the batching rules are for the ops modules, not yaad's namespace)
# ---- the bodies on other libraries' arrays, in their array API namespace xp (yaad.backend) --

@implements("reshape")
def _reshape_xp(xp, a, shape, order="C"):
    if order != "C":
        raise NotImplementedError(f"order={order!r}: C order only")
    return xp.reshape(a, (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape))


@implements("transpose")
def _transpose_xp(xp, a, axes=None):
    return xp.permute_dims(a, tuple(range(a.ndim - 1, -1, -1)) if axes is None else tuple(axes))


@implements("swapaxes")
def _swapaxes_xp(xp, a, axis1, axis2):
    axes = list(range(a.ndim))
    i, j = normalize_axis_index(axis1, a.ndim), normalize_axis_index(axis2, a.ndim)
    axes[i], axes[j] = j, i
    return xp.permute_dims(a, tuple(axes))


implements("moveaxis")(lambda xp, a, source, destination: xp.moveaxis(a, source, destination))
implements("broadcast_to")(lambda xp, a, shape, subok=False: xp.broadcast_to(a, tuple(shape)))
implements("copy")(lambda xp, a: xp.asarray(a, copy=True))
implements("tril")(lambda xp, m, k=0: xp.tril(m, k=k))
implements("diagonal")(lambda xp, a, offset=0, axis1=0, axis2=1: xp.linalg.diagonal(
    xp.moveaxis(a, (axis1, axis2), (-2, -1)), offset=offset))
implements("triu")(lambda xp, m, k=0: xp.triu(m, k=k))
implements("flip")(lambda xp, m, axis=None: xp.flip(m, axis=axis))
implements("roll")(lambda xp, a, shift, axis=None: xp.roll(a, shift, axis=axis))
implements("tile")(lambda xp, a, reps: xp.tile(a, (reps,) if isinstance(reps, int) else reps))


@implements("expand_dims")
def _expand_dims_xp(xp, a, axis):
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    for ax in sorted(normalize_axis_tuple(axes, a.ndim + len(axes))):
        a = xp.expand_dims(a, axis=ax)
    return a


@implements("squeeze")
def _squeeze_xp(xp, a, axis=None):
    if axis is None:
        axis = tuple(k for k, n in enumerate(a.shape) if n == 1)
    return xp.squeeze(a, axis=axis)


@implements("astype")
def _astype_xp(xp, a, dtype, copy=True):
    return xp.astype(a, native_dtype(xp, dtype), copy=copy)


def _joined_xp(name, fn):
    def forward(xp, *arrays, axis=0, dtype=None, casting="same_kind"):
        if dtype is not None:
            arrays = tuple(xp.astype(a, native_dtype(xp, dtype)) for a in arrays)
        if axis is None:
            arrays, axis = tuple(xp.reshape(a, (-1,)) for a in arrays), 0
        return getattr(xp, fn)(arrays, axis=axis)

    implements(name)(forward)


def _full_index(idx):
    """An index with a trailing Ellipsis: the array API indexes no axis implicitly."""
    idx = idx if isinstance(idx, tuple) else (idx,)
    return idx if any(i is Ellipsis for i in idx) else (*idx, Ellipsis)


@implements("getitem")
def _getitem_xp(xp, a, idx):
    if not _has_array(idx):
        return a[_full_index(idx)]
    for index in (_full_index(idx), _device_index(xp, idx)):
        try:  # the library's own advanced indexing (CuPy, Dask: NumPy's semantics)
            return a[index]
        except (IndexError, TypeError, ValueError, NotImplementedError):
            pass
    plan = _take_plan(xp, idx, a.shape)
    b = a[plan.basic]
    flat = xp.reshape(xp.permute_dims(b, plan.perm), (-1, *plan.rest))
    out = xp.reshape(xp.take(flat, plan.flat_index, axis=0), (*plan.shape, *plan.rest))
    return out if plan.at == 0 else xp.moveaxis(out, plan.moved, plan.to)


@implements("scatter_add")
def _scatter_add_xp(xp, values, idx, shape):
    if _has_array(idx) and backend_name(values) == "cupy":
        import cupyx

        out = xp.zeros(shape, dtype=values.dtype)
        cupyx.scatter_add(out, _device_index(xp, idx), values)
        return out
    if _has_array(idx) and backend_name(values) != "dask":
        # The gradient of a gather: a product with the one-hot matrix of the index
        # (adds repeated entries; the array API has no scatter-add).
        plan = _take_plan(xp, idx, shape)
        v = values if plan.at == 0 else xp.moveaxis(values, plan.to, plan.moved)
        v = xp.reshape(v, (-1, math.prod(plan.rest)))
        n = math.prod(plan.adv_shape)
        hot = xp.astype(xp.arange(n)[:, None] == plan.flat_index[None, :], values.dtype)
        r = xp.reshape(hot @ v, (*plan.adv_shape, *plan.rest))
        values, idx = xp.permute_dims(r, tuple(np.argsort(plan.perm))), plan.basic
    elif _repeats(idx, shape) is not False:
        raise NotImplementedError("an index that may address an element twice: no "
                                  "numpy.add.at in the array API")
    idx = _full_index(idx)
    if any(i is None for i in idx):  # new axes (x[None]): none in the assignment
        idx = tuple(i for i in idx if i is not None)
        values = xp.reshape(values, np.broadcast_to(np.empty(()), shape)[idx].shape)
    out = xp.zeros(shape, dtype=values.dtype)
    out[idx] = values
    return out


def _has_array(idx):
    return any(hasattr(i, "shape") and hasattr(i, "dtype") or isinstance(i, list)
               for i in (idx if isinstance(idx, tuple) else (idx,)))


def _device_index(xp, idx):
    """The index with its NumPy arrays and lists as arrays of namespace ``xp`` (an index is
    not data: CuPy moves one to the device itself)."""
    return tuple(xp.asarray(i) if isinstance(i, (ndarray, list)) else i
                 for i in (idx if isinstance(idx, tuple) else (idx,)))


class _TakePlan(NamedTuple):
    basic: tuple  # the slices (every axis kept), applied first
    perm: tuple  # then the indexed axes to the front
    adv_shape: tuple  # their lengths
    rest: tuple  # the lengths of the other axes
    flat_index: Any  # the flat positions taken from the indexed axes (1-d, of xp)
    shape: tuple  # the broadcast shape of the index arrays
    at: int  # where NumPy puts the indexed result: 0 in front, else 1
    moved: tuple  # the result's axes that move there
    to: tuple


def _take_plan(xp, idx, shape):
    """NumPy's advanced index (integer and boolean arrays, integers and slices) as one
    ``take`` from the indexed axes flattened, the way the array API can say it."""
    parts = []
    for i in _device_index(xp, idx):
        if hasattr(i, "dtype") and dtype_kind(i.dtype) == "b":
            parts.extend(xp.nonzero(i))  # (a mask: the positions it selects)
        elif i is None:
            raise NotImplementedError("an advanced index with new axes (None)")
        else:
            parts.append(i)
    dots = [k for k, i in enumerate(parts) if i is Ellipsis]
    if len(dots) > 1 or len(parts) - len(dots) > len(shape):
        raise IndexError(f"too many indices for an array of shape {shape}")
    if dots:
        parts[dots[0]:dots[0] + 1] = [slice(None)] * (len(shape) - len(parts) + 1)
    parts += [slice(None)] * (len(shape) - len(parts))
    adv = [k for k, i in enumerate(parts) if not isinstance(i, slice)]
    arrays = [xp.asarray(parts[k]) for k in adv]
    for k, i in zip(adv, arrays):
        n = shape[k]
        if dtype_kind(i.dtype) not in "iu":
            raise IndexError(f"index arrays must be integers or booleans, got {i.dtype}")
        if i.size and bool(xp.any(i >= n) | xp.any(i < -n)):
            raise IndexError(f"an index is out of bounds for axis {k} of length {n}")
    basic = tuple(slice(None) if k in adv else i for k, i in enumerate(parts))
    sliced = np.broadcast_to(np.empty(()), shape)[basic].shape
    adv_shape = tuple(sliced[k] for k in adv)
    index_shape = np.broadcast_shapes(*(tuple(i.shape) for i in arrays))
    flat = 0
    for i, n in zip(arrays, adv_shape):  # (negative positions count from the end)
        flat = flat * n + (i % n if n else i)
    flat = xp.reshape(xp.broadcast_to(flat, index_shape), (-1,))
    others = [k for k in range(len(shape)) if k not in adv]
    together = adv == list(range(adv[0], adv[-1] + 1))
    at = adv[0] if together else 0
    nd = len(index_shape)
    return _TakePlan(basic, tuple(adv + others), adv_shape, tuple(sliced[k] for k in others),
                     flat, index_shape, at, tuple(range(nd)), tuple(range(at, at + nd)))


_joined_xp("concatenate", "concat")
_joined_xp("stack", "stack")

# The array API's spellings of NumPy's names (NumPy 2 has both).
concat = concatenate
permute_dims = transpose

__all__ = [name for name in exported(globals())
           if name not in ("front", "flat_examples", "aligned", "columns")]


@implements("diag_embed")
def _diag_embed_xp(xp, d, shape, offset=0, axis1=0, axis2=1):
    # The diagonal times an identity shifted by ``offset`` (no item assignment).
    nd = len(shape)
    axis1, axis2 = normalize_axis_index(axis1, nd), normalize_axis_index(axis2, nd)
    rows, cols = shape[axis1], shape[axis2]
    eye = xp.eye(rows, cols, k=offset, dtype=d.dtype)
    size = rows if offset >= 0 else cols
    d = xp.concat([d, xp.zeros(d.shape[:-1] + (size - d.shape[-1],), dtype=d.dtype)], axis=-1)
    out = d[..., :, None] * eye if offset >= 0 else d[..., None, :] * eye
    return xp.moveaxis(out, (-2, -1), (axis1, axis2))
