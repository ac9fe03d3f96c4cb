"""The API's parsers: JSON read by the one reader of core.site.jsonbody; forms and files as DRF reads them."""

from core.site.jsonbody import drf_parser

SafeJSONParser = drf_parser()
