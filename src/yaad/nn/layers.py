"""Layers: ``Linear``, ``Embedding``, ``LayerNorm``, ``Dropout``, activations, containers
and losses as modules (PyTorch's names, arguments and default initialisation)."""

from __future__ import annotations

import inspect
import math
from typing import Any, Callable, Iterable, Iterator, cast

import numpy as np

from . import functional as F
from . import init
from .module import Module, Parameter


def _empty(shape: tuple[int, ...], dtype: Any) -> Parameter:
    dtype = np.dtype(np.float64 if dtype is None else dtype)
    if dtype.kind not in "fc":
        raise TypeError(f"parameters must have a floating point or complex dtype, got {dtype}")
    return Parameter(np.zeros(shape, dtype=dtype))


class Linear(Module):
    """Affine map ``y = x @ weight.T + bias``.

    Parameters
    ----------
    in_features : int
        Sizes of the last axis of the input and of the output.
    out_features : int
        Sizes of the last axis of the input and of the output.
    bias : bool
        Whether to add a learnable bias.
    dtype : data-type, optional
        float64 by default; complex dtypes give a complex-valued layer.
    generator : numpy.random.Generator, optional
        Source of the initial values (PyTorch's: U(-1/sqrt(in), 1/sqrt(in))).

    Attributes
    ----------
    weight : Parameter of shape (out_features, in_features)
    bias : Parameter of shape (out_features,) or None
    """

    def __init__(self, in_features: int, out_features: int, bias: bool = True,
                 dtype: Any = None, generator: np.random.Generator | None = None) -> None:
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = _empty((out_features, in_features), dtype)
        self.bias = _empty((out_features,), dtype) if bias else None
        self.reset_parameters(generator)

    def reset_parameters(self, generator: np.random.Generator | None = None) -> None:
        """Draw new initial values (PyTorch's default scheme)."""
        init.kaiming_uniform_(self.weight, a=math.sqrt(5), generator=generator)
        if self.bias is not None:
            bound = 1 / math.sqrt(self.in_features) if self.in_features > 0 else 0
            init.uniform_(self.bias, -bound, bound, generator)

    def forward(self, input: Any) -> Any:
        """Apply the map to the last axis of ``input``."""
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class Embedding(Module):
    """A lookup table: integer indices -> rows of ``weight`` (initialised N(0, 1)).

    Parameters
    ----------
    num_embeddings : int
        Number of rows and their length.
    embedding_dim : int
        Number of rows and their length.
    padding_idx : int, optional
        The row at this index starts at zero and receives no gradient.
    dtype : data-type, optional
    generator : numpy.random.Generator, optional
    """

    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 dtype: Any = None, generator: np.random.Generator | None = None) -> None:
        super().__init__()
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.padding_idx = padding_idx
        self.weight = _empty((num_embeddings, embedding_dim), dtype)
        init.normal_(self.weight, generator=generator)
        if padding_idx is not None:
            self.weight.data[padding_idx] = 0

    def forward(self, input: Any) -> Any:
        """The rows at ``input`` (shape ``input.shape + (embedding_dim,)``)."""
        return F.embedding(input, self.weight, self.padding_idx)

    def extra_repr(self) -> str:
        pad = f", padding_idx={self.padding_idx}" if self.padding_idx is not None else ""
        return f"{self.num_embeddings}, {self.embedding_dim}{pad}"


class LayerNorm(Module):
    """Layer normalisation over the trailing ``normalized_shape`` axes.

    Parameters
    ----------
    normalized_shape : int or tuple of int
    eps : float
        Added to the variance.
    elementwise_affine : bool
        Learn a scale (``weight``, ones) and, if ``bias``, a shift (``bias``, zeros).
    bias : bool
    dtype : data-type, optional
    """

    def __init__(self, normalized_shape: int | tuple[int, ...], eps: float = 1e-5,
                 elementwise_affine: bool = True, bias: bool = True, dtype: Any = None) -> None:
        super().__init__()
        shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(
            normalized_shape)
        self.normalized_shape = shape
        self.eps = eps
        self.weight = init.ones_(_empty(shape, dtype)) if elementwise_affine else None
        self.bias = init.zeros_(_empty(shape, dtype)) if elementwise_affine and bias else None

    def forward(self, input: Any) -> Any:
        """The normalised input."""
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.weight is not None}")


class Dropout(Module):
    """Zero elements with probability ``p`` in training mode (scaling the rest); the
    identity in evaluation mode.

    Parameters
    ----------
    p : float
        Drop probability.
    generator : numpy.random.Generator or int, optional
        The mask's source: a Generator, a seed, or None for the default generator.
    """

    def __init__(self, p: float = 0.5, generator: np.random.Generator | int | None = None
                 ) -> None:
        super().__init__()
        if not 0 <= p <= 1:
            raise ValueError(f"Dropout: p must be in [0, 1], got {p}")
        self.p = p
        self.generator = (np.random.default_rng(generator)
                          if isinstance(generator, (int, np.integer)) else generator)

    def forward(self, input: Any) -> Any:
        """``input`` with dropped elements (training) or unchanged (evaluation)."""
        return F.dropout(input, self.p, self.training, self.generator)

    def extra_repr(self) -> str:
        return f"p={self.p}"


def _activation(name: str, fn: Callable[..., Any], doc: str,
                params: tuple[tuple[str, Any], ...] = ()) -> type[Module]:
    """A module class applying ``fn(input, **options)``; ``params`` are (name, default)."""

    options = inspect.Signature([inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                                   default=d) for n, d in params])

    def __init__(self: Module, *args: Any, **kwargs: Any) -> None:
        Module.__init__(self)
        bound = options.bind(*args, **kwargs)
        bound.apply_defaults()
        self.options = dict(bound.arguments)

    def forward(self: Any, *inputs: Any) -> Any:
        return fn(*inputs, **self.options)

    def extra_repr(self: Any) -> str:
        return ", ".join(f"{k}={v!r}" for k, v in self.options.items())

    forward.__doc__ = f"Apply {name}."
    return type(name, (Module,), {"__init__": __init__, "forward": forward,
                                  "extra_repr": extra_repr, "__doc__": doc,
                                  "__module__": __name__, "__signature__": options})


ReLU = _activation("ReLU", F.relu, "``max(x, 0)`` elementwise.")
Tanh = _activation("Tanh", F.tanh, "Hyperbolic tangent elementwise.")
Sigmoid = _activation("Sigmoid", F.sigmoid, "``1 / (1 + exp(-x))`` elementwise.")
GELU = _activation("GELU", F.gelu, "Gaussian error linear unit (``approximate='none'`` or "
                   "``'tanh'``).", (("approximate", "none"),))
Softplus = _activation("Softplus", F.softplus, "``log(1 + exp(beta x)) / beta`` elementwise.",
                       (("beta", 1.0), ("threshold", 20.0)))
Softmax = _activation("Softmax", F.softmax, "Softmax along ``dim``.", (("dim", -1),))
LogSoftmax = _activation("LogSoftmax", F.log_softmax, "Log-softmax along ``dim``.",
                         (("dim", -1),))
Identity = _activation("Identity", lambda x: x, "Returns its input.")


def _loss(name: str, fn: Callable[..., Any]) -> type[Module]:
    """A module class calling the loss ``fn(input, target, **options)``."""
    sig = inspect.signature(fn)
    options = [p for n, p in sig.parameters.items() if n not in ("input", "target")]
    return _activation(name, fn, f"Module form of :func:`yaad.nn.functional.{fn.__name__}`.",
                       tuple((p.name, p.default) for p in options))


MSELoss = _loss("MSELoss", F.mse_loss)
L1Loss = _loss("L1Loss", F.l1_loss)
CrossEntropyLoss = _loss("CrossEntropyLoss", F.cross_entropy)
NLLLoss = _loss("NLLLoss", F.nll_loss)
BCELoss = _loss("BCELoss", F.binary_cross_entropy)
BCEWithLogitsLoss = _loss("BCEWithLogitsLoss", F.binary_cross_entropy_with_logits)


class ModuleList(Module):
    """A list of submodules (registered, so that their parameters are found).

    Parameters
    ----------
    modules : iterable of Module, optional
        Registered as submodules ``'0'``, ``'1'``, ...
    """

    def __init__(self, modules: Iterable[Module] = ()) -> None:
        super().__init__()
        for m in modules:
            self.append(m)

    @classmethod
    def _of(cls, modules: list[Module]) -> ModuleList:
        return cls(modules)

    def append(self, module: Module) -> ModuleList:
        """Add a module at the end; return self."""
        self.add_module(str(len(self._modules)), module)
        return self

    def __len__(self) -> int:
        return len(self._modules)

    def _members(self) -> dict[str, Module]:
        return cast("dict[str, Module]", self._modules)  # append admits modules only

    def __iter__(self) -> Iterator[Module]:
        return iter(self._members().values())

    def __getitem__(self, idx: int | slice) -> Any:
        mods = list(self._members().values())
        return self._of(mods[idx]) if isinstance(idx, slice) else mods[idx]


class Sequential(ModuleList):
    """Modules applied in order; indexable, sliceable, iterable, with ``append``.

    Parameters
    ----------
    *modules : Module
        Registered as submodules ``'0'``, ``'1'``, ...
    """

    def __init__(self, *modules: Module) -> None:
        super().__init__(modules)

    @classmethod
    def _of(cls, modules: list[Module]) -> Sequential:
        return cls(*modules)

    def forward(self, input: Any) -> Any:
        """Apply every module in turn."""
        for m in self._members().values():
            input = m(input)
        return input
