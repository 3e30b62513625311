# Cython declarations for engine.py in the compiled build (see graph.pxd): the backward
# loop's nodes typed as graph.Node, so that their slots are C fields, and its counters as
# C integers. engine.py stays the one implementation.
import cython

from yaad.graph cimport Node


@cython.locals(node=Node, q=Node, n=Node, pid=cython.long, now=cython.long, c=cython.long)
cpdef _execute(roots, retain_graph, create_graph, inputs, targets, check)
