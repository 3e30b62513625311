# Cython declarations for engine.py in the compiled build (see graph.pxd): the backward
# loop's nodes and ops typed as graph.Node and op.Op, so that their slots are C fields,
# and its counters as C integers. engine.py stays the one implementation.
import cython

from yaad.core.graph cimport Node
from yaad.core.op cimport Op


@cython.locals(node=Node, q=Node, n=Node, op=Op, pid=cython.long, now=cython.long, c=cython.long)
cpdef _execute(roots, retain_graph, create_graph, inputs, targets, check)
