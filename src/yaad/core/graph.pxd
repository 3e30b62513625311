# Cython declarations for graph.py in the compiled build (setup.py; docs/performance.md,
# "The compiled build"): a Node's slots as C fields, read and written without a lookup by
# the modules that cimport it (op, engine). graph.py stays the one implementation; these
# only type it. Every slot of graph.Node and graph.ShapeDtype is declared here, with the
# same meaning.

cdef class ShapeDtype:
    cdef public object shape, dtype

cdef class Node:
    cdef public object op, args, kw, ans, e0, e1, more, extra, acc
    cdef public long epoch, visit, count
    cdef object __weakref__

cpdef ShapeDtype shape_dtype(shape, dtype)
cpdef Node record_node(op, args, kw, ans, e0, e1=*, more=*)
cpdef Node new_node(op, args, kw, ans, tuple parents)
