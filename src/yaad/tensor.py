"""The Tensor: an array, its gradient, and its link to the node that produced it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Iterator

import numpy as np

from .grad_mode import state
from .graph import extra_of, version_of

_new = object.__new__

if TYPE_CHECKING:  # the methods yaad.methods installs, declared for type checkers
    from ._tensor_methods import TensorMethods
else:
    TensorMethods = object


class Tensor(TensorMethods):
    """An array that records the operations applied to it, for differentiation.

    Parameters
    ----------
    data : array_like
        The value. An ``ndarray`` is used as is (no copy); :func:`yaad.tensor` copies.
    requires_grad : bool, optional
        Whether gradients with respect to this tensor are wanted (floating point and
        complex dtypes only).

    Attributes
    ----------
    data : numpy.ndarray
        The value.
    grad : numpy.ndarray or None
        The accumulated gradient (after :meth:`backward`). For a complex tensor and a real
        loss L of z = x + iy it is ``dL/dx + 1j * dL/dy``, so ``z -= lr * z.grad``
        descends.
    requires_grad : bool
        Whether operations on this tensor are recorded.
    """

    # _grad, _hooks, _tangents, _base and _views are left unset until used: creating a
    # tensor stores three slots only. _base: the views.View this tensor was made by, when it
    # shares memory with its input; _views: weak references to the tensors made so.
    __slots__ = ("_data", "requires_grad", "_node", "_grad", "_hooks", "_tangents", "_base",
                 "_views", "__weakref__")
    __array_priority__ = 1000
    __hash__ = object.__hash__
    _data: np.ndarray
    requires_grad: bool
    _node: Any  # the Node that made it, or (node, output index); None for a leaf
    _hooks: list[Callable[[Any], Any]] | None
    _tangents: dict[Any, Any]

    def __init__(self, data: Any, requires_grad: bool = False) -> None:
        if isinstance(data, Tensor):
            if type(data) in presenters.values():  # its data are not its value (vmap)
                raise TypeError("Tensor(x) of a tensor inside vmap: use yaad.tensor(x) "
                                "for a copy, or x.detach()")
            data = data._data
        elif not isinstance(data, np.ndarray):
            data = np.asarray(data)
        if data.dtype.hasobject:
            raise TypeError(
                f"a tensor holds numbers (or booleans, strings), but this data is an array "
                f"of dtype object (shape {data.shape}: Python objects such as None or "
                f"tensors mixed with numbers). Convert it first, e.g. "
                f"np.asarray(x, dtype=float); to build a tensor from tensors use yaad.stack.")
        self._data = data
        self._node = None
        self._grad = None
        self._hooks = None
        self.requires_grad = False
        if requires_grad:
            self.requires_grad_(True)

    # ---- the value -----------------------------------------------------------------
    # yaad's op machinery and engine read ``_data``. Everything else reads the value
    # through the public points below, each of which tells a recording of yaad.compile
    # (``state.tracer``) what Python saw: a guard, or a reason to run eagerly.

    @property
    def data(self) -> np.ndarray:
        """The value, as a NumPy array (shared, not copied)."""
        if state.tracer is not None:
            state.tracer.read(self, "data")
        return self._data

    @data.setter
    def data(self, value: Any) -> None:
        if state.tracer is not None:
            state.tracer.read(self, "set_data")
        self._data = value

    # ---- autograd attributes -------------------------------------------------------

    @property
    def grad(self) -> Any:
        """The accumulated gradient, or None."""
        if state.tracer is not None:
            state.tracer.read(self, "grad")
        g = getattr(self, "_grad", None)
        if g is None and self._node is not None and not self.retains_grad:
            import warnings

            warnings.warn(
                "the .grad of a tensor that is not a leaf is being read: backward() does "
                "not fill it unless .retain_grad() is called on the tensor first (or use "
                "autograd.grad to get the gradient of an intermediate tensor)",
                UserWarning, stacklevel=2)
        return g

    @grad.setter
    def grad(self, value: Any) -> None:
        if value is not None:
            if isinstance(value, Tensor) and not value.requires_grad:
                value = value._data
            if np.shape(value) != self.shape:
                raise ValueError(f"assigned grad has shape {np.shape(value)}, but the tensor "
                                 f"has shape {self.shape}")
        self._grad = value

    @property
    def is_leaf(self) -> bool:
        """True for tensors made by the user rather than by a recorded operation."""
        return self._node is None

    @property
    def grad_fn(self) -> Any:
        """The node that produced this tensor (None for a leaf)."""
        node = self._node
        return node[0] if isinstance(node, tuple) else node

    @property
    def _version(self) -> int:
        return version_of(self._data)

    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        """Set :attr:`requires_grad` in place (leaves only) and return self."""
        if requires_grad and self._data.dtype.kind not in "fc":
            raise TypeError(
                f"only floating point and complex tensors can require gradients; this "
                f"tensor has dtype {self._data.dtype}. Convert it first, e.g. "
                f"yaad.tensor(x, dtype=float). (see docs/errors.md#integer-grad)")
        if not requires_grad and self._node is not None:
            raise RuntimeError("requires_grad_(False) is only allowed on leaf tensors; "
                               "use .detach() for a non-leaf.")
        if requires_grad and not hasattr(self, "_hooks"):
            self._grad = None  # set, so that the engine reads them without a miss
            self._hooks = None
        self.requires_grad = bool(requires_grad)
        return self

    def detach(self) -> Tensor:
        """A new leaf sharing this tensor's data, cut from the graph."""
        return make_tensor(self._data)

    def detach_(self) -> Tensor:
        """Cut this tensor from the graph, in place (not for a view: use :meth:`detach`).

        A leaf cut so gets no gradient from graphs recorded before, as in PyTorch.
        """
        if getattr(self, "_base", None) is not None:
            raise RuntimeError(
                "detach_(): this tensor is a view of another tensor (it shares its memory), "
                "and a view cannot be detached in place. Use .detach() instead.")
        self._node = None
        self.requires_grad = False
        return self

    def retain_grad(self) -> None:
        """Keep :attr:`grad` for this non-leaf tensor after backward (leaves always do)."""
        if state.tracer is not None:
            state.tracer.read(self, "retain_grad")
        node = self._node
        if node is None:
            return
        import weakref

        node, index = node if isinstance(node, tuple) else (node, 0)
        extra: Any = extra_of(node)  # (op.NodeExtra is not annotated)
        if extra.retained is None:
            extra.retained = {}
        extra.retained[index] = weakref.ref(self)

    @property
    def retains_grad(self) -> bool:
        """Whether :meth:`retain_grad` was called on this non-leaf tensor."""
        node = self._node
        if node is None:
            return False
        node, index = node if isinstance(node, tuple) else (node, 0)
        retained = node.extra.retained if node.extra is not None else None
        ref = retained.get(index) if retained else None
        return ref is not None and ref() is self

    def register_hook(self, fn: Callable[[Any], Any]) -> _HookHandle:
        """Call ``fn(grad)`` when this tensor's gradient is computed.

        ``fn`` may return a replacement gradient. Returns a handle with ``remove()``.
        """
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that does not require grad")
        if state.tracer is not None:
            state.tracer.read(self, "hook")
        node = self._node
        if node is None:
            hooks = getattr(self, "_hooks", None)
            if hooks is None:
                hooks = self._hooks = []
            hooks.append(fn)
            return _HookHandle(hooks, fn)
        node, index = node if isinstance(node, tuple) else (node, 0)
        extra: Any = extra_of(node)  # (op.NodeExtra is not annotated)
        if extra.hooks is None:
            extra.hooks = {}
        hooks = extra.hooks.setdefault(index, [])
        hooks.append(fn)
        return _HookHandle(hooks, fn)

    def backward(self, gradient: Any = None, retain_graph: bool | None = None,
                 create_graph: bool = False, inputs: Any = None) -> None:
        """Accumulate the gradient of this tensor into the ``.grad`` of the leaves.

        Parameters
        ----------
        gradient : array_like, optional
            The gradient with respect to this tensor; required unless it is a real
            scalar (then 1).
        retain_graph : bool, optional
            Keep the saved values, so that backward can run again through this graph.
            Defaults to ``create_graph``.
        create_graph : bool, optional
            Record the backward pass, so that gradients can be differentiated again.
        inputs : sequence of Tensor, optional
            Accumulate only into these tensors.
        """
        self._run_backward((self,), (gradient,), retain_graph, create_graph, inputs)

    # _run_backward, the engine's entry point (yaad.engine.run_backward), is bound by
    # methods.install: the engine sits above the tensor.

    # ---- array attributes ---------------------------------------------------------

    @property
    def shape(self) -> tuple[int, ...]:
        """The shape, as a tuple."""
        return self._data.shape

    @property
    def ndim(self) -> int:
        """The number of dimensions."""
        return self._data.ndim

    @property
    def size(self) -> int:
        """The number of elements."""
        return self._data.size

    @property
    def dtype(self) -> np.dtype:
        """The NumPy dtype."""
        return self._data.dtype

    @property
    def itemsize(self) -> int:
        """Bytes per element."""
        return self._data.itemsize

    @property
    def nbytes(self) -> int:
        """Bytes of the data."""
        return self._data.nbytes

    def numpy(self) -> np.ndarray:
        """The data as a NumPy array (shared, not copied)."""
        if state.tracer is not None:
            state.tracer.read(self, "numpy")
        return self._data

    def tolist(self) -> Any:
        """The data as nested Python lists."""
        if state.tracer is not None:
            state.tracer.read(self, "tolist")
        return self._data.tolist()

    def item(self) -> Any:
        """The value of a one-element tensor as a Python scalar."""
        if state.tracer is not None:
            state.tracer.read(self, "item")
        if self._data.size != 1:
            raise ValueError(f"item(): only a one-element tensor can be converted to a "
                             f"Python scalar; this one has shape {self.shape}")
        return self._data.item()

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return len(self._data)

    def __iter__(self) -> Iterator[Tensor]:
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        for i in range(len(self._data)):
            yield self[i]

    def __bool__(self) -> bool:
        if state.tracer is not None:
            state.tracer.read(self, "bool")
        return bool(self._data)

    def __float__(self) -> float:
        if state.tracer is not None:
            state.tracer.read(self, "float")
        return float(self._data)

    def __int__(self) -> int:
        if state.tracer is not None:
            state.tracer.read(self, "int")
        return int(self._data)

    def __complex__(self) -> complex:
        if state.tracer is not None:
            state.tracer.read(self, "complex")
        return complex(self._data)

    def __index__(self) -> int:
        if self._data.dtype.kind not in "iub":
            raise TypeError(f"only integer tensors can be used as an index, not {self.dtype}")
        if state.tracer is not None:
            state.tracer.read(self, "index")
        return self._data.__index__()

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        if state.tracer is not None:
            state.tracer.read(self, "array")
        if self.requires_grad and state.enabled:
            raise TypeError(
                "cannot convert a tensor that requires grad to a NumPy array implicitly: "
                "the gradient would be lost. Use t.detach().numpy() (or t.numpy()) if that "
                "is what you want; to build an array from tensors (np.array([...]), np.r_, "
                "np.c_), use yaad.stack or yaad.concatenate; for A @ t with a SciPy sparse "
                "matrix or LinearOperator A, write yaad.matmul(A, t) or wrap A with "
                "yaad.sparse.asarray(A).")
        tans = getattr(self, "_tangents", None) if state.levels else None
        if tans and any(lv in state.levels for lv in tans):
            raise TypeError(
                "cannot convert a tensor that carries a forward-mode tangent (inside "
                "yaad.func.jvp, jacfwd or hvp) to a NumPy array: the tangent would be lost. "
                "To build an array from tensors (np.array([...]), np.r_, np.c_), use "
                "yaad.stack or yaad.concatenate.")
        data = np.asarray(self._data)
        if dtype is not None and data.dtype != dtype:
            return data.astype(dtype)
        return data.copy() if copy else data

    def __repr__(self) -> str:
        if state.tracer is not None:
            state.tracer.read(self, "repr")
        prefix = "tensor("
        body = np.array2string(np.asarray(self._data), separator=", ", prefix=prefix)
        extras = []
        if self._data.dtype not in (np.float64, np.int64, np.bool_, np.complex128):
            extras.append(f"dtype={self._data.dtype}")
        node = self.grad_fn
        if node is not None:
            extras.append(f"grad_fn=<{node.op.name}>")
        elif self.requires_grad:
            extras.append("requires_grad=True")
        return prefix + body + "".join(", " + e for e in extras) + ")"

    __str__ = __repr__

    def _repr_html_(self) -> str:
        """Jupyter's view: the values, then the shape, the dtype and what made the tensor."""
        import html

        node = self.grad_fn
        made = (f"grad_fn=&lt;{html.escape(node.op.name)}&gt;" if node is not None else
                "requires_grad=True" if self.requires_grad else "no gradient")
        return (f"<pre>{html.escape(repr(self))}</pre><small>shape {self.shape}, "
                f"{self.dtype}, {made}</small>")

    def __format__(self, spec: str) -> str:
        if self._data.ndim == 0:
            return format(self.item(), spec)
        return repr(self)

    # NumPy interoperability (__array_ufunc__, __array_function__): bound by
    # methods.install to yaad.numpy_dispatch, which sits above the ops.


class _HookHandle:
    """Returned by :meth:`Tensor.register_hook`; ``remove()`` takes the hook away."""

    def __init__(self, hooks: list[Callable[[Any], Any]], fn: Callable[[Any], Any]) -> None:
        self.hooks = hooks
        self.fn = fn

    def remove(self) -> None:
        if self.fn in self.hooks:
            self.hooks.remove(self.fn)


def make_tensor(data: Any, node: Any = None, requires_grad: bool = False,
                tangents: dict[Any, Any] | None = None) -> Tensor:
    """A tensor over ``data`` without copying or checks: the one place (outside the op
    call's specialised paths) where the engine, the transforms and compile make tensors.

    ``node`` is the producing node (or ``(node, output index)``), None for a leaf.
    """
    t: Tensor = _new(_presenter(tangents) if tangents and presenters else Tensor)
    t._data = data
    t._node = node
    t.requires_grad = requires_grad
    if tangents:
        t._tangents = tangents
    return t


def shape_of(x: Any) -> tuple[int, ...]:
    """The shape of a tensor (one example's inside vmap), an array or anything NumPy reads
    as one (no value is read: a compiled function's recording need not see it)."""
    return x.shape if isinstance(x, Tensor) else np.shape(x)


def ndim_of(x: Any) -> int:
    """The number of dimensions (see :func:`shape_of`)."""
    return x.ndim if isinstance(x, Tensor) else np.ndim(x)


# A mode whose entries in ``_tangents`` change what a tensor presents (vmap's batch axes,
# hidden from the shape) registers here: the entry's type -> the Tensor subclass to use.
presenters: dict[type, type] = {}


def _presenter(tangents: dict[Any, Any]) -> type:
    for v in tangents.values():
        cls = presenters.get(type(v))
        if cls is not None:
            return cls
    return Tensor


def dtype_of(x: Any) -> np.dtype:
    """The dtype (see :func:`shape_of`)."""
    if isinstance(x, Tensor):
        return x._data.dtype
    dtype: np.dtype = x.dtype if hasattr(x, "dtype") else np.asarray(x).dtype
    return dtype


def is_tensor(x: Any) -> bool:
    """Return True if ``x`` is a yaad Tensor."""
    return isinstance(x, Tensor)

