"""doctor's `server.replica`: whether memory.readUrl holds the store kaja
writes, from each server's system identifier (None where the role may not
call pg_control_system()) and database oid."""

import pytest

from kaja_cli.core.care.doctor.server import _same_store


@pytest.mark.parametrize(
    ("ours", "theirs", "same"),
    [
        ([7, 16384], (7, 16384), True),  # a streaming replica of it
        ([7, 16384], (8, 16384), False),  # another cluster, whatever its oids
        ([7, 16384], (7, 16999), False),  # another database of the cluster
        ([None, 16384], (8, 16384), True),  # one side may not tell: the database decides
        ([7, 16384], (None, 16999), False),
    ],
)
def test_the_same_store_is_the_same_cluster_and_database(ours, theirs, same):
    assert _same_store(ours, theirs) is same
