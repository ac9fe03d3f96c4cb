from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.urls import include, path, re_path, reverse_lazy
from django.utils import translation
from django.views.decorators.cache import cache_control
from django.views.i18n import JavaScriptCatalog
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.routers import DefaultRouter

from annotation import api as annotation_api
from annotation import views as annotation_views
from annotation.urls import rating_urlpatterns
from config.manual import manual
from config.views import healthz
from projects import schema  # noqa: F401 - describes the project session authentication in /api/schema/
from projects import views as project_views
from projects.language import supported
from scoring.generation import api as api_generation
from scoring.judges import api as api_judges
from scoring.preference import api as api_preference
from scoring.reports import api as scoring_api

handler400 = "config.failures.handler400"
handler403 = "config.failures.handler403"
handler404 = "config.failures.handler404"
handler500 = "config.failures.handler500"


def _token_or_login(view):
    """A request with an Authorization header goes to the API view (a bad token is a 401); a browser without one
    is sent to the login page as on every other page."""
    browser = login_required(view)

    def docs(request, *args, **kwargs):
        return (view if request.META.get("HTTP_AUTHORIZATION") else browser)(request, *args, **kwargs)

    return docs


router = DefaultRouter()
# API names start with "api-": the API root links each list by its name, and "scale-list" is the HTML page's.
router.register("scales", annotation_api.ScaleViewSet, basename="api-scale")
router.register("scale-versions", annotation_api.ScaleVersionViewSet, basename="api-scale-version")
router.register("corpora", annotation_api.CorpusViewSet, basename="api-corpus")
router.register("dialogues", annotation_api.DialogueViewSet, basename="api-dialogue")
router.register("campaigns", annotation_api.CampaignViewSet, basename="api-campaign")
router.register("assignments", annotation_api.AssignmentViewSet, basename="api-assignment")
router.register("labels", annotation_api.LabelViewSet, basename="api-label")
router.register("preference-studies", api_preference.PreferenceStudyViewSet, basename="api-preference-study")
router.register("preference-tasks", api_preference.PreferenceTaskViewSet, basename="api-preference-task")
router.register("judge-runs", api_judges.JudgeRunViewSet, basename="api-judge-run")
router.register("preference-judge-runs", api_preference.PreferenceJudgeRunViewSet,
                basename="api-preference-judge-run")
router.register("generation-jobs", api_generation.GenerationJobViewSet, basename="api-generation-job")

accounts = [
    # Failed logins are counted and paused by django-axes (core/site/throttle.py), here and on the API token.
    path("login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("password/", auth_views.PasswordChangeView.as_view(), name="password_change"),
    path("password/done/", auth_views.PasswordChangeDoneView.as_view(), name="password_change_done"),
    # The one-time link of an account a coordinator created (projects/accounts.py); the token is kept out of logs.
    path("set-password/<uidb64>/<token>/", auth_views.PasswordResetConfirmView.as_view(
        template_name="registration/set_password.html", success_url=reverse_lazy("login"), post_reset_login=False),
        name="account-set-password"),
    path("token/", annotation_views.api_token, name="api-token-page"),
    # An invitation to a project (projects/invitations.py): the one-time link keeps its token in the session and
    # goes on to the tokenless page; the token is kept out of logs.
    path("invitation/<str:token>/", project_views.invitation_open, name="invitation-open"),
    path("invitation/", project_views.invitation, name="invitation"),
]

# The JavaScript strings (static/js) of the page's language; base.html asks for it with the language in the query,
# so a browser may keep each language's for an hour.
_javascript_catalog = JavaScriptCatalog.as_view(packages=["projects", "annotation", "scoring", "delphi", "studies"])


@cache_control(max_age=3600, private=True)
def javascript_catalog(request):
    """The catalogue of the language in ``?l=`` when the site has it (a page in another language than the reader's
    own, e.g. a rating page whose campaign fixes the language), else of the request's language."""
    language = supported(request.GET.get("l"))
    if language is None:
        return _javascript_catalog(request)
    with translation.override(language):
        return _javascript_catalog(request)

urlpatterns = [
    *rating_urlpatterns,
    path("jsi18n/", javascript_catalog, name="javascript-catalog"),
    path("healthz", healthz, name="healthz"),
    # The manual (docs/, built with MkDocs on first use) behind the Help link; signed-in users only.
    path("help/", manual, name="help"),
    re_path(r"^help/(?P<path>.+)$", manual, name="help-page"),
    path("accounts/", include(accounts)),
    path("admin/", admin.site.urls),
    path("api/campaigns/<int:pk>/report/", scoring_api.CampaignReportView.as_view(), name="api-campaign-report"),
    path("api/campaigns/<int:pk>/labels/", scoring_api.CampaignLabelsView.as_view(), name="api-campaign-labels"),
    path("api/judge-runs/<int:pk>/report/", api_judges.JudgeReportView.as_view(), name="api-judge-report"),
    path("api/judge-runs/<int:pk>/scores/", api_judges.JudgeScoresView.as_view(), name="api-judge-scores"),
    path("api/juries/<int:pk>/report/", api_judges.JuryReportView.as_view(), name="api-jury-report"),
    path("api/juries/<int:pk>/scores/", api_judges.JuryScoresView.as_view(), name="api-jury-scores"),
    path("api/", include(router.urls)),
    path("api/auth/token/", annotation_api.ObtainTokenView.as_view(), name="api-token"),
    # Signed-in users only (SERVE_PERMISSIONS); the docs page sends others to the login page. The split view loads
    # its start-up script from a URL instead of an inline <script>, which the Content-Security-Policy forbids.
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", _token_or_login(SpectacularSwaggerSplitView.as_view(url_name="schema")), name="swagger-ui"),
    path("delphi/", include("delphi.urls")),
    path("", include("studies.urls")),
    path("", include("core.jobs.urls")),
    path("", include("scoring.urls")),
    path("", include("annotation.urls")),
    path("", include("projects.urls")),
]
