"""The built-in operators, one module a family; each ends with ``__all__ =
exported(globals())`` (:func:`yaad.ops.public_names.exported`)."""
