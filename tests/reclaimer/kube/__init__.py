"""Tests of the reclaimer's Kubernetes side.

A package, so that its conftest never shadows the root `conftest` module other tests import.
"""
