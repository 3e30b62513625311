"""The public names of an ops module, for its ``__all__``."""


def exported(namespace: dict) -> list[str]:
    """Public names of an ops module: its ops and the functions it defines (for ``__all__``).

    End each ops module with ``__all__ = exported(globals())``.
    """
    module = namespace["__name__"]
    names = []
    for name, value in namespace.items():
        if name.startswith("_") or not callable(value) or isinstance(value, type):
            continue
        if hasattr(value, "op") or getattr(value, "__module__", None) == module:
            names.append(name)
    return names
