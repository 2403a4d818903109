# One image for both components: `gpu-exporter` (DaemonSet) and `gpu-reclaimer` (Deployment);
# the manifests in deploy/ pick the command. Build: docker build -t gpu-reclaim:0.1.0 .
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY gpu_contract ./gpu_contract
COPY exporter ./exporter
COPY reclaimer ./reclaimer
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1
RUN groupadd --system --gid 10001 gpureclaim \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --shell /usr/sbin/nologin gpureclaim
COPY --from=build /wheels /wheels
RUN pip install --no-compile /wheels/*.whl && rm -rf /wheels
# Non-root by default; the exporter DaemonSet overrides to uid 0 (all capabilities dropped) only
# because the kubelet's PodResources socket is root-owned.
USER 10001:10001
EXPOSE 9400 9401
ENTRYPOINT ["gpu-reclaimer"]
CMD ["--help"]
