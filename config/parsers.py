"""The API's parsers: JSON read by the one reader of config.jsonbody; forms and files as DRF reads them."""

from config.jsonbody import drf_parser

SafeJSONParser = drf_parser()
