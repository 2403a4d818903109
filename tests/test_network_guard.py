import socket

import pytest


def test_non_loopback_connect_is_refused() -> None:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        with pytest.raises(RuntimeError, match="only loopback"):
            s.connect(("192.0.2.1", 9))
    finally:
        s.close()
