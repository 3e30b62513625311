"""Shape, joining and splitting ops: NumPy's values, finite-difference gradients (real and
complex, first and second order), float32 kept, forward mode, and PyTorch where installed."""

from __future__ import annotations

import math

import numpy as np
import pytest

import yaad
from tests.support.shape_checks import assert_like, check_jvp, rand
from yaad.testing import gradcheck, gradgradcheck

C128, F32 = np.complex128, np.float32


# (name, yaad function, numpy function, input shapes): one-input shape ops first.
UNARY = [
    ("reshape", lambda a: yaad.reshape(a, (3, -1)), lambda a: np.reshape(a, (3, -1)), (2, 3, 2)),
    ("reshape_F", lambda a: yaad.reshape(a, (3, 4), order="F"),
     lambda a: np.reshape(a, (3, 4), order="F"), (2, 6)),
    ("ravel", yaad.ravel, np.ravel, (2, 3)),
    ("transpose", yaad.transpose, np.transpose, (2, 3, 4)),
    ("transpose_axes", lambda a: yaad.transpose(a, (1, -1, 0)),
     lambda a: np.transpose(a, (1, -1, 0)), (2, 3, 4)),
    ("swapaxes", lambda a: yaad.swapaxes(a, 0, -1), lambda a: np.swapaxes(a, 0, -1), (2, 3, 4)),
    ("matrix_transpose", yaad.matrix_transpose, np.matrix_transpose, (2, 3, 4)),
    ("moveaxis", lambda a: yaad.moveaxis(a, (0, 1), (-1, 0)),
     lambda a: np.moveaxis(a, (0, 1), (-1, 0)), (2, 3, 4)),
    ("expand_dims", lambda a: yaad.expand_dims(a, (0, -1)),
     lambda a: np.expand_dims(a, (0, -1)), (2, 3)),
    ("squeeze", yaad.squeeze, np.squeeze, (1, 3, 1)),
    ("squeeze_axis", lambda a: yaad.squeeze(a, -1), lambda a: np.squeeze(a, -1), (1, 3, 1)),
    ("broadcast_to", lambda a: yaad.broadcast_to(a, (2, 3, 4)),
     lambda a: np.broadcast_to(a, (2, 3, 4)), (3, 1)),
    ("flip", yaad.flip, np.flip, (2, 3)),
    ("flip_axis", lambda a: yaad.flip(a, -1), lambda a: np.flip(a, -1), (2, 3)),
    ("fliplr", yaad.fliplr, np.fliplr, (2, 3)),
    ("flipud", yaad.flipud, np.flipud, (2, 3)),
    ("roll", lambda a: yaad.roll(a, 2), lambda a: np.roll(a, 2), (2, 3)),
    ("roll_axes", lambda a: yaad.roll(a, (1, -1), (0, 1)),
     lambda a: np.roll(a, (1, -1), (0, 1)), (2, 3)),
    ("rot90", yaad.rot90, np.rot90, (2, 3)),
    ("rot90_k2", lambda a: yaad.rot90(a, 2), lambda a: np.rot90(a, 2), (2, 3)),
    ("rot90_k3", lambda a: yaad.rot90(a, -1, (1, 2)), lambda a: np.rot90(a, -1, (1, 2)),
     (2, 3, 4)),
    ("rot90_k0", lambda a: yaad.rot90(a, 4), lambda a: np.rot90(a, 4), (2, 3)),
    ("tile", lambda a: yaad.tile(a, 2), lambda a: np.tile(a, 2), (2, 3)),
    ("tile_more_reps", lambda a: yaad.tile(a, (2, 1, 3)), lambda a: np.tile(a, (2, 1, 3)),
     (2, 3)),
    ("tile_fewer_reps", lambda a: yaad.tile(a, (2,)), lambda a: np.tile(a, (2,)), (2, 1, 3)),
    ("repeat", lambda a: yaad.repeat(a, 2), lambda a: np.repeat(a, 2), (2, 3)),
    ("repeat_axis", lambda a: yaad.repeat(a, 3, axis=-1), lambda a: np.repeat(a, 3, axis=-1),
     (2, 3)),
    ("repeat_counts", lambda a: yaad.repeat(a, [2, 0, 3], axis=1),
     lambda a: np.repeat(a, [2, 0, 3], axis=1), (2, 3)),
    ("repeat_zero", lambda a: yaad.repeat(a, 0, axis=0), lambda a: np.repeat(a, 0, axis=0),
     (2, 3)),
    ("pad", lambda a: yaad.pad(a, ((1, 0), (2, 1))), lambda a: np.pad(a, ((1, 0), (2, 1))),
     (2, 3)),
    ("pad_value", lambda a: yaad.pad(a, 1, constant_values=2.5),
     lambda a: np.pad(a, 1, constant_values=2.5), (2, 3)),
    ("pad_edge", lambda a: yaad.pad(a, (1, 2), mode="edge"),
     lambda a: np.pad(a, (1, 2), mode="edge"), (2, 3)),
    ("pad_reflect", lambda a: yaad.pad(a, ((2, 1), (1, 2)), mode="reflect"),
     lambda a: np.pad(a, ((2, 1), (1, 2)), mode="reflect"), (3, 3)),
    ("pad_symmetric", lambda a: yaad.pad(a, 2, mode="symmetric"),
     lambda a: np.pad(a, 2, mode="symmetric"), (2, 3)),
    ("pad_wrap", lambda a: yaad.pad(a, ((0, 2), (3, 1)), mode="wrap"),
     lambda a: np.pad(a, ((0, 2), (3, 1)), mode="wrap"), (2, 3)),
    ("diagonal", yaad.diagonal, np.diagonal, (3, 4)),
    ("diagonal_batched", lambda a: yaad.diagonal(a, 1, -2, -1),
     lambda a: np.diagonal(a, 1, -2, -1), (2, 3, 4)),
    ("diagonal_axes", lambda a: yaad.diagonal(a, -1, 2, 0), lambda a: np.diagonal(a, -1, 2, 0),
     (3, 2, 4)),
    ("diag_1d", lambda a: yaad.diag(a, 1), lambda a: np.diag(a, 1), (3,)),
    ("diag_1d_below", lambda a: yaad.diag(a, -2), lambda a: np.diag(a, -2), (3,)),
    ("diag_2d", lambda a: yaad.diag(a, -1), lambda a: np.diag(a, -1), (3, 4)),
    ("triu", yaad.triu, np.triu, (2, 3, 4)),
    ("triu_k", lambda a: yaad.triu(a, -1), lambda a: np.triu(a, -1), (4, 3)),
    ("triu_1d", yaad.triu, np.triu, (3,)),
    ("tril", yaad.tril, np.tril, (2, 3, 4)),
    ("tril_k", lambda a: yaad.tril(a, 1), lambda a: np.tril(a, 1), (3, 4)),
    ("atleast_1d", yaad.atleast_1d, np.atleast_1d, ()),
    ("atleast_2d", yaad.atleast_2d, np.atleast_2d, (3,)),
    ("atleast_3d_1d", yaad.atleast_3d, np.atleast_3d, (3,)),
    ("atleast_3d_2d", yaad.atleast_3d, np.atleast_3d, (2, 3)),
    ("diff", yaad.diff, np.diff, (2, 4)),
    ("diff_n2_axis0", lambda a: yaad.diff(a, 2, axis=0), lambda a: np.diff(a, 2, axis=0),
     (4, 3)),
    ("diff_prepend", lambda a: yaad.diff(a, prepend=0.5, append=a[:, :1]),
     lambda a: np.diff(a, prepend=0.5, append=a[:, :1]), (2, 3)),
    ("astype", lambda a: yaad.astype(a, np.complex128), lambda a: a.astype(np.complex128),
     (2, 3)),
    ("copy", yaad.copy, np.copy, (2, 3)),
]


@pytest.mark.parametrize("name,f,npf,shape", UNARY, ids=[u[0] for u in UNARY])
@pytest.mark.parametrize("dtype", [np.float64, F32, C128], ids=["f64", "f32", "c128"])
def test_unary_forward_like_numpy(name, f, npf, shape, dtype):
    x = rand(shape, dtype)
    assert_like(f(yaad.tensor(x, requires_grad=True)), npf(x))
    assert_like(f(x), npf(x))  # arrays in, arrays out


@pytest.mark.parametrize("name,f,npf,shape", UNARY, ids=[u[0] for u in UNARY])
@pytest.mark.parametrize("dtype", [np.float64, C128], ids=["real", "complex"])
def test_unary_gradient(name, f, npf, shape, dtype):
    gradcheck(f, [rand(shape, dtype)])


@pytest.mark.parametrize("name,f,npf,shape", UNARY[::3], ids=[u[0] for u in UNARY[::3]])
def test_unary_second_derivative(name, f, npf, shape):
    # The ops are linear: the second derivative of f(x) * f(x) exercises the rules' rules.
    gradgradcheck(lambda a: f(a) * f(a), [rand(shape)])


@pytest.mark.parametrize("name,f,npf,shape", UNARY, ids=[u[0] for u in UNARY])
def test_unary_float32_gradient_stays_float32(name, f, npf, shape):
    x = yaad.tensor(rand(shape, F32), requires_grad=True)
    y = f(x)
    if y.dtype != F32:  # astype to complex
        y = y.real
    (y * y).sum().backward()
    assert x.grad.dtype == F32 and x.grad.shape == x.shape
    ref = yaad.tensor(x.data.astype(np.float64), requires_grad=True)
    yr = f(ref)
    (yr.real * yr.real if yr.dtype.kind == "c" else yr * yr).sum().backward()
    np.testing.assert_allclose(x.grad, ref.grad, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name,f,npf,shape", UNARY, ids=[u[0] for u in UNARY])
def test_unary_forward_mode(name, f, npf, shape):
    check_jvp(f, [rand(shape)])


def test_pad_gradient_counts_copies():
    x = yaad.tensor(np.arange(3.0), requires_grad=True)
    yaad.pad(x, 2, mode="edge").sum().backward()
    np.testing.assert_array_equal(x.grad, [3, 1, 3])
    x.grad = None
    yaad.pad(x, (1, 1), constant_values=7.0).sum().backward()
    np.testing.assert_array_equal(x.grad, [1, 1, 1])


def test_pad_unsupported_mode_raises_for_tensors_only():
    x = rand((3,))
    assert_like(yaad.pad(x, 1, mode="linear_ramp"), np.pad(x, 1, mode="linear_ramp"))
    with pytest.raises(NotImplementedError, match="linear_ramp"):
        yaad.pad(yaad.tensor(x, requires_grad=True), 1, mode="linear_ramp")
    with pytest.raises(NotImplementedError, match="reflect_type"):
        yaad.pad(yaad.tensor(x), 1, mode="reflect", reflect_type="odd")


def test_repeat_and_tile_gradients_sum_the_copies():
    x = yaad.tensor(np.arange(1.0, 4.0), requires_grad=True)
    (yaad.repeat(x, [2, 0, 3]) * np.arange(5.0)).sum().backward()
    np.testing.assert_array_equal(x.grad, [0 + 1, 0, 2 + 3 + 4])
    x.grad = None
    (yaad.tile(x, 2) * np.arange(6.0)).sum().backward()
    np.testing.assert_array_equal(x.grad, [0 + 3, 1 + 4, 2 + 5])


def test_repeat_with_a_tensor_count():
    x = rand((2, 3))
    assert_like(yaad.repeat(yaad.tensor(x), yaad.tensor(2), axis=1), np.repeat(x, 2, axis=1))


def test_matrix_transpose_of_a_vector_raises():
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        yaad.matrix_transpose(yaad.tensor([1.0, 2.0]))
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        _ = yaad.tensor([1.0, 2.0]).mT


def test_bad_shapes_and_axes_name_the_op():
    x = yaad.tensor(rand((2, 3)), requires_grad=True)
    with pytest.raises(ValueError, match="reshape"):
        yaad.reshape(x, (4, 2))
    with pytest.raises(np.exceptions.AxisError, match="swapaxes"):
        yaad.swapaxes(x, 0, 2)
    with pytest.raises(ValueError, match="concatenate"):
        yaad.concatenate([x, yaad.tensor(rand((3, 2)))])
    with pytest.raises(ValueError, match="rot90"):
        yaad.rot90(x, 1, (1, 1))
    with pytest.raises(ValueError, match="fliplr"):
        yaad.fliplr(yaad.tensor(rand((3,))))


# ---- joining ---------------------------------------------------------------------------

JOIN = [
    ("concatenate", lambda *a: yaad.concatenate(a), lambda *a: np.concatenate(a),
     [(2, 3), (1, 3), (4, 3)]),
    ("concatenate_axis", lambda *a: yaad.concatenate(a, axis=-1),
     lambda *a: np.concatenate(a, axis=-1), [(2, 1), (2, 3)]),
    ("concatenate_none", lambda *a: yaad.concatenate(a, axis=None),
     lambda *a: np.concatenate(a, axis=None), [(2, 2), (3,)]),
    ("stack", lambda *a: yaad.stack(a), lambda *a: np.stack(a), [(2, 3), (2, 3), (2, 3)]),
    ("stack_axis", lambda *a: yaad.stack(a, axis=-1), lambda *a: np.stack(a, axis=-1),
     [(2, 3), (2, 3)]),
    ("hstack", lambda *a: yaad.hstack(a), lambda *a: np.hstack(a), [(2,), (3,)]),
    ("hstack_2d", lambda *a: yaad.hstack(a), lambda *a: np.hstack(a), [(2, 1), (2, 3)]),
    ("vstack", lambda *a: yaad.vstack(a), lambda *a: np.vstack(a), [(3,), (2, 3)]),
    ("dstack", lambda *a: yaad.dstack(a), lambda *a: np.dstack(a), [(2, 3), (2, 3, 2)]),
    ("column_stack", lambda *a: yaad.column_stack(a), lambda *a: np.column_stack(a),
     [(3,), (3, 2)]),
    ("append", lambda *a: yaad.append(*a), lambda *a: np.append(*a), [(2, 2), (3,)]),
    ("append_axis", lambda *a: yaad.append(*a, axis=0), lambda *a: np.append(*a, axis=0),
     [(2, 2), (1, 2)]),
    ("broadcast_arrays", lambda *a: yaad.broadcast_arrays(*a)[0] * yaad.broadcast_arrays(*a)[1],
     lambda *a: np.multiply(*np.broadcast_arrays(*a)), [(2, 1), (3,)]),
]


@pytest.mark.parametrize("name,f,npf,shapes", JOIN, ids=[j[0] for j in JOIN])
@pytest.mark.parametrize("dtype", [np.float64, F32, C128], ids=["f64", "f32", "c128"])
def test_join_forward_like_numpy(name, f, npf, shapes, dtype):
    xs = [rand(s, dtype, seed=k) for k, s in enumerate(shapes)]
    assert_like(f(*[yaad.tensor(x, requires_grad=True) for x in xs]), npf(*xs))


@pytest.mark.parametrize("name,f,npf,shapes", JOIN, ids=[j[0] for j in JOIN])
@pytest.mark.parametrize("dtype", [np.float64, C128], ids=["real", "complex"])
def test_join_gradient(name, f, npf, shapes, dtype):
    gradcheck(f, [rand(s, dtype, seed=k) for k, s in enumerate(shapes)])


@pytest.mark.parametrize("name,f,npf,shapes", JOIN[::2], ids=[j[0] for j in JOIN[::2]])
def test_join_second_derivative_and_forward_mode(name, f, npf, shapes):
    xs = [rand(s, seed=k) for k, s in enumerate(shapes)]
    gradgradcheck(lambda *a: f(*a) ** 2, xs)
    check_jvp(f, xs)


def test_join_mixes_tensors_constants_and_lists():
    x = yaad.tensor(rand((2,)), requires_grad=True)
    y = yaad.concatenate([x, [5.0, 6.0], np.ones(1)])
    assert_like(y, np.concatenate([x.data, [5.0, 6.0], np.ones(1)]))
    (y * np.arange(5.0)).sum().backward()
    np.testing.assert_array_equal(x.grad, [0.0, 1.0])
    s = yaad.stack([x, np.zeros(2)], axis=1)
    (s * np.arange(4.0).reshape(2, 2)).sum().backward()
    np.testing.assert_array_equal(x.grad, [0.0 + 0.0, 1.0 + 2.0])


def test_join_float32_with_float64_constant_promotes_like_numpy():
    x = yaad.tensor(rand((2,), F32), requires_grad=True)
    y = yaad.concatenate([x, np.zeros(1)])
    assert y.dtype == np.float64
    y.sum().backward()
    assert x.grad.dtype == F32


def test_concatenate_and_stack_reject_out_and_empty():
    x = yaad.tensor(rand((2,)))
    with pytest.raises(TypeError, match="out="):
        yaad.concatenate([x, x], out=np.zeros(4))
    with pytest.raises(ValueError, match="at least one"):
        yaad.stack([])


# ---- splitting -------------------------------------------------------------------------

SPLIT = [
    ("split", lambda a: yaad.split(a, 2, axis=1), lambda a: np.split(a, 2, axis=1), (3, 4)),
    ("split_points", lambda a: yaad.split(a, [1, 3]), lambda a: np.split(a, [1, 3]), (5, 2)),
    ("array_split", lambda a: yaad.array_split(a, 3, axis=-1),
     lambda a: np.array_split(a, 3, axis=-1), (2, 5)),
    ("hsplit", lambda a: yaad.hsplit(a, 2), lambda a: np.hsplit(a, 2), (3, 4)),
    ("hsplit_1d", lambda a: yaad.hsplit(a, [2]), lambda a: np.hsplit(a, [2]), (5,)),
    ("vsplit", lambda a: yaad.vsplit(a, 2), lambda a: np.vsplit(a, 2), (4, 3)),
    ("dsplit", lambda a: yaad.dsplit(a, [1]), lambda a: np.dsplit(a, [1]), (2, 2, 3)),
]


@pytest.mark.parametrize("name,f,npf,shape", SPLIT, ids=[s[0] for s in SPLIT])
def test_split_like_numpy_and_gradient(name, f, npf, shape):
    x = rand(shape, C128)
    parts, expected = f(yaad.tensor(x)), npf(x)
    assert isinstance(parts, list) and len(parts) == len(expected)
    for p, e in zip(parts, expected):
        assert_like(p, e)
    # weight each part differently (and skip the last one) so that misplacement shows
    gradcheck(lambda a: yaad.concatenate([yaad.ravel(p) * (k + 1)
                                          for k, p in enumerate(f(a)[:-1])]), [x])


def test_split_errors():
    x = yaad.tensor(rand((3, 4)))
    with pytest.raises(ValueError, match="equal"):
        yaad.split(x, 3, axis=1)
    with pytest.raises(ValueError, match="dimensions"):
        yaad.vsplit(yaad.tensor(rand((4,))), 2)


# ---- PyTorch ---------------------------------------------------------------------------

def test_against_torch():
    import torch
    x = rand((3, 4))
    cases = [
        (lambda a: yaad.flip(a, 1), lambda a: torch.flip(a, (1,))),
        (lambda a: yaad.roll(a, 1, 0), lambda a: torch.roll(a, 1, 0)),
        (lambda a: yaad.triu(a, 1), lambda a: torch.triu(a, 1)),
        (lambda a: yaad.repeat(a, 2, axis=0), lambda a: torch.repeat_interleave(a, 2, 0)),
        (lambda a: yaad.tile(a, (1, 2)), lambda a: a.repeat(1, 2)),
        (lambda a: yaad.diag(yaad.diagonal(a)), lambda a: torch.diag(torch.diagonal(a))),
        (lambda a: yaad.pad(a, ((0, 0), (1, 1)), mode="reflect"),
         lambda a: torch.nn.functional.pad(a[None], (1, 1), mode="reflect")[0]),
    ]
    for f, tf in cases:
        a = yaad.tensor(x, requires_grad=True)
        y = f(a)
        weights = rand(y.shape, seed=5)
        (y * weights).sum().backward()
        ta = torch.tensor(x, requires_grad=True)
        ty = tf(ta)
        (ty * torch.tensor(weights)).sum().backward()
        np.testing.assert_allclose(y.data, ty.detach().numpy())
        np.testing.assert_allclose(a.grad, ta.grad.numpy())


_MOVEAXIS_CALLS = [
    ((2, 2, 2, 2, 2), 0, 3),  # W13's gate on qubit 3
    ((2, 2, 2, 2, 2), (0, 1), (4, 0)),  # W13's CNOT on the ring's last pair
    ((3, 4, 5), [0, 1], [-1, -2]),
    ((3, 4, 5), -1, 0),
    ((3, 4, 5), (), ()),
    ((3,), 0, 0),
    ((3, 4, 5), 3, 0),  # out of range
    ((3, 4, 5), (0, 0), (1, 2)),  # repeated
    ((3, 4, 5), (0, 1), (2,)),  # unequal lengths
    ((3, 4, 5), np.int64(1), np.int64(2)),  # NumPy integers
    ((3, 4, 5), [np.int64(0)], [2]),
]


@pytest.mark.parametrize("shape, source, destination", _MOVEAXIS_CALLS)
def test_moveaxis_on_arrays_is_numpys_view(shape, source, destination):
    """moveaxis on NumPy arrays reads its transpose order from a cache: the view
    numpy.moveaxis gives (values, strides, the same memory), NumPy's error where it
    raises, twice (the cached order); the gradient moves the axes back."""
    a = np.arange(math.prod(shape), dtype=float).reshape(shape)
    for _ in range(2):
        try:
            expected = np.moveaxis(a, source, destination)
        except Exception as e:  # noqa: BLE001  (NumPy's own error)
            with pytest.raises(type(e)):
                yaad.moveaxis(a, source, destination)
            continue
        got = yaad.moveaxis(a, source, destination)
        assert got.strides == expected.strides and np.shares_memory(got, a)
        np.testing.assert_array_equal(got, expected, strict=True)
        t = yaad.tensor(a, requires_grad=True)
        out = yaad.moveaxis(t, source, destination)
        cot = np.arange(expected.size, dtype=float).reshape(expected.shape)
        (g,) = yaad.autograd.grad(out, [t], cot)
        np.testing.assert_array_equal(np.asarray(g), np.moveaxis(cot, destination, source))
