"""The core: the tensor, the graph, declaring an op, the bookkeeping once and the
backward pass, with their satellites (docs/architecture.md)."""
