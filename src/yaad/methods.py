"""Tensor operators and methods, bound to the yaad functions of the same names.

Operators are the op functions themselves (no wrapper layer), so ``a * b`` costs what
``yaad.multiply(a, b)`` does. In-place operators record an out-of-place op and write its
result into the tensor's memory (NumPy semantics), bumping the version.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .grad_mode import state
from .op import mark_modified
from .tensor import Tensor

_new = object.__new__

# NumPy method names (and a few PyTorch ones) that call the yaad function of that name
# with the tensor first. Names missing from the namespace are skipped.
METHOD_NAMES = (
    "sum", "mean", "prod", "std", "var", "cumsum", "cumprod", "argmax", "argmin", "argsort",
    "sort", "all", "any", "nonzero", "ptp", "clip", "round", "trace", "diagonal", "dot",
    "squeeze", "swapaxes", "astype", "repeat", "take", "ravel", "nansum", "nanmean",
    "logsumexp", "searchsorted",
    # PyTorch-style elementwise methods
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "square", "sin", "cos",
    "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh",
    "arctanh", "sigmoid", "relu", "softplus", "reciprocal", "sign", "sgn", "floor", "ceil",
    "trunc", "angle", "erf", "erfc", "maximum", "minimum", "where", "matmul", "outer",
    "softmax", "log_softmax", "abs", "absolute", "negative", "flip", "roll", "kron",
    "expand_dims", "moveaxis", "tril", "triu", "norm",
)

_ALIASES = {"max": "amax", "min": "amin", "conjugate": "conj", "clamp": "clip",
            "neg": "negative", "flatten": "ravel", "pow": "power", "mul": "multiply",
            "add": "add", "sub": "subtract", "div": "divide", "clone": "copy"}


def _reflected(fn):
    def method(self, other):
        return fn(other, self)

    method.__name__ = "__r" + fn.__name__ + "__"
    return method


def _inplace(fn, name: str):
    def method(self: Tensor, *others: Any) -> Tensor:
        return apply_inplace(self, fn, name, others)

    method.__name__ = name
    method.__doc__ = f"In-place {fn.__name__}: modify this tensor's memory and return it."
    return method


def apply_inplace(self: Tensor, fn, name: str, others: tuple, after: tuple = ()) -> Tensor:
    """Compute ``fn(self, *others, *after)`` and write it into ``self`` (recorded if needed)."""
    record = state.enabled and (
        self.requires_grad or any(isinstance(o, Tensor) and o.requires_grad for o in others))
    if record:
        if self._node is None and self.requires_grad:
            raise RuntimeError(
                f"{name}: a leaf tensor that requires grad cannot be modified in place "
                f"while recording (its gradient would be lost). Wrap the update in "
                f"yaad.no_grad(), or work on a .clone().")
        if getattr(self, "_base", None) is not None:
            raise RuntimeError(
                f"{name}: this tensor is a view of another tensor; modifying it in place "
                f"while recording is not supported (the other tensor's graph would not see "
                f"it). Use .clone() first, or index the base tensor instead.")
        data = self.data
        src = _new(Tensor)
        src.data = data.copy() if fn.op.save_args else data
        src._node = self._node
        src.requires_grad = self.requires_grad
        result = fn(src, *others, *after)
        _write(self, result.data, name)
        self._node = result._node
        self.requires_grad = result.requires_grad
    else:
        plain = [o.data if isinstance(o, Tensor) else o for o in others]
        _write(self, fn(self.data, *plain, *after), name)
    return self


def _write(self: Tensor, value: Any, name: str) -> None:
    data = self.data
    if not isinstance(data, np.ndarray):  # a NumPy scalar has no memory to write into
        self.data = np.asarray(value, dtype=data.dtype)
        return
    if np.shape(value) != data.shape:
        raise ValueError(f"{name}: the result has shape {np.shape(value)}, which cannot be "
                         f"written into a tensor of shape {data.shape}")
    try:
        np.copyto(data, value, casting="same_kind")
    except TypeError as e:
        raise TypeError(f"{name}: cannot write a result of dtype {np.result_type(value)} "
                        f"into a tensor of dtype {data.dtype} in place ({e})") from None
    mark_modified(data)


def install(ns: Any) -> None:
    """Bind operators and methods of :class:`Tensor` to the functions in ``ns``."""
    T = Tensor
    T.__add__ = T.__radd__ = ns.add
    T.__mul__ = T.__rmul__ = ns.multiply
    T.__sub__ = ns.subtract
    T.__rsub__ = _reflected(ns.subtract)
    T.__truediv__ = ns.divide
    T.__rtruediv__ = _reflected(ns.divide)
    T.__floordiv__ = ns.floor_divide
    T.__rfloordiv__ = _reflected(ns.floor_divide)
    T.__mod__ = ns.mod
    T.__rmod__ = _reflected(ns.mod)
    T.__pow__ = ns.power
    T.__rpow__ = _reflected(ns.power)
    T.__matmul__ = ns.matmul
    T.__rmatmul__ = _reflected(ns.matmul)
    T.__neg__ = ns.negative
    T.__pos__ = ns.positive
    T.__abs__ = ns.absolute
    T.__eq__ = ns.equal
    T.__ne__ = ns.not_equal
    T.__lt__ = ns.less
    T.__le__ = ns.less_equal
    T.__gt__ = ns.greater
    T.__ge__ = ns.greater_equal
    T.__and__ = T.__rand__ = ns.logical_and
    T.__or__ = T.__ror__ = ns.logical_or
    T.__xor__ = T.__rxor__ = ns.logical_xor
    T.__invert__ = ns.invert

    for op_name, fn in (("add", ns.add), ("sub", ns.subtract), ("mul", ns.multiply),
                        ("truediv", ns.divide), ("floordiv", ns.floor_divide),
                        ("mod", ns.mod), ("pow", ns.power), ("matmul", ns.matmul)):
        setattr(T, f"__i{op_name}__", _inplace(fn, f"__i{op_name}__"))
    for name, fn in (("add_", ns.add), ("sub_", ns.subtract), ("mul_", ns.multiply),
                     ("div_", ns.divide), ("pow_", ns.power), ("clip_", ns.clip),
                     ("clamp_", ns.clip), ("neg_", ns.negative), ("exp_", ns.exp),
                     ("sqrt_", ns.sqrt), ("abs_", ns.absolute)):
        setattr(T, name, _inplace(fn, name))

    for name in METHOD_NAMES:
        fn = getattr(ns, name, None)
        if fn is not None:
            setattr(T, name, fn)
    for name, target in _ALIASES.items():
        fn = getattr(ns, target, None)
        if fn is not None:
            setattr(T, name, fn)

    T.__getitem__ = _getitem(ns)
    T.__setitem__ = _setitem(ns)
    T.reshape = _reshape_method(ns.reshape)
    T.view = T.reshape
    T.transpose = _transpose_method(ns.transpose)
    T.conj = T.conjugate = _conj_method(ns.conj)
    T.T = property(lambda self: ns.transpose(self), doc="The transpose (all axes reversed).")
    T.mT = property(lambda self: ns.swapaxes(self, -1, -2),
                    doc="The last two axes swapped (a batch of transposed matrices).")
    T.mH = property(lambda self: ns.conj(ns.swapaxes(self, -1, -2)),
                    doc="The conjugate transpose of the last two axes.")
    T.real = property(lambda self: ns.real(self), doc="The real part (differentiable).")
    T.imag = property(lambda self: ns.imag(self), doc="The imaginary part (differentiable).")
    T.copy = ns.copy
    T.zero_ = _fill_method(0)
    T.fill_ = lambda self, value: _fill_method(value)(self)
    T.copy_ = lambda self, src: apply_inplace(self, _replace(ns), "copy_", (src,))
    T.dim = lambda self: self.data.ndim
    T.numel = lambda self: self.data.size
    T.float = lambda self: ns.astype(self, np.float32)
    T.double = lambda self: ns.astype(self, np.float64)


def _replace(ns):
    def replace(a, b):
        return ns.add(ns.multiply(a, 0), b)

    replace.op = ns.add.op
    return replace


def _fill_method(value):
    def fill(self: Tensor) -> Tensor:
        """Fill with a value in place (no gradient flows through the old value)."""
        if state.enabled and self.requires_grad and self._node is None:
            raise RuntimeError("fill_/zero_: a leaf tensor that requires grad cannot be "
                               "modified in place while recording; use yaad.no_grad()")
        self.data[...] = value
        mark_modified(self.data)
        if self._node is not None:
            self._node = None
            self.requires_grad = False
        return self

    return fill


def _getitem(ns):
    getitem = ns.getitem
    unwrap = ns.unwrap_index

    def __getitem__(self, idx):
        out = getitem(self, unwrap(idx))
        if out.data.base is not None and self.requires_grad:
            out._base = self
        return out

    return __getitem__


def _setitem(ns):
    index_put = ns.index_put
    unwrap = ns.unwrap_index

    def __setitem__(self, idx, value):
        apply_inplace(self, index_put, "__setitem__", (value,), (unwrap(idx),))

    return __setitem__


def _reshape_method(reshape):
    def method(self, *shape, **kw):
        """Reshape: ``t.reshape(2, 3)`` or ``t.reshape((2, 3))``."""
        if "shape" in kw:
            shape = kw.pop("shape")
        elif len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return reshape(self, shape)

    return method


def _transpose_method(transpose):
    def method(self, *axes):
        """Permute axes: ``t.transpose()``, ``t.transpose(1, 0)`` or ``t.transpose((1, 0))``."""
        if not axes:
            return transpose(self)
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        return transpose(self, axes)

    return method


def _conj_method(conj):
    def method(self):
        """The complex conjugate (the tensor itself when it is real, like NumPy)."""
        if self.data.dtype.kind != "c":
            return self
        return conj(self)

    return method
