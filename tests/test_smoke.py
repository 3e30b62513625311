import numpy as np

import yaad


def test_seed_example_trace_of_product():
    rng = np.random.default_rng(0)
    a, b = rng.random((30, 30)), rng.random((30, 30))
    x1 = yaad.tensor(a, requires_grad=True)
    x2 = yaad.tensor(b, requires_grad=True)
    loss = yaad.trace(x1 @ x2)
    loss.backward()
    assert isinstance(x1.grad, np.ndarray)
    np.testing.assert_allclose(x1.grad, b.T)
    np.testing.assert_allclose(x2.grad, a.T)
    np.testing.assert_allclose(loss.item(), np.trace(a @ b))


def test_complex_convention_abs_squared():
    z = yaad.tensor(3 + 4j, requires_grad=True)
    (abs(z) ** 2).backward()
    assert z.grad == 6 + 8j
