"""The UC Delta REST API, `/api/2.1/unity-catalog/delta/v1/` (managed tables spec 1.0)."""
