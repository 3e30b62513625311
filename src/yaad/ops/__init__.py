"""The built-in operators, one module a family."""
