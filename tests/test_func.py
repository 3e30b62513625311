"""yaad.func: grad, value_and_grad, vjp, jvp, jacrev, jacfwd, hessian, hvp, linearize."""

from __future__ import annotations

import numpy as np
import pytest

import yaad
from yaad import func as F

rng = np.random.default_rng(7)


def fd_jacobian(f, x, eps=1e-6):
    """Central differences of f (array -> array) at x, shape f(x).shape + x.shape."""
    x = np.asarray(x, dtype=float)
    cols = []
    for k in range(x.size):
        e = np.zeros_like(x)
        e.flat[k] = eps
        cols.append((np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2 * eps))
    out_shape = np.shape(f(x))
    return np.stack(cols, axis=-1).reshape(out_shape + x.shape)


# ---- a small MLP whose loss is a function of one flat parameter vector ----------------

X = rng.standard_normal((4, 3))
Y = rng.standard_normal((4, 2))
SHAPES = [(3, 5), (5,), (5, 2)]
NPARAM = sum(int(np.prod(s)) for s in SHAPES)
P0 = 0.5 * rng.standard_normal(NPARAM)


def unpack(p):
    out, start = [], 0
    for s in SHAPES:
        n = int(np.prod(s))
        out.append(yaad.reshape(p[start:start + n], s))
        start += n
    return out


def mlp_loss(p):
    w1, b1, w2 = unpack(p)
    h = yaad.tanh(X @ w1 + b1)
    r = h @ w2 - Y
    return yaad.mean(r * r)


def mlp_grad_numpy(p):
    """The gradient written by hand in NumPy (for finite differences of the gradient)."""
    p = np.asarray(p)
    w1 = p[:15].reshape(3, 5)
    b1 = p[15:20]
    w2 = p[20:].reshape(5, 2)
    h = np.tanh(X @ w1 + b1)
    r = h @ w2 - Y
    gr = 2 * r / r.size
    gw2 = h.T @ gr
    gh = gr @ w2.T * (1 - h * h)
    return np.concatenate([(X.T @ gh).ravel(), gh.sum(0), gw2.ravel()])


# ---- grad and value_and_grad -------------------------------------------------------------


def test_grad_arrays_in_arrays_out():
    g = F.grad(lambda x: (x ** 2).sum())(np.array([1.0, 2.0]))
    assert type(g) is np.ndarray
    np.testing.assert_array_equal(g, [2.0, 4.0])


def test_grad_of_python_scalar_is_a_scalar():
    g = F.grad(lambda x: x ** 3)(2.0)
    assert isinstance(g, float) and g == 12.0
    assert F.grad(lambda x: x * x)(3) == 6.0  # an int point is taken as a float


def test_grad_tensors_in_tensors_out():
    x = yaad.tensor([1.0, 2.0])
    g = F.grad(lambda x: yaad.sum(yaad.sin(x)))(x)
    assert isinstance(g, yaad.Tensor) and not g.requires_grad
    np.testing.assert_allclose(g.data, np.cos([1.0, 2.0]))


def test_grad_keeps_float32():
    x = np.array([1.0, 2.0], dtype=np.float32)
    g = F.grad(lambda x: yaad.sum(yaad.exp(x)))(x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g, np.exp(x), rtol=1e-6)


def test_grad_argnums_and_has_aux():
    def f(a, b, c):
        return yaad.sum(a * b * c), "aux"

    a, b, c = np.array([1.0, 2.0]), np.array([3.0, 4.0]), np.array([5.0, 6.0])
    (ga, gc), aux = F.grad(f, argnums=(0, -1), has_aux=True)(a, b, c)
    np.testing.assert_array_equal(ga, b * c)
    np.testing.assert_array_equal(gc, a * b)
    assert aux == "aux"
    (value, aux), gb = F.value_and_grad(f, argnums=1, has_aux=True)(a, b, c)
    assert value == pytest.approx(np.sum(a * b * c))
    np.testing.assert_array_equal(gb, a * c)
    with pytest.raises(ValueError, match="argnums"):
        F.grad(f, argnums=3)(a, b, c)


def test_grad_of_pytree_argument():
    params = {"w": np.array([[1.0, 2.0], [3.0, 4.0]]), "b": [np.array([0.5]), 2.0]}

    def loss(p):
        return yaad.sum(p["w"] @ np.ones(2) + p["b"][0]) * p["b"][1]

    g = F.grad(loss)(params)
    assert set(g) == {"w", "b"} and isinstance(g["b"], list)
    np.testing.assert_array_equal(g["w"], 2.0 * np.ones((2, 2)))
    np.testing.assert_array_equal(g["b"][0], [4.0])
    assert g["b"][1] == pytest.approx(np.sum(params["w"] @ np.ones(2) + 0.5))


def test_grad_of_non_scalar_points_to_jacrev():
    with pytest.raises(TypeError, match="jacrev") as e:
        F.grad(lambda x: x * 2)(np.ones(3))
    assert "vjp" in str(e.value) and "(3,)" in str(e.value)
    with pytest.raises(TypeError, match="jacrev"):
        F.grad(lambda x: (x, x))(1.0)


def test_grad_of_complex_valued_function_raises():
    with pytest.raises(TypeError, match="complex") as e:
        F.grad(lambda z: z * z)(1.0 + 2.0j)
    assert "vjp" in str(e.value) and "jacrev" in str(e.value)


def test_grad_complex_convention():
    # |z|^2 at 3+4j: dL/dx + i dL/dy = 6+8j (descends under z -= lr * g)
    g = F.grad(lambda z: yaad.real(z * yaad.conj(z)))(3.0 + 4.0j)
    assert g == 6.0 + 8.0j


def test_grad_of_grad_and_third_derivative():
    f = lambda x: yaad.sin(x) * x  # noqa: E731
    x = 0.7
    assert F.grad(F.grad(f))(x) == pytest.approx(2 * np.cos(x) - x * np.sin(x))
    assert F.grad(F.grad(F.grad(f)))(x) == pytest.approx(-3 * np.sin(x) - x * np.cos(x))


def test_no_perturbation_confusion_reverse():
    # d/dx [x * d/dy (x + y)] = d/dx [x * 1] = 1; confusing x and y would give 2.
    assert F.grad(lambda x: x * F.grad(lambda y: x + y)(x))(1.0) == 1.0
    # d/dx [x * d/dy (x * y)] at y = x: d/dx [x * x] = 2x
    assert F.grad(lambda x: x * F.grad(lambda y: x * y)(x))(3.0) == 6.0


def test_grad_reaches_a_closed_over_tensor():
    w = yaad.tensor([1.0, 2.0], requires_grad=True)
    x = np.array([3.0, 5.0])
    g = F.grad(lambda x: yaad.sum(w * w * x))(x)  # d/dx = w**2, a function of w
    assert g.requires_grad  # the result depends on w, which requires grad
    np.testing.assert_allclose(g.data, [1.0, 4.0])
    yaad.sum(g).backward()
    np.testing.assert_allclose(w.grad, 2 * w.data)


def test_grad_of_tensor_that_requires_grad_is_differentiable():
    x = yaad.tensor([0.3, 0.6], requires_grad=True)
    g = F.grad(lambda x: yaad.sum(yaad.sin(x)))(x)
    assert g.requires_grad
    yaad.sum(g).backward()
    np.testing.assert_allclose(x.grad, -np.sin(x.data))
    # the graph around x is untouched: backward through it again still works
    y = yaad.sum(x * x)
    y.backward()
    np.testing.assert_allclose(x.grad, -np.sin(x.data) + 2 * x.data)


def test_grad_works_under_no_grad():
    with yaad.no_grad():
        g = F.grad(lambda x: yaad.sum(x ** 2))(np.array([1.0, -1.0]))
    np.testing.assert_array_equal(g, [2.0, -2.0])


# ---- vjp -----------------------------------------------------------------------------------


def test_vjp_twice_and_pytree_output():
    def f(x):
        return {"s": yaad.sin(x), "p": (x * 2, yaad.sum(x))}

    x = np.array([0.1, 0.2])
    out, vjp_fn = F.vjp(f, x)
    np.testing.assert_allclose(out["s"], np.sin(x))
    cot = {"s": np.array([1.0, 0.0]), "p": (np.array([0.0, 1.0]), 3.0)}
    for _ in range(2):  # the function can be called again
        (g,) = vjp_fn(cot)
        np.testing.assert_allclose(g, [np.cos(0.1) + 3, 2 + 3])
    with pytest.raises(ValueError, match="shape"):
        vjp_fn({"s": np.ones(3), "p": (np.ones(2), 1.0)})


def test_vjp_holomorphic_convention():
    z = np.array([1.0 + 2.0j, 0.5 - 1.0j])
    _, vjp_fn = F.vjp(lambda z: z * z, z)
    (g,) = vjp_fn(np.ones(2, dtype=complex))
    np.testing.assert_allclose(g, np.conj(2 * z))  # g * conj(f'(z))


def test_vjp_multiple_primals_and_aux():
    out, vjp_fn, aux = F.vjp(lambda a, b: (a * b, a), np.array([2.0]), np.array([3.0]),
                             has_aux=True)
    ga, gb = vjp_fn(np.array([1.0]))
    assert (ga, gb) == (3.0, 2.0)
    np.testing.assert_array_equal(aux, [2.0])


# ---- jvp and linearize ----------------------------------------------------------------------


def test_jvp_values():
    x, v = np.array([0.0, 1.0]), np.array([2.0, 1.0])
    out, t = F.jvp(yaad.sin, (x,), (v,))
    np.testing.assert_allclose(out, np.sin(x))
    np.testing.assert_allclose(t, np.cos(x) * v)


def test_jvp_holomorphic_and_non_holomorphic():
    z, v = np.array([1.0 + 2.0j]), np.array([0.5 - 1.0j])
    _, t = F.jvp(lambda z: z ** 3, (z,), (v,))
    np.testing.assert_allclose(t, 3 * z ** 2 * v)
    _, t = F.jvp(lambda z: yaad.real(z * yaad.conj(z)), (z,), (v,))
    np.testing.assert_allclose(t, 2 * np.real(np.conj(z) * v))


def test_jvp_pytree_and_constant_output():
    def f(p):
        return {"y": p["a"] * p["b"], "c": yaad.tensor(1.0)}

    p = {"a": np.array([2.0]), "b": np.array([3.0])}
    t = {"a": np.array([1.0]), "b": np.array([0.0])}
    out, tout = F.jvp(f, (p,), (t,))
    np.testing.assert_array_equal(tout["y"], [3.0])
    assert tout["c"] == 0.0 and out["c"] == 1.0
    # a Python number is not a tensor: refused, as torch.func.jvp does
    with pytest.raises(TypeError, match="output 0 of the function is a float, not a tensor"):
        F.jvp(lambda p: {"c": 1.0, "y": p["a"]}, (p,), (t,))


def test_jvp_checks_tangents():
    with pytest.raises(ValueError, match="shape"):
        F.jvp(yaad.sin, (np.ones(2),), (np.ones(3),))
    with pytest.raises(TypeError, match="complex"):
        F.jvp(yaad.sin, (np.ones(2),), (np.ones(2) * 1j,))
    with pytest.raises(TypeError, match="tuple"):
        F.jvp(yaad.sin, np.ones(2), np.ones(2))


def test_jvp_float32():
    x = np.array([1.0, 2.0], dtype=np.float32)
    out, t = F.jvp(yaad.exp, (x,), (np.ones(2, dtype=np.float32),))
    assert out.dtype == np.float32 and t.dtype == np.float32


def test_nested_jvp_mixed_partial():
    # d2/dxdy (x^2 y^3) = 6 x y^2
    f = lambda x, y: x * x * y * y * y  # noqa: E731
    x0, y0 = 1.5, 0.7

    def dfdy(x):
        return F.jvp(lambda y: f(x, y), (y0,), (1.0,))[1]

    _, d2 = F.jvp(dfdy, (x0,), (1.0,))
    assert d2 == pytest.approx(6 * x0 * y0 ** 2)


def test_no_perturbation_confusion_forward():
    # d/dx [x * (d/dy (x + y))] = 1, in forward mode
    def g(x):
        return x * F.jvp(lambda y: x + y, (x,), (1.0,))[1]

    assert F.jvp(g, (1.0,), (1.0,))[1] == 1.0


def test_escaped_dual_number_is_a_constant_later():
    kept = []

    def f(x):
        kept.append(x * 2)  # a dual number that outlives its jvp
        return x

    F.jvp(f, (1.0,), (1.0,))
    # in a new jvp, the old tangent must not leak into the result
    _, t = F.jvp(lambda y: y * kept[0], (3.0,), (1.0,))
    assert t == 2.0


def test_linearize():
    x = np.array([0.3, -0.2])
    out, f_jvp = F.linearize(lambda x: yaad.exp(x) * x, x)
    np.testing.assert_allclose(out, np.exp(x) * x)
    v = np.array([1.0, 2.0])
    np.testing.assert_allclose(f_jvp(v), (np.exp(x) * x + np.exp(x)) * v)
    np.testing.assert_allclose(f_jvp(2 * v), 2 * f_jvp(v))


# ---- Jacobians --------------------------------------------------------------------------------

A = rng.standard_normal((4, 3))


def jac_fn(x):
    return A @ yaad.sin(x) + x[0] * x[1]


@pytest.mark.parametrize("jac", [F.jacrev, F.jacfwd])
def test_jacobian_against_finite_differences(jac):
    x = rng.standard_normal(3)
    J = jac(jac_fn)(x)
    assert J.shape == (4, 3)
    np.testing.assert_allclose(J, fd_jacobian(jac_fn, x), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("jac", [F.jacrev, F.jacfwd])
def test_jacobian_structures(jac):
    def f(a, b):
        return {"ab": a[:, None] * b[None, :], "s": yaad.sum(a)}

    a, b = np.array([1.0, 2.0]), np.array([3.0, 4.0, 5.0])
    J = jac(f, argnums=(0, 1))(a, b)
    assert J["ab"][0].shape == (2, 3, 2) and J["ab"][1].shape == (2, 3, 3)
    assert J["s"][0].shape == (2,) and J["s"][1].shape == (3,)
    np.testing.assert_array_equal(J["s"][0], [1.0, 1.0])
    np.testing.assert_array_equal(J["s"][1], np.zeros(3))
    np.testing.assert_array_equal(J["ab"][0][:, :, 0], [[3, 4, 5], [0, 0, 0]])


@pytest.mark.parametrize("jac", [F.jacrev, F.jacfwd])
def test_jacobian_real_to_complex(jac):
    c = np.array([1 + 2j, -0.5j])
    J = jac(lambda x: yaad.exp(x * c))(np.array([0.3, 0.1]))
    np.testing.assert_allclose(J, np.diag(c * np.exp(np.array([0.3, 0.1]) * c)))


@pytest.mark.parametrize("jac", [F.jacrev, F.jacfwd])
def test_jacobian_holomorphic(jac):
    z = np.array([1 + 1j, 0.5 - 0.2j])
    J = jac(lambda z: z ** 3, holomorphic=True)(z)
    np.testing.assert_allclose(J, np.diag(3 * z ** 2))
    with pytest.raises(ValueError, match="holomorphic"):
        jac(lambda z: z ** 3)(z)


def test_jacobian_of_real_function_of_complex_inputs_is_the_gradient():
    z = np.array([1 + 1j, 0.5 - 0.2j])
    f = lambda z: yaad.real(z * yaad.conj(z)) * np.array([1.0, 2.0])  # noqa: E731
    Jr, Jf = F.jacrev(f)(z), F.jacfwd(f)(z)
    np.testing.assert_allclose(Jr, np.diag(2 * z * [1.0, 2.0]))
    np.testing.assert_allclose(Jf, Jr)


# ---- Hessians and their compositions ---------------------------------------------------


def test_hessian_of_mlp_three_ways_and_finite_differences():
    H = F.hessian(mlp_loss)(P0)
    assert H.shape == (NPARAM, NPARAM)
    np.testing.assert_allclose(H, H.T, atol=1e-12)
    np.testing.assert_allclose(F.jacfwd(F.jacrev(mlp_loss))(P0), H, atol=1e-12)
    np.testing.assert_allclose(F.jacrev(F.jacrev(mlp_loss))(P0), H, atol=1e-10)
    np.testing.assert_allclose(F.jacrev(F.jacfwd(mlp_loss))(P0), H, atol=1e-10)
    np.testing.assert_allclose(F.grad(mlp_loss)(P0), mlp_grad_numpy(P0), atol=1e-12)
    np.testing.assert_allclose(H, fd_jacobian(mlp_grad_numpy, P0), atol=1e-6)


def test_hessian_forward_over_forward():
    f = lambda x: yaad.sum(yaad.exp(x[0] * x) * x[1])  # noqa: E731
    x = np.array([0.3, -0.4, 0.2])
    np.testing.assert_allclose(F.jacfwd(F.jacfwd(f))(x), F.hessian(f)(x), atol=1e-12)


def test_hessian_argnums_blocks():
    f = lambda a, b: yaad.sum(a * a * b)  # noqa: E731
    a, b = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    (haa, hab), (hba, hbb) = F.hessian(f, argnums=(0, 1))(a, b)
    np.testing.assert_allclose(haa, np.diag(2 * b))
    np.testing.assert_allclose(hab, np.diag(2 * a))
    np.testing.assert_allclose(hba, np.diag(2 * a))
    np.testing.assert_allclose(hbb, np.zeros((2, 2)))


def test_hessian_complex_input_needs_hvp_or_holomorphic():
    with pytest.raises(TypeError, match="hvp"):
        F.hessian(lambda z: yaad.sum(yaad.real(z * yaad.conj(z))))(np.array([1j]))
    z = np.array([1 + 1j, 2 - 1j])
    H = F.hessian(lambda z: yaad.sum(z ** 3), holomorphic=True)(z)
    np.testing.assert_allclose(H, np.diag(6 * z))


def test_hvp_real():
    v = rng.standard_normal(NPARAM)
    value, hv = F.hvp(mlp_loss, (P0,), (v,))
    assert value == pytest.approx(float(mlp_loss(yaad.tensor(P0)).item()))
    np.testing.assert_allclose(hv, F.hessian(mlp_loss)(P0) @ v, atol=1e-12)


def test_hvp_complex_against_finite_differences():
    M = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))
    H = M + M.conj().T

    def energy(psi):  # a Rayleigh quotient, real-valued, not holomorphic
        return yaad.real(yaad.vdot(psi, H @ psi)) / yaad.real(yaad.vdot(psi, psi))

    psi = rng.standard_normal(3) + 1j * rng.standard_normal(3)
    v = rng.standard_normal(3) + 1j * rng.standard_normal(3)
    _, hv = F.hvp(energy, (psi,), (v,))
    g = F.grad(energy)
    eps = 1e-6
    np.testing.assert_allclose(hv, (g(psi + eps * v) - g(psi - eps * v)) / (2 * eps),
                               atol=1e-6)


def test_hvp_several_primals():
    f = lambda a, b: yaad.sum(a * a * b)  # noqa: E731
    a, b = np.array([1.0, 2.0]), np.array([3.0, 4.0])
    _, (ha, hb) = F.hvp(f, (a, b), (np.array([1.0, 0.0]), np.array([0.0, 1.0])))
    np.testing.assert_allclose(ha, [6.0, 4.0])   # 2b*va + 2a*vb
    np.testing.assert_allclose(hb, [2.0, 0.0])   # 2a*va


def test_reverse_over_forward():
    # g(x) = f'(x) v for elementwise f = sin; d/dx sum(g) = f''(x) v = -sin(x) v
    v = np.array([1.0, 2.0])
    g = F.grad(lambda x: yaad.sum(F.jvp(yaad.sin, (x,), (v,))[1]))
    x = np.array([0.4, 1.1])
    np.testing.assert_allclose(g(x), -np.sin(x) * v)


def test_gradient_with_respect_to_a_tangent():
    # the tangent may itself require grad: d/dv <w, J v> = J^T w
    x = np.array([0.4, 1.1])
    w = np.array([1.0, -1.0])
    gv = F.grad(lambda v: yaad.sum(F.jvp(lambda x: yaad.exp(x) * x[::-1], (x,), (v,))[1] * w))
    J = F.jacrev(lambda x: yaad.exp(x) * x[::-1])(x)
    np.testing.assert_allclose(gv(np.zeros(2)), J.T @ w)


def test_gradient_of_a_vjp_with_respect_to_its_cotangent():
    # HIPS autograd's second-order check: vjp_fn(u) = f'(x0) u is linear in u, so its
    # derivative with respect to u is f'(x0) (it was 0: the cotangent was dropped).
    x0 = 0.3
    G = lambda u: F.vjp(yaad.sin, x0)[1](u)[0]  # noqa: E731
    g = F.grad(G)(0.7)
    assert isinstance(g, np.float64)  # arrays in, arrays out: no graph left attached
    np.testing.assert_allclose(g, np.cos(x0), rtol=1e-15)
    out, tangent = F.jvp(G, (0.7,), (2.0,))
    np.testing.assert_allclose([out, tangent], [0.7 * np.cos(x0), 2 * np.cos(x0)], rtol=1e-15)
    # vjp_fn made outside the transform that differentiates it
    _, fn = F.vjp(yaad.sin, x0)
    assert isinstance(F.grad(lambda u: fn(u)[0])(0.7), np.float64)
    np.testing.assert_allclose(F.grad(lambda u: fn(u)[0])(0.7), np.cos(x0), rtol=1e-15)
    # a cotangent tensor that requires grad: backward reaches it
    u = yaad.tensor(0.7, requires_grad=True)
    fn(u)[0].backward()
    np.testing.assert_allclose(u.grad, np.cos(x0), rtol=1e-15)


def test_jvp_of_a_vjp_keeps_both_parts():
    # H(x, u) = sin'(x) u: dH = -sin(x) u dx + cos(x) du
    x0, u0, tx, tu = 0.3, 0.7, 0.5, 2.0
    H = lambda x, u: F.vjp(yaad.sin, x)[1](u)[0]  # noqa: E731
    _, t = F.jvp(H, (x0, u0), (tx, tu))
    np.testing.assert_allclose(t, -np.sin(x0) * u0 * tx + np.cos(x0) * tu, rtol=1e-14)
    gx, gu = F.grad(H, argnums=(0, 1))(x0, u0)
    np.testing.assert_allclose([gx, gu], [-np.sin(x0) * u0, np.cos(x0)], rtol=1e-14)


def test_second_order_through_a_complex_vjp_against_jax():
    import jax
    import jax.numpy as jnp

    # yaad's vjp_fn(u) is conj(JAX's vjp_fn(conj(u))) (docs/complex.md)
    z0 = np.array([0.3 + 0.4j, -0.2 + 1.1j])
    u0 = np.array([0.5 - 0.1j, 1.2 + 0.3j])
    tz = np.array([1.0 - 0.5j, 0.25 + 2.0j])
    tu = np.array([-0.3 + 0.7j, 0.9 - 0.2j])

    def ours(z, u):
        return F.vjp(lambda z: yaad.exp(z) * yaad.conj(z), z)[1](u)[0]

    def theirs(z, u):
        return jnp.conj(jax.vjp(lambda z: jnp.exp(z) * jnp.conj(z), z)[1](jnp.conj(u))[0])

    with jax.enable_x64(True):
        expected = jax.jvp(theirs, (z0, u0), (tz, tu))
    got = F.jvp(ours, (z0, u0), (tz, tu))
    np.testing.assert_allclose(got[0], np.asarray(expected[0]), rtol=1e-14)
    np.testing.assert_allclose(got[1], np.asarray(expected[1]), rtol=1e-13)


# ---- against PyTorch ------------------------------------------------------------------------


def test_against_torch_func():
    import torch
    tf = torch.func

    def t_loss(p):
        w1 = p[:15].reshape(3, 5)
        b1 = p[15:20]
        w2 = p[20:].reshape(5, 2)
        r = torch.tanh(torch.as_tensor(X) @ w1 + b1) @ w2 - torch.as_tensor(Y)
        return (r * r).mean()

    p = torch.tensor(P0)
    np.testing.assert_allclose(F.hessian(mlp_loss)(P0), tf.hessian(t_loss)(p).numpy(),
                               atol=1e-12)
    np.testing.assert_allclose(F.grad(mlp_loss)(P0), tf.grad(t_loss)(p).numpy(), atol=1e-14)
    v = rng.standard_normal(NPARAM)
    _, tv = tf.jvp(tf.grad(t_loss), (p,), (torch.tensor(v),))
    np.testing.assert_allclose(F.hvp(mlp_loss, (P0,), (v,))[1], tv.numpy(), atol=1e-12)
    z = np.array([1.0 + 2.0j, 0.5 - 1.0j])
    _, t_t = tf.jvp(lambda z: z ** 2, (torch.tensor(z),), (torch.ones(2, dtype=torch.complex128),))
    np.testing.assert_allclose(F.jvp(lambda z: z ** 2, (z,), (np.ones(2, complex),))[1],
                               t_t.numpy())
    _, t_vjp = tf.vjp(lambda z: z ** 2, torch.tensor(z))
    np.testing.assert_allclose(F.vjp(lambda z: z ** 2, z)[1](np.ones(2, complex))[0],
                               t_vjp(torch.ones(2, dtype=torch.complex128))[0].numpy())


def test_hessian_example(capsys):
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).resolve().parents[1] / "examples" / "hessian.py"
    spec = importlib.util.spec_from_file_location("example_hessian", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    r = module.main(["--atoms", "3"])
    assert r["energy"] == pytest.approx(-3.0)  # three pairs at the minimum distance
    np.testing.assert_allclose(r["modes"][:3], 0, atol=1e-8)  # translations, rotation
    assert np.all(r["modes"][3:] > 1)
    assert "Newton iterations" in capsys.readouterr().out


# ---- a value taken out of the computation: refused, as torch.func does ----------------
# float(y), y.item(), y.tolist() cut the output off from the inputs: differentiating the
# number would give zeros without a word. torch.func raises where its function returns
# a non-tensor; JAX raises earlier (at float() on a tracer). A constant tensor or a
# detached one gives zeros in all three.

# (name, yaad transform applied at x, torch.func's at xt)
def _transforms():
    import torch
    import torch.func as tf

    x, xt = np.array([1.0, 2.0]), torch.tensor([1.0, 2.0], dtype=torch.float64)
    return [
        ("grad", lambda f: F.grad(f)(x), lambda f: tf.grad(f)(xt)),
        ("value_and_grad", lambda f: F.value_and_grad(f)(x)[1],
         lambda f: tf.grad_and_value(f)(xt)[0]),
        ("vjp", lambda f: F.vjp(f, x)[1](np.float64(1.0))[0],
         lambda f: tf.vjp(f, xt)[1](torch.tensor(1.0, dtype=torch.float64))[0]),
        ("jacrev", lambda f: F.jacrev(f)(x), lambda f: tf.jacrev(f)(xt)),
        ("jvp", lambda f: F.jvp(f, (x,), (x,))[1], lambda f: tf.jvp(f, (xt,), (xt,))[1]),
        ("jacfwd", lambda f: F.jacfwd(f)(x), lambda f: tf.jacfwd(f)(xt)),
        ("hessian", lambda f: F.hessian(f)(x), lambda f: tf.hessian(f)(xt)),
        ("hvp", lambda f: F.hvp(f, (x,), (x,))[1], None),
        ("linearize", lambda f: F.linearize(f, x)[1](x), None),
    ]


CUT_OFF = {  # the same program in yaad and in torch
    "float": lambda lib: lambda w: float((w * w).sum()),
    "item": lambda lib: lambda w: (w * w).sum().item(),
    "tolist": lambda lib: lambda w: sum((w * w).tolist()),
    "numpy scalar": lambda lib: lambda w: np.float64((w * w).sum().item()),
    "python constant": lambda lib: lambda w: 3.0,
}
ZERO = {
    "detach": lambda lib: lambda w: (w * w).sum().detach(),
    "constant tensor": lambda lib: lambda w: lib.tensor(3.0),
    "float of a detached value": lambda lib: lambda w: lib.tensor(float((w * w).sum().detach())),
}


@pytest.mark.parametrize("program", sorted(CUT_OFF))
def test_an_output_cut_off_from_the_inputs_raises_in_every_transform_as_in_torch(program):
    import torch
    for name, mine, theirs in _transforms():
        with pytest.raises(TypeError, match="not a tensor: a value taken out of the "
                                            "computation") as info:
            mine(CUT_OFF[program](yaad))
        assert "output-not-a-tensor" in str(info.value), name
        if theirs is not None:
            with pytest.raises(RuntimeError, match="(?i)tensor"):
                theirs(CUT_OFF[program](torch))


@pytest.mark.parametrize("program", sorted(ZERO))
def test_a_detached_or_constant_tensor_output_gives_zeros_as_in_torch(program):
    import torch
    for name, mine, theirs in _transforms():
        got = mine(ZERO[program](yaad))
        assert np.shape(got) in {(), (2,), (2, 2)}, name
        np.testing.assert_array_equal(got, np.zeros(np.shape(got)))
        if theirs is not None:
            want = theirs(ZERO[program](torch))
            assert tuple(want.shape) == np.shape(got), name
            assert not want.detach().numpy().any()


def test_the_value_escapes_jax_too():
    import jax
    import jax.numpy as jnp
    for escape in (lambda w: float((w * w).sum()), lambda w: sum((w * w).tolist())):
        with pytest.raises(jax.errors.ConcretizationTypeError):
            jax.grad(escape)(jnp.array([1.0, 2.0]))
    # stop_gradient (yaad's detach) gives zeros
    assert not jax.grad(lambda w: jax.lax.stop_gradient((w * w).sum()))(
        jnp.array([1.0, 2.0])).any()


# ---- a value taken out and put back into a tensor: the cut is named --------------------
# yaad.tensor(float(y)) is a tensor, but cut off from the inputs: the transforms gave zeros
# without a word (torch.func too). A conversion of a tensor that depends on the traced
# inputs is remembered while a transform evaluates its function; when the output then does
# not depend on the inputs, the transform raises naming the conversion and its line. JAX
# (the oracle) raises at float(), complex() and tolist() of a tracer; at item(), int() and
# bool() its grad gives zeros without a word, where yaad raises too. A genuinely constant
# output still gives zeros (ZERO above, as torch.func and JAX).

REWRAPPED = {  # (yaad's program, JAX's, what the message names, whether JAX raises)
    "float": (lambda w: yaad.tensor(float((w * w).sum())),
              lambda w: float((w * w).sum()), "float(t)", True),
    "item": (lambda w: yaad.tensor((w * w).sum().item()),
             lambda w: (w * w).sum().item(), "t.item()", False),
    "tolist": (lambda w: yaad.tensor((w * w).tolist()).sum(),
               lambda w: sum((w * w).tolist()), "t.tolist()", True),
    "int": (lambda w: yaad.tensor(float(int((w * w).sum() * 10))),
            lambda w: float(int((w * w).sum() * 10)), "int(t)", False),
    "complex": (lambda w: yaad.real(yaad.tensor(complex((w * w).sum()))),
                lambda w: complex((w * w).sum()).real, "complex(t)", True),
    "bool": (lambda w: yaad.tensor(1.0 if (w * w).sum() else 0.0),
             lambda w: 1.0 if (w * w).sum() else 0.0, "bool(t)", False),
}


@pytest.mark.parametrize("program", sorted(REWRAPPED))
def test_a_gradient_cut_by_a_conversion_is_named_in_every_transform(program):
    import jax
    import jax.numpy as jnp

    mine, theirs, named, jax_raises = REWRAPPED[program]
    for name, run, _ in _transforms():
        with pytest.raises(TypeError, match="does not depend on its inputs") as info:
            run(mine)
        message = str(info.value)
        assert named in message and __file__ in message, (name, message)
        assert "detach()" in message, name
    jax_grad = jax.grad(lambda w: jnp.asarray(theirs(w)))
    if jax_raises:
        with pytest.raises(jax.errors.JAXTypeError):
            jax_grad(jnp.array([1.0, 2.0]))
    else:  # JAX's gap: zeros
        assert not np.asarray(jax_grad(jnp.array([1.0, 2.0]))).any()


def test_a_conversion_beside_a_differentiated_output_is_fine():
    # the output still depends on the input: the gradient is that of the tensor part
    # (JAX's value_and_grad with has_aux reads the loss the same way, after the fact)
    def f(w):
        loss = (w * w).sum()
        return loss, {"loss": loss.item(), "first": float(w[0])}

    g, aux = F.grad(f, has_aux=True)(np.array([1.0, 2.0]))
    np.testing.assert_allclose(g, [2.0, 4.0])
    assert aux == {"loss": 5.0, "first": 1.0}
    np.testing.assert_allclose(F.grad(lambda w: (w * w).sum() * float(w.sum().detach()))(
        np.array([1.0, 2.0])), [6.0, 12.0])


@pytest.mark.parametrize("kind", ["float", "int", "complex", "item", "tolist", "detach"])
def test_a_conversion_of_a_tensor_requiring_grad_warns_as_in_torch(kind):
    """float() of a tensor that requires grad warns (the number carries no gradient: a
    partial cut is not silent), as PyTorch does; int(), item(), tolist() and a detached
    tensor do not, as in PyTorch. complex() warns too, where PyTorch is silent (the same
    cut, for a complex parameter)."""
    import warnings

    import torch

    convert = {"float": float, "int": int, "complex": complex,
               "item": lambda t: t.item(), "tolist": lambda t: t.tolist(),
               "detach": lambda t: float(t.detach())}[kind]

    def warned(lib):
        x = lib.tensor(2.0, requires_grad=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            value = convert(x * x)
        return value, [str(w.message) for w in caught if w.category is UserWarning]

    (ours, our_warnings), (theirs, _) = warned(yaad), warned(torch)
    assert ours == theirs and type(ours) is type(theirs)
    # PyTorch 2.13 warns for float() only, once per process (TORCH_WARN_ONCE: an earlier
    # test may have used it up, so its warnings cannot be compared here run by run).
    assert bool(our_warnings) == (kind in ("float", "complex")), our_warnings
    if our_warnings:
        assert f"{kind}() of a tensor that requires grad" in our_warnings[0]
        assert "detach()" in our_warnings[0]
