"""Learning-rate schedulers (PyTorch's names): call ``step()`` once per epoch, after the
optimizer's steps.

Each scheduler computes the rate in closed form from the epoch count, so values do not
drift through repeated multiplication.
"""

from __future__ import annotations

import math
from typing import Any, Callable

from .optimizer import Optimizer


class LRScheduler:
    """Base class: sets ``group['lr']`` of every parameter group from its initial rate.

    Parameters
    ----------
    optimizer : Optimizer
        The optimizer whose rates are scheduled.
    last_epoch : int
        The index of the last epoch (-1: start afresh, which sets the initial rates).
    """

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(self).__name__}: expected a yaad.optim optimizer, got "
                            f"{type(optimizer).__name__}")
        self.optimizer = optimizer
        for group in optimizer.param_groups:
            if last_epoch == -1:
                group.setdefault("initial_lr", group["lr"])
            elif "initial_lr" not in group:
                raise KeyError(f"{type(self).__name__}: resuming (last_epoch={last_epoch}) "
                               f"needs 'initial_lr' in every parameter group")
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self.step()

    def lr_at(self, base_lr: float, epoch: int) -> float:
        """The learning rate at ``epoch`` for a group whose initial rate is ``base_lr``."""
        raise NotImplementedError

    def step(self) -> None:
        """Advance one epoch and set the new rates."""
        self.last_epoch += 1
        for group, base in zip(self.optimizer.param_groups, self.base_lrs):
            group["lr"] = self.lr_at(base, self.last_epoch)
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def get_last_lr(self) -> list[float]:
        """The rates set by the last :meth:`step`, one per group."""
        return list(self._last_lr)

    def state_dict(self) -> dict[str, Any]:
        """The scheduler's state (everything but the optimizer and functions)."""
        return {k: v for k, v in self.__dict__.items()
                if k != "optimizer" and not callable(v)}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore the state saved by :meth:`state_dict` and the rates its last step set
        (a scheduler made afresh sets the initial ones), so training resumes as it would
        have gone on, whether the optimizer's state is loaded before or after."""
        self.__dict__.update(state_dict)
        for group, lr in zip(self.optimizer.param_groups, state_dict.get("_last_lr", ())):
            group["lr"] = lr


class StepLR(LRScheduler):
    """Multiply the rate by ``gamma`` every ``step_size`` epochs.

    Parameters
    ----------
    optimizer : Optimizer
    step_size : int
    gamma : float
    last_epoch : int
    """

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1,
                 last_epoch: int = -1) -> None:
        self.step_size = step_size
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr: float, epoch: int) -> float:
        return base_lr * self.gamma ** (epoch // self.step_size)


class ExponentialLR(LRScheduler):
    """Multiply the rate by ``gamma`` every epoch.

    Parameters
    ----------
    optimizer : Optimizer
    gamma : float
    last_epoch : int
    """

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1) -> None:
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr: float, epoch: int) -> float:
        return base_lr * self.gamma ** epoch


class CosineAnnealingLR(LRScheduler):
    """Cosine decay from the initial rate to ``eta_min`` over ``T_max`` epochs:
    ``eta_min + (base - eta_min) * (1 + cos(pi * epoch / T_max)) / 2``.

    Parameters
    ----------
    optimizer : Optimizer
    T_max : int
    eta_min : float
    last_epoch : int
    """

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0,
                 last_epoch: int = -1) -> None:
        self.T_max = T_max
        self.eta_min = eta_min
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr: float, epoch: int) -> float:
        return self.eta_min + (base_lr - self.eta_min) * (
            1 + math.cos(math.pi * epoch / self.T_max)) / 2


class LambdaLR(LRScheduler):
    """The initial rate times ``lr_lambda(epoch)``.

    Parameters
    ----------
    optimizer : Optimizer
    lr_lambda : callable
        Epoch -> factor.
    last_epoch : int
    """

    def __init__(self, optimizer: Optimizer, lr_lambda: Callable[[int], float],
                 last_epoch: int = -1) -> None:
        self.lr_lambda = lr_lambda
        super().__init__(optimizer, last_epoch)

    def lr_at(self, base_lr: float, epoch: int) -> Any:
        return base_lr * self.lr_lambda(epoch)


__all__ = ["LRScheduler", "StepLR", "ExponentialLR", "CosineAnnealingLR", "LambdaLR"]
