# Cython declarations for op.py in the compiled build (see graph.pxd): the op call records
# its node through a C call of graph.record_node. op.py stays the one implementation.
from yaad.graph cimport Node, new_node, record_node
