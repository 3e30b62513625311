"""quimb's tensor networks differentiated by yaad, next to the same programs on PyTorch.

quimb (through autoray) and cotengra run on yaad tensors as they are: nothing to
register (``yaad.interop`` does it when they are imported). Four programs, each run once
with yaad tensors and once with PyTorch tensors, their values and gradients compared:

1. the ground state of the Heisenberg chain as an MPS, by quimb's ``TNOptimizer``
   (L-BFGS-B, ``autodiff_backend="yaad"`` against ``"torch"``), checked against DMRG;
2. the fidelity of an MPS with its compression to a smaller bond (``compress``: truncated
   SVDs), and its gradient;
3. a gauge-invariant function of the canonical form (``canonicalize``: QRs);
4. the norm of a PEPS by boundary contraction (compressing as it goes), with cotengra
   choosing the contraction order of the exact norm for comparison.

Run: ``python examples/quimb_side_by_side.py`` (a few seconds; ``--L``, ``--D``,
``--steps`` for other sizes). Needs ``pip install quimb cotengra torch``.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")  # (small arrays: one BLAS thread)

import numpy as np

import yaad


def _quimb():
    with warnings.catch_warnings():  # (cotengra: "Couldn't import `kahypar`")
        warnings.simplefilter("ignore")
        import autoray
        import cotengra
        import quimb.tensor as qtn
        import torch
    return qtn, autoray, cotengra, torch


def _leaf(backend: str, a: np.ndarray):
    _, _, _, torch = _quimb()
    return (yaad.tensor(a, requires_grad=True) if backend == "yaad"
            else torch.tensor(a, requires_grad=True))


def _with(tn, leaves):
    tn = tn.copy()
    for t, leaf in zip(tn, leaves):
        t.modify(data=leaf)
    return tn


def both(program, arrays) -> dict:
    """``program(leaves) -> scalar`` with yaad and with PyTorch leaves: value, gradients,
    seconds."""
    _, autoray, _, _ = _quimb()
    out = {}
    for backend in ("yaad", "torch"):
        start = time.perf_counter()
        leaves = [_leaf(backend, a) for a in arrays]
        value = program(leaves)
        value.backward()
        out[backend] = (float(autoray.to_numpy(value).real),
                        [np.asarray(x.grad) for x in leaves], time.perf_counter() - start)
    return out


def difference(out: dict) -> tuple[float, float]:
    """Relative differences of the values and of the gradients, yaad against PyTorch."""
    (vy, gy, _), (vt, gt, _) = out["yaad"], out["torch"]
    scale = max(np.abs(g).max() for g in gt)
    return abs(vy - vt) / abs(vt), max(np.abs(a - b).max() for a, b in zip(gy, gt)) / scale


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--L", type=int, default=8, help="sites of the chain (default 8)")
    parser.add_argument("--D", type=int, default=6, help="bond dimension (default 6)")
    parser.add_argument("--steps", type=int, default=60, help="L-BFGS-B steps (default 60)")
    args = parser.parse_args(argv)
    qtn, _, cotengra, _ = _quimb()
    results = {}

    print(f"1. Heisenberg chain, L={args.L}, MPS of bond {args.D}, {args.steps} L-BFGS-B "
          f"steps of quimb's TNOptimizer")
    mpo = qtn.MPO_ham_heis(args.L)
    psi0 = qtn.MPS_rand_state(args.L, args.D, seed=1)

    def energy(psi, mpo):
        return qtn.expec_TN_1D(psi.H, mpo, psi) / (psi.H @ psi)

    found = {}
    for backend in ("yaad", "torch"):
        opt = qtn.TNOptimizer(psi0, loss_fn=energy, loss_constants={"mpo": mpo},
                              autodiff_backend=backend, optimizer="L-BFGS-B", progbar=False)
        value, grad = opt.vectorized_value_and_grad(opt.vectorizer.vector.copy())
        start = time.perf_counter()  # (after the first call, which plans the contractions)
        opt.optimize(args.steps)
        found[backend] = (value, grad, opt.loss, time.perf_counter() - start)
    dmrg = qtn.DMRG2(mpo, bond_dims=[args.D])
    dmrg.solve(tol=1e-10, verbosity=0)
    (_, gy, ey, sy), (_, gt, et, st) = found["yaad"], found["torch"]
    print(f"   energy: yaad {ey:.8f} ({sy:.2f} s), PyTorch {et:.8f} ({st:.2f} s), "
          f"DMRG {dmrg.energy:.8f}")
    print(f"   first gradient: largest difference {np.abs(gy - gt).max():.1e} "
          f"(of {np.abs(gt).max():.1e})")
    results["ground_state"] = {"yaad": ey, "torch": et, "dmrg": dmrg.energy,
                               "gradient": float(np.abs(gy - gt).max() / np.abs(gt).max())}

    mps = qtn.MPS_rand_state(args.L, args.D, seed=0)
    arrays = [np.asarray(t.data) for t in mps]

    def fidelity(leaves):
        psi = _with(mps, leaves)
        small = psi.copy()
        small.compress(max_bond=max(args.D // 2, 1), cutoff=0.0)
        return abs(psi.H @ small) ** 2 / abs(psi.H @ psi) ** 2

    def canonical(leaves):
        psi = _with(mps, leaves)
        psi.canonicalize(args.L // 2, inplace=True)
        centre = psi[args.L // 2].data
        return (centre * centre.conj()).sum().real

    peps = qtn.PEPS.rand(3, 3, bond_dim=2, seed=3)
    peps_arrays = [np.asarray(t.data) for t in peps]

    def boundary(leaves):
        p = _with(peps, leaves)
        return (p.H & p).contract_boundary(max_bond=4, cutoff=0.0)

    def exact(leaves):
        p = _with(peps, leaves)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return (p.H & p).contract(optimize=cotengra.HyperOptimizer(max_repeats=8,
                                                                       progbar=False))

    for k, (name, program, data) in enumerate([
            (f"fidelity of compress to bond {max(args.D // 2, 1)}", fidelity, arrays),
            (f"canonicalize around site {args.L // 2}", canonical, arrays),
            ("PEPS 3x3 norm, boundary contraction (bond 4)", boundary, peps_arrays),
            ("PEPS 3x3 norm, exact (cotengra's order)", exact, peps_arrays)], start=2):
        out = both(program, data)
        dv, dg = difference(out)
        print(f"{k}. {name}: {out['yaad'][0]:.10g} (yaad {out['yaad'][2]:.2f} s, PyTorch "
              f"{out['torch'][2]:.2f} s); yaad vs PyTorch: value {dv:.1e}, gradients {dg:.1e}")
        results[name] = {"value": out["yaad"][0], "value_difference": dv,
                         "gradient_difference": dg}
    return results


if __name__ == "__main__":
    main()
