"""The yaad demo (``python -m yaad demo``): three small jobs done for real, and a figure.

1. ``seed``: the gradient of ``tr(x1 @ x2)`` for two 30x30 float64 matrices, timed for
   yaad eager (and ``yaad.compile`` where it exists) against hand-written NumPy and
   PyTorch (if installed).
2. ``ising``: the ground state of the transverse-field Ising chain (L = 10, h = 1, open
   ends) by Adam on the full complex wave function, checked against exact
   diagonalisation. The Hamiltonian is a sparse matrix wrapped as a yaad op in two lines.
3. ``mlp``: a small multilayer perceptron trained on scikit-learn's bundled digits
   (8x8 images, no download), with its test accuracy.

Two more parts run on request (``--parts trg,ipeps``), from the scripts in ``examples/``
of a source checkout: ``trg``, the specific heat of the 2D Ising model as a second
derivative through a TRG against Onsager's solution, and ``ipeps``, the variational iPEPS
of the Heisenberg antiferromagnet at bond dimension 2 (docs/tensor-networks.md).

The building blocks (``tfim_hamiltonian``, ``hamiltonian_op``, ``ising_ground_state``,
``digits_mlp``, ``seed_timings``) are public so that the scripts in ``examples/`` and the
tests reuse them.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time
from typing import Any, Callable, Iterable

import numpy as np

import yaad

PARTS = ("seed", "ising", "mlp")  # the default
EXTRA_PARTS = ("trg", "ipeps")  # tensor networks, from examples/ (about a minute)


def _progress(iterable: Iterable, enabled: bool, desc: str, total: int | None = None) -> Any:
    """A tqdm progress bar on stderr, or the plain iterable (tqdm missing or disabled)."""
    if enabled:
        try:
            from tqdm.auto import tqdm
        except ImportError:
            return iterable
        return tqdm(iterable, desc=desc, total=total, leave=False, file=sys.stderr)
    return iterable


@contextlib.contextmanager
def _threads(n: int):
    """Run with ``n`` BLAS / OpenMP threads (threadpoolctl) and ``n`` PyTorch threads.

    Every timed part of the demo runs inside: with the libraries' defaults, BLAS's threads
    and the machine's other work can oversubscribe the cores (the tensor-network parts
    once took 244 s on two cores, and 9.7 s with one thread). Without threadpoolctl, the
    BLAS pools are left alone, with a note."""
    with contextlib.ExitStack() as stack:
        try:
            from threadpoolctl import threadpool_limits

            stack.enter_context(threadpool_limits(n))
        except ImportError:
            if not _NOTED:
                _NOTED.append("threadpoolctl")
                print("  (threadpoolctl is not installed: BLAS threads not limited; "
                      "pip install threadpoolctl)")
        torch = sys.modules.get("torch")
        before = torch.get_num_threads() if torch is not None else None
        if torch is not None:
            torch.set_num_threads(n)
        try:
            yield
        finally:
            if torch is not None:
                torch.set_num_threads(before)


_NOTED: list = []  # (the missing threadpoolctl is said once)


# ---- 1. the seed workload ------------------------------------------------------------

def _seed_implementations(x1: np.ndarray, x2: np.ndarray) -> dict[str, Callable[[], tuple]]:
    """name -> a function computing (loss, grad x1, grad x2) for the seed workload."""
    impls: dict[str, Callable[[], tuple]] = {}

    def numpy_by_hand():
        return np.trace(x1 @ x2), x2.T, x1.T

    impls["NumPy, gradient by hand"] = numpy_by_hand

    t1 = yaad.tensor(x1, requires_grad=True)
    t2 = yaad.tensor(x2, requires_grad=True)

    def yaad_eager():
        t1.grad = t2.grad = None
        loss = yaad.trace(t1 @ t2)
        loss.backward()
        return loss.item(), t1.grad, t2.grad

    impls["yaad eager"] = yaad_eager

    compile_fn = getattr(yaad, "compile", None)
    if compile_fn is not None:
        try:
            compiled = compile_fn(lambda a, b: yaad.trace(a @ b))

            def yaad_compiled():
                t1.grad = t2.grad = None
                loss = compiled(t1, t2)
                loss.backward()
                return loss.item(), t1.grad, t2.grad

            yaad_compiled()
            impls["yaad.compile"] = yaad_compiled
        except Exception as e:  # a work in progress must not break the demo
            print(f"  (yaad.compile skipped: {type(e).__name__}: {e})")

    try:
        import torch
    except ImportError:
        torch = None
    if torch is not None:
        p1 = torch.tensor(x1, requires_grad=True)
        p2 = torch.tensor(x2, requires_grad=True)

        def torch_eager():
            p1.grad = p2.grad = None
            loss = torch.trace(p1 @ p2)
            loss.backward()
            return loss.item(), p1.grad.numpy(), p2.grad.numpy()

        impls[f"PyTorch {torch.__version__.split('+')[0]} eager"] = torch_eager
    return impls


def seed_timings(repeats: int = 30, number: int = 200, progress: bool = True,
                 seed: int = 0) -> list[tuple[str, float]]:
    """Median time per call (microseconds) of loss + both gradients of ``tr(x1 @ x2)``.

    Parameters
    ----------
    repeats, number : int
        ``repeats`` timings of ``number`` calls each; the median of the per-call means.
    progress : bool
        Show a progress bar.
    seed : int
        The inputs come from ``numpy.random.default_rng(seed)`` (30x30 float64 each).

    Returns
    -------
    list of (name, microseconds)
        The first entry is the NumPy floor. Every implementation's gradients are checked
        against it first (a wrong one raises ``AssertionError``).
    """
    rng = np.random.default_rng(seed)
    x1, x2 = rng.standard_normal((30, 30)), rng.standard_normal((30, 30))
    impls = _seed_implementations(x1, x2)
    ref = impls["NumPy, gradient by hand"]()
    for name, fn in impls.items():
        got = fn()
        for r, g in zip(ref, got):
            if not np.allclose(r, g, rtol=1e-10, atol=1e-12):
                raise AssertionError(f"seed workload: {name} computes a wrong loss or gradient")
    for fn in impls.values():  # warm up
        for _ in range(number):
            fn()
    samples: dict[str, list] = {name: [] for name in impls}
    # Repeats interleave the implementations, so that a slow spell of a noisy machine
    # does not fall on one of them only.
    jobs = [(name, fn) for _ in range(repeats) for name, fn in impls.items()]
    with _threads(1):  # (the seed figures are one thread's, whatever --threads says)
        for name, fn in _progress(jobs, progress, "timing tr(x1 @ x2)"):
            start = time.perf_counter()
            for _ in range(number):
                fn()
            samples[name].append((time.perf_counter() - start) / number * 1e6)
    rows = [(name, statistics.median(s)) for name, s in samples.items()]
    return rows


# ---- 2. the transverse-field Ising chain ---------------------------------------------

def tfim_hamiltonian(L: int, h: float, J: float = 1.0) -> Any:
    """``H = -J sum Z_i Z_{i+1} - h sum X_i`` on an open chain of ``L`` spins, as a
    ``scipy.sparse`` CSR matrix of size 2^L (site 0 is the most significant bit)."""
    import scipy.sparse as sp

    n = 2 ** L
    states = np.arange(n)
    bits = (states[:, None] >> (L - 1 - np.arange(L))) & 1  # bits[s, i] of site i
    spins = 1 - 2 * bits  # Z eigenvalues
    diagonal = -J * np.sum(spins[:, :-1] * spins[:, 1:], axis=1)
    rows = np.concatenate([states] + [states] * L)
    cols = np.concatenate([states] + [states ^ (1 << (L - 1 - i)) for i in range(L)])
    vals = np.concatenate([diagonal, np.full(n * L, -h)])
    return sp.csr_matrix((vals.astype(float), (rows, cols)), shape=(n, n))


def hamiltonian_op(H: Any) -> Callable:
    """``psi -> H @ psi`` as a differentiable yaad op, for a real symmetric (sparse) ``H``.

    Its VJP is the op itself (``H`` is Hermitian, so ``g -> H^H g = H g``), which also makes
    it differentiable to any order; as a linear map it needs no JVP rule.
    """
    apply = yaad.op(lambda psi: H @ psi, name="apply_hamiltonian", linear=True,
                    save_args=False, save_ans=False)
    apply.defvjp(lambda g, ans, psi: apply(g))
    return apply


def rayleigh_quotient(apply_h: Callable, psi: Any) -> Any:
    """The energy ``Re<psi|H|psi> / <psi|psi>`` of an unnormalised complex state."""
    return (psi.conj() * apply_h(psi)).real.sum() / (psi.real ** 2 + psi.imag ** 2).sum()


def ising_ground_state(L: int = 10, h: float = 1.0, steps: int = 1000, lr: float = 3e-3,
                       seed: int = 0, progress: bool = True) -> dict:
    """Minimise the energy of a complex wave function with Adam; compare with exact
    diagonalisation (Lanczos, ``scipy.sparse.linalg.eigsh``).

    Parameters
    ----------
    L, h : int, float
        Chain length and transverse field (J = 1).
    steps, lr : int, float
        Adam steps and learning rate.
    seed : int
        Seed of the random complex starting state.
    progress : bool
        Show a progress bar.

    Returns
    -------
    dict
        ``energies`` (per step), ``exact``, ``energy`` (final), ``relative_error``,
        ``seconds`` (of the optimisation).
    """
    from scipy.sparse.linalg import eigsh

    H = tfim_hamiltonian(L, h)
    exact = float(eigsh(H, k=1, which="SA")[0][0])
    apply_h = hamiltonian_op(H)
    rng = np.random.default_rng(seed)
    psi = yaad.tensor((rng.standard_normal(2 ** L) + 1j * rng.standard_normal(2 ** L))
                      / np.sqrt(2 ** (L + 1)), requires_grad=True)
    opt = yaad.optim.Adam([psi], lr=lr)
    energies = []
    start = time.perf_counter()
    for _ in _progress(range(steps), progress, f"Ising L={L}: Adam"):
        opt.zero_grad()
        energy = rayleigh_quotient(apply_h, psi)
        energy.backward()
        opt.step()
        energies.append(energy.item())
    seconds = time.perf_counter() - start
    with yaad.no_grad():
        final = float(rayleigh_quotient(apply_h, psi).item())
    return {"energies": np.array(energies), "exact": exact, "energy": final,
            "relative_error": abs(final - exact) / abs(exact), "seconds": seconds,
            "L": L, "h": h, "steps": steps}


# ---- 3. an MLP on the digits ---------------------------------------------------------

def load_digits_split(test_fraction: float = 0.2, seed: int = 0) -> tuple:
    """scikit-learn's digits (1797 8x8 images, bundled), scaled to [0, 1] and split at
    random: ``(x_train, y_train, x_test, y_test)``."""
    from sklearn.datasets import load_digits

    data = load_digits()
    x = data.data / 16.0
    y = data.target
    order = np.random.default_rng(seed).permutation(len(y))
    n_test = int(round(test_fraction * len(y)))
    test, train = order[:n_test], order[n_test:]
    return x[train], y[train], x[test], y[test]


def digits_mlp(epochs: int = 30, hidden: int = 64, lr: float = 3e-3, batch_size: int = 64,
               seed: int = 0, progress: bool = True) -> dict:
    """Train ``Linear(64, hidden) - Tanh - Linear(hidden, 10)`` with Adam and cross-entropy.

    Parameters
    ----------
    epochs, hidden, lr, batch_size : int, int, float, int
        The usual training knobs.
    seed : int
        Seed of the split, the initial weights and the shuffling.
    progress : bool
        Show a progress bar.

    Returns
    -------
    dict
        ``losses`` (mean training loss per epoch), ``accuracies`` (test accuracy per
        epoch), ``test_accuracy`` (final), ``n_test``, ``seconds``.
    """
    nn = yaad.nn
    x_train, y_train, x_test, y_test = load_digits_split(seed=seed)
    gen = np.random.default_rng(seed)
    model = nn.Sequential(nn.Linear(64, hidden, generator=gen), nn.Tanh(),
                          nn.Linear(hidden, 10, generator=gen))
    opt = yaad.optim.Adam(model.parameters(), lr=lr)
    losses, accuracies = [], []
    start = time.perf_counter()
    for _ in _progress(range(epochs), progress, "MLP on digits"):
        order = gen.permutation(len(y_train))
        total = 0.0
        for i in range(0, len(order), batch_size):
            idx = order[i:i + batch_size]
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x_train[idx]), y_train[idx])
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
        losses.append(total / len(order))
        with yaad.no_grad():
            predicted = np.argmax(model(x_test).data, axis=1)
        accuracies.append(float(np.mean(predicted == y_test)))
    return {"losses": np.array(losses), "accuracies": np.array(accuracies),
            "test_accuracy": accuracies[-1], "n_test": len(y_test),
            "seconds": time.perf_counter() - start, "model": model}


# ---- the figure ----------------------------------------------------------------------

def plot(results: dict, path: str) -> str:
    """Save a PNG with one panel per part that ran; return its path."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    parts = [p for p in PARTS + EXTRA_PARTS if p in results]
    fig, axes = plt.subplots(1, len(parts), figsize=(5.2 * len(parts), 4.2), squeeze=False)
    for ax, part in zip(axes[0], parts):
        r = results[part]
        if part == "seed":
            names = [n for n, _ in r]
            us = [t for _, t in r]
            colors = ["#888888" if n.startswith("NumPy") else "#1f77b4" if "yaad" in n
                      else "#d62728" for n in names]
            bars = ax.barh(names[::-1], us[::-1], color=colors[::-1])
            for bar, t in zip(bars, us[::-1]):
                ax.text(bar.get_width(), bar.get_y() + bar.get_height() / 2,
                        f" {t:.1f} us ({t / us[0]:.1f}x)", va="center", fontsize=9)
            ax.set_xscale("log")
            ax.set_xlim(min(us) / 2, max(us) * 12)
            ax.set_xlabel("median time per call, loss + both gradients (us, log scale)")
            ax.set_title("Gradient of tr(x1 @ x2), 30x30 float64\n(lower is faster)")
        elif part == "ising":
            err = np.abs(r["energies"] - r["exact"]) / abs(r["exact"])
            ax.semilogy(np.arange(1, len(err) + 1), np.maximum(err, 1e-16), color="#1f77b4",
                        label="yaad + Adam, complex psi")
            ax.axhline(1e-6, color="gray", ls="--", lw=1, label="target 1e-6")
            ax.set_xlabel("Adam step")
            ax.set_ylabel("relative energy error |E - E0| / |E0|")
            ax.set_title(f"Transverse-field Ising chain, L={r['L']}, h={r['h']:g}\n"
                         f"final error {r['relative_error']:.1e} vs exact "
                         f"E0 = {r['exact']:.6f}")
            ax.legend(loc="upper right")
        elif part == "trg":
            temps = np.linspace(1.2, 3.5, 200)
            ax.plot(temps, [r["onsager"](1 / t)[2] for t in temps], "k-", lw=1,
                    label="Onsager (exact)")
            ax.plot([row["T"] for row in r["rows"]], [row["c"] for row in r["rows"]], "o",
                    color="#1f77b4", label=f"TRG chi={r['chi']}, c = beta^2 d2lnZ/dbeta2")
            ax.set_xlabel("temperature T")
            ax.set_ylabel("specific heat per site")
            ax.set_title(f"2D Ising model: second derivative through a TRG\n"
                         f"{2 ** r['steps']} sites, by yaad through the truncated SVDs")
            ax.legend(loc="upper right", fontsize=8)
        elif part == "ipeps":
            energies = [e for e, _ in r["history"]]
            ax.plot(np.arange(1, len(energies) + 1), energies, color="#1f77b4",
                    label=f"iPEPS D={r['D']}, chi={r['chi']} (L-BFGS)")
            ax.axhline(r["published"], color="gray", ls="--", lw=1,
                       label=f"Liao et al. 2019: {r['published']}")
            ax.axhline(r["qmc"], color="#d62728", ls=":", lw=1, label=f"QMC: {r['qmc']}")
            ax.set_ylim(r["qmc"] - 0.002, max(energies[0], r["published"]) + 0.005)
            ax.set_xlabel("L-BFGS step")
            ax.set_ylabel("energy per site")
            ax.set_title("Heisenberg antiferromagnet: iPEPS\n"
                         "gradient through the CTMRG fixed point")
            ax.legend(loc="upper right", fontsize=8)
        else:
            epochs = np.arange(1, len(r["losses"]) + 1)
            ax.plot(epochs, r["losses"], color="#1f77b4", marker=".", label="training loss")
            ax.set_yscale("log")
            ax.set_xlabel("epoch")
            ax.set_ylabel("mean cross-entropy (log scale)", color="#1f77b4")
            twin = ax.twinx()
            twin.plot(epochs, 100 * r["accuracies"], color="#2ca02c", marker=".",
                      label="test accuracy")
            twin.set_ylabel("test accuracy (%)", color="#2ca02c")
            twin.set_ylim(min(80.0, 100 * r["accuracies"].min() - 2), 100.5)
            ax.set_title(f"MLP 64-{r['model'][0].out_features}-10 on sklearn digits\n"
                         f"test accuracy {100 * r['test_accuracy']:.1f}% "
                         f"({r['n_test']} images)")
    fig.suptitle("yaad demo", fontweight="bold")
    fig.tight_layout()
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# ---- the command line ----------------------------------------------------------------

def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """The options of ``python -m yaad demo``."""
    p = parser or argparse.ArgumentParser(prog="python -m yaad demo")
    p.description = ("Run the yaad demo: the seed workload timed against NumPy and PyTorch, "
                     "the Ising chain's ground state, and an MLP on the digits; save a figure.")
    p.add_argument("--parts", default=",".join(PARTS),
                   help=f"comma-separated parts to run, from {','.join(PARTS + EXTRA_PARTS)} "
                        f"(default: {','.join(PARTS)})")
    p.add_argument("--steps", type=int, default=1000, help="Adam steps for the Ising chain "
                   "(default 1000)")
    p.add_argument("--epochs", type=int, default=30, help="training epochs of the MLP "
                   "(default 30)")
    p.add_argument("--repeats", type=int, default=30, help="timing repeats per "
                   "implementation for the seed workload (default 30)")
    p.add_argument("--number", type=int, default=200, help="calls per timing repeat "
                   "(default 200)")
    p.add_argument("--L", type=int, default=10, help="length of the Ising chain (default 10)")
    p.add_argument("--out", default=os.path.join("out", "demo"),
                   help="output folder for the figure (default out/demo)")
    p.add_argument("--threads", type=int, default=1, help="BLAS, OpenMP and PyTorch threads "
                   "for every timed part (default 1: the arrays are small, and more threads "
                   "than free cores slow them down many times; the seed workload always uses "
                   "one)")
    p.add_argument("--no-figure", action="store_true", help="do not save the figure")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    return p


def _example(name: str) -> Any:
    """The script ``examples/<name>.py`` of the source checkout this module is in, or of
    the current directory (an installed, not editable, yaad run from a checkout), as a
    module; None where neither has it."""
    import importlib.util

    places = (os.path.join(os.path.dirname(__file__), os.pardir, os.pardir), os.getcwd())
    path = next((p for p in (os.path.join(d, "examples", f"{name}.py") for d in places)
                 if os.path.exists(p)), None)
    if path is None:
        return None
    spec = importlib.util.spec_from_file_location(f"yaad_example_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _trg(example: Any, chi: int = 16, steps: int = 16) -> dict:
    print(f"2D Ising model, TRG with chi={chi} on {2 ** steps} sites: the specific heat as "
          f"the second derivative of ln Z through the truncated SVDs")
    rows = example.scan([1.5, 2.0, 2.6, 3.0], chi, steps)
    return {"rows": rows, "chi": chi, "steps": steps, "onsager": example.onsager}


def _ipeps(example: Any, progress: bool, D: int = 2, chi: int = 16, steps: int = 60) -> dict:
    print(f"Heisenberg antiferromagnet, iPEPS with D={D}, chi={chi}: L-BFGS with gradients "
          f"through the CTMRG fixed point")
    r = example.optimize(D, chi, steps, verbose=progress)
    r.update(published=example.PUBLISHED[D], qmc=example.QMC_ENERGY)
    print(f"  energy per site {r['energy']:.6f} (Liao et al. 2019: {r['published']}, "
          f"QMC: {r['qmc']}), staggered magnetisation {r['magnetisation']:.4f} "
          f"({r['seconds']:.1f} s)")
    return r


def _run_part(part: str, args: argparse.Namespace, progress: bool, results: dict) -> None:
    """One part of the demo; its results go into ``results[part]``."""
    if part == "seed":
        print("Seed workload: loss and gradients of tr(x1 @ x2), two 30x30 float64, "
              "one thread")
        rows = seed_timings(args.repeats, args.number, progress)
        print(f"  {'implementation':<28}{'median us/call':>16}{'vs NumPy':>10}")
        for name, us in rows:
            print(f"  {name:<28}{us:>16.1f}{us / rows[0][1]:>9.1f}x")
        results["seed"] = rows
    elif part == "ising":
        print(f"Transverse-field Ising chain, L={args.L}, h=1, open ends: ground state "
              f"by Adam on a complex wave function of {2 ** args.L} amplitudes")
        r = ising_ground_state(L=args.L, steps=args.steps, progress=progress)
        print(f"  exact ground-state energy (Lanczos): {r['exact']:.10f}")
        print(f"  yaad + Adam, {r['steps']} steps:     {r['energy']:.10f}  "
              f"({r['seconds']:.2f} s)")
        print(f"  relative energy error: {r['relative_error']:.2e}")
        results["ising"] = r
    elif part in EXTRA_PARTS:
        example = _example("trg_specific_heat" if part == "trg" else "ipeps_heisenberg")
        if example is None:
            print(f"{part}: skipped, the scripts of examples/ are not here (run it from "
                  f"a source checkout of yaad)")
            return
        results[part] = _trg(example) if part == "trg" else _ipeps(example, progress)
    else:
        print("MLP (64-64-10, tanh) trained with Adam on scikit-learn's digits")
        try:
            r = digits_mlp(epochs=args.epochs, progress=progress)
        except ImportError as e:
            print(f"  skipped: scikit-learn is needed ({e}); pip install scikit-learn")
            return
        print(f"  final training loss: {r['losses'][-1]:.4f}  ({r['seconds']:.2f} s)")
        print(f"  test accuracy: {100 * r['test_accuracy']:.1f}% of {r['n_test']} "
              f"held-out images")
        results["mlp"] = r


def main(argv: list[str] | None = None) -> int:
    """Run the demo with command-line arguments; return an exit status."""
    args = build_parser().parse_args(argv)
    return run(args)


def run(args: argparse.Namespace) -> int:
    """Run the demo for parsed arguments (see :func:`build_parser`)."""
    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    unknown = [p for p in parts if p not in PARTS + EXTRA_PARTS]
    if unknown:
        print(f"unknown demo part(s) {unknown}; choose from {list(PARTS + EXTRA_PARTS)}",
              file=sys.stderr)
        return 2
    progress = not args.no_progress
    start = time.perf_counter()
    results: dict[str, Any] = {}
    print(f"yaad {yaad.__version__} demo (NumPy {np.__version__}, {os.cpu_count()} CPUs; "
          f"{args.threads} BLAS thread{'s' if args.threads != 1 else ''} per part)")
    for k, part in enumerate(parts, 1):
        print(f"\n[{k}/{len(parts)}] ", end="")
        with _threads(args.threads):
            _run_part(part, args, progress, results)
    if results and not args.no_figure:
        try:
            path = plot(results, os.path.join(args.out, "yaad-demo.png"))
            print(f"\nFigure saved to {path}")
        except ImportError:
            print("\nNo figure: matplotlib is not installed (pip install matplotlib)")
    print(f"Total wall time: {time.perf_counter() - start:.1f} s")
    return 0
