"""yaad on Dask arrays, on a ``dask.distributed`` LocalCluster of worker processes.

A tensor over a chunked ``dask.array`` records lazily: the forward values and the
gradients are Dask graphs, computed only when the user asks (``yaad.compute``). Each
case runs the same program on NumPy arrays and on Dask arrays; the values and the
gradients must agree to 1e-12. Nothing may be computed while recording or during
backward (a scheduler that refuses to run is set around both). The cluster (2 worker
processes, 1 thread each, a memory limit per worker, loopback only) is started once for
the module; no worker may be restarted (the nanny restarts a worker that goes over its
memory limit) and none may exceed its limit.
"""

from __future__ import annotations

import sys
from pathlib import Path

import dask.array as da
import distributed
import numpy as np
import pytest

import yaad

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # benchmarks/ is a top-level package of the repository
    sys.path.insert(0, str(ROOT))

from benchmarks.workloads import _w4_floor, _w4_loss  # noqa: E402

MEMORY_LIMIT = 400 * 2**20  # bytes per worker


def _peak_rss() -> int:
    """The peak resident memory of the calling process since it started, in bytes: Linux's
    VmHWM (``ru_maxrss`` keeps the starting process's peak across ``exec``: a worker
    started by a large pytest process would report that one's)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise OSError("no VmHWM in /proc/self/status")


@pytest.fixture(scope="module")
def client():
    """A LocalCluster of 2 worker processes (1 thread each, MEMORY_LIMIT each) on the
    loopback interface, and a client that is the default scheduler while it is open."""
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
        memory_limit=MEMORY_LIMIT, dashboard_address=None)
    client = distributed.Client(cluster)
    client.started_workers = sorted(client.scheduler_info()["workers"])
    try:
        yield client
    finally:
        client.close()
        cluster.close()


def _refuse(dsk, keys, **kwargs):
    raise AssertionError("a Dask graph was computed while recording or during backward")


class no_compute:
    """Make any computation of a Dask collection raise (``np.asarray`` of a Dask array,
    ``bool`` of one, ``.compute()``) inside the block."""

    def __enter__(self):
        import dask

        self._config = dask.config.set(scheduler=_refuse)
        self._config.__enter__()

    def __exit__(self, *exc):
        self._config.__exit__(*exc)


def _chunked(a: np.ndarray, chunks: tuple | None = None) -> object:
    """``a`` as a Dask array with ``chunks``, by default (about) two along each axis."""
    return da.from_array(a, chunks=chunks or tuple(max(1, (n + 1) // 2) for n in a.shape))


def _scalar_loss(out):
    """A real scalar from an op's output, for backward (|out|^2 summed)."""
    if out.ndim == 0 and out.dtype.kind != "c":
        return out
    return yaad.sum(yaad.abs(out) ** 2)


def _check(fn, arrays, chunks=None, rtol=1e-12):
    """Run ``fn`` on tensors over NumPy ``arrays`` and over Dask chunkings of them (by
    ``chunks``, one per array): lazily, then computed in one pass; values and gradients
    agree to ``rtol``."""
    ref = [yaad.tensor(a, requires_grad=True) for a in arrays]
    ref_loss = _scalar_loss(fn(*ref))
    ref_loss.backward()
    lazy = [yaad.tensor(_chunked(a, c), requires_grad=True)
            for a, c in zip(arrays, chunks or [None] * len(arrays))]
    with no_compute():
        out = fn(*lazy)
        assert isinstance(out.data, da.Array), type(out.data)
        loss = _scalar_loss(out)
        loss.backward()
        for t in lazy:
            assert isinstance(t.grad, da.Array), type(t.grad)
            assert t.grad.shape == t.shape and t.grad.dtype == t.dtype
    value, *grads = yaad.compute(loss, *(t.grad for t in lazy))
    assert isinstance(value, (np.ndarray, np.generic)) and value.dtype == ref_loss.dtype
    np.testing.assert_allclose(value, ref_loss.data, rtol=rtol, atol=0)
    for g, t in zip(grads, ref):
        assert g.dtype == t.grad.dtype and g.shape == t.grad.shape
        np.testing.assert_allclose(g, t.grad, rtol=rtol, atol=rtol * np.abs(t.grad).max())


def _arrays(rng, *shapes, kind="real"):
    out = []
    for s in shapes:
        a = rng.standard_normal(s)
        if kind == "positive":
            a = np.abs(a) + 0.5
        elif kind == "complex":
            a = a + 1j * rng.standard_normal(s)
        out.append(a)
    return out


Y = yaad
CASES = {
    # elementwise, with broadcasting, complex numbers, selections
    "w4": (lambda x: _w4_loss(yaad, (x,), {}), [(12,)]),
    "add_broadcast": (lambda x, y: x + y, [(4, 3), (3,)]),
    "mul_broadcast": (lambda x, y: x * y, [(4, 1), (1, 3)]),
    "div_pow": (lambda x, y: x / y + x ** 3, [(4, 3), (4, 3)], "positive"),
    "sqrt_log_tanh": (lambda x: Y.sqrt(x) * Y.log(x) + Y.tanh(x), [(5, 2)], "positive"),
    "complex": (lambda x, y: Y.exp(x) * Y.conj(y) + Y.real(x) * Y.imag(y),
                [(4,), (4,)], "complex"),
    "maximum_where_clip": (lambda x, y: Y.maximum(x, y) + Y.where(x > 0, x, 0.0)
                           + Y.clip(y, -0.5, 0.5), [(6,), (6,)]),
    "where_nan_branch": (lambda x: Y.where(x > 0, Y.log(Y.abs(x)), 0.0), [(6,)]),
    # reductions
    "sum_mean": (lambda x: Y.sum(x, axis=0) + Y.mean(x, axis=0), [(4, 3)]),
    "var_std": (lambda x: Y.var(x) + Y.std(x, axis=0), [(4, 3)]),
    "prod_max_min": (lambda x: Y.prod(x, axis=0) + Y.max(x, axis=0) + Y.min(x, axis=0),
                     [(4, 3)]),
    "cumsum_cumprod": (lambda x: Y.cumsum(x, axis=0) + Y.cumprod(x, axis=1), [(4, 3)]),
    # products and contractions
    "matmul_dot": (lambda x, y: x @ y + Y.dot(x, y), [(4, 3), (3, 5)]),
    "outer_kron_vdot": (lambda x, y: Y.sum(Y.outer(x, y)) + Y.sum(Y.kron(x, y))
                        + Y.vdot(x, y), [(4,), (4,)]),
    "batched_matmul": (lambda x, y: x @ y, [(2, 4, 3), (2, 3, 5)]),
    "einsum": (lambda x, y, z: Y.einsum("ij,jk,kl->il", x, y, z), [(4, 3), (3, 5), (5, 2)]),
    "einsum_trace": (lambda x: Y.einsum("ii->", x), [(4, 4)]),
    "tensordot": (lambda x, y: Y.tensordot(x, y, axes=([1, 2], [0, 1])),
                  [(4, 3, 2), (3, 2, 5)]),
    "trace_diagonal": (lambda x: Y.trace(x) + Y.sum(Y.diagonal(x)), [(4, 4)]),
    "norms": (lambda x: Y.linalg.norm(x) + Y.linalg.vector_norm(x, ord=3, axis=0)
              + Y.linalg.vector_norm(x, ord=np.inf, axis=1), [(3, 3)]),
    "logsumexp_softmax": (lambda x: Y.logsumexp(x, axis=0) + Y.sum(Y.softmax(x, axis=0), 1)
                          + Y.sum(Y.log_softmax(x, axis=1), 1), [(4, 4)]),
    # shape ops and indexing
    "reshape_transpose": (lambda x: Y.transpose(Y.reshape(x, (2, 2, 3))), [(4, 3)]),
    "swapaxes": (lambda x: Y.swapaxes(x, 0, 2), [(4, 3, 2)]),
    "getitem": (lambda x: x[1:3, ::2] + x[np.array([0, 2]), :2]
                + x[np.array([True, False, False, True])][:, 1:], [(4, 3)]),
    "concatenate_stack": (lambda x, y: Y.concatenate([x, y], axis=1).sum(1)
                          + Y.stack([x, y]).sum((0, 2)), [(4, 3), (4, 3)]),
    "flip_roll_pad_tril_astype": (lambda x: Y.flip(x, 0) + Y.roll(x, 1, axis=0)
                                  + Y.pad(x, 1)[1:-1, 1:-1] + Y.tril(x)
                                  + Y.real(x.astype(np.complex128)), [(4, 4)]),
    "broadcast_squeeze": (lambda x: Y.squeeze(Y.expand_dims(Y.broadcast_to(x, (4, 3)), 0), 0),
                          [(3,)]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_values_and_gradients_equal_numpys(client, rng, name):
    fn, shapes, *kind = CASES[name]
    _check(fn, _arrays(rng, *shapes, kind=kind[0] if kind else "real"))


def _spd(rng, n):
    s = rng.standard_normal((n, n))
    return s @ s.T + n * np.eye(n)


LINALG = {
    # (dask.array.linalg: QR and SVD of a tall-and-skinny matrix in row chunks, Cholesky,
    # solve; the chunks of each argument)
    "qr": (lambda x: Y.linalg.qr(x)[1] + Y.linalg.qr(x)[0][:3], [(12, 3)], [(4, 3)]),
    "cholesky": (lambda x: Y.linalg.cholesky(x), ["spd"], [(2, 2)]),
    "solve": (lambda x, y: Y.linalg.solve(x, y), ["spd", (4, 2)], [(2, 2), (2, 1)]),
    "inv": (lambda x: Y.linalg.inv(x), ["spd"], [(2, 2)]),
    "solve_vector": (lambda x, y: Y.linalg.solve(x, y), ["spd", (4,)], [(4, 4), (4,)]),
    "solve_triangular": (lambda x, y: Y.linalg.solve_triangular(x, y, lower=True),
                         ["spd", (4, 3)], [(2, 2), (2, 3)]),
}


@pytest.mark.parametrize("name", list(LINALG))
def test_linalg_through_dask_array_linalg(client, rng, name):
    fn, shapes, chunks = LINALG[name]
    arrays = [_spd(rng, 4) if s == "spd" else rng.standard_normal(s) for s in shapes]
    _check(fn, arrays, chunks=chunks, rtol=1e-10)


def test_svd_lazily_and_its_gradient_refused(client, rng):
    # A tall-and-skinny SVD runs lazily (dask.array.linalg.svd, its values equal NumPy's);
    # its gradient reads the singular values (degeneracy checks), so on Dask it refuses,
    # naming the op, without computing anything.
    a = rng.standard_normal((12, 3))
    x = yaad.tensor(da.from_array(a, chunks=(4, 3)), requires_grad=True)
    with no_compute():
        u, s, vh = yaad.linalg.svd(x, full_matrices=False)
        assert isinstance(s.data, da.Array) and u.shape == (12, 3) and vh.shape == (3, 3)
        with pytest.raises(yaad.backend.BackendError, match=r"yaad\.linalg\.svd.*dask"):
            yaad.sum(s).backward()
    u, s, vh = yaad.compute(u, s, vh)
    np.testing.assert_allclose(s, np.linalg.svd(a, compute_uv=False), rtol=1e-12)
    np.testing.assert_allclose((u * s) @ vh, a, atol=1e-12)


REFUSED = {
    # op name in the error, the program (on a tensor over a (12, 4) array in (6, 2) chunks)
    "linalg.eigh": lambda x: Y.linalg.eigh(x[:4] + Y.swapaxes(x[:4], 0, 1))[0],
    "linalg.qr": lambda x: Y.linalg.qr(x)[1],  # (column chunks: not tall-and-skinny)
    "linalg.det": lambda x: Y.linalg.det(x[:4]),
    "linalg.expm": lambda x: Y.linalg.expm(x[:4]),
    "linalg.slogdet": lambda x: Y.linalg.slogdet(x[:4]),
    "linalg.eig": lambda x: Y.linalg.eigvals(x[:4]),
    "linalg.pinv": lambda x: Y.linalg.pinv(x),
    "argsort": lambda x: Y.sort(x, axis=0),
    "fft.fft": lambda x: Y.fft.fft(x, axis=0),  # (an axis split in chunks)
    "scatter_add": lambda x: Y.sum(x[np.array([0, 0, 1])]).backward(),  # (a repeat)
}


@pytest.mark.parametrize("name", list(REFUSED))
def test_ops_dask_lacks_raise_naming_the_op_and_the_backend(rng, name):
    # ... before computing anything (a scheduler that refuses to run is set)
    x = yaad.tensor(da.from_array(rng.standard_normal((12, 4)), chunks=(6, 2)),
                    requires_grad=True)
    with no_compute(), pytest.raises(yaad.backend.BackendError) as info:
        REFUSED[name](x)
    assert f"yaad.{name}" in str(info.value) and "dask" in str(info.value)


def test_w4_against_the_hand_written_gradient(client, rng):
    # The W4 loss of benchmarks/workloads.py on 3 chunks, against its analytic floor.
    x = rng.standard_normal(3000)
    t = yaad.tensor(da.from_array(x, chunks=1000), requires_grad=True)
    with no_compute():
        loss = _w4_loss(yaad, (t,), {})
        loss.backward()
    value, grad = yaad.compute(loss, t.grad)
    floor_value, (floor_grad,) = _w4_floor((x,), {})
    np.testing.assert_allclose(value, floor_value, rtol=1e-12)
    np.testing.assert_allclose(grad, floor_grad, rtol=1e-12, atol=1e-15)


def _mps_norm(sites):
    """<psi|psi> of an open-boundary MPS (site tensors of shape (left, physical, right))."""
    env = yaad.einsum("apb,apc->bc", sites[0], yaad.conj(sites[0]))
    for a in sites[1:]:
        env = yaad.einsum("bc,bpd,cpe->de", env, a, yaad.conj(a))
    return yaad.real(yaad.einsum("dd->", env))


def test_mps_norm_contraction(client, rng):
    d, D = 2, 4
    shapes = [(1, d, D)] + [(D, d, D)] * 2 + [(D, d, 1)]
    arrays = [a / np.sqrt(D) for a in _arrays(rng, *shapes, kind="complex")]
    _check(lambda *sites: _mps_norm(sites), arrays)


def test_compute_shares_the_forward_pass(rng):
    # One dask.compute for the loss and the gradient: each chunk of sin(x) is computed
    # once, though both the loss and the gradient need it.
    import dask
    from dask.callbacks import Callback

    x = yaad.tensor(da.from_array(rng.standard_normal(40), chunks=10), requires_grad=True)
    s = yaad.sin(x)
    loss = yaad.sum(s * s)
    loss.backward()
    runs: list = []

    class Count(Callback):
        def _start(self, dsk):
            runs.append("start")

        def _pretask(self, key, dsk, state):
            runs.append(key)

    with dask.config.set(scheduler="sync"), Count():
        value, grad = yaad.compute(loss, x.grad)
    sin_name = s.data.name
    assert runs.count("start") == 1
    assert sorted(k for k in runs if isinstance(k, tuple) and k[0] == sin_name) == [
        (sin_name, i) for i in range(4)]
    xn = x.data.compute()
    np.testing.assert_allclose(value, np.sum(np.sin(xn) ** 2), rtol=1e-12)
    np.testing.assert_allclose(grad, 2 * np.sin(xn) * np.cos(xn), rtol=1e-12)


def test_compute_returns_numpy_values_as_they_are():
    x = yaad.tensor([1.0, 2.0], requires_grad=True)
    loss = (x * x).sum()
    loss.backward()
    a = np.arange(3.0)
    value, grad, same = yaad.compute(loss, x.grad, a)
    assert value is loss.data and grad is x.grad and same is a
    assert yaad.compute() == ()


def test_gradient_accumulates_lazily(client, rng):
    # Two backward passes add into .grad: still a Dask array, equal to twice one pass.
    xn = rng.standard_normal((6, 4))
    x = yaad.tensor(_chunked(xn), requires_grad=True)
    with no_compute():
        for _ in range(2):
            yaad.sum(yaad.sin(x) * x).backward()
        assert isinstance(x.grad, da.Array)
    (grad,) = yaad.compute(x.grad)
    np.testing.assert_allclose(grad, 2 * (np.cos(xn) * xn + np.sin(xn)), rtol=1e-12)


def test_gradient_larger_than_a_worker_memory(client):
    # W4 and its gradient on 5.5e7 float64 (440 MB, more than one worker's limit of 400
    # MiB), generated on the workers; the gradient is checked on a slice against the floor.
    n, chunk = 55_000_000, 1_100_000
    x = da.random.default_rng(1).standard_normal(n, chunks=chunk)
    t = yaad.tensor(x, requires_grad=True)
    with no_compute():
        loss = _w4_loss(yaad, (t,), {})
        loss.backward()
        first = t.grad[:chunk]
        total = yaad.sum(t.grad)  # the whole gradient goes through the workers
        xs = x[:chunk]
    value, first, total, xs = yaad.compute(loss, first, total, xs)
    floor_value, (floor_grad,) = _w4_floor((xs,), {})
    np.testing.assert_allclose(first, floor_grad, rtol=1e-12, atol=1e-15)
    assert np.isfinite(value) and np.isfinite(total) and value > 0


def test_no_worker_restarted_nor_over_its_memory_limit(client):
    # (runs last in this module: the cluster has done all the work above)
    assert sorted(client.scheduler_info()["workers"]) == client.started_workers
    peaks = client.run(_peak_rss)
    assert len(peaks) == 2
    assert all(0 < p < MEMORY_LIMIT for p in peaks.values()), peaks


def test_a_compiled_function_replays_lazily_on_dask(rng):
    # Dask arrays have NumPy's dtypes: the compiled signature tells them apart by their
    # class, so the NumPy replay never meets a Dask array (it would compute it); the Dask
    # signature records and replays lazily, its replay building the graph (more cases:
    # tests/compiled/test_compile_foreign.py).
    f = yaad.compile(lambda x: yaad.sum(yaad.sin(x) * x))
    x = rng.standard_normal(6)
    for _ in range(3):
        f(yaad.tensor(x, requires_grad=True)).backward()
    assert f.stats == {"replayed": 1, "recorded": 2, "eager": 0}
    for _ in range(3):
        t = yaad.tensor(da.from_array(x, chunks=3), requires_grad=True)
        with no_compute():
            out = f(t)
            out.backward()
        assert isinstance(out.data, da.Array) and isinstance(t.grad, da.Array)
        value, grad = yaad.compute(out, t.grad)
        np.testing.assert_allclose(value, np.sum(np.sin(x) * x), rtol=1e-12)
        np.testing.assert_allclose(grad, np.sin(x) + x * np.cos(x), rtol=1e-12)
    assert f.stats == {"replayed": 2, "recorded": 4, "eager": 0}
