"""Forward mode: dual numbers through the op mechanism, levels, and their interplay with
reverse mode. (Every op's JVP rule is checked in test_registry_second_order.py.)"""

from __future__ import annotations

import numpy as np
import pytest

import yaad
from yaad import func as F
from yaad.core.grad_mode import state

rng = np.random.default_rng(11)


def fd_directional(f, x, v, eps=1e-6):
    return (np.asarray(f(x + eps * v)) - np.asarray(f(x - eps * v))) / (2 * eps)


def test_op_without_jvp_raises_naming_it():
    cube = yaad.op(lambda x: x ** 3, name="my_cube", vjp=lambda g, ans, x: g * 3 * x * x)
    x = np.array([1.0, 2.0])
    with pytest.raises(NotImplementedError, match="my_cube") as e:
        F.jvp(cube, (x,), (np.ones(2),))
    assert "defjvp" in str(e.value) and "vjp" in str(e.value)
    assert state.levels == () and not state.modes_on  # the level was closed
    # reverse mode is fine, and so is forward mode once a rule is declared
    np.testing.assert_allclose(F.grad(lambda x: yaad.sum(cube(x)))(x), 3 * x * x)
    cube.defjvp(lambda t, ans, x: t * 3 * x * x)
    np.testing.assert_allclose(F.jvp(cube, (x,), (np.ones(2),))[1], 3 * x * x)


def test_linear_op_needs_no_jvp_rule():
    double = yaad.op(lambda x: 2 * x, name="my_double", vjp=lambda g, ans, x: 2 * g,
                     linear=True, save_args=False, save_ans=False)
    _, t = F.jvp(lambda x: double(yaad.sin(x)), (np.array([0.5]),), (np.array([3.0]),))
    np.testing.assert_allclose(t, 2 * np.cos(0.5) * 3.0)


def test_keyword_tangent_is_rejected():
    def f(x):
        return yaad.clip(np.array([0.5, 2.0]), a_min=0.0, a_max=x)

    with pytest.raises(TypeError, match="keyword"):
        F.jvp(f, (np.array([1.0, 1.0]),), (np.ones(2),))


def test_non_differentiable_outputs_carry_no_tangent():
    def f(x):
        return x > 0, yaad.floor(x), x * 1

    (mask, fl, y), (tm, tf, ty) = F.jvp(f, (np.array([0.5, -1.5]),), (np.ones(2),))
    assert mask.dtype == bool and tm.dtype == bool and not tm.any()
    np.testing.assert_array_equal(tf, [0.0, 0.0])
    np.testing.assert_array_equal(ty, [1.0, 1.0])


def test_multi_output_op_in_forward_mode():
    a = rng.standard_normal((3, 3))
    a = a + a.T
    v = rng.standard_normal((3, 3))
    v = v + v.T

    def eigvals(m):
        return yaad.linalg.eigh(m)[0]

    _, t = F.jvp(eigvals, (a,), (v,))
    np.testing.assert_allclose(t, fd_directional(lambda m: np.linalg.eigh(m)[0], a, v),
                               atol=1e-6)


def test_broadcast_and_dtype_of_tangents():
    # a (3,) input broadcast against (2, 3): the tangent takes the output's shape
    x = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    c = np.ones((2, 3), dtype=np.float32)
    out, t = F.jvp(lambda x: x * c, (x,), (np.ones(3, dtype=np.float32),))
    assert t.shape == (2, 3) and t.dtype == np.float32
    # real input, complex output: complex tangent
    _, t = F.jvp(lambda x: x * (1 + 2j), (np.array([1.0]),), (np.array([1.0]),))
    np.testing.assert_array_equal(t, [1 + 2j])
    # complex input, real output (abs): real tangent
    _, t = F.jvp(yaad.abs, (np.array([3 + 4j]),), (np.array([1 + 0j]),))
    assert t.dtype == np.float64
    np.testing.assert_allclose(t, [0.6])


def test_forward_over_reverse_does_not_leak_tensors_into_plain_backward():
    # a graph recorded inside jvp keeps its dual inputs; a later ordinary backward must
    # still produce plain arrays
    x = yaad.tensor([0.2, 0.4], requires_grad=True)
    kept = []

    def f(v):
        y = yaad.sum(yaad.sin(x * v))
        kept.append(y)
        return y

    F.jvp(f, (np.ones(2),), (np.ones(2),))
    kept[0].backward()
    assert type(x.grad) is np.ndarray
    np.testing.assert_allclose(x.grad, np.cos(x.data))


def test_state_is_restored_after_an_error():
    def boom(x):
        raise KeyError("boom")

    with pytest.raises(KeyError):
        F.jvp(boom, (1.0,), (1.0,))
    assert state.levels == () and not state.modes_on


def test_jvp_of_an_identity_and_of_a_constant():
    out, t = F.jvp(lambda x: x, (np.array([1.0, 2.0]),), (np.array([3.0, 4.0]),))
    np.testing.assert_array_equal(out, [1.0, 2.0])
    np.testing.assert_array_equal(t, [3.0, 4.0])
    out, t = F.jvp(lambda x: yaad.ones(2), (np.array([1.0]),), (np.array([1.0]),))
    np.testing.assert_array_equal(t, [0.0, 0.0])
    with pytest.raises(TypeError, match="numpy.ndarray of dtype float64, not a tensor"):
        F.jvp(lambda x: np.ones(2), (np.array([1.0]),), (np.array([1.0]),))


def test_tangent_that_requires_grad():
    # jvp with a tensor tangent that requires grad: the tangent output is differentiable
    v = yaad.tensor([1.0, -2.0], requires_grad=True)
    x = np.array([0.3, 0.9])
    _, t = F.jvp(yaad.exp, (x,), (v,))
    assert isinstance(t, yaad.Tensor) and t.requires_grad
    yaad.sum(t).backward()
    np.testing.assert_allclose(v.grad, np.exp(x))


def test_primal_that_requires_grad():
    # reverse over forward through a user tensor: d/dx [d/de f(x + e v)] = f''(x) v
    x = yaad.tensor([0.3, 0.9], requires_grad=True)
    v = np.array([1.0, 2.0])
    _, t = F.jvp(yaad.sin, (x,), (v,))
    yaad.sum(t).backward()
    np.testing.assert_allclose(x.grad, -np.sin(x.data) * v)


def test_forward_mode_through_numpy_dispatch():
    x, v = np.array([0.5, 1.0]), np.array([1.0, 1.0])
    _, t = F.jvp(lambda x: np.exp(x) * np.sin(x), (x,), (v,))
    np.testing.assert_allclose(t, np.exp(x) * (np.sin(x) + np.cos(x)))


def test_three_nested_levels():
    # d3/dx3 x^4 at x = 2 via forward over forward over forward: 24 x = 48
    def d(f):
        return lambda x: F.jvp(f, (x,), (1.0,))[1]

    assert d(d(d(lambda x: x ** 4)))(2.0) == pytest.approx(48.0)


def test_jvp_against_torch():
    import torch
    x = rng.standard_normal((3, 4))
    v = rng.standard_normal((3, 4))

    def f(x):
        return yaad.sum(yaad.tanh(x) * yaad.exp(x[:, ::-1]), axis=1)

    def tf(x):
        return (torch.tanh(x) * torch.exp(x.flip(1))).sum(1)

    _, t = F.jvp(f, (x,), (v,))
    _, tt = torch.func.jvp(tf, (torch.tensor(x),), (torch.tensor(v),))
    np.testing.assert_allclose(t, tt.numpy(), atol=1e-12)


# ---- building arrays from tensors: both modes stack (PyTorch's torch.stack), or both raise


def _jax_builders():
    import jax.numpy as jnp

    return {
        "append": lambda x: jnp.append(jnp.stack([x[0], x[1]]), 2 * x),
        "sum_list": lambda x: jnp.sum(jnp.stack([x, 2 * x]), axis=0),
        "mean_list": lambda x: jnp.mean(jnp.stack([x[0], x[1] ** 2])),
        "var_list": lambda x: jnp.var(jnp.stack([x[0], x[1] ** 2, 1.0])),
        "std_list": lambda x: jnp.std(jnp.stack([x[0], x[1] ** 2])),
        "nested": lambda x: jnp.stack([jnp.stack([x[0], 1.0]), jnp.stack([x[1], x[0] * x[1]])]),
        "exp_of_tuple": lambda x: jnp.exp(jnp.stack([x[0], x[1]])),
        "matmul_of_lists": lambda x: jnp.stack([x, x]) @ jnp.stack([x[1], x[0]]),
    }


BUILDERS = {
    "append": lambda x: yaad.append([x[0], x[1]], 2 * x),
    "sum_list": lambda x: yaad.sum([x, 2 * x], axis=0),
    "mean_list": lambda x: yaad.mean([x[0], x[1] ** 2]),
    "var_list": lambda x: yaad.var([x[0], x[1] ** 2, 1.0]),
    "std_list": lambda x: yaad.std([x[0], x[1] ** 2]),
    "nested": lambda x: yaad.stack([[x[0], 1.0], [x[1], x[0] * x[1]]]),
    "exp_of_tuple": lambda x: yaad.exp((x[0], x[1])),
    "matmul_of_lists": lambda x: yaad.matmul([x, x], [x[1], x[0]]),
}


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_lists_of_tensors_are_stacked_in_both_modes(name):
    import jax

    x = np.array([0.7, -1.3])
    v = np.array([0.4, 2.0])
    f, ref = BUILDERS[name], _jax_builders()[name]
    with jax.enable_x64(True):
        out_j, t_j = jax.jvp(ref, (x,), (v,))
        w = rng.standard_normal(np.shape(out_j))
        g_j = jax.grad(lambda x: (ref(x) * w).sum())(x)
    out, t = F.jvp(f, (x,), (v,))
    np.testing.assert_allclose(out, out_j, rtol=1e-14)
    np.testing.assert_allclose(t, t_j, rtol=1e-13)
    np.testing.assert_allclose(F.grad(lambda x: yaad.sum(f(x) * w))(x), g_j, rtol=1e-13)
    xt = yaad.tensor(x, requires_grad=True)
    yaad.sum(f(xt) * w).backward()
    np.testing.assert_allclose(xt.grad, g_j, rtol=1e-13)


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_lists_of_tensors_are_stacked_with_python_scalar_tangents(name):
    # jvp at Python floats: the tangents reach the stacking rules as arrays (a float
    # tangent crashed them); the value is the derivative along x = (s, s)
    import jax

    f, ref = BUILDERS[name], _jax_builders()[name]
    with jax.enable_x64(True):
        _, t_j = jax.jvp(lambda s: ref(np.ones(2) * s), (0.7,), (0.4,))
    _, t = F.jvp(lambda s: f(yaad.stack([s, s])), (0.7,), (0.4,))
    np.testing.assert_allclose(t, t_j, rtol=1e-13)


@pytest.mark.parametrize("build", [
    lambda x: np.array([x, 2 * x]), lambda x: np.r_[x, 2 * x], lambda x: np.c_[x, 2 * x],
    lambda x: np.sum([x, 2 * x]), lambda x: np.asarray([x[0], x[1]]),
], ids=["np.array", "np.r_", "np.c_", "np.sum(list)", "np.asarray(list)"])
def test_numpy_array_building_raises_in_both_modes(build):
    # NumPy makes these arrays itself (no dispatch to yaad): a silent zero tangent or a
    # dropped gradient is what they would give otherwise.
    x = np.array([0.5, 1.0])
    with pytest.raises(TypeError, match="forward-mode tangent.*yaad.stack"):
        F.jvp(build, (x,), (np.ones(2),))
    with pytest.raises(TypeError, match="requires grad.*yaad.stack"):
        F.grad(lambda x: yaad.sum(build(x)))(x)
    # without a transform it is plain NumPy on the values
    np.testing.assert_array_equal(build(yaad.tensor(x)), build(x))
