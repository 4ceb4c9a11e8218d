"""Every schema the grader validates its documents with is itself a valid JSON Schema (draft
2020-12): checked here, once, rather than each time a grading builds its validators."""
import json

import jsonschema
import pytest

from dezero_grader.records import schema

SCHEMAS = sorted(p.name[:-len('.schema.json')]
                 for p in schema.data_dir('schemas').glob('*.schema.json'))


def test_every_schema_is_found():
    assert {'scorecard', 'assignment', 'policy', 'fingerprints'} <= set(SCHEMAS)


@pytest.mark.parametrize('name', SCHEMAS)
def test_schema_follows_the_metaschema(name):
    with open(schema.data_dir('schemas') / (name + '.schema.json'), encoding='utf-8') as f:
        document = json.load(f)
    jsonschema.Draft202012Validator.check_schema(document)
    assert schema.validator(name).schema == document


def test_a_broken_schema_is_caught():
    with pytest.raises(jsonschema.SchemaError):
        jsonschema.Draft202012Validator.check_schema({'type': 'no-such-type'})
