"""Tensor operators and methods, bound to the yaad functions of the same names.

Operators are the op functions themselves (no wrapper layer), so ``a * b`` costs what
``yaad.multiply(a, b)`` does.

In-place operations (``x += y``, ``x[idx] = v``, ``x.add_(y)``) follow NumPy's semantics
(the tensor's memory changes, and so do the arrays and views sharing it) and PyTorch's
autograd rules:

- without recording (nothing involved requires grad, or under ``no_grad()``) they write
  into the memory directly;
- while recording they record the out-of-place op and write its result into the memory;
  the tensor then stands for the new value in the graph;
- a leaf that requires grad cannot be changed in place while recording (optimizers work
  under ``no_grad()``);
- a view (``v = x[1:3]``, ``x.reshape(...)``, ``x.T``, ``z.real``...) writes through to
  its base, which records the change (``x[1:3] = f(v)``), so ``x[1:3] += y`` and
  ``v *= 2`` are differentiable; a change of the base gives its views the history of
  their new values (PyTorch's rebase);
- every write bumps the version of the memory: a value saved for backward and changed
  afterwards makes backward raise, naming the op and the version.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from .. import array_api
from ..array_api._info import device_of
from ..core import hooks
from ..core.backend import dtype_kind, is_foreign
from ..core.engine import run_backward
from ..core.grad_mode import state
from ..core.graph import mark_modified
from ..core.tensor import Tensor, make_tensor
from ..core.views import View, _root
from ..creation import to
from ..function import refuse_backward
from ..modes.batch import conform
from ..ops.elementwise import imag, real
from ..ops.shape import getitem, index_put, index_put_, unwrap_index
from .numpy_protocols import array_function, array_ufunc

_getrefcount = sys.getrefcount
ndarray = np.ndarray


def _refs_of_a_local() -> int:
    """``_getrefcount`` of an object only a local variable holds, as this module is built
    (see ``engine._refs_of_a_local``)."""
    x = ndarray(0)
    return _getrefcount(x)


_SOLE = _refs_of_a_local()

# NumPy method names (and a few PyTorch ones) that call the yaad function of that name
# with the tensor first. Names missing from the namespace are skipped.
METHOD_NAMES = (
    "sum", "mean", "prod", "std", "var", "cumsum", "cumprod", "argmax", "argmin", "argsort",
    "sort", "all", "any", "nonzero", "ptp", "clip", "round", "trace", "diagonal", "dot",
    "squeeze", "swapaxes", "astype", "repeat", "take", "ravel", "nansum", "nanmean",
    "logsumexp", "searchsorted", "amax", "amin", "count_nonzero",
    # PyTorch-style elementwise and shape methods
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "square", "sin", "cos",
    "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh", "arccosh",
    "arctanh", "sigmoid", "relu", "softplus", "reciprocal", "sign", "sgn", "floor", "ceil",
    "trunc", "angle", "erf", "erfc", "maximum", "minimum", "where", "matmul", "outer",
    "softmax", "log_softmax", "abs", "absolute", "negative", "flip", "roll", "kron",
    "expand_dims", "moveaxis", "tril", "triu", "tile", "diff",
)

_ALIASES = {"max": "amax", "min": "amin", "conjugate": "conj", "clamp": "clip",
            "neg": "negative", "flatten": "ravel", "pow": "power", "mul": "multiply",
            "add": "add", "sub": "subtract", "div": "divide", "clone": "copy"}

# In-place methods: name_ applies the function of that name (PyTorch's spelling).
_INPLACE = {"add_": "add", "sub_": "subtract", "mul_": "multiply", "div_": "divide",
            "pow_": "power", "clip_": "clip", "clamp_": "clip", "neg_": "negative",
            "abs_": "absolute", "exp_": "exp", "log_": "log", "sqrt_": "sqrt",
            "square_": "square", "reciprocal_": "reciprocal", "sin_": "sin", "cos_": "cos",
            "tanh_": "tanh", "sigmoid_": "sigmoid", "relu_": "relu", "floor_": "floor",
            "ceil_": "ceil", "round_": "round", "trunc_": "trunc", "sign_": "sign",
            "conj_": "conj"}

_OPERATORS = (("add", "add"), ("sub", "subtract"), ("mul", "multiply"),
              ("truediv", "divide"), ("floordiv", "floor_divide"), ("mod", "mod"),
              ("pow", "power"), ("matmul", "matmul"), ("and", "bitwise_and"),
              ("or", "bitwise_or"), ("xor", "bitwise_xor"), ("lshift", "left_shift"),
              ("rshift", "right_shift"))


def _recording(self: Tensor, others: tuple) -> bool:
    return state.enabled and (self.requires_grad or any(
        isinstance(o, Tensor) and o.requires_grad for o in others))


def _snapshot(self: Tensor, copy: bool) -> Tensor:
    """A tensor standing for the current value of ``self`` in the graph (its node and
    tangents), holding a copy of the data when the op will save it."""
    src = make_tensor(self._data.copy() if copy else self._data, self._node,
                      self.requires_grad, getattr(self, "_tangents", None))
    return src


def _adopt(self: Tensor, result: Tensor) -> None:
    """Make ``self`` stand for ``result`` in the graph (its data is already written)."""
    old = self._node
    self._node = result._node
    self.requires_grad = result.requires_grad
    tangents = getattr(result, "_tangents", None)
    if tangents or getattr(self, "_tangents", None):
        self._tangents = tangents
    _move_retained(self, old)


def _move_retained(t: Tensor, old: Any) -> None:
    """``retain_grad()`` follows the tensor to its new node (as in PyTorch): ``t.grad``
    is then the gradient of its new value."""
    if old is None:
        return
    node, k = old if type(old) is tuple else (old, 0)
    extra = node.extra
    ref = extra.retained.get(k) if extra is not None and extra.retained else None
    if ref is not None and ref() is t:
        del extra.retained[k]
        t.retain_grad()


def _live_view(self: Tensor) -> View | None:
    """How ``self`` was made from the tensor whose memory it shares, or None."""
    view = getattr(self, "_base", None)
    if view is None:
        return None
    if _root(view.parent._data) is not _root(self._data):
        self._base = None  # the data of one side was replaced: no longer a view
        return None
    return view


def _top(view: View) -> Tensor:
    """The tensor at the top of a chain of views (the one whose memory they all share)."""
    while True:
        base = view.parent
        view = _live_view(base)
        if view is None:
            return base


def _must_record(self: Tensor, others: tuple) -> bool:
    """Whether an in-place change of ``self`` is recorded: something involved requires
    grad while recording, or ``self`` is a view of a tensor that does (even if the view
    itself was made before that tensor required grad)."""
    if state.modes_on or _recording(self, others):
        return True
    if not state.enabled or getattr(self, "_base", None) is None:
        return False
    view = _live_view(self)
    while view is not None:
        if view.parent.requires_grad:
            return True
        view = _live_view(view.parent)
    return False


def _check_leaf(self: Tensor, name: str) -> None:
    if state.enabled and self.requires_grad and self._node is None:
        raise RuntimeError(
            f"{name}: a leaf tensor that requires grad cannot be modified in place while "
            f"recording (its gradient would be lost). Wrap the update in yaad.no_grad() "
            f"(as optimizers do), or work on a .copy(). (see docs/errors.md#inplace-leaf)")


def _check_own_memory(self: Tensor, name: str) -> None:
    """Refuse an in-place change of a recorded tensor whose memory something else also
    holds without being its recorded view (an array it was made from). A view of memory
    nothing else holds (of NumPy's buffer behind an advanced-indexing result) is the
    tensor's own."""
    base = getattr(self._data, "base", None)
    if self._node is None or not isinstance(base, ndarray):
        return
    # References to base: the local variable's (_SOLE counts them), the view's, and those
    # of the tensor's recorded views (NumPy gives them the same base).
    if _getrefcount(base) > _SOLE + 1 + _views_holding(self, base):
        raise RuntimeError(
            f"{name}: this tensor (shape {self.shape}) shares its memory with an array or "
            f"tensor it was not recorded as a view of. Changing it in place while "
            f"recording would change the other behind the graph's back. Use .copy() first.")


def _views_holding(t: Tensor, base: ndarray) -> int:
    """How many live recorded views of ``t`` (and of their views) have ``base`` as their
    data's base."""
    n = 0
    for ref in getattr(t, "_views", None) or ():
        v = ref()
        view = None if v is None else getattr(v, "_base", None)
        if view is not None and view.parent is t:
            n += (getattr(v._data, "base", None) is base) + _views_holding(v, base)
    return n


def _saves_input(fn: Any) -> bool:
    op = getattr(fn, "op", None)
    return True if op is None else op.save_args


def apply_inplace(self: Tensor, fn: Any, name: str, others: tuple, after: tuple = ()) -> Tensor:
    """Compute ``fn(self, *others, *after)`` and write it into ``self`` (recorded if needed).

    Parameters
    ----------
    self : Tensor
        The tensor whose memory is written.
    fn : yaad op
        The out-of-place operation.
    name : str
        The name used in errors (``__iadd__``, ``add_``...).
    others, after : tuple
        Arguments of ``fn`` after ``self`` (``others`` may be tensors).

    Returns
    -------
    Tensor
        ``self``.
    """
    if not _must_record(self, others):
        plain = [o._data if isinstance(o, Tensor) else o for o in others]
        _write(self, fn(self._data, *plain, *after), name)
        return self
    _check_leaf(self, name)
    if not isinstance(self._data, ndarray):  # a NumPy scalar has no memory to write into
        self._data = np.array(self._data)
    view = _live_view(self)
    if view is not None:
        return _through_base(self, view, fn, name, others, after)
    _check_own_memory(self, name)
    if fn is index_put:
        # The setitem writes straight into the memory, recorded by the in-place op.
        _adopt(self, index_put_(_snapshot(self, copy=False), *others, *after))
    else:
        src = _snapshot(self, copy=_saves_input(fn))
        # x *= x: the other operand is the old value too
        result = fn(src, *[src if o is self else o for o in others], *after)
        result = conform(result, self)  # (inside vmap: the layout of self's batch axes)
        _write(self, result._data, name)
        _adopt(self, result)
    _rebase_views(self, name)
    return self


def _through_base(self: Tensor, view: View, fn: Any, name: str, others: tuple,
                  after: tuple) -> Tensor:
    """In-place on a view: ``base[where the view is] = fn(view, ...)``, recorded on the
    base; the base's views (this one among them) then read its new value."""
    top = _top(view)
    if state.enabled and top.requires_grad and top._node is None:
        raise RuntimeError(
            f"{name}: this tensor is a view of a leaf tensor that requires grad; changing "
            f"it in place while recording would change the leaf, whose gradient would be "
            f"lost. Wrap the update in yaad.no_grad(), or work on a .copy().")
    if state.enabled and not view.grad_mode:
        raise RuntimeError(
            f"{name}: this view (shape {self.shape}) was made under no_grad() and is being "
            f"changed in place while recording. Whether its base should then depend on "
            f"the new value is ambiguous, so it is refused (as in PyTorch): make the view "
            f"and change it both inside or both outside no_grad(), or .copy() it.")
    idx = _where_in_base(self, view, name)
    src = _snapshot(self, copy=_saves_input(fn))
    result = fn(src, *[src if o is self else o for o in others], *after)
    if idx is None:  # the real or imaginary part of a complex base: rebuild it all
        base = view.parent
        result = (result + 1j * imag(base) if view.op is real.op
                  else real(base) + 1j * result)
        idx = Ellipsis
    _setitem(view.parent, idx, result, name)
    return self


def _where_in_base(self: Tensor, view: View, name: str) -> Any:
    """The index of the base's elements that the view shows (an index ``idx`` with
    ``base[idx]`` equal to the view): the view's own for basic indexing, else found by
    making the view of an array of positions; None for the real or imaginary part of a
    complex base."""
    if view.op is getitem.op and _is_basic(view.args[1]):
        return view.args[1]
    data = self._data
    base = view.parent._data
    if not data.flags.writeable:
        raise ValueError(f"{name}: this view is read-only (as NumPy makes {view.op.name} "
                         f"views); change a .copy() of it, or the base it views.")
    if (view.op is real.op or view.op is imag.op) and base.dtype.kind == "c":
        return None
    positions = None
    if data.dtype == base.dtype:
        try:
            positions = view.replay(np.arange(base.size).reshape(base.shape))
        except Exception:
            positions = None
    if getattr(positions, "shape", None) != data.shape:
        raise RuntimeError(
            f"{name}: this tensor is a '{view.op.name}' view of another (of dtype "
            f"{base.dtype}), which cannot be changed in place while recording. Change "
            f"the base, or a .copy() of the view.")
    return np.unravel_index(positions, base.shape)


def _rebase_views(base: Tensor, name: str) -> None:
    """Give every view of ``base`` (and their views) the history of its new value, as
    if made again from ``base`` now (PyTorch's rebase): their memory already holds it."""
    views = getattr(base, "_views", None)
    if not views:
        return
    live = []
    for ref in list(views):  # (a replay registers a new, short-lived view of base)
        v = ref()
        if v is None or _live_view(v) is None or v._base.parent is not base:
            continue
        live.append(ref)
        made = v._base.replay(base)
        if made.requires_grad and not v._base.grad_mode:
            made = _stale_view(made, name)
        _adopt(v, made)
        _rebase_views(v, name)
    base._views = live


def _stale_view(t: Tensor, inplace: str) -> Tensor:
    """``t`` through a node that refuses backward: the view was made under no_grad()."""
    return refuse_backward(t._data, t, message=(
        f"a view made under no_grad() was used after its base (or another view of it) "
        f"was changed in place by {inplace} while recording; whether gradients should "
        f"flow through the view is ambiguous, so it is refused (as in PyTorch). Make the "
        f"view and the in-place change both inside or both outside no_grad()."))


def _write(self: Tensor, value: Any, name: str) -> None:
    data = self._data
    if not isinstance(data, ndarray):
        self._data = np.asarray(value, dtype=data.dtype)
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


def _is_basic(idx: Any) -> bool:
    items = idx if isinstance(idx, tuple) else (idx,)
    return all(i is None or i is Ellipsis or isinstance(i, (int, np.integer, slice))
               for i in items)


def _same_memory(self: Tensor, idx: Any, value: Any) -> bool:
    """Whether ``value`` already is the memory ``self[idx]`` names (the last step of
    ``x[idx] += y``, or ``x.copy_(x)``), so that assigning it changes nothing."""
    v = getattr(value, "_data", None)
    if (not isinstance(v, ndarray) or (v.base is None and v is not self._data)
            or _root(v) is not _root(self._data)):
        return False
    if not _is_basic(idx):
        return False
    target = self._data[idx]
    return (isinstance(target, ndarray) and target.shape == v.shape
            and target.dtype == v.dtype and target.strides == v.strides
            and target.ctypes.data == v.ctypes.data)


def _setitem(self: Tensor, idx: Any, value: Any, name: str) -> None:
    if isinstance(value, Tensor) and _same_memory(self, idx, value):
        return
    if not _must_record(self, (value,)):
        data = self._data
        if not isinstance(data, ndarray):
            data = self._data = np.array(data)
        data[idx] = value._data if isinstance(value, Tensor) else value
        mark_modified(data)
        return
    apply_inplace(self, index_put, name, (value,), (idx,))


def __getitem__(self: Tensor, idx: Any) -> Tensor:
    # x[k]: an element, a 0-d view of x (as in PyTorch; see ops.shape._getitem)
    return getitem(self, (idx, Ellipsis) if type(idx) is int else unwrap_index(idx))


def __setitem__(self: Tensor, idx: Any, value: Any) -> None:
    _setitem(self, unwrap_index(idx), value, "__setitem__")


# (the methods are annotated: tools/generate_stubs.py writes _tensor_methods.pyi from them)
def _reflected(fn: Any) -> Any:
    def method(self: Tensor, other: Any) -> Tensor:
        return fn(other, self)

    method.__name__ = "__r" + fn.__name__ + "__"
    return method


def _inplace(fn: Any, name: str) -> Any:
    def method(self: Tensor, *others: Any) -> Tensor:
        return apply_inplace(self, fn, name, others)

    method.__name__ = name
    method.__doc__ = f"In-place {fn.__name__}: change this tensor's memory and return it."
    return method


def _fill(self: Tensor, value: Any) -> Tensor:
    """Fill with a value in place and return the tensor (no gradient reaches the old value)."""
    _setitem(self, Ellipsis, value, "fill_")
    return self


def _zero(self: Tensor) -> Tensor:
    """Fill with zeros in place and return the tensor."""
    return _fill(self, 0)


def _copy_from(self: Tensor, src: Any) -> Tensor:
    """Copy ``src`` (broadcast) into this tensor in place and return it (recorded)."""
    _setitem(self, Ellipsis, src, "copy_")
    return self


def _numpy_ufunc(self: Tensor, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
    return array_ufunc(ufunc, method, inputs, kwargs)


def _numpy_function(self: Tensor, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
    return array_function(func, args, kwargs)


def install(ns: Any) -> None:
    """Bind operators and methods of :class:`Tensor` to the functions in ``ns``.

    Parameters
    ----------
    ns : module
        The ``yaad`` namespace.
    """
    T = Tensor
    T._run_backward = staticmethod(run_backward)
    T.register_hook = hooks.register_hook
    T.retain_grad = hooks.retain_grad
    T.retains_grad = property(hooks.retains_grad)
    T.__array_ufunc__ = _numpy_ufunc
    T.__array_function__ = _numpy_function
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
    T.__and__ = T.__rand__ = ns.bitwise_and  # (NumPy's: logical on booleans)
    T.__or__ = T.__ror__ = ns.bitwise_or
    T.__xor__ = T.__rxor__ = ns.bitwise_xor
    T.__lshift__ = ns.left_shift
    T.__rlshift__ = _reflected(ns.left_shift)
    T.__rshift__ = ns.right_shift
    T.__rrshift__ = _reflected(ns.right_shift)
    T.__invert__ = ns.invert
    _install_array_api(T)

    for op_name, fn_name in _OPERATORS:
        setattr(T, f"__i{op_name}__", _inplace(getattr(ns, fn_name), f"__i{op_name}__"))
    for name, fn_name in _INPLACE.items():
        fn = getattr(ns, fn_name, None)
        if fn is not None:
            setattr(T, name, _inplace(fn, name))

    for name in METHOD_NAMES:
        fn = getattr(ns, name, None)
        if fn is not None:
            setattr(T, name, fn)
    for name, target in _ALIASES.items():
        fn = getattr(ns, target, None)
        if fn is not None:
            setattr(T, name, fn)
    linalg = getattr(ns, "linalg", None)
    if linalg is not None and hasattr(linalg, "norm"):
        def norm(self: Tensor, *args: Any, **kw: Any) -> Tensor:
            return linalg.norm(self, *args, **kw)

        T.norm = norm

    T.__getitem__ = __getitem__
    T.__setitem__ = __setitem__
    T.reshape = _reshape_method(ns.reshape)
    T.view = T.reshape
    T.transpose = _transpose_method(ns.transpose)
    T.conj = T.conjugate = _conj_method(ns.conj)

    def transposed(self: Tensor) -> Tensor:
        return ns.transpose(self)

    def matrices_transposed(self: Tensor) -> Tensor:
        return ns.matrix_transpose(self)

    def matrices_adjoint(self: Tensor) -> Tensor:
        return ns.conj(ns.matrix_transpose(self))

    def real_part(self: Tensor) -> Tensor:
        return ns.real(self)

    def imaginary_part(self: Tensor) -> Tensor:
        return ns.imag(self)

    T.T = property(transposed, doc="The transpose (all axes reversed).")
    T.mT = property(matrices_transposed,
                    doc="The last two axes swapped (a batch of transposed matrices).")
    T.mH = property(matrices_adjoint, doc="The conjugate transpose of the last two axes.")
    T.real = property(real_part, doc="The real part (differentiable).")
    T.imag = property(imaginary_part, doc="The imaginary part (differentiable).")
    T.copy = ns.copy
    T.to = ns.to
    T.fill_ = T.fill = _fill
    T.zero_ = _zero
    T.copy_ = _copy_from
    T.dim = _dim
    T.numel = _numel

    def to_float(self: Tensor) -> Tensor:
        return ns.astype(self, np.float32)

    def to_double(self: Tensor) -> Tensor:
        return ns.astype(self, np.float64)

    T.float = to_float
    T.double = to_double


def _dim(self: Tensor) -> int:
    n: int = self._data.ndim
    return n


def _numel(self: Tensor) -> int:
    n: int = self._data.size
    return n


# ---- the array API's array protocols -------------------------------------------------

_API_VERSIONS = (None, "2021.12", "2022.12", "2023.12", "2024.12")


def _array_namespace(self: Tensor, /, *, api_version: str | None = None) -> Any:
    """The array API namespace of tensors: :mod:`yaad.array_api`."""
    if api_version not in _API_VERSIONS:
        raise ValueError(f"__array_namespace__: api_version={api_version!r}; yaad implements "
                         f"{', '.join(v for v in _API_VERSIONS if v)}")
    return array_api


def _to_device(self: Tensor, device: Any, /, *, stream: Any = None) -> Tensor:
    """The tensor on ``device`` (the array API's ``to_device``): itself where it is there,
    else moved as :func:`yaad.to` moves it (recorded)."""
    if stream is not None:
        raise ValueError("to_device: stream is not supported")
    if device == device_of(self):
        return self
    moved: Tensor = to(self, device)
    return moved


def _dlpack(self: Tensor, /, *, stream: Any = None, max_version: Any = None,
            dl_device: Any = None, copy: Any = None) -> Any:
    # (the value goes to another library: through __array__, the one gate, which refuses
    # a tensor that requires grad or carries a tangent)
    data = self._data if is_foreign(self._data) else np.asarray(self)
    kw = {} if max_version is None else {"max_version": max_version}
    if dl_device is not None:
        kw["dl_device"] = dl_device
    if copy is not None:
        kw["copy"] = copy
    return data.__dlpack__(stream=stream, **kw)


def _dlpack_device(self: Tensor, /) -> Any:
    return self._data.__dlpack_device__()


def _install_array_api(T: type) -> None:
    T.__array_namespace__ = _array_namespace
    T.device = property(device_of, doc="The device: 'cpu' for NumPy data.")
    T.to_device = _to_device
    T.__dlpack__ = _dlpack
    T.__dlpack_device__ = _dlpack_device


def _reshape_method(reshape: Any) -> Any:
    def method(self: Tensor, *shape: Any, **kw: Any) -> Tensor:
        """Reshape: ``t.reshape(2, 3)`` or ``t.reshape((2, 3))``."""
        if "shape" in kw:
            shape = kw.pop("shape")
        elif len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        return reshape(self, shape, **kw)

    return method


def _transpose_method(transpose: Any) -> Any:
    def method(self: Tensor, *axes: Any) -> Tensor:
        """Permute axes: ``t.transpose()``, ``t.transpose(1, 0)`` or ``t.transpose((1, 0))``."""
        if not axes or axes == (None,):
            return transpose(self)
        if len(axes) == 1 and isinstance(axes[0], (tuple, list)):
            axes = tuple(axes[0])
        return transpose(self, axes)

    return method


def _conj_method(conj: Any) -> Any:
    def method(self: Tensor) -> Tensor:
        """The complex conjugate (the tensor itself when it is real, like NumPy)."""
        if dtype_kind(self._data.dtype) != "c":
            return self
        return conj(self)

    return method
