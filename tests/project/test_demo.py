"""The demo: ``python -m yaad demo`` runs, prints its results, and saves its figure."""

import re
import subprocess
import sys

import numpy as np
import pytest

from yaad import __version__
from yaad.__main__ import main
from yaad.demo import hamiltonian_op, rayleigh_quotient, seed_timings, tfim_hamiltonian


def test_demo_end_to_end(tmp_path, capsys):
    import matplotlib  # noqa: F401
    import sklearn  # noqa: F401
    # Default physics and training settings (they take well under a second each); only
    # the timing loop is shortened.
    status = main(["demo", "--repeats", "2", "--number", "3", "--out", str(tmp_path),
                   "--no-progress"])
    out = capsys.readouterr().out
    assert status == 0
    assert "NumPy, gradient by hand" in out and "yaad eager" in out
    error = float(re.search(r"relative energy error: ([0-9.e+-]+)", out).group(1))
    assert error < 1e-6
    exact = float(re.search(r"exact ground-state energy \(Lanczos\): (-[0-9.]+)", out).group(1))
    assert exact == pytest.approx(-12.3814899997, abs=1e-8)
    accuracy = float(re.search(r"test accuracy: ([0-9.]+)%", out).group(1))
    assert accuracy >= 95.0
    path = re.search(r"Figure saved to (.+\.png)", out).group(1)
    with open(path, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    assert path.startswith(str(tmp_path))


def test_demo_parts_and_errors(tmp_path, capsys):
    assert main(["demo", "--parts", "ising", "--steps", "5", "--L", "4", "--no-figure",
                 "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "[1/1] Transverse-field Ising chain, L=4" in out and "Figure" not in out
    assert main(["demo", "--parts", "nothing"]) == 2
    assert "unknown demo part" in capsys.readouterr().err


def test_command_line_version_and_help():
    version = subprocess.run([sys.executable, "-m", "yaad", "--version"], capture_output=True,
                             text=True, check=True)
    assert version.stdout.strip() == f"yaad {__version__}"
    helptext = subprocess.run([sys.executable, "-m", "yaad", "demo", "--help"],
                              capture_output=True, text=True, check=True).stdout
    for option in ("--parts", "--steps", "--epochs", "--out", "--no-progress"):
        assert option in helptext


def test_seed_timings_rows():
    rows = seed_timings(repeats=2, number=2, progress=False)
    assert rows[0][0] == "NumPy, gradient by hand" and rows[1][0] == "yaad eager"
    assert all(t > 0 for _, t in rows)


def test_tfim_hamiltonian_matches_kron_construction():
    L, h = 4, 0.7
    X, Z, I2 = np.array([[0, 1], [1, 0]]), np.diag([1, -1]), np.eye(2)

    def site(op, i):
        out = np.eye(1)
        for j in range(L):
            out = np.kron(out, op if j == i else I2)
        return out

    dense = -sum(site(Z, i) @ site(Z, i + 1) for i in range(L - 1)) - h * sum(
        site(X, i) for i in range(L))
    np.testing.assert_array_equal(tfim_hamiltonian(L, h).toarray(), dense)


def test_hamiltonian_op_gradients():
    from yaad.testing import gradcheck, gradgradcheck

    H = tfim_hamiltonian(3, 1.3)
    apply_h = hamiltonian_op(H)
    rng = np.random.default_rng(0)
    psi = rng.standard_normal(8) + 1j * rng.standard_normal(8)
    np.testing.assert_allclose(apply_h(psi), H @ psi)
    gradcheck(apply_h, [psi])
    gradcheck(lambda p: rayleigh_quotient(apply_h, p), [psi])
    gradgradcheck(lambda p: rayleigh_quotient(apply_h, p), [psi])


@pytest.mark.parametrize("threads", [None, 2])
def test_every_part_runs_with_the_thread_pools_fixed(monkeypatch, capsys, threads):
    """Each part runs with --threads BLAS/OpenMP threads (default 1): the libraries'
    default pools oversubscribed a two-core machine (the tensor-network parts: 244 s,
    9.7 s with one thread)."""
    from threadpoolctl import threadpool_info

    from yaad import demo

    seen = {}

    def record(part):
        def fake(*args, **kwargs):
            seen[part] = sorted({p["num_threads"] for p in threadpool_info()
                                 if p["user_api"] in ("blas", "openmp")})
            raise ImportError("recorded")  # (the MLP part's way out; enough for the test)
        return fake

    monkeypatch.setattr(demo, "digits_mlp", record("mlp"))
    monkeypatch.setattr(demo, "_example", lambda name: object())
    monkeypatch.setattr(demo, "_trg", lambda example: record("trg")())
    before = threadpool_info()
    args = ["demo", "--parts", "mlp,trg", "--no-figure", "--no-progress"]
    with pytest.raises(ImportError):  # (trg, after mlp)
        main(args + ([] if threads is None else ["--threads", str(threads)]))
    pools = [p for p in threadpool_info() if p["user_api"] in ("blas", "openmp")]
    assert pools, "no BLAS pool seen: the test cannot check anything"
    assert seen == {"mlp": [threads or 1], "trg": [threads or 1]}
    assert threadpool_info() == before  # (restored after each part)
    assert f"{threads or 1} BLAS thread" in capsys.readouterr().out
