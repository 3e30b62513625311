# Cython declarations for engine.py in the compiled build (see graph.pxd): the backward
# loop's nodes and ops typed as graph.Node and op.Op, so that their slots are C fields,
# and its counters as C integers. engine.py stays the one implementation.
import cython

from yaad.core.graph cimport Node
from yaad.core.op cimport Op


cpdef _execute(roots, retain_graph, create_graph, inputs, targets, check)

@cython.locals(node=Node, q=Node, pid=cython.long)
cdef list _count_consumers(list start, needed, long pid)

@cython.locals(node=Node, op=Op, now=cython.long)
cdef _run_nodes(list ready, dict leaves, long pid, stops, dict stopped, targets, inputs,
                results, general, create_graph, check, release)

cdef _call_rule(rule, table, into, p, ref, g, ans, tuple args, kw, Node node, dict leaves,
                long pid)

@cython.locals(q=Node, c=cython.long)
cdef _deliver(p, gi, long pid, mask, set masked, dict leaves, stops, dict stopped)

cdef _deliver_to_leaves(dict leaves, targets, results, create_graph)
