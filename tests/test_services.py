"""``scripts/services``, the set-up step of ``make test`` and CI, run on a clean checkout of HEAD with a PATH of fakes:
each fake records how it was called and plays an installed, running or missing service from a state directory, so
the tests see which install and start actions each situation leads to without installing or starting anything."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis
from tests.services import REDIS_URL

from .conftest import ROOT, leftovers

# What each fake does; "$S" is the state directory. A fake is on the PATH only while its package is "installed".
FAKES = {
    "id": '[ "$1" = -u ] && { [ -e "$S/root" ] && echo 0 || echo 1000; }',
    "sudo": '[ "$*" = "-n true" ] && { [ -e "$S/sudo" ]; exit; }; shift; exec "$@"',
    "apt-get": 'if [ "$1" = install ]; then for p in "$@"; do for f in $(cat "$S/packages/$p" 2>/dev/null); do '
    'ln -sf "$S/catalog/$f" "$S/bin/$f"; done; done; fi',
    "sleep": ":",
    "mkdir": ":",
    "pg_isready": '[ -e "$S/postgres-up" ]',
    "pg_lsclusters": 'echo "15 main 5432 $([ -e "$S/postgres-up" ] && echo online || echo down) postgres"',
    "pg_ctlcluster": 'case "$*" in *" main start") touch "$S/postgres-up";; esac',
    "psql": '[ -e "$S/postgres-up" ] && { [ -e "$S/postgres-ready" ] || '
    '{ [ -e "$S/postgres-db" ] && [ -e "$S/postgres-reloaded" ] && grep -q trust "$S/pg_hba.conf"; }; }',
    "su": 'case "$3" in *hba_file*) echo "$S/pg_hba.conf";; *pg_reload_conf*) touch "$S/postgres-reloaded";; '
    '*createdb*) touch "$S/postgres-db";; esac',
    "redis-cli": '[ -e "$S/redis-up" ] && echo PONG || { echo "Could not connect" >&2; exit 1; }',
    "redis-server": 'touch "$S/redis-up"',
    "chromium": ":",
}
PACKAGES = {
    "postgresql": ["psql", "pg_isready", "pg_lsclusters", "pg_ctlcluster"],
    "postgresql-client": ["psql"],
    "redis-server": ["redis-cli", "redis-server"],
    "chromium": ["chromium"],
}
SYSTEM = ["id", "sudo", "apt-get", "sleep", "mkdir", "su"]  # fakes of what a Debian system has
REAL = ["bash", "env", "seq", "awk", "grep", "sed", "cat", "ln", "touch"]  # the real tools, and nothing else
HBA = "host    all             all             127.0.0.1/32            scram-sha-256\n"


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A clean checkout of HEAD: the committed script, not the working tree's."""
    path = tmp_path_factory.mktemp("checkout") / "batonflow"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(path)], check=True, capture_output=True)
    return path


@dataclass
class Machine:
    """A state directory and a PATH of fakes: what is installed, what runs, who we are."""

    state: Path

    def install(self, *packages: str) -> None:
        for package in packages:
            for name in PACKAGES[package]:
                (self.state / "bin" / name).symlink_to(self.state / "catalog" / name)

    def mark(self, *flags: str) -> None:
        for flag in flags:
            (self.state / flag).touch()

    def remove(self, *names: str) -> None:
        for name in names:
            (self.state / "bin" / name).unlink()

    def calls(self) -> list[str]:
        log = self.state / "calls"
        return log.read_text().splitlines() if log.exists() else []

    def actions(self) -> list[str]:
        """The calls that install or start something (not the probes)."""
        acting = ("apt-get", "pg_ctlcluster", "redis-server", "su", "mkdir")
        return [call for call in self.calls() if call.split()[0] in acting]


@pytest.fixture
def machine(tmp_path: Path) -> Machine:
    state = tmp_path / "state"
    (state / "bin").mkdir(parents=True)
    (state / "catalog").mkdir()
    (state / "packages").mkdir()
    for name, body in FAKES.items():
        fake = state / "catalog" / name
        fake.write_text(f'#!{shutil.which("bash")}\nS={state}\necho "{name} $*" >> "$S/calls"\n{body}\n')
        fake.chmod(0o755)
    for package, names in PACKAGES.items():
        (state / "packages" / package).write_text(" ".join(names))
    for name in SYSTEM:
        (state / "bin" / name).symlink_to(state / "catalog" / name)
    for name in REAL:
        real = shutil.which(name)
        assert real is not None, f"the test needs {name} on the PATH"
        (state / "bin" / name).symlink_to(real)
    (state / "pg_hba.conf").write_text(HBA)
    return Machine(state)


def services(checkout: Path, machine: Machine, **env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("BATONFLOW_TEST_")}
    return subprocess.run(
        ["scripts/services"],
        cwd=checkout,
        env={**base, "PATH": str(machine.state / "bin"), **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def all_answering(machine: Machine) -> None:
    machine.install("postgresql", "redis-server", "chromium")
    machine.mark("root", "postgres-up", "postgres-ready", "redis-up")


def test_make_test_runs_the_services_step_first_and_ci_runs_make_test(checkout: Path) -> None:
    planned = subprocess.run(
        ["make", "-n", "test"], cwd=checkout, capture_output=True, text=True, check=True, env=_outside_make()
    ).stdout.splitlines()
    assert planned[-1] == ".venv/bin/pytest"
    assert "scripts/services" in planned[:-1]
    assert (checkout / ".ci" / "run").read_text().strip().endswith("exec make test")


def test_nothing_is_installed_or_started_when_everything_answers(checkout: Path, machine: Machine) -> None:
    all_answering(machine)
    done = services(checkout, machine)
    assert done.returncode == 0, done.stderr
    assert machine.actions() == []
    assert sorted({call.split()[0] for call in machine.calls()}) == ["psql", "redis-cli"]  # the probes only
    assert done.stderr == ""


def test_a_missing_chromium_is_installed_with_apt(checkout: Path, machine: Machine) -> None:
    all_answering(machine)
    machine.remove("chromium")
    done = services(checkout, machine)
    assert done.returncode == 0, done.stderr
    assert machine.actions() == [
        "apt-get update -qq",
        "apt-get install -y -qq chromium",
    ]
    assert (machine.state / "bin" / "chromium").exists()
    assert "services: installing chromium" in done.stderr


def test_a_postgres_that_does_not_answer_is_started_trusted_on_loopback_and_given_its_database(
    checkout: Path, machine: Machine
) -> None:
    all_answering(machine)
    (machine.state / "postgres-up").unlink()
    (machine.state / "postgres-ready").unlink()
    done = services(checkout, machine)
    assert done.returncode == 0, done.stderr
    assert machine.actions() == [
        "pg_ctlcluster --skip-systemctl-redirect 15 main start",
        "su postgres -c psql -tAc 'show hba_file'",
        "su postgres -c psql -tAc 'select pg_reload_conf()'",
        "su postgres -c psql -tAc \"select 1 from pg_database where datname = 'test'\" | grep -q 1 || createdb test",
    ]
    assert (machine.state / "pg_hba.conf").read_text() == HBA.replace("scram-sha-256", "trust")


def test_a_postgres_that_is_not_installed_is_installed_then_started(checkout: Path, machine: Machine) -> None:
    all_answering(machine)
    machine.remove(*PACKAGES["postgresql"])
    (machine.state / "postgres-up").unlink()
    (machine.state / "postgres-ready").unlink()
    done = services(checkout, machine)
    assert done.returncode == 0, done.stderr
    assert machine.actions()[:3] == [
        "apt-get update -qq",
        "apt-get install -y -qq postgresql",
        "pg_ctlcluster --skip-systemctl-redirect 15 main start",
    ]


def test_a_redis_that_does_not_answer_is_started_on_loopback(checkout: Path, machine: Machine) -> None:
    all_answering(machine)
    (machine.state / "redis-up").unlink()
    done = services(checkout, machine)
    assert done.returncode == 0, done.stderr
    assert machine.actions() == [
        "mkdir -p /var/lib/redis /var/log/redis",
        "redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save  --appendonly no --dir /var/lib/redis "
        "--logfile /var/log/redis/batonflow-tests.log",
    ]


def test_services_named_by_the_settings_are_probed_and_never_installed_or_started(
    checkout: Path, machine: Machine
) -> None:
    machine.install("postgresql", "redis-server", "chromium")
    machine.mark("root", "postgres-up", "postgres-ready")  # Redis does not answer
    url = "redis://10.0.0.9:6379/3"
    done = services(checkout, machine, BATONFLOW_TEST_REDIS_URL=url)
    assert done.returncode == 1
    assert done.stderr == f"services: Redis at BATONFLOW_TEST_REDIS_URL={url} does not answer.\n"
    assert machine.actions() == []
    assert f"redis-cli -u {url} ping" in machine.calls()


def test_without_root_or_sudo_it_says_what_to_do_and_installs_nothing(checkout: Path, machine: Machine) -> None:
    all_answering(machine)
    machine.remove("chromium")
    (machine.state / "root").unlink()
    done = services(checkout, machine)
    assert done.returncode == 1
    assert done.stderr.startswith("services: installing chromium\nservices: cannot run 'apt-get update -qq': not root")
    assert "Run 'sudo scripts/services' once, or point BATONFLOW_TEST_POSTGRES_DSN" in done.stderr
    assert machine.actions() == []


def test_with_sudo_the_actions_go_through_it(checkout: Path, machine: Machine) -> None:
    all_answering(machine)
    machine.remove("chromium")
    (machine.state / "root").unlink()
    machine.mark("sudo")
    done = services(checkout, machine)
    assert done.returncode == 0, done.stderr
    assert [call for call in machine.calls() if call.startswith("sudo") and call != "sudo -n true"] == [
        "sudo -n apt-get update -qq",
        "sudo -n env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium",
    ]


def test_without_apt_it_says_what_to_install(checkout: Path, machine: Machine) -> None:
    all_answering(machine)
    machine.remove("chromium", "apt-get")
    done = services(checkout, machine)
    assert done.returncode == 1
    assert done.stderr == (
        "services: cannot install chromium without apt-get: install it yourself "
        "(or point BATONFLOW_TEST_* at running services).\n"
    )


def test_leftovers_are_what_a_session_added_named_kind_by_kind() -> None:
    before = {"Redis keys": {"kept"}, "PostgreSQL tables": {"public.old"}}
    after = {
        "Redis keys": {"kept", *(f"k{i:02}" for i in range(22))},
        "PostgreSQL tables": {"public.old"},
        "PostgreSQL schemas": {"public", "bf_x"},  # not seen before: the service did not answer then
    }
    assert leftovers(before, after) == [
        "Redis keys: " + ", ".join(f"k{i:02}" for i in range(20)) + " and 2 more",
    ]
    assert leftovers(after, after) == []


def test_a_session_that_leaves_a_key_behind_fails_naming_it(tmp_path: Path) -> None:
    key = f"batonflow-test:leftover:{uuid.uuid4().hex}"
    (tmp_path / "test_leaves.py").write_text(
        f"import redis\n\ndef test_leaves() -> None:\n    redis.Redis.from_url({REDIS_URL!r}).set({key!r}, 1)\n"
    )
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.conftest", str(tmp_path)],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        redis.Redis.from_url(REDIS_URL).delete(key)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"the tests left behind\nRedis keys: {key}\n" in done.stdout


def _outside_make() -> dict[str, str]:
    """The environment without what a calling ``make`` (``make test`` running these tests) passes to a nested one,
    which would print its "Entering directory" lines into the plan."""
    return {name: value for name, value in os.environ.items() if name not in {"MAKEFLAGS", "MAKELEVEL", "MFLAGS"}}
