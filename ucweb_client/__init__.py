"""Small Python clients of a ucweb server, for pipelines (no Django, no server code): only the
standard library and `requests`."""
