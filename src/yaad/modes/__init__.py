"""The modes: forward mode, batching (vmap), checkpointing, anomaly detection, each an
interpreter in the stack of docs/architecture.md."""
