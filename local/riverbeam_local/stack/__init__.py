"""`riverbeam dev`: the local stack (the template's functions behind a local HTTP and WebSocket API, the
embedded table, queues and bus)."""
