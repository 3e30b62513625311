"""Bad input (issue 7): a table of mistakes, each raising a clear exception that names the
op or the shapes, and none leaving the graph or the tensors broken.

Every mistake runs against fresh tensors ``x, y`` (shape (3,)), ``m`` (2, 3) and ``z``
(complex, (2,)), all leaves requiring grad. After the exception: their data, ``.grad``,
``requires_grad`` and leaf status are unchanged, and the same computation done right
gives the right gradient.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Callable

import numpy as np
import pytest

import yaad


def _leaf(v, dtype=float):
    return yaad.tensor(np.array(v, dtype=dtype), requires_grad=True)


def env() -> SimpleNamespace:
    return SimpleNamespace(x=_leaf([0.5, 1.0, 2.0]), y=_leaf([1.0, 2.0, 3.0]),
                           m=_leaf(np.arange(6.0).reshape(2, 3) / 4),
                           z=_leaf([1 + 1j, 2 - 1j], complex))


@dataclass
class Mistake:
    name: str
    run: Callable[[SimpleNamespace], object]
    exc: type | tuple
    match: str  # a regular expression the message must contain
    needs: str = ""  # a feature that must exist (``"linalg.inv"``), else skipped


MISTAKES: list[Mistake] = []


def mistake(name, exc, match, needs=""):
    def register(fn):
        MISTAKES.append(Mistake(name, fn, exc, match, needs))
        return fn

    return register


def _table(rows):
    for name, exc, match, fn, *needs in rows:
        MISTAKES.append(Mistake(name, fn, exc, match, needs[0] if needs else ""))


# ---- wrong shapes -------------------------------------------------------------------------

_table([
    ("add of incompatible shapes", ValueError, r"add.*\(3,\).*\(3,2\)",
     lambda e: e.x + e.m.T),
    ("multiply of incompatible shapes", ValueError, r"multiply.*\(3,\).*\(2,\)",
     lambda e: e.x * e.z),
    ("matmul with a mismatched inner size", ValueError, r"matmul.*size 2 is different from 3",
     lambda e: e.m @ e.m),
    ("matmul with a 0-d operand", ValueError, r"matmul.*dimension",
     lambda e: e.x @ 2.0),
    ("reshape to another size", ValueError, r"reshape.*size 3 into shape \(2, ?2\)",
     lambda e: e.x.reshape(2, 2)),
    ("broadcast_to an incompatible shape", ValueError, r"broadcast_to.*\(2,3\).*\(3,3\)",
     lambda e: yaad.broadcast_to(e.m, (3, 3))),
    ("concatenate of different ranks", ValueError, r"concatenate.*dimension",
     lambda e: yaad.concatenate([e.m, e.x])),
    ("stack of different shapes", ValueError, r"stack.*same shape",
     lambda e: yaad.stack([e.x, e.m])),
    ("where with incompatible branches", ValueError, r"where.*\(3,\).*\(2,\)",
     lambda e: yaad.where(e.x > 1, e.x, e.z.real)),
    ("split into unequal sections", ValueError, r"split.*3.*2",
     lambda e: yaad.split(e.x, 2)),
    ("tensordot over mismatched axes", ValueError, r"tensordot.*shape",
     lambda e: yaad.tensordot(e.m, e.m, axes=1)),
    ("setitem of a value of the wrong shape", ValueError, r"\(3,\).*\(2,\)",
     lambda e: (e.x * 1.0).__setitem__(slice(0, 2), np.ones(3))),
    ("in-place add that would grow the tensor", ValueError, r"shape",
     lambda e: (e.x * 1.0).__iadd__(e.m)),
])

# ---- wrong axes and indices -------------------------------------------------------------------

_table([
    ("sum over an axis out of range", np.exceptions.AxisError, r"sum.*axis 1.*dimension 1",
     lambda e: e.x.sum(axis=1)),
    ("sum over a repeated axis", ValueError, r"sum.*duplicate",
     lambda e: e.m.sum(axis=(0, 0))),
    ("mean over an axis out of range", np.exceptions.AxisError, r"axis -3.*dimension 2",
     lambda e: yaad.mean(e.m, axis=-3)),
    ("swapaxes with an axis out of range", np.exceptions.AxisError, r"swapaxes.*axis 2",
     lambda e: yaad.swapaxes(e.m, 0, 2)),
    ("transpose with a repeated axis", ValueError, r"transpose.*repeated axis",
     lambda e: yaad.transpose(e.m, (0, 0))),
    ("squeeze of an axis of length 3", ValueError, r"squeeze.*size not equal to one",
     lambda e: yaad.squeeze(e.m, axis=1)),
    ("softmax over an axis out of range", np.exceptions.AxisError, r"softmax.*axis 1",
     lambda e: yaad.softmax(e.x, axis=1)),
    ("cumsum over an axis out of range", np.exceptions.AxisError, r"cumsum.*axis 3",
     lambda e: yaad.cumsum(e.x, axis=3)),
    ("index out of bounds", IndexError, r"index 5 is out of bounds.*size 3",
     lambda e: e.x[5]),
    ("float index", IndexError, r"integer",
     lambda e: e.x[1.5]),
    ("too many indices", IndexError, r"too many indices.*1-dimensional",
     lambda e: e.x[0, 0]),
    ("boolean mask of the wrong length", IndexError, r"boolean index.*3.*2",
     lambda e: e.x[np.array([True, False])]),
    ("a float tensor as an index", (IndexError, TypeError), r"integer",
     lambda e: e.x[yaad.tensor([0.0])]),
])

# ---- wrong dtypes ------------------------------------------------------------------------------

_table([
    ("requires_grad on an integer tensor", TypeError, r"floating point.*int64",
     lambda e: yaad.tensor([1, 2], requires_grad=True)),
    ("requires_grad on a boolean tensor", TypeError, r"floating point.*bool",
     lambda e: yaad.tensor([True], requires_grad=True)),
    ("requires_grad_ on an integer tensor", TypeError, r"int64",
     lambda e: yaad.tensor([1, 2]).requires_grad_()),
    ("in-place write of floats into an integer tensor", TypeError, r"float64.*int64",
     lambda e: yaad.tensor([1, 2]).__iadd__(0.5)),
    ("in-place write of complex into a real tensor", TypeError, r"complex128.*float64",
     lambda e: (e.x * 1.0).__iadd__(1j)),
    ("bitwise operation on floats", TypeError, r"bitwise_and",
     lambda e: yaad.bitwise_and(e.x, e.x)),
    ("cast to an unknown dtype", TypeError, r"astype.*not-a-dtype",
     lambda e: yaad.astype(e.x, "not-a-dtype")),
    ("integer power with a negative exponent", ValueError, r"power.*negative integer",
     lambda e: yaad.tensor([2]) ** -1),
    ("cbrt of a complex tensor", TypeError, r"cbrt",
     lambda e: yaad.cbrt(e.z)),
    ("gradient of maximum of complex numbers", TypeError, r"maximum.*complex",
     lambda e: yaad.maximum(e.z, e.z).real.sum().backward()),
    ("an integer tensor used where a float index is", TypeError, r"integer tensors",
     lambda e: [1, 2][yaad.tensor(1.0)]),
])

# ---- backward and autograd mistakes ------------------------------------------------------------

_table([
    ("backward of a non-scalar", RuntimeError, r"shape \(3,\).*scalar",
     lambda e: (e.x * 2).backward()),
    ("backward of a complex scalar", RuntimeError, r"complex",
     lambda e: (e.z * 2).sum().backward()),
    ("backward with a gradient of the wrong shape", RuntimeError, r"shape \(2,\).*\(3,\)",
     lambda e: (e.x * 2).backward(np.ones(2))),
    ("backward of a constant", RuntimeError, r"does not require grad",
     lambda e: yaad.tensor([1.0]).sum().backward()),
    ("backward of a result computed under no_grad", RuntimeError, r"does not require grad",
     lambda e: _under_no_grad(e).sum().backward()),
    ("autograd.grad of an unused input", RuntimeError, r"not used.*allow_unused",
     lambda e: yaad.autograd.grad((e.x * 2).sum(), [e.x, e.y])),
    ("autograd.grad for a tensor not requiring grad", RuntimeError, r"does not require grad",
     lambda e: yaad.autograd.grad((e.x * 2).sum(), [yaad.tensor(1.0)])),
    ("grad_outputs of the wrong count", ValueError, r"1 grad_outputs for 2 outputs",
     lambda e: yaad.autograd.grad([e.x.sum(), e.y.sum()], [e.x], grad_outputs=[1.0])),
    ("hook on a tensor that does not require grad", RuntimeError, r"hook.*require grad",
     lambda e: yaad.tensor([1.0]).register_hook(print)),
    ("assigning a grad of the wrong shape", ValueError, r"grad has shape \(2,\).*\(3,\)",
     lambda e: setattr(e.x, "grad", np.ones(2))),
    ("requires_grad_(False) on a non-leaf", RuntimeError, r"leaf.*detach",
     lambda e: (e.x * 1).requires_grad_(False)),
    ("a keyword argument that requires grad", TypeError, r"clip.*keyword argument a_min=",
     lambda e: yaad.clip(e.x, a_min=e.y)),
])


def _under_no_grad(e):
    with yaad.no_grad():
        return e.x * 2


@mistake("backward twice without retain_graph", RuntimeError, r"second time.*retain_graph")
def _backward_twice(e):
    w = e.x.detach().requires_grad_()  # a separate leaf: the first backward is legitimate
    loss = (yaad.sin(w) * 2).sum()
    loss.backward()
    loss.backward()


@mistake("in-place change of a value saved for backward", RuntimeError, r"in-place.*'sin'")
def _modified_saved(e):
    h = e.x * 1.0
    s = yaad.sin(h)
    h += 1.0
    s.sum().backward()


@mistake("in-place add on a leaf that requires grad", RuntimeError, r"__iadd__.*leaf")
def _inplace_leaf(e):
    e.x += 1.0


@mistake("in-place method on a leaf that requires grad", RuntimeError, r"mul_.*leaf")
def _inplace_method_leaf(e):
    e.x.mul_(2.0)


@mistake("setitem on a leaf that requires grad", RuntimeError, r"__setitem__.*leaf")
def _setitem_leaf(e):
    e.x[0] = 5.0


# ---- NumPy interoperability -------------------------------------------------------------------

_table([
    ("numpy.asarray of a tensor that requires grad", TypeError, r"requires grad.*detach",
     lambda e: np.asarray(e.x)),
    ("a ufunc with out=", TypeError, r"numpy.sin.*out=",
     lambda e: np.sin(e.x, out=np.empty(3))),
    ("a reduction with out=", TypeError, r"sum.*out=",
     lambda e: yaad.sum(e.x, out=np.empty(()))),
    ("a NumPy function without a yaad op", TypeError, r"numpy\.\w+ has no yaad op",
     lambda e: _unsupported_numpy_function()(e.x, e.y)),
    ("a ufunc method without a yaad op", TypeError, r"numpy.add.reduceat",
     lambda e: np.add.reduceat(e.x, [0, 1])),
    ("item() of a non-scalar", ValueError, r"item.*shape \(3,\)",
     lambda e: e.x.item()),
    ("len() of a 0-d tensor", TypeError, r"len.*0-d",
     lambda e: len(yaad.tensor(1.0))),
    ("truth value of a vector", ValueError, r"ambiguous",
     lambda e: bool(e.x)),
])


def _unsupported_numpy_function():
    for name in ("convolve", "correlate", "polyval", "interp", "trapezoid", "unwrap"):
        if not hasattr(yaad, name):
            return getattr(np, name)
    pytest.skip("every candidate NumPy function has a yaad op")


# ---- linear algebra and einsum ----------------------------------------------------------------

_table([
    ("einsum with too many subscripts for an operand", ValueError, r"einsum.*operand 0.*'ij'",
     lambda e: yaad.einsum("ij,jk->ik", e.x, e.m), "einsum"),
    ("einsum with an unknown output label", ValueError, r"einsum.*'k'.*no input",
     lambda e: yaad.einsum("ij->k", e.m), "einsum"),
    ("einsum with more operands than subscripts", ValueError, r"einsum.*1 operands.*2",
     lambda e: yaad.einsum("ij", e.m, e.m), "einsum"),
    ("einsum with mismatched label sizes", ValueError, r"einsum.*label 'i'.*\(2, 3\)",
     lambda e: yaad.einsum("ij,ij->", e.m, e.m.T), "einsum"),
    ("einsum with an invalid character", ValueError, r"einsum.*'i#'",
     lambda e: yaad.einsum("i#", e.x), "einsum"),
    ("inverse of a non-square matrix", np.linalg.LinAlgError, r"inv.*\(2, 3\)",
     lambda e: yaad.linalg.inv(e.m), "linalg.inv"),
    ("inverse of a singular matrix", np.linalg.LinAlgError, r"inv.*[Ss]ingular",
     lambda e: yaad.linalg.inv(e.m[:, :2] * 0), "linalg.inv"),
    ("cholesky of an indefinite matrix", np.linalg.LinAlgError, r"cholesky.*positive definite",
     lambda e: yaad.linalg.cholesky(-yaad.eye(2) + e.m[:, :2] * 0), "linalg.cholesky"),
    ("det of a vector", np.linalg.LinAlgError, r"det.*\(3,\)",
     lambda e: yaad.linalg.det(e.x), "linalg.det"),
    ("solve with a right-hand side of the wrong size", ValueError, r"solve.*3.*2",
     lambda e: yaad.linalg.solve(e.m[:, :2] + yaad.eye(2), e.x), "linalg.solve"),
])

# ---- user-defined ops ---------------------------------------------------------------------------

_bad_shape = yaad.op(np.sin, name="bad_shape_sin", vjp=lambda g, ans, x: np.ones(5))
_bad_dtype = yaad.op(np.sin, name="bad_dtype_sin", vjp=lambda g, ans, x: np.array(["a"] * 3))
_bad_forward = yaad.op(lambda x: np.sin(x, casting="no", dtype=np.int8), name="bad_forward",
                       vjp=lambda g, ans, x: g)
_raising_vjp = yaad.op(np.sin, name="raising_vjp", vjp=lambda g, ans, x: g / np.zeros(0))

_table([
    ("a custom op whose VJP returns the wrong shape", ValueError,
     r"'bad_shape_sin'.*\(5,\).*\(3,\)", lambda e: _bad_shape(e.x).sum().backward()),
    ("a custom op whose VJP returns strings", (ValueError, TypeError), r"string|str",
     lambda e: _bad_dtype(e.x).sum().backward()),
    ("a custom op whose forward fails", TypeError, r"bad_forward",
     lambda e: _bad_forward(e.x)),
    ("a custom op whose VJP fails", ValueError, r"operands could not be broadcast",
     lambda e: _raising_vjp(e.x).sum().backward()),
    ("gradient of a custom op without rules", RuntimeError, r"does not require grad",
     lambda e: yaad.op(np.cos, name="no_rules")(e.x).sum().backward()),
])

# ---- saving and loading ----------------------------------------------------------------------


@mistake("loading a tampered file", Exception, r"load.*corrupt|load.*not a file", "load")
def _tampered(e):
    path = os.path.join(_tmpdir(), "w.yaad")
    yaad.save({"w": e.x, "m": e.m}, path)
    blob = bytearray(open(path, "rb").read())
    k = bytes(blob).find(e.m.data.tobytes())  # change one stored value of m
    assert k > 0
    blob[k + 9] ^= 0x01
    with open(path, "wb") as f:
        f.write(bytes(blob))
    yaad.load(path)


@mistake("loading a file that is not a yaad file", Exception, r"load.*(corrupt|not a file)",
         "load")
def _garbage(e):
    path = os.path.join(_tmpdir(), "g.yaad")
    with open(path, "wb") as f:
        f.write(b"not an archive at all")
    yaad.load(path)


_table([
    ("loading a missing file", FileNotFoundError, r"load.*no such file",
     lambda e: yaad.load(os.path.join(_tmpdir(), "missing.yaad")), "load"),
    ("saving a function", TypeError, r"save.*function",
     lambda e: yaad.save({"f": print}, os.path.join(_tmpdir(), "f.yaad")), "save"),
])


def _tmpdir():
    import tempfile

    return tempfile.mkdtemp(prefix="yaad-bad-input-")


# ---------------------------------------------------------------------------------------
# The checks


def _correct_gradient(e) -> None:
    """The computation done right, on the same tensors: the right gradient."""
    loss = (yaad.sin(e.x) * e.y).sum() + (e.m * e.m).sum() + (abs(e.z) ** 2).sum()
    loss.backward()
    x, y, m, z = (np.asarray(t.data) for t in (e.x, e.y, e.m, e.z))
    np.testing.assert_allclose(e.x.grad, np.cos(x) * y)
    np.testing.assert_allclose(e.y.grad, np.sin(x))
    np.testing.assert_allclose(e.m.grad, 2 * m)
    np.testing.assert_allclose(e.z.grad, 2 * z)


@pytest.mark.parametrize("case", MISTAKES, ids=[m.name for m in MISTAKES])
def test_bad_input(case: Mistake):
    if case.needs and not _available(case.needs):
        pytest.skip(f"yaad.{case.needs} does not exist yet")
    e = env()
    before = {k: np.array(t.data, copy=True) for k, t in vars(e).items()}
    with pytest.raises(case.exc) as info:
        case.run(e)
    msg = str(info.value)
    assert re.search(case.match, msg, re.S), f"message {msg!r} lacks {case.match!r}"
    for k, t in vars(e).items():
        np.testing.assert_array_equal(t.data, before[k], err_msg=f"{k} was modified")
        assert t.grad is None, f"{k}.grad was half-written: {t.grad}"
        assert t.requires_grad and t.is_leaf, f"{k} lost requires_grad or became a non-leaf"
    _correct_gradient(e)


def _available(path: str) -> bool:
    obj = yaad
    for part in path.split("."):
        if not hasattr(obj, part):
            return False
        obj = getattr(obj, part)
    return True


def test_the_table_has_at_least_40_kinds_of_mistake():
    assert len(MISTAKES) >= 40
    assert len({m.name for m in MISTAKES}) == len(MISTAKES)


def test_a_backward_error_midway_leaves_no_partial_gradients():
    # Two branches; the rule of one fails at backward: the other branch's leaf must not
    # keep a half-accumulated gradient either.
    e = env()
    loss = (e.y * 3.0).sum() + _bad_shape(e.x).sum()
    with pytest.raises(ValueError, match="bad_shape_sin"):
        loss.backward()
    assert e.x.grad is None and e.y.grad is None
    _correct_gradient(e)


# ---- found while building the table -------------------------------------------------------


def test_regression_extra_differentiable_argument_of_a_custom_op_raises():
    one_rule = yaad.op(np.add, name="one_rule_add", vjp=lambda g, ans, a, b: g)
    e = env()
    with pytest.raises(TypeError, match="one_rule_add"):
        one_rule(e.x, e.y)


def test_regression_vjp_with_more_axes_than_the_output_raises():
    pair = yaad.op(np.sin, name="tuple_vjp", vjp=lambda g, ans, x: (g, g))
    e = env()
    with pytest.raises(TypeError, match="tuple_vjp.*returned a tuple"):
        pair(e.x).sum().backward()
    stacked = yaad.op(np.sin, name="stacked_vjp", vjp=lambda g, ans, x: np.stack([g, g]))
    e = env()
    with pytest.raises(ValueError, match="stacked_vjp.*more axes"):
        stacked(e.x).sum().backward()
    _correct_gradient(e)
