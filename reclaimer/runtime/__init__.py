"""The running controller: the loop, the actuator, the wiring, the HTTP server, metrics."""
