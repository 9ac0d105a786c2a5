"""Fresh checkpoint stores on every backend for the history tests (the store contract tests' fixtures)."""

from tests.store.conftest import spec as spec
from tests.store.conftest import store as store
