"""Configuration loading (pure): defaults, where the node name comes from, every invalid field
reported at once."""

from __future__ import annotations

import pytest

from exporter.config import Backend, ConfigError, ExporterConfig, load_config


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
    ("raw", "message"),
    [
        pytest.param({"listen": "9400"}, "--web.listen-address=9400", id="no-colon"),
        pytest.param({"listen": ":65536"}, "out of range", id="port-too-high"),
        pytest.param({"listen": "::1:9400"}, "brackets", id="ipv6-unbracketed"),
        pytest.param({"collect_interval": "0.05"}, "at least 0.1 seconds", id="interval-too-short"),
        pytest.param({"collect_interval": "0"}, "collect-interval", id="interval-zero"),
    ],
)
def test_bad_serving_flags_are_config_errors(raw: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config(raw, {}, "h")
    assert any(message in e for e in caught.value.errors), caught.value.errors


def test_listen_address_and_interval_are_parsed() -> None:
    cfg = load_config({"listen": "[::1]:9400", "collect_interval": "0.1"}, {}, "h")
    assert (cfg.listen_host, cfg.listen_port, cfg.collect_interval) == ("::1", 9400, 0.1)


def test_sim_flags_belong_to_the_simulated_backends() -> None:
    with pytest.raises(ConfigError, match=r"--sim\.workloads is only used with --backend=sim"):
        load_config({"sim_workloads": "w.yaml"}, {}, "h")
    for backend in ("sim", "replay"):
        raw = {"backend": backend, "sim_workloads": "w.yaml", "replay_file": "t.csv"}
        if backend == "sim":
            del raw["replay_file"]
        assert str(load_config(raw, {}, "h").sim_workloads) == "w.yaml"
