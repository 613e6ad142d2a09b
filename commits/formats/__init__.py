"""Table formats as pure modules: file layouts, action parsing, schema conversion. No I/O and no
ORM here; the commit services and the maintenance worker read and write storage and call these."""
