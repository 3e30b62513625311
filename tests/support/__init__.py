"""Helpers shared by the tests (imported as ``support.<module>``; ``tests/`` is on the path).

- ``arrays``: seeded random arrays of any dtype, a NumPy-likeness check, a forward-mode
  check against central differences;
- ``strategies``: hypothesis strategies and the fuzz table of every registered op (its
  elementwise part is read from ``tests/op_cases.py``);
- ``linalg_inputs``: well-conditioned random matrices for the linear-algebra tests;
- ``reliability``: the switches of the long (``make fuzz``) runs.
"""
