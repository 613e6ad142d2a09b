"""Catalog-managed Delta commits: /delta/commits, /delta/commit, /delta/metrics (seed 000) and
/delta/preview/commits (what the Unity Catalog SDK and the Delta connectors call)."""

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.response import Response

from catalog.api.base import CatalogAPIView
from catalog.api.uc.serializers import ColumnInfo, Empty, PropertiesField
from commits import delta


class DeltaCommitInfo(serializers.Serializer):
    version = serializers.IntegerField()
    timestamp = serializers.IntegerField()
    file_name = serializers.CharField()
    file_size = serializers.IntegerField()
    file_modification_timestamp = serializers.IntegerField()


class DeltaMetadata(serializers.Serializer):
    description = serializers.CharField(required=False)
    schema = ColumnInfo(many=True, required=False, help_text="An array of columns, or {columns: [...]}.")
    partition_columns = serializers.ListField(child=serializers.CharField(), required=False)
    properties = PropertiesField(required=False, help_text="A map, or {properties: {...}}.")


class DeltaUniformIceberg(serializers.Serializer):
    metadata_location = serializers.CharField()
    converted_delta_version = serializers.IntegerField()
    converted_delta_timestamp = serializers.CharField()
    base_converted_delta_version = serializers.IntegerField(required=False)


class DeltaUniform(serializers.Serializer):
    iceberg = DeltaUniformIceberg()


class DeltaCommitRequest(serializers.Serializer):
    table_id = serializers.UUIDField()
    table_uri = serializers.CharField()
    commit_info = DeltaCommitInfo(required=False)
    latest_published_version = serializers.IntegerField(required=False)
    latest_backfilled_version = serializers.IntegerField(
        required=False, help_text="The same as latest_published_version."
    )
    metadata = DeltaMetadata(required=False)
    uniform = DeltaUniform(required=False)


class DeltaGetCommitsResponse(serializers.Serializer):
    commits = DeltaCommitInfo(many=True)
    latest_table_version = serializers.IntegerField()


class Histogram(serializers.Serializer):
    sorted_bin_boundaries = serializers.ListField(child=serializers.IntegerField())
    file_counts = serializers.ListField(child=serializers.IntegerField())
    total_bytes = serializers.ListField(child=serializers.IntegerField())


class CommitReport(serializers.Serializer):
    commit_version = serializers.IntegerField()
    num_files_added = serializers.IntegerField(required=False)
    num_bytes_added = serializers.IntegerField(required=False)
    num_clustered_bytes_added = serializers.IntegerField(required=False)
    num_files_removed = serializers.IntegerField(required=False)
    num_bytes_removed = serializers.IntegerField(required=False)
    num_clustered_bytes_removed = serializers.IntegerField(required=False)
    num_rows_inserted = serializers.IntegerField(required=False)
    num_rows_removed = serializers.IntegerField(required=False)
    num_rows_updated = serializers.IntegerField(required=False)
    file_size_histogram = Histogram(required=False)


class Report(serializers.Serializer):
    commit_report = CommitReport(required=False)


class DeltaMetricsRequest(serializers.Serializer):
    table_id = serializers.UUIDField()
    table_uri = serializers.CharField()
    report = Report(required=False)


GET_COMMITS_PARAMETERS = [
    OpenApiParameter("table_id", str, description="Also accepted in the JSON body."),
    OpenApiParameter("table_uri", str, description="Also accepted in the JSON body."),
    OpenApiParameter("start_version", int, description="Inclusive; default 0."),
    OpenApiParameter("end_version", int, description="Inclusive; default the latest version."),
]


class DeltaCommitsView(CatalogAPIView):
    """GET lists ratified commits; POST ratifies and/or records publication."""

    audit_securable_type = "table"

    @extend_schema(
        operation_id="getDeltaCommits", tags=["DeltaCommits"], parameters=GET_COMMITS_PARAMETERS,
        responses=DeltaGetCommitsResponse,
        description="Ratified commits of a catalog-managed Delta table within [start_version, "
        "end_version], and latest_table_version (-1 for a table this catalog does not manage). "
        "Parameters come from the JSON body (as Delta clients send them) or the query string.",
    )
    def get(self, request):
        params = {**request.query_params.dict(), **self.body(request)}
        return Response(delta.get_commits(caller=request.user, params=params))

    @extend_schema(
        operation_id="writeDeltaCommit", tags=["DeltaCommits"], request=DeltaCommitRequest, responses=Empty,
        description="Ratifies commit_info.version (it must be the latest version + 1; 409 "
        "ALREADY_EXISTS when another writer took it) and/or records latest_published_version. "
        "The staged file `_delta_log/_staged_commits/<file_name>` must exist, be a Delta commit "
        "and have `file_size` bytes (400 INVALID_PARAMETER_VALUE otherwise); the maintenance "
        "policy is checked against its `commitInfo.operation`, and the catalog publishes only "
        "the bytes it ratified. Changing a `ucweb.maintenance.*` property through "
        "`metadata.properties` needs the table's owner or a metastore admin (403 otherwise).",
    )
    def post(self, request):
        delta.write_commit(caller=request.user, body=self.body(request))
        return Response({})


class DeltaMetricsView(CatalogAPIView):
    audit_securable_type = "table"

    @extend_schema(operation_id="writeDeltaMetrics", tags=["DeltaCommits"], request=DeltaMetricsRequest,
                   responses=Empty)
    def post(self, request):
        delta.write_metrics(caller=request.user, body=self.body(request))
        return Response({})
