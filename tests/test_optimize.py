"""yaad.optimize.minimize: SciPy methods with yaad gradients, real and complex, structures."""

import numpy as np
import pytest

import yaad
from yaad.optimize import minimize

rng = np.random.default_rng(0)
M = rng.standard_normal((4, 4))
H = M @ M.T + 4 * np.eye(4)  # positive definite
B = rng.standard_normal(4)


def quad(x):
    return 0.5 * (x @ (H @ x)) - (B * x).sum() + 0.01 * (x ** 4).sum()


def quad_np(x):
    return 0.5 * x @ H @ x - B @ x + 0.01 * np.sum(x ** 4)


@pytest.mark.parametrize("method", ["L-BFGS-B", "BFGS", "CG", "Newton-CG", "trust-ncg",
                                    "trust-krylov", "trust-exact", "dogleg", "trust-constr",
                                    "Nelder-Mead", "SLSQP", "TNC"])
def test_methods_agree_with_scipy_on_numpy_function(method):
    import scipy.optimize

    reference = scipy.optimize.minimize(quad_np, np.zeros(4), method="BFGS", tol=1e-12).x
    options = {"maxiter": 20000, "xatol": 1e-10, "fatol": 1e-14} if method == "Nelder-Mead" \
        else None
    res = minimize(quad, np.zeros(4), method=method, tol=1e-10, options=options)
    assert isinstance(res.x, np.ndarray) and res.x.shape == (4,)
    np.testing.assert_allclose(res.x, reference, atol=1e-5)
    np.testing.assert_allclose(res.fun, quad_np(reference), rtol=1e-9)


def test_complex_parameters_as_real_pairs():
    # L(z) = |A z - y|^2 with complex A, y: the minimiser solves the least-squares problem.
    A = rng.standard_normal((6, 3)) + 1j * rng.standard_normal((6, 3))
    y = rng.standard_normal(6) + 1j * rng.standard_normal(6)
    expected = np.linalg.lstsq(A, y, rcond=None)[0]

    def loss(z):
        r = A @ z - y
        return (r.real ** 2 + r.imag ** 2).sum()

    for method in ("L-BFGS-B", "Newton-CG", "trust-exact"):
        res = minimize(loss, np.zeros(3, dtype=complex), method=method, tol=1e-12)
        assert res.x.dtype == np.complex128
        np.testing.assert_allclose(res.x, expected, atol=1e-6)
        np.testing.assert_allclose(res.jac, 0, atol=1e-5)


def test_structures_kinds_and_dtypes():
    x0 = {"w": yaad.tensor(np.ones((2, 2), dtype=np.float32)),
          "rest": [0.0, (np.array([1 + 1j]), 3)]}

    def loss(p):
        w, (c, k) = p["w"], p["rest"][1]
        d = c - 1j
        return (((w - 2) ** 2).sum() + (p["rest"][0] + 1) ** 2 + (d * d.conj()).real.sum()
                + (k - 5) ** 2)

    seen = []
    res = minimize(loss, x0, callback=lambda x: seen.append(x))
    assert res.success
    w = res.x["w"]
    assert isinstance(w, yaad.Tensor) and w.dtype == np.float32
    np.testing.assert_allclose(w.data, 2, atol=1e-4)
    first, (c, k) = res.x["rest"]
    assert isinstance(first, float) and abs(first + 1) < 1e-5
    assert c.dtype == np.complex128 and abs(c[0] - 1j) < 1e-5
    assert abs(k - 5) < 1e-5  # the integer leaf was optimised as a float
    assert len(seen) == res.nit and isinstance(seen[0]["w"], yaad.Tensor)
    np.testing.assert_array_equal(x0["w"].data, 1)  # x0 untouched


def test_gradient_passed_to_scipy_is_exact():
    calls = []

    def loss(x):
        calls.append(1)
        return (yaad.sin(x) * x).sum()

    res = minimize(loss, np.array([0.5, -0.3]), method="BFGS",
                   options={"maxiter": 1})
    x = np.array([0.5, -0.3])
    # after one BFGS step the reported gradient is the analytical one at res.x
    np.testing.assert_allclose(res.jac, np.sin(res.x) + res.x * np.cos(res.x), rtol=1e-10)
    assert np.all(np.isfinite(x))


def test_bounds_and_constant_objective():
    res = minimize(lambda x: ((x - 3) ** 2).sum(), np.zeros(2), bounds=[(0, 1), (-1, 5)])
    np.testing.assert_allclose(res.x, [1, 3], atol=1e-6)
    res = minimize(lambda x: yaad.tensor(2.0), np.zeros(2))
    assert res.fun == 2.0 and res.success


def test_errors():
    with pytest.raises(ValueError, match="real scalar"):
        minimize(lambda x: x * 2, np.zeros(2))
    with pytest.raises(ValueError, match="real scalar"):
        minimize(lambda x: (x * 1j).sum(), np.zeros(2))
    with pytest.raises(TypeError, match="dtype"):
        minimize(lambda x: x, np.array(["a"]))
