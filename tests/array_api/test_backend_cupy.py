"""The op-case table and the other op families on CuPy arrays (a GPU): values and
derivatives equal NumPy's, results CuPy arrays on the device, or a clear BackendError.

Skipped where CuPy or a CUDA device is missing (``make gpu-check`` runs it with the GPU
benchmarks; docs/backends.md says whether a GPU run has happened).
"""

import functools

import numpy as np
import pytest

import yaad
from tests.support import backend_table
from yaad.core.backend import BackendError

cupy = pytest.importorskip("cupy")
try:
    _DEVICES = cupy.cuda.runtime.getDeviceCount()
except Exception:  # noqa: BLE001  (no driver, no device)
    _DEVICES = 0
if not _DEVICES:
    pytest.skip("no CUDA device", allow_module_level=True)

# The GPU's libm and cupyx.scipy.special differ from the CPU's in the last bits.
RTOL, ATOL = 1e-10, 1e-12


def _gpu(v):
    return cupy.asarray(v) if isinstance(v, np.ndarray) else v


def _host(v):
    assert isinstance(v, cupy.ndarray), f"expected a CuPy array, got {type(v).__name__}"
    return v.get()


@functools.cache
def outcome(name, dtype):
    return backend_table.outcome(name, dtype, _gpu, _host, RTOL, ATOL)


@pytest.mark.parametrize("name,dtype", backend_table.cases())
def test_op_case_table_on_cupy(name, dtype):
    result, message = outcome(name, dtype)
    if result == "refuses":
        assert "cupy" in message and "yaad." in message, message


def test_op_case_table_counts_on_cupy(capsys):
    results = {case: outcome(*case)[0] for case in backend_table.cases()}
    with capsys.disabled():
        print("\n" + backend_table.summary(results, "cupy"))
    # NumPy's ufuncs and scipy.special's (through cupyx.scipy.special) cover most rows
    assert results[("sin", "float64")] == results[("erf", "float64")] == "works"


R = np.random.default_rng(3)
A, B = R.standard_normal((3, 4)), R.standard_normal((4,))
H = R.standard_normal((2, 4, 4)) + 1j * R.standard_normal((2, 4, 4))
H = H + np.swapaxes(H.conj(), -1, -2)

FAMILIES = {
    "reduction": (lambda a: yaad.sum(yaad.mean(a, axis=0) * a), A),
    "shape": (lambda a: yaad.sum(yaad.transpose(yaad.reshape(a, (2, 6)))[1:, :] ** 2), A),
    "matmul": (lambda a, b: yaad.sum(yaad.matmul(a, b) ** 2), A, B),
    "einsum": (lambda a: yaad.einsum("ij,ij->", a, a), A),
    "eigh batched complex": (lambda h: yaad.sum(yaad.linalg.eigh(h)[0] ** 2), H),
    "svd": (lambda a: yaad.sum(yaad.linalg.svd(a, full_matrices=False)[1]), A),
    "qr": (lambda a: yaad.sum(yaad.linalg.qr(a.T)[1] ** 2), A),
    "solve": (lambda h, b: yaad.sum(yaad.abs(yaad.linalg.solve(h[0] + 10 * yaad.eye(4),
                                                                 b)) ** 2), H, B),
    "cholesky": (lambda h: yaad.sum(yaad.abs(yaad.linalg.cholesky(
        h[0] @ yaad.conj(h[0]).T + yaad.eye(4))) ** 2), H),
    "expm": (lambda a: yaad.sum(yaad.linalg.expm(a[:, :3] @ a[:, :3].T / 4)), A),
}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_op_families_on_cupy(family):
    f, *xs = FAMILIES[family]
    expected_ts = [yaad.tensor(x, requires_grad=True) for x in xs]
    expected = f(*expected_ts)
    expected.backward()
    ts = [yaad.tensor(cupy.asarray(x), requires_grad=True) for x in xs]
    try:
        out = f(*ts)
        out.backward()
    except BackendError as e:
        assert "cupy" in str(e)
        pytest.xfail(f"refuses clearly: {e}")
    np.testing.assert_allclose(_host(out.data), expected.data, rtol=RTOL, atol=ATOL)
    for t, e in zip(ts, expected_ts):
        np.testing.assert_allclose(_host(t.grad), e.grad, rtol=1e-8, atol=1e-10)


def test_moves_between_host_and_device_are_explicit_and_recorded():
    x = yaad.tensor(A, requires_grad=True)
    g = x.to("cuda")
    assert isinstance(g.data, cupy.ndarray)
    with pytest.raises(BackendError, match="mixes arrays of two backends"):
        g + x
    with pytest.raises(TypeError, match="move it first"):
        g.numpy()
    yaad.sum(yaad.exp(g)).to("cpu").backward()
    np.testing.assert_allclose(x.grad, np.exp(A), rtol=RTOL)
    z = yaad.zeros((2, 3), device="cuda")
    assert isinstance(z.data, cupy.ndarray) and z.shape == (2, 3)


@pytest.mark.parametrize("name", sorted(backend_table.LINALG))
def test_linalg_and_contractions_on_cupy(name):
    # the table of tests/support/backend_table.py: einsum, tensordot, trace, logsumexp,
    # eigh/svd/qr/cholesky/solve/inv/det/slogdet/expm with their degenerate cases, through
    # the array API bodies (cuSOLVER, cuBLAS), values and derivatives against NumPy's
    assert backend_table.linalg_outcome(name, _gpu, _host, RTOL, ATOL) in ("works", "gauge")


INDICES = {
    "slice, array": (slice(None), np.array([0, 2, 2, -1])),
    "two arrays apart": (np.array([1, 3]), slice(None), np.array([0, 2])),
    "mask": (np.arange(20).reshape(4, 5) % 3 == 0,),
    "int and array": (np.array([0, 2, 2]), 1),
}


@pytest.mark.parametrize("case", sorted(INDICES))
def test_advanced_indexing_and_its_scatter_on_cupy(case):
    idx = INDICES[case]
    a = R.standard_normal((4, 5, 3))
    x = yaad.tensor(a, requires_grad=True)
    y = x[idx]
    cot = R.standard_normal(y.shape)
    y.backward(gradient=cot)
    g = yaad.tensor(cupy.asarray(a), requires_grad=True)
    yg = g[idx]
    yg.backward(gradient=cupy.asarray(cot))  # cupyx.scatter_add: repeats add up
    np.testing.assert_allclose(_host(yg.data), y.data, rtol=RTOL)
    np.testing.assert_allclose(_host(g.grad), x.grad, rtol=RTOL)


def test_compile_replays_on_cupy():
    # the same code path as on array_api_strict (tests/compiled/test_compile_foreign.py): recorded
    # and replayed on the device, each op in CuPy's namespace
    f = yaad.compile(lambda x: yaad.sum(yaad.sin(x) * x))
    for _ in range(3):  # recorded and replayed on NumPy arrays of the same shape and dtype
        f(yaad.tensor(A, requires_grad=True)).backward()
    for _ in range(3):
        t = yaad.tensor(cupy.asarray(A), requires_grad=True)
        out = f(t)
        out.backward()
        assert isinstance(out.data, cupy.ndarray) and isinstance(t.grad, cupy.ndarray)
        np.testing.assert_allclose(_host(out.data), np.sum(np.sin(A) * A), rtol=RTOL)
        np.testing.assert_allclose(_host(t.grad), np.sin(A) + A * np.cos(A), rtol=RTOL)
    assert f.stats == {"replayed": 2, "recorded": 4, "eager": 0}
