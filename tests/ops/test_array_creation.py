"""yaad.array / yaad.asarray (NumPy's signatures) and nested sequences of tensors in
yaad.tensor / yaad.array: a differentiable stack, checked against JAX (jnp.array is
differentiable in the same way) in reverse mode, forward mode, under vmap, and compiled."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import yaad
import yaad.func as F

jax.config.update("jax_enable_x64", True)


def hamiltonian(xp, p):
    a, b, c = p[0], p[1], p[2]
    return xp.array([[a, b * c, 1.0], [b * c, -a, c], [1.0, c, a * b]])


def ground_energy(xp, p):
    return xp.linalg.eigvalsh(hamiltonian(xp, p))[0]


P = np.array([0.3, -0.7, 1.1])


def test_hamiltonian_from_parameters_reverse_mode_matches_jax():
    p = yaad.tensor(P, requires_grad=True)
    e = ground_energy(yaad, p)
    e.backward()
    e_j, g_j = jax.value_and_grad(lambda p: ground_energy(jnp, p))(P)
    np.testing.assert_allclose(e.item(), e_j, rtol=1e-13)
    np.testing.assert_allclose(p.grad, g_j, rtol=1e-12)


def test_nested_sequence_forward_mode_and_second_order_match_jax():
    f_y = lambda p: yaad.sum(hamiltonian(yaad, p) ** 3)  # noqa: E731
    f_j = lambda p: jnp.sum(hamiltonian(jnp, p) ** 3)  # noqa: E731
    t = np.array([1.0, -2.0, 0.5])
    out, tan = F.jvp(f_y, (P,), (t,))
    out_j, tan_j = jax.jvp(f_j, (P,), (t,))
    np.testing.assert_allclose(out, out_j, rtol=1e-13)
    np.testing.assert_allclose(tan, tan_j, rtol=1e-13)
    np.testing.assert_allclose(F.hessian(f_y)(P), jax.hessian(f_j)(P), rtol=1e-12)


def test_nested_sequence_under_vmap_matches_jax():
    ps = np.random.default_rng(0).standard_normal((4, 3))
    got = F.vmap(lambda p: hamiltonian(yaad, p))(ps)
    want = jax.vmap(lambda p: hamiltonian(jnp, p))(ps)
    assert got.shape == (4, 3, 3)
    np.testing.assert_allclose(got, want, rtol=1e-15)
    g = F.vmap(F.grad(lambda p: ground_energy(yaad, p)))(ps)
    g_j = jax.vmap(jax.grad(lambda p: ground_energy(jnp, p)))(ps)
    np.testing.assert_allclose(g, g_j, rtol=1e-11)


def test_nested_sequence_compiled_replays_on_new_values():
    f = yaad.compile(lambda p: ground_energy(yaad, p))
    for values in (P, P[::-1].copy(), 2 * P):
        p = yaad.tensor(values, requires_grad=True)
        e = f(p)
        e.backward()
        e_j, g_j = jax.value_and_grad(lambda p: ground_energy(jnp, p))(values)
        np.testing.assert_allclose(e.item(), e_j, rtol=1e-13)
        np.testing.assert_allclose(p.grad, g_j, rtol=1e-12)


@pytest.mark.parametrize("build", [
    lambda a, b: [a, b], lambda a, b: (a, [2.0, 3.0]), lambda a, b: [[a], [b]],
    lambda a, b: [a, [1, 2]], lambda a, b: [[1, 2], a], lambda a, b: [[a, b], [b, a]],
], ids=["two", "tensor-and-float", "nested", "tensor-and-ints", "ints-and-tensor", "2x2"])
@pytest.mark.parametrize("dtype", [None, np.float32, np.complex128])
def test_nested_values_shapes_dtypes_follow_numpy(build, dtype):
    rng = np.random.default_rng(1)
    a_np = rng.standard_normal(2).astype(np.float32)
    b_np = rng.standard_normal(2)
    a = yaad.tensor(a_np, requires_grad=True)
    b = yaad.tensor(b_np, requires_grad=True)
    want = np.array(build(a_np, b_np), dtype=dtype)
    for maker in (yaad.array, yaad.asarray, yaad.tensor):
        got = maker(build(a, b), dtype=dtype)
        assert got.shape == want.shape and got.dtype == want.dtype, maker
        np.testing.assert_array_equal(got.detach().numpy(), want)
    # the gradient of the sum of the real part: one for each place a is copied to
    out = yaad.array(build(a, b), dtype=dtype)
    yaad.sum(yaad.real(out)).backward()
    ones_a = (np.array(build(np.ones(2, np.float32), np.zeros(2)), dtype=dtype)
              - np.array(build(np.zeros(2, np.float32), np.zeros(2)), dtype=dtype))
    assert a.grad.dtype == np.float32  # (each tensor's gradient in its own dtype)
    np.testing.assert_allclose(a.grad.sum(), ones_a.real.sum())  # a's places, counted


def test_tensor_from_a_list_of_tensors_is_a_differentiable_stack():
    a = yaad.tensor(2.0, requires_grad=True)
    y = yaad.tensor([a, a * a, 1.0])
    assert y.grad_fn is not None
    yaad.sum(y).backward()
    assert a.grad == 5.0
    # requires_grad=True on constant tensors makes a leaf; on recorded ones it is refused
    leaf = yaad.tensor([yaad.tensor(1.0), 2.0], requires_grad=True)
    assert leaf.is_leaf and leaf.requires_grad
    with pytest.raises(ValueError, match="tensor: requires_grad=True makes a leaf"):
        yaad.tensor([a, 1.0], requires_grad=True)


def test_array_of_a_tensor_is_a_recorded_copy_and_asarray_returns_it():
    x = yaad.tensor([1.0, 2.0], requires_grad=True)
    y = yaad.array(x)
    assert y is not x and y.grad_fn is not None and y.data is not x.data
    assert yaad.asarray(x) is x and yaad.array(x, copy=None) is x
    z = yaad.asarray(x, dtype=np.float32)
    assert z.dtype == np.float32 and z.grad_fn is not None
    yaad.sum(3 * y + z).backward()
    np.testing.assert_array_equal(x.grad, [4.0, 4.0])
    with pytest.raises(ValueError, match="copy=False"):
        yaad.asarray(x, dtype=np.float32, copy=False)
    with pytest.raises(ValueError, match="copy=False"):
        yaad.array([x, x], copy=False)
    assert yaad.array(x, ndmin=3).shape == (1, 1, 2)


def test_array_and_asarray_of_plain_data_follow_numpy():
    data = np.arange(6, dtype=np.int32).reshape(2, 3)
    for args, kwargs in [((data,), {}), (([[1, 2], [3, 4.5]],), {}),
                         ((data,), {"dtype": np.float32}), ((data,), {"ndmin": 4}),
                         ((True,), {}), ((data,), {"order": "F"})]:
        got, want = yaad.array(*args, **kwargs), np.array(*args, **kwargs)
        assert isinstance(got, yaad.Tensor)
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_array_equal(got.numpy(), want)
    assert np.shares_memory(yaad.asarray(data).numpy(), data)
    assert not np.shares_memory(yaad.array(data).numpy(), data)
    with pytest.raises(ValueError):
        yaad.asarray(data, dtype=np.float64, copy=False)
    leaf = yaad.asarray([1.0, 2.0], requires_grad=True)
    assert leaf.is_leaf and leaf.requires_grad


def test_ragged_and_object_nesting_raise_naming_the_function():
    a = yaad.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(ValueError, match="array: cannot build an array"):
        yaad.array([a, [1.0]])
    with pytest.raises((TypeError, ValueError), match="tensor: "):
        yaad.tensor([a, object()])
