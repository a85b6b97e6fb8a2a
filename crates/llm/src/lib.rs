//! Model provider adapters (placeholder until the provider issue lands).
