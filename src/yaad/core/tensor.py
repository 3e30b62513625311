"""The Tensor: an array, its gradient, and its link to the node that produced it."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from .backend import is_foreign, is_inexact
from .errors import error
from .grad_mode import state
from .graph import mark_detached, version_of
from .presentation import ArrayFace

_new = object.__new__

if TYPE_CHECKING:  # the methods yaad.methods installs, declared for type checkers
    import weakref

    from .._tensor_methods import TensorMethods
else:
    TensorMethods = object


class Tensor(ArrayFace, TensorMethods):
    """An array that records the operations applied to it, for differentiation.

    Parameters
    ----------
    data : array_like
        The value. An ``ndarray`` is used as is (no copy); :func:`yaad.tensor` copies.
        Another library's array (CuPy, Dask, any array API array) is kept as it is, never
        converted: see docs/backends.md.
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

    # Unset until used (a new tensor stores three): _grad, _hooks, _tangents, _base (the
    # views.View that made it, sharing its input's memory), _views (weakrefs to those made so).
    __slots__ = ("_data", "requires_grad", "_node", "_grad", "_hooks", "_tangents", "_base",
                 "_views", "__weakref__")
    __array_priority__ = 1000
    __hash__ = object.__hash__
    _data: np.ndarray
    requires_grad: bool
    _node: Any  # the Node that made it, or (node, output index); None for a leaf
    _grad: Any
    _hooks: list[Callable[[Any], Any]] | None
    _tangents: dict[Any, Any]
    _base: Any  # a views.View (not imported: views imports this module)
    _views: list[weakref.ref[Tensor]]

    def __init__(self, data: Any, requires_grad: bool = False) -> None:
        if isinstance(data, Tensor):
            if type(data) in presenters.values():  # its data are not its value (vmap)
                raise error("vmap-tensor")
            data = data._data
        elif not isinstance(data, np.ndarray) and not is_foreign(data):  # (foreign: kept)
            data = np.asarray(data) if state.tracer is None else state.tracer.as_array(data)
        if isinstance(data, np.ndarray) and data.dtype.hasobject:
            raise error("object-data", shape=data.shape)
        self._data = data
        self._node = None
        self._grad = None
        self._hooks = None
        self.requires_grad = False
        if requires_grad:
            self.requires_grad_(True)

    # ---- the value -----------------------------------------------------------------
    # The op machinery and engine read ``_data``; all else reads the value through the points
    # below, which tell a recording of yaad.compile (``state.tracer``) what Python saw.

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
            warnings.warn(str(error("non-leaf-grad")), UserWarning, stacklevel=2)
        return g

    @grad.setter
    def grad(self, value: Any) -> None:
        if value is not None:
            if isinstance(value, Tensor) and not value.requires_grad:
                value = value._data
            if np.shape(value) != self.shape:
                raise error("grad-shape", got=np.shape(value), shape=self.shape)
        self._grad = value

    @grad.deleter
    def grad(self) -> None:  # ``del t.grad``, as in PyTorch: the same as ``t.grad = None``
        self._grad = None

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
        if requires_grad and not is_inexact(self._data):
            raise error("integer-grad", dtype=self._data.dtype)
        if not requires_grad and self._node is not None:
            raise error("non-leaf-requires-grad")
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
            raise error("detach-view")
        if self._node is not None:  # a value saved from it can no longer be used (PyTorch)
            mark_detached(self._data)
        self._node = None
        self.requires_grad = False
        return self

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

    # Bound by methods.install (both sit above the tensor): _run_backward, the engine's
    # entry point (engine.run_backward), and NumPy's __array_ufunc__ and __array_function__
    # (numpy_dispatch).


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


# A mode whose entries in ``_tangents`` change what a tensor presents (vmap's batch axes,
# hidden from the shape) registers here: the entry's type -> the Tensor subclass to use.
presenters: dict[type, type] = {}


def _presenter(tangents: dict[Any, Any]) -> type:
    for v in tangents.values():
        cls = presenters.get(type(v))
        if cls is not None:
            return cls
    return Tensor


def is_tensor(x: Any) -> bool:
    """Return True if ``x`` is a yaad Tensor."""
    return isinstance(x, Tensor)

