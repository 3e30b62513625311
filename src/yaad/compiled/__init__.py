"""The machinery of :func:`yaad.compile`: recording (``tape``), the reverse-mode transform
of a recording (``reverse``), tape rewrites (``rewrite``), Python code generation
(``codegen``), the optional fused backend (``fused``) and the cache of recorded paths with
their guards (``program``)."""
