"""The students' feedback pages: nbconvert's HTMLExporter without its last pass through BeautifulSoup.

That pass only added alt texts to images, done here with the same words, and tabindexes to JupyterLab cells, which
nbgrader's classic feedback template has none of (docs/design/nbgrader-seams.md; what it saves:
docs/performance.md).
"""

import re

from nbconvert.exporters import HTMLExporter, TemplateExporter
from nbconvert.filters.highlight import Highlight2HTML
from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter

NO_ALT = "No description has been provided for this image"  # HTMLExporter's own words
IMAGE_WITHOUT_ALT = re.compile(r"<img(?![^>]*\salt=)(?=[\s/>])", re.IGNORECASE)


class FeedbackExporter(HTMLExporter):
    """HTMLExporter, for nbgrader's GenerateFeedback (``exporter_class`` in nbgrader_config.py)."""

    def from_notebook_node(self, nb, resources=None, **kw):
        # What HTMLExporter sets up before it renders: the code highlighter of the notebook's language, and the
        # choice of each output's richest type
        language = nb.metadata.get("language_info", {})
        lexer = language.get("pygments_lexer", language.get("name"))
        resources = self._init_resources(resources)
        highlight = self.filters.get("highlight_code", Highlight2HTML(pygments_lexer=lexer, parent=self))
        self.register_filter("highlight_code", highlight)
        types = WidgetsDataTypeFilter(notebook_metadata=self._nb_metadata, parent=self, resources=resources)
        self.register_filter("filter_data_type", types)
        html, resources = TemplateExporter.from_notebook_node(self, nb, resources, **kw)
        return IMAGE_WITHOUT_ALT.sub(f'<img alt="{NO_ALT}"', html), resources
