"""The node readers: what attribution needs besides NVML, read from the node itself.

`cgroup` names a host PID's pod from `/proc/<pid>/cgroup`; `podresources` lists the kubelet's
device allocations over its PodResources gRPC socket; `apiserver` lists this node's pods from the
Kubernetes API with the standard library, and `pods` keeps that list fresh in a background
thread. Each also reads the JSON fixtures the sim and replay backends write. None reads NVML.
"""
