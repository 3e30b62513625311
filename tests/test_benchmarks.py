"""The benchmark harness: floors right, every installed implementation agrees with them on
tiny sizes, the check catches a wrong one, and the command line writes its outputs.
No timing is asserted."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
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
    ref = w.floor(tuple(params.values()), consts)
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
    return runner.check(w, impl, params, consts, w.floor(tuple(params.values()), consts),
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
    (m,) = runner.measure([lambda: time.sleep(0.005)], opts)
    assert m["wall"] >= 0.005 and m["cpu"] < 0.0025


def test_peak_memory_sees_numpy_buffers():
    step = Step(lambda: (np.ones(1_000_000).sum(), []), np.asarray)
    assert 8.0 <= runner.peak_numpy_mb(step) < 8.1


def test_select():
    assert [w.id for w in workloads.select("w2,W6/einsum")] == ["W2/f64", "W2/f32",
                                                               "W6/einsum"]
    assert len(workloads.select(None)) == len(workloads.WORKLOADS)
    with pytest.raises(SystemExit, match="unknown workloads: W9"):
        workloads.select("W9")
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
