"""examples/mps.py: the MPS contractions, their gradients, and the optimised energy against
exact diagonalisation (small sizes)."""

from __future__ import annotations

import importlib.util
import pathlib
import subprocess
import sys

import numpy as np
import pytest

from yaad.demo import tfim_hamiltonian
from yaad.testing import gradcheck

PATH = pathlib.Path(__file__).resolve().parents[1] / "examples" / "mps.py"
spec = importlib.util.spec_from_file_location("example_mps", PATH)
mps = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mps)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_contractions_match_the_dense_state(dtype):
    L, h = 5, 0.7
    tensors = mps.random_mps(L, 3, dtype, seed=1)
    tensors = [a * (1.0 + 0.5 * k) for k, a in enumerate(tensors)]  # not normalised
    psi = mps.to_state(tensors)
    H = tfim_hamiltonian(L, h).toarray()
    norm2 = np.vdot(psi, psi).real
    assert mps.norm_squared(tensors).item() == pytest.approx(norm2, rel=1e-12)
    energy = mps.energy(tensors, mps.tfim_mpo(L, h)).item()
    assert energy == pytest.approx(np.vdot(psi, H @ psi).real / norm2, rel=1e-12)


def test_random_mps_is_left_canonical():
    for a in mps.random_mps(6, 4, seed=2)[:-1]:
        m = a.reshape(-1, a.shape[-1])
        np.testing.assert_allclose(m.T @ m, np.eye(m.shape[1]), atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_energy_gradient_against_finite_differences(dtype):
    L = 4
    mpo = mps.tfim_mpo(L, 1.0)
    tensors = mps.random_mps(L, 2, dtype, seed=3)
    gradcheck(lambda *ts: mps.energy(ts, mpo), tensors)


def test_optimised_energy_matches_exact_diagonalisation():
    r = mps.main(L=5, D=4, steps=300, h=1.0)  # D = 4 represents any state of 5 spins
    assert r["relative_error"] < 1e-6
    assert r["exact"] == pytest.approx(np.linalg.eigvalsh(tfim_hamiltonian(5, 1.0).toarray())[0])
    assert r["energy"] >= r["exact"] - 1e-9  # variational


def test_complex_mps_reaches_the_real_ground_state():
    r = mps.main(L=4, D=4, steps=300, dtype=np.complex128)
    assert r["relative_error"] < 1e-6
    assert r["tensors"][0].dtype == np.complex128


def test_plain_gradient_descent_lowers_the_energy():
    L = 4
    mpo = mps.tfim_mpo(L, 1.0)
    start = mps.energy(mps.random_mps(L, 2, seed=0), mpo).item()
    r = mps.main(L=L, D=2, steps=100, optimizer="gd", lr=0.05)
    assert r["exact"] - 1e-9 <= r["energy"] < start - 0.1


def test_script_runs():
    out = subprocess.run([sys.executable, str(PATH), "--L", "4", "--D", "2", "--steps", "50"],
                         capture_output=True, text=True, check=True)
    assert "E_exact" in out.stdout and "relative error" in out.stdout


def test_unknown_optimizer():
    with pytest.raises(ValueError, match="optimizer must be"):
        mps.main(L=3, D=2, steps=1, optimizer="sgd")


def test_exact_energy_uses_lanczos_beyond_six_sites():
    dense = np.linalg.eigvalsh(tfim_hamiltonian(8, 0.5).toarray())[0]
    assert mps.exact_energy(8, 0.5) == pytest.approx(dense, rel=1e-10)
