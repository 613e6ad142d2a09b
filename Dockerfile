FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    UCWEB_BIND=0.0.0.0 \
    UCWEB_PORT=8080 \
    UCWEB_VAR_DIR=/data/var \
    UCWEB_STORAGE_ROOT=file:///data/storage \
    UCWEB_PYTHON=python

WORKDIR /app

COPY requirements.txt ./
RUN pip install -r requirements.txt

COPY . .

RUN useradd --system --create-home --home-dir /home/ucweb ucweb \
    && mkdir -p /data/var /data/storage \
    && chown -R ucweb:ucweb /data
USER ucweb

VOLUME ["/data"]
EXPOSE 8080

# migrate + bootstrap + collectstatic, then serve on $UCWEB_BIND:$UCWEB_PORT
CMD ["bash", "scripts/run_server.sh"]
