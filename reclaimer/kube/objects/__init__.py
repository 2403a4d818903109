"""Kubernetes objects decoded into the model, with no client: pure."""
