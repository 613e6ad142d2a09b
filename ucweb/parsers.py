from rest_framework.parsers import JSONParser


class LenientJSONParser(JSONParser):
    """Accepts JSON whatever the Content-Type says: the Delta and Iceberg clients send bodies with
    `text/plain`, `application/x-www-form-urlencoded` or no type at all."""

    media_type = "*/*"
