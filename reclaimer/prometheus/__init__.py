"""The one door to Prometheus: the HTTP client, its credentials, the history reads."""
