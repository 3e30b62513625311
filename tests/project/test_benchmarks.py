"""The benchmark harness: floors right, every installed implementation agrees with them on
tiny sizes, the check catches a wrong one, and the command line writes its outputs.
No timing is asserted."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # benchmarks/ is a top-level package of the repository
    sys.path.insert(0, str(ROOT))

from benchmarks import libraries, report, runner, workloads  # noqa: E402
from benchmarks.libraries import Impl, Step, Unsupported  # noqa: E402

CHECK = runner.Options(tiny=True, slow=True, time=False)
IDS = [w.id for w in workloads.WORKLOADS]
SKIP_REASONS = ("not installed", "has no", "n/a", "no complex")


def _tiny(w):
    return w.inputs(np.random.default_rng(0), True)


def _numeric_grads(w, params, consts, eps=1e-6):
    """Central differences of the floor's loss (complex: real and imaginary parts)."""
    params = {k: v.astype(np.result_type(v, np.float64)) for k, v in params.items()}
    out = []
    for name, p in params.items():
        g = np.zeros_like(p)
        steps = (1, 1j) if np.iscomplexobj(p) else (1,)
        for idx in np.ndindex(p.shape):
            for s in steps:
                vals = []
                for sign in (1, -1):
                    q = p.copy()
                    q[idx] += sign * s * eps
                    moved = tuple(q if k == name else v for k, v in params.items())
                    vals.append(w.floor(moved, consts)[0])
                g[idx] += s * (vals[0] - vals[1]) / (2 * eps)
        out.append(g)
    return out


@pytest.mark.parametrize("wid", IDS)
def test_floor_gradient_matches_finite_differences(wid):
    w = next(w for w in workloads.WORKLOADS if w.id == wid)
    params, consts = _tiny(w)
    as64 = {k: v.astype(np.result_type(v, np.float64)) for k, v in params.items()}
    consts64 = {k: v.astype(np.float64) if isinstance(v, np.ndarray) and v.dtype.kind == "f"
                else v for k, v in consts.items()}
    _, grads = w.floor(tuple(as64.values()), consts64)
    for g, num in zip(grads, _numeric_grads(w, as64, consts64)):
        np.testing.assert_allclose(g, num, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("wid", IDS)
def test_floor_keeps_dtypes(wid):
    w = next(w for w in workloads.WORKLOADS if w.id == wid)
    params, consts = _tiny(w)
    loss, grads = w.floor(tuple(params.values()), consts)
    assert np.ndim(loss) == 0
    for p, g in zip(params.values(), grads):
        assert g.shape == p.shape and g.dtype == p.dtype


@pytest.mark.parametrize("impl", [i.name for i in libraries.IMPLS])
@pytest.mark.parametrize("wid", IDS)
def test_every_implementation_agrees_with_the_floor(wid, impl):
    w = next(w for w in workloads.WORKLOADS if w.id == wid)
    params, consts = _tiny(w)
    ref = runner.reference(w, params, consts)
    spec = next(i for i in libraries.IMPLS if i.name == impl)
    r, _ = runner.check(w, spec, params, consts, ref, CHECK)
    assert r.status in ("ok", "skipped"), f"{wid} / {impl}: {r.status}: {r.note}"
    if r.status == "skipped":
        assert any(s in r.note for s in SKIP_REASONS), r.note
        if impl in ("numpy", "yaad"):
            assert "not installed" not in r.note
    assert r.workload == wid and r.impl == impl


def test_floor_is_always_ok():
    w = workloads.WORKLOADS[0]
    params, consts = _tiny(w)
    r, step = runner.check(w, libraries.IMPLS[0], params, consts,
                           w.floor(tuple(params.values()), consts), CHECK)
    assert (r.status, r.note) == ("ok", "") and step is not None


# ---- the check catches what it must -------------------------------------------------------

def _fake(name, call, conj=False):
    """An implementation whose step is ``call(floor result) -> (loss, grads)``."""
    def prepare(w, params, consts):
        ref = w.floor(tuple(params.values()), consts)
        return Step(lambda: call(ref), np.asarray)
    return Impl(name, "numpy", prepare, conj=conj)


def _run(wid, impl):
    w = next(w for w in workloads.WORKLOADS if w.id == wid)
    params, consts = _tiny(w)
    return runner.check(w, impl, params, consts, runner.reference(w, params, consts),
                        CHECK)[0]


def test_wrong_gradient_is_a_mismatch_and_not_timed():
    w = workloads.WORKLOADS[0]
    wrong = _fake("wrong", lambda ref: (ref[0], [g * 1.001 for g in ref[1]]))
    results = runner.run([w], [libraries.IMPLS[0], wrong], replace(CHECK, time=True, target_s=0.0))
    assert [r.status for r in results] == ["ok", "mismatch"]
    assert "gradient of x1" in results[1].note
    assert results[0].median_us > 0 and results[1].median_us is None


def test_wrong_loss_is_a_mismatch():
    r = _run("W3", _fake("wrong", lambda ref: (ref[0] + 1e-3, ref[1])))
    assert r.status == "mismatch" and r.note.startswith("loss")


def test_wrong_shape_is_a_mismatch():
    r = _run("W6/einsum", _fake("wrong", lambda ref: (ref[0], [g[:1] for g in ref[1]])))
    assert r.status == "mismatch" and "shape" in r.note


def test_conjugate_convention():
    conj = lambda ref: (ref[0], [np.conj(g) for g in ref[1]])
    assert _run("W5", _fake("jaxlike", conj, conj=True)).status == "ok"
    assert _run("W5", _fake("jaxlike", conj, conj=False)).status == "mismatch"


def test_upcast_gradient_is_noted():
    r = _run("W2/f32", _fake("up", lambda ref: (ref[0], [g.astype(np.float64)
                                                        for g in ref[1]])))
    assert r.status == "ok" and "W1.grad is float64 for a float32 input" in r.note


def test_missing_peer_unsupported_and_error_are_notes():
    def missing(w, p, c):
        raise ImportError("no", name="somepeer")

    def unsupported(w, p, c):
        raise Unsupported("peer has no einsum")

    def broken(w, p, c):
        raise RecursionError("maximum recursion depth exceeded\nmore")

    assert _run("W1", Impl("p", "p", missing)).note == "skipped: not installed (somepeer)"
    assert _run("W1", Impl("p", "p", unsupported)).note == "skipped: peer has no einsum"
    r = _run("W1", Impl("p", "p", broken))
    assert (r.status, r.note) == ("error", "RecursionError: maximum recursion depth exceeded")
    no_complex = replace(libraries.IMPLS[0], complex=False)
    assert _run("W5", no_complex).note == "skipped: numpy has no complex numbers"


def test_slow_cells_are_skipped_unless_asked():
    w = next(w for w in workloads.WORKLOADS if w.id == "W8")
    params, consts = _tiny(w)
    fake = replace(libraries.IMPLS[0], name="jax.jit")
    ref = w.floor(tuple(params.values()), consts)
    r, step = runner.check(w, fake, params, consts, ref, replace(CHECK, slow=False))
    assert r.status == "skipped" and "--slow" in r.note and step is None
    assert runner.check(w, fake, params, consts, ref, CHECK)[0].status == "ok"


def test_namespace_reports_missing_functions():
    xp = libraries.namespace("lib", object())
    with pytest.raises(Unsupported, match="lib has no einsum"):
        xp.einsum("ii", np.eye(2))


def test_composed_log_softmax():
    z = np.random.default_rng(1).standard_normal((3, 4))
    from scipy.special import log_softmax

    np.testing.assert_allclose(libraries.composed_log_softmax(np)(z, axis=-1),
                               log_softmax(z, -1))


# ---- W9-W11: the physics and the optimizer are what they claim ----------------------------

def _workload(wid):
    return next(w for w in workloads.WORKLOADS if w.id == wid)


@pytest.mark.parametrize("tiny", [True, False])
def test_w9_gates_ring_and_hamiltonian(tiny):
    from scipy.linalg import expm

    w = _workload("W9")
    params, c = w.inputs(np.random.default_rng(0), tiny)
    layers, n, _ = params["theta"].shape
    Y, Z = np.array([[0, -1j], [1j, 0]]), np.diag([1.0, -1.0])
    for t in (0.3, -2.1):  # RY(t) = expm(-i t Y / 2), RZ(t) = expm(-i t Z / 2)
        for K, P in ((c["KY"], Y), (c["KZ"], Z)):
            np.testing.assert_allclose(np.cos(t / 2) * c["I2"] + np.sin(t / 2) * K,
                                       expm(-0.5j * t * P), atol=1e-14)
    # the einsum CNOTs of the loss (control q, target q+1 around the ring) and the floor's
    # permutation are the same map: every basis state, bit by bit
    for index in range(2 ** n):
        bits = [(index >> (n - 1 - q)) & 1 for q in range(n)]
        psi = np.zeros((2,) * n, complex)
        psi[tuple(bits)] = 1
        for spec in c["two"]:
            psi = np.einsum(spec, c["CNOT"], psi)
        for q in range(n):
            bits[(q + 1) % n] ^= bits[q]
        expected = np.zeros((2,) * n)
        expected[tuple(bits)] = 1
        np.testing.assert_array_equal(psi, expected)
        flat = np.zeros(2 ** n, complex)
        flat[index] = 1
        np.testing.assert_array_equal(flat[c["ring"]].reshape(psi.shape), psi)
    np.testing.assert_array_equal(c["ring"][c["ring_inv"]], np.arange(2 ** n))
    # -sum Z Z - sum X on a ring: <0..0|H|0..0> = <+..+|H|+..+> = -n, H Hermitian
    H = c["H"]
    plus = np.full(2 ** n, 2 ** (-n / 2))
    assert H.shape == (2 ** n, 2 ** n) and H.dtype == complex
    np.testing.assert_allclose(H, H.conj().T)
    np.testing.assert_allclose([H[0, 0].real, plus @ H @ plus], [-n, -n], atol=1e-12)
    assert np.count_nonzero(H - np.diag(np.diag(H))) == n * 2 ** n  # one X flip per qubit
    # all angles zero: no rotation, the CNOTs fix |0..0>, the energy is -n
    loss, (grad,) = w.floor((np.zeros_like(params["theta"]),), c)
    assert loss == pytest.approx(-n) and grad.shape == (layers, n, 2)


def test_w10_floor_exponentials_and_fidelity():
    from scipy.linalg import expm

    w = _workload("W10")
    params, c = _tiny(w)
    u = params["u"]
    U = np.eye(4)
    for k in range(c["steps"]):  # the floor exponentiates through eigh: SciPy is the oracle
        U = expm(-1j * c["dt"] * (c["H0"] + u[k, 0] * c["H1"] + u[k, 1] * c["H2"])) @ U
    target = c["target_conj"].conj()
    fidelity = abs(np.trace(target.conj().T @ U)) ** 2 / 16
    assert 0 < fidelity < 1
    assert w.floor((u,), c)[0] == pytest.approx(fidelity, rel=1e-12)
    scipy_xp = SimpleNamespace(expm=expm, sum=np.sum)  # the loss as the peers run it
    assert w.loss(scipy_xp, (u,), c) == pytest.approx(fidelity, rel=1e-12)
    # the target (CNOT) is unitary, so the target itself would have fidelity 1
    np.testing.assert_array_equal(target @ target.conj().T, np.eye(4))
    assert abs(np.sum(c["target_conj"] * target)) ** 2 / 16 == 1.0


def test_w10_floor_handles_degenerate_spectra():
    # controls all zero: every H_k = Z Z / 2 has two doubly degenerate eigenvalues, where
    # divided differences need their limit
    w = _workload("W10")
    params, c = _tiny(w)
    zero = np.zeros_like(params["u"])
    _, (grad,) = w.floor((zero,), c)
    num = _numeric_grads(w, {"u": zero}, c)[0]
    assert np.all(np.isfinite(grad))
    np.testing.assert_allclose(grad, num, rtol=1e-5, atol=1e-8)


def test_hand_written_adam_is_torch_adam():
    """The floor's Adam (and so JAX's, autograd's, MyGrad's) against torch.optim.Adam,
    in float64, fed the same gradients for five steps."""
    import torch

    w = _workload("W11")
    params, consts = _tiny(w)
    params = {k: v.astype(np.float64) for k, v in params.items()}
    consts = {**consts, "x": consts["x"].astype(np.float64)}
    ours = libraries.prepare_floor(w, params, consts)
    leaves = [torch.tensor(a, requires_grad=True) for a in params.values()]
    opt = torch.optim.Adam(leaves, **w.train.kwargs())
    for _ in range(5):
        loss, new = ours.call()
        now = tuple(p.detach().numpy() for p in leaves)
        torch_loss, grads = w.floor(now, consts)
        for p, g in zip(leaves, grads):
            p.grad = torch.from_numpy(g)
        opt.step()
        assert loss == pytest.approx(torch_loss, rel=1e-13)
        for a, p in zip(new, leaves):
            np.testing.assert_allclose(a, p.detach().numpy(), rtol=1e-13, atol=1e-15)
    start = np.concatenate([a.ravel() for a in params.values()])
    assert np.max(np.abs(np.concatenate([a.ravel() for a in new]) - start)) > 2e-3


class _NoBiasCorrection(workloads.Adam):
    def corrections(self, t):
        return self.lr, 1.0


# What the check of a training step catches (three steps, 1e-2 of the largest update): a
# learning rate off by 5%, a wrong sign, no bias correction, no momentum, a state that is
# not carried over. Not a second-moment decay 0.99 for 0.999 (0.06% of the update on the
# tiny sizes, 0.3% on the full ones: the first steps' gradients barely change): the
# hand-written Adam is checked against torch.optim.Adam above for that.
@pytest.mark.parametrize("wrong", [dict(lr=1.05e-3), dict(lr=-1e-3), dict(b1=0.0),
                                   "no bias correction", "one step"])
def test_wrong_adam_is_a_mismatch(wrong):
    w = _workload("W11")

    def prepare(workload, params, consts):
        if wrong == "one step":  # no state carried over: every call is the first step
            return Step(lambda: libraries.prepare_floor(workload, params, consts).call(),
                        np.asarray)
        adam = (_NoBiasCorrection() if wrong == "no bias correction"
                else replace(workload.train, **wrong))
        return libraries.prepare_floor(replace(workload, train=adam), params, consts)

    r = _run("W11", Impl("wrong", "numpy", prepare))
    assert r.status == "mismatch", r.note
    assert w.checked_calls == 3


def test_training_step_outputs_params_and_keeps_dtypes():
    w = _workload("W11")
    params, consts = _tiny(w)
    before = {k: v.copy() for k, v in params.items()}
    step = libraries.prepare_floor(w, params, consts)
    first = step.call()
    second = step.call()
    for (name, p), a, b in zip(params.items(), first[1], second[1]):
        assert a.dtype == b.dtype == p.dtype == np.float32 and a.shape == p.shape
        assert not np.array_equal(a, b) and not np.array_equal(a, p)
        np.testing.assert_array_equal(p, before[name])  # the inputs are not touched
    assert second[0] < first[0]  # the loss went down


# ---- timing, memory, selection and reports ------------------------------------------------

def test_measure_interleaves_and_counts():
    calls = []
    opts = runner.Options(target_s=0.0, min_repeats=4, batch_s=0.0, rounds=2)
    out = runner.measure([lambda: calls.append("a"), lambda: calls.append("b")], opts)
    assert [(m["repeats"], m["number"]) for m in out] == [(4, 1), (4, 1)]
    # one calibrating call each (no warm-up with target_s=0), then two rounds of 2 + 2
    assert "".join(calls) == "ab" + "aabb" * 2
    assert all(m["cpu"] >= 0 and m["wall"] >= 0 for m in out)


def test_cpu_clock_ignores_sleeping():
    import time

    opts = runner.Options(target_s=0.0, min_repeats=3, batch_s=0.0, rounds=1)
    # a long sleep against a loose bound: the CPU clock still counts the
    # interpreter's own work around the call, which a loaded machine stretches
    (m,) = runner.measure([lambda: time.sleep(0.05)], opts)
    assert m["wall"] >= 0.05 and m["cpu"] < 0.025


def test_peak_memory_sees_numpy_buffers():
    step = Step(lambda: (np.ones(1_000_000).sum(), []), np.asarray)
    assert 8.0 <= runner.peak_numpy_mb(step) < 8.1


def test_select():
    assert [w.id for w in workloads.select("w2,W6/einsum")] == ["W2/f64", "W2/f32",
                                                               "W6/einsum"]
    assert len(workloads.select(None)) == len(workloads.WORKLOADS)
    with pytest.raises(SystemExit, match="unknown workloads: W99"):
        workloads.select("W99")
    assert [i.name for i in libraries.select("torch")] == ["numpy", "torch"]
    with pytest.raises(SystemExit, match="unknown implementations"):
        libraries.select("tensorflow")


def test_ratios_and_tables():
    rows = [runner.Result("W1", "numpy", "ok", median_us=10.0),
            runner.Result("W1", "yaad", "ok", median_us=20.0),
            runner.Result("W1", "torch", "ok", median_us=80.0),
            runner.Result("W1", "mygrad", "skipped", "skipped: not installed (mygrad)")]
    runner._ratios(rows)
    assert [r.ratio_floor for r in rows] == [1.0, 2.0, 8.0, None]
    assert [r.ratio_torch for r in rows] == [0.125, 0.25, 1.0, None]
    text = report.table(rows)
    assert "2.00x" in text and "skipped: not installed (mygrad)" in text
    machine = {"cpu": "CPU", "logical_cpus": 2, "platform": "Linux", "python": "3",
               "numpy_blas": "blas", "versions": dict.fromkeys(
                   ("numpy", "torch", "jax", "autograd", "mygrad"), "1"),
               "threads": {"env": {"OMP_NUM_THREADS": "1"}, "pinned_cpu": 1}}
    md = report.markdown(rows, machine)
    assert "| W1 | 10.0 | 20.0 (2.00x) | 80.0 (8.00x) | not installed |" in md
    assert "| W1 | 2.00x | 0.25x |" in md


def test_command_line_writes_json_markdown_and_chart(tmp_path):
    cmd = [sys.executable, "-m", "benchmarks", "--tiny", "--quick", "--target", "0.001",
           "--workloads", "W1,W6", "--impls", "yaad", "--no-pin", "--out", str(tmp_path)]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    data = json.loads((tmp_path / "bench.json").read_text())
    cells = {(r["workload"], r["impl"]): r for r in data["results"]}
    assert set(cells) == {(w, i) for w in ("W1", "W6/einsum", "W6/matmul")
                          for i in ("numpy", "yaad")}
    assert all(cells[w, "numpy"]["ratio_floor"] == 1.0 for w in ("W1", "W6/einsum"))
    assert cells["W1", "yaad"]["status"] == "ok" and cells["W1", "yaad"]["median_us"] > 0
    assert data["machine"]["threads"]["env"]["OMP_NUM_THREADS"] == "1"
    assert data["options"]["tiny"] is True
    assert "| workload | numpy | yaad |" in (tmp_path / "bench.md").read_text()
    assert "W1" in done.stdout and "x floor" in done.stdout
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return
    assert (tmp_path / "bench.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_jacobian_benchmark_checks_every_implementation_before_timing_it():
    import yaad
    from benchmarks import jacobian

    rows = jacobian.rows(n=6, repeats=1)
    timed = {(t, impl) for t, impl, ms in rows if ms >= 0}
    assert {("jacrev", "yaad (vmap)"), ("jacrev", "yaad, loop of VJPs"),
            ("jacrev", "torch.func"), ("jacrev", "jax (no jit)"), ("hessian", "yaad (vmap)"),
            ("hessian", "torch.func"), ("jacfwd", "jax (no jit)")} <= timed
    w, b, x = jacobian.problem(6)
    np.testing.assert_allclose(jacobian.loop_jacrev(jacobian.yaad_f(w, b), x),
                               yaad.func.jacrev(jacobian.yaad_f(w, b))(x), rtol=1e-12)
