"""The approval inbox page: static files served by the stack, deployable to any static host."""
