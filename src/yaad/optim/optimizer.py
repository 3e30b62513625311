"""Optimizers with PyTorch's names, defaults, update formulas and state layout.

Updates run on the parameters' arrays in place (no graph is recorded) and bump their
version, so a graph built before a step cannot silently backpropagate through new values.

Complex parameters: yaad's gradient of a real loss is ``dL/dx + 1j dL/dy``, so each
optimizer treats a complex parameter exactly as the pair of its real and imaginary parts
(through a real view of the same memory): Adam on ``z`` follows the trajectory of Adam on
``(x, y)``, elementwise second moments included.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Iterable

import numpy as np

from ..core.grad_mode import enable_grad, no_grad
from ..core.graph import mark_modified
from ..core.tensor import Tensor


def as_real(a: np.ndarray) -> np.ndarray:
    """A real view of ``a`` sharing its memory: shape ``a.shape + (2,)`` for complex ``a``
    (real and imaginary parts, like ``torch.view_as_real``), ``a`` itself for real ``a``."""
    if a.dtype.kind != "c":
        return a
    return a[..., None].view(a.real.dtype)


class Optimizer:
    """Base class: parameter groups, per-parameter state, ``zero_grad`` and state dicts.

    Parameters
    ----------
    params : iterable of Tensor, or iterable of dict
        The parameters (leaf tensors), or groups: dicts with ``'params'`` and any option
        overriding the defaults for that group.
    defaults : dict
        The options of this optimizer and their default values.

    Attributes
    ----------
    param_groups : list of dict
        Each group's ``'params'`` and options (e.g. ``'lr'``, changed by schedulers).
    state : dict
        Per parameter (keyed by the parameter), the optimizer's arrays and step count.
    """

    def __init__(self, params: Iterable[Any], defaults: dict[str, Any]) -> None:
        self.defaults = defaults
        self.state: dict[Tensor, dict[str, Any]] = {}
        self.param_groups: list[dict[str, Any]] = []
        if isinstance(params, Tensor):
            raise TypeError(f"{type(self).__name__}: params must be an iterable of tensors "
                            f"or of dicts, not a single tensor (wrap it in a list)")
        groups = list(params)
        if not groups:
            raise ValueError(f"{type(self).__name__} got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for g in groups:
            self.add_param_group(g)

    def add_param_group(self, param_group: dict[str, Any]) -> None:
        """Add a group of parameters with its own options (missing ones take defaults)."""
        name = type(self).__name__
        params = param_group["params"]
        params = [params] if isinstance(params, Tensor) else list(params)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError(f"{name}: can only optimize tensors, got {type(p).__name__}")
            if not p.is_leaf:
                raise ValueError(f"{name}: can only optimize leaf tensors (parameters); "
                                 f"use .detach().requires_grad_() to make one")
            if p.dtype.kind not in "fc":
                raise TypeError(f"{name}: parameters must be floating point or complex, got "
                                f"{p.dtype}")
            if id(p) in seen:
                raise ValueError(f"{name}: a parameter appears in more than one group (or "
                                 f"twice in one)")
            seen.add(id(p))
        group = {**self.defaults, **param_group, "params": params}
        for key, value in group.items():
            if key in ("lr", "eps", "weight_decay", "momentum") and value < 0:
                raise ValueError(f"{name}: invalid {key} {value} (must be >= 0)")
        self.param_groups.append(group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all parameters, to None (default) or to zeros."""
        for group in self.param_groups:
            for p in group["params"]:
                if set_to_none or p.grad is None:
                    p.grad = None
                else:
                    p.grad = np.zeros_like(p.data)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Update every parameter that has a gradient.

        Parameters
        ----------
        closure : callable, optional
            Recomputes the loss (with its backward); called first, with recording on.

        Returns
        -------
        The closure's loss, or None.
        """
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        with no_grad():
            for group in self.param_groups:
                maximize = group.get("maximize", False)
                for p in group["params"]:
                    g = p.grad
                    if g is None:
                        continue
                    if g.__class__ is not np.ndarray:
                        g = g.data if isinstance(g, Tensor) else np.asarray(g)
                    data = p.data
                    complex_ = data.dtype.kind == "c"
                    if complex_ and not data.flags.c_contiguous:
                        p.data = np.asarray(data, order="C")
                        data = p.data
                    # (np.ascontiguousarray would make a 0-d gradient 1-d; the check first:
                    # asarray's arguments cost more than the common case's work)
                    if g.dtype is not data.dtype or not g.flags.c_contiguous:
                        g = np.asarray(g, dtype=data.dtype, order="C")
                    if complex_:
                        g = as_real(g)
                    if maximize:
                        g = -g
                    state = self.state.get(p)
                    if state is None:
                        state = self.state[p] = {"step": 0}
                    state["step"] += 1
                    self._update(data, as_real(data) if complex_ else data, g, state, group)
                    mark_modified(data)
        return loss

    def _update(self, p: np.ndarray, x: np.ndarray, g: np.ndarray, state: dict[str, Any],
                group: dict[str, Any]) -> None:
        """Update the parameter ``p`` through its real view ``x``, given the real view ``g``
        of its gradient."""
        raise NotImplementedError

    # ---- state dicts ----------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        """The optimizer's state in PyTorch's layout.

        Returns
        -------
        dict
            ``{'state': {index: {name: value}}, 'param_groups': [options with 'params' as
            indices]}``; parameters are numbered across groups in order. Save it with
            :func:`yaad.save`.
        """
        index: dict[int, int] = {}
        groups = []
        for group in self.param_groups:
            ids = []
            for p in group["params"]:
                index.setdefault(id(p), len(index))
                ids.append(index[id(p)])
            groups.append({**{k: v for k, v in group.items() if k != "params"}, "params": ids})
        state = {index[id(p)]: dict(s) for p, s in self.state.items() if id(p) in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load options and state from :meth:`state_dict` (the same parameter layout)."""
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups) or any(
                len(a["params"]) != len(b["params"]) for a, b in zip(groups, self.param_groups)):
            raise ValueError(f"{type(self).__name__}.load_state_dict: the state dict has "
                             f"groups of sizes {[len(g['params']) for g in groups]}, this "
                             f"optimizer {[len(g['params']) for g in self.param_groups]}")
        by_index = {i: p for saved, group in zip(groups, self.param_groups)
                    for i, p in zip(saved["params"], group["params"])}
        # Convert (and check) everything before changing anything.
        state = {by_index[int(i)]: {k: _state_value(v, by_index[int(i)]) for k, v in s.items()}
                 for i, s in state_dict["state"].items()}
        for saved, group in zip(groups, self.param_groups):
            group.update({k: v for k, v in saved.items() if k != "params"})
        self.state = state

    def __repr__(self) -> str:
        lines = [f"{type(self).__name__} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines += [f"    {k}: {v}" for k, v in sorted(group.items()) if k != "params"]
        return "\n".join(lines) + "\n)"


def _state_value(v: Any, p: Tensor) -> Any:
    """A loaded state entry: arrays are copied into the parameter's dtype and shape."""
    if isinstance(v, Tensor):
        v = v.data
    if not isinstance(v, np.ndarray):
        return v
    if v.ndim == 0 and p.ndim:  # a number kept as a 0-d array
        return v.item()
    if v.shape != p.shape:
        raise ValueError(f"Optimizer.load_state_dict: a state array has shape {v.shape}, its "
                         f"parameter {p.shape}")
    return np.array(v, dtype=p.dtype)


def _buf(state: dict[str, Any], name: str, p: np.ndarray, fill: float = 0.0) -> np.ndarray:
    """The state array ``name`` (kept in the parameter's dtype and shape, as in PyTorch),
    made on first use, as a real view."""
    buf = state.get(name)
    if buf is None:
        buf = state[name] = np.zeros_like(p)
        if fill:
            as_real(buf)[...] = fill  # both parts of a complex entry, as for a real pair
    return as_real(buf)


_FUSED_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))  # (_adam_kernel's)


def _decayed(g: np.ndarray, x: np.ndarray, weight_decay: float) -> np.ndarray:
    return g + weight_decay * x if weight_decay else g


class SGD(Optimizer):
    """Stochastic gradient descent, with momentum, dampening, Nesterov and weight decay.

    Parameters
    ----------
    params : iterable
        Parameters or parameter groups.
    lr : float
        Learning rate.
    momentum : float, optional
        ``buf = momentum * buf + (1 - dampening) * g`` (``buf = g`` at the first step).
    dampening : float, optional
        ``buf = momentum * buf + (1 - dampening) * g`` (``buf = g`` at the first step).
    weight_decay : float
        Adds ``weight_decay * p`` to the gradient.
    nesterov : bool
        Use ``g + momentum * buf`` as the step direction.
    maximize : bool
        Ascend instead of descend.
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-3, momentum: float = 0.0,
                 dampening: float = 0.0, weight_decay: float = 0.0, nesterov: bool = False,
                 maximize: bool = False) -> None:
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("SGD: Nesterov momentum needs momentum > 0 and dampening = 0")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov,
                                      maximize=maximize))

    def _update(self, p: np.ndarray, x: np.ndarray, g: np.ndarray, state: dict[str, Any],
                group: dict[str, Any]) -> None:
        g = _decayed(g, x, group["weight_decay"])
        momentum = group["momentum"]
        if momentum:
            first = "momentum_buffer" not in state
            buf = _buf(state, "momentum_buffer", p)
            if first:
                buf[...] = g
            else:
                buf *= momentum
                buf += (1 - group["dampening"]) * g
            g = g + momentum * buf if group["nesterov"] else buf
        x -= group["lr"] * g


class Adam(Optimizer):
    """Adam (Kingma and Ba), optionally AMSGrad; PyTorch's formulas and defaults.

    Parameters
    ----------
    params : iterable
        Parameters or parameter groups.
    lr : float
        Learning rate.
    betas : tuple of float
        Decay rates of the first and second moment estimates.
    eps : float
        Added to the denominator.
    weight_decay : float
        L2 penalty added to the gradient (see :class:`AdamW` for decoupled decay).
    amsgrad : bool
        Use the maximum of past second moments.
    maximize : bool
        Ascend instead of descend.
    fused : bool, optional
        True: update each parameter in one compiled loop over its elements (needs the
        optional ``numba``; the same operations in the same order as the default NumPy
        update, so the same bits; parameters that are not contiguous float32/float64
        (or complex64/complex128) arrays take the NumPy update). None or False: the
        NumPy update (a few NumPy calls per parameter).
    """

    decoupled = False

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, amsgrad: bool = False,
                 maximize: bool = False, fused: bool | None = None) -> None:
        name = type(self).__name__
        if not (0 <= betas[0] < 1 and 0 <= betas[1] < 1):
            raise ValueError(f"{name}: betas must be in [0, 1), got {betas}")
        if fused:
            import importlib.util

            if importlib.util.find_spec("numba") is None:
                raise ImportError(f"{name}(fused=True) needs numba (pip install numba); "
                                  f"without it use fused=None")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, amsgrad=amsgrad,
                                      maximize=maximize, fused=bool(fused)))

    def _update(self, p: np.ndarray, x: np.ndarray, g: np.ndarray, state: dict[str, Any],
                group: dict[str, Any]) -> None:
        lr, wd = group["lr"], group["weight_decay"]
        beta1, beta2 = group["betas"]
        if group.get("fused") and x.dtype in _FUSED_DTYPES and x.flags.c_contiguous:
            self._fused_update(p, x, g, state, group)
            return
        if self.decoupled:
            x *= 1 - lr * wd
        else:
            g = _decayed(g, x, wd)
        m = _buf(state, "exp_avg", p)
        v = _buf(state, "exp_avg_sq", p)
        m += (1 - beta1) * (g - m)
        v *= beta2
        v += (1 - beta2) * g * g
        t = state["step"]
        if group["amsgrad"]:
            vmax = _buf(state, "max_exp_avg_sq", p)
            np.maximum(vmax, v, out=vmax)
            v = vmax
        denom = np.sqrt(v) / math.sqrt(1 - beta2 ** t) + group["eps"]
        x -= (lr / (1 - beta1 ** t)) * m / denom

    def _fused_update(self, p: np.ndarray, x: np.ndarray, g: np.ndarray,
                      state: dict[str, Any], group: dict[str, Any]) -> None:
        """:meth:`_update` as one kernel call (``_adam_kernel``): the same operations
        on the same values, rounded to the parameter's dtype as NumPy rounds them."""
        lr, wd, eps = group["lr"], group["weight_decay"], group["eps"]
        beta1, beta2 = group["betas"]
        t = state["step"]
        key = (x.dtype.char, lr, wd, eps, beta1, beta2, t, self.decoupled)
        scalars = _FUSED_SCALARS.get(key)
        if scalars is None:
            if len(_FUSED_SCALARS) > 256:
                _FUSED_SCALARS.clear()
            scalars = _FUSED_SCALARS[key] = np.array(
                [0 if self.decoupled else wd, 1 - lr * wd if self.decoupled else 1,
                 1 - beta1, beta2, 1 - beta2, math.sqrt(1 - beta2 ** t), eps,
                 lr / (1 - beta1 ** t)], dtype=x.dtype)  # (each rounded as NumPy does)
        m = _buf(state, "exp_avg", p).reshape(-1)
        v = _buf(state, "exp_avg_sq", p).reshape(-1)
        vmax = (_buf(state, "max_exp_avg_sq", p).reshape(-1) if group["amsgrad"]
                else _NO_VMAX[x.dtype.char])
        _adam_kernel()(x.reshape(-1), g.reshape(-1), m, v, vmax, scalars)


# the kernel's scalars, by dtype and settings
_FUSED_SCALARS: dict[tuple[Any, ...], np.ndarray] = {}
_NO_VMAX = {dt.char: np.zeros(0, dt) for dt in _FUSED_DTYPES}  # vmax of size 0: no AMSGrad
_KERNEL: list[Any] = []


def _adam_kernel() -> Any:
    """``_adam_kernel.adam``, imported on first use (importing numba takes a while)."""
    if not _KERNEL:
        from ._adam_kernel import adam

        _KERNEL.append(adam)
    return _KERNEL[0]


class AdamW(Adam):
    """Adam with decoupled weight decay (``p *= 1 - lr * weight_decay`` each step).

    Parameters are those of :class:`Adam`; ``weight_decay`` defaults to 0.01.
    """

    decoupled = True

    def __init__(self, params: Iterable[Any], lr: float = 1e-3,
                 betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False,
                 maximize: bool = False, fused: bool | None = None) -> None:
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize, fused)


class RMSprop(Optimizer):
    """RMSprop: divide by a running root mean square of the gradients.

    Parameters
    ----------
    params : iterable
        Parameters or parameter groups.
    lr : float
        Learning rate.
    alpha : float
        Smoothing constant of the running mean of squares.
    eps : float
        Added to the denominator.
    weight_decay : float
        L2 penalty added to the gradient.
    momentum : float
        Momentum of the update.
    centered : bool
        Subtract the square of the running mean gradient (variance estimate).
    maximize : bool
        Ascend instead of descend.
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, alpha: float = 0.99,
                 eps: float = 1e-8, weight_decay: float = 0.0, momentum: float = 0.0,
                 centered: bool = False, maximize: bool = False) -> None:
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
                                      momentum=momentum, centered=centered,
                                      maximize=maximize))

    def _update(self, p: np.ndarray, x: np.ndarray, g: np.ndarray, state: dict[str, Any],
                group: dict[str, Any]) -> None:
        g = _decayed(g, x, group["weight_decay"])
        alpha = group["alpha"]
        sq = _buf(state, "square_avg", p)
        sq *= alpha
        sq += (1 - alpha) * g * g
        if group["centered"]:
            gavg = _buf(state, "grad_avg", p)
            gavg += (1 - alpha) * (g - gavg)
            avg = np.sqrt(sq - gavg * gavg) + group["eps"]
        else:
            avg = np.sqrt(sq) + group["eps"]
        if group["momentum"] > 0:
            buf = _buf(state, "momentum_buffer", p)
            buf *= group["momentum"]
            buf += g / avg
            x -= group["lr"] * buf
        else:
            x -= group["lr"] * g / avg


class Adagrad(Optimizer):
    """Adagrad: divide by the root of the sum of squared gradients.

    Parameters
    ----------
    params : iterable
        Parameters or parameter groups.
    lr : float
        Learning rate.
    lr_decay : float
        The step size is ``lr / (1 + (step - 1) * lr_decay)``.
    weight_decay : float
        L2 penalty added to the gradient.
    initial_accumulator_value : float
        Starting value of the sum of squares.
    eps : float
        Added to the denominator.
    maximize : bool
        Ascend instead of descend.
    """

    def __init__(self, params: Iterable[Any], lr: float = 1e-2, lr_decay: float = 0.0,
                 weight_decay: float = 0.0, initial_accumulator_value: float = 0.0,
                 eps: float = 1e-10, maximize: bool = False) -> None:
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value,
                                      eps=eps, maximize=maximize))

    def _update(self, p: np.ndarray, x: np.ndarray, g: np.ndarray, state: dict[str, Any],
                group: dict[str, Any]) -> None:
        g = _decayed(g, x, group["weight_decay"])
        total = _buf(state, "sum", p, group["initial_accumulator_value"])
        total += g * g
        clr = group["lr"] / (1 + (state["step"] - 1) * group["lr_decay"])
        x -= clr * g / (np.sqrt(total) + group["eps"])
