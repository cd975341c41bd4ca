"""`kaja doctor --redact`'s replacements: every whole occurrence of a private
name, and nothing inside a longer word."""

from kaja_cli.core.care.doctor.redaction import redactor


def test_a_private_name_is_replaced_whole_not_inside_other_words():
    redact = redactor(
        {}, {"search": "<database>", "serial": "<db-user>", "db.example.org": "<host>"}
    )
    said = (
        "postgresql://serial:***@db.example.org/search?sslmode=require (schema kaja):"
        " cannot use serializable mode; the search index is in step; database=search,"
        " user serial; researching serials"
    )
    assert redact(said) == (
        "postgresql://<db-user>:***@<host>/<database>?sslmode=require (schema kaja):"
        " cannot use serializable mode; the <database> index is in step; database=<database>,"
        " user <db-user>; researching serials"
    )


def test_the_user_and_host_names_are_replaced_whole_too():
    redact = redactor({"USER": "ana", "HOME": "/home/ana"}, {})
    assert redact("/home/ana/.local/state/kaja: owned by ana, not banana") == (
        "~/.local/state/kaja: owned by <user>, not banana"
    )


def test_where_libpq_tried_to_connect_is_replaced():
    """The address a host name resolved to, or a socket's path: libpq names
    them in its errors, and no setting spells them out."""
    redact = redactor({}, {})
    said = (
        'connection to server at "127.0.0.1", port 5999 failed: Connection refused;'
        ' connection to server on socket "/srv/pg/hostB/.s.PGSQL.5432" failed: No such file'
    )
    assert redact(said) == (
        'connection to server at "<db-host>", port 5999 failed: Connection refused;'
        ' connection to server on socket "<db-host>" failed: No such file'
    )


def test_every_host_of_a_url_is_private():
    from kaja_cli.core.care.doctor import _url_parts

    parts = _url_parts(
        "postgresql://kaja:secret@db1.example.org:5432,db2.example.org/shop"
        "?host=/run/a,/run/b&hostaddr=10.0.0.7"
    )
    hosts = sorted(k for k, v in parts.items() if v == "<db-host>")
    assert hosts == ["/run/a", "/run/b", "10.0.0.7", "db1.example.org", "db2.example.org"]
    assert parts["shop"] == "<database>" and parts["kaja"] == "<db-user>"
    assert "secret" not in parts
