"""``yaad.nn.functional``: layers and losses as functions, with PyTorch's signatures.

Everything here is composed of yaad ops, so gradients (and second derivatives) come from
the ops' rules. Unlike the NumPy-named functions of ``yaad``, these follow
``torch.nn.functional`` (``dim=``, ``reduction=``), so that model code ports unchanged.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..core.arguments import refuse_grad
from ..core.presentation import dtype_of, ndim_of, shape_of
from ..core.tensor import Tensor
from ..modes.batched_values import batch_axes, draw
from ..ops.elementwise import erf, log, maximum, relu, sigmoid, sqrt, tanh, where
from ..ops.elementwise import softplus as _softplus
from ..ops.nn import log_softmax as _log_softmax
from ..ops.nn import softmax as _softmax
from ..ops.products import matmul
from ..ops.reductions import mean
from ..ops.reductions import sum as _sum
from ..ops.shape import _values, expand_dims, reshape, squeeze, swapaxes, take_along_axis


def _value(x: Any) -> np.ndarray:
    return x.data if isinstance(x, Tensor) else np.asarray(x)


# ---- layers --------------------------------------------------------------------------

def linear(input: Any, weight: Any, bias: Any = None) -> Any:
    """``input @ weight.T + bias`` (weight of shape ``(out_features, in_features)``)."""
    out = matmul(input, swapaxes(weight, -1, -2) if np.ndim(weight) > 1 else weight)
    return out if bias is None else out + bias


def gelu(input: Any, approximate: str = "none") -> Any:
    """Gaussian error linear unit: ``x * Phi(x)``, or its tanh approximation."""
    if approximate == "none":
        return input * (0.5 * (1 + erf(input * (1 / math.sqrt(2)))))
    if approximate == "tanh":
        inner = math.sqrt(2 / math.pi) * (input + 0.044715 * input * input * input)
        return 0.5 * input * (1 + tanh(inner))
    raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")


def softplus(input: Any, beta: float = 1.0, threshold: float = 20.0) -> Any:
    """``log(1 + exp(beta * x)) / beta``, and ``x`` where ``beta * x > threshold``."""
    refuse_grad("nn.functional.softplus", "where the formula switches: not differentiated",
                threshold=threshold)
    bx = input * beta if beta != 1 else input
    soft = _softplus(bx) / beta if beta != 1 else _softplus(bx)
    return where(bx > threshold, input, soft)  # (a tensor's comparison: batched in vmap)


def softmax(input: Any, dim: int, dtype: Any = None) -> Any:
    """Softmax along ``dim`` (``exp(x) / sum(exp(x))``, computed stably)."""
    if dtype is not None:
        input = input.astype(dtype)
    return _softmax(input, axis=dim)


def log_softmax(input: Any, dim: int, dtype: Any = None) -> Any:
    """Logarithm of :func:`softmax` along ``dim``, computed stably."""
    if dtype is not None:
        input = input.astype(dtype)
    return _log_softmax(input, axis=dim)


def dropout(input: Any, p: float = 0.5, training: bool = True,
            generator: np.random.Generator | None = None) -> Any:
    """Zero each element with probability ``p`` and scale the rest by ``1 / (1 - p)``.

    Parameters
    ----------
    input : Tensor or array
    p : float
        The drop probability, in [0, 1].
    training : bool
        When False, return ``input`` unchanged.
    generator : numpy.random.Generator, optional
        The source of the mask (default: :func:`yaad.nn.init.default_generator`).
    """
    refuse_grad("nn.functional.dropout", "a probability: the mask is drawn, not "
                "differentiated", p=p)
    if not 0 <= p <= 1:
        raise ValueError(f"dropout: p must be in [0, 1], got {p}")
    if not training or p == 0:
        return input
    from .init import default_generator

    rng = default_generator() if generator is None else generator
    shape = shape_of(input)
    real = np.empty(0, dtype=dtype_of(input)).real.dtype
    if p == 1:
        return input * np.zeros(shape, dtype=real)
    # (inside vmap, as vmap's randomness says: refused, one mask for all, or one each)
    drawn = draw(rng.random, shape, "dropout")
    return input * ((drawn >= p).astype(real) * real.type(1 / (1 - p)))


def layer_norm(input: Any, normalized_shape: int | tuple[int, ...], weight: Any = None,
               bias: Any = None, eps: float = 1e-5) -> Any:
    """Normalise over the trailing ``normalized_shape`` axes (biased variance), then
    scale by ``weight`` and shift by ``bias``."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if tuple(shape_of(input)[-len(shape):]) != shape:
        raise ValueError(f"layer_norm: the input of shape {shape_of(input)} does not "
                         f"end with normalized_shape {shape}")
    axes = tuple(range(-len(shape), 0))
    centred = input - mean(input, axis=axes, keepdims=True)
    var = mean(centred * centred, axis=axes, keepdims=True)
    out = centred / sqrt(var + eps)
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out


def embedding(input: Any, weight: Any, padding_idx: int | None = None) -> Any:
    """Rows of ``weight`` at the integer indices ``input``; no gradient reaches the row
    ``padding_idx``."""
    idx = _values(input) if isinstance(input, Tensor) else np.asarray(input)
    if idx.dtype.kind not in "iu":
        raise TypeError(f"embedding: indices must be integers, got dtype {idx.dtype}")
    n = shape_of(weight)[0]
    if idx.size and (idx.min() < -n or idx.max() >= n):  # (inside vmap: every example's)
        raise IndexError(f"embedding: indices must be in [0, {n}), got values from "
                         f"{idx.min()} to {idx.max()}")
    index = input if isinstance(input, Tensor) else idx  # (batched in vmap)
    out = weight[index]
    if padding_idx is not None:
        keep = expand_dims(index != padding_idx % n, -1)
        out = where(keep, out, out.detach() if isinstance(out, Tensor) else out)
    return out


# ---- losses --------------------------------------------------------------------------

def _reduce(loss: Any, reduction: str, name: str, denominator: Any = None) -> Any:
    if reduction == "none":
        return loss
    if reduction == "sum":
        return _sum(loss)
    if reduction == "mean":
        return mean(loss) if denominator is None else _sum(loss) / denominator
    raise ValueError(f"{name}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def _same_shape(input: Any, target: Any, name: str) -> None:
    a, b = shape_of(input), shape_of(target)
    if a != b:
        raise ValueError(f"{name}: the target has shape {b}, the input has shape {a}; "
                         f"they must be equal")


def mse_loss(input: Any, target: Any, reduction: str = "mean") -> Any:
    """Mean squared error ``|input - target|^2`` (complex inputs: squared modulus)."""
    _same_shape(input, target, "mse_loss")
    d = input - target
    sq = d.real * d.real + d.imag * d.imag if dtype_of(d).kind == "c" else d * d
    return _reduce(sq, reduction, "mse_loss")


def l1_loss(input: Any, target: Any, reduction: str = "mean") -> Any:
    """Mean absolute error ``|input - target|``."""
    _same_shape(input, target, "l1_loss")
    from ..ops.elementwise import absolute

    return _reduce(absolute(input - target), reduction, "l1_loss")


def _pick(x: Any, target: Any) -> Any:
    """``x`` at the class ``target`` along the class axis (0 for 1-d, else 1); ``target``
    an integer array or tensor (batched inside vmap, where each example has its own)."""
    axis = 0 if ndim_of(x) == 1 else 1
    return squeeze(take_along_axis(x, expand_dims(target, axis), axis=axis), axis=axis)


def _class_loss(logp: Any, target: Any, weight: Any, ignore_index: int, reduction: str,
                label_smoothing: float, name: str) -> Any:
    """Negative log-likelihood of class indices, with weights, ignored entries and label
    smoothing, reduced as PyTorch does (the mean divides by the sum of target weights)."""
    # The checks read every example's targets (inside vmap too); the loss indexes with
    # the targets themselves (a batched tensor inside vmap), never with their values.
    every = _values(target) if isinstance(target, Tensor) else np.asarray(target)
    if every.dtype.kind not in "iu":
        raise TypeError(f"{name}: indices must be integers, got dtype {every.dtype}")
    t = target if isinstance(target, Tensor) and batch_axes(target) else every
    shape = shape_of(logp)
    class_axis = 0 if len(shape) == 1 else 1
    n_classes = shape[class_axis]
    expected = () if len(shape) == 1 else shape[:1] + shape[2:]
    if shape_of(t) != expected:
        raise ValueError(f"{name}: for an input of shape {shape} the target must have shape "
                         f"{expected}, got {shape_of(t)}")
    all_valid = bool((every != ignore_index).all())
    checked = every if all_valid else np.where(every != ignore_index, every, 0)
    if checked.size and (checked.min() < 0 or checked.max() >= n_classes):
        raise IndexError(f"{name}: target values must be in [0, {n_classes}) or equal to "
                         f"ignore_index={ignore_index}; got values from {checked.min()} to "
                         f"{checked.max()}")
    valid = t != ignore_index
    safe = t if all_valid else where(valid, t, 0)
    real = dtype_of(logp)
    w = None if weight is None else weight[safe]
    if not all_valid:
        mask = valid.astype(real)
        w = mask if w is None else w * mask
    loss = -_pick(logp, safe)
    if w is not None:
        loss = loss * w
    if label_smoothing:
        cw = logp if weight is None else logp * reshape(
            weight, (n_classes,) + (1,) * (len(shape) - class_axis - 1))
        smooth = -_sum(cw, axis=class_axis)
        if not all_valid:
            smooth = smooth * mask
        loss = (1 - label_smoothing) * loss + (label_smoothing / n_classes) * smooth
    return _reduce(loss, reduction, name, None if w is None else _sum(w))


def nll_loss(input: Any, target: Any, weight: Any = None, ignore_index: int = -100,
             reduction: str = "mean") -> Any:
    """Negative log-likelihood loss of log-probabilities ``input`` at class indices.

    Parameters
    ----------
    input : Tensor
        Log-probabilities of shape ``(C,)``, ``(N, C)`` or ``(N, C, d1, ...)``.
    target : array of int
        Class indices of shape ``()``, ``(N,)`` or ``(N, d1, ...)``.
    weight : array_like of shape (C,), optional
        A weight per class.
    ignore_index : int
        Targets equal to it contribute nothing (and do not count in the mean).
    reduction : {'mean', 'sum', 'none'}
        'mean' divides by the total weight of the targets, as PyTorch does.
    """
    return _class_loss(input, target, weight, ignore_index, reduction, 0.0, "nll_loss")


def cross_entropy(input: Any, target: Any, weight: Any = None, ignore_index: int = -100,
                  reduction: str = "mean", label_smoothing: float = 0.0) -> Any:
    """Cross-entropy of unnormalised scores ``input`` (``log_softmax`` + ``nll_loss``).

    Parameters
    ----------
    input : Tensor
        Scores (logits) of shape ``(C,)``, ``(N, C)`` or ``(N, C, d1, ...)``.
    target : array
        Class indices (integers, shape of ``input`` without the class axis), or class
        probabilities (floating point, the shape of ``input``).
    weight : array_like of shape (C,), optional
        A weight per class.
    ignore_index : int
        For class indices: targets equal to it contribute nothing.
    reduction : {'mean', 'sum', 'none'}
        As PyTorch: with class indices 'mean' divides by the total target weight, with
        probabilities by the number of samples.
    label_smoothing : float
        Mix the target with the uniform distribution by this amount, in [0, 1].
    """
    if not 0 <= label_smoothing <= 1:
        raise ValueError(f"cross_entropy: label_smoothing must be in [0, 1], got "
                         f"{label_smoothing}")
    shape = shape_of(input)
    class_axis = 0 if len(shape) == 1 else 1
    logp = _log_softmax(input, axis=class_axis)
    if dtype_of(target).kind not in "fc":
        return _class_loss(logp, target, weight, ignore_index, reduction, label_smoothing,
                           "cross_entropy")
    _same_shape(input, target, "cross_entropy (probability targets)")
    n_classes = shape[class_axis]
    if label_smoothing:
        target = target * (1 - label_smoothing) + label_smoothing / n_classes
    terms = logp * target
    if weight is not None:
        terms = terms * reshape(weight, (n_classes,) + (1,) * (len(shape) - class_axis - 1))
    return _reduce(-_sum(terms, axis=class_axis), reduction, "cross_entropy")


def binary_cross_entropy(input: Any, target: Any, weight: Any = None,
                         reduction: str = "mean") -> Any:
    """Binary cross-entropy of probabilities ``input`` in [0, 1]:
    ``-w (t log x + (1 - t) log(1 - x))``, each log clamped at -100 as PyTorch does."""
    _same_shape(input, target, "binary_cross_entropy")
    x = _value(input)
    if x.size and (np.min(x) < 0 or np.max(x) > 1):
        raise ValueError("binary_cross_entropy: input values must be probabilities in "
                         "[0, 1] (use binary_cross_entropy_with_logits for scores)")
    with np.errstate(divide="ignore"):
        loss = -(target * maximum(log(input), -100.0)
                 + (1 - target) * maximum(log(1 - input), -100.0))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction, "binary_cross_entropy")


def binary_cross_entropy_with_logits(input: Any, target: Any, weight: Any = None,
                                     reduction: str = "mean", pos_weight: Any = None) -> Any:
    """Binary cross-entropy of ``sigmoid(input)``, computed stably from the scores."""
    _same_shape(input, target, "binary_cross_entropy_with_logits")
    soft = _softplus(-input)  # = -log(sigmoid(x))
    if pos_weight is None:
        loss = (1 - target) * input + soft
    else:
        loss = (1 - target) * input + (1 + (pos_weight - 1) * target) * soft
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction, "binary_cross_entropy_with_logits")


__all__ = ["linear", "relu", "tanh", "sigmoid", "gelu", "softplus", "softmax",
           "log_softmax", "dropout", "layer_norm", "embedding", "mse_loss", "l1_loss",
           "nll_loss", "cross_entropy", "binary_cross_entropy",
           "binary_cross_entropy_with_logits"]


def __dir__() -> list[str]:  # what dir() and completion list: the public names only
    return list(__all__)
