"""Configuration loading (pure): defaults, where the node name comes from, every invalid field
reported at once."""

from __future__ import annotations

import pytest

from exporter.config import Backend, ConfigError, ExporterConfig, load_config, parse_listen_address


def test_defaults() -> None:
    config = load_config({}, {}, "host-1")
    assert config == ExporterConfig(node_name="host-1")
    assert (config.listen_host, config.listen_port, config.collect_interval) == (None, 9400, 1.0)


def test_node_name_prefers_the_flag_then_node_name_env_then_hostname() -> None:
    assert load_config({"node_name": "flag"}, {"NODE_NAME": "env"}, "h").node_name == "flag"
    assert load_config({}, {"NODE_NAME": "env"}, "h").node_name == "env"


def test_every_invalid_field_is_reported_at_once() -> None:
    raw = {
        "listen": "nonsense",
        "backend": "cuda",
        "collect_interval": "-1",
        "sim_gpus": "zero",
        "replay_speed": "fast",
        "log_level": "loud",
    }
    with pytest.raises(ConfigError) as err:
        load_config(raw, {}, "h")
    flags = [e.split("=")[0] for e in err.value.errors]
    assert flags == [
        "--web.listen-address",
        "--backend",
        "--collect-interval",
        "--sim.gpus",
        "--replay.speed",
        "--log.level",
    ]
    assert "must be one of nvml, sim, replay" in str(err.value)


def test_replay_needs_a_file_and_sim_mig_counts_gpus() -> None:
    with pytest.raises(ConfigError, match=r"needs --replay\.file"):
        load_config({"backend": "replay"}, {}, "h")
    config = load_config({"backend": "sim", "sim_gpus": "4", "sim_mig": "half"}, {}, "h")
    assert (config.backend, config.sim_mig) == (Backend.SIM, 2)
    assert load_config({"sim_gpus": "3", "sim_mig": "3"}, {}, "h").sim_mig == 3
    with pytest.raises(ConfigError, match=r"sim\.mig"):
        load_config({"sim_gpus": "3", "sim_mig": "4"}, {}, "h")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(":9400", (None, 9400), id="all-interfaces"),
        pytest.param("127.0.0.1:0", ("127.0.0.1", 0), id="ipv4"),
        pytest.param("[::1]:9400", ("::1", 9400), id="ipv6"),
    ],
)
def test_parse_listen_address(text: str, expected: tuple[str | None, int]) -> None:
    assert parse_listen_address(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param("9400", "is not HOST:PORT", id="no-colon"),
        pytest.param(":65536", "out of range", id="port-too-high"),
        pytest.param(":-1", "out of range", id="port-negative"),
        pytest.param("host:http", "invalid literal", id="port-not-a-number"),
    ],
)
def test_parse_listen_address_rejects(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_listen_address(text)


def test_sim_flags_belong_to_the_simulated_backends() -> None:
    with pytest.raises(ConfigError, match=r"--sim\.workloads is only used with --backend=sim"):
        load_config({"sim_workloads": "w.yaml"}, {}, "h")
    for backend in ("sim", "replay"):
        raw = {"backend": backend, "sim_workloads": "w.yaml", "replay_file": "t.csv"}
        if backend == "sim":
            del raw["replay_file"]
        assert str(load_config(raw, {}, "h").sim_workloads) == "w.yaml"
