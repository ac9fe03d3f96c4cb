"""How the API schema (drf-spectacular) describes the project's authentication classes. Imported by the URLconf
that serves the schema, not by :mod:`projects.access`: every command and worker imports that, and drf-spectacular
(with the DRF serializers it loads) costs a few tenths of a second to import."""

from drf_spectacular.authentication import SessionScheme


class ProjectSessionScheme(SessionScheme):
    """The API schema describes the project-entering session authentication as the session cookie it is."""

    target_class = "projects.access.ProjectSessionAuthentication"
