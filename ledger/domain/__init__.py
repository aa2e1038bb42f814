"""The domain: events, the Task aggregate and its rules, the hash chain, redaction. Imports ``ledger.base``
and the libraries only (pydantic, orjson, eventsourcing's domain)."""
