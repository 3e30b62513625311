"""Run one program in PyTorch and in yaad, and compare what each did.

A program is a function ``prog(L, log)``: ``L`` is the library's namespace (the functions
below, then the library's own names), ``log`` a list for what the program wants compared
besides its result (hook calls, flags). The harness runs it with each library and compares
the results (values, shapes, dtypes, None/bool/str), the logs, the warnings (categories and
messages of the user-facing ones) and the exceptions (type, and a pattern each message must
match, given by the program: the meaning, not the wording).

A documented deliberate difference (``docs/pytorch-map.md``, "Deliberate differences") is
declared by the program with ``differs=KEY``; the harness then checks each side against the
outcome the program states for it, so that a difference that disappears fails too.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import torch
import torch.utils.checkpoint

import yaad


class TorchLib:
    """The namespace a program sees when it runs in PyTorch."""

    name = "torch"
    Tensor = torch.Tensor
    Function = torch.autograd.Function
    once_differentiable = staticmethod(torch.autograd.function.once_differentiable)
    no_grad = torch.no_grad
    enable_grad = torch.enable_grad
    set_grad_enabled = torch.set_grad_enabled
    is_grad_enabled = staticmethod(torch.is_grad_enabled)
    grad = staticmethod(torch.autograd.grad)
    backward = staticmethod(torch.autograd.backward)
    module = torch

    @staticmethod
    def tensor(data: Any, requires_grad: bool = False, dtype: Any = None) -> torch.Tensor:
        return torch.tensor(np.array(data, dtype=dtype), requires_grad=requires_grad)

    @staticmethod
    def checkpoint(f: Callable, *args: Any, **kw: Any) -> Any:
        return torch.utils.checkpoint.checkpoint(f, *args, use_reentrant=False, **kw)

    @staticmethod
    def detect_anomaly(check_nan: bool = True) -> Any:
        return torch.autograd.detect_anomaly(check_nan=check_nan)

    @staticmethod
    def version(t: torch.Tensor) -> int:
        return t._version

    def __getattr__(self, name: str) -> Any:
        return getattr(torch, name)


class YaadLib:
    """The namespace a program sees when it runs in yaad."""

    name = "yaad"
    Tensor = yaad.Tensor
    Function = yaad.Function
    once_differentiable = staticmethod(yaad.once_differentiable)
    no_grad = yaad.no_grad
    enable_grad = yaad.enable_grad
    set_grad_enabled = yaad.set_grad_enabled
    is_grad_enabled = staticmethod(yaad.is_grad_enabled)
    grad = staticmethod(yaad.autograd.grad)
    backward = staticmethod(yaad.autograd.backward)
    module = yaad
    float64 = np.float64
    float32 = np.float32
    int64 = np.int64

    @staticmethod
    def tensor(data: Any, requires_grad: bool = False, dtype: Any = None) -> yaad.Tensor:
        return yaad.tensor(np.array(data, dtype=dtype), requires_grad=requires_grad)

    @staticmethod
    def checkpoint(f: Callable, *args: Any, **kw: Any) -> Any:
        return yaad.checkpoint(f, *args, **kw)

    @staticmethod
    def detect_anomaly(check_nan: bool = True) -> Any:
        return yaad.autograd.detect_anomaly(check_nan=check_nan)

    @staticmethod
    def version(t: yaad.Tensor) -> int:
        return t._version

    def __getattr__(self, name: str) -> Any:
        return getattr(yaad, name)


LIBS = (TorchLib(), YaadLib())


def value(x: Any) -> Any:
    """What is compared of a result: arrays for tensors (and yaad's array gradients)."""
    if isinstance(x, torch.Tensor):
        return x.detach().resolve_conj().numpy().copy()
    if isinstance(x, yaad.Tensor):
        return np.array(x.data, copy=True)
    if isinstance(x, (np.ndarray, np.generic)):
        return np.array(x, copy=True)
    if isinstance(x, (list, tuple)):
        return type(x)(value(v) for v in x)
    if isinstance(x, dict):
        return {k: value(v) for k, v in x.items()}
    return x


@dataclass
class Outcome:
    result: Any = None
    log: list = field(default_factory=list)
    warnings: list = field(default_factory=list)  # (category, message)
    error: BaseException | None = None


_QUIET = (DeprecationWarning, PendingDeprecationWarning, FutureWarning, RuntimeWarning)


def run(prog: Callable, lib: Any) -> Outcome:
    """Run ``prog`` with ``lib``; catch its exception and its user-facing warnings."""
    out = Outcome()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            out.result = value(prog(lib, out.log))
        except Exception as e:  # noqa: BLE001  (compared, not swallowed)
            out.error = e
    out.log = value(out.log)
    out.warnings = [(w.category, str(w.message)) for w in caught
                    if not issubclass(w.category, _QUIET)
                    and not re.search(_WARNED_ONCE, str(w.message))]
    return out


# PyTorch warns once per process that backward(create_graph=True) makes a reference cycle
# (documented in docs/pytorch-map.md, "Deliberate differences"); once only, so it is left
# out of the comparison.
_WARNED_ONCE = r"create_graph=True will create a reference cycle"


def assert_same_values(a: Any, b: Any, where: str = "result") -> None:
    """Equal structure; arrays of equal shape and dtype and close values (NaN == NaN)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        assert isinstance(a, np.ndarray) and isinstance(b, np.ndarray), \
            f"{where}: {type(a).__name__} vs {type(b).__name__}"
        assert a.shape == b.shape, f"{where}: shape {a.shape} vs {b.shape}"
        assert a.dtype == b.dtype, f"{where}: dtype {a.dtype} vs {b.dtype}"
        if a.dtype.kind in "fc":
            np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-14, equal_nan=True,
                                       err_msg=where)
        else:
            np.testing.assert_array_equal(b, a, err_msg=where)
    elif isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple)) and len(a) == len(b), f"{where}: {a!r} vs {b!r}"
        for k, (x, y) in enumerate(zip(a, b)):
            assert_same_values(x, y, f"{where}[{k}]")
    elif isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys(), f"{where}: {a!r} vs {b!r}"
        for k in a:
            assert_same_values(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(a, float) and isinstance(b, float):
        np.testing.assert_allclose(b, a, rtol=1e-12, atol=1e-14, equal_nan=True,
                                   err_msg=where)
    else:
        assert type(a) is type(b) and a == b, f"{where}: {a!r} vs {b!r}"


def _check_error(o: Outcome, expected: type | None, meaning: str | None, who: str) -> None:
    if expected is None:
        if o.error is not None:
            raise AssertionError(f"{who} raised {type(o.error).__name__}: {o.error}") \
                from o.error
        return
    assert o.error is not None, f"{who} did not raise (expected {expected.__name__})"
    assert isinstance(o.error, expected), \
        f"{who} raised {type(o.error).__name__} ({o.error}), expected {expected.__name__}"
    if meaning is not None:
        assert re.search(meaning, str(o.error), re.I | re.S), \
            f"{who}'s message does not say /{meaning}/: {o.error}"


def _check_warnings(o: Outcome, warns: str | None, who: str) -> None:
    user = [m for c, m in o.warnings if issubclass(c, UserWarning)]
    if warns is None:
        assert not user, f"{who} warned: {user}"
    else:
        assert any(re.search(warns, m, re.I | re.S) for m in user), \
            f"{who} did not warn /{warns}/ (warnings: {user})"


@dataclass
class Program:
    """A program and what is expected of it (see the module docstring)."""

    fn: Callable
    area: str
    raises: type | None = None  # both raise this (PyTorch's type; yaad's may subclass)
    meaning: str | None = None  # a pattern both messages match
    warns: str | None = None  # a pattern of a UserWarning both emit
    differs: str | None = None  # key of a documented deliberate difference
    torch_side: Callable | None = None  # differs: check of PyTorch's Outcome
    yaad_side: Callable | None = None  # differs: check of yaad's Outcome

    @property
    def name(self) -> str:
        return self.fn.__name__

    def check(self) -> None:
        t = run(self.fn, LIBS[0])
        y = run(self.fn, LIBS[1])
        if self.differs is not None:
            self.torch_side(t)
            self.yaad_side(y)
            return
        _check_error(t, self.raises, self.meaning, "torch")
        _check_error(y, self.raises, self.meaning, "yaad")
        _check_warnings(t, self.warns, "torch")
        _check_warnings(y, self.warns, "yaad")
        assert_same_values(t.log, y.log, "log")
        if self.raises is None:
            assert_same_values(t.result, y.result)


PROGRAMS: list[Program] = []
_AREA = ["?"]


def area(name: str) -> None:
    """The area of the programs declared from now on."""
    _AREA[0] = name


def program(fn: Callable | None = None, **options: Any) -> Any:
    """Declare a program (a decorator, bare or with the options of :class:`Program`)."""
    if fn is None:
        return lambda f: program(f, **options)
    PROGRAMS.append(Program(fn, _AREA[0], **options))
    return fn


def raised(kind: type, meaning: str) -> Callable:
    """A side check: the run raised ``kind`` with a message matching ``meaning``."""
    def check(o: Outcome) -> None:
        _check_error(o, kind, meaning, "this side")
    return check


def returned(expected: Any) -> Callable:
    """A side check: the run returned ``expected`` (compared as results are)."""
    def check(o: Outcome) -> None:
        _check_error(o, None, None, "this side")
        _check_warnings(o, None, "this side")
        assert_same_values(value(expected), o.result)
    return check


def warned(pattern: str) -> Callable:
    """A side check: the run finished and emitted a UserWarning matching ``pattern``."""
    def check(o: Outcome) -> None:
        _check_error(o, None, None, "this side")
        _check_warnings(o, pattern, "this side")
    return check
