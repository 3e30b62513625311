# Cython declarations for op.py in the compiled build (see graph.pxd): the Op's slots as C
# fields (the backward loop reads several per node), and the op call records its node
# through a C call of graph.record_node. op.py stays the one implementation; every slot of
# op.Op is declared here, with the same meaning.
from yaad.core.graph cimport Node, new_node, record_node


cdef class Op:
    cdef public object name, forward, vjps, jvps, save_args, save_ans, nout, variadic
    cdef public object elementwise, selects, linear, fn, single_output, numpy_derivatives
    cdef public object reads, frees, batch, adds_into
    cdef object __weakref__
