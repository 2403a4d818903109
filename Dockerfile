# One image for both components: `gpu-exporter` (DaemonSet) and `gpu-reclaimer` (Deployment);
# the manifests in deploy/ pick the command.
# Build: docker build --build-arg REVISION=$(git rev-parse --short HEAD) -t gpu-reclaim:0.1.0 .
# The build stage takes the whole source tree; .dockerignore leaves out what the wheel does not
# need (tests, docs, manifests, local state), so a new package is in the image the day it lands.
# tests/ops/test_image.py builds the wheel from exactly what this file copies and starts both
# commands from it.
FROM python:3.11-slim AS build
WORKDIR /src
COPY . .
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

FROM python:3.11-slim
ARG REVISION=""
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    GPU_RECLAIM_REVISION=${REVISION}
LABEL org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.licenses="Apache-2.0"
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
