"""``Module`` and ``Parameter``: the containers of trainable state (PyTorch's mechanics).

Parameters and submodules are registered by assigning them as attributes; they are also
kept in the instance ``__dict__``, so reading ``self.weight`` costs a plain attribute
lookup.
"""

from __future__ import annotations

from collections import namedtuple
from typing import Any, Callable, Iterator

import numpy as np

from ..compile import register_model_type
from ..core.grad_mode import no_grad
from ..core.graph import mark_modified
from ..core.tensor import Tensor

IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


class Parameter(Tensor):
    """A tensor that a :class:`Module` registers as trainable when assigned as an attribute.

    Parameters
    ----------
    data : array_like or Tensor, optional
        The value; an ndarray or a tensor's data is used without a copy. Empty if omitted.
    requires_grad : bool, optional
        True by default (floating point and complex dtypes only).
    """

    __slots__ = ()

    def __init__(self, data: Any = None, requires_grad: bool = True) -> None:
        if data is None:
            data = np.empty(0)
        super().__init__(data, requires_grad=requires_grad)

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    __str__ = __repr__


def _data(value: Any) -> np.ndarray:
    return value.data if isinstance(value, Tensor) else np.asarray(value)


class Module:
    """Base class of layers and models.

    Subclasses call ``super().__init__()`` first, assign :class:`Parameter` and
    :class:`Module` attributes (they are registered in assignment order), and define
    ``forward``. Calling the module calls ``forward``.

    Attributes
    ----------
    training : bool
        True in training mode (:meth:`train`), False in evaluation mode (:meth:`eval`).
    """

    # Set in __init__ through __dict__ (declared here for type checkers only).
    _parameters: dict[str, Parameter | None]
    _buffers: dict[str, Any]
    _non_persistent: set[str]
    _modules: dict[str, Module | None]
    training: bool

    def __init__(self) -> None:
        d = self.__dict__
        d["_parameters"] = {}
        d["_buffers"] = {}
        d["_non_persistent"] = set()
        d["_modules"] = {}
        d["training"] = True

    # ---- registration ------------------------------------------------------------

    def _registries(self) -> tuple[dict[str, Parameter | None], dict[str, Module | None],
                                   dict[str, Any]]:
        d = self.__dict__
        if "_parameters" not in d:
            raise AttributeError(f"cannot assign parameters or modules before "
                                 f"Module.__init__() is called: call super().__init__() "
                                 f"first in {type(self).__name__}.__init__")
        return d["_parameters"], d["_modules"], d["_buffers"]

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, (Parameter, Module)):
            params, modules, buffers = self._registries()
            for reg in (params, modules, buffers):
                reg.pop(name, None)
            if isinstance(value, Parameter):
                params[name] = value
            else:
                modules[name] = value
        else:
            d = self.__dict__
            params, modules, buffers = (d.get("_parameters", {}), d.get("_modules", {}),
                                        d.get("_buffers", {}))
            if name in params or name in modules:
                kind = "parameter" if name in params else "module"
                if value is not None:
                    wanted = "yaad.nn.Parameter" if kind == "parameter" else "yaad.nn.Module"
                    raise TypeError(f"cannot assign a {type(value).__name__} as {kind} "
                                    f"'{name}' ({wanted} or None expected)")
                (params if kind == "parameter" else modules)[name] = None
            elif name in buffers:
                buffers[name] = value
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        for reg in self._registries():
            reg.pop(name, None)
        self._non_persistent.discard(name)
        object.__delattr__(self, name)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Register ``param`` (or None) under ``name``, like assigning the attribute."""
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"register_parameter: '{name}' must be a yaad.nn.Parameter or "
                            f"None, got {type(param).__name__}")
        self._registries()[0][name] = param
        object.__setattr__(self, name, param)

    def register_buffer(self, name: str, value: Any, persistent: bool = True) -> None:
        """Register non-trainable state (an array or tensor) saved in :meth:`state_dict`.

        Parameters
        ----------
        name : str
            The attribute name.
        value : array_like, Tensor or None
            The value.
        persistent : bool
            Whether it is part of the state dict.
        """
        self._registries()[2][name] = value
        if persistent:
            self._non_persistent.discard(name)
        else:
            self._non_persistent.add(name)
        object.__setattr__(self, name, value)

    def add_module(self, name: str, module: Module | None) -> None:
        """Register a submodule (or None) under ``name``."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"add_module: '{name}' must be a yaad.nn.Module or None, got "
                            f"{type(module).__name__}")
        self._registries()[1][name] = module
        object.__setattr__(self, name, module)

    register_module = add_module

    # ---- traversal ----------------------------------------------------------------

    def named_modules(self, memo: set[int] | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Module]]:
        """Yield ``(name, module)`` for this module and every submodule.

        Parameters
        ----------
        memo : set, optional
            Ids of modules already yielded (internal).
        prefix : str
            Prepended to every name.
        remove_duplicate : bool
            Yield a module reachable under several names only once.
        """
        memo = set() if memo is None else memo
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, m in self._modules.items():
            if m is not None:
                yield from m.named_modules(memo, f"{prefix}.{name}" if prefix else name,
                                           remove_duplicate)

    def modules(self) -> Iterator[Module]:
        """Yield this module and every submodule."""
        for _, m in self.named_modules():
            yield m

    def named_children(self) -> Iterator[tuple[str, Module]]:
        """Yield ``(name, module)`` for the direct submodules."""
        for name, m in self._modules.items():
            if m is not None:
                yield name, m

    def children(self) -> Iterator[Module]:
        """Yield the direct submodules."""
        for _, m in self.named_children():
            yield m

    def _named_members(self, registry: str, prefix: str, recurse: bool
                       ) -> Iterator[tuple[str, Any]]:
        seen = set()
        mods = self.named_modules(prefix=prefix) if recurse else [(prefix, self)]
        for mod_name, m in mods:
            for name, value in getattr(m, registry).items():
                if value is None or id(value) in seen:
                    continue
                seen.add(id(value))
                yield (f"{mod_name}.{name}" if mod_name else name), value

    def named_parameters(self, prefix: str = "", recurse: bool = True
                         ) -> Iterator[tuple[str, Parameter]]:
        """Yield ``(dotted name, parameter)`` pairs, each parameter once.

        Parameters
        ----------
        prefix : str
            Prepended to every name.
        recurse : bool
            Include the parameters of submodules.
        """
        return self._named_members("_parameters", prefix, recurse)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        """Yield the parameters (of submodules too, unless ``recurse=False``)."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True
                      ) -> Iterator[tuple[str, Any]]:
        """Yield ``(dotted name, buffer)`` pairs."""
        return self._named_members("_buffers", prefix, recurse)

    def buffers(self, recurse: bool = True) -> Iterator[Any]:
        """Yield the buffers."""
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def apply(self, fn: Callable[[Module], Any]) -> Module:
        """Call ``fn`` on every submodule and then on this module; return self."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    # ---- modes and gradients ------------------------------------------------------

    def train(self, mode: bool = True) -> Module:
        """Set training mode (affects :class:`Dropout`) here and in submodules; return self."""
        for m in self.modules():
            m.__dict__["training"] = bool(mode)
        return self

    def eval(self) -> Module:
        """Set evaluation mode; same as ``train(False)``."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        """Set ``requires_grad`` of every parameter; return self."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Reset the gradients of all parameters (to None, or to zeros)."""
        for p in self.parameters():
            if set_to_none or p.grad is None:
                p.grad = None
            else:
                p.grad = np.zeros_like(p.data)

    def to(self, dtype: Any) -> Module:
        """Cast every parameter and floating point buffer to ``dtype`` in place; return self.

        A complex parameter with a real ``dtype`` becomes complex of that precision
        (float32 -> complex64), so casting never drops an imaginary part.
        """
        dtype = np.dtype(dtype)
        if dtype.kind not in "fc":
            raise TypeError(f"Module.to: dtype must be floating point or complex, got {dtype}")
        for p in self.parameters():
            target = dtype
            if p.dtype.kind == "c" and dtype.kind == "f":
                target = np.result_type(dtype, np.complex64)
            if p.dtype != target:
                p.data = p.data.astype(target)
                p.grad = None
        for m in self.modules():
            for name, b in list(m._buffers.items()):
                if b is not None and _data(b).dtype.kind == "f":
                    m._buffers[name] = _data(b).astype(dtype)
                    object.__setattr__(m, name, m._buffers[name])
        return self

    def float(self) -> Module:
        """Cast to single precision (float32 / complex64)."""
        return self.to(np.float32)

    def double(self) -> Module:
        """Cast to double precision (float64 / complex128)."""
        return self.to(np.float64)

    # ---- state --------------------------------------------------------------------

    def state_dict(self, prefix: str = "") -> dict[str, np.ndarray]:
        """The parameters and persistent buffers by dotted name, as NumPy arrays.

        The arrays share memory with the parameters (as in PyTorch): copy them to keep a
        snapshot while training goes on. Save with :func:`yaad.save`.
        """
        out = {}
        for mod_name, m in self.named_modules(prefix=prefix, remove_duplicate=False):
            for name, p in m._parameters.items():
                if p is not None:
                    out[f"{mod_name}.{name}" if mod_name else name] = p.data
            for name, b in m._buffers.items():
                if b is not None and name not in m._non_persistent:
                    out[f"{mod_name}.{name}" if mod_name else name] = _data(b)
        return out

    def load_state_dict(self, state_dict: dict[str, Any], strict: bool = True) -> IncompatibleKeys:
        """Copy values from ``state_dict`` into the parameters and buffers, in place.

        Parameters
        ----------
        state_dict : dict
            Dotted names to arrays or tensors, as made by :meth:`state_dict`.
        strict : bool
            Raise if keys are missing or unexpected (the values are then left unchanged).

        Returns
        -------
        IncompatibleKeys
            ``(missing_keys, unexpected_keys)``.

        Raises
        ------
        KeyError
            With ``strict``, on missing or unexpected keys.
        ValueError
            On a shape mismatch, or a complex value for a real parameter.
        """
        targets = {}
        for mod_name, m in self.named_modules(remove_duplicate=False):
            for reg in (m._parameters, m._buffers):
                for name, v in reg.items():
                    if v is not None and name not in m._non_persistent:
                        targets[f"{mod_name}.{name}" if mod_name else name] = (m, name, v)
        missing = [k for k in targets if k not in state_dict]
        unexpected = [k for k in state_dict if k not in targets]
        if strict and (missing or unexpected):
            raise KeyError(f"load_state_dict for {type(self).__name__}: missing keys "
                           f"{missing}, unexpected keys {unexpected} (pass strict=False to "
                           f"load the matching ones)")
        pairs = []
        for key, (_, _, target) in targets.items():
            if key not in state_dict:
                continue
            src = _data(state_dict[key])
            dst = _data(target)
            if src.shape != dst.shape:
                raise ValueError(f"load_state_dict: '{key}' has shape {src.shape} in the "
                                 f"state dict but {dst.shape} in the module")
            if src.dtype.kind == "c" and dst.dtype.kind != "c":
                raise ValueError(f"load_state_dict: '{key}' is complex ({src.dtype}) in the "
                                 f"state dict but real ({dst.dtype}) in the module")
            pairs.append((dst, src))
        with no_grad():
            for dst, src in pairs:
                dst[...] = src
                mark_modified(dst)
        return IncompatibleKeys(missing, unexpected)

    # ---- calling and printing -----------------------------------------------------

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """The computation; subclasses define it."""
        raise NotImplementedError(f"{type(self).__name__} has no forward() method")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)

    def extra_repr(self) -> str:
        """The text inside the parentheses of this module's repr (subclasses override)."""
        return ""

    def __repr__(self) -> str:
        lines = []
        for name, m in self._modules.items():
            body = repr(m).replace("\n", "\n  ")
            lines.append(f"  ({name}): {body}")
        extra = self.extra_repr()
        if not lines:
            return f"{type(self).__name__}({extra})"
        head = f"{type(self).__name__}({extra}" if extra else f"{type(self).__name__}("
        return head + "\n" + "\n".join(lines) + "\n)"


register_model_type(Module)
