"""nbgrader's CheckCellMetadata, with the metadata schema checked and compiled once per process.

nbgrader checks the schema itself again for every cell; the verdicts here are nbgrader's own (same schema, checks
and errors). A cell is first checked by the schema compiled to Python with fastjsonschema (nbformat's own
dependency): jsonschema's checks were 4 % of a grading worker's CPU. Only a cell that fails it goes through jsonschema,
so that its error is the one nbgrader would give.
"""

import traceback

import fastjsonschema
from jsonschema.exceptions import best_match
from jsonschema.validators import validator_for
from nbgrader.nbgraderformat import MetadataValidator, ValidationError
from nbgrader.nbgraderformat.common import BaseMetadataValidator
from nbgrader.preprocessors import CheckCellMetadata


class _CompiledSchema(BaseMetadataValidator):
    """The schema check of nbgrader's ``BaseMetadataValidator.validate_cell``, with the validator built once."""

    _validator = _fast = None

    def validate_cell(self, cell) -> None:
        meta = cell.metadata.get("nbgrader")
        if meta is None or meta.get("schema_version", 0) != self.schema_version:
            return super().validate_cell(cell)  # nbgrader's own: nothing to check, or its version errors
        if _CompiledSchema._validator is None:
            cls = validator_for(self.schema)
            cls.check_schema(self.schema)
            _CompiledSchema._validator = cls(self.schema)
            _CompiledSchema._fast = fastjsonschema.compile(self.schema, use_default=False)  # defaults: never written
        try:
            _CompiledSchema._fast(meta)
            return
        except fastjsonschema.JsonSchemaException:
            pass
        error = best_match(_CompiledSchema._validator.iter_errors(meta))
        if error is not None:
            raise error


class _MetadataValidator(MetadataValidator, _CompiledSchema):
    """nbgrader's validator of the current schema version; its ``super().validate_cell`` is ``_CompiledSchema``'s."""


class CheckCellMetadataOnce(CheckCellMetadata):
    """``CheckCellMetadata`` with ``_MetadataValidator``: the same checks, the same message when one fails."""

    def preprocess(self, nb, resources):
        try:
            _MetadataValidator().validate_nb(nb)
        except ValidationError:
            self.log.error(traceback.format_exc())
            msg = "Notebook failed to validate; the nbgrader metadata may be corrupted."
            self.log.error(msg)
            raise ValidationError(msg)
        return nb, resources
