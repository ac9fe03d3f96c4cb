"""The scoring app's pages: each job's package lists its own."""

from scoring.generation.urls import urlpatterns as generation_urls
from scoring.judges.urls import urlpatterns as judges_urls
from scoring.preference.urls import urlpatterns as preference_urls
from scoring.reports.urls import urlpatterns as reports_urls

urlpatterns = [*reports_urls, *judges_urls, *preference_urls, *generation_urls]
