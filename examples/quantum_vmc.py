"""Variational ground state of the transverse-field Ising chain with a complex RBM ansatz.

The wave function is a restricted Boltzmann machine (Carleo and Troyer, Science 2017) with
complex parameters a (visible biases), b (hidden biases) and W (couplings):

    log psi(s) = a . s + sum_j log(2 cosh(b_j + W_j . s)),   s in {-1, +1}^L

Two ways to get the energy and its gradient, both with yaad on complex parameters:

* ``--mode exact`` sums over all 2^L configurations (the energy is a Rayleigh quotient);
* ``--mode mc`` is variational Monte Carlo: Metropolis samples of |psi|^2, local energies,
  and the gradient of the surrogate ``2 Re mean[conj(E_loc - E) log psi(s)]``, whose
  yaad gradient (``dL/dRe + 1j dL/dIm``) is exactly the energy gradient for complex
  parameters -- no conjugates to add by hand.

Run: ``python examples/quantum_vmc.py --mode mc --L 10``.
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy.sparse.linalg import eigsh

import yaad
from yaad.demo import hamiltonian_op, rayleigh_quotient, tfim_hamiltonian


class RBM(yaad.nn.Module):
    """A complex restricted Boltzmann machine over L spins with ``alpha * L`` hidden units."""

    def __init__(self, L: int, alpha: int = 2, scale: float = 0.05, seed: int = 0):
        super().__init__()
        rng = np.random.default_rng(seed)
        hidden = alpha * L

        def init(*shape):
            return yaad.nn.Parameter(scale * (rng.standard_normal(shape)
                                              + 1j * rng.standard_normal(shape)))

        self.a, self.b, self.W = init(L), init(hidden), init(hidden, L)

    def forward(self, s):
        """log psi for a batch of configurations ``s`` of shape (n, L), entries +-1."""
        theta = s @ self.W.mT + self.b
        return s @ self.a + yaad.sum(yaad.log(2 * yaad.cosh(theta)), axis=-1)


def all_configurations(L: int) -> np.ndarray:
    """Every configuration, in the basis order of ``tfim_hamiltonian`` (site 0 first)."""
    bits = (np.arange(2 ** L)[:, None] >> (L - 1 - np.arange(L))) & 1
    return (1 - 2 * bits).astype(float)


def exact_energy(model: RBM, apply_h, configs: np.ndarray):
    """The variational energy from the full wave function (normalised by its maximum)."""
    logpsi = model(configs)
    logpsi = logpsi - float(np.max(logpsi.data.real))  # a constant shift: no effect on E
    return rayleigh_quotient(apply_h, yaad.exp(logpsi))


def metropolis(model: RBM, chains: int, sweeps: int, L: int, rng, state=None) -> np.ndarray:
    """Samples of |psi(s)|^2 by single spin flips: ``sweeps * L`` proposals per chain,
    one sample per chain at the end of each sweep."""
    s = rng.choice([-1.0, 1.0], size=(chains, L)) if state is None else state
    samples = []
    with yaad.no_grad():
        log_p = 2 * model(s).data.real
        for _ in range(sweeps):
            for _ in range(L):
                flip = rng.integers(0, L, chains)
                proposal = s.copy()
                proposal[np.arange(chains), flip] *= -1
                log_q = 2 * model(proposal).data.real
                accept = np.log(rng.random(chains)) < log_q - log_p
                s[accept], log_p[accept] = proposal[accept], log_q[accept]
            samples.append(s.copy())
    return np.concatenate(samples)


def local_energies(model: RBM, s: np.ndarray, h: float) -> np.ndarray:
    """E_loc(s) = sum_s' H(s, s') psi(s') / psi(s) for the open TFIM chain (J = 1)."""
    n, L = s.shape
    with yaad.no_grad():
        log_s = model(s).data
        flipped = np.repeat(s[:, None, :], L, axis=1)
        flipped[:, np.arange(L), np.arange(L)] *= -1
        log_f = model(flipped.reshape(n * L, L)).data.reshape(n, L)
    diagonal = -np.sum(s[:, :-1] * s[:, 1:], axis=1)
    return diagonal - h * np.sum(np.exp(log_f - log_s[:, None]), axis=1)


def train(L: int = 10, h: float = 1.0, mode: str = "exact", steps: int = 600,
          lr: float = 0.01, alpha: int = 2, chains: int = 64, sweeps: int = 8,
          seed: int = 0, verbose: bool = True) -> dict:
    """Optimise the RBM with Adam; return the energy history and the exact energy."""
    H = tfim_hamiltonian(L, h)
    exact = float(eigsh(H, k=1, which="SA")[0][0])
    model = RBM(L, alpha, seed=seed)
    opt = yaad.optim.Adam(model.parameters(), lr=lr)
    rng = np.random.default_rng(seed)
    apply_h, configs, state = hamiltonian_op(H), all_configurations(L), None
    energies = []
    for step in range(steps):
        opt.zero_grad()
        if mode == "exact":
            energy = exact_energy(model, apply_h, configs)
            energy.backward()
            energies.append(energy.item())
        else:
            s = metropolis(model, chains, sweeps, L, rng, state)
            state = s[-chains:].copy()
            e_loc = local_energies(model, s, h)
            mean = e_loc.mean()
            surrogate = 2 * (np.conj(e_loc - mean) * model(s)).real.mean()
            surrogate.backward()
            energies.append(mean.real)
        opt.step()
        if verbose and (step % max(1, steps // 10) == 0 or step == steps - 1):
            print(f"step {step:5d}  energy {energies[-1]: .6f}  exact {exact: .6f}  "
                  f"relative error {abs(energies[-1] - exact) / abs(exact):.2e}")
    final = energies[-1] if mode == "exact" else float(np.mean(energies[-max(1, steps // 10):]))
    return {"energies": np.array(energies), "exact": exact, "energy": final,
            "relative_error": abs(final - exact) / abs(exact), "model": model}


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--L", type=int, default=10)
    p.add_argument("--h", type=float, default=1.0)
    p.add_argument("--mode", choices=["exact", "mc"], default="exact")
    p.add_argument("--steps", type=int, default=600)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--alpha", type=int, default=2, help="hidden units per spin")
    p.add_argument("--chains", type=int, default=64, help="Markov chains (mc mode)")
    p.add_argument("--sweeps", type=int, default=8, help="samples per chain per step (mc)")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    result = train(args.L, args.h, args.mode, args.steps, args.lr, args.alpha, args.chains,
                   args.sweeps, args.seed)
    print(f"final energy {result['energy']:.6f} (exact {result['exact']:.6f}), relative "
          f"error {result['relative_error']:.2e}")
    return result


if __name__ == "__main__":
    main()
