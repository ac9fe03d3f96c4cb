"""REST API: authentication, the OpenAPI schema and read-only scale endpoints."""

import pytest
import yaml
from django.urls import reverse
from drf_spectacular.validation import validate_schema
from rest_framework.test import APIClient


@pytest.fixture
def api():
    return APIClient()


def test_schema_is_valid_openapi_3(api, physician):
    assert api.get("/api/schema/").status_code in (401, 403)
    api.force_authenticate(physician)
    response = api.get("/api/schema/")
    assert response.status_code == 200
    schema = yaml.safe_load(response.content)
    assert schema["openapi"].startswith("3.")
    validate_schema(schema)
    assert "/api/scales/" in schema["paths"] and "/api/scale-versions/{id}/" in schema["paths"]
    # the project-entering session authentication is described (projects.schema, loaded with the URLconf)
    assert "cookieAuth" in schema["components"]["securitySchemes"]


def test_swagger_ui_serves_local_assets(client, physician):
    response = client.get("/api/docs/")
    assert response.status_code == 302 and response.url.startswith(reverse("login"))
    client.force_login(physician)
    html = client.get("/api/docs/").content.decode()
    assert "swagger-ui" in html and "cdn" not in html.lower()
    assert "/static/drf_spectacular_sidecar/" in html
    assert "<script>" not in html and "<style>" not in html  # nothing inline: the CSP allows none
    script = client.get("/api/docs/?script=")
    assert script.status_code == 200 and "SwaggerUIBundle" in script.content.decode()


@pytest.mark.django_db
def test_api_requires_authentication(api):
    response = api.get("/api/scales/")
    assert response.status_code in (401, 403)
    assert "detail" in response.json()


def test_token_auth_and_scale_endpoints(api, physician):
    response = api.post(reverse("api-token"), {"username": "dr_p", "password": "correct-horse-battery"})
    assert response.status_code == 200
    api.credentials(HTTP_AUTHORIZATION=f"Token {response.json()['token']}")
    scales = api.get("/api/scales/").json()["results"]
    assert scales[0]["slug"] == "llm-mini-cex" and scales[0]["versions"][0]["number"] == 1
    version_id = scales[0]["versions"][0]["id"]
    version = api.get(f"/api/scale-versions/{version_id}/").json()
    assert len(version["secondary_items"]) == 26
    assert len(version["rating_items"]) == 24
    overall = version["rating_items"][-1]
    assert overall["code"] == "4" and overall["allowed_values"] == [1, 2, 3]
    assert [lv["text_zh"] for lv in overall["levels"]] == ["不合格", "合格", "优秀"]
    assert api.get("/api/scale-versions/", {"scale": "llm-mini-cex"}).json()["count"] == 1


def test_scale_endpoints_are_read_only(api, coordinator):
    api.force_authenticate(coordinator)
    assert api.post("/api/scales/", {"slug": "x", "name_en": "x"}).status_code == 405
    assert api.delete("/api/scales/llm-mini-cex/").status_code == 405


def test_token_endpoint_rejects_bad_credentials_and_throttles(api, physician, settings):
    settings.LOGIN_MAX_FAILURES = 2
    response = api.post(reverse("api-token"), {"username": "dr_p", "password": "nope"})
    assert response.status_code == 401 and response.json()["detail"] and response["WWW-Authenticate"] == "Token"
    response = api.post(reverse("api-token"), {"username": "dr_p", "password": "nope"})
    assert response.status_code == 429 and "Too many" in response.json()["detail"]
    response = api.post(reverse("api-token"), {"username": "dr_p", "password": "correct-horse-battery"})
    assert response.status_code == 429 and "Too many" in response.json()["detail"]


@pytest.mark.django_db
def test_unknown_object_is_404_json(api, physician):
    api.force_authenticate(physician)
    response = api.get("/api/scale-versions/999999/")
    assert response.status_code == 404 and response.json()["detail"]
