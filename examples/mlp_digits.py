"""Train a small MLP on scikit-learn's bundled digits with yaad.nn and yaad.optim.

A PyTorch-style training loop: minibatches, dropout in training mode, AdamW with a
cosine learning-rate schedule, evaluation mode for testing, and a checkpoint saved with
``yaad.save`` and restored with ``yaad.load`` (an .npz file, never unpickled).

Run: ``python examples/mlp_digits.py --epochs 40``.
"""

from __future__ import annotations

import argparse
import os

import numpy as np

import yaad
from yaad import nn
from yaad.demo import load_digits_split


def make_model(hidden: int = 128, p_drop: float = 0.1, seed: int = 0) -> nn.Module:
    gen = np.random.default_rng(seed)
    return nn.Sequential(
        nn.Linear(64, hidden, generator=gen), nn.GELU(), nn.Dropout(p_drop, generator=seed),
        nn.Linear(hidden, hidden, generator=gen), nn.GELU(),
        nn.Linear(hidden, 10, generator=gen),
    )


def accuracy(model: nn.Module, x: np.ndarray, y: np.ndarray) -> float:
    model.eval()
    with yaad.no_grad():
        predicted = np.argmax(model(x).data, axis=1)
    model.train()
    return float(np.mean(predicted == y))


def train(epochs: int = 40, batch_size: int = 64, lr: float = 3e-3, hidden: int = 128,
          checkpoint: str | None = None, seed: int = 0, verbose: bool = True) -> dict:
    x_train, y_train, x_test, y_test = load_digits_split(seed=seed)
    model = make_model(hidden, seed=seed)
    opt = yaad.optim.AdamW(model.parameters(), lr=lr, weight_decay=1e-4)
    schedule = yaad.optim.CosineAnnealingLR(opt, T_max=epochs)
    rng = np.random.default_rng(seed)
    history = []
    for epoch in range(epochs):
        order = rng.permutation(len(y_train))
        total = 0.0
        for start in range(0, len(order), batch_size):
            idx = order[start:start + batch_size]
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x_train[idx]), y_train[idx],
                                               label_smoothing=0.05)
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
        schedule.step()
        history.append(total / len(order))
        if verbose and (epoch % max(1, epochs // 8) == 0 or epoch == epochs - 1):
            print(f"epoch {epoch + 1:3d}  loss {history[-1]:.4f}  "
                  f"test accuracy {100 * accuracy(model, x_test, y_test):.1f}%")

    path = checkpoint or os.path.join("out", "examples", "digits-mlp.npz")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    yaad.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "epochs": epochs},
              path)
    restored = make_model(hidden, seed=seed + 1)  # different initial weights...
    restored.load_state_dict(yaad.load(path)["model"])  # ...replaced by the checkpoint
    result = {"losses": np.array(history), "test_accuracy": accuracy(restored, x_test, y_test),
              "checkpoint": path}
    if verbose:
        print(f"checkpoint {path}: restored model, test accuracy "
              f"{100 * result['test_accuracy']:.1f}% on {len(y_test)} images")
    return result


def main(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--epochs", type=int, default=40)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--checkpoint", default=None,
                   help="where to save the .npz checkpoint (default out/examples/)")
    args = p.parse_args(argv)
    return train(args.epochs, args.batch_size, args.lr, args.hidden, args.checkpoint)


if __name__ == "__main__":
    main()
