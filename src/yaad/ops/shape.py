"""Shape, dtype and indexing operations (NumPy names and semantics)."""

from __future__ import annotations

import numpy as np

from ..op import exported, op
from ..tensor import Tensor


def _normalize_axes(axis, ndim: int) -> tuple:
    if axis is None:
        return tuple(range(ndim))
    if not isinstance(axis, tuple):
        axis = (axis,) if not isinstance(axis, list) else tuple(axis)
    return tuple(sorted(a % ndim if ndim else a for a in axis))


# ---- reshaping ---------------------------------------------------------------------

def _reshape(a, shape):
    return np.reshape(a, shape)


reshape = op(_reshape, name="reshape", save_args=False, save_ans=False, linear=True,
             vjp=lambda g, ans, a, shape: reshape(g, a.shape))
reshape.__doc__ = """Give a new shape to an array without changing its data (numpy.reshape)."""


def ravel(a, order: str = "C"):
    """Return a flattened array (numpy.ravel)."""
    if order != "C":
        raise ValueError(f"ravel: only order='C' is supported, got order={order!r}")
    return reshape(a, (-1,))


def _transpose(a, axes=None):
    return np.transpose(a, axes)


def _transpose_vjp(g, ans, a, axes=None):
    if axes is None:
        return transpose(g)
    return transpose(g, tuple(np.argsort([ax % a.ndim for ax in axes])))


transpose = op(_transpose, name="transpose", save_args=False, save_ans=False, linear=True,
               vjp=_transpose_vjp)
transpose.__doc__ = """Permute the axes (numpy.transpose); reverses them by default."""


def _swapaxes(a, axis1, axis2):
    return np.swapaxes(a, axis1, axis2)


swapaxes = op(_swapaxes, name="swapaxes", save_args=False, save_ans=False, linear=True,
              vjp=lambda g, ans, a, axis1, axis2: swapaxes(g, axis1, axis2))
swapaxes.__doc__ = """Interchange two axes (numpy.swapaxes)."""


def matrix_transpose(x):
    """Swap the last two axes (numpy.matrix_transpose, ``x.mT``)."""
    if np.ndim(x) < 2:
        raise ValueError(f"matrix_transpose: the input must have at least 2 dimensions, "
                         f"got shape {np.shape(x)}")
    return swapaxes(x, -1, -2)


def _moveaxis(a, source, destination):
    return np.moveaxis(a, source, destination)


moveaxis = op(_moveaxis, name="moveaxis", save_args=False, save_ans=False, linear=True,
              vjp=lambda g, ans, a, source, destination: moveaxis(g, destination, source))
moveaxis.__doc__ = """Move axes to new positions (numpy.moveaxis)."""


def _expand_dims(a, axis):
    return np.expand_dims(a, axis)


expand_dims = op(_expand_dims, name="expand_dims", save_args=False, save_ans=False,
                 linear=True, vjp=lambda g, ans, a, axis: reshape(g, a.shape))
expand_dims.__doc__ = """Insert axes of length one (numpy.expand_dims)."""


def _squeeze(a, axis=None):
    return np.squeeze(a, axis)


squeeze = op(_squeeze, name="squeeze", save_args=False, save_ans=False, linear=True,
             vjp=lambda g, ans, a, axis=None: reshape(g, a.shape))
squeeze.__doc__ = """Remove axes of length one (numpy.squeeze)."""


def _broadcast_to(a, shape):
    return np.broadcast_to(a, shape)


# The engine sums the gradient back over the broadcast axes.
broadcast_to = op(_broadcast_to, name="broadcast_to", save_args=False, save_ans=False,
                  linear=True, vjp=lambda g, ans, a, shape: g)
broadcast_to.__doc__ = """Broadcast an array to a shape (numpy.broadcast_to, read-only)."""


def _astype(a, dtype, copy=True):
    return a.astype(dtype, copy=copy) if hasattr(a, "astype") else np.asarray(a, dtype)


# The engine casts the gradient back to the input's dtype (the real part for a real one).
astype = op(_astype, name="astype", save_args=False, save_ans=False, linear=True,
            vjp=lambda g, ans, a, dtype, copy=True: g)
astype.__doc__ = """Cast to a dtype (numpy.astype); the gradient is cast back."""


def _copy(a):
    return np.array(a, copy=True)


copy = op(_copy, name="copy", save_args=False, save_ans=False, linear=True,
          vjp=lambda g, ans, a: g)
copy.__doc__ = """A copy of the array (numpy.copy); ``Tensor.clone()`` in PyTorch terms."""


# ---- indexing ----------------------------------------------------------------------

def _is_basic_index(idx) -> bool:
    if not isinstance(idx, tuple):
        idx = (idx,)
    for i in idx:
        if not (i is None or i is Ellipsis or isinstance(i, (int, np.integer, slice))):
            return False
    return True


def unwrap_index(idx):
    """Replace tensors inside an index by their arrays (indices carry no gradient)."""
    if isinstance(idx, Tensor):
        return idx.data
    if isinstance(idx, tuple):
        return tuple(i.data if isinstance(i, Tensor) else i for i in idx)
    if isinstance(idx, list) and any(isinstance(i, Tensor) for i in idx):
        return [i.data if isinstance(i, Tensor) else i for i in idx]
    return idx


def _getitem(a, idx):
    return a[idx]


getitem = op(_getitem, name="getitem", save_args=False, save_ans=False, linear=(0,),
             selects=True, vjp=(lambda g, ans, a, idx: scatter_add(g, idx, a.shape),))
getitem.__doc__ = """``a[idx]`` with basic, advanced and boolean indices."""


def _scatter_add(values, idx, shape):
    out = np.zeros(shape, dtype=values.dtype)
    if _is_basic_index(idx) or (isinstance(idx, np.ndarray) and idx.dtype == bool):
        out[idx] = values
    else:
        np.add.at(out, idx, values)
    return out


scatter_add = op(_scatter_add, name="scatter_add", save_args=False, save_ans=False,
                 linear=(0,), vjp=(lambda g, ans, values, idx, shape: getitem(g, idx),))
scatter_add.__doc__ = """Zeros of ``shape`` with ``values`` added at ``idx`` (repeats add up).

The gradient of indexing; ``values`` must have the shape of ``zeros(shape)[idx]``."""


def _index_put(a, values, idx):
    out = a.copy()
    out[idx] = values
    return out


def _index_put_vjp_a(g, ans, a, values, idx):
    return index_put(g, 0, idx)


index_put = op(_index_put, name="index_put", save_args=False, save_ans=False, selects=True,
               vjp=(_index_put_vjp_a, lambda g, ans, a, values, idx: getitem(g, idx)),
               jvp=(lambda t, ans, a, values, idx: index_put(t, 0, idx),
                    lambda t, ans, a, values, idx: index_put(zeros_like_any(ans), t, idx)))
index_put.__doc__ = """A copy of ``a`` with ``a[idx] = values`` (the out-of-place setitem)."""


def zeros_like_any(x):
    """Zeros with the shape and dtype of ``x`` (a plain array, never recorded)."""
    return np.zeros(x.shape, dtype=x.dtype)

__all__ = exported(globals())
