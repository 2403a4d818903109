"""The planner's node view of a replay (whole devices per node) and reclaim for multi-GPU pods."""

from __future__ import annotations

import pytest
from simworld import HOUR, P, nodes_frame, run

from reclaimer.model import Forecast, Node, PendingDemand, Queue
from reclaimer.simulate.devices import node_view
from reclaimer.simulate.scheduler import Cluster
from reclaimer.simulate.strategies import SLOTS_PER_GPU, RunningJob, Strategy, TickView, make_job
from reclaimer.simulate.trace import parse_nodes

NOW = 10 * HOUR
QUEUES = (
    Queue(name="be", deserved_gpus=0.0, reclaimable=True),
    Queue(name="ls", deserved_gpus=8.0 * SLOTS_PER_GPU, reclaimable=False),
)


def running(index: int, key: str, devices: tuple[str, ...], slots: int, age: float) -> RunningJob:
    queue = key.split("/", maxsplit=1)[0]
    job, pods = make_job(key, queue, devices, slots, NOW - age)
    return RunningJob(index, job, pods, age, age, queue == "be")


def tick(*runs: RunningJob, pending: tuple[PendingDemand, ...] = ()) -> TickView:
    devices = tuple(
        Node(name=f"n{n}/gpu{d}", gpus=1, replicas=SLOTS_PER_GPU) for n in (1, 2) for d in range(4)
    )
    return TickView(NOW, runs, pending, QUEUES, devices, {})


def idle(key: str, confidence: float, is_idle: bool = True) -> Forecast:
    return Forecast(key, is_idle, confidence, 900.0, 900.0, 0.05, "test", 10)


def test_nodes_count_whole_devices_and_queues_deserve_devices():
    view = node_view(tick(), {})

    assert [(n.name, n.gpus, n.replicas) for n in view.snapshot.nodes] == [
        ("n1", 4, 1),
        ("n2", 4, 1),
    ]
    assert [q.deserved_gpus for q in view.snapshot.queues] == [0.0, 8.0]


@pytest.mark.parametrize(
    ("runs", "held"),
    [
        pytest.param(
            (running(0, "be/whole", ("n1/gpu0",), 10, HOUR),),
            {"be/whole": {"n1": 1}},
            id="whole-gpu-pod-holds-its-device",
        ),
        pytest.param(
            (running(0, "ls/wide", ("n1/gpu0", "n1/gpu1", "n1/gpu2"), 10, HOUR),),
            {"ls/wide": {"n1": 3}},
            id="multi-gpu-pod-is-one-pod-of-its-devices",
        ),
        pytest.param(
            (running(0, "be/lone", ("n1/gpu2",), 3, HOUR),),
            {"be/lone": {"n1": 1}},
            id="lone-sharing-pod-holds-the-whole-device",
        ),
        pytest.param(
            (running(0, "be/a", ("n1/gpu1",), 3, HOUR), running(1, "be/b", ("n1/gpu1",), 5, HOUR)),
            {"be/~n1~gpu1": {"n1": 1}},
            id="reclaimable-sharing-pods-form-a-device-group",
        ),
        pytest.param(
            (running(0, "be/a", ("n1/gpu1",), 3, HOUR), running(1, "ls/b", ("n1/gpu1",), 5, HOUR)),
            {"ls/b": {"n1": 1}},
            id="any-guaranteed-pod-makes-the-device-unreclaimable",
        ),
    ],
)
def test_who_holds_each_device(runs, held):
    view = node_view(tick(*runs), {})

    placed: dict[str, dict[str, int]] = {}
    for pod in view.snapshot.pods:
        assert pod.job is not None and pod.node is not None
        placed.setdefault(pod.job, {})[pod.node] = pod.gpus
    assert placed == held
    assert {j.key for j in view.snapshot.jobs} == set(held)


@pytest.mark.parametrize(
    ("forecasts", "expected"),
    [
        pytest.param(
            {"be/a": idle("be/a", 0.97), "be/b": idle("be/b", 0.91)},
            (True, 0.91),
            id="all-idle-group-is-as-sure-as-its-least-sure-member",
        ),
        pytest.param(
            {"be/a": idle("be/a", 0.99), "be/b": idle("be/b", 0.2, is_idle=False)},
            (False, 0.2),
            id="one-busy-member-makes-the-group-busy",
        ),
        pytest.param({"be/a": idle("be/a", 0.99)}, None, id="a-member-without-forecast-none"),
    ],
)
def test_device_group_forecast(forecasts, expected):
    runs = (
        running(0, "be/a", ("n1/gpu1",), 3, 5 * HOUR),
        running(1, "be/b", ("n1/gpu1",), 5, HOUR),
    )

    view = node_view(tick(*runs), forecasts)

    group = view.forecasts.get("be/~n1~gpu1")
    assert (None if group is None else (group.idle, group.confidence)) == expected
    assert view.members["be/~n1~gpu1"] == ("be/a", "be/b")
    (job,) = view.snapshot.jobs
    assert job.start_time == NOW - HOUR  # as young as its youngest member


def test_only_multi_gpu_demand_is_planned_in_the_node_view_as_one_pod():
    pending = (
        PendingDemand("ls", "ls/one", 10, 1, 0.0),
        PendingDemand("ls", "ls/share", 4, 1, 0.0),
        PendingDemand("ls", "ls/four", 40, 4, 0.0),
    )

    view = node_view(tick(pending=pending), {})

    assert [(d.job, d.gpus, d.min_member) for d in view.snapshot.pending] == [("ls/four", 4, 1)]


# two idle best-effort 1-GPU jobs fill a 2-GPU node when a 2-GPU latency-sensitive pod arrives
WIDE = [
    P("be-1", "BE", 0.0, 20 * HOUR),
    P("be-2", "BE", 0.0, 20 * HOUR),
    P("ls-wide", "LS", 3 * HOUR, HOUR, num_gpu=2),
    P("ls-late", "LS", 40 * HOUR, HOUR),
]
# the same with the first GPU shared by two best-effort pods
SHARED = [
    P("be-a", "BE", 0.0, 20 * HOUR, 1, 500),
    P("be-b", "BE", 0.0, 20 * HOUR, 1, 500),
    P("be-c", "BE", 0.0, 20 * HOUR),
    P("ls-wide", "LS", 3 * HOUR, HOUR, num_gpu=2),
    P("ls-late", "LS", 40 * HOUR, HOUR),
]


@pytest.mark.parametrize("policy", [Strategy.FORECAST, Strategy.ALLOCATION], ids=str)
@pytest.mark.parametrize(("pods", "victims"), [(WIDE, 2), (SHARED, 3)], ids=["whole", "shared"])
def test_idle_best_effort_jobs_make_a_node_for_a_waiting_multi_gpu_pod(policy, pods, victims):
    result = run(pods, [2], policy)
    baseline = run(pods, [2], Strategy.NONE)

    assert result.preemptions == victims
    assert result.guaranteed_preemptions == 0
    assert result.wait_p95_s["ls"] < baseline.wait_p95_s["ls"]


def test_a_device_with_a_guaranteed_pod_is_never_freed_for_a_multi_gpu_pod():
    pods = [
        P("be-a", "BE", 0.0, 20 * HOUR, 1, 500),
        P("ls-a", "LS", 0.0, 20 * HOUR, 1, 500),
        P("be-c", "BE", 0.0, 20 * HOUR),
        P("ls-wide", "LS", 3 * HOUR, HOUR, num_gpu=2),
        P("ls-late", "LS", 40 * HOUR, HOUR),
    ]

    result = run(pods, [2], Strategy.ALLOCATION)

    assert result.preemptions == 0  # freeing be-c alone would not make two devices


@pytest.mark.parametrize(
    ("held", "released", "shape", "fits"),
    [
        pytest.param([(1, 1000)], [0], (2, 1000), True, id="freeing-the-job-frees-two-devices"),
        pytest.param([(1, 1000), (1, 500)], [0], (2, 1000), False, id="a-device-still-shared"),
        pytest.param([(1, 500), (1, 500)], [0, 1], (2, 1000), True, id="both-sharers-freed"),
        pytest.param([(1, 1000)], [], (1, 1000), True, id="one-device-fits-free-device"),
        pytest.param([(2, 1000)], [], (1, 300), False, id="nothing-free-nothing-released"),
    ],
)
def test_could_fit_counts_whole_free_devices_on_one_node_for_multi_gpu_shapes(
    held, released, shape, fits
):
    cluster = Cluster(parse_nodes(nodes_frame([2])))
    spots = [cluster.place(num, milli) for num, milli in held]
    assert all(s is not None for s in spots)

    chosen = [s for i, s in enumerate(spots) if i in released and s is not None]

    assert cluster.could_fit(chosen, {shape}) is fits
