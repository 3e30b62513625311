"""The scripts in examples/, run with small sizes (smoke tests that check their results)."""

import numpy as np
import pytest

from tests.support.examples import EXAMPLES, load

MINE = ("complex_descent", "dask_big_gradient", "demo_seed", "ising_ground_state", "mlp_digits",
        "quantum_vmc")


def test_examples_are_documented_scripts():
    for path in (EXAMPLES / f"{name}.py" for name in MINE):
        text = path.read_text()
        assert text.startswith('"""'), f"{path.name} needs a module docstring"
        assert 'if __name__ == "__main__":' in text, f"{path.name} needs a __main__ guard"


def test_demo_seed(capsys):
    rows = load("demo_seed").main(["--repeats", "2", "--number", "2"])
    assert [name for name, _ in rows][:2] == ["NumPy, gradient by hand", "yaad eager"]
    assert "equal (x2.T, x1.T)" in capsys.readouterr().out


@pytest.mark.parametrize("optimizer,steps,tol", [("adam", 1000, 1e-6), ("lbfgs", 200, 1e-10)])
def test_ising_ground_state(optimizer, steps, tol):
    r = load("ising_ground_state").main(["--L", "6", "--h", "0.8", "--optimizer", optimizer,
                                         "--steps", str(steps)])
    assert r["relative_error"] < tol and r["fidelity"] > 1 - 10 * tol
    assert r["state"].dtype == np.complex128


def test_mlp_digits(tmp_path):
    import sklearn  # noqa: F401
    r = load("mlp_digits").train(epochs=4, hidden=32, checkpoint=str(tmp_path / "ckpt.npz"),
                                 verbose=False)
    assert r["test_accuracy"] > 0.85
    assert r["losses"][-1] < r["losses"][0]
    import yaad

    saved = yaad.load(tmp_path / "ckpt.npz")
    assert saved["epochs"] == 4 and "0.weight" in saved["model"]


def test_quantum_vmc_exact_and_monte_carlo():
    vmc = load("quantum_vmc")
    exact = vmc.train(L=4, h=1.0, mode="exact", steps=300, lr=0.02, alpha=1, verbose=False)
    assert exact["relative_error"] < 1e-3
    assert exact["model"].W.dtype == np.complex128
    mc = vmc.train(L=4, h=1.0, mode="mc", steps=60, lr=0.02, alpha=1, chains=32, sweeps=4,
                   verbose=False)
    assert mc["relative_error"] < 0.03
    assert mc["energies"][-10:].mean() < mc["energies"][:5].mean()


def test_vmc_local_energy_matches_hamiltonian():
    # E_loc(s) = (H psi)(s) / psi(s) for every configuration of a random complex RBM.
    vmc = load("quantum_vmc")
    from yaad.demo import tfim_hamiltonian

    L, h = 4, 0.6
    model = vmc.RBM(L, alpha=1, scale=0.3, seed=1)
    configs = vmc.all_configurations(L)
    psi = np.exp(model(configs).data)
    expected = (tfim_hamiltonian(L, h) @ psi) / psi
    np.testing.assert_allclose(vmc.local_energies(model, configs, h), expected, rtol=1e-10)


def test_complex_descent_descends_and_its_conjugate_runs_away(tmp_path, capsys):
    # The figures docs/complex.md quotes: below 1e-13 from every start with yaad's
    # gradient, |z| > 10 within five steps with its conjugate.
    ex = load("complex_descent")
    paths = ex.main(["--figure", str(tmp_path / "descent.png")])
    for z0 in ex.STARTS:
        end = paths["yaad", z0][-1]
        assert ex.loss(end) < 1e-13 and abs(abs(end.real) - 1) < 1e-6
        away = paths["conjugate", z0]
        assert abs(away[-1]) > 10 and len(away) <= 6
        # the first step agrees with the analytic gradient 2 conj(z) (z^2 - 1) * 2
        expected = 4 * np.conj(z0) * (z0 * z0 - 1)
        np.testing.assert_allclose(paths["yaad", z0][1], z0 - 0.05 * expected, rtol=1e-12)
    assert (tmp_path / "descent.png").stat().st_size > 10_000
    assert "diverged" in capsys.readouterr().out


def test_dask_big_gradient_small():
    # The cluster example at a small size: W4 on 3e5 numbers in 3 chunks, checked on 2e5,
    # and a 4-site MPS of bond 6 (the full size is recorded in docs/examples).
    r = load("dask_big_gradient").main(["--n", "3e5", "--chunk", "1e5", "--check", "2e5",
                                        "--sites", "4", "--bond", "6", "--quiet"])
    w4, mps = r["w4"], r["mps"]
    for key in ("gradient_vs_numpy", "slice_gradient_vs_numpy", "slice_loss_vs_numpy",
                "loss_vs_dask"):
        assert w4[key] < 1e-12, (key, w4[key])
    assert mps["norm_vs_numpy"] < 1e-12 and mps["gradient_vs_numpy"] < 1e-12
    assert w4["loss"] > 0 and np.isfinite(w4["gradient_sum"])
    assert r["workers"] == 2 and not r["worker_restarted"]
    assert all(p < r["memory_limit"] for p in r["peak_worker_memory"])


def test_quimb_side_by_side():
    r = load("quimb_side_by_side").main(["--L", "6", "--D", "4", "--steps", "30"])
    ground = r["ground_state"]
    assert abs(ground["yaad"] - ground["torch"]) < 1e-6 and ground["gradient"] < 1e-9
    assert abs(ground["yaad"] - ground["dmrg"]) < 2e-2
    for name, row in r.items():
        if name != "ground_state":
            assert row["value_difference"] < 1e-12 and row["gradient_difference"] < 1e-9, name
