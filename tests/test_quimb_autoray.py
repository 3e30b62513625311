"""quimb, autoray and cotengra on yaad tensors, without registering anything by hand
(yaad.interop), each program against the same program on PyTorch (quimb's torch backend).
"""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest
import torch

import yaad

with warnings.catch_warnings():  # (cotengra: "Couldn't import `kahypar`")
    warnings.simplefilter("ignore")
    import autoray as ar
    import cotengra as ctg
    import quimb.tensor as qtn


def _as(backend, a):
    return (yaad.tensor(a, requires_grad=True) if backend == "yaad"
            else torch.tensor(a, requires_grad=True))


def _grad(x):
    return np.asarray(x.grad)


def _run_both(program, arrays):
    """``program(list of leaves) -> scalar`` on yaad and on PyTorch: values and gradients."""
    out = {}
    for backend in ("yaad", "torch"):
        leaves = [_as(backend, a) for a in arrays]
        value = program(leaves)
        value.backward()
        out[backend] = (float(ar.to_numpy(value).real), [_grad(x) for x in leaves])
    return out


def _same(out, rtol=1e-10):
    (vy, gy), (vt, gt) = out["yaad"], out["torch"]
    np.testing.assert_allclose(vy, vt, rtol=rtol)
    assert len(gy) == len(gt)
    for a, b in zip(gy, gt):
        assert a.shape == b.shape and a.dtype == b.dtype
        np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * np.abs(b).max())


# ---- autoray ------------------------------------------------------------------------------

def test_autoray_finds_what_it_asks_for():
    rng = np.random.default_rng(0)
    x = yaad.tensor(rng.standard_normal((6, 2)), requires_grad=True)
    assert ar.infer_backend(x) == "yaad"
    u, s, vh = ar.do("linalg.svd", x)  # autoray means the reduced SVD
    assert (u.shape, s.shape, vh.shape) == ((6, 2), (2,), (2, 2))
    np.testing.assert_allclose(s.detach().numpy(), np.linalg.svd(x.detach().numpy(),
                                                                 compute_uv=False))
    q, r = ar.do("linalg.qr", x)
    assert (q.shape, r.shape) == ((6, 2), (2, 2))
    values = ar.to_numpy(x)  # values, though x requires grad
    assert type(values) is np.ndarray and values.dtype == np.float64
    np.testing.assert_array_equal(values, x.detach().numpy())
    y = x + 1e-12
    assert ar.do("allclose", x, y) is True and ar.do("allclose", x, y + 1) is False
    assert ar.do("array_equal", x, x) is True and ar.do("array_equal", x, y) is False
    z = ar.do("random.normal", size=(3, 4), like="yaad")
    assert isinstance(z, yaad.Tensor) and z.shape == (3, 4) and not z.requires_grad
    a = ar.do("asarray", [1.0, 2.0], like="yaad")
    assert isinstance(a, yaad.Tensor) and a.dtype == np.float64
    assert ar.do("asarray", x, like="yaad") is x  # (its graph kept)


def test_allclose_and_array_equal_are_numpys():
    rng = np.random.default_rng(1)
    a = rng.standard_normal(5)
    b = a + rng.choice([0.0, 1e-9, 1e-3], 5)
    b[2] = a[2] = np.nan
    for x, y in [(a, b), (a, a), (a[:3], a[:3] + 1e-7), (a[:1], a)]:
        for kw in ({}, {"equal_nan": True}, {"rtol": 1e-2, "atol": 0.0}):
            tx, ty = yaad.tensor(x, requires_grad=True), yaad.tensor(y)
            assert yaad.allclose(tx, ty, **kw) is bool(np.allclose(x, y, **kw))
        for kw in ({}, {"equal_nan": True}):
            tx, ty = yaad.tensor(x, requires_grad=True), yaad.tensor(y)
            assert yaad.array_equal(tx, ty, **kw) is bool(np.array_equal(x, y, **kw))


@pytest.mark.parametrize("first", ["yaad", "quimb"])
def test_registration_needs_no_call_in_either_import_order(first):
    imports = ["import yaad", "import quimb.tensor"]
    code = "\n".join(imports if first == "yaad" else imports[::-1]) + """
import autoray, sys
from quimb.tensor import optimize
print(autoray.get_lib_fn("yaad", "linalg.svd").__name__, "yaad" in optimize._BACKEND_HANDLERS,
      any(type(f).__name__ == "_Watcher" for f in sys.meta_path))
"""
    run = subprocess.run([sys.executable, "-W", "ignore", "-c", code], capture_output=True,
                         text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.split() == ["_reduced_svd", "True", "False"]  # (the hook is gone)


# ---- quimb --------------------------------------------------------------------------------

def _mps_arrays(L=6, D=4, seed=0, dtype="float64"):
    mps = qtn.MPS_rand_state(L, D, seed=seed, dtype=dtype)
    return mps, [np.asarray(t.data) for t in mps]


def _with(tn, leaves):
    tn = tn.copy()
    for t, leaf in zip(tn, leaves):
        t.modify(data=leaf)
    return tn


@pytest.mark.parametrize("dtype", ["float64", "complex128"])
def test_compress_with_gradients_as_on_torch(dtype):
    mps, arrays = _mps_arrays(dtype=dtype)

    def fidelity(leaves):  # |<psi|compress(psi)>|^2 / <psi|psi>^2
        psi = _with(mps, leaves)
        small = psi.copy()
        small.compress(max_bond=2, cutoff=0.0)
        overlap = psi.H @ small
        return abs(overlap) ** 2 / abs(psi.H @ psi) ** 2

    out = _run_both(fidelity, arrays)
    assert 0.1 < out["yaad"][0] < 1.0
    _same(out, rtol=1e-8)


def test_canonicalize_with_gradients_as_on_torch():
    mps, arrays = _mps_arrays(seed=2)

    def canonical_entry(leaves):  # a gauge-invariant function of the canonical form
        psi = _with(mps, leaves)
        psi.canonicalize(3, inplace=True)
        centre = psi[3].data
        return (centre * centre.conj()).sum().real

    _same(_run_both(canonical_entry, arrays), rtol=1e-9)


def test_peps_norm_with_gradients_as_on_torch():
    peps = qtn.PEPS.rand(3, 3, bond_dim=2, seed=3)
    arrays = [np.asarray(t.data) for t in peps]

    def norm(leaves):
        p = _with(peps, leaves)
        return p.H @ p

    exact = _run_both(norm, arrays)
    _same(exact)

    def boundary(leaves):  # the boundary contraction, compressing as it goes
        p = _with(peps, leaves)
        return (p.H & p).contract_boundary(max_bond=4, cutoff=0.0)

    approx = _run_both(boundary, arrays)
    _same(approx, rtol=1e-8)
    np.testing.assert_allclose(approx["yaad"][0], exact["yaad"][0], rtol=1e-2)


def test_tnoptimizer_finds_the_mps_ground_state_as_on_torch():
    L, D = 6, 4
    mpo = qtn.MPO_ham_heis(L)
    psi0 = qtn.MPS_rand_state(L, D, seed=1)

    def energy(psi, mpo):
        return qtn.expec_TN_1D(psi.H, mpo, psi) / (psi.H @ psi)

    found = {}
    for backend in ("yaad", "torch"):
        opt = qtn.TNOptimizer(psi0, loss_fn=energy, loss_constants={"mpo": mpo},
                              autodiff_backend=backend, optimizer="L-BFGS-B", progbar=False)
        x0 = opt.vectorizer.vector.copy()
        value, grad = opt.vectorized_value_and_grad(x0)
        opt.optimize(40)
        found[backend] = (value, grad, opt.loss)
    (vy, gy, ey), (vt, gt, et) = found["yaad"], found["torch"]
    np.testing.assert_allclose(vy, vt, rtol=1e-12)
    np.testing.assert_allclose(gy, gt, rtol=1e-9, atol=1e-12)
    dmrg = qtn.DMRG2(mpo, bond_dims=[D])
    dmrg.solve(tol=1e-10, verbosity=0)
    assert abs(ey - dmrg.energy) < 1e-2 and abs(ey - et) < 1e-3, (ey, et, dmrg.energy)


def test_tnoptimizer_handler_refuses_a_gpu():
    from yaad.interop import TNOptimizerHandler

    with pytest.raises(ValueError, match="device='cuda' is not available"):
        TNOptimizerHandler(device="cuda")


# ---- cotengra -----------------------------------------------------------------------------

@pytest.mark.parametrize("optimizer", [
    lambda: ctg.HyperOptimizer(max_repeats=4, progbar=False),
    lambda: ctg.GreedyOptimizer(),
    lambda: ["einsum_path", (0, 1), (0, 1), (0, 1)],
])
def test_einsum_takes_a_cotengra_optimizer_or_a_path(optimizer):
    rng = np.random.default_rng(4)
    shapes = [(3, 4), (4, 5, 2), (5, 3), (2, 6)]
    arrays = [rng.standard_normal(s) for s in shapes]
    eq = "ij,jkl,ki,lm->m"

    def program(leaves):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if isinstance(leaves[0], yaad.Tensor):
                r = yaad.einsum(eq, *leaves, optimize=optimizer())
            else:
                r = torch.einsum(eq, *leaves)
        return (r * r).sum()

    _same(_run_both(program, arrays))


def test_einsum_names_what_optimize_takes():
    with pytest.raises(TypeError, match="path optimizer"):
        yaad.einsum("ij,jk,kl", np.ones((2, 2)), np.ones((2, 2)), np.ones((2, 2)),
                    optimize=object())


def test_cotengra_contracts_yaad_tensors():
    rng = np.random.default_rng(5)
    arrays = [rng.standard_normal(s) for s in [(3, 4), (4, 5), (5, 3)]]

    def program(leaves):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ctg.contract("ab,bc,ca->", *leaves, optimize="greedy")

    _same(_run_both(program, arrays))


def test_tnoptimizer_gradient_of_a_complex_mps_against_finite_differences():
    # (a complex MPS with quimb's real MPO: PyTorch's tensordot refuses the mixed dtypes,
    # so the oracle is a central difference of the same loss)
    mpo = qtn.MPO_ham_heis(4)
    psi0 = qtn.MPS_rand_state(4, 3, seed=1, dtype="complex128")

    def energy(psi, mpo):
        return (qtn.expec_TN_1D(psi.H, mpo, psi) / (psi.H @ psi)).real

    opt = qtn.TNOptimizer(psi0, loss_fn=energy, loss_constants={"mpo": mpo},
                          autodiff_backend="yaad", optimizer="L-BFGS-B", progbar=False)
    x = opt.vectorizer.vector.copy()
    _, grad = opt.vectorized_value_and_grad(x)
    h = 1e-6
    fd = np.array([(opt.vectorized_value(x + h * e) - opt.vectorized_value(x - h * e)) / (2 * h)
                   for e in np.eye(len(x))])
    assert len(x) == 96 and grad.dtype == np.float64
    np.testing.assert_allclose(grad, fd, atol=1e-8 * np.abs(fd).max())
