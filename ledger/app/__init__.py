"""The ledger application and its lifecycle operations: open, append, read, compact, verify, forget, migrate."""
