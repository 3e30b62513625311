"""Parameter initialisers (``torch.nn.init`` names), filling tensors or arrays in place.

Random numbers come from a NumPy ``Generator``: pass ``generator=`` for a private stream,
or seed the module-wide default with :func:`manual_seed`. For a complex tensor the real
and imaginary parts are drawn independently, each with variance halved, so that
``E|w|^2`` is what the real initialiser gives.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..core.graph import mark_modified
from ..core.tensor import Tensor

_default = [np.random.default_rng()]


def manual_seed(seed: int) -> np.random.Generator:
    """Reseed the default generator used by the initialisers and layers; return it."""
    _default[0] = np.random.default_rng(seed)
    return _default[0]


def default_generator() -> np.random.Generator:
    """The generator used when ``generator=None``."""
    return _default[0]


def _array(tensor: Any) -> np.ndarray:
    arr = tensor.data if isinstance(tensor, Tensor) else tensor
    if not isinstance(arr, np.ndarray):
        raise TypeError(f"initialisers fill a Tensor or ndarray in place, got "
                        f"{type(tensor).__name__}")
    return arr


def _fill(tensor: Any, draw: Any, scale: float = 1.0) -> Any:
    """Write ``draw(shape)`` (times ``scale``) into ``tensor``; complex: two halves."""
    arr = _array(tensor)
    if arr.dtype.kind == "c":
        value = (draw(arr.shape) + 1j * draw(arr.shape)) * (scale / math.sqrt(2))
    else:
        value = draw(arr.shape) * scale
    arr[...] = value
    mark_modified(arr)
    return tensor


def _rng(generator: np.random.Generator | None) -> np.random.Generator:
    return _default[0] if generator is None else generator


def uniform_(tensor: Any, a: float = 0.0, b: float = 1.0,
             generator: np.random.Generator | None = None) -> Any:
    """Fill with samples of U(a, b) (complex: each part from the centred, scaled law)."""
    rng = _rng(generator)
    arr = _array(tensor)
    if arr.dtype.kind == "c":
        centre, half = (a + b) / 2, (b - a) / 2
        _fill(tensor, lambda s: rng.uniform(-half, half, s))
        arr += centre
        return tensor
    return _fill(tensor, lambda s: rng.uniform(a, b, s))


def normal_(tensor: Any, mean: float = 0.0, std: float = 1.0,
            generator: np.random.Generator | None = None) -> Any:
    """Fill with samples of N(mean, std^2) (complex: ``E|w - mean|^2 = std^2``)."""
    rng = _rng(generator)
    _fill(tensor, rng.standard_normal, std)
    arr = _array(tensor)
    arr += mean
    return tensor


def constant_(tensor: Any, val: float) -> Any:
    """Fill with a constant."""
    arr = _array(tensor)
    arr[...] = val
    mark_modified(arr)
    return tensor


def zeros_(tensor: Any) -> Any:
    """Fill with zeros."""
    return constant_(tensor, 0)


def ones_(tensor: Any) -> Any:
    """Fill with ones."""
    return constant_(tensor, 1)


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for a nonlinearity (``torch.nn.init.calculate_gain``)."""
    linear = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d",
              "conv_transpose2d", "conv_transpose3d", "sigmoid")
    if nonlinearity in linear:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else float(param)
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"calculate_gain: unsupported nonlinearity {nonlinearity!r}")


def fan_in_and_fan_out(tensor: Any) -> tuple[int, int]:
    """``(fan_in, fan_out)`` of a weight of shape ``(out, in, *kernel)``."""
    shape = _array(tensor).shape
    if len(shape) < 2:
        raise ValueError(f"fan in and fan out need a tensor with at least 2 dimensions, "
                         f"got shape {shape}")
    field = int(np.prod(shape[2:])) if len(shape) > 2 else 1
    return shape[1] * field, shape[0] * field


def xavier_uniform_(tensor: Any, gain: float = 1.0,
                    generator: np.random.Generator | None = None) -> Any:
    """Glorot uniform: U(-a, a) with ``a = gain * sqrt(6 / (fan_in + fan_out))``."""
    fan_in, fan_out = fan_in_and_fan_out(tensor)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor: Any, gain: float = 1.0,
                   generator: np.random.Generator | None = None) -> Any:
    """Glorot normal: N(0, std^2) with ``std = gain * sqrt(2 / (fan_in + fan_out))``."""
    fan_in, fan_out = fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)), generator)


def _kaiming_std(tensor: Any, a: float, mode: str, nonlinearity: str) -> float:
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"kaiming init: mode must be 'fan_in' or 'fan_out', got {mode!r}")
    fan_in, fan_out = fan_in_and_fan_out(tensor)
    fan = fan_in if mode == "fan_in" else fan_out
    return calculate_gain(nonlinearity, a) / math.sqrt(fan)


def kaiming_uniform_(tensor: Any, a: float = 0.0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu",
                     generator: np.random.Generator | None = None) -> Any:
    """He uniform: U(-b, b) with ``b = gain * sqrt(3 / fan)``."""
    bound = math.sqrt(3.0) * _kaiming_std(tensor, a, mode, nonlinearity)
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor: Any, a: float = 0.0, mode: str = "fan_in",
                    nonlinearity: str = "leaky_relu",
                    generator: np.random.Generator | None = None) -> Any:
    """He normal: N(0, std^2) with ``std = gain / sqrt(fan)``."""
    return normal_(tensor, 0.0, _kaiming_std(tensor, a, mode, nonlinearity), generator)


__all__ = ["manual_seed", "default_generator", "uniform_", "normal_", "constant_", "zeros_",
           "ones_", "calculate_gain", "fan_in_and_fan_out", "xavier_uniform_",
           "xavier_normal_", "kaiming_uniform_", "kaiming_normal_"]


def __dir__() -> list[str]:  # what dir() and completion list: the public names only
    return list(__all__)
