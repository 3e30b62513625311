"""The ODE solvers behind ``yaad.integrate`` and their discrete adjoint.

- ``field``: the vector field on flat arrays (value, vector-Jacobian product,
  Jacobian), eager or as compiled programs (``yaad.compile``);
- ``methods``: one step of Dormand-Prince 5(4) (explicit) and of Radau IIA of order 5
  (implicit), its error estimate, its dense output, and the adjoint of the step;
- ``solver``: the adaptive forward pass with checkpoints, the reverse pass over the
  accepted steps (recomputing them from the checkpoints), and the replay of the steps
  as yaad operations (second order, forward mode).
"""
