"""numpy.matvec / vecmat / vecdot as yaad ops (NumPy 2's gufuncs), real and complex."""

import numpy as np
import pytest

import yaad
from yaad.testing import gradcheck, gradgradcheck

rng = np.random.default_rng(11)
A = rng.standard_normal((2, 3, 4))
V = rng.standard_normal(4)
W = rng.standard_normal((2, 3))
CA, CW = A + 1j * rng.standard_normal(A.shape), W + 1j * rng.standard_normal(W.shape)


@pytest.mark.parametrize("name, args", [
    ("matvec", (A, V)), ("matvec", (CA, V)), ("vecmat", (W, A)), ("vecmat", (CW, CA)),
    ("vecdot", (A, A)), ("vecdot", (CA, A)),
])
def test_values_dtypes_and_gradients(name, args):
    ours, theirs = getattr(yaad, name), getattr(np, name)
    out = ours(*[yaad.tensor(a) for a in args])
    np.testing.assert_allclose(out.data, theirs(*args), rtol=1e-12)
    assert out.dtype == theirs(*args).dtype
    assert isinstance(theirs(*[yaad.tensor(a) for a in args]), yaad.Tensor)  # dispatch
    assert gradcheck(ours, args)
    assert gradgradcheck(ours, args)


def test_float32_stays_float32():
    a = yaad.tensor(A.astype(np.float32), requires_grad=True)
    v = yaad.tensor(V.astype(np.float32), requires_grad=True)
    yaad.matvec(a, v).sum().backward()
    assert a.grad.dtype == np.float32 and v.grad.dtype == np.float32
