"""Tensor methods and the NumPy protocols, bound on top of the ops."""
