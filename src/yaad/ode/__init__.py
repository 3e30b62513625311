"""The ODE solvers behind :mod:`yaad.integrate` and their discrete adjoint.

- :mod:`.field`: the vector field on flat arrays (value, vector-Jacobian product,
  Jacobian), eager or as compiled programs (``yaad.compile``);
- :mod:`.methods`: one step of Dormand-Prince 5(4) (explicit) and of Radau IIA of order 5
  (implicit), its error estimate, its dense output, and the adjoint of the step;
- :mod:`.solver`: the adaptive forward pass with checkpoints, the reverse pass over the
  accepted steps (recomputing them from the checkpoints), and the replay of the steps
  as yaad operations (second order, forward mode).
"""
