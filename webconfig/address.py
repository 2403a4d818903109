"""`--web.listen-address`, parsed once for both servers.

`:9400` is every interface, IPv4 and IPv6 (host None); `0.0.0.0:9400` IPv4 only; `[::1]:9400` an
IPv6 host; `localhost:9400` a name. The port must be 0-65535 (0: any free port, for tests). A
bare port, a missing port, an unbracketed IPv6 address or junk are refused with the reason.
"""

from __future__ import annotations


def parse_listen_address(text: str) -> tuple[str | None, int]:
    """(host or None for every interface, port); `ValueError` saying what is wrong."""
    host, sep, port_text = text.strip().rpartition(":")
    if not sep or not port_text.isdigit():
        raise ValueError(f"{text!r} is not HOST:PORT (e.g. :9400 or [::1]:9400)")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise ValueError(f"{text!r}: an IPv6 host goes in brackets, e.g. [::1]:9400")
    port = int(port_text)
    if not 0 <= port <= 65535:
        raise ValueError(f"{text!r}: port {port} is out of range 0-65535")
    return (host or None), port
