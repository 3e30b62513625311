"""The native backend of yaad.compile (small linear algebra as one numba program).

Each program is compiled with the native backend forced (kept whatever its speed), and
its loss and gradients are compared, on inputs that change from call to call, with the
NumPy replay of the same recording (``fused=False``), with eager yaad and with PyTorch
(an independent oracle), to 1e-12 of the largest entry; dtypes and shapes exactly.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import yaad as Y
from yaad.compiled import fused, native

pytest.importorskip("numba")
torch = pytest.importorskip("torch")

RNG = np.random.default_rng(16)
CALLS = 4  # calls per program: record, verify, then replays on new inputs


@pytest.fixture
def force_native(monkeypatch):
    monkeypatch.setattr(native, "FORCE", [True])


def _end(c):
    return next(iter(c._trees.values())).root.end


def _uses_native(c) -> bool:
    end = _end(c)
    return (bool(end.fused_call) and isinstance(end.fused_call[0], native._Program)
            and end.fused_bwd is not None and isinstance(end.fused_bwd[0], native._Program))


class Torch:
    """The few functions the programs below use, from PyTorch."""

    einsum = staticmethod(torch.einsum)
    real = staticmethod(torch.real)
    imag = staticmethod(torch.imag)
    conj = staticmethod(torch.conj)
    cos = staticmethod(torch.cos)
    sin = staticmethod(torch.sin)
    exp = staticmethod(torch.exp)
    tanh = staticmethod(torch.tanh)
    abs = staticmethod(torch.abs)
    vdot = staticmethod(torch.vdot)
    expm = staticmethod(torch.linalg.matrix_exp)

    @staticmethod
    def tensordot(a, b, axes):
        return torch.tensordot(a, b, dims=axes)

    @staticmethod
    def sum(x, axis=None, keepdims=False):
        return x.sum() if axis is None else x.sum(dim=axis, keepdim=keepdims)

    @staticmethod
    def mean(x, axis=None):
        return x.mean() if axis is None else x.mean(dim=axis)

    @staticmethod
    def transpose(x, axes):
        return x.permute(axes)

    @staticmethod
    def swapaxes(x, a, b):
        return x.transpose(a, b)

    @staticmethod
    def const(a):
        return torch.from_numpy(np.asarray(a))

    @staticmethod
    def moveaxis(x, a, b):
        return torch.movedim(x, a, b)

    @staticmethod
    def expand_dims(x, axis):
        return x.unsqueeze(axis)

    @staticmethod
    def squeeze(x, axis):
        return x.squeeze(axis)

    @staticmethod
    def diagonal(x, offset, axis1, axis2):
        return torch.diagonal(x, offset, axis1, axis2)

    broadcast_to = staticmethod(torch.broadcast_to)
    tan = staticmethod(torch.tan)
    sinh = staticmethod(torch.sinh)
    cosh = staticmethod(torch.cosh)
    expm1 = staticmethod(torch.expm1)
    log1p = staticmethod(torch.log1p)
    sign = staticmethod(torch.sgn)
    sqrt = staticmethod(torch.sqrt)
    log = staticmethod(torch.log)
    arctan = staticmethod(torch.arctan)

    @staticmethod
    def stack(xs, axis=0):
        return torch.stack(list(xs), dim=axis)

    @staticmethod
    def concatenate(xs, axis=0):
        return torch.cat(list(xs), dim=axis)

    @staticmethod
    def astype(x, dtype):
        return x.to(torch.from_numpy(np.empty(0, dtype)).dtype)


class Yaad:
    """The same functions from yaad."""

    einsum = staticmethod(Y.einsum)
    real = staticmethod(Y.real)
    imag = staticmethod(Y.imag)
    conj = staticmethod(Y.conj)
    cos = staticmethod(Y.cos)
    sin = staticmethod(Y.sin)
    exp = staticmethod(Y.exp)
    tanh = staticmethod(Y.tanh)
    abs = staticmethod(Y.abs)
    vdot = staticmethod(Y.vdot)
    expm = staticmethod(Y.linalg.expm)
    tensordot = staticmethod(Y.tensordot)
    sum = staticmethod(Y.sum)
    mean = staticmethod(Y.mean)
    transpose = staticmethod(Y.transpose)
    swapaxes = staticmethod(Y.swapaxes)

    @staticmethod
    def const(a):
        return np.asarray(a)

    moveaxis = staticmethod(Y.moveaxis)
    expand_dims = staticmethod(Y.expand_dims)
    squeeze = staticmethod(Y.squeeze)
    diagonal = staticmethod(Y.diagonal)
    broadcast_to = staticmethod(Y.broadcast_to)
    tan = staticmethod(Y.tan)
    sinh = staticmethod(Y.sinh)
    cosh = staticmethod(Y.cosh)
    expm1 = staticmethod(Y.expm1)
    log1p = staticmethod(Y.log1p)
    sign = staticmethod(Y.sign)
    sqrt = staticmethod(Y.sqrt)
    log = staticmethod(Y.log)
    arctan = staticmethod(Y.arctan)
    stack = staticmethod(Y.stack)
    concatenate = staticmethod(Y.concatenate)
    astype = staticmethod(Y.astype)


# Constants of the programs (the same arrays for every library).
H = RNG.standard_normal((8, 8)) + 1j * RNG.standard_normal((8, 8))
H = H + H.conj().T
KY = np.array([[0, -1], [1, 0]], complex)
CNOT = np.eye(4, dtype=complex)[[0, 1, 3, 2]].reshape(2, 2, 2, 2)
G1, G2 = RNG.standard_normal((3, 3)), RNG.standard_normal((3, 3))


def circuit(xp, theta):
    """A 3-qubit circuit: gates by einsum on a (2, 2, 2) complex state, <psi|H|psi>."""
    psi = xp.const(np.eye(8, dtype=complex)[0].reshape(2, 2, 2))
    c, s = xp.cos(theta / 2), xp.sin(theta / 2)
    for q, spec in enumerate(["Za,abc->Zbc", "Zb,abc->aZc", "Zc,abc->abZ"]):
        gate = c[q] * xp.const(np.eye(2, dtype=complex)) + s[q] * xp.const(KY)
        psi = xp.einsum(spec, gate, psi)
    psi = xp.einsum("YZab,abc->YZc", xp.const(CNOT), psi)
    flat = psi.reshape(-1)
    return xp.real(xp.vdot(flat, xp.const(H) @ flat))


def matrices(xp, a, b):
    """Matrix products (2-D, batched, matrix-vector), tensordot, transposes, axis sums,
    a mean."""
    m = a @ b + xp.transpose(a, (1, 0)) @ xp.const(G1) + xp.tensordot(a, b, ([0], [1]))
    batch = xp.einsum("ij,kj->ikj", m, b)  # (3, 3, 3)
    v = batch @ a[0]
    w = xp.swapaxes(batch, 0, 2).reshape(9, 3)
    return (xp.sum(xp.tanh(v), axis=1, keepdims=True).sum() + xp.mean(w * w)
            + xp.sum(xp.sum(batch, axis=(0, 2)) ** 2) + (m[1:, :2] * xp.const(G2)[:2, 1:]).sum())


def moves(xp, a, z):
    """The ops that move elements (moveaxis, expand_dims, squeeze, diagonal, broadcast_to),
    real functions, abs of complex values (its backward: their sign)."""
    b = xp.moveaxis(a, 0, 2)  # (3, 2, 4) -> (2, 4, 3)
    d = xp.diagonal(b[:, :3, :], 1, 1, 2)  # (2, 2)
    e = xp.squeeze(xp.expand_dims(d, 1), 1) * xp.broadcast_to(z[:2], (2, 2))
    f = xp.sqrt(a * a + 1.0) * xp.log(a * a + 2.0) + xp.arctan(a)
    return (xp.sum(xp.real(e * xp.conj(z[1:3]))) + xp.sum(f * xp.tanh(b).reshape(3, 2, 4))
            + xp.sum(xp.abs(z) ** 2))


def functions(xp, a):
    """One-operand einsums (a diagonal, a column sum) and the real functions."""
    d = xp.einsum("ii->i", a) + xp.einsum("ij->j", a)
    f = (xp.tan(a * 0.3) + xp.sinh(a) - xp.cosh(a * 0.5) + xp.expm1(a * 0.2)
         + xp.log1p(a * a) - a)
    return xp.sum(f * f) + xp.sum(d / (2.0 + d * d)) + xp.sum(xp.exp(-a))


def complex_arith(xp, z, x):
    """Complex arithmetic with broadcasting, conj, real, imag, abs, division."""
    y = z[:, None] * xp.conj(z)[None, :] + x[None, :] / (1.5 + xp.abs(z)[:, None])
    t = (y * 0.1j + 1.0) * xp.conj(y) - y / (3.0 + 0.5j * x[None, :])
    return xp.sum(xp.real(t) * xp.imag(y)) + xp.sum(xp.abs(t) ** 2)


def exponentials(xp, u):
    """A product of matrix exponentials (small expm, complex), and a fidelity."""
    h0 = xp.const(np.kron(np.diag([1.0, -1.0]), np.diag([1.0, -1.0])).astype(complex) / 2)
    h1 = xp.const(np.kron(np.array([[0.0, 1], [1, 0]]), np.eye(2)).astype(complex))
    U = xp.const(np.eye(4, dtype=complex))
    for k in range(3):
        U = xp.expm(-0.3j * (h0 + u[k] * h1)) @ U
    return xp.abs(xp.sum(xp.const(np.eye(4)[[0, 1, 3, 2]]) * U)) ** 2 / 16


def real_expm(xp, a):
    """expm of a real matrix, at a norm that needs scaling and squaring."""
    return xp.sum(xp.expm(a * 3.0) * xp.const(G1))


def products(xp, a, b, c, z):
    """Two-operand contractions that are one matrix product (BLAS's, in the native
    program) with each operand read straight or transposed and the output either way
    round; a vector-matrix, a matrix-vector, an outer and a full inner product; several
    contracted letters (an MPS transfer step, workload W7); complex."""
    d, e = xp.transpose(b, (1, 0)), xp.transpose(a, (1, 0))  # (5, 4), (4, 3)
    p1 = xp.einsum("ik,kj->ij", a, b)       # (3, 5)
    p2 = xp.einsum("kj,kl->jl", a, c)       # a read transposed: (4, 5)
    p3 = xp.einsum("ik,jk->ij", a, d)       # d read transposed: (3, 5)
    p4 = xp.einsum("ik,kj->ji", a, b)       # output the other way round: (5, 3)
    p5 = xp.einsum("ki,jk->ij", c, e)       # both transposed: (5, 4)
    t = xp.einsum("ab,asc->bsc", xp.tanh(c[:, :3]), a.reshape(3, 2, 2))  # (3, 2, 2)
    p6 = xp.einsum("bsc,bsd->cd", t, a.reshape(3, 2, 2))  # (2, 2)
    v, w = a[0] @ b, xp.tensordot(b, c[0], ([1], [0])) @ a[1]  # (5,), ()
    outer = xp.einsum("i,j->ij", a[1], c[2])
    inner = xp.einsum("ij,ij->", a, a)
    zz = xp.einsum("ab,bc->ca", z, xp.conj(z))
    return (xp.sum(p1 * p3) + xp.sum(xp.sin(p2)) + xp.sum(p5 * p5) + xp.sum(p4 * p4) + xp.sum(p6)
            + xp.sum(v * v) + w + xp.sum(xp.tanh(outer)) + inner * 0.1
            + xp.sum(xp.abs(zz)))


def gates(xp, theta, x):
    """Gates built from their angles by stack (of 0-d values, real into complex: astype,
    a complex exp) and applied by tensordot and moveaxis; stack along the last axis and
    concatenate along the middle one."""
    psi = xp.const(np.eye(8, dtype=complex)[0].reshape(2, 2, 2))
    for q in range(3):
        co, si = xp.cos(theta[q] / 2), xp.sin(theta[q] / 2)
        ry = xp.astype(xp.stack([xp.stack([co, -si]), xp.stack([si, co])]), complex)
        e = xp.exp(-0.5j * theta[q])
        rz = xp.stack([xp.stack([e, 0 * e]), xp.stack([0 * e, xp.conj(e)])])
        psi = xp.moveaxis(xp.tensordot(rz @ ry, psi, ([1], [q])), 0, q)
    psi = xp.moveaxis(xp.tensordot(xp.const(CNOT), psi, ([2, 3], [2, 0])), (0, 1), (2, 0))
    s = xp.stack([x, x * x, xp.tanh(x)], axis=-1)          # (2, 3, 3)
    c = xp.concatenate([s, xp.sin(s[:, :1])], axis=1)      # (2, 4, 3)
    flat = psi.reshape(-1)
    return xp.real(xp.vdot(flat, xp.const(H) @ flat)) + xp.sum(c * c)


PROGRAMS = {
    "gates": (gates, lambda: [RNG.uniform(-3, 3, 3), RNG.standard_normal((2, 3))]),
    "products": (products, lambda: [RNG.standard_normal((3, 4)), RNG.standard_normal((4, 5)),
                                    RNG.standard_normal((3, 5)),
                                    RNG.standard_normal((3, 3))
                                    + 1j * RNG.standard_normal((3, 3))]),
    "circuit": (circuit, lambda: [RNG.uniform(-3, 3, 3)]),
    "matrices": (matrices, lambda: [RNG.standard_normal((3, 3)), RNG.standard_normal((3, 3))]),
    "moves": (moves, lambda: [RNG.standard_normal((3, 2, 4)),
                              RNG.standard_normal(4) + 1j * RNG.standard_normal(4)]),
    "functions": (functions, lambda: [RNG.standard_normal((3, 3))]),
    "complex": (complex_arith, lambda: [RNG.standard_normal(4) + 1j * RNG.standard_normal(4),
                                        RNG.standard_normal(4)]),
    "expm": (exponentials, lambda: [RNG.standard_normal(3)]),
    "real_expm": (real_expm, lambda: [RNG.standard_normal((3, 3))]),
}


def _close(got, want, tol=1e-12):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    scale = max(float(np.abs(want).max()), 1.0) if want.size else 1.0
    np.testing.assert_allclose(got, want, rtol=0, atol=tol * scale)


def _yaad_call(fn, arrays):
    xs = [Y.tensor(a.copy(), requires_grad=True) for a in arrays]
    out = fn(*xs)
    out.backward()
    return out.data, [x.grad for x in xs]


def _same_as_eager(compiled, f, a):
    """The compiled call's value and gradient for input ``a`` equal eager yaad's."""
    got, (g,) = _yaad_call(compiled, [a])
    want, (gw,) = _yaad_call(f, [a])
    _close(got, want)
    _close(g, gw)


def _torch_call(prog, arrays):
    xs = [torch.tensor(a, requires_grad=True) for a in arrays]
    out = prog(Torch, *xs)
    out.backward()
    return out.detach().numpy(), [x.grad.numpy() for x in xs]


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_native_equals_replay_eager_and_torch(force_native, name, monkeypatch):
    if name == "products":  # (BLAS for these small products too)
        monkeypatch.setattr(native, "GEMM_MIN_TERMS", 0)
    prog, draw = PROGRAMS[name]
    f = lambda *xs: prog(Yaad, *xs)  # noqa: E731
    compiled = Y.compile(f)
    replay = Y.compile(f, fused=False)
    first = draw()
    for k in range(CALLS):
        arrays = first if k < 2 else draw()  # new inputs on every replay
        got, grads = _yaad_call(compiled, arrays)
        for want, wgrads in (_yaad_call(replay, arrays), _yaad_call(f, arrays),
                             _torch_call(prog, arrays)):
            _close(got, want)
            for g, w, a in zip(grads, wgrads, arrays):
                assert g.dtype == a.dtype and g.shape == a.shape
                _close(g, w)
        assert np.asarray(got).dtype == np.float64
    assert compiled.stats["replayed"] == CALLS - 2
    assert _uses_native(compiled), name
    if name == "products":  # (the matrix products are BLAS calls, both ways round)
        code = _end(compiled).fused_bwd[0].code
        gemms = code[code[:, 0] == native.GEMM]
        assert len(gemms) >= 20
        assert {(int(r[7]), int(r[9])) for r in gemms} == {(0, 0), (0, 1), (1, 0), (1, 1)}


def test_native_reads_a_captured_tensor_on_every_call(force_native):
    w = Y.tensor(RNG.standard_normal((4, 4)))

    def f(x):
        y = x
        for _ in range(6):
            y = Y.tanh(w @ y + 0.1)
        return Y.sum(y * y)

    c = Y.compile(f)
    for k in range(5):
        a = RNG.standard_normal((4, 3))
        _same_as_eager(c, f, a)
        if k >= 2:  # (once the native program is built: it checks itself on the
            # recorded values, which share their memory with w)
            w.data[...] = RNG.standard_normal((4, 4))  # changed in place between calls
    # (the backward, recomputing the forward, is the native program; the forward stays
    # NumPy, with its check of the captured tensor's shape and dtype)
    assert isinstance(_end(c).fused_bwd[0], native._Program)


def test_native_second_backward_and_other_seed(force_native):
    prog, draw = PROGRAMS["circuit"]
    f = lambda x: prog(Yaad, x)  # noqa: E731
    c = Y.compile(f)
    a = draw()[0]
    for _ in range(3):
        x = Y.tensor(a, requires_grad=True)
        out = c(x)
        out.backward(retain_graph=True)
    out.backward(Y.tensor(2.5))  # another seed: the backward program recomputes
    xe = Y.tensor(a, requires_grad=True)
    f(xe).backward()
    _close(x.grad, 3.5 * xe.grad)
    assert _uses_native(c)


def test_uncovered_op_keeps_the_numpy_replay(force_native):
    def f(x):
        return Y.sum(Y.sort(x) @ Y.transpose(x, (1, 0)))

    c = Y.compile(f)
    for _ in range(4):
        a = RNG.standard_normal((3, 3))
        _same_as_eager(c, f, a)
    end = _end(c)
    assert not end.fused_call and end.fused_bwd is None
    assert c.stats["replayed"] == 2


def test_slower_native_program_is_not_kept(monkeypatch):
    monkeypatch.setattr(native, "MIN_ENTRIES", 0)
    monkeypatch.setattr(native, "_faster", lambda *a: False)
    prog, draw = PROGRAMS["circuit"]
    c = Y.compile(lambda x: prog(Yaad, x))
    for _ in range(3):
        _yaad_call(c, draw())
    assert not _end(c).fused_call


def test_without_numba_same_results(monkeypatch):
    monkeypatch.setattr(fused, "_numba", [None])
    monkeypatch.setattr(native, "FORCE", [True])
    prog, draw = PROGRAMS["expm"]
    f = lambda x: prog(Yaad, x)  # noqa: E731
    c = Y.compile(f)
    for _ in range(4):
        arrays = draw()
        got, grads = _yaad_call(c, arrays)
        want, wgrads = _yaad_call(f, arrays)
        _close(got, want)
        _close(grads[0], wgrads[0])
    assert not _end(c).fused_call and _end(c).fused_bwd is None


@pytest.mark.parametrize("wid,tiny", [("W7", True), ("W7", False), ("W9", True),
                                      ("W10", True), ("W13", True)])
def test_workloads_native_against_the_floor(force_native, wid, tiny):
    import sys
    from pathlib import Path

    root = str(Path(__file__).resolve().parents[2])
    if root not in sys.path:  # benchmarks/ is a top-level package of the repository
        sys.path.insert(0, root)
    from benchmarks.libraries import _yaad
    from benchmarks.workloads import WORKLOADS

    w = next(x for x in WORKLOADS if x.id == wid)
    _, consts = w.inputs(np.random.default_rng(0), tiny)
    _, xp = _yaad()
    c = Y.compile(lambda *ps: w.loss(xp, ps, consts))
    for k in range(4):
        params, _ = w.inputs(np.random.default_rng(k // 2), tiny)
        arrays = list(params.values())
        got, grads = _yaad_call(c, arrays)
        want, wgrads = w.floor(tuple(arrays), consts)
        _close(got, want)
        for g, wg in zip(grads, wgrads):
            _close(g, wg)
    assert _uses_native(c)
    if not tiny:  # W7 at size: the products of bond-16 tensors are BLAS calls (those
        # with the chain's bond-1 ends, under GEMM_MIN_TERMS terms, loop)
        code = _end(c).fused_bwd[0].code
        assert 80 <= (code[:, 0] == native.GEMM).sum() < 96


@pytest.mark.parametrize("backend", [fused, native])
def test_merged_subexpression_read_by_the_backward_is_not_stale(monkeypatch, backend):
    # x / 2 is computed twice; the forward's common-subexpression merge drops the second,
    # which sin's backward reads: the one-pass loss-and-gradient kernel must compute it
    # from the new input, not take its recorded value (a stale gradient before the fix).
    monkeypatch.setattr(backend, "FORCE", [True])

    def f(x):
        return Y.sum(Y.cos(x / 2) * 3.0 + Y.sin(x / 2))

    c = Y.compile(f)
    for _ in range(5):
        a = RNG.standard_normal(6)
        _same_as_eager(c, f, a)
    assert _end(c).fused_call


@pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::yaad.CompileWarning")
def test_expm_of_a_non_finite_matrix_runs_the_numpy_replay(force_native):
    # SciPy's expm of a matrix with a NaN or an inf has a structure of its own (zeros
    # below the diagonal of a triangular one): the native program hands that call to the
    # NumPy replay instead of computing something else.
    prog, draw = PROGRAMS["real_expm"]
    f = lambda a: prog(Yaad, a)  # noqa: E731
    c = Y.compile(f)
    for k in range(6):
        a = np.triu(draw()[0])
        if k == 3:
            assert _uses_native(c)
        if k >= 3:
            a[0, 1] = [np.nan, np.inf, -np.inf][k - 3]
        got, (g,) = _yaad_call(c, [a])
        want, (gw,) = _yaad_call(f, [a])
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_array_equal(np.isnan(g), np.isnan(gw))
        ok = np.isfinite(gw)
        _close(g[ok], gw[ok])
        if np.isfinite(want):
            _close(got, want)


def test_complex_exp_at_infinities_and_overflow_runs_the_numpy_replay(force_native):
    # NumPy's complex exponential has answers of its own at inf and NaN, and where exp
    # overflows: the native program hands those calls to the NumPy replay.
    def f(x):
        z = Y.astype(x, complex)
        w = z * (0.1 + 0.05j)
        return Y.sum(Y.imag(Y.exp(z))) + Y.sum(Y.real(Y.exp(w) * Y.conj(Y.exp(-w * 0.5j))))

    c = Y.compile(f)
    draws = [RNG.standard_normal(3) for _ in range(2)] + [
        np.array([0.5, np.inf, -1.0]), np.array([710.0, 0.1, 0.2]),
        np.array([-np.inf, np.nan, 0.3]), RNG.standard_normal(3)]
    with np.errstate(all="ignore"):
        for a in draws:
            got, (g,) = _yaad_call(c, [a])
            want, (gw,) = _yaad_call(f, [a])
            np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
            np.testing.assert_allclose(got, want, rtol=1e-12)
            np.testing.assert_allclose(g, gw, rtol=1e-12, atol=1e-12)
    assert _uses_native(c)
    assert c.stats["replayed"] == len(draws) - 2


def test_merged_subexpression_with_default_settings_large_array():
    # The same program on 200,000 elements takes the fused backend without forcing it
    # (large arrays): before the fix its gradient from the third call on was the
    # recorded one (an error of 0.84 measured).
    def f(x):
        return Y.sum(Y.cos(x / 2) * 3.0 + Y.sin(x / 2))

    c = Y.compile(f)
    for _ in range(4):
        a = RNG.standard_normal(200_000)
        _same_as_eager(c, f, a)
    assert _end(c).fused_call


# ---- where NumPy's error state or a warnings filter makes a floating-point error raise ----

class _RuntimeWarningsRaise(warnings.catch_warnings):
    def __enter__(self):
        super().__enter__()
        warnings.simplefilter("error", RuntimeWarning)


RAISING = {  # (the state a caller, or a test run before, may leave in force)
    "errstate divide": (lambda: np.errstate(divide="raise"), FloatingPointError),
    "errstate all": (lambda: np.errstate(all="raise"), FloatingPointError),
    "error filter": (_RuntimeWarningsRaise, RuntimeWarning),
}


def _sqrt_program(x, y):
    return Y.sum(Y.sin(Y.sqrt(x) * y) + Y.log(x) * 0.5)


def _sqrt_oracle(x, y):
    """NumPy's value and gradients of ``_sqrt_program`` (raising where NumPy raises)."""
    r = np.sqrt(x)
    c = np.cos(r * y)
    return np.sum(np.sin(r * y) + np.log(x) * 0.5), c * y / (2 * r) + 0.5 / x, c * r


def _outcome(fn, x, y, state=None, backward_state=None):
    xs = [Y.tensor(v.copy(), requires_grad=True) for v in (x, y)]
    try:
        with state() if state else warnings.catch_warnings():
            out = fn(*xs)
        with backward_state() if backward_state else warnings.catch_warnings():
            out.backward()
        return float(out.data), xs[0].grad, xs[1].grad
    except (FloatingPointError, RuntimeWarning) as e:
        return ("raise", type(e))


@pytest.mark.parametrize("backend", [fused, native])
@pytest.mark.parametrize("name", list(RAISING))
@pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::yaad.CompileWarning")
def test_kernels_raise_where_numpy_raises(monkeypatch, backend, name):
    # numba's kernels never raise or warn: a fused or native program recorded in the
    # default state gave log(0) = -inf and the gradient inf where NumPy raises (a
    # backward under np.errstate(divide="raise")), and one recorded under such a state
    # gave them in the forward. The NumPy replay now runs wherever an error raises.
    monkeypatch.setattr(backend, "FORCE", [True])
    state, error = RAISING[name]
    ok = [(RNG.uniform(0.5, 2.0, 5), RNG.standard_normal(5)) for _ in range(4)]
    zero = (np.array([0.0, 1.0, 2.0, 0.5, 3.0]), RNG.standard_normal(5))
    c = Y.compile(_sqrt_program)
    for x, y in ok[:3]:  # recorded, verified, replayed in the default state
        got = _outcome(c, x, y)
        for g, w in zip(got, _sqrt_oracle(x, y)):
            np.testing.assert_allclose(g, w, rtol=1e-13, atol=0)
    end = _end(c)
    assert end.fused_call and end.fused_bwd is not None
    if backend is native:
        assert _uses_native(c)
    # The backward under the raising state: the gradient divides by sqrt(0).
    assert _outcome(c, *zero, backward_state=state) == ("raise", error)
    assert _outcome(_sqrt_program, *zero, backward_state=state) == ("raise", error)
    with pytest.raises(error), state():
        _sqrt_oracle(*zero)
    # ... and in the default state, NumPy's infinities, as eager mode gives them.
    got, want = _outcome(c, *zero), _outcome(_sqrt_program, *zero)
    np.testing.assert_array_equal(got[1], want[1])
    assert got[0] == want[0] == -np.inf and not np.isfinite(got[1][0])
    # The whole call under the raising state: recorded and replayed there, log(0) raises.
    for x, y in ok:
        got = _outcome(c, x, y, state=state, backward_state=state)
        for g, w in zip(got, _sqrt_oracle(x, y)):
            np.testing.assert_allclose(g, w, rtol=1e-13, atol=0)
    assert _outcome(c, *zero, state=state) == ("raise", error)
    assert _outcome(_sqrt_program, *zero, state=state) == ("raise", error)
    # The default state's kernels are still used.
    x, y = ok[3]
    before = c.stats["replayed"]
    got = _outcome(c, x, y)
    for g, w in zip(got, _sqrt_oracle(x, y)):
        np.testing.assert_allclose(g, w, rtol=1e-13, atol=0)
    assert c.stats["replayed"] == before + 1
