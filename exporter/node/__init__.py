"""The node readers: what attribution needs besides NVML, read from the node itself.

`cgroup` names a host PID's pod from `/proc/<pid>/cgroup`; `podresources` lists the kubelet's
device allocations over its PodResources gRPC socket (DRA devices included); `apiserver` lists
this node's pods and ResourceSlices from the Kubernetes API with the standard library, `pods`
keeps the pod list fresh in a background thread and `resourceslices` the DRA devices' UUIDs.
`cgroup`, `podresources` and `pods` also read the JSON fixtures the sim and replay backends
write. None reads NVML.
"""
