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
