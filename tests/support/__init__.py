"""Helpers shared by the tests (imported as ``support.<module>``; ``tests/`` is on the path).

- ``arrays``: seeded random arrays of any dtype, a NumPy-likeness check, a forward-mode
  check against central differences;
- ``strategies``: hypothesis strategies (shapes, dtypes, axes, indices, values in a domain)
  and the vocabulary of the op table ``tests/op_cases/`` (``Domain``, ``Call``, the dtypes);
- ``linalg_inputs``: well-conditioned random matrices for the linear-algebra tests;
- ``reliability``: the switches of the long (``make fuzz``) runs.
"""
