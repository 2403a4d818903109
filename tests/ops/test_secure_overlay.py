"""deploy/components/secure (TLS + basic auth) through the secure-dry-run and secure-enforce
overlays: the servers read the web config from a Secret, probes stay HTTPS without credentials,
the ServiceMonitors scrape with TLS and basic auth, and no key is in the repository.

End to end with throwaway material: make-secrets.sh makes the Secrets, the test lays their keys
out as the kubelet would mount each pod's projected volume, starts a server with that web config
(the webconfig library both servers use) and scrapes it as Prometheus would from the
ServiceMonitor (the CA and serverName of its tlsConfig, the credentials of its basicAuth), and
probes it as the kubelet would.
"""

from __future__ import annotations

import base64
import os
import shutil
import ssl
import subprocess
from functools import cache
from pathlib import Path

import aiohttp
import pytest
import yaml
from aiohttp import web
from manifests import DEPLOY, REPO, Obj, render, schema_errors

from webconfig.live import LiveWebConfig
from webconfig.server import serve

SECURE = ("secure-dry-run", "secure-enforce")
WEB_CONFIG_FLAG = "--web.config.file=/etc/gpu-reclaim/web/web.yml"
SERVERS = {"gpu-exporter": ("DaemonSet", 9400), "gpu-reclaimer": ("Deployment", 9401)}
SCRIPT = DEPLOY / "components" / "secure" / "make-secrets.sh"


@cache
def rendered(overlay: str) -> dict[tuple[str, str], Obj]:
    return {(o["kind"], o["metadata"]["name"]): o for o in render(DEPLOY / "overlays" / overlay)}


def pod_spec(overlay: str, name: str) -> Obj:
    return rendered(overlay)[(SERVERS[name][0], name)]["spec"]["template"]["spec"]


@pytest.mark.parametrize(
    ("overlay", "base"), [("secure-dry-run", "dry-run"), ("secure-enforce", "enforce")]
)
def test_secure_overlay_changes_only_serving(overlay: str, base: str) -> None:
    """The same objects as its base overlay; only the two servers and their monitors differ."""
    plain = rendered(base)
    assert set(rendered(overlay)) == set(plain)
    changed = {key for key, obj in rendered(overlay).items() if obj != plain[key]}
    assert changed == {
        *((k, n) for n, (k, _) in SERVERS.items()),
        *(("ServiceMonitor", n) for n in SERVERS),
    }
    assert not [o for o in rendered(overlay).values() if o["kind"] == "Secret"]


@pytest.mark.parametrize("overlay", SECURE)
@pytest.mark.parametrize("name", SERVERS)
def test_servers_read_the_web_config_and_probe_over_https(overlay: str, name: str) -> None:
    spec = pod_spec(overlay, name)
    (container,) = spec["containers"]
    assert container["args"].count(WEB_CONFIG_FLAG) == 1
    for probe in ("readinessProbe", "livenessProbe"):
        get = container[probe]["httpGet"]
        assert get["scheme"] == "HTTPS" and get["path"] in ("/healthz", "/readyz"), probe
        assert "httpHeaders" not in get  # no credentials: the health paths are open
    mounts = [m for m in container["volumeMounts"] if m["mountPath"] == "/etc/gpu-reclaim"]
    assert len(mounts) == 1 and mounts[0]["readOnly"] is True
    assert not [
        m for m in container["volumeMounts"] if m["mountPath"].startswith("/etc/gpu-reclaim/")
    ]


def test_reclaimer_keeps_its_policy_file() -> None:
    for overlay in SECURE:
        spec = pod_spec(overlay, "gpu-reclaimer")
        (container,) = spec["containers"]
        assert "--policy-file=/etc/gpu-reclaim/policy.yaml" in container["args"]
        (volume,) = [v for v in spec["volumes"] if v["name"] == "policy"]
        assert {"configMap": {"name": "gpu-sharing-config"}} in volume["projected"]["sources"]
        assert "configMap" not in volume
        assert spec["securityContext"]["fsGroup"] == spec["securityContext"]["runAsGroup"]
    assert (
        "--apply" in pod_spec("secure-enforce", "gpu-reclaimer")["containers"][0]["args"]
    ) is True
    assert (
        "--apply" in pod_spec("secure-dry-run", "gpu-reclaimer")["containers"][0]["args"]
    ) is False


@pytest.mark.parametrize("overlay", SECURE)
@pytest.mark.parametrize("name", SERVERS)
def test_service_monitor_scrapes_with_tls_and_basic_auth(overlay: str, name: str) -> None:
    (endpoint,) = rendered(overlay)[("ServiceMonitor", name)]["spec"]["endpoints"]
    assert endpoint["scheme"] == "https"
    assert endpoint["tlsConfig"]["serverName"] == f"{name}.gpu-reclaim.svc"
    assert "insecureSkipVerify" not in endpoint["tlsConfig"]
    secret = {"name": "gpu-reclaim-scrape-auth"}
    assert endpoint["tlsConfig"]["ca"] == {"secret": {**secret, "key": "ca.crt"}}
    assert endpoint["basicAuth"] == {
        "username": {**secret, "key": "username"},
        "password": {**secret, "key": "password"},
    }


def test_no_private_key_or_password_hash_in_deploy() -> None:
    for path in DEPLOY.rglob("*"):
        if path.is_file():
            text = path.read_text("utf-8", errors="replace")
            assert "PRIVATE KEY-----" not in text, path
            assert "$2y$" not in text and "$2b$" not in text, path


# --- end to end with throwaway material ------------------------------------------------------
@pytest.fixture(scope="module")
def secrets(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Obj]:
    if not (shutil.which("openssl") and shutil.which("kubectl")):
        pytest.fail("make-secrets.sh needs openssl and kubectl: run `make deps`", pytrace=False)
    out = tmp_path_factory.mktemp("secrets")
    env = {**os.environ, "PYTHON": str(REPO / ".venv" / "bin" / "python"), "BCRYPT_COST": "4"}
    if not Path(env["PYTHON"]).exists():
        env["PYTHON"] = shutil.which("python3") or "python3"
    done = subprocess.run(
        [SCRIPT, out], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    docs = [d for d in yaml.safe_load_all((out / "secrets.yaml").read_text("utf-8")) if d]
    return {d["metadata"]["name"]: d for d in docs}


def data(secret: Obj, key: str) -> bytes:
    return base64.b64decode(secret["data"][key])


def test_made_secrets_are_what_the_overlay_mounts(secrets: dict[str, Obj]) -> None:
    for secret in secrets.values():
        assert schema_errors(secret) == "", secret["metadata"]["name"]
        assert secret["metadata"]["namespace"] == "gpu-reclaim"
    for overlay in SECURE:
        referenced = set()
        for name in SERVERS:
            (volume,) = [v for v in pod_spec(overlay, name)["volumes"] if "projected" in v]
            referenced |= {
                (s["secret"]["name"], i["key"])
                for s in volume["projected"]["sources"]
                if "secret" in s
                for i in s["secret"]["items"]
            }
            for selector in rendered(overlay)[("ServiceMonitor", name)]["spec"]["endpoints"][0][
                "basicAuth"
            ].values():
                referenced.add((selector["name"], selector["key"]))
        made = {(n, k) for n, s in secrets.items() for k in s["data"]}
        assert referenced <= made, referenced - made
    assert (
        secrets["gpu-exporter-tls"]["type"]
        == secrets["gpu-reclaimer-tls"]["type"]
        == "kubernetes.io/tls"
    )


def mount(spec: Obj, secrets: dict[str, Obj], root: Path) -> Path:
    """The pod's projected volume laid out under root, as the kubelet would; returns the path of
    the file its --web.config.file names."""
    (volume,) = [v for v in spec["volumes"] if "projected" in v]
    (mounted,) = [
        m for c in spec["containers"] for m in c["volumeMounts"] if m["name"] == volume["name"]
    ]
    for source in volume["projected"]["sources"]:
        for item in source.get("secret", {}).get("items", []):
            target = root / item["path"]
            target.parent.mkdir(parents=True, exist_ok=True)
            content = data(secrets[source["secret"]["name"]], item["key"])
            if item["path"].endswith(".yml"):  # absolute paths inside the pod, under root here
                content = content.replace(f"{mounted['mountPath']}/".encode(), f"{root}/".encode())
            target.write_bytes(content)
    (flag,) = [a for a in spec["containers"][0]["args"] if a.startswith("--web.config.file=")]
    return root / Path(flag.split("=", 1)[1]).relative_to(mounted["mountPath"])


async def get(
    port: int,
    path: str,
    context: ssl.SSLContext,
    server_name: str | None,
    auth: tuple[str, str] | None = None,
    scheme: str = "https",
) -> int:
    """One GET to 127.0.0.1:port, checking the certificate against `server_name` (as
    Prometheus does with tlsConfig.serverName when it scrapes a pod IP)."""
    headers = {"Authorization": aiohttp.encode_basic_auth(*auth)} if auth else {}
    options = {"ssl": context, "server_hostname": server_name} if scheme == "https" else {}
    url = f"{scheme}://127.0.0.1:{port}{path}"
    async with (
        aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as session,  # a hang
        session.get(url, headers=headers, **options) as response,
    ):
        return response.status


async def ok(_request: web.Request) -> web.Response:
    return web.Response(text="ok\n")


@pytest.mark.parametrize("name", SERVERS)
async def test_prometheus_scrapes_and_kubelet_probes_with_the_made_secrets(
    name: str, secrets: dict[str, Obj], tmp_path: Path
) -> None:
    overlay = "secure-enforce"
    config = LiveWebConfig(mount(pod_spec(overlay, name), secrets, tmp_path))
    app = web.Application()
    for path in ("/metrics", "/healthz", "/readyz"):
        app.router.add_get(path, ok)
    server = await serve(app, "127.0.0.1", 0, config=config, open_paths=("/healthz", "/readyz"))
    try:
        port = server.addresses[0][1]
        endpoint = rendered(overlay)[("ServiceMonitor", name)]["spec"]["endpoints"][0]
        scrape = secrets[endpoint["basicAuth"]["username"]["name"]]
        prometheus = ssl.create_default_context(cadata=data(scrape, "ca.crt").decode())
        server_name = endpoint["tlsConfig"]["serverName"]
        auth = (data(scrape, "username").decode(), data(scrape, "password").decode())
        assert await get(port, "/metrics", prometheus, server_name, auth) == 200
        assert await get(port, "/metrics", prometheus, server_name) == 401
        wrong = (auth[0], "wrong")
        assert await get(port, "/metrics", prometheus, server_name, wrong) == 401
        other = "gpu-reclaimer" if name == "gpu-exporter" else "gpu-exporter"  # its own cert only
        with pytest.raises(aiohttp.ClientConnectorCertificateError):
            await get(port, "/metrics", prometheus, f"{other}.gpu-reclaim.svc", auth)
        kubelet = ssl.create_default_context()
        kubelet.check_hostname, kubelet.verify_mode = False, ssl.CERT_NONE  # as kubelet probes
        for probe in ("readinessProbe", "livenessProbe"):
            path = pod_spec(overlay, name)["containers"][0][probe]["httpGet"]["path"]
            assert await get(port, path, kubelet, None) == 200
        with pytest.raises(aiohttp.ClientError):
            await get(port, "/metrics", kubelet, None, auth, scheme="http")
    finally:
        await server.stop()
