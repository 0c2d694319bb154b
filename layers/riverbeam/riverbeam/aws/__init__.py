"""Riverbeam on AWS Lambda: the handlers' shared parts (settings, identity, HTTP and WebSocket routes, the
queue). The pipeline never imports this package; it is the Lambda side of the layer."""
