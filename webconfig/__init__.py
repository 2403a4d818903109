"""Web config for gpu-reclaim's servers: exporter-toolkit's `--web.config.file`, bounded serving.

One library for `gpu-exporter` and `gpu-reclaimer run`, as every Prometheus exporter shares
exporter-toolkit, so each rule is written once:

- `live.LiveWebConfig(path)`: the file (`tls_server_config`, `basic_auth_users`,
  `http_server_config.headers`), validated with every problem listed at once, re-read when it or
  the certificate files change; raises `model.WebConfigError` at start.
- `server.serve(app, host, port, config=..., open_paths=..., limits=...)`: serves an aiohttp
  app with TLS, basic auth and headers as configured, behind a guard (`guard`) that disconnects
  clients which do not complete the handshake and request head within `Limits.header_timeout`,
  caps concurrent connections, and answers malformed or oversized heads with a short fixed error.

Open paths and kubelet probes: exporter-toolkit applies basic auth to every path. kubelet probes
cannot send credentials, so the servers name their health paths (`/healthz`, `/health`, `/readyz`)
as `open_paths`: those answer without basic auth; every other path, unknown ones included, needs
it. TLS still applies to open paths. kubelet httpGet probes with `scheme: HTTPS` skip certificate
verification but cannot present a client certificate, so with `RequireAndVerifyClientCert` the
probes must be `tcpSocket` probes (or exec); with `VerifyClientCertIfGiven` httpGet probes work.

Import the modules, not this package (`from webconfig.server import serve`): the test tree has a
`tests/webconfig` folder, which shadows this package's `__init__` (not its modules) when pytest puts
`tests/` on `sys.path`, as `tests/exporter` does for `exporter`. So this file exports nothing.
"""
