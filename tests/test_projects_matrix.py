"""The cross-project matrix: no page, htmx partial, export, report, API operation or list reads or writes
across projects.

The world (tests/two_projects.py) has projects Alpha and Bravo with one of every kind of object. For every URL pattern
of the site (``get_resolver()``) and every operation of the API schema, and for each role of Alpha (coordinator,
analyst, physician), a request for Bravo's object (GET, and POST with valid-looking data) answers exactly as the same
request for a missing id does, and that answer is 404 - unless the role or the method is refused whatever the object
(then it is the very answer the role gets on Alpha's own object). Pages, lists and exports that Alpha's users see
contain no Bravo row (every Bravo name, external id and username contains "bravo"), and API lists no Bravo id.

A URL pattern or API resource missing from the maps below fails the test named after it: a new URL must say which
kind of object each of its arguments is.
"""

from __future__ import annotations

import io
import json
import re
import zipfile

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from tests.two_projects import MISSING_ID, shared_world

ROLES = ("coordinator", "analyst", "physician")

# URL name -> {argument: object kind}; "=value" is a literal; "?name" is a query parameter; "own:kind" is always the
# requesting user's project's object (a panel link's token).
OBJECT_URLS: dict[str, dict[str, str]] = {
    **{name: {"pk": "assignment"} for name in (
        "rate", "rate-label", "rate-comment", "rate-submit", "rate-skip", "rate-flag", "rate-redact",
        "rate-goto-next", "assignment-reassign", "label-history")},
    "api-campaign-report": {"pk": "campaign"},
    "api-campaign-labels": {"pk": "campaign"},
    "api-judge-report": {"pk": "judge_run", "?campaign": "campaign"},
    "api-judge-scores": {"pk": "judge_run"},
    "api-jury-report": {"pk": "jury", "?campaign": "campaign"},
    "api-jury-scores": {"pk": "jury"},
    "api-scale-detail": {"slug": "scale"},
    "api-scale-version-detail": {"pk": "scale_version"},
    "api-corpus-detail": {"pk": "corpus"},
    "api-corpus-dialogues": {"pk": "corpus"},
    "api-dialogue-detail": {"pk": "dialogue"},
    **{f"api-campaign-{what}": {"pk": "campaign"} for what in ("detail", "assign", "progress", "raters", "sample")},
    **{f"api-assignment-{what}": {"pk": "assignment"} for what in ("detail", "flag", "labels", "skip", "submit",
                                                                                "answers")},
    "api-label-detail": {"pk": "label"},
    **{f"api-preference-study-{what}": {"pk": "preference_study"}
       for what in ("detail", "export", "lock", "results", "unblind")},
    **{f"api-preference-task-{what}": {"pk": "preference_task"} for what in ("detail", "answer", "skip", "submit")},
    "api-judge-run-detail": {"pk": "judge_run"},
    "api-preference-judge-run-detail": {"pk": "preference_judge_run"},
    "api-generation-job-detail": {"pk": "generation_job"},
    "delphi:study": {"pk": "delphi_study"},
    "delphi:study-settings": {"pk": "delphi_study"},
    "delphi:study-invite": {"pk": "delphi_study"},
    "delphi:study-action": {"pk": "delphi_study", "action": "=validation"},
    "delphi:study-export": {"pk": "delphi_study", "what": "=responses", "fmt": "=csv"},
    "delphi:panelist-action": {"pk": "panelist", "action": "=new-link"},
    "delphi:panelist-link": {"pk": "panelist"},
    "delphi:study-links": {"pk": "delphi_study"},
    "delphi:round": {"pk": "round"},
    "delphi:round-action": {"pk": "round", "action": "=remind"},
    "delphi:round-decide": {"pk": "round", "item_id": "delphi_item"},
    "delphi:round-add-item": {"pk": "round"},
    "delphi:round-withdraw-added": {"pk": "round", "decision_id": "decision"},
    "delphi:round-adopt": {"pk": "round", "kind": "=response", "obj_id": "response"},
    "delphi:round-validation": {"pk": "round"},
    "delphi:round-export": {"pk": "round", "fmt": "=csv"},
    "delphi:panel-answer": {"token": "own:panel_token", "part_id": "participation", "item_id": "delphi_item"},
    "delphi:panel-profile": {"token": "own:panel_token", "part_id": "participation"},
    "delphi:panel-propose": {"token": "own:panel_token", "part_id": "participation"},
    "delphi:panel-withdraw-proposal": {"token": "own:panel_token", "part_id": "own:participation",
                                       "proposal_id": "proposal"},
    "delphi:panel-complete": {"token": "own:panel_token", "part_id": "participation"},
    "job-status": {"pk": "report_job"},
    "study-archive-export-status": {"pk": "archive_job"},
    "study-archive-download": {"pk": "archive_job"},
    "figures-status": {"pk": "report_job"},
    "campaign-trial-report": {"pk": "campaign"},
    "campaign-report": {"pk": "campaign"},
    "campaign-report-status": {"pk": "campaign", "job_id": "report_job"},
    "campaign-report-download": {"pk": "campaign"},
    "campaign-report-csv": {"pk": "campaign"},
    "campaign-export": {"pk": "campaign", "fmt": "=csv"},
    "judge-edit": {"pk": "judge_config"},
    "judge-run": {"pk": "judge_run"},
    "judge-run-progress": {"pk": "judge_run"},
    "judge-run-action": {"pk": "judge_run"},
    "judge-run-report": {"pk": "judge_run", "?campaign": "campaign"},
    "judge-run-report-status": {"pk": "judge_run", "job_id": "judge_report_job", "?campaign": "campaign"},
    "judge-run-report-download": {"pk": "judge_run", "fmt": "=json", "?campaign": "campaign"},
    "judge-run-compare": {"pk": "judge_run", "other": "imported_run", "?campaign": "campaign"},
    "jury-detail": {"pk": "jury"},
    "jury-delete": {"pk": "jury"},
    "jury-report": {"pk": "jury", "?campaign": "campaign"},
    "jury-report-status": {"pk": "jury", "job_id": "jury_report_job", "?campaign": "campaign"},
    "jury-report-download": {"pk": "jury", "fmt": "=json", "?campaign": "campaign"},
    "jury-compare": {"pk": "jury", "other": "judge_run", "?campaign": "campaign"},
    **{f"preference-{what}": {"pk": "preference_study"}
       for what in ("detail", "sources", "raters", "action", "results", "export")},
    "preference-item-delete": {"pk": "preference_study", "item_id": "preference_item"},
    **{f"compare-{what}": {"pk": "preference_task"}
       for what in ("task", "answer", "comment", "submit", "skip", "goto-next")},
    "generation-case-set": {"pk": "case_set"},
    "generation-job": {"pk": "generation_job"},
    "generation-job-progress": {"pk": "generation_job"},
    "generation-job-action": {"pk": "generation_job"},
    "generation-dialogue": {"pk": "generated_dialogue"},
    **{name: {"slug": "scale", "number": "=1"} for name in (
        "scale-version", "scale-new-version", "scale-publish", "scale-add-dimension", "scale-add-item")},
    "scale-detail": {"slug": "scale"},
    "item-edit": {"pk": "item"},
    "item-remove": {"pk": "item"},
    "corpus-detail": {"pk": "corpus"},
    "privacy-review": {"pk": "corpus"},
    "dialogue-detail": {"pk": "dialogue"},
    "redaction-revoke": {"pk": "redaction"},
    **{f"campaign-{what}": {"pk": "campaign"}
       for what in ("detail", "add-raters", "assign", "sample", "allow-names", "rater-kind")},
    "campaign-active-sample": {"pk": "campaign"},
    "campaign-rater-toggle": {"pk": "campaign", "user_id": "rater"},
    # stored figures named by a query parameter: the judge selection (GET, and POST of its stored settings) and
    # the planner partial of a campaign
    "judge-selection": {"?campaign": "campaign"},
    "judge-planner": {"?target": "campaign"},
    "campaign-dialogue": {"pk": "campaign", "dialogue_id": "dialogue"},
    "campaign-dialogue-action": {"pk": "campaign", "dialogue_id": "dialogue"},
    # the project pages: a project the user is not a member of answers 404 like a missing one
    "project-detail": {"pk": "project"},
    "project-member-remove": {"pk": "project", "user_id": "member"},
    "project-invitation-revoke": {"pk": "project", "invitation_id": "invitation"},
}

# Pages without an object: lists, forms, queues. Alpha's users must see no Bravo row on them.
LIST_URLS: dict[str, dict[str, str]] = {
    **{name: {} for name in (
        "home", "scale-list", "scale-new", "corpus-list", "corpus-upload", "campaign-list", "campaign-new",
        "rate-next", "compare-next", "judge-list", "judge-new", "judge-run-new", "judge-fake-endpoint", "jury-new",
        "preference-list",
        "preference-new", "generation-home", "generation-case-import", "generation-job-new", "delphi:list",
        "delphi:study-new", "delphi:mine", "system", "system-workers", "api-token-page", "api-root", "project-list")},
    "scale-install": {"slug": "=hivmedqa"},
    **{name: {} for name in ("study-archive", "study-archive-export", "study-archive-methods")},
    "study-archive-document": {"what": "=methods.md"},
    **{f"api-{what}-list": {} for what in (
        "scale", "scale-version", "corpus", "dialogue", "campaign", "assignment", "label", "preference-study",
        "preference-task", "judge-run", "preference-judge-run", "generation-job")},
}

# Not about project data: signing in and out, the password, health, the schema and its docs (read in
# test_api_schema_operations_cover_the_api), the token endpoint, the worker check (instance-wide, admin job), the
# Django admin (administrators only), the panel link's landing page (its only argument is the bearer token,
# checked in tests/test_delphi.py), a new account's one-time set-password link (its arguments are the account and
# its token; tests/test_projects_annotation.py), an invitation's one-time link and its tokenless page (the token is
# the only argument, kept in the session; tests/test_projects_invitations.py), the manual behind the Help link (the
# same files for everyone, tests/test_help.py), and the language menu and the JavaScript strings
# (tests/test_languages.py).
OTHER_URLS = {"login", "logout", "password_change", "password_change_done", "healthz", "schema", "swagger-ui",
              "api-token", "worker-check", "delphi:panel-home", "project-switch", "help", "help-page",
              "account-set-password", "invitation-open", "invitation", "language-switch", "javascript-catalog"}

# API resource -> object kind (path parameter), and the query parameters that name an object
API_RESOURCES = {"assignments": "assignment", "campaigns": "campaign", "corpora": "corpus", "dialogues": "dialogue",
                 "generation-jobs": "generation_job", "judge-runs": "judge_run", "juries": "jury", "labels": "label",
                 "preference-judge-runs": "preference_judge_run", "preference-studies": "preference_study",
                 "preference-tasks": "preference_task", "scale-versions": "scale_version", "scales": "scale",
                 "auth": None}
API_QUERY_OBJECTS = {"campaign": "campaign", "corpus": "corpus", "dialogue": "dialogue", "item": "item"}

POST_DATA = {"action": "cancel", "reason": "matrix test", "value": "1", "name": "matrix", "note": "matrix"}


def _walk(patterns, prefix: str = "", namespace: str | None = None):
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            if str(pattern.pattern).startswith("admin/"):
                continue
            inner = pattern.namespace or namespace
            yield from _walk(pattern.url_patterns, prefix + str(pattern.pattern), inner)
        elif isinstance(pattern, URLPattern):
            name = f"{namespace}:{pattern.name}" if namespace else str(pattern.name)
            args = set(pattern.pattern.converters) | set(pattern.pattern.regex.groupindex)
            yield name, prefix + str(pattern.pattern), args


PATTERNS = sorted({(name, path, tuple(sorted(args))) for name, path, args in _walk(get_resolver().url_patterns)})

ARGS: dict[str, set[str]] = {}
for _name, _path, _args in PATTERNS:
    ARGS.setdefault(_name, set()).update(_args)

world = pytest.fixture(scope="module")(shared_world)


@pytest.fixture(scope="module")
def sessions(world, django_db_blocker):
    """Three sessions per role of Alpha, made once inside the module's world (each test's changes to them, a message
    or a project switch, are rolled back with the test; the cache they are also kept in is emptied after every
    test): ``sessions(client, role, n)`` logs ``client`` in with the n-th. A login per request client and test was
    a fifth of the module's time on PostgreSQL."""
    from django.conf import settings

    keys = {}
    with django_db_blocker.unblock():
        for role in ROLES:
            for n in range(3):
                client = Client()
                client.force_login(world.alpha.user(role))
                keys[role, n] = client.cookies[settings.SESSION_COOKIE_NAME].value

    def log_in(client: Client, role: str, n: int = 0) -> Client:
        client.cookies[settings.SESSION_COOKIE_NAME] = keys[role, n]
        return client

    return log_in


def _value(world, side, spec: str):
    """The URL argument for ``spec`` (an object kind) from ``side``'s objects."""
    if spec.startswith("="):
        return spec[1:]
    if spec.startswith("own:"):
        side, spec = world.alpha, spec[4:]
    if spec == "project":
        return side.project.pk
    if spec == "member":
        return side.coordinator.pk
    if spec == "panel_token":
        from delphi.services import make_token

        return make_token(side.objects["panelist"])
    obj = side.objects[spec]
    return obj.slug if spec == "scale" else obj.pk


def _url(world, name: str, spec: dict, fill, suffix: bool = False) -> str:
    """``fill(argument, kind)`` gives each object argument's value; ``suffix``: the API's format-suffix route
    (``.json``) of the same view."""
    kwargs, query = {}, {}
    for arg, kind in spec.items():
        value = kind[1:] if kind.startswith("=") else fill(arg, kind)
        (query if arg.startswith("?") else kwargs)[arg.lstrip("?")] = value
    if suffix:
        kwargs["format"] = "json"
    url = reverse(name, kwargs=kwargs)
    return url + ("?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else "")


def _body(response) -> bytes:
    if getattr(response, "streaming", False):
        return b"".join(response.streaming_content)
    return response.content


def _text(response) -> str:
    """The answer as text: spreadsheets (zip) unpacked, so their cells are searched too."""
    body = _body(response)
    if body[:2] == b"PK":
        with zipfile.ZipFile(io.BytesIO(body)) as archive:
            return "\n".join(archive.read(name).decode("utf-8", "replace") for name in archive.namelist())
    return body.decode("utf-8", "replace")


def _normal(text: str, urls, ids) -> str:
    """A 404 answer with what differs between two requests taken out: nonces, CSRF tokens, the address and ids."""
    text = re.sub(r'nonce="[^"]*"', "", text)
    text = re.sub(r'(csrfmiddlewaretoken" value=|csrf-token" content=|"X-CSRFToken": )"[^"]*"', "", text)
    for url in urls:
        text = text.replace(url, "<url>")
    for value in ids:
        text = re.sub(rf"\b{re.escape(str(value))}\b", "<id>", text)
    return text


def _request(client, method: str, url: str):
    if method == "GET":
        return client.get(url)
    if url.startswith("/api/"):
        return client.post(url, data=json.dumps({}), content_type="application/json")
    return client.post(url, data=POST_DATA)


def _kinds(spec: dict) -> list[str]:
    return [arg for arg, kind in spec.items() if not kind.startswith(("=", "own:"))]


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("name,path,args", PATTERNS, ids=[f"{n}:{p}" for n, p, _ in PATTERNS])
def test_no_url_reads_or_writes_across_projects(world, db, sessions, role, name, path, args):
    if name in OTHER_URLS or name in LIST_URLS:
        return
    if name not in OBJECT_URLS:
        pytest.fail(f"URL {name!r} ({path}) is not in the cross-project map of tests/test_projects_matrix.py: say "
                    "which kind of object each of its arguments is (OBJECT_URLS), or that it is a list (LIST_URLS) "
                    "or not about project data (OTHER_URLS)")
    spec = OBJECT_URLS[name]
    missing = [a for a in args if a != "format" and a not in spec]
    assert not missing, f"{name}: arguments {missing} not in the map"
    alpha, bravo = world.alpha, world.bravo
    # one client for Bravo's objects, one for missing ids, one for Alpha's own: each with its own session (the
    # messages a request leaves show on the next page)
    client_other, client_gone, client_own = (sessions(Client(), role, n) for n in range(3))
    object_args = _kinds(spec)
    # all of Bravo's objects, then (URLs with two objects) Alpha's first object with Bravo's others
    variants = [{a: "other" for a in object_args}]
    if len(object_args) > 1 and any(_value(world, alpha, spec[a]) != _value(world, bravo, spec[a])
                                    for a in object_args[1:]):  # not when the others are shared (library items)
        variants += [{a: ("own" if i == 0 else "other") for i, a in enumerate(object_args)}]
    for variant in variants:
        used: list = []

        def fill(arg, kind, variant=variant, gone=False, used=used):
            if kind.startswith("own:") or variant.get(arg) == "own":
                return _value(world, alpha, kind)
            value = ("no-such-scale" if kind == "scale" else MISSING_ID) if gone else _value(world, bravo, kind)
            used.append(value)
            return value

        suffix = "format" in args
        other_url = _url(world, name, spec, fill, suffix)
        missing_url = _url(world, name, spec, lambda a, k, f=fill: f(a, k, gone=True), suffix)
        for method in ("GET", "POST"):
            other = _request(client_other, method, other_url)
            gone = _request(client_gone, method, missing_url)
            where = f"{role} {method} {other_url} (Bravo's) vs {missing_url} (missing)"
            assert other.wsgi_request.user == gone.wsgi_request.user == alpha.user(role), f"{where}: not logged in"
            assert other.status_code == gone.status_code, \
                f"{where}: {other.status_code} vs {gone.status_code}: another project's object is told apart"
            assert other.status_code < 500, f"{where}: {other.status_code}"
            urls, ids = (other_url, missing_url), set(used)
            if other.status_code != 404:
                # answered whatever the object (the role or the method is refused, a GET redirects): Alpha's own
                # object gets the same status, and nothing of the object is in the answer
                own_url = _url(world, name, spec, lambda a, k: _value(world, alpha, k.replace("own:", "")), suffix)
                own = _request(client_own, method, own_url)
                assert own.status_code == other.status_code, \
                    f"{where}: {other.status_code} on Bravo's object but {own.status_code} on Alpha's own"
                assert _normal(other.get("Location", ""), urls, ids) == _normal(gone.get("Location", ""), urls, ids)
            assert _normal(_text(other), urls, ids) == _normal(_text(gone), urls, ids), \
                f"{where}: the answers differ"
            assert not bravo.leaks(_text(other)), f"{where}: shows Bravo's rows"


# ---------------------------------------------------------------------------------------------------------------
# what Alpha's users see: pages, partials, exports and reports of their own objects, lists
# ---------------------------------------------------------------------------------------------------------------

def _own_url(world, name: str) -> str:
    spec = OBJECT_URLS.get(name) or LIST_URLS[name]
    return _url(world, name, spec, lambda a, k: _value(world, world.alpha, k.replace("own:", "")))


SEEN = sorted(n for n, _, _ in PATTERNS if n in LIST_URLS or n in OBJECT_URLS)
EXPORTS = [("campaign-export", {"fmt": "=" + fmt}) for fmt in ("csv", "json", "xlsx")] + [
    ("delphi:study-export", {"what": "=responses", "fmt": "=xlsx"}),
    ("delphi:study-export", {"what": "=reporting", "fmt": "=xlsx"}),
    ("delphi:round-export", {"fmt": "=xlsx"}), ("judge-run-report-download", {"fmt": "=html"})]


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("name", SEEN)
def test_pages_of_the_own_project_show_no_other_project_row(world, db, sessions, client, role, name):
    sessions(client, role)
    url = _own_url(world, name)
    response = client.get(url)
    assert response.status_code < 500, f"{role} GET {url}: {response.status_code}"
    assert response.wsgi_request.user == world.alpha.user(role), "not logged in"
    leaks = world.bravo.leaks(_text(response))
    assert not leaks, f"{role} GET {url} shows Bravo's rows: {leaks}"


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("name,fields", EXPORTS, ids=[f"{n}-{f}" for n, f in EXPORTS])
def test_exports_of_the_own_project_hold_no_other_project_row(world, db, sessions, client, role, name, fields):
    sessions(client, role)
    spec = {**OBJECT_URLS[name], **fields}
    url = _url(world, name, spec, lambda a, k: _value(world, world.alpha, k))
    response = client.get(url)
    assert response.status_code < 500
    assert response.wsgi_request.user == world.alpha.user(role), "not logged in"
    assert not world.bravo.leaks(_text(response)), f"{role} GET {url} exports Bravo's rows"


def test_own_objects_are_reachable(world, db, client):
    """The maps are right (no test above passes because every URL answers 404): Alpha's coordinator opens Alpha's
    objects, Alpha's physician their own rating and comparison pages."""
    not_found = []
    for name in sorted(OBJECT_URLS):
        if name.startswith(("delphi:panel", "project-")) or name not in ARGS:
            continue
        rater = name.startswith(("rate", "compare-", "api-assignment-", "api-preference-task-"))
        client.force_login(world.alpha.physicians[0] if rater else world.alpha.coordinator)
        url = _own_url(world, name)
        if client.get(url).status_code == 404 and client.post(url, data=POST_DATA).status_code == 404:
            not_found.append(url)
    assert not_found == [], f"Alpha's coordinator gets 404 on Alpha's own objects: {not_found}"


# ---------------------------------------------------------------------------------------------------------------
# the API: every operation of the schema
# ---------------------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def schema(world, django_db_blocker):
    from django.test import Client

    with django_db_blocker.unblock():
        client = Client()
        client.force_login(world.admin)
        response = client.get("/api/schema/", {"format": "json"}, HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    return json.loads(response.content)


def _operations(schema) -> list[tuple[str, str, dict]]:
    return [(method.upper(), path, op) for path, ops in schema["paths"].items() for method, op in ops.items()
            if method in ("get", "post", "put", "patch", "delete")]


def _resource(path: str) -> str:
    return path.split("/")[2]


def test_api_schema_operations_cover_the_api(schema):
    unknown = sorted({path for _, path, _ in _operations(schema) if _resource(path) not in API_RESOURCES})
    assert not unknown, f"API resources missing from API_RESOURCES in tests/test_projects_matrix.py: {unknown}"
    query = sorted({(path, p["name"]) for _, path, op in _operations(schema) for p in op.get("parameters", [])
                    if p["in"] == "query" and p["name"] not in API_QUERY_OBJECTS
                    and p["name"] not in {"limit", "offset", "status", "phase", "language", "model", "split",
                                          "privacy_status", "ci", "correlation", "plots", "floor", "margin",
                                          "min_dialogues", "format", "resamples", "updated_after", "submitted",
                                          # filters within the request's project, and the project itself
                                          "name", "scale", "project"}})
    assert not query, f"query parameters the matrix does not know (do they name an object?): {query}"


@pytest.mark.parametrize("role", ROLES)
def test_api_operations_on_other_project_objects_answer_404(world, db, client, schema, role):
    alpha, bravo = world.alpha, world.bravo
    client.force_login(alpha.user(role))
    checked, problems = 0, []
    for method, path, op in _operations(schema):
        if "{" not in path:
            continue
        kind = API_RESOURCES[_resource(path)]
        arg = re.search(r"\{(\w+)\}", path).group(1)
        other = path.replace("{" + arg + "}", str(_value(world, bravo, kind)))
        gone = path.replace("{" + arg + "}", "no-such-scale" if kind == "scale" else str(MISSING_ID))
        queries = [p["name"] for p in op.get("parameters", []) if p["in"] == "query"
                   and p["name"] in API_QUERY_OBJECTS]
        suffix = ("?" + "&".join(f"{q}={_value(world, bravo, API_QUERY_OBJECTS[q])}" for q in queries)
                  if queries else "")
        for url_other, url_gone in ((other, gone), (other + suffix, gone + suffix)) if suffix else ((other, gone),):
            a, b = _request(client, method, url_other), _request(client, method, url_gone)
            checked += 1
            if a.status_code != b.status_code:
                problems.append(f"{method} {url_other}: {a.status_code}, missing id: {b.status_code}")
            elif a.status_code == 404:
                if a.json().get("detail") != b.json().get("detail"):
                    problems.append(f"{method} {url_other}: 404 {a.json()} vs missing {b.json()}")
            elif a.status_code != 403 and a.status_code != 405:
                problems.append(f"{method} {url_other}: {a.status_code} (not 404)")
            elif bravo.leaks(_text(a)):
                problems.append(f"{method} {url_other}: shows Bravo's rows")
        if suffix and "{" in path:  # Alpha's object with a Bravo object in the query (judge report's campaign)
            own = path.replace("{" + arg + "}", str(_value(world, alpha, kind))) + suffix
            response = _request(client, method, own)
            if 200 <= response.status_code < 300 or bravo.leaks(_text(response)):
                problems.append(f"{method} {own}: {response.status_code} with Bravo's object in the query")
    assert checked >= 30
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("role", ROLES)
def test_api_lists_hold_no_other_project_row(world, db, client, schema, role):
    """Every list operation, plain and filtered by each of Bravo's objects it can be filtered by: no Bravo name and
    no Bravo id."""
    alpha, bravo = world.alpha, world.bravo
    client.force_login(alpha.user(role))
    problems = []
    for method, path, op in _operations(schema):
        if method != "GET" or "{" in path:
            continue
        kind = API_RESOURCES[_resource(path)]
        other_ids = {bravo.objects[k].pk for k in (kind, "imported_run" if kind == "judge_run" else kind)
                     if k != "scale"}
        urls = [path] + [f"{path}?{p['name']}={_value(world, bravo, API_QUERY_OBJECTS[p['name']])}"
                         for p in op.get("parameters", []) if p["name"] in API_QUERY_OBJECTS]
        for url in urls:
            response = client.get(url)
            if response.status_code >= 500:
                problems.append(f"GET {url}: {response.status_code}")
                continue
            if bravo.leaks(_text(response)):
                problems.append(f"GET {url}: Bravo's rows {bravo.leaks(_text(response))}")
            if response.status_code == 200:
                data = response.json()
                rows = data.get("results", data) if isinstance(data, dict) else data
                ids = {row.get("id") for row in rows if isinstance(row, dict)} if isinstance(rows, list) else set()
                if ids & other_ids:
                    problems.append(f"GET {url}: Bravo's ids {sorted(ids & other_ids)}")
    assert not problems, "\n".join(problems)


def test_api_writes_cannot_point_at_other_project_objects(world, db, client):
    """Creating or changing Alpha's objects with a Bravo object in the body is refused and changes nothing."""
    from annotation.models import Campaign, CampaignRater, ScaleVersion

    alpha, bravo = world.alpha, world.bravo
    client.force_login(alpha.coordinator)
    mini_cex = ScaleVersion.objects.get(scale__slug="llm-mini-cex", number=1)
    before = Campaign.objects.count()
    response = client.post("/api/campaigns/", data=json.dumps(
        {"name": "Alpha sneaky", "corpus": bravo.pk("corpus"), "scale_version": mini_cex.pk, "overlap": 2}),
        content_type="application/json")
    assert response.status_code in (400, 404), response.content
    assert Campaign.objects.count() == before
    response = client.post(f"/api/campaigns/{alpha.pk('campaign')}/raters/", data=json.dumps(
        {"user": bravo.physicians[1].pk, "users": [bravo.physicians[1].pk],
         "username": bravo.physicians[1].username}), content_type="application/json")
    assert response.status_code in (400, 404), response.content
    assert not CampaignRater.objects.filter(campaign=alpha.objects["campaign"], user=bravo.physicians[1]).exists()


@pytest.mark.parametrize("role", ROLES)
def test_the_switch_refuses_a_project_one_is_not_in(world, db, client, role):
    client.force_login(world.alpha.user(role))
    for value in (world.bravo.project.pk, "Bravo"):
        other = client.post(reverse("project-switch"), {"project": value})
        gone = client.post(reverse("project-switch"), {"project": MISSING_ID if isinstance(value, int) else "Nope"})
        assert other.status_code == gone.status_code == 404
    assert client.get("/campaigns/").status_code in (200, 403)  # still in Alpha
    assert not world.bravo.leaks(client.get("/").content.decode())


@pytest.mark.parametrize("how", ["header", "query"])
@pytest.mark.parametrize("role", ROLES)
def test_naming_a_project_one_is_not_in_answers_404(world, db, client, role, how):
    client.force_login(world.alpha.user(role))
    for name_or_id in ("Bravo", world.bravo.project.pk, "No such project"):
        if how == "header":
            api = client.get("/api/campaigns/", HTTP_X_PROJECT=str(name_or_id))
            page = client.get("/campaigns/", HTTP_X_PROJECT=str(name_or_id))
        else:
            api = client.get("/api/campaigns/", {"project": name_or_id})
            page = client.get("/campaigns/", {"project": name_or_id})
        assert api.status_code == 404, (name_or_id, api.status_code)
        assert page.status_code == 404, (name_or_id, page.status_code)
        assert not world.bravo.leaks(_text(api)) and not world.bravo.leaks(_text(page))


def test_admin_sees_both_projects(world, db, client):
    client.force_login(world.admin)
    for side in (world.alpha, world.bravo):
        other = world.bravo if side is world.alpha else world.alpha
        listing = client.get("/api/campaigns/", HTTP_X_PROJECT=side.name)
        assert listing.status_code == 200
        names = {row["name"] for row in listing.json()["results"]}
        assert f"{side.name} campaign" in names and f"{other.name} campaign" not in names
        for url in (f"/campaigns/{side.pk('campaign')}/", f"/corpora/{side.pk('corpus')}/",
                    f"/judges/runs/{side.pk('judge_run')}/", f"/preference/{side.pk('preference_study')}/",
                    f"/delphi/{side.pk('delphi_study')}/", f"/generation/jobs/{side.pk('generation_job')}/"):
            response = client.get(url, {"project": side.name})
            assert response.status_code == 200, (url, response.status_code)
            assert side.name in response.content.decode()


@pytest.mark.usefixtures("across_projects")
def test_audit_events_carry_their_project(world, db):
    """Every audit entry the world's services wrote about a project's objects records that project."""
    from django.contrib.contenttypes.models import ContentType

    from projects.models import AuditEvent

    checked = 0
    for side in (world.alpha, world.bravo):
        for kind in ("corpus", "scale", "campaign", "preference_study", "delphi_study", "generation_job"):
            obj = side.objects[kind]
            events = AuditEvent.objects.filter(target_type=ContentType.objects.get_for_model(obj),
                                               target_id=str(obj.pk))
            assert {e.project_id for e in events} <= {side.project.pk}, (side.name, kind)
            checked += events.count()
        members = AuditEvent.objects.filter(action="member-add", data__user=side.coordinator.username)
        assert members and {e.project_id for e in members} == {side.project.pk}
        assert AuditEvent.objects.get(action="world.built", project=side.project)
    assert checked >= 6
