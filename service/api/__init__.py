"""HTTP edge: wire types, controllers, error mapping, middleware."""
