"""examples/trg_specific_heat.py (and examples/ipeps_heisenberg.py): differentiable tensor
networks, at small sizes, against finite differences of the same network and exact
results."""

from __future__ import annotations

import numpy as np
import pytest

import yaad
from tests.support.examples import load

trg = load("trg_specific_heat")


def test_onsager_reference_values():
    # u and c (closed forms with elliptic integrals) against 7-point differences of ln Z
    # (an integral), on both sides of T_c; c at beta = 0.6 as quoted in the issue.
    assert trg.onsager(0.6)[2] == pytest.approx(0.3134453581, abs=1e-9)
    h = 1e-3
    for beta in (0.3, 0.6):
        f = [trg.onsager(beta + k * h)[0] for k in range(-3, 4)]
        first = (-f[0] + 9 * f[1] - 45 * f[2] + 45 * f[4] - 9 * f[5] + f[6]) / (60 * h)
        second = (2 * f[0] - 27 * f[1] + 270 * f[2] - 490 * f[3] + 270 * f[4] - 27 * f[5]
                  + 2 * f[6]) / (180 * h * h)
        _, u, c = trg.onsager(beta)
        assert -first == pytest.approx(u, abs=1e-10)
        assert beta * beta * second == pytest.approx(c, abs=1e-7)


@pytest.mark.parametrize("temp", [1.5, 2.0, 2.6, 3.0])
def test_trg_specific_heat_by_ad_equals_finite_differences_of_the_same_trg(temp):
    beta = 1 / temp
    lnz, d1, d2 = trg.derivatives(beta, 12, 14)
    f1, f2 = trg.finite_differences(beta, 12, 14, h=3e-4)
    assert d1 == pytest.approx(f1, rel=1e-9)
    assert d2 == pytest.approx(f2, rel=1e-6)
    assert lnz == pytest.approx(float(trg.trg_lnz(beta, 12, 14)), rel=1e-14)


def test_trg_is_close_to_onsager_away_from_the_critical_point():
    rows = trg.scan([1.5, 2.6, 3.0], 12, 14, verbose=False)
    for r in rows:
        assert r["c_error"] < 1e-3
        assert abs(r["u"] - r["u_exact"]) < 1e-4 * abs(r["u_exact"])
        # the torus of 2^14 sites: ln 2 / 2^14 = 4.2e-5 from the two ordered states below T_c
        assert abs(r["lnZ"] - r["lnZ_exact"]) < 1e-4


@pytest.mark.parametrize("beta", [0.6, 0.3])
def test_the_second_derivative_of_the_issue(beta):
    # chi = 16, 2^20 sites: at beta = 0.6 an earlier rule returned c = 0.312904 without an
    # error (the same TRG by finite differences: 0.3134357), at beta = 0.3 it raised
    # GaugeError.
    f = lambda b: trg.trg_lnz(b, 16, 20)  # noqa: E731
    second = float(yaad.func.grad(yaad.func.grad(f))(beta))  # reverse over reverse
    _, fd = trg.finite_differences(beta, 16, 20, h=1e-3)
    assert second == pytest.approx(fd, rel=1e-6)
    if beta == 0.6:
        assert beta * beta * second == pytest.approx(0.3134357, abs=2e-7)


def test_trg_scan_prints_and_plots(tmp_path, capsys):
    path = tmp_path / "c.png"
    rows = trg.main(["--chi", "6", "--steps", "8", "--temps", "2.0", "3.0", "--check", "3.0",
                     "--figure", str(path)])
    out = capsys.readouterr().out
    assert path.stat().st_size > 1000
    assert "largest |c(yaad) - c(finite difference)| / c" in out and "figure saved" in out
    assert [r["T"] for r in rows] == [2.0, 3.0] and rows[1]["ad_vs_fd"] < 1e-5
    assert np.isfinite([r["c"] for r in rows]).all()


# ---- iPEPS ---------------------------------------------------------------------------------

ipeps = load("ipeps_heisenberg")


def test_neel_product_state_energy_and_magnetisation():
    # D = 1: the Neel state, E = 2 * (-1/4) per site, m = 1/2.
    a = np.zeros((2, 1, 1, 1, 1))
    a[0] = 1.0
    energy = ipeps.Energy(4)
    with yaad.no_grad():
        assert float(energy(yaad.tensor(a)).data) == pytest.approx(-0.5, abs=1e-14)
    assert energy.magnetisation == pytest.approx(0.5, abs=1e-14)


def test_bond_energy_matches_exact_contraction_of_a_small_torus():
    # The Hamiltonian in the rotated frame equals S.S after rotating the second spin.
    rot = np.array([[0.0, -1.0], [1.0, 0.0]])  # exp(-i pi Sy), real
    sx, sz = ipeps.SX, ipeps.SZ
    sy_sy = ipeps.SY_SY
    heis = np.kron(sx, sx) + sy_sy + np.kron(sz, sz)
    u = np.kron(np.eye(2), rot)
    np.testing.assert_allclose(u.T @ heis @ u, ipeps.BOND, atol=1e-15)


def test_ipeps_gradient_through_the_fixed_point_equals_finite_differences():
    assert ipeps.gradient_check(2, 16) < 1e-6


def test_ipeps_d2_optimisation_reaches_the_published_energy():
    r = ipeps.optimize(2, 16, 20, seed=1, verbose=False)
    assert r["energy"] <= -0.6600
    assert 0.35 < r["magnetisation"] < 0.43
    energies = [e for e, _ in r["history"]]
    assert energies[-1] < energies[0]


def test_demo_parts_for_the_tensor_networks(tmp_path, capsys):
    from yaad import demo

    assert demo.EXTRA_PARTS == ("trg", "ipeps") and not set(demo.EXTRA_PARTS) & set(demo.PARTS)
    results = {"trg": demo._trg(demo._example("trg_specific_heat"), chi=6, steps=8),
               "ipeps": demo._ipeps(demo._example("ipeps_heisenberg"), False, steps=12)}
    out = capsys.readouterr().out
    assert "specific heat" in out and "Liao et al. 2019: -0.6602" in out
    assert results["ipeps"]["energy"] < -0.659
    path = demo.plot(results, str(tmp_path / "demo.png"))
    assert open(path, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    assert demo.main(["--parts", "nothing"]) == 2
    assert "ipeps" in capsys.readouterr().err


def test_w12_trg_gradient_benchmark_runs_both_libraries(capsys):
    from benchmarks import trg_gradient

    rows = trg_gradient.main(["--chi", "4", "--steps", "6", "--repeats", "1"])
    assert [r["beta"] for r in rows] == [0.6, 0.3]
    for r in rows:
        assert r["yaad_value"] == pytest.approx(r["fd"], rel=1e-8)
        assert r["yaad"] > 0 and r["torch"] > 0
    assert "torch/yaad" in capsys.readouterr().out
