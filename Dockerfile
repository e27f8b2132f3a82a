# The ReplicaLab OpenEnv server: docker build -t replicalab . && docker run -p 8000:8000 replicalab
FROM python:3.11-slim
WORKDIR /app
COPY . /app
RUN pip install --no-cache-dir '.[server]'
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=3s --start-period=10s --retries=3 \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/health')"
CMD ["replicalab", "serve", "--host", "0.0.0.0", "--port", "8000"]
