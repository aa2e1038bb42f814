"""The standard-library leaf: what the lean paths (the hook, the cached resume) and the full paths both
import. Nothing here imports a third-party package or another layer of tasktrail."""
