"""Projects: the ground floor. Projects, members and their roles, the request's project, the bases of project data
(scoped by construction), the audit trail and pseudonyms. Every other app builds on it; it imports none of them."""
