# The artifact's container: the project installed onto a CUDA PyTorch runtime image.
# Build and run through docker-compose.yml (README, "Artifact evaluation").

# Any image with python, pip, torch>=2.4 and torchvision>=0.19 will do; CI builds one
# offline and passes it here (.ci/container-test.sh).
ARG BASE_IMAGE=pytorch/pytorch:2.9.0-cuda12.8-cudnn9-runtime
FROM ${BASE_IMAGE}

# PEM text of extra CA certificates that pip trusts during this build only, for
# registries reached through a TLS-inspecting proxy. Empty (the default): pip's own trust.
ARG EXTRA_CA_CERT=""

LABEL org.opencontainers.image.title="repro-moe-rho" \
      org.opencontainers.image.description="Reproducibility artifact for arXiv 2605.15484" \
      org.opencontainers.image.licenses="MIT"

SHELL ["/bin/bash", "-o", "pipefail", "-c"]

# The image runs as any UID (compose passes the host user's), so everything it writes
# lives in world-writable sticky directories: HOME, the caches and /results.
ENV HOME=/home/repro \
    TORCH_HOME=/cache/torch \
    XDG_CACHE_HOME=/cache/xdg \
    MPLCONFIGDIR=/cache/xdg/matplotlib \
    REPRO_DATA=/data \
    REPRO_RESULTS=/results \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

RUN groupadd --non-unique --gid 1000 repro \
    && useradd --non-unique --uid 1000 --gid 1000 --no-log-init --create-home --home-dir /home/repro repro \
    && mkdir -p /cache/torch /cache/xdg /data /results \
    && chmod 1777 /home/repro /cache /cache/torch /cache/xdg /results

# Editable, as in the README: the package runs from this source tree (its manifests and paper tables are
# package data, repro/manifests/ and repro/paper_tables/). Of .git, .dockerignore lets in only HEAD, the
# branch refs and the index, from which every result records the commit the image was built from
# (repro/results/git_files.py): no build variable to set.
WORKDIR /opt/repro
COPY . .

# The same install command as the README. The base's torch and torchvision are pinned
# by a constraint file read from the base itself, so pip never replaces them; the
# check after the install fails the build if it did.
RUN python -c "from importlib.metadata import version as v; print(f'torch=={v(\"torch\")}'); print(f'torchvision=={v(\"torchvision\")}')" > /tmp/base-torch.txt \
    && if [ -n "${EXTRA_CA_CERT}" ]; then \
         cat "$(python -c 'import pip._vendor.certifi as c; print(c.where())')" > /tmp/pip-ca.pem \
         && printf '%s\n' "${EXTRA_CA_CERT}" >> /tmp/pip-ca.pem \
         && export PIP_CERT=/tmp/pip-ca.pem; \
       fi \
    && python -m pip install --no-cache-dir --constraint /tmp/base-torch.txt -e '.[dev]' \
    && python -c "from importlib.metadata import version as v; print(f'torch=={v(\"torch\")}'); print(f'torchvision=={v(\"torchvision\")}')" | diff /tmp/base-torch.txt - \
    && python -c "import torch, torchvision, repro; print('torch', torch.__version__, 'cuda', torch.version.cuda)" \
    && rm -f /tmp/base-torch.txt /tmp/pip-ca.pem

USER 1000:1000
ENTRYPOINT ["repro"]
CMD ["--help"]
