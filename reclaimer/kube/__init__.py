"""The reclaimer's door to Kubernetes.

Only modules in this package import the `kubernetes` client (`client`, `read`, `write`, `lease`).
`convert`, `resources`, `quantity` and `timeslicing` are pure: plain object dicts in, model out.
"""
