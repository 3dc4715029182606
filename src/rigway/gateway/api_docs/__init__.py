"""The API's reference pages, Swagger UI at `/docs` and ReDoc at `/redoc`, served with
their scripts and styles from the gateway itself (no CDN: they render offline)."""
