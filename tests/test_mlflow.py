"""MLflow's Unity Catalog registry client (`registry_uri="uc:http://..."`, the OSS store that
authenticates with the MLFLOW_UC_OSS_TOKEN bearer token) registers a model, creates versions and
loads one back through the live server. It calls POST /models, GET /models/{name}, POST
/models/versions, PATCH .../versions/{n}/finalize, GET .../versions/{n}, GET .../versions; model
files go to the version's file:// storage location (no cloud credential is needed there)."""

from __future__ import annotations

import os

# MLflow would otherwise report usage to its publishers' servers from a background thread; tests
# talk to nothing but this machine. Set before mlflow is imported, which is when it decides.
os.environ["MLFLOW_DISABLE_TELEMETRY"] = "true"
os.environ["DO_NOT_TRACK"] = "true"

import mlflow  # noqa: E402
import pytest  # noqa: E402

from catalog.choices import ModelVersionStatus  # noqa: E402
from catalog.models import AuditEvent, ModelVersion, RegisteredModel  # noqa: E402

pytestmark = pytest.mark.django_db(transaction=True)


class AddN(mlflow.pyfunc.PythonModel):
    def __init__(self, n):
        self.n = n

    def predict(self, context, model_input, params=None):
        return [value + self.n for value in model_input]


@pytest.fixture
def registry(live_server, bootstrap, make_token, storage_root, tmp_path, monkeypatch):
    """MLflow pointed at the live server as the metastore admin, with schema unity.ml."""
    from catalog.models import Principal
    from catalog.services import schemas

    schemas.create_schema(caller=Principal.objects.get(name="admin"), name="ml", catalog_name="unity")
    monkeypatch.setenv("MLFLOW_UC_OSS_TOKEN", make_token("admin", admin=True))
    # MlflowClient always opens a tracking store, though nothing here is tracked; a throw-away
    # file store needs no database.
    monkeypatch.setenv("MLFLOW_TRACKING_URI", (tmp_path / "mlruns").as_uri())
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    registry_uri = f"uc:{live_server.url}"
    mlflow.set_registry_uri(registry_uri)
    yield registry_uri
    mlflow.set_registry_uri(None)


def save(tmp_path, name, n):
    path = tmp_path / name
    mlflow.pyfunc.save_model(path=str(path), python_model=AddN(n))
    return path


def test_register_version_and_load_back(registry, tmp_path, storage_root):
    first = mlflow.register_model(str(save(tmp_path, "add1", 1)), "unity.ml.adder")
    second = mlflow.register_model(str(save(tmp_path, "add10", 10)), "unity.ml.adder")
    assert (int(first.version), int(second.version)) == (1, 2)
    assert first.status == "READY" and second.status == "READY"

    model = RegisteredModel.objects.get(name="adder")
    versions = list(ModelVersion.objects.filter(model=model).order_by("version"))
    assert [(v.version, v.status) for v in versions] == [(1, ModelVersionStatus.READY), (2, ModelVersionStatus.READY)]
    for version in versions:
        folder = storage_root / "models" / str(model.id) / "versions" / str(version.version)
        assert version.storage_location == folder.as_uri()
        assert (folder / "MLmodel").is_file()

    loaded = mlflow.pyfunc.load_model("models:/unity.ml.adder/1")
    assert list(loaded.predict([1, 2])) == [2, 3]
    assert list(mlflow.pyfunc.load_model("models:/unity.ml.adder/2").predict([1])) == [11]

    client = mlflow.MlflowClient(registry_uri=registry)
    assert client.get_registered_model("unity.ml.adder").name == "unity.ml.adder"
    found = client.search_model_versions("name = 'unity.ml.adder'")
    assert sorted(int(v.version) for v in found) == [1, 2]
    client.update_model_version("unity.ml.adder", 1, description="first")
    assert client.get_model_version("unity.ml.adder", 1).description == "first"
    client.update_registered_model("unity.ml.adder", description="adds n")
    assert client.get_registered_model("unity.ml.adder").description == "adds n"
    client.delete_model_version("unity.ml.adder", 2)
    assert [int(v.version) for v in client.search_model_versions("name = 'unity.ml.adder'")] == [1]
    assert AuditEvent.objects.filter(action="finalizeModelVersion").count() == 2


def test_a_missing_model_is_reported_by_name(registry):
    from mlflow.exceptions import MlflowException

    client = mlflow.MlflowClient(registry_uri=registry)
    with pytest.raises(MlflowException) as missing:
        client.get_registered_model("unity.ml.nothing")
    assert missing.value.error_code == "RESOURCE_DOES_NOT_EXIST"
