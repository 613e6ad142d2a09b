"""Unity Catalog API for the securables beside tables: volumes, functions, registered models and
model versions, storage credentials and external locations, and temporary credentials. One module
per securable holds its wire types and its thin views; this facade is what the URLs import."""

from .volumes import (  # noqa: F401
    VolumesView,
    VolumeView,
)
from .functions import (  # noqa: F401
    FunctionsView,
    FunctionView,
)
from .registered_models import (  # noqa: F401
    RegisteredModelsView,
    RegisteredModelView,
    ModelVersionsCreateView,
    ModelVersionsView,
    ModelVersionView,
    FinalizeModelVersionView,
)
from .credentials import (  # noqa: F401
    CredentialsView,
    CredentialView,
    ExternalLocationsView,
    ExternalLocationView,
)
from .temporary_credentials import (  # noqa: F401
    TemporaryTableCredentialsView,
    TemporaryVolumeCredentialsView,
    TemporaryPathCredentialsView,
    TemporaryModelVersionCredentialsView,
)
