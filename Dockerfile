# The ReplicaLab OpenEnv server:
#   docker build -t replicalab . && docker run -e REPLICALAB_TOKEN=... -p 8000:8000 replicalab
# It listens on every interface of the container, so it needs a token (16+ characters).
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
RUN useradd --create-home --uid 10001 replicalab
WORKDIR /app
COPY . /app
RUN pip install '.[server]' && python -m compileall -q /usr/local/lib/python3.11/site-packages > /dev/null
USER replicalab
EXPOSE 8000
# Start-up takes a few seconds on a quiet machine and up to about 20 on a loaded one.
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/health', timeout=4)"
STOPSIGNAL SIGTERM
CMD ["replicalab", "serve", "--host", "0.0.0.0", "--port", "8000"]
